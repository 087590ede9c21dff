//! The fenced lock (`RFencedLock`, protocol §12) against real `redis-server`s: the token
//! counter `redisson_lock_token:{N}` and the RLock hash it sits next to, Redisson's
//! `testTokenIncrease` numbering shared with another client, tokens under contention,
//! guards carrying their token, and what a broken token key does. Real Redisson drawing
//! from the same counter: `tests/java/locks.rs` (`fenced_lock`).
//!
//! A fresh counter's first token is the server's `TIME` in µs (this crate's deliberate
//! difference from Redisson's 1; docs/protocol.md §12): tests read `TIME` around the
//! first acquisition and count on from there.

use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client as LockClient, Error, FencedLock};

// ---- helpers ----------------------------------------------------------------------------

/// `redisson_lock_token:{N}` of a name without braces.
fn token_key(name: &str) -> String {
    format!("redisson_lock_token:{{{name}}}")
}

/// Another process's fenced lock on `name` (a second client of `server`), as owner 1.
async fn other_client(server: &RedisServer) -> LockClient {
    server.client().await
}

fn other_lock(other: &LockClient, name: &str) -> FencedLock {
    other
        .get_fenced_lock(name)
        .with_owner(redisson_lock::LockOwner::from_raw(1))
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

    // First hold: the counter is seeded from the server clock, so the first token is
    // the server's TIME in µs; then the RLock hash, field and watchdog TTL.
    let before = server_time_us(&raw).await;
    let base = lock.lock_and_get_token().await.unwrap();
    assert_seeded(base, before, server_time_us(&raw).await);
    // Token number `n` of this lock (1-based), as Redisson's numbering counts them.
    let nth = |n: u64| base + n - 1;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    let kind: String = raw.r#type(&name).await.unwrap();
    assert_eq!(kind, "hash");
    assert_watchdog_ttl(pttl(&raw, &name).await);
    assert_token(&raw, &name, nth(1)).await;
    assert_eq!(lock.token().await.unwrap(), Some(nth(1)));

    // Every re-entry, through every method, draws a token and adds a hold.
    lock.lock().await.unwrap();
    assert_token(&raw, &name, nth(2)).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));
    assert_watchdog_ttl(pttl(&raw, &name).await);

    assert!(lock.try_lock().await.unwrap());
    assert_token(&raw, &name, nth(3)).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 3));

    assert!(lock.try_lock_for(Duration::from_secs(1)).await.unwrap());
    assert_token(&raw, &name, nth(4)).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 4));

    // Re-entries re-arm the TTL to the new lease, as RLock does.
    lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_token(&raw, &name, nth(5)).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 5));
    assert_lease_ttl(pttl(&raw, &name).await, 10_000);

    assert!(
        lock.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(20))
            .await
            .unwrap()
    );
    assert_token(&raw, &name, nth(6)).await;
    assert_lease_ttl(pttl(&raw, &name).await, 20_000);

    assert_eq!(
        lock.lock_and_get_token_with_lease(Duration::from_secs(40))
            .await
            .unwrap(),
        nth(7)
    );
    assert_lease_ttl(pttl(&raw, &name).await, 40_000);
    assert_eq!(
        lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(15))
            .await
            .unwrap(),
        Some(nth(8))
    );
    assert_eq!(
        lock.try_lock_and_get_token_for(Duration::ZERO)
            .await
            .unwrap(),
        Some(nth(9))
    );
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 9));
    assert_eq!(lock.hold_count().await.unwrap(), 9);
    assert_eq!(lock.token().await.unwrap(), Some(nth(9)));

    // Another client sees our hold and draws no token.
    let other = other_client(&server).await;
    assert_eq!(
        other_lock(&other, &name)
            .try_lock_and_get_token_for(Duration::ZERO)
            .await
            .unwrap(),
        None
    );
    assert_token(&raw, &name, nth(9)).await;

    // Partial unlocks: count down, token untouched, nothing published.
    unlock_times(&lock, 8).await;
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    assert_token(&raw, &name, nth(9)).await;
    assert_eq!(drain(&mut rx, Duration::from_millis(300)).await, vec![]);

    // The last unlock deletes the hash and publishes `0`; the token stays.
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(channel(&name), b"0".to_vec())]
    );
    assert_token(&raw, &name, nth(9)).await;
    assert_eq!(lock.token().await.unwrap(), Some(nth(9)));

    // The counter goes on from where it was.
    assert_eq!(lock.lock_and_get_token().await.unwrap(), nth(10));
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));

    // force_unlock: hash deleted, `0` published, the token key untouched.
    assert!(lock.force_unlock().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(channel(&name), b"0".to_vec())]
    );
    assert_token(&raw, &name, nth(10)).await;
    assert!(!lock.force_unlock().await.unwrap());
    assert_eq!(drain(&mut rx, Duration::from_millis(300)).await, vec![]);

    // Another client takes it next and draws the next token from the same counter.
    let theirs = other_lock(&other, &name);
    assert_eq!(theirs.lock_and_get_token().await.unwrap(), nth(11));
    assert_eq!(lock.token().await.unwrap(), Some(nth(11)));
    theirs.unlock().await.unwrap();
    assert_token(&raw, &name, nth(11)).await;
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

// ---- 2. Redisson's testTokenIncrease, interleaved with another client --------------------

/// (With real Redisson between ours: `tests/java/locks.rs`, `fenced_lock`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_increase_numbering_and_another_client_between_ours() {
    let Bed(server, client, raw, name) = Bed::new("fenced-increase").await;
    let other = other_client(&server).await;
    let lock = client.get_fenced_lock(&name);

    // Redisson's testTokenIncrease, counted from the seeded first token (Redisson's 1).
    let before = server_time_us(&raw).await;
    let base = lock.lock_and_get_token().await.unwrap();
    assert_seeded(base, before, server_time_us(&raw).await);
    assert_eq!(lock.lock_and_get_token().await.unwrap(), base + 1);
    lock.lock().await.unwrap();
    assert_eq!(lock.token().await.unwrap(), Some(base + 2));
    lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_eq!(lock.token().await.unwrap(), Some(base + 3));
    assert_eq!(
        lock.try_lock_and_get_token_for(Duration::ZERO)
            .await
            .unwrap(),
        Some(base + 4)
    );
    assert_eq!(lock.token().await.unwrap(), Some(base + 4));
    assert_eq!(lock.hold_count().await.unwrap(), 5);
    unlock_times(&lock, 5).await;
    assert!(!exists(&raw, &name).await);

    // Then the other client and we take turns on the same name; every token is new and
    // larger.
    let mut drawn: Vec<u64> = (base..base + 5).collect();
    for round in 0..10u64 {
        let theirs = other
            .get_fenced_lock(&name)
            .with_owner(redisson_lock::LockOwner::from_raw(100 + round));
        let theirs_first = theirs.lock_and_get_token().await.unwrap();
        // It re-enters: another token.
        let theirs_again = theirs.lock_and_get_token().await.unwrap();
        // While it holds it we draw nothing.
        assert_eq!(
            lock.try_lock_and_get_token_for(Duration::ZERO)
                .await
                .unwrap(),
            None
        );
        assert_eq!(lock.token().await.unwrap(), Some(theirs_again));
        theirs.unlock().await.unwrap();
        theirs.unlock().await.unwrap();
        drawn.extend([theirs_first, theirs_again]);

        let ours = if round % 2 == 0 {
            lock.lock_and_get_token().await.unwrap()
        } else {
            lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(10))
                .await
                .unwrap()
                .expect("free")
        };
        // The other client sees it held and draws nothing.
        assert_eq!(
            theirs
                .try_lock_and_get_token_for(Duration::ZERO)
                .await
                .unwrap(),
            None
        );
        lock.unlock().await.unwrap();
        drawn.push(ours);
    }

    // A waiter of ours woken by the other client's unlock draws the token after its.
    let theirs = other_lock(&other, &name);
    let theirs_token = theirs
        .lock_and_get_token_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
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
    theirs.unlock().await.unwrap();
    let ours = waiter
        .await
        .unwrap()
        .expect("woken by the other client's unlock");
    assert!(
        released.elapsed() < Duration::from_secs(5),
        "woken by the message, not the 60 s lease"
    );
    drawn.extend([theirs_token, ours]);

    assert!(
        drawn.windows(2).all(|w| w[0] < w[1]),
        "tokens must strictly increase in drawing order: {drawn:?}"
    );
    assert_eq!(drawn, (base..base + drawn.len() as u64).collect::<Vec<_>>());
    assert_eq!(lock.token().await.unwrap(), drawn.last().copied());
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

/// A counter that exists (here at 1, what a Java client's first `lockAndGetToken`
/// leaves: Redisson `INCR`s a missing key; real Redisson doing it: `tests/java/locks.rs`)
/// is only ever incremented: Redisson's testTokenIncrease numbering exactly.
#[tokio::test]
async fn a_counter_a_java_client_started_is_only_incremented() {
    let Bed(_server, client, raw, name) = Bed::new("fenced-java-first").await;
    let lock = client.get_fenced_lock(&name);
    let started: i64 = raw.incr(token_key(&name)).await.unwrap();
    assert_eq!(started, 1);

    assert_eq!(lock.lock_and_get_token().await.unwrap(), 2);
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 3);
    lock.lock().await.unwrap();
    assert_eq!(lock.token().await.unwrap(), Some(4));
    lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_eq!(lock.token().await.unwrap(), Some(5));
    assert_eq!(
        lock.try_lock_and_get_token_for(Duration::ZERO)
            .await
            .unwrap(),
        Some(6)
    );
    unlock_times(&lock, 5).await;
    assert_token(&raw, &name, 6).await;
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

    let before = server_time_us(&raw).await;
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
    // Nobody else drew tokens, so they are exactly base..base + total, where the first
    // (seeded) one is the server time in µs at the first acquisition.
    let base = samples.first().map(|s| s.token).expect("samples");
    assert_seeded(base, before, server_time_us(&raw).await);
    assert_eq!(samples.last().map(|s| s.token), Some(base + total - 1));
    let tokens: Vec<u64> = samples.iter().map(|s| s.token).collect();
    assert_eq!(tokens, (base..base + total).collect::<Vec<_>>());
    assert_token(&raw, &name, base + total - 1).await;
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

    let before = server_time_us(&raw).await;
    let guard = lock.acquire().await.unwrap();
    let base = guard.token().expect("a fenced guard has a token");
    assert_seeded(base, before, server_time_us(&raw).await);
    guard.unlock().await.unwrap();

    let guard = lock
        .acquire_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(guard.token(), Some(base + 1));
    assert_lease_ttl(pttl(&raw, &name).await, 10_000);
    // A re-entry through a second guard draws a token of its own.
    let inner = lock
        .try_acquire_for(Duration::from_secs(1))
        .await
        .unwrap()
        .expect("re-entry");
    assert_eq!(inner.token(), Some(base + 2));
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    inner.unlock().await.unwrap();
    assert_eq!(guard.token(), Some(base + 1), "a guard's token is its own");
    drop(guard); // released in the background
    assert!(
        gone_within(&raw, &name, Duration::from_secs(5))
            .await
            .is_some()
    );

    let guard = lock
        .try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10))
        .await
        .unwrap()
        .expect("free");
    assert_eq!(guard.token(), Some(base + 3));
    assert_eq!(lock.token().await.unwrap(), Some(base + 3));

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
    assert_eq!(
        lock.token().await.unwrap(),
        Some(base + 3),
        "no token drawn"
    );
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
    assert_eq!(taken.token(), Some(base + 4));
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
    is_bad(
        lock.ensure_token_floor().await.map(drop),
        "ensure_token_floor",
    );
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
    // Above the clock already: the floor leaves it alone.
    assert_eq!(lock.ensure_token_floor().await.unwrap(), i64::MAX as u64);
    assert_eq!(raw_token(&raw, &name).await, Some(i64::MAX.to_string()));

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
    lock.lock_and_get_token().await.unwrap();
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

// ---- 6. the seed: replicas, and the explicit floor --------------------------------------

/// The seed reaches a replica as the values the primary wrote (effects replication: a
/// `SET` and an `INCR`), not as the script run again with the replica's own `TIME`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeded_counter_reaches_a_replica_as_written() {
    let primary = RedisServer::start();
    let replica = RedisServer::start_replica_of(&primary);
    wait_replica_linked(replica.port, Duration::from_secs(10));
    let client = primary.client().await;
    let raw = primary.raw().await;
    let replica_raw = replica.raw().await;
    reset_stats(&replica_raw).await;
    let name = key("fenced-replica");
    let lock = client.get_fenced_lock(&name);

    let before = server_time_us(&raw).await;
    let first = lock.lock_and_get_token().await.unwrap();
    assert_seeded(first, before, server_time_us(&raw).await);
    let second = lock.lock_and_get_token().await.unwrap();
    assert_eq!(second, first + 1);
    let acked: i64 = raw
        .custom(fred::cmd!("WAIT"), vec![1, 5_000])
        .await
        .unwrap();
    assert_eq!(acked, 1, "the replica acknowledged the writes");
    let on_replica: Option<String> = replica_raw.get(token_key(&name)).await.unwrap();
    assert_eq!(on_replica, Some(second.to_string()));
    // What the replica ran: plain writes, no script and no TIME of its own.
    assert_eq!(command_calls(&replica_raw, "set").await, 1);
    assert_eq!(command_calls(&replica_raw, "incr").await, 2);
    assert_eq!(script_calls(&replica_raw).await, 0);
    assert_eq!(command_calls(&replica_raw, "time").await, 0);
    unlock_times(&lock, 2).await;
    client.shutdown().await.unwrap();
}

/// `ensure_token_floor` raises a missing or low counter to the server clock, never lowers
/// one, and the next token (ours or a Java client's) is above what it returned.
#[tokio::test]
async fn ensure_token_floor_raises_a_low_counter_and_never_lowers_one() {
    let Bed(_server, client, raw, name) = Bed::new("fenced-floor").await;
    let lock = client.get_fenced_lock(&name);

    // Missing: set to the clock, no hold taken.
    let before = server_time_us(&raw).await;
    let floor = lock.ensure_token_floor().await.unwrap();
    assert_seeded(floor, before, server_time_us(&raw).await);
    assert_token(&raw, &name, floor).await;
    assert!(!exists(&raw, &name).await, "no hold taken");
    assert_eq!(lock.lock_and_get_token().await.unwrap(), floor + 1);
    lock.unlock().await.unwrap();

    // Low (a Java client restarted it from 1): raised; the next token, any client's, is
    // above it (Redisson's: `tests/java/locks.rs`, `fenced_lock`).
    let _: () = raw
        .set(token_key(&name), 5, None, None, false)
        .await
        .unwrap();
    let before = server_time_us(&raw).await;
    let raised = lock.ensure_token_floor().await.unwrap();
    assert_seeded(raised, before, server_time_us(&raw).await);
    assert!(raised > floor + 1);
    let other = client
        .get_fenced_lock(&name)
        .with_owner(redisson_lock::LockOwner::from_raw(3));
    assert_eq!(other.lock_and_get_token().await.unwrap(), raised + 1);
    other.unlock().await.unwrap();

    // Above the clock: left as it is, and the next token follows it.
    let high = raised + 10_000_000_000_000;
    let _: () = raw
        .set(token_key(&name), high.to_string(), None, None, false)
        .await
        .unwrap();
    assert_eq!(lock.ensure_token_floor().await.unwrap(), high);
    assert_token(&raw, &name, high).await;
    assert_eq!(lock.lock_and_get_token().await.unwrap(), high + 1);
    lock.unlock().await.unwrap();

    // Zero is a counter like any other: raised.
    let _: () = raw
        .set(token_key(&name), 0, None, None, false)
        .await
        .unwrap();
    assert!(lock.ensure_token_floor().await.unwrap() >= raised);
    client.shutdown().await.unwrap();
}
