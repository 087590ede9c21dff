//! A Java Redisson `RCountDownLatch`, simulated with raw commands: its three scripts as
//! the sync protocol (§5.1) describes them, and its `await(t)` algorithm (§5.3) with the
//! client-local latch that a `0` opens and a `1` closes. Written from the protocol's
//! pseudo-code, not from Redisson's source; Maven Central is out of reach here.

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;

/// `redisson_countdownlatch__channel__{N}`: braces always added.
pub fn channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// Redisson's `trySetCount`: KEYS [N, C], ARGV ["1", count, publish command].
pub const JAVA_TRY_SET_COUNT: &str = r#"
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2])
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  return 1
end
return 0
"#;

/// Redisson's `countDown`: KEYS [N, C], ARGV ["0", publish command]; reply ignored.
pub const JAVA_COUNT_DOWN: &str = r#"
local v = redis.call('decr', KEYS[1])
if v <= 0 then redis.call('del', KEYS[1]) end
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
"#;

/// Redisson's `delete`: KEYS [N, C], ARGV ["1", publish command]: publishes `1`.
pub const JAVA_DELETE: &str = r#"
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
"#;

/// Java `latch.trySetCount(count)`.
pub async fn try_set_count(raw: &Client, name: &str, count: i64) -> bool {
    let reply: i64 = raw
        .eval(
            JAVA_TRY_SET_COUNT,
            vec![name.to_owned(), channel(name)],
            vec![Value::from("1"), Value::from(count), Value::from("PUBLISH")],
        )
        .await
        .expect("java trySetCount");
    reply == 1
}

/// Java `latch.countDown()`.
pub async fn count_down(raw: &Client, name: &str) {
    let _: Value = raw
        .eval(
            JAVA_COUNT_DOWN,
            vec![name.to_owned(), channel(name)],
            vec![Value::from("0"), Value::from("PUBLISH")],
        )
        .await
        .expect("java countDown");
}

/// Java `latch.delete()`.
pub async fn delete(raw: &Client, name: &str) -> bool {
    let reply: i64 = raw
        .eval(
            JAVA_DELETE,
            vec![name.to_owned(), channel(name)],
            vec![Value::from("1"), Value::from("PUBLISH")],
        )
        .await
        .expect("java delete");
    reply == 1
}

/// Java `getCount()`: `GET N`, nil → 0.
pub async fn get_count(raw: &Client, name: &str) -> i64 {
    let value: Option<i64> = raw.get(name).await.expect("GET");
    value.unwrap_or(0)
}

/// What a simulated Java `await(t)` did.
#[derive(Debug)]
pub struct JavaAwait {
    /// `await(t)`'s result.
    pub opened: bool,
    /// `GET`s it sent.
    pub gets: u64,
    pub elapsed: Duration,
}

/// Java `latch.await(timeout)` of one client (its own pub/sub connection), as §5.3
/// describes it: `GET`; subscribe; while `GET > 0`: block until the local latch is open
/// (a `0` opens it, a `1` closes it), deducting only the time blocked. A spin (local
/// latch open, count positive) is cut off after 100 000 `GET`s.
pub async fn await_for(url: &str, name: &str, timeout: Duration) -> JavaAwait {
    let started = Instant::now();
    let commands = connect(url).await;
    let mut gets = 0u64;
    let done = |opened: bool, gets: u64| JavaAwait {
        opened,
        gets,
        elapsed: started.elapsed(),
    };
    gets += 1;
    if get_count(&commands, name).await == 0 {
        return done(true, gets);
    }
    let subscriber = connect(url).await;
    let mut rx = subscriber.message_rx();
    subscriber
        .subscribe(channel(name))
        .await
        .expect("SUBSCRIBE");
    let _: Value = subscriber.ping(None).await.expect("PING");
    let mut open = false; // ReclosableLatch: created closed
    let mut remaining = timeout.saturating_sub(started.elapsed());
    let outcome = loop {
        gets += 1;
        if get_count(&commands, name).await <= 0 {
            break true;
        }
        if remaining.is_zero() || gets > 100_000 {
            break false;
        }
        let blocked = Instant::now();
        // Messages that came meanwhile change the local latch first.
        while let Ok(message) = rx.try_recv() {
            apply(&mut open, message.value.as_bytes());
        }
        while !open {
            let left = remaining.saturating_sub(blocked.elapsed());
            if left.is_zero() {
                break;
            }
            match tokio::time::timeout(left, rx.recv()).await {
                Ok(Ok(message)) => apply(&mut open, message.value.as_bytes()),
                Ok(Err(_)) => continue,
                Err(_) => break,
            }
        }
        remaining = remaining.saturating_sub(blocked.elapsed());
    };
    let _ = subscriber.unsubscribe(channel(name)).await;
    let _ = subscriber.quit().await;
    let _ = commands.quit().await;
    done(outcome, gets)
}

fn apply(open: &mut bool, payload: Option<&[u8]>) {
    match payload {
        Some(b"0") => *open = true,
        Some(b"1") => *open = false,
        _ => {}
    }
}

async fn connect(url: &str) -> Client {
    let client = Builder::from_config(Config::from_url(url).expect("url"))
        .build()
        .expect("client");
    client.init().await.expect("java-like client connects");
    client
}
