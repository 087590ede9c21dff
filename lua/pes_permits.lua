-- pes_permits.lua: the counts of a permit-expirable semaphore, after giving back every
-- expired permit (Redisson's availablePermits, getPermits and acquiredPermits scripts,
-- docs/protocol.md §20.5: one script, since they share their effect).
--
-- KEYS[1]  N
-- KEYS[2]  {N}:timeout
-- KEYS[3]  redisson_sc:{N}
-- ARGV[1]  now: the client's clock, epoch ms
-- ARGV[2]  "PUBLISH" or "SPUBLISH"
--
-- Returns {available, held, exists}: N (0 when missing), the held permits, and 1 when N
-- exists (Redisson's getPermits answers 0 for a missing N).
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local count = redis.call('incrby', KEYS[1], #expired)
    if count > 0 then
        redis.call(ARGV[2], KEYS[3], count)
    end
end
local available = redis.call('get', KEYS[1])
local held = redis.call('zcount', KEYS[2], '-inf', '+inf')
if available == false then
    return {0, held, 0}
end
return {tonumber(available), held, 1}
