-- fair_release.lua: give back one hold of a fair lock, idempotently, and wake the head.
-- Mirrors Redisson RedissonFairLock#unlockInnerAsync (3.24.0+, with the unlock latch and
-- the nil-safe stale-waiter purge).
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
--
-- Returns nil when ARGV[3] does not hold the lock, 0 when holds remain, 1 when the
-- lock was released (the key is deleted and ARGV[1] published on the channel of the
-- queue head, if any). Redisson quirk kept: when N does not exist at all, the head is
-- woken the same way and 1 is returned, owner or not. A call repeated with the same
-- latch returns the first call's answer and changes nothing.
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
redis.call('set', KEYS[5], '1', 'px', ARGV[6])
local nextWaiter = redis.call('lindex', KEYS[2], 0)
if nextWaiter then
    redis.call(ARGV[5], KEYS[4] .. ':' .. nextWaiter, ARGV[1])
end
return 1
