-- fair_handoff.lua: give back one hold of a fair lock and, when it was the last and the
-- head of the wait queue is one of the waiters this client names, do that waiter's
-- acquire in the same step.
-- Not a Redisson script: redisson-lock's hand-off within the fair queue (docs/protocol.md
-- §16). What other clients observe is what they observe of fair_release.lua followed at
-- once by the head's own fair_acquire.lua (the blocking variant, with the head's lease and
-- wait), with no moment in between where the lock is free: only the head of the queue is
-- ever handed the lock, so the order across clients is the queue's. When the head is
-- not one of the named waiters (another client's, or none), it is fair_release.lua.
--
-- KEYS[1]  lock hash N
-- KEYS[2]  wait queue "redisson_lock_queue:{N}" (list of owner fields)
-- KEYS[3]  waiter deadlines "redisson_lock_timeout:{N}" (zset, score = epoch-ms deadline)
-- KEYS[4]  channel prefix "redisson_lock__channel:{N}" (waiter channel: prefix:field)
-- KEYS[5]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  lease in ms to re-arm when holds remain
-- ARGV[3]  owner field "<client-uuid>:<owner-id>"
-- ARGV[4]  caller's clock, epoch ms
-- ARGV[5]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[6]  latch time to live in ms
-- ARGV[7 + 3i], ARGV[8 + 3i], ARGV[9 + 3i] (i = 0, 1, ...): the i-th named waiter's
--          owner field, its lease in ms, and the wait in ms it queued with (taken off
--          the deadlines of the waiters behind it, as its own acquire does)
--
-- Returns nil when ARGV[3] does not hold the lock, 0 when holds remain, 1 when the
-- lock was released (as fair_release.lua: the key is deleted and ARGV[1] published on
-- the channel of the queue head, if any), 2 + i when it was handed to the i-th named
-- waiter (one hold, TTL its lease; out of the queue). A call repeated with the same latch
-- returns the first call's answer and changes nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[5])
if earlier then
    return tonumber(earlier)
end
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

if redis.call('exists', KEYS[1]) == 0 then
    local nextWaiter = redis.call('lindex', KEYS[2], 0)
    if nextWaiter then
        redis.call(ARGV[5], KEYS[4] .. ':' .. nextWaiter, ARGV[1])
    end
    redis.call('set', KEYS[5], '1', 'px', ARGV[6])
    return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if remaining > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('exists', KEYS[1])
    redis.call('set', KEYS[5], '0', 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
local nextWaiter = redis.call('lindex', KEYS[2], 0)
if not nextWaiter then
    redis.call('set', KEYS[5], '1', 'px', ARGV[6])
    return 1
end
for i = 7, #ARGV - 2, 3 do
    if ARGV[i] == nextWaiter then
        -- the head's acquire: out of the queue, the others' deadlines moved up by its
        -- wait, one hold with its lease
        local wait = tonumber(ARGV[i + 2])
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], nextWaiter)
        local rest = redis.call('zrange', KEYS[3], 0, -1)
        for _, waiter in ipairs(rest) do
            redis.call('zincrby', KEYS[3], -wait, waiter)
        end
        redis.call('hset', KEYS[1], nextWaiter, 1)
        redis.call('pexpire', KEYS[1], ARGV[i + 1])
        redis.call('exists', KEYS[1])
        local answer = 2 + (i - 7) / 3
        redis.call('set', KEYS[5], answer, 'px', ARGV[6])
        return answer
    end
end
redis.call(ARGV[5], KEYS[4] .. ':' .. nextWaiter, ARGV[1])
redis.call('set', KEYS[5], '1', 'px', ARGV[6])
return 1
