-- faster_multi_force_release.lua: release the values of a faster multi-lock whoever
-- holds them.
-- Mirrors Redisson RedissonFasterMultiLock#forceUnlockAsync (3.38.0+; protocol 14.3.6).
--
-- KEYS[1]  group hash G
-- KEYS[2]  channel "redisson_lock__channel:{G}"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[3..] field ids of the values
--
-- Deletes each value's owner field and that owner's expire_time and lock_count fields.
-- Returns 1 (and publishes ARGV[1]) when some value had an owner, else 0.
--
-- Differs from Redisson on purpose: a value without an owner is skipped (Redisson fails
-- with a script error after deleting the values before it), and the answer is 1 for any
-- number of values released (Redisson's is true only for exactly one).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local group = KEYS[1]
local removed = 0
for i = 3, #ARGV do
    local value = ARGV[i]
    local owner = redis.call('hget', group, value)
    if owner then
        redis.call('hdel', group, value, value .. ':' .. owner .. ':expire_time', value .. ':' .. owner .. ':lock_count')
        removed = removed + 1
    end
end
if removed > 0 then
    redis.call('exists', group)
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
