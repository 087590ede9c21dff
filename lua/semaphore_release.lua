-- semaphore_release.lua: give ARGV[1] permits back to a semaphore.
-- Same effect as Redisson RedissonSemaphore#releaseAsync / #releaseIfExistsAsync
-- (docs/protocol.md §19.2), except that a count of 0 or less is not published (§23.3).
--
-- KEYS[1]  permit count N
-- KEYS[2]  channel "redisson_sc:{N}"
-- KEYS[3]  (optional) a latch "redisson_unlock_latch:{N}:<request-id>" that makes the call
--          idempotent: a call repeated with the same latch changes nothing and answers 1
-- ARGV[1]  permits to give back (> 0)
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[3]  "1": only if N exists (releaseIfExists); "0": create N when missing (release)
-- ARGV[4]  latch time to live in ms (with KEYS[3])
--
-- Returns 0 when ARGV[3] is "1" and N does not exist (nothing changes), else 1. The new
-- count (INCRBY) is published on KEYS[2] when it is above 0 (at most 2^31-1, the range a
-- Java subscriber reads), as the wake-up budget of the channel's waiters.
if KEYS[3] ~= nil and redis.call('exists', KEYS[3]) == 1 then
    return 1
end
if ARGV[3] == '1' and redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local count = redis.call('incrby', KEYS[1], ARGV[1])
if count > 0 then
    redis.call(ARGV[2], KEYS[2], math.min(count, 2147483647))
end
if KEYS[3] ~= nil then
    redis.call('set', KEYS[3], '1', 'px', ARGV[4])
end
return 1
