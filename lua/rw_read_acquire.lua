-- rw_read_acquire.lua: take or re-enter the read half of a read-write lock.
-- Mirrors Redisson RedissonReadLock#tryLockInnerAsync (same in 3.23.3 and 4.x).
--
-- KEYS[1]  read-write lock hash N (field "mode", readers' and the writer's counts)
-- KEYS[2]  this owner's timeout prefix "{N}:<client-uuid>:<owner-id>:rwlock_timeout"
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  the same owner's write field "<client-uuid>:<owner-id>:write"
--
-- Returns nil when ARGV[2] now holds one more read hold k (N's field counts the holds;
-- KEYS[2]:k is set with its own lease ARGV[1]; N's TTL becomes max(PTTL, ARGV[1])),
-- otherwise N's PTTL (another owner holds the write lock).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    return nil
end
local writeOwner = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1
if mode == 'read' or writeOwner then
    local holds = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local holdKey = KEYS[2] .. ':' .. holds
    redis.call('set', holdKey, 1)
    redis.call('pexpire', holdKey, ARGV[1])
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
    redis.call('exists', KEYS[1])
    return nil
end
return redis.call('pttl', KEYS[1])
