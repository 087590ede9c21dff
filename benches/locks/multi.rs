//! MultiLock and RedLock: `multi_3_one_server` (a MultiLock of 3 RLocks on the bench's
//! server) and `redlock_3` (a RedLock of one name over the bench's server and two more
//! redis-servers started here), each one task looping `lock()` + `unlock()`.
//!
//! The target compares each group pair with a single RLock pair: members are locked
//! concurrently (on one server in one flush), so a pair of 3 members should cost little
//! more than a pair of 1: p50 ≤ 1.5 × the single pair's. The three pairs are timed in
//! rotation by one task, so they see the same moment and the same load (as
//! `fenced_uncontended_1` does); the ratio to the `uncontended_1` row is printed too.

use std::time::Duration;

use redisson_lock::{Client, Config, MultiLock, RedLock};
use serde_json::json;

use crate::measure::{percentile_us, rlock_pair, timed, Rotation};
use crate::report::Bound::AtMost;
use crate::report::{round1, round3, Row};
use crate::support::RedisServer;
use crate::Bench;

pub const SCENARIOS: &[&str] = &["multi_3_one_server", "redlock_3"];

/// Target: group pair p50 ≤ 1.5 × single RLock pair p50, measured interleaved.
const MAX_RATIO: f64 = 1.5;

pub async fn run(bench: &mut Bench) {
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
