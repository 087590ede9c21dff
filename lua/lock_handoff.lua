-- lock_handoff.lua: give back one hold of a reentrant lock and, when it was the last,
-- hand the lock to the next owner of the same client in the same step.
-- Not a Redisson script: redisson-lock's local hand-off (docs/protocol.md §16). What
-- other clients observe is what they observe of lock_release.lua followed at once by
-- lock_acquire.lua for the next owner, with no moment in between where the lock is free:
-- the hash holds exactly one owner field throughout, and the key's TTL is the next
-- owner's lease. A real release (key deleted, ARGV[1] published) happens instead when
-- ARGV[8] says so.
--
-- KEYS[1]  lock hash N
-- KEYS[2]  channel "redisson_lock__channel:{N}"
-- KEYS[3]  latch "redisson_unlock_latch:{N}:<request-id>"
-- ARGV[1]  unlock message "0"
-- ARGV[2]  lease in ms to re-arm when holds of ARGV[3] remain
-- ARGV[3]  releasing owner field "<client-uuid>:<owner-id>"
-- ARGV[4]  publish command: "PUBLISH" or "SPUBLISH"
-- ARGV[5]  latch time to live in ms
-- ARGV[6]  next owner field "<client-uuid>:<owner-id>"
-- ARGV[7]  next owner's lease in ms
-- ARGV[8]  -1: hand off; n >= 0: hand off only while at most n connections listen on
--          KEYS[2] (PUBSUB NUMSUB, SHARDNUMSUB under SPUBLISH), else release for real;
--          -2: release for real (with KEYS[4]: saying whether others listen)
-- KEYS[4], ARGV[9] (optional): the mark of redisson-lock's local lines
--          ("redisson_lock__channel:{N}:local_line", subscribed beside KEYS[2] by every client
--          whose line waits), and whether the releasing client's line may go on
--          ("1") or has had its turn ("0"). Listeners of KEYS[2] that are not marked wait
--          the Redisson way; while there are any (n of them), the lock is handed off
--          only while the turn goes on and ARGV[8] is -1, else released for real with
--          reply 2 + n.
--
-- Returns nil when ARGV[3] does not hold the lock, 0 when holds of ARGV[3] remain (the
-- TTL re-armed to ARGV[2]), 1 when the lock was released for real, 2 when it was handed
-- to ARGV[6] (one hold, TTL ARGV[7]), 2 + n when it was released for real because n
-- other clients' waiters listen (n >= 1) and the turn is over. A call repeated with the same latch
-- returns the first call's answer and changes nothing.
-- Connections listening on a channel: sharded subscribers where the unlock message
-- goes out with SPUBLISH (a Redis 7 cluster), classic ones otherwise.
--
-- A key that holds remain in after this script wrote it is read once more (redisson-lock's,
-- not Redisson's): Redis forgets a key's CLIENT TRACKING entry when it is written, and a
-- read inside a script tracks it again for the calling connection (see lock_renew.lua).
local function listening(channel)
    if ARGV[4] == 'SPUBLISH' then
        return redis.call('pubsub', 'shardnumsub', channel)[2]
    end
    return redis.call('pubsub', 'numsub', channel)[2]
end

local earlier = redis.call('get', KEYS[3])
if earlier then
    return tonumber(earlier)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local remaining = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if remaining > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('exists', KEYS[1])
    redis.call('set', KEYS[3], '0', 'px', ARGV[5])
    return 0
end
local limit = tonumber(ARGV[8])
local hand = limit == -1
local released = 1
if KEYS[4] == nil then
    if limit >= 0 then
        hand = listening(KEYS[2]) <= limit
    end
elseif ARGV[9] ~= '1' or not hand then
    -- Past the turn or the bounds: are there listeners that are not local lines? Then
    -- release for real, for them. Otherwise: within the bounds hand off; past them hand
    -- off only while at most ARGV[8] connections listen (-2: never).
    local listeners = listening(KEYS[2])
    local others = listeners - listening(KEYS[4])
    if others > 0 then
        hand = false
        released = 2 + others
    elseif limit >= 0 then
        hand = listeners <= limit
    end
end
if hand then
    redis.call('hdel', KEYS[1], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[6], 1)
    redis.call('pexpire', KEYS[1], ARGV[7])
    redis.call('exists', KEYS[1])
    redis.call('set', KEYS[3], '2', 'px', ARGV[5])
    return 2
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], released, 'px', ARGV[5])
return released
