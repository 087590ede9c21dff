-- rw_read_renew.lua: the watchdog's batched renewal of read holds.
-- Mirrors Redisson's read-lock renewal chunk script (4.4.0+, ReadLockTask): only the
-- given owners' own holds are renewed, never other clients' readers.
--
-- KEYS[2j-1] read-write lock hash N_j of the j-th entry (one entry per lock and owner;
--            all keys in one hash slot on a cluster)
-- KEYS[2j]   key prefix of N_j, "{N_j}" (hold c lives at prefix:owner:rwlock_timeout:c)
-- ARGV[1]    lease in ms (the watchdog timeout)
-- ARGV[j+1]  owner field "<client-uuid>:<owner-id>" of the j-th entry
--
-- Returns an array: element j is 1 when the owner still has read holds on N_j (each
-- hold's timeout key was re-armed to ARGV[1] ms, and N_j to ARGV[1] ms unless its TTL
-- was longer already), else 0 (holds gone, or N_j is not a hash).
--
-- N_j is read once more after the writes (redisson-lock's): Redis forgets a key's CLIENT
-- TRACKING entry when it is written, and a read inside a script tracks it again for the
-- calling connection, so a renewal costs no EXISTS.
local renewed = {}
for j = 1, #KEYS / 2 do
    local lock = KEYS[2 * j - 1]
    local prefix = KEYS[2 * j]
    local owner = ARGV[j + 1]
    local holds = redis.pcall('hget', lock, owner)
    if type(holds) == 'string' then
        holds = tonumber(holds)
    else
        holds = nil
    end
    if holds ~= nil and holds > 0 then
        for c = holds, 1, -1 do
            local holdKey = prefix .. ':' .. owner .. ':rwlock_timeout:' .. c
            redis.call('pexpire', holdKey, ARGV[1])
        end
        -- Never below the TTL other holds gave N (another reader's longer lease, this
        -- owner's write lease); Redisson sets ARGV[1] outright.
        if redis.call('pttl', lock) < tonumber(ARGV[1]) then
            redis.call('pexpire', lock, ARGV[1])
        end
        redis.call('exists', lock)
        renewed[j] = 1
    else
        renewed[j] = 0
    end
end
return renewed
