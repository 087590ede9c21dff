-- pes_update_lease.lua: sets a held permit's expiry (Redisson's updateLeaseTime, docs/
-- protocol.md §20.7).
--
-- KEYS[1]  N
-- KEYS[2]  {N}:timeout
-- KEYS[3]  redisson_sc:{N}
-- ARGV[1]  the permit id
-- ARGV[2]  the new expiry (the client's now + lease, or the no-lease score)
-- ARGV[3]  now: the client's clock, epoch ms
-- ARGV[4]  "PUBLISH" or "SPUBLISH"
--
-- Expired permits go back first (the count published when above zero). Returns 1 when
-- the permit is held and was updated, 0 when it is unknown, given back or expired.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local count = redis.call('incrby', KEYS[1], #expired)
    if count > 0 then
        redis.call(ARGV[4], KEYS[3], count)
    end
end
if redis.call('zscore', KEYS[2], ARGV[1]) ~= false then
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
    redis.call('exists', KEYS[2])
    return 1
end
return 0
