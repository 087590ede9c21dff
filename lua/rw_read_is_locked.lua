-- rw_read_is_locked.lua: is the read half of a read-write lock held (by anyone)?
-- Mirrors Redisson RedissonReadLock#isLockedAsync (3.24.0+, counts a writer's own
-- read holds).
--
-- KEYS[1]  read-write lock hash N
--
-- Returns 1 when "mode" is "read", or "write" with more fields than "mode" and the
-- writer's (HLEN > 2: the write owner also holds reads), else 0.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'read' then
    return 1
end
if mode == 'write' and redis.call('hlen', KEYS[1]) > 2 then
    return 1
end
return 0
