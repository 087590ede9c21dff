-- fair_force_release.lua: delete a fair lock whoever holds it, and wake the queue head.
-- Mirrors Redisson RedissonFairLock#forceUnlockAsync (HEAD: nil-safe stale-waiter purge).
--
-- KEYS[1]  lock hash N
-- KEYS[2]  wait queue "redisson_lock_queue:{N}" (list of owner fields)
-- KEYS[3]  waiter deadlines "redisson_lock_timeout:{N}" (zset, score = epoch-ms deadline)
-- KEYS[4]  channel prefix "redisson_lock__channel:{N}" (waiter channel: prefix:field)
-- ARGV[1]  unlock message "0"
-- ARGV[2]  caller's clock, epoch ms
-- ARGV[3]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when a lock was deleted (and ARGV[1] published on the channel of the
-- queue head, if any), else 0. Stale waiters are purged either way.
local now = tonumber(ARGV[2])

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

if redis.call('del', KEYS[1]) == 1 then
    local nextWaiter = redis.call('lindex', KEYS[2], 0)
    if nextWaiter then
        redis.call(ARGV[3], KEYS[4] .. ':' .. nextWaiter, ARGV[1])
    end
    return 1
end
return 0
