-- The expiry of an object kept in several keys (Redisson's RExpirable over every key of
-- the object, e.g. a permit-expirable semaphore's count and its `:timeout` set), changed
-- in one step so that the keys never disagree.
-- KEYS: the object's keys (one hash slot).
-- ARGV[1]: 'pexpire' (ARGV[2] = time to live, ms), 'pexpireat' (ARGV[2] = epoch ms) or
--          'persist'.
-- ARGV[3]: '' (every key), or Redis 7's 'XX', 'NX', 'GT' or 'LT' (Redisson's expireIfSet,
--          expireIfNotSet, expireIfGreater, expireIfLess): the keys the command changes.
-- Reply: 1 when the command changed at least one key (a key that exists got the TTL, or
-- lost it), else 0: Redisson's boolean.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local command = ARGV[1]
local changed = 0
for index = 1, #KEYS do
    local done
    if command == 'persist' then
        done = redis.call('persist', KEYS[index])
    elseif ARGV[3] ~= nil and ARGV[3] ~= '' then
        done = redis.call(command, KEYS[index], ARGV[2], ARGV[3])
    else
        done = redis.call(command, KEYS[index], ARGV[2])
    end
    if done == 1 then
        changed = 1
    end
end
if #KEYS > 0 then
    redis.call('exists', unpack(KEYS))
end
return changed
