-- pes_add_permits.lua: adds k permits (k may be negative) (Redisson's addPermits, docs/
-- protocol.md §20.6).
--
-- KEYS[1]  N
-- KEYS[2]  redisson_sc:{N}
-- ARGV[1]  k
-- ARGV[2]  "PUBLISH" or "SPUBLISH"
--
-- A plain SET, as Redisson's: it drops N's TTL. Publishes k (the delta, as Redisson
-- does) only when k is above zero. Returns the new count.
local count = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
redis.call('set', KEYS[1], count)
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return count
