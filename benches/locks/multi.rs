//! MultiLock and RedLock: `multi_3_one_server` (a MultiLock of 3 RLocks on the bench's
//! server) and `redlock_3` (a RedLock of one name over the bench's server and two more
//! redis-servers started here), each one task looping `lock()` + `unlock()`.
//!
//! The target compares each group pair with a single RLock pair: members are locked
//! concurrently (on one server in one flush), so a pair of 3 members should cost little
//! more than a pair of 1: p50 ≤ 1.5 × the single pair's. The three pairs are timed in
//! rotation by one task, so they see the same moment and the same load (as
//! `fenced_uncontended_1` does); the ratio to the `uncontended_1` row is printed too.
//!
//! `faster_multi_100`: a faster multi-lock (`get_multi_lock`) of 100 values in one group,
//! one task looping `lock()` + `unlock()`, timed in rotation with a single RLock pair. One
//! script per operation however many values, but each script runs about five hash
//! commands per value (about 1,000 per pair), so the pair costs a few single pairs, not
//! 100 (as 100 RLocks would): target p50 ≤ 8 × the single pair's (first measured at 6.2×
//! on the shared 2-core machine: 1.66 ms against 0.27 ms).

use std::time::Duration;

use redisson_lock::{Client, Config, MultiLock, RedLock};
use serde_json::json;

use crate::Bench;
use crate::measure::{Rotation, percentile_us, rlock_pair, timed};
use crate::report::Bound::AtMost;
use crate::report::{Row, round1, round3};
use crate::support::RedisServer;

pub const SCENARIOS: &[&str] = &["multi_3_one_server", "redlock_3", "faster_multi_100"];

/// Target: a faster multi-lock pair of 100 values ≤ 8 × a single RLock pair (p50).
const MAX_FASTER_100_RATIO: f64 = 8.0;

/// Target: group pair p50 ≤ 1.5 × single RLock pair p50, measured interleaved.
const MAX_RATIO: f64 = 1.5;

pub async fn run(bench: &mut Bench) {
    run_groups(bench).await;
    run_faster_multi(bench).await;
}

/// `faster_multi_100`: one task times a single RLock pair and a faster multi-lock pair of
/// 100 values in rotation.
async fn run_faster_multi(bench: &mut Bench) {
    let scenario = "faster_multi_100";
    if !bench.wants(scenario) {
        return;
    }
    eprintln!("{scenario}");
    let settings = bench.settings;
    let warm = Duration::from_secs_f64(settings.warmup.min(1.0));
    let window = Duration::from_secs_f64(settings.secs.min(4.0));
    let client = bench.client.clone();
    let (single, faster) = tokio::spawn(async move {
        let single = client.get_lock("bench:faster_multi:single");
        let faster = client
            .get_multi_lock(
                "bench:faster_multi_100",
                (0..100).map(|i| format!("order:{i}")),
            )
            .expect("100 values");
        let mut rotation = Rotation::new(warm, window);
        while let Some(measured) = rotation.next_round() {
            let s = timed(rlock_pair(&single)).await;
            let f = timed(async {
                faster.lock().await.expect("faster multi lock");
                faster.unlock().await.expect("faster multi unlock");
            })
            .await;
            rotation.record(measured, [s, f]);
        }
        let [single, faster] = rotation.into_sorted();
        (single, faster)
    })
    .await
    .expect("faster_multi_100 task");
    let p50 = percentile_us(&faster, 50.0).unwrap_or(f64::NAN);
    let single_p50 = percentile_us(&single, 50.0).unwrap_or(f64::NAN);
    let ratio = p50 / single_p50;
    let mut row = Row::new(scenario);
    row.tasks = Some(1);
    let total_ns: u64 = faster.iter().sum();
    row.ops_per_s = Some(faster.len() as f64 / (total_ns as f64 / 1e9));
    row.p50_us = Some(p50);
    row.p99_us = percentile_us(&faster, 99.0);
    row.ratio = Some(ratio);
    row.ratio_to =
        "p50 faster multi-lock pair (100 values) / p50 single RLock pair (interleaved)".into();
    row.set("single_pair_p50_us", json!(round1(single_p50)));
    row.set("values", json!(100));
    if let Some(r) = bench.row("uncontended_1").and_then(|r| r.p50_us) {
        row.set("p50_vs_uncontended_1", json!(round3(p50 / r)));
    }
    row.notes = format!(
        "100 values in one group; p50 {p50:.0} µs = {ratio:.2} × a single pair ({single_p50:.0} µs), measured in rotation"
    );
    row.bound(ratio, 2, AtMost(MAX_FASTER_100_RATIO), |ratio, target| {
        format!(
            "{scenario}: p50 pair of 100 values = {ratio} × a single RLock pair (target {target})"
        )
    });
    bench.push(row);
}

/// `multi_3_one_server` and `redlock_3`.
async fn run_groups(bench: &mut Bench) {
    let multi = bench.wants("multi_3_one_server");
    let red = bench.wants("redlock_3");
    if !multi && !red {
        return;
    }
    eprintln!("multi_3_one_server / redlock_3");
    // Two more independent servers for the RedLock.
    let others = [RedisServer::start(), RedisServer::start()];
    let mut clients = vec![bench.client.clone()];
    for server in &others {
        let config = Config::from_url(&server.url()).expect("config");
        clients.push(Client::connect(config).await.expect("connect"));
    }
    let settings = bench.settings;
    let warm = Duration::from_secs_f64(settings.warmup.min(1.0));
    let window = Duration::from_secs_f64(settings.secs.min(4.0));
    let timed = {
        let clients = clients.clone();
        tokio::spawn(async move { interleaved(&clients, warm, window).await })
            .await
            .expect("interleaved task")
    };
    for (scenario, wanted, pairs) in [
        ("multi_3_one_server", multi, &timed.multi),
        ("redlock_3", red, &timed.red),
    ] {
        if !wanted {
            continue;
        }
        let p50 = percentile_us(pairs, 50.0).unwrap_or(f64::NAN);
        let single = percentile_us(&timed.single, 50.0).unwrap_or(f64::NAN);
        let ratio = p50 / single;
        let mut row = Row::new(scenario);
        row.tasks = Some(1);
        // One pair of each kind per rotation: pairs/s of this kind alone.
        let total_ns: u64 = pairs.iter().sum();
        row.ops_per_s = Some(pairs.len() as f64 / (total_ns as f64 / 1e9));
        row.p50_us = Some(p50);
        row.p99_us = percentile_us(pairs, 99.0);
        row.ratio = Some(ratio);
        row.ratio_to = "p50 group pair / p50 single RLock pair (measured interleaved)".into();
        row.set("single_pair_p50_us", json!(round1(single)));
        if let Some(r) = bench.row("uncontended_1").and_then(|r| r.p50_us) {
            row.set("p50_vs_uncontended_1", json!(round3(p50 / r)));
        }
        row.notes = format!(
            "3 members {}; p50 {:.0} µs = {:.2} × a single pair ({:.0} µs), measured in rotation",
            if scenario == "redlock_3" {
                "on 3 servers"
            } else {
                "on one server"
            },
            p50,
            ratio,
            single
        );
        row.bound(ratio, 2, AtMost(MAX_RATIO), |ratio, target| {
            format!("{scenario}: p50 pair = {ratio} × a single RLock pair (target {target})")
        });
        bench.push(row);
    }
    for client in &clients[1..] {
        let _ = client.shutdown().await;
    }
}

struct Timed {
    single: Vec<u64>,
    multi: Vec<u64>,
    red: Vec<u64>,
}

/// One task times a single RLock pair, a MultiLock pair and a RedLock pair in rotation.
async fn interleaved(clients: &[Client], warm: Duration, window: Duration) -> Timed {
    let home = &clients[0];
    let single = home.get_lock("bench:multi:single");
    let multi = MultiLock::new((0..3).map(|i| home.get_lock(format!("bench:multi_3:{i}"))))
        .expect("three distinct locks");
    let red =
        RedLock::new(clients.iter().map(|c| c.get_lock("bench:redlock_3"))).expect("three servers");
    let mut rotation = Rotation::new(warm, window);
    while let Some(measured) = rotation.next_round() {
        let s = timed(rlock_pair(&single)).await;
        let m = timed(async {
            multi.lock().await.expect("multi lock");
            multi.unlock().await.expect("multi unlock");
        })
        .await;
        let r = timed(async {
            red.lock().await.expect("redlock lock");
            red.unlock().await.expect("redlock unlock");
        })
        .await;
        rotation.record(measured, [s, m, r]);
    }
    let [single, multi, red] = rotation.into_sorted();
    Timed { single, multi, red }
}
