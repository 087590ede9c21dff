-- lock_acquire.lua: take or re-enter a reentrant lock.
-- Mirrors Redisson RedissonLock#tryLockInnerAsync (same semantics in 3.23.3 and 4.x).
--
-- KEYS[1]  lock hash N
-- ARGV[1]  lease in milliseconds (the watchdog timeout in watchdog mode)
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
--
-- Returns nil when ARGV[2] now holds the lock (first hold or re-entry; the TTL is
-- re-armed to ARGV[1]), otherwise the lock's remaining time to live in ms (PTTL).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local free = redis.call('exists', KEYS[1]) == 0
if free or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    return nil
end
return redis.call('pttl', KEYS[1])
