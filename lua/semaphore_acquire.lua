-- semaphore_acquire.lua: take ARGV[1] permits of a semaphore, if that many are there.
-- Same effect and reply as Redisson RedissonSemaphore#tryAcquireAsync (docs/protocol.md §19.2).
--
-- KEYS[1]  permit count N (a string holding an integer; missing = 0 permits)
-- ARGV[1]  permits to take (> 0; the client refuses 0 and negatives)
--
-- Returns 1 when the permits were taken (DECRBY), 0 when fewer are available (nothing
-- changes). Publishes nothing. A key of another type answers WRONGTYPE.
local available = redis.call('get', KEYS[1])
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    return 1
end
return 0
