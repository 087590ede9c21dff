-- pes_check.lua: whether permits are still held, after a fault (redisson-lock's;
-- read-only).
--
-- KEYS[i]    {N}:timeout of the i-th permit
-- ARGV[1]    now: the client's clock, epoch ms
-- ARGV[i+1]  the i-th permit id
--
-- Returns an array: element i is the ms left on the permit's lease, -1 when it has no
-- lease, -2 when it is gone or its lease has ended.
local now = tonumber(ARGV[1])
local left = {}
for i = 1, #KEYS do
    local score = redis.pcall('zscore', KEYS[i], ARGV[i + 1])
    if type(score) ~= 'string' then
        left[i] = -2
    elseif score == '922337203685477' then
        left[i] = -1
    elseif tonumber(score) > now then
        left[i] = tonumber(score) - now
    else
        left[i] = -2
    end
end
return left
