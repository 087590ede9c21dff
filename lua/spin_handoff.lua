-- spin_handoff.lua: give back one hold of a spin lock and, when it was the last, hand
-- the lock to the next owner of the same client in the same step, without publishing.
-- Not a Redisson script: redisson-lock's local hand-off for the spin lock (docs/protocol.md
-- §16). What other clients observe is what they observe of spin_release.lua followed at
-- once by lock_acquire.lua for the next owner, with no moment in between where the lock
-- is free: the hash holds exactly one owner field throughout, and the key's TTL is the
-- next owner's lease. Spin waiters of other clients poll; nothing listens, so nothing is
-- published (the client bounds its hand-offs in a row and releases for real after them).
--
-- KEYS[1]  lock hash N
-- KEYS[2]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  lease in ms to re-arm when holds of ARGV[2] remain
-- ARGV[2]  releasing owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  latch time to live in ms
-- ARGV[4]  next owner field "<client-uuid>:<owner-id>"
-- ARGV[5]  next owner's lease in ms
--
-- Returns nil when ARGV[2] does not hold the lock, 0 when holds of ARGV[2] remain (the
-- TTL re-armed to ARGV[1]), 2 when the lock was handed to ARGV[4] (one hold, TTL
-- ARGV[5]). A call repeated with the same latch returns the first call's answer and
-- changes nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[2])
if earlier then
    return tonumber(earlier)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if remaining > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    redis.call('set', KEYS[2], '0', 'px', ARGV[3])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[2])
redis.call('hincrby', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[5])
redis.call('exists', KEYS[1])
redis.call('set', KEYS[2], '2', 'px', ARGV[3])
return 2
