-- pes_lease_time.lua: the time left on a held permit's lease (Redisson 3.41+'s
-- getLeaseTime, docs/protocol.md §20.7).
--
-- KEYS[1]  N
-- KEYS[2]  {N}:timeout
-- KEYS[3]  redisson_sc:{N}
-- ARGV[1]  the permit id
-- ARGV[2]  the no-lease score, 922337203685477
-- ARGV[3]  now: the client's clock, epoch ms
-- ARGV[4]  "PUBLISH" or "SPUBLISH"
--
-- Expired permits go back first (the count published when above zero). Returns the ms
-- left, -1 for a permit without a lease, 0 when the permit is not held.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local count = redis.call('incrby', KEYS[1], #expired)
    if count > 0 then
        redis.call(ARGV[4], KEYS[3], count)
    end
end
local score = redis.call('zscore', KEYS[2], ARGV[1])
if score == false then
    return 0
end
if score == ARGV[2] then
    return -1
end
return tonumber(score) - tonumber(ARGV[3])
