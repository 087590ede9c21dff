-- spin_release.lua: give back one hold of a spin lock, idempotently, without publishing.
-- Mirrors Redisson RedissonSpinLock#unlockInnerAsync (3.24.0+, with the unlock latch).
--
-- KEYS[1]  lock hash N
-- KEYS[2]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  lease in ms to re-arm when holds remain
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  latch time to live in ms
--
-- Returns nil when ARGV[2] does not hold the lock, 0 when holds remain, 1 when the
-- lock was released (the key is deleted; nothing is published: spin waiters poll).
-- A call repeated with the same latch returns the first call's answer and changes
-- nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[2])
if earlier then
    return tonumber(earlier)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if remaining > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    redis.call('set', KEYS[2], '0', 'px', ARGV[3])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[2], '1', 'px', ARGV[3])
return 1
