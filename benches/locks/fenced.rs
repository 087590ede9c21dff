//! FencedLock (`Lock<Fenced>`): `fenced_uncontended_1`, one task looping
//! `lock_and_get_token()` + `unlock()` on one name.
//!
//! Its target compares the fenced pair with RLock's pair (`uncontended_1`): the fenced
//! acquire script only adds an `INCR` of the token counter. Both pairs are timed in
//! rotation by one task (as `uncontended_1` times its pair against a PING), because two
//! scenarios measured a minute apart differ by more than the 10% the target allows on a
//! noisy machine; the ratio to the `uncontended_1` row is reported too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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

pub const SCENARIOS: &[&str] = &["fenced_uncontended_1"];

/// Target: fenced pair p50 ≤ 1.1 × RLock pair p50, measured interleaved.
const MAX_RATIO: f64 = 1.1;

pub async fn run(bench: &mut Bench) {
    if !bench.wants("fenced_uncontended_1") {
        return;
    }
    eprintln!("fenced_uncontended_1");
    let settings = bench.settings;
    let (rate, lat, tokens_ok) = fenced_pairs(settings, &bench.client).await;
    let mix = interleaved(settings, &bench.client).await;
    let mut row = Row::new("fenced_uncontended_1");
    row.tasks = Some(1);
    row.ops_per_s = Some(rate);
    set_cpu_per_op(&mut row, rate, settings);
    (row.p50_us, row.p99_us) = p50_p99(&lat);
    let ratio = mix.fenced_p50_us / mix.rlock_p50_us;
    row.ratio = Some(ratio);
    row.ratio_to = "p50 fenced pair / p50 RLock pair (measured interleaved)".into();
    row.set("interleaved_pair_p50_us", json!(round1(mix.fenced_p50_us)));
    row.set(
        "interleaved_rlock_pair_p50_us",
        json!(round1(mix.rlock_p50_us)),
    );
    row.set("interleaved_ping_p50_us", json!(round1(mix.ping_p50_us)));
    row.set(
        "interleaved_pair_p50_pings",
        json!(round3(mix.fenced_p50_us / mix.ping_p50_us)),
    );
    let vs_row = bench
        .row("uncontended_1")
        .and_then(|r| Some((r.p50_us?, row.p50_us? / r.p50_us?)));
    if let Some((p50, r)) = vs_row {
        row.set("uncontended_1_p50_us", json!(round1(p50)));
        row.set("p50_vs_uncontended_1", json!(round3(r)));
    }
    if let Some(limit) = bench.serial_limit() {
        row.set("pairs_vs_evalsha_c1_half", json!(round3(rate / limit)));
    }
    row.set("tokens_increasing", json!(tokens_ok));
    row.notes = format!(
        "interleaved p50s: fenced pair {:.0} µs = {:.3} × RLock pair ({:.0} µs) = {:.2} PING; {}tokens {}",
        mix.fenced_p50_us,
        ratio,
        mix.rlock_p50_us,
        mix.fenced_p50_us / mix.ping_p50_us,
        vs_row.map_or(String::new(), |(_, r)| format!(
            "p50 {r:.2} × uncontended_1's row; "
        )),
        if tokens_ok {
            "increasing"
        } else {
            "NOT INCREASING"
        }
    );
    row.bound(ratio, 3, AtMost(MAX_RATIO), |ratio, target| {
        format!("fenced_uncontended_1: p50 pair = {ratio} × RLock pair, measured interleaved (target {target})")
    });
    row.target(
        tokens_ok,
        "fenced_uncontended_1 every token greater than the last".into(),
    );
    bench.push(row);
}

/// One task: `lock_and_get_token()` + `unlock()`; pairs/s in the window, their latencies,
/// and whether every token was greater than the one before.
async fn fenced_pairs(settings: &Settings, client: &Client) -> (f64, Vec<u64>, bool) {
    let phase = Phase::new();
    let increasing = Arc::new(AtomicBool::new(true));
    let handles = spawn_laps(&phase, 1, |_, mut laps| {
        let lock = client.get_fenced_lock("bench:fenced_uncontended_1:0");
        let increasing = increasing.clone();
        async move {
            let mut last = 0u64;
            while let Some(lap) = laps.start() {
                let token = lock.lock_and_get_token().await.expect("lock_and_get_token");
                lock.unlock().await.expect("unlock");
                laps.end(lap);
                if token <= last {
                    increasing.store(false, Ordering::Relaxed);
                }
                last = token;
            }
            laps.into_ns()
        }
    });
    let window = drive(settings, &phase, async {}, async {}).await;
    let latencies = join_sorted(handles, "fenced task").await;
    (
        latencies.len() as f64 / window.as_secs_f64(),
        latencies,
        increasing.load(Ordering::Relaxed),
    )
}

struct Interleaved {
    fenced_p50_us: f64,
    rlock_p50_us: f64,
    ping_p50_us: f64,
}

/// p50s (µs) of a fenced pair, an RLock pair and a PING, timed in rotation by one task.
async fn interleaved(settings: &'static Settings, client: &Client) -> Interleaved {
    let client = client.clone();
    tokio::spawn(async move { interleaved_task(settings, &client).await })
        .await
        .expect("interleaved task")
}

async fn interleaved_task(settings: &Settings, client: &Client) -> Interleaved {
    let redis = client.redis();
    let fenced = client.get_fenced_lock("bench:interleaved_fenced");
    let rlock = client.get_lock("bench:interleaved_rlock");
    let mut rotation = Rotation::new(
        Duration::from_secs_f64(settings.warmup.min(1.0)),
        Duration::from_secs_f64(settings.secs.min(3.0)),
    );
    while let Some(measured) = rotation.next_round() {
        let fenced_pair = timed(async {
            fenced
                .lock_and_get_token()
                .await
                .expect("lock_and_get_token");
            fenced.unlock().await.expect("unlock");
        })
        .await;
        let rlock_pair = timed(rlock_pair(&rlock)).await;
        let ping = timed(ping(redis)).await;
        rotation.record(measured, [fenced_pair, rlock_pair, ping]);
    }
    let [f, r, p] = rotation.into_sorted();
    Interleaved {
        fenced_p50_us: p50_us(&f),
        rlock_p50_us: p50_us(&r),
        ping_p50_us: p50_us(&p),
    }
}
