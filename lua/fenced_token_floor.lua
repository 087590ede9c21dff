-- fenced_token_floor.lua: raise a fenced lock's token counter to the server clock.
-- Not a Redisson script: FencedLock::ensure_token_floor (redisson-lock only).
--
-- KEYS[1]  token counter "redisson_lock_token:{N}"
--
-- Sets the counter to the server's TIME in microseconds when it is missing or lower,
-- and leaves it alone otherwise (it is never lowered). Returns the counter afterwards,
-- as a decimal string: the next token drawn, by any client, is above it.
-- A token key that holds no non-negative integer is answered with the error reply
-- "BAD_TOKEN <why>", and nothing is written.
-- Replication: as lua/fenced_acquire.lua, the new value goes out as a plain SET.
local function bad_token(why)
    return redis.error_reply('BAD_TOKEN ' .. tostring(why))
end
local current = redis.pcall('get', KEYS[1])
if type(current) == 'table' then
    return bad_token(current.err)
end
-- Redis integers as INCR reads them: no sign, no leading zero, at most 2^63 - 1.
if current and not (current == '0' or (string.match(current, '^[1-9]%d*$')
        and (#current < 19 or (#current == 19 and current <= '9223372036854775807')))) then
    return bad_token('not a non-negative integer: ' .. current)
end
if redis.replicate_commands then
    redis.replicate_commands()
end
local now = redis.call('time')
local floor = string.format('%.0f', tonumber(now[1]) * 1000000 + tonumber(now[2]))
-- Both are canonical decimal strings: the longer is the larger, else compare as text.
if not current or #current < #floor or (#current == #floor and current < floor) then
    redis.call('set', KEYS[1], floor)
    return floor
end
return current
