-- fair_acquire.lua: take, re-enter or queue for a fair lock (the blocking variant).
-- Mirrors Redisson RedissonFairLock#tryLockInnerAsync, blocking branch (HEAD: nil-safe
-- stale-waiter purge, 3.45.0+ ZSCORE check on the last waiter, an already queued waiter
-- gets max(0, PTTL)); with ARGV[5] = "0" it is RedissonNonReentrantFairLock (4.4.0+).
--
-- KEYS[1]  lock hash N
-- KEYS[2]  wait queue "redisson_lock_queue:{N}" (list of owner fields)
-- KEYS[3]  waiter deadlines "redisson_lock_timeout:{N}" (zset, score = epoch-ms deadline)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  wait in ms reserved per queue slot (the fair-lock wait timeout)
-- ARGV[4]  caller's clock, epoch ms
-- ARGV[5]  "1" reentrant (RFairLock), "0" non-reentrant (a re-entry is an error)
-- ARGV[6]  poll interval in ms for a queued waiter while the lock is free but a waiter
--          ahead of it has not taken it yet
--
-- Returns nil when ARGV[2] now holds the lock (first hold or re-entry; the TTL is
-- re-armed to ARGV[1]); otherwise an integer ttl in ms to wait, after making sure
-- ARGV[2] is queued with deadline ttl + wait + now. A re-entry with ARGV[5] = "0"
-- returns the error reply NON_REENTRANT_REACQUIRE and changes nothing.
--
-- Deviation (reply only; the keys are written as Redisson writes them): an already
-- queued waiter gets the holder's PTTL as in Redisson, but when the lock has no TTL
-- (free, or persisted) Redisson answers 0, and its waiter retries at once, in a loop, until
-- the head takes the lock or is purged. Here it gets min(ARGV[6], time until the head's
-- deadline), at least 1: it polls, and wakes exactly when a dead head's slot ends.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local wait = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

-- drop waiters whose deadline passed (stop at the first live or inconsistent head)
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if not head then
        break
    end
    local deadline = tonumber(redis.call('zscore', KEYS[3], head))
    if deadline == nil or deadline > now then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

-- free, and nobody queued or ARGV[2] is at the head: take it
if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if (not head) or head == ARGV[2] then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[2])
        local rest = redis.call('zrange', KEYS[3], 0, -1)
        for _, waiter in ipairs(rest) do
            redis.call('zincrby', KEYS[3], -wait, waiter)
        end
        redis.call('hset', KEYS[1], ARGV[2], 1)
        redis.call('pexpire', KEYS[1], ARGV[1])
        redis.call('exists', KEYS[1])
        return nil
    end
end

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if ARGV[5] == '0' then
        return redis.error_reply('NON_REENTRANT_REACQUIRE')
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    return nil
end

-- already queued: wait for the holder's TTL; with no TTL to wait for, poll (see above)
if redis.call('zscore', KEYS[3], ARGV[2]) then
    local ttl = redis.call('pttl', KEYS[1])
    if ttl >= 0 then
        return ttl
    end
    local poll = tonumber(ARGV[6])
    local head = redis.call('lindex', KEYS[2], 0)
    local headDeadline = nil
    if head then
        headDeadline = tonumber(redis.call('zscore', KEYS[3], head))
    end
    if headDeadline ~= nil and headDeadline - now < poll then
        poll = headDeadline - now
    end
    if poll < 1 then
        return 1
    end
    return poll
end

-- queue behind the last waiter (or behind the holder when nobody usable is queued)
local ttl
local last = redis.call('lindex', KEYS[2], -1)
local lastDeadline = nil
if last and last ~= ARGV[2] then
    lastDeadline = tonumber(redis.call('zscore', KEYS[3], last))
end
if lastDeadline ~= nil then
    ttl = lastDeadline - now
else
    ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
