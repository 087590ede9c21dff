-- fencing_ops.lua: the fixed fenced writes, spliced into lua/fencing_guard.lua as its
-- write. One script for all four, chosen by ARGV[1], so one SHA-1 serves them all.
--
-- KEYS[1]  the data key K
-- ARGV[1]  "set":    ARGV[2] value                     SET K value          -> 1
--          "set_px": ARGV[2] value, ARGV[3] ttl in ms  SET K value PX ttl   -> 1
--          "hset":   ARGV[2] field, ARGV[3] value      HSET K field value   -> 0 or 1
--          "del":                                      DEL K                -> 0 or 1
--
-- Each is one command, so it either happens whole or raises (WRONGTYPE for HSET on a
-- key that is not a hash) before anything is written; the guard then records nothing.
local op = ARGV[1]
if op == 'set' then
    redis.call('set', KEYS[1], ARGV[2])
    return 1
elseif op == 'set_px' then
    redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[3])
    return 1
elseif op == 'hset' then
    return redis.call('hset', KEYS[1], ARGV[2], ARGV[3])
elseif op == 'del' then
    return redis.call('del', KEYS[1])
end
error('fencing_ops.lua: unknown operation ' .. tostring(op))
