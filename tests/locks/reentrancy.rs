//! Re-entry follows the owner: one task can take a lock many times (also in recursion
//! and across `.await`s, yields, sleeps and worker threads); two tasks are two owners even
//! on one thread; an explicit owner can be shared between tasks.

use crate::support;
use support::*;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, LockOwner, RLock};
use tokio::sync::oneshot;

/// Takes `lock` once per level down to `depth`, checks the hold count on the way down and
/// up, and gives every hold back while unwinding.
fn descend<'a>(
    lock: &'a RLock,
    raw: &'a Client,
    field: &'a str,
    level: u32,
    depth: u32,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    Box::pin(async move {
        lock.lock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), level, "on the way down");
        if level < depth {
            descend(lock, raw, field, level + 1, depth).await;
        } else {
            let count: Option<String> = raw.hget(lock.name(), field).await.unwrap();
            assert_eq!(count.as_deref(), Some(depth.to_string().as_str()));
            assert_eq!(hgetall(raw, lock.name()).await.len(), 1, "one field only");
        }
        assert_eq!(lock.hold_count().await.unwrap(), level, "on the way up");
        lock.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), level - 1);
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_async_fn_reenters_ten_levels_deep() {
    let Bed(_server, client, raw, name) = Bed::new("reentry-recursive").await;
    let lock = client.get_lock(&name);

    let task = tokio::spawn({
        let lock = lock.clone();
        let raw = raw.clone();
        let id = client.id().to_string();
        async move {
            let field = format!("{id}:{}", lock.owner());
            descend(&lock, &raw, &field, 1, 10).await;
            lock.owner()
        }
    });
    let owner = task.await.unwrap();
    assert_ne!(owner, lock.owner(), "the spawned task was its own owner");
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0, "ten unlocks released ten holds");
    assert_eq!(
        client.renewed_locks(),
        0,
        "renewal bookkeeping unwound with the holds"
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn two_tasks_on_one_thread_do_not_share_the_lock() {
    let Bed(_server, client, raw, name) = Bed::new("reentry-two-tasks").await;
    let lock = client.get_lock(&name);

    let (a_holds_tx, a_holds_rx) = oneshot::channel::<LockOwner>();
    let (b_done_tx, b_done_rx) = oneshot::channel::<()>();
    let (a_released_tx, a_released_rx) = oneshot::channel::<()>();

    let a = tokio::spawn({
        let lock = lock.clone();
        async move {
            lock.lock().await.unwrap();
            assert!(lock.is_held_by_current_task().await.unwrap());
            a_holds_tx.send(lock.owner()).unwrap();
            b_done_rx.await.unwrap();
            // Still ours, and still only one hold: B's attempts were not re-entries.
            assert_eq!(lock.hold_count().await.unwrap(), 1);
            lock.unlock().await.unwrap();
            a_released_tx.send(()).unwrap();
            lock.owner()
        }
    });
    let b = tokio::spawn({
        let lock = lock.clone();
        async move {
            let a_owner = a_holds_rx.await.unwrap();
            assert_ne!(lock.owner(), a_owner, "two tasks, two owners");
            assert!(!lock.try_lock().await.unwrap());
            assert!(!lock.try_lock_for(Duration::from_millis(200)).await.unwrap());
            assert!(!lock.is_held_by_current_task().await.unwrap());
            assert!(lock.is_held_by(a_owner).await.unwrap());
            assert_eq!(lock.hold_count().await.unwrap(), 0);
            assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));
            b_done_tx.send(()).unwrap();
            a_released_rx.await.unwrap();
            assert!(lock.try_lock().await.unwrap());
            assert_eq!(lock.hold_count().await.unwrap(), 1);
            lock.unlock().await.unwrap();
            lock.owner()
        }
    });
    let (a_owner, b_owner) = (a.await.unwrap(), b.await.unwrap());
    assert_ne!(a_owner, b_owner);
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_keeps_its_lock_across_yields_and_sleeps() {
    let Bed(_server, client, raw, name) = Bed::new("reentry-yield").await;
    let lock = client.get_lock(&name);

    // Background load, so the holder has reasons to move between the two workers.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    tokio::task::yield_now().await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        })
        .collect();

    let holder = tokio::spawn({
        let lock = lock.clone();
        let raw = raw.clone();
        let id = client.id().to_string();
        async move {
            let owner = lock.owner();
            let field = format!("{id}:{owner}");
            lock.lock().await.unwrap();
            for round in 0..60 {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(3)).await;
                assert_eq!(lock.owner(), owner, "the owner is stable across awaits");
                if round % 10 == 0 {
                    assert_eq!(lock.hold_count().await.unwrap(), 1);
                    assert!(lock.is_held_by_current_task().await.unwrap());
                }
            }
            assert_eq!(lock.hold_count().await.unwrap(), 1);
            assert!(lock.is_held_by_current_task().await.unwrap());
            // Re-entry still recognises the holder after all those suspensions.
            assert!(lock.try_lock().await.unwrap());
            lock.lock().await.unwrap();
            let count: Option<String> = raw.hget(lock.name(), &field).await.unwrap();
            assert_eq!(count.as_deref(), Some("3"));
            for left in (0..3).rev() {
                lock.unlock().await.unwrap();
                assert_eq!(lock.hold_count().await.unwrap(), left);
            }
        }
    });
    holder.await.unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in busy {
        task.await.unwrap();
    }
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_owner_locks_in_one_task_and_unlocks_in_another() {
    let Bed(_server, client, raw, name) = Bed::new("reentry-explicit").await;
    let job = client.get_lock(&name).with_owner(LockOwner::from_raw(42));
    let field = format!("{}:42", client.id());

    tokio::spawn({
        let job = job.clone();
        async move { job.lock().await.unwrap() }
    })
    .await
    .unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field.clone(), "1".to_string())]
    );

    // A second task with the same explicit owner re-enters.
    tokio::spawn({
        let job = job.clone();
        async move {
            assert!(job.is_held_by_current_task().await.unwrap());
            assert!(job.try_lock().await.unwrap());
        }
    })
    .await
    .unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field.clone(), "2".to_string())]
    );

    // The plain handle, acting as the task, is not the owner.
    let plain = client.get_lock(&name);
    let denied = tokio::spawn(async move { plain.unlock().await })
        .await
        .unwrap();
    assert!(matches!(denied, Err(Error::NotOwner { .. })));
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field.clone(), "2".to_string())]
    );

    for expected in [1u32, 0] {
        let job = job.clone();
        let left = tokio::spawn(async move {
            job.unlock().await.unwrap();
            job.hold_count().await.unwrap()
        })
        .await
        .unwrap();
        assert_eq!(left, expected);
    }
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    assert_eq!(
        client.renewed_locks(),
        0,
        "renewal follows the explicit owner too"
    );
    client.shutdown().await.unwrap();
}
