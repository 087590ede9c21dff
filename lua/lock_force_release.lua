-- lock_force_release.lua: delete a lock whoever holds it, and wake a waiter.
-- Mirrors Redisson RedissonLock#forceUnlockAsync.
--
-- KEYS[1]  lock hash N
-- KEYS[2]  channel "redisson_lock__channel:{N}"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when a lock was deleted (and ARGV[1] published on KEYS[2]), else 0.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
