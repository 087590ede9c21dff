//! A Java Redisson client, simulated with raw commands: what protocol.md says Redisson
//! sends for an `RLock` (a Java client id, the thread id as owner, its acquire and unlock
//! scripts). Maven Central is out of reach here, so this stands in for a live Redisson.

use redisson_lock::fred::prelude::*;

/// A Java client's id (`UUID.randomUUID().toString()`), never this crate's.
pub const UUID: &str = "6e3d30b7-83b1-433a-9335-5e8b9916d3ac";

/// Redisson's RLock acquire (`tryLockInnerAsync`, §4.1): nil when taken or re-entered,
/// else PTTL.
pub const RLOCK_ACQUIRE: &str = r#"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
"#;

/// Redisson's RLock unlock (`unlockInnerAsync`, §4.2, 3.24+ with the latch): nil not
/// owner, 0 still held, 1 released and `ARGV[1]` published.
pub const RLOCK_UNLOCK: &str = r#"
local v = redis.call('get', KEYS[3])
if v ~= false then return tonumber(v) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local c = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if c > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
"#;

/// Redisson's `RFencedLock` token-returning acquire (`lockAndGetToken`, §12): `[-1, token]`
/// when taken or re-entered, else `[PTTL, -1]`. It only `INCR`s: a missing counter starts
/// at 1.
pub const FENCED_ACQUIRE_TOKEN: &str = r#"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local t = redis.call('incr', KEYS[2])
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, t}
end
return {redis.call('pttl', KEYS[1]), -1}
"#;

/// `redisson_lock_token:{N}` of a name without braces.
pub fn token_key(name: &str) -> String {
    format!("redisson_lock_token:{{{name}}}")
}

/// Java thread `thread` runs `lock.lockAndGetToken()` once (no waiting): `Ok(token)` when
/// taken, `Err(pttl)` when held by someone else.
pub async fn lock_and_get_token(
    raw: &Client,
    name: &str,
    thread: u64,
    lease_ms: i64,
) -> Result<i64, i64> {
    let reply: Vec<i64> = raw
        .eval(
            FENCED_ACQUIRE_TOKEN,
            vec![name.to_string(), token_key(name)],
            vec![Value::from(lease_ms), Value::from(field(thread))],
        )
        .await
        .expect("java fenced acquire");
    assert_eq!(reply.len(), 2, "{reply:?}");
    match (reply[0], reply[1]) {
        (-1, token) => Ok(token),
        (ttl, -1) => Err(ttl),
        other => panic!("not a §12 reply: {other:?}"),
    }
}

/// The hash field of Java thread `thread`: `<java uuid>:<thread>`.
pub fn field(thread: u64) -> String {
    format!("{UUID}:{thread}")
}

/// Java thread `thread` runs `lock.tryLock()` with a lease: nil when taken, else PTTL.
pub async fn acquire(raw: &Client, name: &str, lease_ms: i64, thread: u64) -> Value {
    raw.eval(
        RLOCK_ACQUIRE,
        vec![name],
        vec![Value::from(lease_ms), Value::from(field(thread))],
    )
    .await
    .expect("java acquire")
}

/// Java thread `thread` runs `lock.unlock()` (message `0` on the RLock channel).
pub async fn unlock(raw: &Client, name: &str, thread: u64) -> Value {
    let latch = format!(
        "redisson_unlock_latch:{{{name}}}:{}",
        uuid::Uuid::new_v4().simple()
    );
    raw.eval(
        RLOCK_UNLOCK,
        vec![name.to_string(), super::channel(name), latch],
        vec![
            Value::from("0"),
            Value::from(30_000),
            Value::from(field(thread)),
            Value::from("PUBLISH"),
            Value::from(13_500),
        ],
    )
    .await
    .expect("java unlock")
}
