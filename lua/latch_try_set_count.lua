-- latch_try_set_count.lua: give a count-down latch its count, unless it has one.
-- Same effect as Redisson RedissonCountDownLatch#trySetCountAsync (docs/protocol.md §21.2).
--
-- KEYS[1]  count key N (a string holding a decimal integer)
-- KEYS[2]  channel "redisson_countdownlatch__channel__{N}"
-- ARGV[1]  new-count message "1" (closes the latches Java clients keep locally)
-- ARGV[2]  the count (0 or negative are stored as given, as Java does)
-- ARGV[3]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when the count was set (and ARGV[1] published), 0 when N exists already.
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('set', KEYS[1], ARGV[2])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return 1
