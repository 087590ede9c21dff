//! Told at once: `told_at_once`, the time from another client's change of a held lock to
//! the holder's first signal (`at_risk()`, which a loss completes too), with key tracking
//! on (issue 48's target: p99 at most 50 ms, where the next renewal came 9.7 s later).
//!
//! One task holds a lock (watchdog mode) beside [`BESIDE`] other held locks of the same
//! client (so that a check finds the hold among others); each round the bench's raw
//! connection changes it, in turn `DEL`, `UNLINK`, `HDEL` of the owner's field and
//! `PEXPIRE 100`, and the time from sending the change to the signal is taken. The ratio
//! is the p99 in PING round trips (the invalidation, the check's script and its reply
//! are about three). Skipped with `BENCH_NO_TRACKING` (nothing would come for 10 s).

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use serde_json::json;

use crate::Bench;
use crate::measure::{ns, rounds_row};
use crate::report::{Bound::AtMost, round1};

pub const SCENARIOS: &[&str] = &["told_at_once"];

/// Locks held beside the measured one.
const BESIDE: usize = 100;
/// Issue 48's bound on the p99, in ms.
const P99_TARGET_MS: f64 = 50.0;
/// How long a round waits for the signal before it counts as never told.
const GIVE_UP: Duration = Duration::from_secs(2);

pub async fn run(bench: &mut Bench) {
    let scenario = "told_at_once";
    if !bench.wants(scenario) {
        return;
    }
    if std::env::var_os("BENCH_NO_TRACKING").is_some() {
        eprintln!("{scenario}: skipped (BENCH_NO_TRACKING)");
        return;
    }
    eprintln!("{scenario}");
    let client = &bench.client;
    let mut beside = Vec::with_capacity(BESIDE);
    for i in 0..BESIDE {
        let lock = client.get_lock(format!("bench:told:beside:{i}"));
        beside.push(lock.acquire().await.expect("acquire beside"));
    }
    let warm_until = Instant::now() + Duration::from_secs_f64(bench.settings.warmup);
    let mut measuring_since = None;
    let (mut times, mut never, mut round) = (Vec::new(), 0u64, 0u64);
    loop {
        let now = Instant::now();
        if now >= warm_until && measuring_since.is_none() {
            measuring_since = Some(now);
        }
        if measuring_since.is_some_and(|t| t.elapsed().as_secs_f64() >= bench.settings.secs) {
            break;
        }
        let name = format!("bench:told:{}", round % 16);
        let guard = client.get_lock(&name).acquire().await.expect("acquire");
        let field = format!("{}:{}", client.id(), guard.owner());
        let t0 = Instant::now();
        let change: Result<Value, _> = match round % 4 {
            0 => bench.raw.del(&name).await,
            1 => bench.raw.unlink(&name).await,
            2 => bench.raw.hdel(&name, &field).await,
            _ => bench.raw.pexpire(&name, 100, None).await,
        };
        change.expect("the change");
        let told = tokio::time::timeout(GIVE_UP, guard.at_risk()).await;
        let took = t0.elapsed();
        if measuring_since.is_some() {
            match told {
                Ok(_) => times.push(ns(took)),
                Err(_) => never += 1,
            }
        }
        // Lost (nothing to give back) or shortened (given back now).
        let _ = guard.unlock().await;
        round += 1;
    }
    let elapsed = measuring_since.map_or(0.0, |t| t.elapsed().as_secs_f64());
    for guard in beside {
        guard.unlock().await.expect("unlock beside");
    }
    times.sort_unstable();
    let rounds = times.len() as u64 + never;
    let mut row = rounds_row(bench, scenario, 1, rounds, elapsed, &times);
    row.ratio = row.p99_us.map(|p| p / bench.ping);
    row.ratio_to = "PING round trip p50 (p99 change-to-signal, in round trips)".into();
    row.set("never_told", json!(never));
    row.set("held_beside", json!(BESIDE));
    row.set(
        "max_us",
        json!(times.last().map(|&t| round1(t as f64 / 1e3))),
    );
    row.notes = format!(
        "ops = rounds/s (acquire, another connection's DEL / UNLINK / HDEL / PEXPIRE 100, the holder's first signal, unlock); p50/p99 = change sent to at_risk(); {BESIDE} other locks held; PING p50 {:.1} µs",
        bench.ping
    );
    let p99_ms = row.p99_us.unwrap_or(f64::INFINITY) / 1e3;
    row.bound(p99_ms, 1, AtMost(P99_TARGET_MS), |p99, target| {
        format!("told_at_once: p99 change to first signal = {p99} ms (target {target})")
    });
    row.target(
        never == 0,
        format!("told_at_once: every change told within {GIVE_UP:?} ({never} not)"),
    );
    bench.push(row);
}
