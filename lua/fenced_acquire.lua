-- fenced_acquire.lua: take or re-enter a fenced lock and draw a fencing token.
-- Mirrors Redisson RedissonFencedLock#tryLockAndGetTokenAsync script (same in 3.23.3
-- and 4.x): the token is INCRed on every successful acquisition, before the HINCRBY.
--
-- KEYS[1]  lock hash N
-- KEYS[2]  token counter "redisson_lock_token:{N}" (no TTL, never reset)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
--
-- Returns {-1, token} when ARGV[2] now holds the lock (first hold or re-entry; the TTL
-- is re-armed to ARGV[1]), else {PTTL N, -1}. A token key that is not an integer
-- makes INCR fail: its error reply is returned and nothing has been written.
local free = redis.call('exists', KEYS[1]) == 0
if free or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
