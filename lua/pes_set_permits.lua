-- pes_set_permits.lua: makes the total of available and held permits ARGV[1]
-- (Redisson 3.23.4+'s setPermits, docs/protocol.md §20.6).
--
-- KEYS[1]  N
-- KEYS[2]  redisson_sc:{N}
-- KEYS[3]  {N}:timeout
-- ARGV[1]  the total
-- ARGV[2]  "PUBLISH" or "SPUBLISH"
--
-- Held permits count, expired ones too (nothing is reclaimed). Publishes the total (as
-- Redisson does) when it changed something and the total is above zero. Returns the
-- available count after it.
local target = tonumber(ARGV[1])
local available = redis.call('get', KEYS[1])
if available == false then
    redis.call('set', KEYS[1], target)
    if target > 0 then
        redis.call(ARGV[2], KEYS[2], target)
    end
    return target
end
local total = tonumber(available) + redis.call('zcount', KEYS[3], '-inf', '+inf')
if total == target then
    return tonumber(available)
end
local count = redis.call('incrby', KEYS[1], target - total)
if target > 0 then
    redis.call(ARGV[2], KEYS[2], target)
end
return count
