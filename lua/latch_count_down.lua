-- latch_count_down.lua: count a latch down by one; at zero, open its waiters.
-- Same effect as Redisson RedissonCountDownLatch#countDownAsync (docs/protocol.md §21.2).
--
-- KEYS[1]  count key N
-- KEYS[2]  channel "redisson_countdownlatch__channel__{N}"
-- ARGV[1]  zero-count message "0"
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns the count left. A count of 0 or less deletes N (a missing key reads as 0,
-- open); ARGV[1] is published only when the count reached exactly 0, as Java does (a
-- count down on a missing key leaves nothing and publishes nothing).
local left = redis.call('decr', KEYS[1])
if left <= 0 then
    redis.call('del', KEYS[1])
end
if left == 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return left
