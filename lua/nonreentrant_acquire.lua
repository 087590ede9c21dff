-- nonreentrant_acquire.lua: take a non-reentrant lock.
-- Mirrors Redisson RedissonNonReentrantLock#tryLockInnerAsync (4.4.0+). Released with
-- lock_release.lua / lock_force_release.lua (RLock keys and channel).
--
-- KEYS[1]  lock hash N
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
--
-- Returns nil when ARGV[2] now holds the lock (the TTL is set to ARGV[1]), the error
-- reply NON_REENTRANT_REACQUIRE when ARGV[2] already holds it (nothing changes),
-- otherwise the lock's remaining time to live in ms (PTTL).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
end
return redis.call('pttl', KEYS[1])
