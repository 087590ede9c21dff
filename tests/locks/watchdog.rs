//! The watchdog (renewal registry) against a real redis-server, with a 900 ms watchdog
//! timeout, so renewal runs every 300 ms.
//!
//! Timing assertions leave generous slack: the machine that runs these may be loaded.

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Error};
use tokio::time::Instant;

/// The watchdog timeout used throughout (the lease of a watchdog-held lock).
const TIMEOUT: Duration = Duration::from_millis(900);
/// The renewal period: a third of the timeout.
const PERIOD: Duration = Duration::from_millis(300);
/// Extra time granted to anything that should happen "within" a bound.
const SLACK: Duration = Duration::from_millis(1000);
/// The lowest PTTL a continuously renewed lock may show: a third of the timeout, minus a
/// little for a loaded machine.
const MIN_HEALTHY_PTTL: i64 = 250;

async fn client(server: &RedisServer) -> Client {
    server
        .client_with(server.config().watchdog_timeout(TIMEOUT))
        .await
}

/// This file's set-up: a server, a client of [`client`]'s settings, a raw client, a name.
async fn bed(what: &str) -> Bed {
    Bed::with_config(what, |c| c.watchdog_timeout(TIMEOUT)).await
}

fn field(client: &Client, lock: &redisson_lock::RLock) -> String {
    format!("{}:{}", client.id(), lock.owner())
}

/// Resets `INFO commandstats` after a short pause (so that a renewal round that was
/// already in flight when the caller's unlock returned is not counted), waits three
/// renewal periods and more, and returns the script calls seen meanwhile.
async fn scripts_over_three_periods(raw: &fred::prelude::Client) -> u64 {
    tokio::time::sleep(Duration::from_millis(50)).await;
    reset_stats(raw).await;
    tokio::time::sleep(PERIOD * 3 + PERIOD / 2).await;
    script_calls(raw).await
}

/// The script calls over two renewal periods (after the same short pause): a hold still
/// registered would be renewed in the first round that comes, within one period.
async fn scripts_over_two_periods(raw: &fred::prelude::Client) -> u64 {
    tokio::time::sleep(Duration::from_millis(50)).await;
    reset_stats(raw).await;
    tokio::time::sleep(PERIOD * 2).await;
    script_calls(raw).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_lock_is_renewed_and_never_runs_low() {
    let Bed(_server, client, raw, name) = bed("watchdog-hold").await;
    let lock = client.get_lock(&name);

    lock.lock().await.unwrap();
    assert_eq!(client.renewed_locks(), 1);
    let start = Instant::now();
    let mut samples = 0;
    let mut lowest = i64::MAX;
    while start.elapsed() < TIMEOUT * 5 {
        let ttl = pttl(&raw, &name).await;
        assert!(
            ttl >= MIN_HEALTHY_PTTL,
            "PTTL fell to {ttl} ms after {:?} (lowest so far {lowest} ms)",
            start.elapsed()
        );
        lowest = lowest.min(ttl);
        samples += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(samples >= 20, "only {samples} samples");
    println!("lowest PTTL in {samples} samples: {lowest} ms");
    // Renewal re-arms the full timeout, never more.
    assert!(pttl(&raw, &name).await <= TIMEOUT.as_millis() as i64);
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field(&client, &lock), "1".to_string())]
    );
    assert_eq!(client.renewed_locks(), 1);

    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn no_renewal_after_the_last_unlock() {
    let Bed(_server, client, raw, name) = bed("watchdog-unlock").await;
    let lock = client.get_lock(&name);

    lock.lock().await.unwrap();
    assert!(rearmed(&raw, &name).await, "the hold was not renewed");
    lock.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    assert_eq!(scripts_over_two_periods(&raw).await, 0);
    assert!(!exists(&raw, &name).await);
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn reentrant_hold_is_renewed_until_its_last_unlock() {
    let Bed(_server, client, raw, name) = bed("watchdog-reentry").await;
    let lock = client.get_lock(&name);

    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    assert_eq!(client.renewed_locks(), 1, "one entry per (lock, owner)");
    lock.unlock().await.unwrap();

    // One hold left: still renewed, past the timeout.
    assert_eq!(client.renewed_locks(), 1);
    assert!(
        rearmed(&raw, &name).await,
        "the remaining hold was not renewed"
    );
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field(&client, &lock), "1".to_string())]
    );
    assert!(pttl(&raw, &name).await >= MIN_HEALTHY_PTTL);

    // The last unlock: nothing touches the key any more.
    lock.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    assert_eq!(scripts_over_two_periods(&raw).await, 0);
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_unlock_churn_leaves_nothing_registered() {
    // Many short holds while the timer runs (kept busy by one long hold): every unlock
    // removes its registration, so only the long hold is renewed afterwards.
    let Bed(_server, client, raw, _) = bed("bed").await;
    let long = client.get_lock(key("watchdog-churn-long"));
    long.lock().await.unwrap();

    let workers: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let name = key(&format!("watchdog-churn-{i}"));
                let lock = client.get_lock(&name);
                for _ in 0..25 {
                    lock.lock().await.unwrap();
                    lock.unlock().await.unwrap();
                }
                name
            })
        })
        .collect();
    let mut names = Vec::new();
    for worker in workers {
        names.push(worker.await.unwrap());
    }
    assert_eq!(client.renewed_locks(), 1);
    // One renewal script per round (for the long hold), at most one round per period.
    let scripts = scripts_over_three_periods(&raw).await;
    assert!((1..=5).contains(&scripts), "{scripts} renewal scripts");
    for name in &names {
        assert!(!exists(&raw, name).await, "{name} is still there");
    }
    assert_eq!(client.renewed_locks(), 1);
    long.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

/// Holds 1,000 locks and checks how many renewal scripts a period costs.
async fn renewal_is_batched(batch_size: Option<usize>, per_round: u64) {
    let server = RedisServer::start();
    let mut config = server.config().watchdog_timeout(TIMEOUT);
    if let Some(size) = batch_size {
        config = config.renewal_batch_size(size);
    }
    let client = server.client_with(config).await;
    let raw = server.raw().await;
    let names: Vec<String> = (0..1000)
        .map(|i| key(&format!("watchdog-many-{i}")))
        .collect();
    let locks: Vec<_> = names.iter().map(|n| client.get_lock(n)).collect();
    for result in futures::future::join_all(locks.iter().map(|l| l.lock())).await {
        result.unwrap();
    }
    assert_eq!(client.renewed_locks(), 1000);

    let periods = 6u32;
    let start = Instant::now();
    reset_stats(&raw).await;
    tokio::time::sleep(PERIOD * periods).await;
    let scripts = script_calls(&raw).await;
    let elapsed = start.elapsed();
    println!("{scripts} renewal scripts for 1000 locks in {elapsed:?}");

    // Rounds start at least one period apart (the timer sleeps a full period after each
    // round), so a window of `elapsed` sees at most floor(elapsed / period) + 1 of them.
    let max_rounds = (elapsed.as_millis() / PERIOD.as_millis()) as u64 + 1;
    assert!(
        scripts <= per_round * max_rounds,
        "{scripts} renewal scripts in {elapsed:?}: more than {per_round} per round"
    );
    // And the watchdog did run about once a period (a round may come late on a loaded
    // machine, hence a 100 ms allowance per round and one round less).
    let min_rounds =
        (elapsed.as_millis() / (PERIOD + Duration::from_millis(100)).as_millis()) as u64 - 1;
    assert!(
        scripts >= per_round * min_rounds,
        "only {scripts} renewal scripts in {elapsed:?} (expected {per_round} per round)"
    );

    // Every lock outlived the timeout, so every one of them was renewed.
    let ttls =
        futures::future::join_all(names.iter().map(|n| raw.pttl::<i64, _>(n.as_str()))).await;
    for (name, ttl) in names.iter().zip(ttls) {
        let ttl = ttl.unwrap();
        assert!(ttl > 0, "{name} was not renewed (PTTL {ttl})");
    }
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_locks_cost_ten_scripts_per_period() {
    renewal_is_batched(None, 10).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_locks_in_batches_of_250_cost_four_scripts_per_period() {
    renewal_is_batched(Some(250), 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_key_is_reported_lost_within_a_period() {
    let Bed(_server, client, raw, name) = bed("watchdog-lost").await;
    let lock = client.get_lock(&name);

    let guard = lock.acquire().await.unwrap();
    assert!(!guard.is_lost());
    // Half-way between two renewal rounds.
    tokio::time::sleep(PERIOD + PERIOD / 2).await;
    assert!(!guard.is_lost());

    let deleted: i64 = raw.del(&name).await.unwrap();
    assert_eq!(deleted, 1);
    let deleted_at = Instant::now();
    tokio::time::timeout(PERIOD * 2 + SLACK, guard.lost())
        .await
        .expect("the loss was not reported within a renewal period");
    println!("loss reported {:?} after the DEL", deleted_at.elapsed());
    assert!(guard.is_lost());
    assert_eq!(client.renewed_locks(), 0);
    // The renewal script re-arms only a lock whose owner field exists: no resurrection.
    assert!(!exists(&raw, &name).await);
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner { .. })));
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_survives_killed_connections() {
    let Bed(_server, client, raw, name) = bed("watchdog-kill").await;
    let lock = client.get_lock(&name);

    let guard = lock.acquire().await.unwrap();
    let start = Instant::now();
    let mut kills = 0;
    let mut next_kill = start + PERIOD / 2;
    while start.elapsed() < TIMEOUT * 3 {
        if kills < 3 && Instant::now() >= next_kill {
            let killed: i64 = raw
                .custom(fred::cmd!("CLIENT"), vec!["KILL", "TYPE", "normal"])
                .await
                .unwrap();
            assert!(
                killed >= 1,
                "CLIENT KILL found no connection of the lock client"
            );
            kills += 1;
            next_kill += TIMEOUT * 2 / 3;
        }
        assert!(
            exists(&raw, &name).await,
            "the lock expired {:?} into the hold ({kills} kills)",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(kills, 3);
    // A kill may cost a round, never the lock: it is re-armed again.
    assert!(rearmed(&raw, &name).await, "not renewed after the kills");
    let ttl = pttl(&raw, &name).await;
    assert!(ttl >= MIN_HEALTHY_PTTL, "PTTL {ttl} ms after the kills");
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(
            format!("{}:{}", client.id(), guard.owner()),
            "1".to_string()
        )]
    );
    assert!(!guard.is_lost());
    assert_eq!(client.renewed_locks(), 1);
    guard.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_renewal_is_retried_not_fatal() {
    init_tracing();
    // CLIENT PAUSE WRITE holds every script longer than the response timeout, so at least
    // one renewal round fails with a timeout. That must neither lose the lock nor stop its
    // renewal (Redisson 3.44+; 3.23.3 gave up on the first error).
    let Bed(_server, client, raw, name) = Bed::with_config("watchdog-pause", |c| {
        c.watchdog_timeout(TIMEOUT)
            .response_timeout(Duration::from_millis(100))
    })
    .await;
    let lock = client.get_lock(&name);

    let guard = lock.acquire().await.unwrap();
    assert!(rearmed(&raw, &name).await, "the hold was not renewed");
    // Longer than a period (so a round starts inside it), short enough for the lease.
    let _: () = raw
        .custom(fred::cmd!("CLIENT"), vec!["PAUSE", "450", "WRITE"])
        .await
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < TIMEOUT * 2 {
        assert!(
            exists(&raw, &name).await,
            "the lock expired {:?} after the pause began",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ttl = pttl(&raw, &name).await;
    assert!(ttl >= MIN_HEALTHY_PTTL, "PTTL {ttl} ms after the pause");
    assert!(!guard.is_lost());
    assert_eq!(client.renewed_locks(), 1);
    guard.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_client_stops_renewal() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let name = key("watchdog-drop-client");
    {
        let client = client(&server).await;
        let lock = client.get_lock(&name);
        lock.lock().await.unwrap();
        assert!(rearmed(&raw, &name).await, "the hold was not renewed");
        assert!(exists(&raw, &name).await);
        // Every handle goes, without an unlock.
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    reset_stats(&raw).await;
    let took = gone_within(&raw, &name, TIMEOUT + SLACK)
        .await
        .expect("the lock of a dropped client did not expire");
    println!("expired {took:?} after the drop");
    assert_eq!(script_calls(&raw).await, 0, "a dropped client still renews");
}

#[test]
fn stopped_runtime_stops_renewal() {
    // A "process" of its own: a multi-thread runtime that takes a lock and then stops
    // without unlocking. Its client handle stays alive: only the runtime is gone.
    let server = RedisServer::start();
    let url = server.url();
    let name = key("watchdog-runtime");
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let process = {
        let name = name.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let (client, lock) = runtime.block_on(async {
                let config = redisson_lock::Config::builder()
                    .url(url)
                    .watchdog_timeout(TIMEOUT);
                let client = Client::connect(config.build().unwrap()).await.unwrap();
                let lock = client.get_lock(&name);
                lock.lock().await.unwrap();
                tokio::time::sleep(PERIOD * 2).await;
                (client, lock)
            });
            runtime.shutdown_background();
            held_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            drop((lock, client));
        })
    };
    let checker = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    held_rx.recv().unwrap();
    checker.block_on(async {
        let raw = server.raw().await;
        let took = gone_within(&raw, &name, TIMEOUT + SLACK)
            .await
            .expect("the lock of a stopped runtime did not expire");
        println!("expired {took:?} after the runtime stopped");
    });
    done_tx.send(()).unwrap();
    process.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_renewal_and_reports_loss() {
    let Bed(_server, client, raw, name) = bed("watchdog-shutdown").await;
    let lock = client.get_lock(&name);

    let guard = lock.acquire().await.unwrap();
    assert!(rearmed(&raw, &name).await, "the hold was not renewed");
    assert!(!guard.is_lost());
    client.shutdown().await.unwrap();

    assert!(guard.is_lost());
    tokio::time::timeout(Duration::from_millis(100), guard.lost())
        .await
        .expect("lost() did not complete after shutdown");
    assert_eq!(client.renewed_locks(), 0);
    // Shutdown does not release (as in Redisson): the lease ends the lock.
    assert!(exists(&raw, &name).await);
    reset_stats(&raw).await;
    let took = gone_within(&raw, &name, TIMEOUT + SLACK)
        .await
        .expect("the lock of a shut-down client did not expire");
    println!("expired {took:?} after the shutdown");
    assert_eq!(script_calls(&raw).await, 0);
    drop(guard);
}

#[tokio::test]
async fn force_unlock_stops_renewal() {
    let Bed(_server, client, raw, name) = bed("watchdog-force").await;
    let lock = client.get_lock(&name);

    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    assert!(rearmed(&raw, &name).await, "the hold was not renewed");
    assert!(lock.force_unlock().await.unwrap());
    assert_eq!(client.renewed_locks(), 0, "force_unlock drops every hold");
    assert!(!exists(&raw, &name).await);
    assert_eq!(scripts_over_two_periods(&raw).await, 0);

    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}
