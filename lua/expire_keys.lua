-- The expiry of an object kept in several keys (Redisson's RExpirable over every key of
-- the object, e.g. a permit-expirable semaphore's count and its `:timeout` set), changed
-- in one step so that the keys never disagree.
-- KEYS: the object's keys (one hash slot).
-- ARGV[1]: 'pexpire' (ARGV[2] = time to live, ms), 'pexpireat' (ARGV[2] = epoch ms) or
--          'persist'.
-- Reply: 1 when the command changed at least one key (a key that exists got the TTL, or
-- lost it), else 0: Redisson's boolean.
local command = ARGV[1]
local changed = 0
for index = 1, #KEYS do
    local done
    if command == 'persist' then
        done = redis.call('persist', KEYS[index])
    else
        done = redis.call(command, KEYS[index], ARGV[2])
    end
    if done == 1 then
        changed = 1
    end
end
return changed
