-- pes_release_many.lua: gives back several permits by id, all or none (Redisson 3.41+'s
-- tryRelease(ids), docs/protocol.md §20.4).
--
-- KEYS[1]  N
-- KEYS[2]  redisson_sc:{N}
-- KEYS[3]  {N}:timeout
-- ARGV[1]  the number of ids
-- ARGV[2]  now: the client's clock, epoch ms
-- ARGV[3]  "PUBLISH" or "SPUBLISH"
-- ARGV[4..]  the permit ids
--
-- Returns 0 and changes nothing when any id is unknown or its lease has ended; else
-- reclaims every expired permit (publishing the new count when above zero), gives the
-- ids back, publishes the number given back, and returns it.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local now = tonumber(ARGV[2])
for i = 4, #ARGV do
    local score = redis.call('zscore', KEYS[3], ARGV[i])
    if score == false or tonumber(score) <= now then
        return 0
    end
end
local expired = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2])
if #expired > 0 then
    redis.call('zrem', KEYS[3], unpack(expired))
    local count = redis.call('incrby', KEYS[1], #expired)
    if count > 0 then
        redis.call(ARGV[3], KEYS[2], count)
    end
end
local released = redis.call('zrem', KEYS[3], unpack(ARGV, 4))
redis.call('exists', KEYS[3])
redis.call('incrby', KEYS[1], released)
if released > 0 then
    redis.call(ARGV[3], KEYS[2], released)
end
return released
