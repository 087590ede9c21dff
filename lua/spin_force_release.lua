-- spin_force_release.lua: delete a spin lock whoever holds it, without publishing.
-- Mirrors Redisson RedissonSpinLock#forceUnlockAsync.
--
-- KEYS[1]  lock hash N
--
-- Returns 1 when a lock was deleted, else 0. Nothing is published (spin waiters poll).
return redis.call('del', KEYS[1])
