-- faster_multi_renew.lua: the watchdog's batched renewal of faster multi-lock holds.
-- Mirrors Redisson FastMultilockTask (3.44.0+; protocol 14.3.7), for several groups and
-- owners per call.
--
-- KEYS[1..k]  group hashes
-- ARGV[1]     lease in ms
-- ARGV[2]     now: epoch ms of this client's clock
-- then, for each key in order: the owner LN, the number n of its values, and their n
--             field ids
--
-- Returns one flag per key: 1 when every listed value's owner field names LN and its
-- "F:LN:expire_time" is later than now (each deadline is then raised to now + lease, and
-- the key's TTL to the lease if lower); 0, changing nothing for that key, when any is
-- not (the hold is lost), or when the key is not a hash.
--
-- Differs from Redisson on purpose: a hold that lapsed is not revived, and no value is
-- extended unless all are the owner's.
--
-- A renewed group is read once more after its writes (redisson-lock's): Redis forgets a
-- key's CLIENT TRACKING entry when it is written, and a read inside a script tracks it
-- again for the calling connection, so a renewal costs no EXISTS.
local lease = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local target = now + lease
local flags = {}
local at = 3
for k = 1, #KEYS do
    local group = KEYS[k]
    local me = ARGV[at]
    local n = tonumber(ARGV[at + 1])
    local first = at + 2
    local last = first + n - 1
    at = last + 1
    local ok = redis.call('type', group).ok == 'hash'
    if ok then
        for i = first, last do
            local value = ARGV[i]
            if redis.call('hget', group, value) ~= me then
                ok = false
                break
            end
            local deadline = tonumber(redis.call('hget', group, value .. ':' .. me .. ':expire_time'))
            if deadline == nil or deadline <= now then
                ok = false
                break
            end
        end
    end
    if ok then
        for i = first, last do
            local expire_field = ARGV[i] .. ':' .. me .. ':expire_time'
            if tonumber(redis.call('hget', group, expire_field)) < target then
                redis.call('hset', group, expire_field, target)
            end
        end
        if redis.call('pttl', group) < lease then
            redis.call('pexpire', group, lease)
        end
        redis.call('exists', group)
        flags[k] = 1
    else
        flags[k] = 0
    end
end
return flags
