-- semaphore_drain_permits.lua: take every available permit of a semaphore.
-- Same effect and reply as Redisson RedissonSemaphore#drainPermitsAsync (docs/protocol.md
-- §19.2: a plain SET, which drops a TTL).
--
-- KEYS[1]  permit count N
--
-- Returns the count N held before (0 when missing; negative counts are returned as they
-- are), and sets N to 0 when it existed. Publishes nothing.
local count = redis.call('get', KEYS[1])
if count == false then
    return 0
end
redis.call('set', KEYS[1], '0')
return tonumber(count)
