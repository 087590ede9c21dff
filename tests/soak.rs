//! Soak: 16 tasks lock and unlock across 1,000 names for `SOAK_SECS` (default 60) with
//! random cancellations (dropped futures, dropped guards), while resident memory, open
//! subscriptions, live tokio tasks and renewed locks are sampled every 250 ms; the first
//! 10 s are compared with the last 10 s. Ignored by default (it takes a minute):
//!
//! ```text
//! SOAK_SECS=60 cargo test --test soak -- --ignored --nocapture
//! ```
mod support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use redisson_lock::fred::prelude::ClientLike;

const TASKS: u64 = 16;
const NAMES: u64 = 1_000;
/// How often the metrics are sampled (the first and last 10 s are 40 samples each).
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Resident memory of this process, in KiB (`/proc/self/statm`, second field).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4 // 4 KiB pages
}

#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    rss_kib: u64,
    subscriptions: usize,
    tasks: usize,
    renewed: usize,
}

#[derive(Default)]
struct Counters {
    ops: AtomicU64,
    acquired: AtomicU64,
    cancelled: AtomicU64,
    errors: AtomicU64,
}

fn mean(samples: &[Sample], pick: impl Fn(&Sample) -> u64) -> f64 {
    samples.iter().map(&pick).sum::<u64>() as f64 / samples.len().max(1) as f64
}

fn max(samples: &[Sample], pick: impl Fn(&Sample) -> u64) -> u64 {
    samples.iter().map(pick).max().unwrap_or(0)
}

/// `KEYS base:*`: the soak's lock hashes still in Redis.
async fn lock_keys(raw: &redisson_lock::fred::prelude::Client, base: &str) -> Vec<String> {
    raw.custom(redisson_lock::fred::cmd!("KEYS"), vec![format!("{base}:*")])
        .await
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a 60 s soak; run with --ignored"]
async fn soak_stays_flat() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let server = RedisServer::start();
    let client = server.client().await;
    let base = key("soak");
    let counters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Handle::current();
    let idle_tasks = runtime.metrics().num_alive_tasks();

    let mut workers = Vec::new();
    for t in 0..TASKS {
        let (client, base, counters, stop) =
            (client.clone(), base.clone(), counters.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(t);
            while !stop.load(Ordering::Relaxed) {
                counters.ops.fetch_add(1, Ordering::Relaxed);
                let name = format!("{base}:{}", rng.gen_range(0..NAMES));
                let lock = client.get_lock(name);
                let hold = Duration::from_micros(rng.gen_range(0..3_000));
                let give_up = Duration::from_micros(rng.gen_range(0..4_000));
                let outcome = match rng.gen_range(0..10) {
                    // lock() cancelled by a timeout (the future is dropped mid-flight).
                    0..=3 => match tokio::time::timeout(give_up, lock.lock()).await {
                        Ok(Ok(())) => {
                            tokio::time::sleep(hold).await;
                            lock.unlock().await.map(|_| true)
                        }
                        Ok(Err(e)) => Err(e),
                        Err(_) => Ok(false),
                    },
                    // try_lock_for with a wait budget.
                    4..=6 => match lock.try_lock_for(give_up).await {
                        Ok(true) => {
                            tokio::time::sleep(hold).await;
                            lock.unlock().await.map(|_| true)
                        }
                        Ok(false) => Ok(false),
                        Err(e) => Err(e),
                    },
                    // A guard that is dropped, not unlocked (released in the background).
                    7..=8 => match tokio::time::timeout(give_up, lock.acquire()).await {
                        Ok(Ok(guard)) => {
                            tokio::time::sleep(hold).await;
                            drop(guard);
                            Ok(true)
                        }
                        Ok(Err(e)) => Err(e),
                        Err(_) => Ok(false),
                    },
                    // A lease-mode hold.
                    _ => match lock
                        .try_lock_with_lease(give_up, Duration::from_secs(5))
                        .await
                    {
                        Ok(true) => {
                            tokio::time::sleep(hold).await;
                            lock.unlock().await.map(|_| true)
                        }
                        Ok(false) => Ok(false),
                        Err(e) => Err(e),
                    },
                };
                match outcome {
                    Ok(true) => counters.acquired.fetch_add(1, Ordering::Relaxed),
                    Ok(false) => counters.cancelled.fetch_add(1, Ordering::Relaxed),
                    Err(error) => {
                        eprintln!("soak error: {error}");
                        counters.errors.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }

    let started = Instant::now();
    let mut samples = Vec::new();
    while started.elapsed() < Duration::from_secs(secs) {
        tokio::time::sleep(SAMPLE_EVERY).await;
        samples.push(Sample {
            rss_kib: rss_kib(),
            subscriptions: client.subscribed_channels(),
            tasks: runtime.metrics().num_alive_tasks(),
            renewed: client.renewed_locks(),
        });
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
    // Everything winds down once the work stops.
    let settled = eventually(Duration::from_secs(10), || async {
        client.subscribed_channels() == 0 && client.renewed_locks() == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let tasks_after = runtime.metrics().num_alive_tasks();
    let raw = server.raw().await;
    let left = lock_keys(&raw, &base).await;

    let window = samples
        .len()
        .min((10_000 / SAMPLE_EVERY.as_millis()) as usize);
    let (first, last) = (&samples[..window], &samples[samples.len() - window..]);
    let ops = counters.ops.load(Ordering::Relaxed);
    println!("soak: {secs} s, {TASKS} tasks, {NAMES} names");
    println!(
        "ops {ops} ({:.0}/s), acquired {}, gave up/cancelled {}, errors {}",
        ops as f64 / secs as f64,
        counters.acquired.load(Ordering::Relaxed),
        counters.cancelled.load(Ordering::Relaxed),
        counters.errors.load(Ordering::Relaxed)
    );
    println!("| metric | first 10 s (mean / max) | last 10 s (mean / max) |");
    println!("|---|---|---|");
    for (label, pick) in [
        (
            "resident memory (KiB)",
            (|s: &Sample| s.rss_kib) as fn(&Sample) -> u64,
        ),
        ("subscribed channels", |s: &Sample| s.subscriptions as u64),
        ("alive tokio tasks", |s: &Sample| s.tasks as u64),
        ("renewed locks", |s: &Sample| s.renewed as u64),
    ] {
        println!(
            "| {label} | {:.0} / {} | {:.0} / {} |",
            mean(first, pick),
            max(first, pick),
            mean(last, pick),
            max(last, pick)
        );
    }
    println!(
        "after stop: subscriptions {}, renewed {}, alive tasks {tasks_after} (idle before: {idle_tasks}), lock keys left {}",
        client.subscribed_channels(),
        client.renewed_locks(),
        left.len()
    );

    assert_eq!(counters.errors.load(Ordering::Relaxed), 0);
    assert!(
        settled,
        "subscriptions or renewals left after the work stopped"
    );
    let rss = (mean(first, |s| s.rss_kib), mean(last, |s| s.rss_kib));
    assert!(rss.1 <= rss.0 * 1.25 + 8_192.0, "memory grew: {rss:?} KiB");
    let tasks = (
        mean(first, |s| s.tasks as u64),
        mean(last, |s| s.tasks as u64),
    );
    assert!(tasks.1 <= tasks.0 * 1.25 + 16.0, "tasks grew: {tasks:?}");
    assert!(
        max(last, |s| s.subscriptions as u64) <= NAMES,
        "subscriptions unbounded"
    );
    assert!(
        tasks_after <= idle_tasks + 4,
        "tasks left: {tasks_after} vs {idle_tasks}"
    );
    // Dropped guards' releases ran; lease holds expire within 5 s of the stop.
    assert!(
        eventually(Duration::from_secs(8), || async {
            lock_keys(&raw, &base).await.is_empty()
        })
        .await,
        "lock keys left behind"
    );
    client.shutdown().await.unwrap();
}
