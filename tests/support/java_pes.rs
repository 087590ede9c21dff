//! A Java `RPermitExpirableSemaphore` (Redisson 4.7.0), simulated with raw commands: its
//! acquire and release scripts as sync protocol §4.3-§4.4 describes them (written here,
//! not copied), its random 16-byte ids shown as hex, and its waiter (subscribe, retry,
//! sleep until a message or the hint). It publishes what Java publishes, counts of 0 or
//! less included, and stands in for a live Redisson (Maven Central is out of reach).

use std::time::Duration;

use redisson_lock::fred::prelude::*;

/// Redisson's no-lease score.
pub const NO_LEASE: i64 = 922_337_203_685_477;

/// The acquire attempt (4.7.0 ARGV order): "OK", ":<ms>" or nil.
pub const ACQUIRE: &str = r#"
local k = tonumber(ARGV[1])
local gone = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, k)
if #gone > 0 then
  redis.call('zrem', KEYS[2], unpack(gone))
  local v = redis.call('incrby', KEYS[1], #gone)
  if v > 0 then redis.call(ARGV[5], KEYS[3], v) end
end
local a = tonumber(redis.call('get', KEYS[1]))
if a ~= nil and a >= k then
  redis.call('decrby', KEYS[1], k)
  for i = 6, #ARGV do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]) end
  local t = redis.call('pttl', KEYS[1])
  if t > 0 then redis.call('pexpire', KEYS[2], t) end
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] ~= nil and first[2] ~= ARGV[4] then return ':' .. first[2] end
return nil
"#;

/// `tryRelease(id)`: KEYS [N, channel, timeouts]; publishes the new count whatever it is.
pub const RELEASE: &str = r#"
local s = redis.call('zscore', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then return 0 end
local v = redis.call('incrby', KEYS[1], ARGV[2])
redis.call(ARGV[4], KEYS[2], v)
if tonumber(s) <= tonumber(ARGV[3]) then return 0 end
return 1
"#;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

pub fn timeouts(name: &str) -> String {
    format!("{{{name}}}:timeout")
}

pub fn channel(name: &str) -> String {
    format!("redisson_sc:{{{name}}}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// What one Java attempt answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The permit, as Java shows it (hex).
    Taken(String),
    Hint(i64),
    Nothing,
}

/// One `tryAcquire(0, lease, ms)` attempt (`lease` `None`: `-1`).
pub async fn try_acquire(raw: &Client, name: &str, lease_ms: Option<i64>) -> Attempt {
    let id: [u8; 16] = rand::random();
    let now = now_ms();
    let score = lease_ms.map_or(NO_LEASE, |l| now + l);
    let reply: Value = raw
        .eval(
            ACQUIRE,
            vec![name.to_string(), timeouts(name), channel(name)],
            vec![
                Value::from(1),
                Value::from(score),
                Value::from(now),
                Value::from(NO_LEASE),
                Value::from("PUBLISH"),
                Value::Bytes(id.to_vec().into()),
            ],
        )
        .await
        .unwrap();
    match reply.as_string().as_deref() {
        None => Attempt::Nothing,
        Some("OK") => Attempt::Taken(hex(&id)),
        Some(hint) => Attempt::Hint(hint[1..].parse().unwrap()),
    }
}

/// `tryRelease(id)` of a hex id.
pub async fn try_release(raw: &Client, name: &str, id: &str) -> bool {
    let reply: i64 = raw
        .eval(
            RELEASE,
            vec![name.to_string(), channel(name), timeouts(name)],
            vec![
                Value::Bytes(unhex(id).into()),
                Value::from(1),
                Value::from(now_ms()),
                Value::from("PUBLISH"),
            ],
        )
        .await
        .unwrap();
    reply == 1
}

/// A Java `tryAcquire(wait, lease, ms)`: subscribe, retry, sleep until a message, the
/// hint or the deadline (sync protocol §4.9). `subscriber` is a raw client of its own.
pub async fn acquire_waiting(
    raw: &Client,
    subscriber: &Client,
    name: &str,
    lease_ms: Option<i64>,
    wait: Duration,
) -> Option<String> {
    let deadline = tokio::time::Instant::now() + wait;
    if let Attempt::Taken(id) = try_acquire(raw, name, lease_ms).await {
        return Some(id);
    }
    let mut messages = subscriber.message_rx();
    subscriber.subscribe(channel(name)).await.unwrap();
    let _: Value = subscriber.ping(None).await.unwrap();
    let result = loop {
        let sleep = match try_acquire(raw, name, lease_ms).await {
            Attempt::Taken(id) => break Some(id),
            Attempt::Hint(at) => Duration::from_millis((at - now_ms()).max(0) as u64),
            Attempt::Nothing => wait,
        };
        let until = (tokio::time::Instant::now() + sleep).min(deadline);
        if tokio::time::Instant::now() >= deadline {
            break None;
        }
        let _ = tokio::time::timeout_at(until, messages.recv()).await;
    };
    subscriber.unsubscribe(channel(name)).await.unwrap();
    result
}
