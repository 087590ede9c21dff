-- semaphore_add_permits.lua: add ARGV[1] permits (negative: take them away) to a semaphore.
-- Same effect as Redisson RedissonSemaphore#addPermitsAsync (docs/protocol.md §19.2: a plain
-- SET, which drops a TTL), except that a count of 0 or less is not published (§23.3).
--
-- KEYS[1]  permit count N (missing = 0)
-- KEYS[2]  channel "redisson_sc:{N}"
-- ARGV[1]  permits to add (any integer)
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns the new count, which is published on KEYS[2] when above 0.
local count = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
redis.call('set', KEYS[1], count)
if count > 0 then
    redis.call(ARGV[2], KEYS[2], math.min(count, 2147483647))
end
return count
