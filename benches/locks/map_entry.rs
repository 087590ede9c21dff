//! A map entry's lock (`client.map(name).get_lock(key)`, Redisson's `RMap#getLock(key)`):
//! `map_entry_uncontended_1`, one task looping `lock()` + `unlock()` on one map key's
//! lock.
//!
//! The handle is an ordinary `RLock` on `{map}:<hash>:lock`, so its pair should cost what
//! `uncontended_1`'s does: the target compares the two pairs timed in rotation by one
//! task (as `fenced_uncontended_1` does), and the ratio to the `uncontended_1` row is
//! reported too. Making the handle (encoding the key with Kryo5, HighwayHash-128, the
//! name) is timed apart: `handle_ns`, the cost of Java's `map.getLock(key)` idiom when a
//! caller makes the handle for every pair.

use std::time::{Duration, Instant};

use redisson_lock::Client;
use serde_json::json;

use crate::Bench;
use crate::measure::{
    Phase, Rotation, drive, join_sorted, p50_p99, p50_us, ping, rlock_pair, set_cpu_per_op,
    spawn_laps, timed,
};
use crate::report::Bound::AtMost;
use crate::report::{Row, round1, round3};
use crate::settings::Settings;

pub const SCENARIOS: &[&str] = &["map_entry_uncontended_1"];

/// Target: the entry lock's pair p50 ≤ 1.1 × the RLock pair's, measured interleaved.
const MAX_RATIO: f64 = 1.1;

pub async fn run(bench: &mut Bench) {
    if !bench.wants("map_entry_uncontended_1") {
        return;
    }
    eprintln!("map_entry_uncontended_1");
    let settings = bench.settings;
    let (rate, lat) = entry_pairs(settings, &bench.client).await;
    let mix = interleaved(settings, &bench.client).await;
    let handle_ns = handle_cost(&bench.client);
    let mut row = Row::new("map_entry_uncontended_1");
    row.tasks = Some(1);
    row.ops_per_s = Some(rate);
    set_cpu_per_op(&mut row, rate, settings);
    (row.p50_us, row.p99_us) = p50_p99(&lat);
    let ratio = mix.entry_p50_us / mix.rlock_p50_us;
    row.ratio = Some(ratio);
    row.ratio_to = "p50 map-entry lock pair / p50 RLock pair (measured interleaved)".into();
    row.set("interleaved_pair_p50_us", json!(round1(mix.entry_p50_us)));
    row.set(
        "interleaved_rlock_pair_p50_us",
        json!(round1(mix.rlock_p50_us)),
    );
    row.set("interleaved_ping_p50_us", json!(round1(mix.ping_p50_us)));
    row.set("handle_ns", json!(round1(handle_ns)));
    let vs_row = bench
        .row("uncontended_1")
        .and_then(|r| Some((r.p50_us?, row.p50_us? / r.p50_us?, r.ops_per_s?)));
    if let Some((p50, r, ops)) = vs_row {
        row.set("uncontended_1_p50_us", json!(round1(p50)));
        row.set("p50_vs_uncontended_1", json!(round3(r)));
        row.set("pairs_vs_uncontended_1", json!(round3(rate / ops)));
    }
    row.notes = format!(
        "interleaved p50s: entry pair {:.0} µs = {:.3} × RLock pair ({:.0} µs); handle {:.0} ns{}",
        mix.entry_p50_us,
        ratio,
        mix.rlock_p50_us,
        handle_ns,
        vs_row.map_or(String::new(), |(_, r, _)| format!(
            "; p50 {r:.2} × uncontended_1's row"
        )),
    );
    row.bound(ratio, 3, AtMost(MAX_RATIO), |ratio, target| {
        format!("map_entry_uncontended_1: p50 pair = {ratio} × RLock pair, measured interleaved (target {target})")
    });
    bench.push(row);
}

/// One task: `lock()` + `unlock()` of one map key's lock; pairs/s in the window and their
/// latencies.
async fn entry_pairs(settings: &Settings, client: &Client) -> (f64, Vec<u64>) {
    let phase = Phase::new();
    let handles = spawn_laps(&phase, 1, |_, mut laps| {
        let lock = client
            .map("bench:map_entry_uncontended_1")
            .get_lock("o-1")
            .expect("a string key encodes");
        async move {
            while let Some(lap) = laps.start() {
                rlock_pair(&lock).await;
                laps.end(lap);
            }
            laps.into_ns()
        }
    });
    let window = drive(settings, &phase, async {}, async {}).await;
    let latencies = join_sorted(handles, "map entry task").await;
    (latencies.len() as f64 / window.as_secs_f64(), latencies)
}

/// The mean time (ns) to make a map entry's lock handle (no I/O).
fn handle_cost(client: &Client) -> f64 {
    let map = client.map("bench:map_entry_handles");
    let rounds = 20_000u32;
    let started = Instant::now();
    for i in 0..rounds {
        let lock = map.get_lock(i as i64).expect("a long key encodes");
        std::hint::black_box(lock);
    }
    started.elapsed().as_nanos() as f64 / f64::from(rounds)
}

struct Interleaved {
    entry_p50_us: f64,
    rlock_p50_us: f64,
    ping_p50_us: f64,
}

/// p50s (µs) of an entry lock pair, an RLock pair and a PING, timed in rotation by one
/// task.
async fn interleaved(settings: &'static Settings, client: &Client) -> Interleaved {
    let client = client.clone();
    tokio::spawn(async move { interleaved_task(settings, &client).await })
        .await
        .expect("interleaved task")
}

async fn interleaved_task(settings: &Settings, client: &Client) -> Interleaved {
    let redis = client.redis();
    let entry = client
        .map("bench:interleaved_map")
        .get_lock("o-1")
        .expect("a string key encodes");
    let rlock = client.get_lock("bench:interleaved_entry_rlock");
    let mut rotation = Rotation::new(
        Duration::from_secs_f64(settings.warmup.min(1.0)),
        Duration::from_secs_f64(settings.secs.min(3.0)),
    );
    while let Some(measured) = rotation.next_round() {
        let entry_pair = timed(rlock_pair(&entry)).await;
        let rlock_pair = timed(rlock_pair(&rlock)).await;
        let ping = timed(ping(redis)).await;
        rotation.record(measured, [entry_pair, rlock_pair, ping]);
    }
    let [e, r, p] = rotation.into_sorted();
    Interleaved {
        entry_p50_us: p50_us(&e),
        rlock_p50_us: p50_us(&r),
        ping_p50_us: p50_us(&p),
    }
}
