-- latch_delete.lua: delete a latch's count, and open its waiters.
-- Redisson RedissonCountDownLatch#deleteAsync deletes N the same way but publishes "1",
-- which closes the waiting Java latches although the count now reads 0 (docs/protocol.md
-- §21.3, §26.4). This script publishes "0" instead: every waiter, Java's and this
-- crate's, wakes, reads 0 and returns, as a waiter on a latch whose count is gone
-- expects.
--
-- KEYS[1]  count key N
-- KEYS[2]  channel "redisson_countdownlatch__channel__{N}"
-- ARGV[1]  zero-count message "0"
-- ARGV[2]  publish command: "PUBLISH" or "SPUBLISH"
--
-- Returns 1 when N was deleted (and ARGV[1] published), else 0.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
