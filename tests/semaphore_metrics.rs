//! The semaphore's metrics (feature `metrics`), in a test binary of their own: the
//! recorder is process-wide, and the waiters gauge has no name label, so no other test
//! may wait on a semaphore meanwhile.
#![cfg(feature = "metrics")]

mod support;
use support::*;

use std::time::Duration;

/// Metrics (feature `metrics`): acquisitions and releases counted with `kind=semaphore`,
/// the waiter gauge up while a task waits and back to 0 after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_acquisitions_releases_and_waiters() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");
    let totals = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        f64,
    >::new()));
    // Snapshots hand out what happened since the last one: fold them into totals.
    let read = {
        let totals = totals.clone();
        move |wanted: &str| {
            let mut totals = totals.lock().unwrap();
            for (key, _, _, value) in snapshotter.snapshot().into_vec() {
                let key = key.key();
                let mut labels: Vec<String> = key
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect();
                labels.sort();
                let id = format!("{}{{{}}}", key.name(), labels.join(","));
                let v = match value {
                    DebugValue::Counter(n) => n as f64,
                    DebugValue::Gauge(g) => g.0,
                    DebugValue::Histogram(h) => h.len() as f64,
                };
                *totals.entry(id).or_default() += v;
            }
            totals.get(wanted).copied().unwrap_or(0.0)
        }
    };
    let Bed(_server, client, _raw, name) =
        Bed::with_config("sem-metrics", |c| c.metrics_lock_names(true)).await;
    let semaphore = client.get_semaphore(&name);
    semaphore.try_set_permits(1).await.unwrap();
    let permit = semaphore.acquire(1).await.unwrap();
    assert!(semaphore.try_acquire(1).await.unwrap().is_none());
    let waiter = {
        let semaphore = semaphore.clone();
        tokio::spawn(async move { semaphore.acquire(1).await.unwrap().forget() })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let labels = |outcome: &str| format!("kind=semaphore,lock={name},outcome={outcome}");
    assert_eq!(read("redisson_lock_waiters{kind=semaphore}"), 1.0);
    permit.release().await.unwrap();
    waiter.await.unwrap();
    assert_eq!(read("redisson_lock_waiters{kind=semaphore}"), 0.0);
    assert_eq!(
        read(&format!(
            "redisson_lock_acquire_total{{{}}}",
            labels("acquired")
        )),
        2.0
    );
    assert_eq!(
        read(&format!(
            "redisson_lock_acquire_total{{{}}}",
            labels("timed_out")
        )),
        1.0
    );
    assert_eq!(
        read(&format!(
            "redisson_lock_unlock_total{{{}}}",
            labels("released")
        )),
        1.0
    );
    client.shutdown().await.unwrap();
}
