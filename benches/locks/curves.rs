//! Cost curves (issue 49): how a standing cost grows with the work. Opt-in, because a
//! million holds take minutes: `BENCH_ONLY=holds_curve`.
//!
//! `holds_curve`: one client holds N locks in watchdog mode (the default 30 s watchdog,
//! renewed every 10 s), N = 10,000, 100,000 and 1,000,000 (`BENCH_CURVE_HOLDS`, a comma
//! list, replaces them), one step after the other. Each step is a row `holds_<N>`: the
//! live heap and the VmRSS growth per hold (the handle the caller keeps included, as in
//! `memory`), the renewal scripts per period against the floor (N / batch size), this
//! process's CPU per period and per hold and period, the read-only checks per period, how
//! long the acquisitions took and how many failed, and how many holds were alive after
//! three renewal periods.

use std::time::{Duration, Instant};

use futures::StreamExt;
use redisson_lock::fred::interfaces::ServerInterface;
use serde_json::json;

use crate::alloc_count::Live;
use crate::measure::{cpu_time, vm_rss};
use crate::report::Bound::AtMost;
use crate::report::{Row, round1, round3};
use crate::server::{command_stats, lock_client, reset_stats, script_calls};
use crate::{Bench, Raw};

pub const SCENARIOS: &[&str] = &["holds_curve"];

/// The steps when `BENCH_CURVE_HOLDS` does not name others.
const STEPS: [usize; 3] = [10_000, 100_000, 1_000_000];
/// Issue 49's budget per hold at every step.
const MAX_BYTES_PER_HOLD: f64 = 1024.0;
/// How many renewal periods each step is measured over (a round starts a period after
/// the last one ended, so a short window may catch one round more or less).
const PERIODS: u32 = 3;

/// The watchdog's period with the default timeout (a third of it).
fn period() -> Duration {
    redisson_lock::config::DEFAULT_WATCHDOG_TIMEOUT / 3
}

pub async fn run(bench: &mut Bench) {
    // Only when named: a plain run would spend minutes here.
    if !bench.settings.names("holds_curve") {
        return;
    }
    let steps: Vec<usize> = std::env::var("BENCH_CURVE_HOLDS")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| STEPS.to_vec());
    for n in steps {
        eprintln!("holds_curve: {n} holds");
        let row = step(&bench.url, &bench.raw, n).await;
        bench.push(row);
    }
}

/// Runs `calls`, 512 at a time, and counts those that failed: counted, not fatal, since
/// how many fail (a response timeout behind a renewal round) is one of the figures.
async fn failures<T>(
    calls: impl Iterator<Item = impl std::future::Future<Output = redisson_lock::Result<T>>>,
) -> u64 {
    futures::stream::iter(calls)
        .buffer_unordered(512)
        .fold(
            0u64,
            |errors, r| async move { errors + u64::from(r.is_err()) },
        )
        .await
}

/// One step: `n` holds taken, measured, given back.
async fn step(url: &str, raw: &Raw, n: usize) -> Row {
    let client = lock_client(url, |c| c).await;
    let keys_before: u64 = raw.dbsize().await.expect("DBSIZE");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (heap0, rss0) = (Live::now(), vm_rss().unwrap_or(0));
    let locks = crate::watchdog::held_handles(&client, &format!("bench:curve:{n}"), n);
    let started = Instant::now();
    let lock_errors = failures(locks.iter().map(|l| l.lock())).await;
    let acquire_s = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (heap_allocs, heap_bytes) = Live::now().per(heap0, n);
    let rss_bytes = vm_rss().unwrap_or(0).saturating_sub(rss0) as f64 / n as f64;

    // Three renewal periods from half a period after the first round (which comes a
    // period after the first hold): the window then holds three rounds whole, unless the
    // rounds fall behind, which is what it shows.
    tokio::time::sleep_until((started + period() * 3 / 2).into()).await;
    reset_stats(raw).await;
    let cpu0 = cpu_time().unwrap_or_default();
    let hold = Instant::now();
    tokio::time::sleep(period() * PERIODS).await;
    let cpu = cpu_time().unwrap_or_default().saturating_sub(cpu0);
    let hold_s = hold.elapsed().as_secs_f64();
    let stats = command_stats(raw).await;
    let keys_after: u64 = raw.dbsize().await.expect("DBSIZE");
    let alive = keys_after.saturating_sub(keys_before);
    let renewed = client.renewed_locks();

    let released = Instant::now();
    let unlock_errors = failures(locks.iter().map(|l| l.unlock())).await;
    let release_s = released.elapsed().as_secs_f64();
    client.shutdown().await.expect("shutdown");
    drop(locks);

    let periods = hold_s / period().as_secs_f64();
    let scripts_per_period = script_calls(&stats) as f64 / periods;
    let checks_per_period = stats.get("evalsha_ro").copied().unwrap_or(0) as f64 / periods;
    let floor = (n as f64 / redisson_lock::config::DEFAULT_RENEWAL_BATCH_SIZE as f64).ceil();
    let cpu_ms_per_period = cpu.as_secs_f64() * 1000.0 / periods;
    let cpu_ns_per_hold_period = cpu_ms_per_period * 1e6 / n as f64;
    let mut row = Row::new(&format!("holds_{n}"));
    row.tasks = Some(n);
    row.ratio = Some(scripts_per_period / floor);
    row.ratio_to = "renewal scripts per period / (holds / batch size)".into();
    row.set("holds", json!(n));
    row.set("heap_bytes_per_hold", json!(heap_bytes.round()));
    row.set("heap_allocations_per_hold", json!(round1(heap_allocs)));
    row.set("rss_bytes_per_hold", json!(rss_bytes.round()));
    row.set("acquire_all_s", json!(round3(acquire_s)));
    row.set("release_all_s", json!(round3(release_s)));
    row.set(
        "renewal_scripts_per_period",
        json!(round1(scripts_per_period)),
    );
    row.set("cpu_ms_per_period", json!(round1(cpu_ms_per_period)));
    row.set(
        "cpu_ns_per_hold_per_period",
        json!(round1(cpu_ns_per_hold_period)),
    );
    row.set("checks_per_period", json!(round1(checks_per_period)));
    row.set("lock_errors", json!(lock_errors));
    row.set("unlock_errors", json!(unlock_errors));
    row.set("commandstats", json!(stats));
    row.set("alive_after", json!(alive));
    row.set("renewed_after", json!(renewed));
    row.notes = format!(
        "heap {heap_bytes:.0} B ({heap_allocs:.1} allocations), VmRSS {rss_bytes:.0} B per hold; {scripts_per_period:.0} renewal scripts per period (floor {floor:.0}); CPU {cpu_ms_per_period:.0} ms per period = {cpu_ns_per_hold_period:.0} ns per hold; {checks_per_period:.0} checks per period; taken in {acquire_s:.1} s ({lock_errors} failed), given back in {release_s:.1} s ({unlock_errors} failed); {alive}/{n} alive after {periods:.1} periods"
    );
    row.bound(rss_bytes, 0, AtMost(MAX_BYTES_PER_HOLD), |bytes, target| {
        format!("holds_{n}: {bytes} B of VmRSS per hold (target {target})")
    });
    row.target(
        lock_errors == 0 && alive == n as u64,
        format!(
            "holds_{n}: every acquisition answered, every hold alive after the renewal periods"
        ),
    );
    row
}
