-- faster_multi_is_locked.lua: whether any value of a faster multi-lock is held.
-- Mirrors Redisson RedissonFasterMultiLock#isLockedAsync (3.38.0+; protocol 14.3.8).
--
-- KEYS[1]  group hash G
-- ARGV[1]  now: epoch ms of this client's clock
-- ARGV[2..] field ids of the values
--
-- Returns 1 when some value has an owner whose "F:owner:expire_time" is later than now,
-- else 0: exactly when another owner's acquire would wait.
--
-- Differs from Redisson on purpose: a deadline equal to now is not held (Redisson answers
-- 1 in that millisecond, while its own acquire already takes the value).
local group = KEYS[1]
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
    local owner = redis.call('hget', group, ARGV[i])
    if owner then
        local deadline = tonumber(redis.call('hget', group, ARGV[i] .. ':' .. owner .. ':expire_time'))
        if deadline and deadline > now then
            return 1
        end
    end
end
return 0
