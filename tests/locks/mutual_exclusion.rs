//! Mutual exclusion under contention: 2 clients × 8 tasks × 200 rounds of an unprotected
//! read-modify-write (`GET` then `SET`) on a shared counter. Any overlap of two holders
//! loses an increment, so the final counter equals the number of acquisitions only if
//! the lock excluded everyone every time.

use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redisson_lock::Client as LockClient;
use redisson_lock::fred::prelude::*;

const CLIENTS: usize = 2;
const TASKS_PER_CLIENT: usize = 8;
const ROUNDS: usize = 200;

/// One task: `ROUNDS` times take the lock, increment the counter by hand, release.
/// Even tasks spin on `try_lock` (yielding once, then backing off 2 ms per failure); odd tasks wait
/// with `try_lock_for`, woken by unlock messages.
async fn worker(
    client: LockClient,
    lock_name: String,
    counter: String,
    spin: bool,
    inside: Arc<AtomicBool>,
) -> u64 {
    let lock = client.get_lock(&lock_name);
    let redis = client.redis().clone();
    let mut acquired = 0;
    for _ in 0..ROUNDS {
        let mut failures = 0u32;
        loop {
            let taken = if spin {
                lock.try_lock().await.unwrap()
            } else {
                lock.try_lock_for(Duration::from_secs(5)).await.unwrap()
            };
            if taken {
                break;
            }
            failures += 1;
            if failures == 1 {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        assert!(
            !inside.swap(true, Ordering::SeqCst),
            "two holders at once in this process"
        );
        let value: Option<u64> = redis.get(&counter).await.unwrap();
        tokio::task::yield_now().await; // widen the window a race would need
        let _: () = redis
            .set(&counter, value.unwrap_or(0) + 1, None, None, false)
            .await
            .unwrap();
        inside.store(false, Ordering::SeqCst);
        lock.unlock().await.unwrap();
        acquired += 1;
    }
    acquired
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_sixteen_tasks_never_overlap() {
    let Duo(_server, clients, raw, lock_name) = Duo::new("mutex").await;
    let counter = key("mutex-counter");
    let inside = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for t in 0..TASKS_PER_CLIENT {
            let (client, lock_name, counter, inside, total) = (
                client.clone(),
                lock_name.clone(),
                counter.clone(),
                inside.clone(),
                total.clone(),
            );
            let spin = (c + t) % 2 == 0;
            tasks.push(tokio::spawn(async move {
                let n = worker(client, lock_name, counter, spin, inside).await;
                total.fetch_add(n, Ordering::Relaxed);
            }));
        }
    }
    let all = futures::future::join_all(tasks);
    let results = tokio::time::timeout(Duration::from_secs(120), all)
        .await
        .expect("the run finished");
    for result in results {
        result.unwrap();
    }
    let elapsed = started.elapsed();

    let expected = (CLIENTS * TASKS_PER_CLIENT * ROUNDS) as u64;
    assert_eq!(total.load(Ordering::Relaxed), expected);
    let counter_value: Option<u64> = raw.get(&counter).await.unwrap();
    assert_eq!(
        counter_value,
        Some(expected),
        "every increment survived ({elapsed:?})"
    );
    let exists: i64 = raw.exists(&lock_name).await.unwrap();
    assert_eq!(exists, 0, "the lock is free at the end");
    for client in &clients {
        assert_eq!(client.renewed_locks(), 0);
        client.shutdown().await.unwrap();
    }
    eprintln!("{expected} acquisitions in {elapsed:?}");
}
