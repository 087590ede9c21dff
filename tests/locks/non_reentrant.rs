//! The non-reentrant lock (Redisson 4.4's `RedissonNonReentrantLock`, protocol §14.4)
//! against real `redis-server`s: the holder's second acquisition fails at once and
//! changes nothing, other owners wait on the RLock channel as usual. With real Redisson
//! 4.7.0 (its non-reentrant lock, and a Java `RLock` on the same name):
//! `tests/java/locks.rs`.

use crate::support;
use support::*;

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client as LockClient, Error, LockOwner, NonReentrantLock};

// ---- helpers ----------------------------------------------------------------------------

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn field_of(client: &LockClient, owner: LockOwner) -> String {
    format!("{}:{owner}", client.id())
}

fn pair(field: &str, count: u32) -> Vec<(String, String)> {
    vec![(field.to_string(), count.to_string())]
}

/// Runs `attempt` and asserts it answered within `limit` (i.e. did not wait).
async fn at_once<T>(limit: Duration, attempt: impl std::future::Future<Output = T>) -> T {
    let started = Instant::now();
    let answer = attempt.await;
    let took = started.elapsed();
    assert!(took < limit, "took {took:?}, expected an answer at once");
    answer
}

/// Asserts `result` is the non-reentrant error for `lock`, with Redisson's exact text.
fn assert_non_reentrant<T: std::fmt::Debug>(
    result: redisson_lock::Result<T>,
    lock: &NonReentrantLock,
) {
    let error = result.expect_err("a re-acquisition by the holder must fail");
    match &error {
        Error::NonReentrant { name, owner } => {
            assert_eq!(name, lock.name());
            assert_eq!(*owner, lock.owner());
        }
        other => panic!("expected NonReentrant, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        format!(
            "Lock '{}' is non-reentrant and is already held by thread {}",
            lock.name(),
            lock.owner()
        )
    );
}

/// Every way for the holder to take `lock` again: `lock()`/`acquire*` fail with
/// `NonReentrant`, `try_*` answer false; all at once, and nothing changes in Redis.
async fn assert_reacquisitions_refused(client: &LockClient, raw: &Client, lock: &NonReentrantLock) {
    let name = lock.name().to_string();
    let hash = hgetall(raw, &name).await;
    let ttl_before = pttl(raw, &name).await;
    let renewed = client.renewed_locks();
    let quick = ms(500);
    let wait = Duration::from_secs(3);

    assert_non_reentrant(at_once(quick, lock.lock()).await, lock);
    assert_non_reentrant(
        at_once(quick, lock.lock_with_lease(Duration::from_secs(60))).await,
        lock,
    );
    assert_non_reentrant(at_once(quick, lock.acquire()).await.map(drop), lock);
    assert_non_reentrant(
        at_once(quick, lock.acquire_with_lease(Duration::from_secs(60)))
            .await
            .map(drop),
        lock,
    );
    assert!(!at_once(quick, lock.try_lock()).await.unwrap());
    assert!(!at_once(quick, lock.try_lock_for(wait)).await.unwrap());
    assert!(
        !at_once(
            quick,
            lock.try_lock_with_lease(wait, Duration::from_secs(60))
        )
        .await
        .unwrap()
    );
    assert!(
        at_once(quick, lock.try_acquire_for(wait))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        at_once(
            quick,
            lock.try_acquire_with_lease(wait, Duration::from_secs(60))
        )
        .await
        .unwrap()
        .is_none()
    );

    assert_eq!(lock.hold_count().await.unwrap(), 1);
    assert_eq!(hgetall(raw, &name).await, hash, "the hash is unchanged");
    let ttl_after = pttl(raw, &name).await;
    assert!(
        ttl_after <= ttl_before,
        "the TTL was re-armed: {ttl_before} -> {ttl_after}"
    );
    assert_eq!(client.renewed_locks(), renewed, "no watchdog hold added");
    assert_eq!(client.subscribed_channels(), 0, "nobody waited");
}

// ---- 1. the holder cannot take it again -------------------------------------------------

#[tokio::test]
async fn the_holders_second_acquisition_fails_at_once_and_changes_nothing() {
    let Bed(server, client, raw, name) = Bed::new("nr-watchdog").await;
    let (_subscriber, mut rx) = listen(&server, "*").await;

    // Watchdog-mode hold.
    let lock = client.get_non_reentrant_lock(&name);
    lock.lock().await.unwrap();
    let field = field_of(&client, lock.owner());
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    assert!((20_000..=30_000).contains(&pttl(&raw, &name).await));
    assert_eq!(client.renewed_locks(), 1);
    assert_reacquisitions_refused(&client, &raw, &lock).await;
    // One unlock releases it: the count never went above 1.
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(client.renewed_locks(), 0);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(channel(&name), b"0".to_vec())],
        "RLock's channel and message"
    );
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));

    // Lease-mode hold, through try_lock_with_lease, by an explicit owner.
    let name = key("nr-lease");
    let lock = client
        .get_non_reentrant_lock(&name)
        .with_owner(LockOwner::from_raw(731));
    assert!(
        lock.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10))
            .await
            .unwrap()
    );
    assert_eq!(
        hgetall(&raw, &name).await,
        pair(&format!("{}:731", client.id()), 1)
    );
    tokio::time::sleep(ms(300)).await; // so that a re-armed TTL would show
    assert_reacquisitions_refused(&client, &raw, &lock).await;
    assert!(
        pttl(&raw, &name).await < 9_800,
        "the lease was not re-armed"
    );
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);

    // A guard's holder is refused too, and the guard still releases.
    let name = key("nr-guard");
    let lock = client.get_non_reentrant_lock(&name);
    let guard = lock.acquire().await.unwrap();
    assert_reacquisitions_refused(&client, &raw, &lock).await;
    guard.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

// ---- 2. other owners wait as usual ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_owner_waits_and_is_woken_by_the_unlock_message() {
    let Bed(server, client, raw, name) = Bed::new("nr-hand-off").await;
    let other = server.client().await;
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;

    let mut hand_offs = Vec::new();
    for round in 0..5 {
        // Held in watchdog mode: its TTL is 30 s, so only the message can wake the waiter.
        let holder = client.get_non_reentrant_lock(&name);
        holder.lock().await.unwrap();
        // Another task of the same client, and a task of another client.
        let waiter_client = if round % 2 == 0 { &client } else { &other };
        let waiter = tokio::spawn({
            let lock = waiter_client.get_non_reentrant_lock(&name);
            async move {
                let taken = if round % 3 == 0 {
                    lock.lock().await.map(|()| true).unwrap()
                } else {
                    lock.try_lock_for(Duration::from_secs(20)).await.unwrap()
                };
                (taken, Instant::now(), lock.owner())
            }
        });
        assert!(
            eventually(Duration::from_secs(5), || async {
                waiter_client.subscribed_channels() == 1
            })
            .await,
            "the waiter subscribed"
        );
        tokio::time::sleep(ms(200)).await;
        assert!(!waiter.is_finished());
        holder.unlock().await.unwrap();
        let released = Instant::now();
        let (taken, taken_at, owner) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("woken by the message or handed the lock, long before the 30 s TTL")
            .unwrap();
        if std::ptr::eq(waiter_client, &client) {
            // A waiter of the same client is handed the lock in the unlock script itself:
            // the field moves, nothing is published.
            assert_eq!(drain_first(&mut rx, ms(300)).await, None);
        } else {
            assert_eq!(
                drain_first(&mut rx, Duration::from_secs(5)).await,
                Some((channel(&name), b"0".to_vec()))
            );
        }
        assert!(taken);
        let hand_off = taken_at.saturating_duration_since(released);
        assert!(hand_off < Duration::from_secs(2), "{hand_off:?}");
        hand_offs.push(hand_off);
        assert_eq!(
            hgetall(&raw, &name).await,
            pair(&field_of(waiter_client, owner), 1)
        );
        waiter_client
            .get_non_reentrant_lock(&name)
            .with_owner(owner)
            .unlock()
            .await
            .unwrap();
        let _ = drain(&mut rx, ms(100)).await;
    }
    eprintln!("non-reentrant hand-offs: {hand_offs:?}");
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}
