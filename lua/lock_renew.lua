-- lock_renew.lua: the watchdog's batched renewal.
-- Mirrors Redisson's LockTask chunk script (3.44.0+ LockRenewalScheduler).
--
-- KEYS[i]    lock hash of the i-th lock (all in one hash slot on a cluster)
-- ARGV[1]    lease in ms (the watchdog timeout)
-- ARGV[i+1]  owner field that must still hold KEYS[i]
--
-- Returns an array: element i is 1 when KEYS[i] was re-armed to ARGV[1] ms, 0 when
-- its owner field is gone (the lock was lost) or the key is not a lock hash.
--
-- A renewed key is read once more after its write (redisson-lock's, not Redisson's):
-- Redis forgets a key's CLIENT TRACKING entry when it is written, and a read inside a
-- script tracks it again for the calling connection, so a renewal costs no EXISTS.
local renewed = {}
for i = 1, #KEYS do
    local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
    if held == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        redis.call('exists', KEYS[i])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
