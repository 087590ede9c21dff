-- pes_acquire.lua: one attempt to take k permits of a permit-expirable semaphore
-- (Redisson's RPermitExpirableSemaphore acquire script, docs/protocol.md §20.3).
--
-- KEYS[1]  N, the available permits (a string integer)
-- KEYS[2]  {N}:timeout, the held permits (a sorted set: 16-byte id -> expiry, epoch ms)
-- KEYS[3]  redisson_sc:{N}, the channel
-- ARGV[1]  k, the number of permits
-- ARGV[2]  the expiry of the new permits (the client's now + lease, or the no-lease score)
-- ARGV[3]  now: the client's clock, epoch ms
-- ARGV[4]  the no-lease score, 922337203685477
-- ARGV[5]  "PUBLISH" or "SPUBLISH"
-- ARGV[6..5+k]  the permit ids the client chose
--
-- Expired permits (score <= now), at most k, go back first, and the new count is
-- published when it is above zero. Returns "OK" when the k permits were taken, else
-- ":<ms>", the earliest expiry of a held permit with a lease (a waiter wakes then, since
-- nobody publishes an expiry), else nil.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local k = tonumber(ARGV[1])
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, k)
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local count = redis.call('incrby', KEYS[1], #expired)
    if count > 0 then
        redis.call(ARGV[5], KEYS[3], count)
    end
end
local available = tonumber(redis.call('get', KEYS[1]))
if available ~= nil and available >= k then
    redis.call('decrby', KEYS[1], k)
    for i = 6, 5 + k do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    redis.call('exists', KEYS[2])
    return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] ~= nil and first[2] ~= ARGV[4] then
    return ':' .. first[2]
end
return nil
