-- fencing_guard.lua: a fenced write. Refuses a token below the highest one the resource
-- has seen; otherwise runs the write, then records the token. No Redisson counterpart
-- (Redisson hands out tokens, RFencedLock, but has no resource side).
--
-- Not a script by itself: the crate puts the write in front of it, as
--     local function fenced_write(KEYS, ARGV)
--     <the write's Lua>
--     end
-- The write is lua/fencing_ops.lua (FencedWriter::set, set_with_ttl, hset, del) or a
-- caller's body (FencedWriter::eval). Compiled before this file, it sees none of its
-- locals; its parameters KEYS and ARGV hold only the write's own keys and arguments, so
-- it reads them as a plain EVAL of it would.
--
-- KEYS[1..n-1]  the write's own keys; KEYS[1] is the resource the fence guards
-- KEYS[n]       the fence key "redisson_fence:{K}" of K = KEYS[1] (same hash slot)
-- ARGV[1..m-1]  the write's own arguments
-- ARGV[m]       the presented token: a u64 in decimal, no sign, no leading zeros
--
-- Returns the write's reply. Refusals write nothing and are error replies:
--   "REDISSON_FENCE_STALE <seen>"     the token is below <seen>, the highest seen
--   "REDISSON_FENCE_CORRUPT <found>"  the fence key holds no token: <found> is its text
--                                     (at most 64 bytes, control bytes as '?') or, for
--                                     a key that is not a string, "<type>"
-- The token is recorded (SET fence token, no expiry) only after the write returned, so a
-- write that raises an error (a WRONGTYPE, say) leaves the fence as it was.
local fence = KEYS[#KEYS]
local token = ARGV[#ARGV]

-- Whether decimal string a (at most 20 digits) is below b, exactly: Lua numbers are
-- doubles, exact only up to 2^53, so the digits are compared as two 10-digit halves.
local function below(a, b)
    a = string.rep('0', 20 - #a) .. a
    b = string.rep('0', 20 - #b) .. b
    local a_high = tonumber(string.sub(a, 1, 10))
    local b_high = tonumber(string.sub(b, 1, 10))
    if a_high ~= b_high then
        return a_high < b_high
    end
    return tonumber(string.sub(a, 11)) < tonumber(string.sub(b, 11))
end

local kind = redis.call('type', fence)['ok']
if kind ~= 'none' then
    if kind ~= 'string' then
        return redis.error_reply('REDISSON_FENCE_CORRUPT <' .. kind .. '>')
    end
    local seen = redis.call('get', fence)
    if not string.find(seen, '^[0-9]+$') or #seen > 20
        or below('18446744073709551615', seen) then
        local shown = string.gsub(string.sub(seen, 1, 64), '[%c]', '?')
        return redis.error_reply('REDISSON_FENCE_CORRUPT ' .. shown)
    end
    if below(token, seen) then
        return redis.error_reply('REDISSON_FENCE_STALE ' .. seen)
    end
end

local own_keys, own_args = {}, {}
for i = 1, #KEYS - 1 do
    own_keys[i] = KEYS[i]
end
for i = 1, #ARGV - 1 do
    own_args[i] = ARGV[i]
end
local reply = fenced_write(own_keys, own_args)
redis.call('set', fence, token)
return reply
