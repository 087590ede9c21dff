-- semaphore_try_set_permits.lua: set a semaphore's permits if it has none set yet.
-- Same effect and reply as Redisson RedissonSemaphore#trySetPermitsAsync (with the TTL of
-- 3.29.0+; docs/protocol.md §19.2), except that a count of 0 or less is not published (§23.3).
--
-- KEYS[1]  permit count N
-- KEYS[2]  channel "redisson_sc:{N}"
-- ARGV[1]  permits (any integer)
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[3]  time to live in ms, or "0" for none
--
-- Returns 1 when N was missing and is now ARGV[1] (with PX ARGV[3] when above 0), else 0.
if redis.call('get', KEYS[1]) ~= false then
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
local count = tonumber(ARGV[1])
if count > 0 then
    redis.call(ARGV[2], KEYS[2], math.min(count, 2147483647))
end
return 1
