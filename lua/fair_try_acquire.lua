-- fair_try_acquire.lua: take or re-enter a fair lock without queueing (tryLock()).
-- Mirrors Redisson RedissonFairLock#tryLockInnerAsync, non-blocking branch (HEAD:
-- nil-safe stale-waiter purge); with ARGV[5] = "0" it is RedissonNonReentrantFairLock.
--
-- KEYS[1]  lock hash N
-- KEYS[2]  wait queue "redisson_lock_queue:{N}" (list of owner fields)
-- KEYS[3]  waiter deadlines "redisson_lock_timeout:{N}" (zset, score = epoch-ms deadline)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  caller's clock, epoch ms (note: before the wait, as in Redisson)
-- ARGV[4]  wait in ms per queue slot (taken off the others' deadlines on acquire)
-- ARGV[5]  "1" reentrant (RFairLock), "0" non-reentrant (a re-entry is an error)
--
-- Returns nil when ARGV[2] now holds the lock (first hold or re-entry; the TTL is
-- re-armed to ARGV[1]); otherwise an integer meaning "not acquired": N's PTTL when N
-- exists, else 1 (free but others are queued). Never enqueues. A re-entry with
-- ARGV[5] = "0" returns the error reply NON_REENTRANT_REACQUIRE and changes nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local now = tonumber(ARGV[3])
local wait = tonumber(ARGV[4])

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
    return 1
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

return redis.call('pttl', KEYS[1])
