-- pes_try_set_permits.lua: sets the number of permits unless it is set (Redisson's
-- trySetPermits, docs/protocol.md §20.6).
--
-- KEYS[1]  N
-- KEYS[2]  redisson_sc:{N}
-- ARGV[1]  the permits
-- ARGV[2]  "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when set (the count is published when above zero), 0 when N existed.
if redis.call('get', KEYS[1]) == false then
    redis.call('set', KEYS[1], ARGV[1])
    if tonumber(ARGV[1]) > 0 then
        redis.call(ARGV[2], KEYS[2], ARGV[1])
    end
    return 1
end
return 0
