-- lock_release.lua: give back one hold of a reentrant lock, idempotently.
-- Mirrors Redisson RedissonLock#unlockInnerAsync (3.24.0+, with the unlock latch).
--
-- KEYS[1]  lock hash N
-- KEYS[2]  channel "redisson_lock__channel:{N}"
-- KEYS[3]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  lease in ms to re-arm when holds remain
-- ARGV[3]  owner field "<client-uuid>:<owner-id>"
-- ARGV[4]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[5]  latch time to live in ms
--
-- Returns nil when ARGV[3] does not hold the lock, 0 when holds remain, 1 when the
-- lock was released (the key is deleted and ARGV[1] published on KEYS[2]). A call
-- repeated with the same latch returns the first call's answer and changes nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[3])
if earlier then
    return tonumber(earlier)
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
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], '1', 'px', ARGV[5])
return 1
