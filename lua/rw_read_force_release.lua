-- rw_read_force_release.lua: delete a read-locked read-write lock, whoever holds it.
-- Mirrors Redisson RedissonReadLock#forceUnlockAsync.
--
-- KEYS[1]  read-write lock hash N
-- KEYS[2]  channel "redisson_rwlock:{N}"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when N was in read mode and was deleted (ARGV[1] published on KEYS[2]),
-- else 0 (write mode or no lock: nothing changes). The per-hold rwlock_timeout keys
-- are left to expire.
if redis.call('hget', KEYS[1], 'mode') == 'read' then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
