//! Cancel safety: an acquire dropped at any await point leaves neither a held lock, nor an
//! extra hold, nor a subscription behind.

use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::FutureExt;
use rand::Rng;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_timeouts_leave_nothing_behind() {
    const TASKS: usize = 4;
    const ROUNDS_PER_TASK: usize = 50; // 200 rounds in all
    let Bed(_server, client, raw, name) = Bed::new("cancel").await;
    let lock = client.get_lock(&name);

    // Keeps the lock contended: holds it a few ms, lets go, takes it again.
    let stop = Arc::new(AtomicBool::new(false));
    let contender = {
        let lock = lock.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                lock.lock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(3)).await;
                lock.unlock().await.unwrap();
                tokio::task::yield_now().await;
            }
        })
    };

    let acquired = Arc::new(AtomicU64::new(0));
    let timed_out = Arc::new(AtomicU64::new(0));
    let max_count_seen = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let lock = lock.clone();
            let (acquired, timed_out) = (acquired.clone(), timed_out.clone());
            let max_count_seen = max_count_seen.clone();
            tokio::spawn(async move {
                for _ in 0..ROUNDS_PER_TASK {
                    let limit = Duration::from_millis(rand::thread_rng().gen_range(0..=20));
                    match tokio::time::timeout(limit, lock.lock()).await {
                        Ok(taken) => {
                            taken.unwrap();
                            acquired.fetch_add(1, Ordering::Relaxed);
                            // A dropped attempt of this very task that acquired in the
                            // background counts as a re-entry until it is undone, so the
                            // count may briefly exceed 1. Only what is left at the end
                            // matters (checked below); this is reported for information.
                            let holds = lock.hold_count().await.unwrap();
                            max_count_seen.fetch_max(u64::from(holds), Ordering::Relaxed);
                            lock.unlock().await.unwrap();
                        }
                        Err(_) => {
                            timed_out.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    contender.await.unwrap();
    let (acquired, timed_out) = (
        acquired.load(Ordering::Relaxed),
        timed_out.load(Ordering::Relaxed),
    );
    println!(
        "200 rounds: {acquired} acquired, {timed_out} timed out; largest hold count seen {}",
        max_count_seen.load(Ordering::Relaxed)
    );
    assert_eq!(acquired + timed_out, 200);
    assert!(
        timed_out > 0,
        "no round was cancelled: the test proves nothing"
    );

    // After a grace period for the background undo: nothing held (no field, whatever its
    // count, is left behind), nothing subscribed, nothing renewed.
    let channel = channel(&name);
    let clean = eventually(Duration::from_secs(3), || async {
        !exists(&raw, &name).await
            && numsub(&raw, &channel).await == 0
            && client.subscribed_channels() == 0
            && client.renewed_locks() == 0
    })
    .await;
    assert!(
        clean,
        "left behind: hash {:?}, NUMSUB {}, local channels {}, renewed {}",
        hgetall(&raw, &name).await,
        numsub(&raw, &channel).await,
        client.subscribed_channels(),
        client.renewed_locks()
    );
    client.shutdown().await.unwrap();
}

// A current-thread runtime: fred's connection tasks cannot run during the single poll, so
// the reply surely arrives after the future is dropped. (On a multi-thread runtime a
// descheduled poll can occasionally see the whole round trip complete and return Ready.)
#[tokio::test]
async fn polled_once_then_dropped_on_a_free_lock() {
    let Bed(_server, client, raw, name) = Bed::new("now-or-never").await;
    let lock = client.get_lock(&name);
    // Cache the scripts, so the dropped acquire is a single EVALSHA.
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    reset_stats(&raw).await;

    // One poll sends the acquire script; the future is then dropped mid-flight.
    let polled = lock.lock().now_or_never();
    assert!(polled.is_none(), "completed in one poll: {polled:?}");

    // The acquire finishes in the background and is undone: acquire + unlock scripts.
    let undone = eventually(Duration::from_secs(3), || async {
        script_calls(&raw).await >= 2 && !exists(&raw, &name).await
    })
    .await;
    assert!(
        undone,
        "scripts {}, hash {:?}",
        script_calls(&raw).await,
        hgetall(&raw, &name).await
    );
    assert_eq!(script_calls(&raw).await, 2);
    assert_eq!(client.renewed_locks(), 0);
    assert_eq!(client.subscribed_channels(), 0);
    // The lock is usable as usual afterwards.
    assert!(lock.try_lock().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_lock_dropped_while_waiting_unsubscribes() {
    let Bed(_server, client, raw, name) = Bed::new("dropped-wait").await;
    let lock = client.get_lock(&name);
    let holder = lock.clone();
    tokio::spawn(async move { holder.lock().await.unwrap() })
        .await
        .unwrap();

    let channel = channel(&name);
    // Boxed, so that `drop` below really drops the future (a `pin!`ned one would live on).
    let mut waiting =
        Box::pin(lock.try_lock_with_lease(Duration::from_secs(20), Duration::from_secs(10)));
    // Run it until it is subscribed and asleep.
    let subscribed = tokio::select! {
        _ = &mut waiting => panic!("the held lock was taken"),
        subscribed = eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel).await == 1 && client.subscribed_channels() == 1
        }) => subscribed,
    };
    assert!(subscribed, "the waiter never subscribed");
    tokio::select! {
        _ = &mut waiting => panic!("the held lock was taken"),
        _ = tokio::time::sleep(Duration::from_millis(50)) => {}
    }
    drop(waiting);

    let gone = eventually(Duration::from_secs(3), || async {
        numsub(&raw, &channel).await == 0 && client.subscribed_channels() == 0
    })
    .await;
    assert!(
        gone,
        "still subscribed after the waiter was dropped: NUMSUB {} local {}",
        numsub(&raw, &channel).await,
        client.subscribed_channels()
    );
    // The holder still holds (one hold, untouched by the dropped waiter).
    assert_eq!(hgetall(&raw, &name).await.len(), 1);
    assert!(lock.is_locked().await.unwrap());
    client.shutdown().await.unwrap();
}
