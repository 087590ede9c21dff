-- faster_multi_release.lua: give back one hold of every value of a faster multi-lock,
-- idempotently.
-- Mirrors Redisson RedissonFasterMultiLock#unlockInnerAsync (3.38.0+, with the unlock
-- latch; protocol 14.3.5).
--
-- KEYS[1]  group hash G
-- KEYS[2]  channel "redisson_lock__channel:{G}"
-- KEYS[3]  latch "redisson_unlock_latch:{G}:<request-id>"
-- ARGV[1]  owner "<client-uuid>:<owner-id>" (LN)
-- ARGV[2]  unlock message "0"
-- ARGV[3]  lease in ms: deadlines of values still held are raised to now + this
-- ARGV[4]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[5]  latch time to live in ms
-- ARGV[6]  now: epoch ms of this client's clock
-- ARGV[7..] field ids of the values
--
-- A value is LN's while its owner field names LN and "F:LN:expire_time" is later than
-- now (at deadline == now another owner's acquire may take it). Each such value's count
-- goes down by one; at 0 its LN fields and its owner field go. LN's fields on a value
-- that is not LN's any more stay, stale, as in Redisson (an acquire by LN starts them
-- again from count 1).
-- Returns 1 when every value was released, 0 when some are still held (re-entries), nil
-- when some value was not LN's (the values that were are given back all the same, as in
-- Redisson). ARGV[2] is published whenever a value was given back. A call repeated with
-- the same latch returns the first call's answer and changes nothing.
--
-- Differs from Redisson on purpose: a value is LN's only if its owner field names LN and
-- its deadline is later than now (Redisson reads neither the owner field nor the
-- deadline's last millisecond: with clock skew, or at deadline == now, another owner may
-- have taken the value, whose owner field Redisson then deletes); a nil answer also
-- publishes and writes the latch when something was given back; nothing is published
-- when nothing was.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[3])
if earlier then
    if earlier == 'nil' then
        return nil
    end
    return tonumber(earlier)
end
local group = KEYS[1]
local me = ARGV[1]
local now = tonumber(ARGV[6])
local rearm = tonumber(ARGV[3])
local extend_to = now + rearm
local failed = false
local kept = false
local changed = false
for i = 7, #ARGV do
    local value = ARGV[i]
    local expire_field = value .. ':' .. me .. ':expire_time'
    local count_field = value .. ':' .. me .. ':lock_count'
    local deadline = tonumber(redis.call('hget', group, expire_field))
    if deadline and deadline > now and redis.call('hget', group, value) == me then
        changed = true
        if redis.call('hincrby', group, count_field, -1) <= 0 then
            redis.call('hdel', group, expire_field, count_field, value)
        else
            kept = true
            if deadline < extend_to then
                redis.call('hset', group, expire_field, extend_to)
            end
        end
    else
        failed = true
    end
end
if kept and redis.call('pttl', group) < rearm then
    redis.call('pexpire', group, rearm)
end
if changed then
    redis.call('exists', group)
    redis.call(ARGV[4], KEYS[2], ARGV[2])
end
if failed then
    redis.call('set', KEYS[3], 'nil', 'px', ARGV[5])
    return nil
end
if kept then
    redis.call('set', KEYS[3], '0', 'px', ARGV[5])
    return 0
end
redis.call('set', KEYS[3], '1', 'px', ARGV[5])
return 1
