//! A Java Redisson `RSemaphore`, simulated with raw commands: Redisson's own scripts as
//! the sync protocol (§3.1) describes them, and its waiter (§3.3, §6.1), so that the
//! tests show the crate sharing a semaphore with Java without a JVM. Unlike the crate,
//! these publish every new count, also 0 and negatives, as Java does.

use std::time::Duration;

use redisson_lock::fred::prelude::*;

/// `tryAcquire(k)`: KEYS [N]; ARGV [k]; 1 when taken.
pub const TRY_ACQUIRE: &str = r#"
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    local val = redis.call('decrby', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;
"#;

/// `release(k)`: KEYS [N, channel]; ARGV [k, pub]; publishes the new count, whatever it is.
pub const RELEASE: &str = r#"
local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], value);
"#;

/// `trySetPermits(n)`: KEYS [N, channel]; ARGV [n, pub].
pub const TRY_SET_PERMITS: &str = r#"
local value = redis.call('get', KEYS[1]);
if (value == false) then
    redis.call('set', KEYS[1], ARGV[1]);
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return 1;
end;
return 0;
"#;

/// `addPermits(k)`: KEYS [N, channel]; ARGV [k, pub]; publishes the new count, also ≤ 0.
pub const ADD_PERMITS: &str = r#"
local value = redis.call('get', KEYS[1]);
if (value == false) then
    value = 0;
end;
redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1]));
redis.call(ARGV[2], KEYS[2], tonumber(value) + tonumber(ARGV[1]));
"#;

/// `redisson_sc:{N}` of a name without braces.
pub fn channel(name: &str) -> String {
    format!("redisson_sc:{{{name}}}")
}

/// `tryAcquire(k)` of a Java client.
pub async fn try_acquire(raw: &Client, name: &str, permits: i64) -> bool {
    let taken: i64 = raw
        .eval(TRY_ACQUIRE, vec![name], vec![permits])
        .await
        .expect("java tryAcquire");
    taken == 1
}

/// `release(k)` of a Java client.
pub async fn release(raw: &Client, name: &str, permits: i64) {
    let _: Value = raw
        .eval(
            RELEASE,
            vec![name.to_string(), channel(name)],
            vec![Value::from(permits), Value::from("PUBLISH")],
        )
        .await
        .expect("java release");
}

/// `trySetPermits(n)` of a Java client.
pub async fn try_set_permits(raw: &Client, name: &str, permits: i64) -> bool {
    let set: i64 = raw
        .eval(
            TRY_SET_PERMITS,
            vec![name.to_string(), channel(name)],
            vec![Value::from(permits), Value::from("PUBLISH")],
        )
        .await
        .expect("java trySetPermits");
    set == 1
}

/// `addPermits(k)` of a Java client.
pub async fn add_permits(raw: &Client, name: &str, permits: i64) {
    let _: Value = raw
        .eval(
            ADD_PERMITS,
            vec![name.to_string(), channel(name)],
            vec![Value::from(permits), Value::from("PUBLISH")],
        )
        .await
        .expect("java addPermits");
}

/// A Java thread's `tryAcquire(k, wait)`, Redisson's algorithm (§3.3) with one waiting
/// thread in its client: try; subscribe (its own connection, confirmed by a `PING`); try
/// again; then wait for a message and retry, until `wait` is used up. Only a message
/// above 0 wakes it (a sync waiter's `Semaphore.release(min(1, m))`, §6.1); a message
/// that is not a number is dropped. Returns whether it took the permits and the messages
/// it saw.
pub async fn wait_acquire(
    subscriber: &Client,
    raw: &Client,
    name: &str,
    permits: i64,
    wait: Duration,
) -> (bool, Vec<String>) {
    let deadline = tokio::time::Instant::now() + wait;
    let mut seen = Vec::new();
    if try_acquire(raw, name, permits).await {
        return (true, seen);
    }
    let mut rx = subscriber.message_rx();
    subscriber
        .subscribe(channel(name))
        .await
        .expect("java SUBSCRIBE");
    let _: Value = subscriber.ping(None).await.expect("PING");
    let mut taken = try_acquire(raw, name, permits).await;
    while !taken {
        let message = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(message)) => message,
            _ => break,
        };
        let text = message.value.as_string().unwrap_or_default();
        seen.push(text.clone());
        match text.parse::<i64>() {
            Ok(m) if m > 0 => taken = try_acquire(raw, name, permits).await,
            _ => {} // 0 and negatives wake no sync waiter; garbage is dropped
        }
    }
    let _: Value = subscriber
        .unsubscribe(channel(name))
        .await
        .map(|_| Value::Null)
        .unwrap_or(Value::Null);
    (taken, seen)
}
