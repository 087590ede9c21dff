-- hold_check.lua: after a fault, whether each lease-mode hold of this client is still
-- in Redis (the watchdog's holds are checked by their renewal script instead, which
-- also re-arms them). Read-only: nothing is written.
--
-- KEYS[i]       lock hash of the i-th hold (all in one hash slot on a cluster)
-- ARGV[2i-1]    field that must exist in KEYS[i] (the owner field; for a faster
--               multi-lock, the hold's first value id)
-- ARGV[2i]      the value that field must hold ("" for any: an owner field holds a count)
--
-- Returns an array: element i is the remaining TTL of KEYS[i] in ms when the hold is
-- still there (-1 when the key has no TTL), or -2 when it is gone (or the key is not a
-- hash).
local left = {}
for i = 1, #KEYS do
    local field = ARGV[2 * i - 1]
    local expect = ARGV[2 * i]
    local held
    if expect == '' then
        held = redis.pcall('hexists', KEYS[i], field) == 1
    else
        held = redis.pcall('hget', KEYS[i], field) == expect
    end
    if held then
        left[i] = redis.call('pttl', KEYS[i])
    else
        left[i] = -2
    end
end
return left
