-- fenced_acquire.lua: take or re-enter a fenced lock and draw a fencing token.
-- Mirrors Redisson RedissonFencedLock#tryLockAndGetTokenAsync script (same in 3.23.3
-- and 4.x): the token is INCRed on every successful acquisition, before the HINCRBY.
-- One deliberate difference: a token key that does not exist (a new lock, or a Redis
-- restarted without persistence) is first seeded from the server clock, so the first
-- token of a fresh counter is the server's TIME in microseconds, not 1, and stays
-- above every token handed out before the restart (see docs/fencing.md).
--
-- KEYS[1]  lock hash N
-- KEYS[2]  token counter "redisson_lock_token:{N}" (no TTL, never reset)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
--
-- Returns {-1, token} when ARGV[2] now holds the lock (first hold or re-entry; the TTL
-- is re-armed to ARGV[1]), else {PTTL N, -1}.
-- A token key that cannot give a positive token (not a string, not an integer, negative,
-- or at the integer limit) is answered with the error reply "BAD_TOKEN <why>", and
-- nothing has been written: the checks run before the first write.
--
-- Replication: the seed reaches replicas and the AOF as the plain SET and INCR it
-- wrote, never as this script run again (which would read another TIME). Redis 7+ and
-- Valkey replicate script effects only; Redis 5 and 6 do by default; Redis 3.2 to 4
-- need redis.replicate_commands() before the first write, which is called when present
-- (a no-op where effects replication is the only mode).
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local function bad_token(why)
    return redis.error_reply('BAD_TOKEN ' .. tostring(why))
end
local free = redis.call('exists', KEYS[1]) == 0
if free or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local current = redis.pcall('get', KEYS[2])
    if type(current) == 'table' then
        return bad_token(current.err)
    end
    if current and string.sub(current, 1, 1) == '-' then
        return bad_token('negative token ' .. current)
    end
    if not current then
        -- A fresh counter: seed it so that the INCR below gives the server time in µs
        -- (about 1.8e15, exact in a Lua double, far below 2^63).
        if redis.replicate_commands then
            redis.replicate_commands()
        end
        local now = redis.call('time')
        local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
        redis.call('set', KEYS[2], string.format('%.0f', floor - 1))
    end
    -- INCR refuses a non-integer or an overflow without writing anything.
    local token = redis.pcall('incr', KEYS[2])
    if type(token) == 'table' then
        return bad_token(token.err)
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('exists', KEYS[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
