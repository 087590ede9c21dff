-- rw_write_acquire.lua: take or re-enter the write half of a read-write lock.
-- Mirrors Redisson RedissonWriteLock#tryLockInnerAsync (same in 3.23.3 and 4.x).
--
-- KEYS[1]  read-write lock hash N (field "mode", readers' and the writer's counts)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner's write field "<client-uuid>:<owner-id>:write"
--
-- Returns nil when ARGV[2] now holds the write lock: a first hold sets N's TTL to
-- ARGV[1]; a re-entry ADDS ARGV[1] to N's current PTTL (Redisson quirk; a PTTL below 0
-- counts as 0). Otherwise N's PTTL (read holds, or another owner's write hold).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local ttl = redis.call('pttl', KEYS[1])
    if ttl < 0 then
        ttl = 0
    end
    redis.call('pexpire', KEYS[1], ttl + tonumber(ARGV[1]))
    redis.call('exists', KEYS[1])
    return nil
end
return redis.call('pttl', KEYS[1])
