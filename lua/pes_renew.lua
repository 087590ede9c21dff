-- pes_renew.lua: the watchdog's batched renewal of permits it keeps (redisson-lock's;
-- Redisson has no permit watchdog). Each renewal does what updateLeaseTime does to
-- the permit's score.
--
-- KEYS[i]    {N}:timeout of the i-th permit (all in one hash slot on a cluster)
-- ARGV[1]    lease in ms (the watchdog timeout)
-- ARGV[2]    now: the client's clock, epoch ms
-- ARGV[i+2]  the i-th permit id
--
-- Returns an array: element i is 1 when the permit's expiry was moved to now + lease, 0
-- when the permit is gone or its lease had ended (any client may have reclaimed it).
--
-- A renewed key is read once more after its write: Redis forgets a key's CLIENT TRACKING
-- entry when it is written, and a read inside a script tracks it again for the calling
-- connection, so a renewal costs no EXISTS.
local now = tonumber(ARGV[2])
local expiry = now + tonumber(ARGV[1])
local renewed = {}
for i = 1, #KEYS do
    local score = redis.pcall('zscore', KEYS[i], ARGV[i + 2])
    if type(score) == 'string' and tonumber(score) > now then
        redis.call('zadd', KEYS[i], 'xx', expiry, ARGV[i + 2])
        redis.call('exists', KEYS[i])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
