-- fair_acquire_failed.lua: leave a fair lock's wait queue after giving up waiting.
-- Mirrors Redisson RedissonFairLock#acquireFailedAsync (sent with retry since 4.7.0,
-- so it must be idempotent).
--
-- KEYS[1]  wait queue "redisson_lock_queue:{N}" (list of owner fields)
-- KEYS[2]  waiter deadlines "redisson_lock_timeout:{N}" (zset, score = epoch-ms deadline)
-- KEYS[3]  lock hash N
-- KEYS[4]  channel prefix "redisson_lock__channel:{N}" (waiter channel: prefix:field)
-- ARGV[1]  owner field "<client-uuid>:<owner-id>" that stops waiting
-- ARGV[2]  wait in ms reserved per queue slot (the value used when it queued)
-- ARGV[3]  unlock message "0"
-- ARGV[4]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Every waiter queued behind ARGV[1] gets its deadline moved ARGV[2] ms earlier (once
-- each, and only if it has a deadline: a queue entry without one is not given one),
-- then ARGV[1] is removed from the queue and the zset. Returns 1 when ARGV[1] was
-- removed from either, else 0 (a repeated call, or an owner in neither: no change).
--
-- Deviation from Redisson (which publishes nothing here): when ARGV[1] was the head and
-- the lock is free, ARGV[3] is published on the new head's channel. The unlock that
-- freed the lock woke only ARGV[1]; without this the new head would sleep until the old
-- holder's TTL (or its next poll) although the lock is free and its turn has come.
local wait = tonumber(ARGV[2])
local queue = redis.call('lrange', KEYS[1], 0, -1)
local position = nil
for i, waiter in ipairs(queue) do
    if waiter == ARGV[1] then
        position = i
        break
    end
end
if position ~= nil then
    local shifted = {}
    for i = position + 1, #queue do
        local waiter = queue[i]
        if waiter ~= ARGV[1] and not shifted[waiter] then
            shifted[waiter] = true
            if redis.call('zscore', KEYS[2], waiter) then
                redis.call('zincrby', KEYS[2], -wait, waiter)
            end
        end
    end
end
local removed = redis.call('zrem', KEYS[2], ARGV[1])
removed = removed + redis.call('lrem', KEYS[1], 0, ARGV[1])
if position == 1 and redis.call('exists', KEYS[3]) == 0 then
    local head = redis.call('lindex', KEYS[1], 0)
    if head then
        redis.call(ARGV[4], KEYS[4] .. ':' .. head, ARGV[3])
    end
end
if removed > 0 then
    return 1
end
return 0
