-- rw_read_release.lua: give back one read hold of a read-write lock, idempotently.
-- Mirrors Redisson RedissonReadLock#unlockInnerAsync (3.44.0+: unlock latch, and a
-- missing hash answers nil).
--
-- KEYS[1]  read-write lock hash N
-- KEYS[2]  channel "redisson_rwlock:{N}"
-- KEYS[3]  this owner's timeout prefix "{N}:<client-uuid>:<owner-id>:rwlock_timeout"
-- KEYS[4]  key prefix "{N}" (holder f's hold i lives at KEYS[4]:f:rwlock_timeout:i)
-- KEYS[5]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[4]  latch time to live in ms
--
-- Returns nil when ARGV[2] holds no read hold (when N is gone, ARGV[1] is published on
-- KEYS[2] too, as Redisson does), 0 when this owner keeps read holds, 1 when its last
-- read hold was given back: N deleted and ARGV[1] published on KEYS[2] when nothing else
-- holds it, else N kept for the other holds (other readers, a write hold). Whenever N
-- is kept its TTL becomes the longest remaining read hold lease, but in write mode it is
-- never shortened, unlike Redisson.
-- Redisson's script answers 0 whenever N is kept, also when the caller's last read hold
-- went: the answer is about the lock, not the caller. This one answers for the caller
-- (same writes, same message): the client ends its hold's bookkeeping on 1, and on a 0
-- for its last hold it would keep watching a hold that no longer exists.
-- A call repeated with the same latch returns the first call's answer (nil answers
-- write no latch, so a repeat answers nil again) and changes nothing.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local earlier = redis.call('get', KEYS[5])
if earlier then
    return tonumber(earlier)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[2], -1)
-- What this call answers when N is kept: whether the caller still holds it.
local kept = '0'
if remaining <= 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
    kept = '1'
end
redis.call('del', KEYS[3] .. ':' .. (remaining + 1))

if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    local fields = redis.call('hkeys', KEYS[1])
    for _, field in ipairs(fields) do
        if field ~= 'mode' then
            local holds = tonumber(redis.call('hget', KEYS[1], field))
            if holds ~= nil then
                for i = holds, 1, -1 do
                    local holdKey = KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i
                    longest = math.max(longest, redis.call('pttl', holdKey))
                end
            end
        end
    end
    if longest > 0 then
        -- Redisson re-arms N to `longest` in write mode too, which cuts the write hold's
        -- own lease short (N then expires with the writer's shortest read hold). In write
        -- mode N's TTL only ever grows here.
        if mode ~= 'write' or redis.call('pttl', KEYS[1]) < longest then
            redis.call('pexpire', KEYS[1], longest)
        end
        redis.call('exists', KEYS[1])
        redis.call('set', KEYS[5], kept, 'px', ARGV[4])
        return tonumber(kept)
    end
    if mode == 'write' then
        redis.call('exists', KEYS[1])
        redis.call('set', KEYS[5], kept, 'px', ARGV[4])
        return tonumber(kept)
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], '1', 'px', ARGV[4])
return 1
