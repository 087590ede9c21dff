-- hold_check.lua: after a fault, whether each lease-mode hold of this client is still
-- in Redis (the watchdog's holds are checked by their renewal script instead, which
-- also re-arms them). Read-only: nothing is written.
--
-- KEYS[i]  lock hash of the i-th hold (all in one hash slot on a cluster)
-- ARGV[i]  owner field that must still hold KEYS[i]
--
-- Returns an array: element i is the remaining TTL of KEYS[i] in ms when ARGV[i] still
-- holds it (-1 when the key has no TTL), or -2 when the field or the key is gone (or the
-- key is not a lock hash).
local left = {}
for i = 1, #KEYS do
    if redis.pcall('hexists', KEYS[i], ARGV[i]) == 1 then
        left[i] = redis.call('pttl', KEYS[i])
    else
        left[i] = -2
    end
end
return left
