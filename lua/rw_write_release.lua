-- rw_write_release.lua: give back one write hold of a read-write lock, idempotently.
-- Mirrors Redisson RedissonWriteLock#unlockInnerAsync (3.44.0+: unlock latch, and a
-- missing hash answers nil).
--
-- KEYS[1]  read-write lock hash N
-- KEYS[2]  channel "redisson_rwlock:{N}"
-- KEYS[3]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  unlock message "1" (wakes readers and writers alike)
-- ARGV[2]  lease in ms to re-arm when write holds remain
-- ARGV[3]  owner's write field "<client-uuid>:<owner-id>:write"
-- ARGV[4]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[5]  latch time to live in ms
--
-- Returns nil when ARGV[3] holds no write hold (when N is gone, ARGV[1] is published on
-- KEYS[2] too, as Redisson does), 0 when write holds remain, 1 when the write lock was
-- released: N deleted and ARGV[1] published, or, when the owner still has read holds,
-- "mode" downgraded to "read" without publishing. A call repeated with the same latch
-- returns the first call's answer (nil answers write no latch, so a repeat answers nil
-- again) and changes nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[3])
if earlier then
    return tonumber(earlier)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call(ARGV[4], KEYS[2], ARGV[1])
    return nil
end
if mode ~= 'write' then
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if remaining > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('exists', KEYS[1])
    redis.call('set', KEYS[3], '0', 'px', ARGV[5])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], ARGV[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('exists', KEYS[1])
end
redis.call('set', KEYS[3], '1', 'px', ARGV[5])
return 1
