//! The fenced lock (`RFencedLock`, protocol §12) against real `redis-server`s: the token
//! counter `redisson_lock_token:{N}` and the RLock hash it sits next to, Redisson's
//! `testTokenIncrease` numbering shared with a "Java" client, tokens under contention,
//! guards carrying their token, and what a broken token key does.
//!
//! The "Java" client is a raw fred connection that runs the §12 token-returning script
//! and the §4.2 unlock, written here from the protocol (not the crate's scripts).

mod support;
use support::java::{field as java_field, unlock as java_unlock};
use support::*;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client as LockClient, Error, FencedLock};

/// §12, `lockAndGetToken`: `[-1, token]` when taken or re-entered, else `[PTTL, -1]`.
const JAVA_ACQUIRE_TOKEN: &str = r#"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local t = redis.call('incr', KEYS[2])
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, t}
end
return {redis.call('pttl', KEYS[1]), -1}
"#;

// ---- helpers ----------------------------------------------------------------------------

/// `redisson_lock_token:{N}`.
fn token_key(name: &str) -> String {
    format!("redisson_lock_token:{{{name}}}")
}

/// Our hash field for `lock`'s owner.
fn field_of(client: &LockClient, lock: &FencedLock) -> String {
    format!("{}:{}", client.id(), lock.owner())
}

fn pair(field: &str, count: u32) -> Vec<(String, String)> {
    vec![(field.to_string(), count.to_string())]
}

/// The raw text of the token key, `None` when absent.
async fn raw_token(raw: &Client, name: &str) -> Option<String> {
    raw.get(token_key(name)).await.unwrap()
}

/// Asserts the token key holds `expected` and has no expiry.
async fn assert_token(raw: &Client, name: &str, expected: u64) {
    assert_eq!(
        raw_token(raw, name).await,
        Some(expected.to_string()),
        "token key of {name}"
    );
    assert_eq!(
        pttl(raw, &token_key(name)).await,
        -1,
        "the token key never expires"
    );
}

/// Watchdog leases are 30 000 ms; a loaded machine may take seconds between write and read.
fn assert_watchdog_ttl(ttl: i64) {
    assert!((20_000..=30_000).contains(&ttl), "PTTL {ttl} is not 30 s");
}

fn assert_lease_ttl(ttl: i64, lease_ms: i64) {
    assert!(
        (lease_ms - 5_000..=lease_ms).contains(&ttl),
        "PTTL {ttl} is not the {lease_ms} ms lease"
    );
}

/// The Java client's token-returning acquire: `Ok(token)` when taken, `Err(pttl)` when held.
async fn java_lock_and_get_token(
    raw: &Client,
    name: &str,
    thread: u64,
    lease_ms: i64,
) -> Result<i64, i64> {
    let reply: Vec<i64> = raw
        .eval(
            JAVA_ACQUIRE_TOKEN,
            vec![name.to_string(), token_key(name)],
            vec![Value::from(lease_ms), Value::from(java_field(thread))],
        )
        .await
        .unwrap();
    assert_eq!(reply.len(), 2, "{reply:?}");
    match (reply[0], reply[1]) {
        (-1, token) => Ok(token),
        (ttl, -1) => Err(ttl),
        other => panic!("not a §12 reply: {other:?}"),
    }
}

/// Unlocks `times` holds.
async fn unlock_times(lock: &FencedLock, times: u32) {
    for _ in 0..times {
        lock.unlock().await.unwrap();
    }
}

// ---- 1. raw state ------------------------------------------------------------------------

#[tokio::test]
async fn raw_state_and_replies_follow_section_12() {
    let Bed(server, client, raw, name) = Bed::new("fenced-raw").await;
    let lock = client.get_fenced_lock(&name);
    let field = field_of(&client, &lock);
    let (_subscriber, mut rx) = listen(&server, "*").await;

    // Before anything: no hash, no token key, token() is None.
    assert!(!exists(&raw, &name).await);
    assert_eq!(raw_token(&raw, &name).await, None);
    assert_eq!(lock.token().await.unwrap(), None);

    // First hold: token 1; the RLock hash, field and watchdog TTL.
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 1);
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    let kind: String = raw.r#type(&name).await.unwrap();
    assert_eq!(kind, "hash");
    assert_watchdog_ttl(pttl(&raw, &name).await);
    assert_token(&raw, &name, 1).await;
    assert_eq!(lock.token().await.unwrap(), Some(1));

    // Every re-entry, through every method, draws a token and adds a hold.
    lock.lock().await.unwrap();
    assert_token(&raw, &name, 2).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));
    assert_watchdog_ttl(pttl(&raw, &name).await);

    assert!(lock.try_lock().await.unwrap());
    assert_token(&raw, &name, 3).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 3));

    assert!(lock.try_lock_for(Duration::from_secs(1)).await.unwrap());
    assert_token(&raw, &name, 4).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 4));

    // Re-entries re-arm the TTL to the new lease, as RLock does.
    lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_token(&raw, &name, 5).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 5));
    assert_lease_ttl(pttl(&raw, &name).await, 10_000);

    assert!(lock
        .try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(20))
        .await
        .unwrap());
    assert_token(&raw, &name, 6).await;
    assert_lease_ttl(pttl(&raw, &name).await, 20_000);

    assert_eq!(
        lock.lock_and_get_token_with_lease(Duration::from_secs(40))
            .await
            .unwrap(),
        7
    );
    assert_lease_ttl(pttl(&raw, &name).await, 40_000);
    assert_eq!(
        lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(15))
            .await
            .unwrap(),
        Some(8)
    );
    assert_eq!(
        lock.try_lock_and_get_token_for(Duration::ZERO)
            .await
            .unwrap(),
        Some(9)
    );
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 9));
    assert_eq!(lock.hold_count().await.unwrap(), 9);
    assert_eq!(lock.token().await.unwrap(), Some(9));

    // The Java script sees our hold: `[PTTL, -1]`, and draws no token.
    let ttl = java_lock_and_get_token(&raw, &name, 1, 30_000)
        .await
        .unwrap_err();
    assert!((1..=30_000).contains(&ttl), "PTTL {ttl}");
    assert_token(&raw, &name, 9).await;

    // Partial unlocks: count down, token untouched, nothing published.
    unlock_times(&lock, 8).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    assert_token(&raw, &name, 9).await;
    assert_eq!(drain(&mut rx, Duration::from_millis(300)).await, vec![]);

    // The last unlock deletes the hash and publishes `0`; the token stays.
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(channel(&name), b"0".to_vec())]
    );
    assert_token(&raw, &name, 9).await;
    assert_eq!(lock.token().await.unwrap(), Some(9));

    // The counter goes on from where it was.
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 10);
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));

    // force_unlock: hash deleted, `0` published, the token key untouched.
    assert!(lock.force_unlock().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(channel(&name), b"0".to_vec())]
    );
    assert_token(&raw, &name, 10).await;
    assert!(!lock.force_unlock().await.unwrap());
    assert_eq!(drain(&mut rx, Duration::from_millis(300)).await, vec![]);

    // Java takes it next and draws 11 from the same counter.
    assert_eq!(
        java_lock_and_get_token(&raw, &name, 1, 30_000).await,
        Ok(11)
    );
    assert_eq!(lock.token().await.unwrap(), Some(11));
    assert_eq!(java_unlock(&raw, &name, 1).await, Value::Integer(1));
    assert_token(&raw, &name, 11).await;
    client.shutdown().await.unwrap();
}

// ---- 2. Redisson's testTokenIncrease, interleaved with Java -----------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_increase_numbering_and_a_java_client_between_ours() {
    let Bed(_server, client, raw, name) = Bed::new("fenced-increase").await;
    let lock = client.get_fenced_lock(&name);

    // Redisson's testTokenIncrease.
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 1);
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 2);
    lock.lock().await.unwrap();
    assert_eq!(lock.token().await.unwrap(), Some(3));
    lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_eq!(lock.token().await.unwrap(), Some(4));
    assert_eq!(
        lock.try_lock_and_get_token_for(Duration::ZERO)
            .await
            .unwrap(),
        Some(5)
    );
    assert_eq!(lock.token().await.unwrap(), Some(5));
    assert_eq!(lock.hold_count().await.unwrap(), 5);
    unlock_times(&lock, 5).await;
    assert!(!exists(&raw, &name).await);

    // Then Java and we take turns on the same name; every token is new and larger.
    let mut drawn = vec![1, 2, 3, 4, 5];
    for round in 0..10u64 {
        let thread = 100 + round;
        let java_first = java_lock_and_get_token(&raw, &name, thread, 30_000)
            .await
            .unwrap();
        // Java re-enters: another token.
        let java_again = java_lock_and_get_token(&raw, &name, thread, 30_000)
            .await
            .unwrap();
        // While Java holds it we draw nothing.
        assert_eq!(
            lock.try_lock_and_get_token_for(Duration::ZERO)
                .await
                .unwrap(),
            None
        );
        assert_eq!(lock.token().await.unwrap(), Some(java_again as u64));
        assert_eq!(java_unlock(&raw, &name, thread).await, Value::Integer(0));
        assert_eq!(java_unlock(&raw, &name, thread).await, Value::Integer(1));
        drawn.extend([java_first as u64, java_again as u64]);

        let ours = if round % 2 == 0 {
            lock.lock_and_get_token().await.unwrap()
        } else {
            lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(10))
                .await
                .unwrap()
                .expect("free")
        };
        // Java sees it held and draws nothing.
        assert!(java_lock_and_get_token(&raw, &name, thread, 30_000)
            .await
            .is_err());
        lock.unlock().await.unwrap();
        drawn.push(ours);
    }

    // A waiter of ours woken by Java's unlock draws the token after Java's.
    let thread = 999;
    let java_token = java_lock_and_get_token(&raw, &name, thread, 60_000)
        .await
        .unwrap() as u64;
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move {
            let token = lock
                .try_lock_and_get_token(Duration::from_secs(20), Duration::from_secs(10))
                .await
                .unwrap();
            lock.unlock().await.unwrap();
            token
        }
    });
    assert!(
        eventually(Duration::from_secs(5), || async {
            client.subscribed_channels() == 1
        })
        .await
    );
    let released = Instant::now();
    assert_eq!(java_unlock(&raw, &name, thread).await, Value::Integer(1));
    let ours = waiter.await.unwrap().expect("woken by Java's unlock");
    assert!(
        released.elapsed() < Duration::from_secs(5),
        "woken by the message, not the 60 s lease"
    );
    drawn.extend([java_token, ours]);

    assert!(
        drawn.windows(2).all(|w| w[0] < w[1]),
        "tokens must strictly increase in drawing order: {drawn:?}"
    );
    assert_eq!(drawn, (1..=drawn.len() as u64).collect::<Vec<_>>());
    assert_eq!(lock.token().await.unwrap(), drawn.last().copied());
    client.shutdown().await.unwrap();
}

// ---- 3. tokens under contention ---------------------------------------------------------

const CLIENTS: usize = 2;
const TASKS_PER_CLIENT: usize = 8;
const ROUNDS: usize = 200;

/// One acquisition of one task: the token and the witness sequence number read (and
/// bumped) under the lock.
#[derive(Clone, Copy, Debug)]
struct Sample {
    token: u64,
    witness: u64,
}

/// Takes the lock through one of the token-returning calls (varied by `task` and `round`).
async fn take(lock: &FencedLock, task: usize, round: usize) -> u64 {
    match (task + round) % 3 {
        0 => lock.lock_and_get_token().await.unwrap(),
        1 => lock
            .try_lock_and_get_token(Duration::from_secs(60), Duration::from_secs(30))
            .await
            .unwrap()
            .expect("taken within 60 s"),
        _ => lock
            .try_lock_and_get_token_for(Duration::from_secs(60))
            .await
            .unwrap()
            .expect("taken within 60 s"),
    }
}

/// `ROUNDS` times: take the lock, read the witness, yield (widening any race), write it
/// back plus one, release. The witness increment is a load and a store, not atomic: two
/// holders at once would read the same number.
async fn contender(lock: FencedLock, task: usize, witness: Arc<AtomicU64>) -> Vec<Sample> {
    let mut samples = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let token = take(&lock, task, round).await;
        let seen = witness.load(Ordering::SeqCst);
        tokio::task::yield_now().await;
        witness.store(seen + 1, Ordering::SeqCst);
        lock.unlock().await.unwrap();
        samples.push(Sample {
            token,
            witness: seen,
        });
    }
    samples
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_in_acquisition_order_under_contention() {
    let Duo(_server, clients, raw, name) = Duo::new("fenced-contention").await;
    let witness = Arc::new(AtomicU64::new(0));

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for t in 0..TASKS_PER_CLIENT {
            let lock = client.get_fenced_lock(&name);
            tasks.push(tokio::spawn(contender(
                lock,
                c * TASKS_PER_CLIENT + t,
                witness.clone(),
            )));
        }
    }
    let results = tokio::time::timeout(Duration::from_secs(180), futures::future::join_all(tasks))
        .await
        .expect("the run finished");
    let elapsed = started.elapsed();
    let mut samples: Vec<Sample> = results.into_iter().flat_map(|r| r.unwrap()).collect();

    let total = (CLIENTS * TASKS_PER_CLIENT * ROUNDS) as u64;
    assert_eq!(samples.len() as u64, total);
    assert_eq!(witness.load(Ordering::SeqCst), total, "a lost increment");
    samples.sort_by_key(|s| s.witness);
    let witnesses: Vec<u64> = samples.iter().map(|s| s.witness).collect();
    assert_eq!(
        witnesses,
        (0..total).collect::<Vec<_>>(),
        "each witness number seen by exactly one holder"
    );
    for pair in samples.windows(2) {
        assert!(
            pair[0].token < pair[1].token,
            "token order differs from acquisition order: {:?} then {:?}",
            pair[0],
            pair[1]
        );
    }
    // Nobody else drew tokens, so they are exactly 1..=total.
    assert_eq!(samples.first().map(|s| s.token), Some(1));
    assert_eq!(samples.last().map(|s| s.token), Some(total));
    assert_token(&raw, &name, total).await;
    assert!(!exists(&raw, &name).await, "free at the end");
    for client in &clients {
        assert_eq!(client.renewed_locks(), 0);
        client.shutdown().await.unwrap();
    }
    eprintln!("{total} fenced acquisitions in {elapsed:?}");
}

// ---- 4. guards and bounded waits --------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guards_carry_their_token_and_bounded_waits_give_none() {
    let Bed(server, client, raw, name) = Bed::new("fenced-guards").await;
    let other = server.client().await;
    let lock = client.get_fenced_lock(&name);

    let guard = lock.acquire().await.unwrap();
    assert_eq!(guard.token(), Some(1));
    guard.unlock().await.unwrap();

    let guard = lock
        .acquire_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(guard.token(), Some(2));
    assert_lease_ttl(pttl(&raw, &name).await, 10_000);
    // A re-entry through a second guard draws a token of its own.
    let inner = lock
        .try_acquire_for(Duration::from_secs(1))
        .await
        .unwrap()
        .expect("re-entry");
    assert_eq!(inner.token(), Some(3));
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    inner.unlock().await.unwrap();
    assert_eq!(guard.token(), Some(2), "a guard's token is its own");
    drop(guard); // released in the background
    assert!(gone_within(&raw, &name, Duration::from_secs(5))
        .await
        .is_some());

    let guard = lock
        .try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10))
        .await
        .unwrap()
        .expect("free");
    assert_eq!(guard.token(), Some(4));
    assert_eq!(lock.token().await.unwrap(), Some(4));

    // Held by another client: bounded waits give None after about `wait`, draw nothing.
    let theirs = other.get_fenced_lock(&name);
    for wait in [Duration::from_millis(300), Duration::from_millis(800)] {
        let started = Instant::now();
        assert_eq!(
            theirs
                .try_lock_and_get_token(wait, Duration::from_secs(10))
                .await
                .unwrap(),
            None
        );
        let took = started.elapsed();
        assert!(
            took >= wait && took < wait + Duration::from_millis(1_500),
            "gave up after {took:?} for a {wait:?} wait"
        );
        let started = Instant::now();
        assert_eq!(theirs.try_lock_and_get_token_for(wait).await.unwrap(), None);
        let took = started.elapsed();
        assert!(
            took >= wait && took < wait + Duration::from_millis(1_500),
            "gave up after {took:?} for a {wait:?} wait"
        );
    }
    let started = Instant::now();
    assert_eq!(
        theirs
            .try_acquire_for(Duration::ZERO)
            .await
            .unwrap()
            .map(|g| g.token()),
        None
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(lock.token().await.unwrap(), Some(4), "no token drawn");
    assert!(
        eventually(Duration::from_secs(5), || async {
            other.subscribed_channels() == 0
        })
        .await,
        "the waits unsubscribed"
    );

    // Other kinds' guards carry no token.
    let plain = client.get_lock(key("plain")).acquire().await.unwrap();
    assert_eq!(plain.token(), None);
    plain.unlock().await.unwrap();

    guard.unlock().await.unwrap();
    // Now free: the other client draws the next token.
    let taken = theirs
        .try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10))
        .await
        .unwrap()
        .expect("free");
    assert_eq!(taken.token(), Some(5));
    taken.unlock().await.unwrap();
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

// ---- 5. bad input -----------------------------------------------------------------------

/// Every way to take `lock` fails with `BadToken` naming its token key, and nothing is
/// written: no hash, and the token key (as `read` renders it) as it was.
async fn assert_bad_token_everywhere<F, Fut>(raw: &Client, lock: &FencedLock, read: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let name = lock.name().to_string();
    let before = read().await;
    let is_bad = |result: Result<(), Error>, what: &str| match result {
        Err(Error::BadToken { key }) => assert_eq!(key, token_key(&name), "{what}"),
        other => panic!("{what}: expected BadToken, got {other:?}"),
    };
    is_bad(
        lock.lock_and_get_token().await.map(drop),
        "lock_and_get_token",
    );
    is_bad(
        lock.lock_and_get_token_with_lease(Duration::from_secs(5))
            .await
            .map(drop),
        "lock_and_get_token_with_lease",
    );
    is_bad(
        lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(5))
            .await
            .map(drop),
        "try_lock_and_get_token",
    );
    is_bad(
        lock.try_lock_and_get_token_for(Duration::ZERO)
            .await
            .map(drop),
        "try_lock_and_get_token_for",
    );
    is_bad(lock.lock().await, "lock");
    is_bad(lock.try_lock().await.map(drop), "try_lock");
    is_bad(lock.acquire().await.map(drop), "acquire");
    is_bad(lock.token().await.map(drop), "token");
    assert!(!exists(raw, &name).await, "no hash was created");
    assert_eq!(read().await, before, "the token key is unchanged");
}

#[tokio::test]
async fn a_broken_token_key_is_bad_token_and_nothing_is_written() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;

    // Strings that hold no usable token.
    for text in ["not-a-number", "1.5", "", "-5"] {
        let name = key("fenced-bad");
        let _: () = raw
            .set(token_key(&name), text, None, None, false)
            .await
            .unwrap();
        let lock = client.get_fenced_lock(&name);
        assert_bad_token_everywhere(&raw, &lock, || async {
            raw_token(&raw, &name).await.expect("still there")
        })
        .await;
        assert_eq!(raw_token(&raw, &name).await.as_deref(), Some(text));
    }

    // The last token there can be: the next INCR would overflow. It still reads fine.
    let name = key("fenced-bad-max");
    let max = i64::MAX.to_string();
    let _: () = raw
        .set(token_key(&name), max.as_str(), None, None, false)
        .await
        .unwrap();
    let lock = client.get_fenced_lock(&name);
    assert!(matches!(
        lock.lock_and_get_token().await,
        Err(Error::BadToken { .. })
    ));
    assert!(matches!(lock.try_lock().await, Err(Error::BadToken { .. })));
    assert!(!exists(&raw, &name).await);
    assert_eq!(raw_token(&raw, &name).await, Some(max));
    assert_eq!(lock.token().await.unwrap(), Some(i64::MAX as u64));

    // A token key of another type.
    let name = key("fenced-bad-type");
    let _: i64 = raw.hset(token_key(&name), ("f", "v")).await.unwrap();
    let lock = client.get_fenced_lock(&name);
    assert_bad_token_everywhere(&raw, &lock, || async {
        format!("{:?}", hgetall(&raw, &token_key(&name)).await)
    })
    .await;

    // A re-entry with a broken token key fails too, and leaves the hold as it was.
    let name = key("fenced-bad-reentry");
    let lock = client.get_fenced_lock(&name);
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 1);
    let _: () = raw
        .set(token_key(&name), "oops", None, None, false)
        .await
        .unwrap();
    let held = hgetall(&raw, &name).await;
    assert!(matches!(
        lock.lock_and_get_token().await,
        Err(Error::BadToken { .. })
    ));
    assert_eq!(hgetall(&raw, &name).await, held);
    assert_eq!(raw_token(&raw, &name).await.as_deref(), Some("oops"));
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);

    // A lock key of the wrong type: WrongType naming the lock key; no token drawn.
    let name = key("fenced-wrong-type");
    let _: () = raw.set(&name, "plain", None, None, false).await.unwrap();
    let lock = client.get_fenced_lock(&name);
    for result in [
        lock.lock_and_get_token().await.map(drop),
        lock.try_lock().await.map(drop),
        lock.try_lock_and_get_token_for(Duration::from_millis(200))
            .await
            .map(drop),
    ] {
        match result {
            Err(Error::WrongType { key }) => assert_eq!(key, name),
            other => panic!("expected WrongType, got {other:?}"),
        }
    }
    assert_eq!(raw_token(&raw, &name).await, None, "no token drawn");
    let value: String = raw.get(&name).await.unwrap();
    assert_eq!(value, "plain");
    client.shutdown().await.unwrap();
}
