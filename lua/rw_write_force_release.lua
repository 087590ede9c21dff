-- rw_write_force_release.lua: delete a write-locked read-write lock, whoever holds it.
-- Mirrors Redisson RedissonWriteLock#forceUnlockAsync.
--
-- KEYS[1]  read-write lock hash N
-- KEYS[2]  channel "redisson_rwlock:{N}"
-- ARGV[1]  unlock message "1"
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when N was in write mode and was deleted (ARGV[1] published on KEYS[2]),
-- else 0 (read mode or no lock: nothing changes). The write owner's read holds go
-- with N; their rwlock_timeout keys are left to expire.
if redis.call('hget', KEYS[1], 'mode') == 'write' then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
