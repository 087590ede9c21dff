-- faster_multi_acquire.lua: take (or re-enter) every value of a faster multi-lock, all or
-- nothing.
-- Mirrors Redisson RedissonFasterMultiLock#tryLockInnerAsync (3.38.0+; protocol 14.3.3),
-- also for the single attempt (tryLock(); Redisson sends 14.3.4 there, whose writes are
-- the same).
--
-- KEYS[1]  group hash G
-- ARGV[1]  lease in ms
-- ARGV[2]  now: epoch ms of this client's clock
-- ARGV[3]  owner "<client-uuid>:<owner-id>" (LN)
-- ARGV[4..] field ids of the values (22 characters each)
--
-- Field F holds the value's last owner LN; "F:LN:expire_time" that owner's deadline
-- (epoch ms, only ever raised); "F:LN:lock_count" its hold count.
--
-- Returns nil when taken (every value's count of LN went up by one), or the ms until
-- the latest deadline among the values another owner holds (nothing written then),
-- never more than the ms until G itself expires.
--
-- A hold is live while its owner field names its owner and its deadline is later than
-- now (the rule of every faster_multi_* script): at deadline == now the value is free.
--
-- Differs from Redisson on purpose:
-- * G in its last millisecond (it exists, PTTL 0): Redisson's "0 < PTTL < lease" test
--   skips the PEXPIRE and G expires a millisecond later with the fields just written,
--   after answering "taken" (issue 28). Here a PTTL of 0 gets the lease like any PTTL
--   below it, so what the reply says is held stays in Redis.
-- * The wait answered is cut to G's own PTTL + 1 when G dies sooner: the fields that
--   conflict (a Java acquire that wrote into an expiring G has them) go with G.
-- * A value whose earlier hold by LN is not live (lapsed, or taken over since) starts
--   again from count 1 instead of going on from the stale count, so that one unlock
--   gives it back.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local group = KEYS[1]
local lease = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local me = ARGV[3]
local existed = redis.call('exists', group) == 1
if existed then
    local latest = -1
    for i = 4, #ARGV do
        local owner = redis.call('hget', group, ARGV[i])
        if owner and owner ~= me then
            local deadline = tonumber(redis.call('hget', group, ARGV[i] .. ':' .. owner .. ':expire_time'))
            if deadline and deadline > now and deadline > latest then
                latest = deadline
            end
        end
    end
    if latest ~= -1 then
        local wait = latest - now
        local ttl = redis.call('pttl', group)
        if ttl >= 0 and ttl + 1 < wait then
            wait = ttl + 1
        end
        return wait
    end
end
local until_ms = now + lease
for i = 4, #ARGV do
    local value = ARGV[i]
    local expire_field = value .. ':' .. me .. ':expire_time'
    local count_field = value .. ':' .. me .. ':lock_count'
    local live = redis.call('hget', group, value) == me
    redis.call('hset', group, value, me)
    local deadline = tonumber(redis.call('hget', group, expire_field))
    if deadline and (deadline <= now or not live) then
        -- A hold of ours that lapsed or was taken over: its count is stale.
        redis.call('hset', group, count_field, 0)
        deadline = nil
    end
    if deadline == nil or deadline < until_ms then
        redis.call('hset', group, expire_field, until_ms)
    end
    redis.call('hincrby', group, count_field, 1)
end
if existed then
    -- PTTL 0: G's last millisecond, it expires after this script unless re-armed.
    local ttl = redis.call('pttl', group)
    if ttl >= 0 and lease > ttl then
        redis.call('pexpire', group, lease)
    end
else
    redis.call('pexpire', group, lease)
end
redis.call('exists', group)
return nil
