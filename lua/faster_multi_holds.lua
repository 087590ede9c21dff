-- faster_multi_holds.lua: what one owner holds of a faster multi-lock, and until when
-- its values are held.
-- Serves isHeldByThread (Redisson RedissonFasterMultiLock#isHeldByThread, protocol
-- 14.3.8, without its skipped first value), and the queries Redisson does not support
-- for this lock (getHoldCount, remainTimeToLive).
--
-- KEYS[1]  group hash G
-- ARGV[1]  now: epoch ms of this client's clock
-- ARGV[2]  owner "<client-uuid>:<owner-id>" (LN)
-- ARGV[3..] field ids of the values
--
-- Returns {held, count, remaining}: held is 1 when every value's owner field names LN
-- and its "F:LN:expire_time" is later than now, else 0; count is then the smallest
-- "F:LN:lock_count" among the values (0 when not held); remaining is the largest
-- (deadline - now) among the values held by anyone, or -2 when none is held.
local group = KEYS[1]
local now = tonumber(ARGV[1])
local me = ARGV[2]
local held = 1
local count = nil
local remaining = -2
for i = 3, #ARGV do
    local value = ARGV[i]
    local owner = redis.call('hget', group, value)
    local deadline = nil
    if owner then
        deadline = tonumber(redis.call('hget', group, value .. ':' .. owner .. ':expire_time'))
    end
    if deadline and deadline > now then
        if deadline - now > remaining then
            remaining = deadline - now
        end
    else
        deadline = nil
    end
    if owner == me and deadline then
        local mine = tonumber(redis.call('hget', group, value .. ':' .. me .. ':lock_count')) or 0
        if count == nil or mine < count then
            count = mine
        end
    else
        held = 0
    end
end
if held == 0 or count == nil then
    return {0, 0, remaining}
end
return {1, count, remaining}
