-- pes_release.lua: gives back one permit by its id (Redisson's tryRelease(id), docs/
-- protocol.md §20.4).
--
-- KEYS[1]  N
-- KEYS[2]  redisson_sc:{N} (Redisson's key order: the channel second)
-- KEYS[3]  {N}:timeout
-- ARGV[1]  the permit id (16 bytes)
-- ARGV[2]  1 (the number given back)
-- ARGV[3]  now: the client's clock, epoch ms
-- ARGV[4]  "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when the permit was held and its lease had not ended; 0 when it was unknown
-- (never taken, given back, reclaimed), or when its lease had ended (it is given back
-- anyway, as Redisson does). Publishes the new count, unless it is 0 or less (a count
-- Java waiters ignore or throw on, docs/protocol.md §23.3).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local score = redis.call('zscore', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then
    return 0
end
redis.call('exists', KEYS[3])
local count = redis.call('incrby', KEYS[1], ARGV[2])
if count > 0 then
    redis.call(ARGV[4], KEYS[2], count)
end
if tonumber(score) <= tonumber(ARGV[3]) then
    return 0
end
return 1
