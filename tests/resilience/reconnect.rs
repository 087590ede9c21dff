//! Reconnects: waiters survive a killed subscriber connection (the registry resubscribes
//! and wakes everyone), and an unlock works after the command connection was killed.

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_survive_a_killed_subscriber_connection() {
    const WAITERS: usize = 8;
    let server = RedisServer::start();
    // No local hand-off: every unlock is a real release whose message the waiters need.
    let client = server.client_with(server.config().local_handoffs(0)).await;
    let raw = server.raw().await;
    let name = key("pubsub-kill");
    let lock = client.get_lock(&name);
    lock.lock().await.unwrap();
    assert!(
        pttl(&raw, &name).await > 29_000,
        "held with the 30 s watchdog lease"
    );

    reset_stats(&raw).await;
    let (acquired_tx, mut acquired_rx) = tokio::sync::mpsc::unbounded_channel();
    let waiters: Vec<_> = (0..WAITERS)
        .map(|i| {
            let lock = lock.clone();
            let acquired_tx = acquired_tx.clone();
            tokio::spawn(async move {
                lock.lock().await.unwrap();
                acquired_tx.send((i, Instant::now())).unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
                lock.unlock().await.unwrap();
            })
        })
        .collect();
    drop(acquired_tx);
    // Every waiter is in the lock's local line; the first one is subscribed: all asleep.
    let channel = channel(&name);
    let asleep = eventually(Duration::from_secs(5), || async {
        client.local_waiters() == WAITERS && numsub(&raw, &channel).await == 1
    })
    .await;
    assert!(asleep, "the waiters did not all start waiting");
    assert_eq!(client.subscribed_channels(), 1);

    // Cut the subscriber connection, and unlock right away: the unlock message may well be
    // published while nobody is subscribed. The registry must resubscribe after the
    // reconnect and wake every waiter to retry.
    // The subscriber, and the key-tracking listener (also a pub/sub connection).
    assert_eq!(kill_clients(&raw, "pubsub").await, 2);
    let unlocked_at = Instant::now();
    lock.unlock().await.unwrap();

    let mut seen = Vec::new();
    while let Ok(Some((i, at))) =
        tokio::time::timeout(Duration::from_secs(10), acquired_rx.recv()).await
    {
        println!(
            "waiter {i} acquired {:?} after the unlock",
            at - unlocked_at
        );
        seen.push(i);
    }
    let elapsed = unlocked_at.elapsed();
    seen.sort();
    assert_eq!(
        seen,
        (0..WAITERS).collect::<Vec<_>>(),
        "not every waiter acquired"
    );
    for waiter in waiters {
        waiter.await.unwrap();
    }
    println!("{WAITERS} waiters acquired in turn within {elapsed:?} of the unlock");
    assert!(
        elapsed < Duration::from_secs(10),
        "took {elapsed:?}: waiting for the 30 s TTL?"
    );
    // The hand-offs after the first went through the resubscribed channel, and it was
    // given back at the end.
    let clean = eventually(Duration::from_secs(2), || async {
        numsub(&raw, &channel).await == 0 && client.subscribed_channels() == 0
    })
    .await;
    assert!(clean, "still subscribed after every waiter left");
    assert!(!lock.is_locked().await.unwrap());
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_works_after_the_command_connection_was_killed() {
    let Bed(_server, client, raw, name) = Bed::new("normal-kill").await;
    let lock = client.get_lock(&name);
    // Ten rounds: the kill lands at a different point of fred's reconnect each time; the
    // unlock right after it either finds the connection gone (fred refuses to route it,
    // so it is sent again) or is written to the dying socket (outcome unknown, asked
    // again with the same latch). Either way it must succeed exactly once.
    for _ in 0..10 {
        lock.lock().await.unwrap();
        lock.lock().await.unwrap();
        // Kills this client's command connection (and its idle subscriber connection),
        // not the raw client's own.
        assert!(kill_clients(&raw, "normal").await >= 1);
        lock.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        lock.unlock().await.unwrap();
        let exists: i64 = raw.exists(&name).await.unwrap();
        assert_eq!(exists, 0);
    }
    assert_eq!(client.renewed_locks(), 0);

    // And the lock is as usable as before, waiting included.
    lock.lock().await.unwrap();
    let other = lock.clone();
    let waiter = tokio::spawn(async move {
        other.lock().await.unwrap();
        other.unlock().await.unwrap();
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    lock.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter was not woken after the reconnect")
        .unwrap();
    client.shutdown().await.unwrap();
}

/// `shutdown()` moments after the subscriber connection was killed (found by
/// tests/resilience/upstream_bugs.rs): fred's `QUIT` stops its reconnection, so a `QUIT` sent while
/// the subscriber was being re-made was never written and timed out (3 s, then
/// `Err(Timeout)`) in about a third of the rounds. The kill lands 0 to 27 ms before the
/// shutdown; every shutdown must be `Ok` and quick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_just_after_the_subscriber_was_killed_is_ok_and_quick() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let holder = server.client().await;
    for round in 0..10u64 {
        let waiter_client = server.client().await;
        let name = key("shutdown-after-kill");
        let lock = holder
            .get_lock(&name)
            .with_owner(redisson_lock::LockOwner::from_raw(1));
        lock.lock().await.unwrap();
        let waiter = waiter_client
            .get_lock(&name)
            .with_owner(redisson_lock::LockOwner::from_raw(2));
        let waiting = tokio::spawn(async move {
            let taken = waiter.try_lock_for(Duration::from_secs(5)).await.unwrap();
            waiter.unlock().await.unwrap();
            taken
        });
        let subscribed = eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel(&name)).await == 1
        })
        .await;
        assert!(subscribed, "the waiter never subscribed");
        lock.unlock().await.unwrap();
        assert!(waiting.await.unwrap());
        tokio::time::sleep(Duration::from_millis(round * 3)).await;
        kill_clients(&raw, "pubsub").await;
        let started = Instant::now();
        let outcome = waiter_client.shutdown().await;
        let took = started.elapsed();
        println!("round {round}: shutdown {outcome:?} in {took:?}");
        assert!(
            outcome.is_ok(),
            "round {round}: shutdown failed: {outcome:?}"
        );
        assert!(
            took < Duration::from_secs(2),
            "round {round}: shutdown took {took:?}"
        );
    }
    holder.shutdown().await.unwrap();
}
