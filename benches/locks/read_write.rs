//! ReadWriteLock (`Lock<Read>` / `Lock<Write>` on one name): `rw_read_16` (16 readers)
//! and `rw_mixed_16` (1 writer, 15 readers).
//!
//! * `rw_read_16`: readers share the lock, so 16 readers on one name should go about as
//!   fast as 16 tasks on 16 names (`distinct_16`); the read scripts do more than RLock's
//!   (a hold key per read), hence the target of at least half of `distinct_16`'s pairs/s.
//!   If `distinct_16` is not selected it is measured here too (no row of its own).
//! * `rw_mixed_16`: the writer's wait. Redisson's read-write lock prefers readers (a read
//!   is granted whenever the mode is `read`, waiting writers or not), so a writer gets in
//!   only when the readers' holds happen to drain. The target bounds its p99 wait at 100
//!   PING round trips (the interleaved PING of `uncontended_1`, about 20 ms here): about
//!   six rounds of 15 readers' round trips; a starved writer (waits of seconds) misses
//!   it by far. A writer wait still running when the window closes is counted when it
//!   ends (the readers stop then), so starvation cannot hide.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use serde_json::json;

use crate::Bench;
use crate::measure::{
    MEASURE, Phase, STOP, WARMUP, drive_counted, join_sorted, ns, p50_p99, percentile_us,
    set_cpu_per_op, spawn_laps,
};
use crate::reentrant::pairs;
use crate::report::Bound::{AtLeast, AtMost};
use crate::report::{Row, fmt_opt, round1, round3};
use crate::server::{client_commands, script_calls};

pub const SCENARIOS: &[&str] = &["rw_read_16", "rw_mixed_16"];

/// Target: rw_read_16 reads/s ≥ this share of distinct_16 pairs/s.
const MIN_READ_SHARE: f64 = 0.5;
/// Target: rw_mixed_16 writer p99 wait ≤ this many PING round trips.
const MAX_WRITER_P99_PINGS: f64 = 100.0;

pub async fn run(bench: &mut Bench) {
    if bench.wants("rw_read_16") {
        read_16(bench).await;
    }
    if bench.wants("rw_mixed_16") {
        mixed_16(bench).await;
    }
}

// ---- rw_read_16 -------------------------------------------------------------------------

async fn read_16(bench: &mut Bench) {
    let scenario = "rw_read_16";
    let tasks = 16;
    eprintln!("{scenario}");
    let settings = bench.settings;
    let rw = bench.client.get_read_write_lock("bench:rw_read_16");
    let phase = Phase::new();
    let handles = spawn_laps(&phase, tasks, |_, mut laps| {
        let read = rw.read_lock();
        async move {
            while let Some(lap) = laps.start() {
                read.lock().await.expect("read lock");
                read.unlock().await.expect("read unlock");
                laps.end(lap);
            }
            laps.into_ns()
        }
    });
    let (window, stats) = drive_counted(settings, &phase, &bench.raw).await;
    let lat = join_sorted(handles, "reader task").await;
    let reads = lat.len() as u64;
    let rate = reads as f64 / window.as_secs_f64();

    let (distinct, source) = match bench.row("distinct_16").and_then(|r| r.ops_per_s) {
        Some(rate) => (rate, "row"),
        None => {
            eprintln!("  distinct_16 (reference for {scenario})");
            let (rate, _) = pairs(settings, &bench.client, "distinct_16", 16, None).await;
            (rate, "measured alongside")
        }
    };
    let share = rate / distinct;
    let per_read = |x: u64| x as f64 / reads.max(1) as f64;

    let mut row = Row::new(scenario);
    row.tasks = Some(tasks);
    row.ops_per_s = Some(rate);
    set_cpu_per_op(&mut row, rate, settings);
    (row.p50_us, row.p99_us) = p50_p99(&lat);
    row.ratio = Some(share);
    row.ratio_to = "reads/s / distinct_16 pairs/s (same run)".into();
    row.set("distinct_16_pairs_per_s", json!(round1(distinct)));
    row.set("distinct_16_source", json!(source));
    row.set(
        "scripts_per_read",
        json!(round3(per_read(script_calls(&stats)))),
    );
    row.set(
        "client_commands_per_read",
        json!(round3(per_read(client_commands(&stats)))),
    );
    if let Some(limit) = bench.parallel_limit() {
        row.set("reads_vs_evalsha_c50_p16_half", json!(round3(rate / limit)));
    }
    row.set("commandstats", json!(stats));
    row.notes = format!(
        "{:.0}% of distinct_16 ({:.0} pairs/s, {source}); {:.2} scripts, {:.2} commands sent per read",
        100.0 * share,
        distinct,
        per_read(script_calls(&stats)),
        per_read(client_commands(&stats))
    );
    row.bound(100.0 * share, 0, AtLeast(100.0 * MIN_READ_SHARE), |pct, target| {
        format!("rw_read_16: {rate:.0} reads/s = {pct}% of distinct_16's {distinct:.0} pairs/s (target {target}%)")
    });
    bench.push(row);
}

// ---- rw_mixed_16 ------------------------------------------------------------------------

async fn mixed_16(bench: &mut Bench) {
    let scenario = "rw_mixed_16";
    let readers = 15;
    eprintln!("{scenario}");
    let settings = bench.settings;
    let rw = bench.client.get_read_write_lock("bench:rw_mixed_16");
    let phase = Phase::new();
    // Who is inside right now, by the tasks' own account: a reader and the writer inside
    // at once means the lock failed to exclude.
    let readers_in = Arc::new(AtomicU64::new(0));
    let writer_in = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicU64::new(0));

    let reader_handles = spawn_laps(&phase, readers, |_, mut laps| {
        let read = rw.read_lock();
        let (readers_in, writer_in, overlaps) =
            (readers_in.clone(), writer_in.clone(), overlaps.clone());
        async move {
            while let Some(lap) = laps.start() {
                read.lock().await.expect("read lock");
                readers_in.fetch_add(1, Ordering::SeqCst);
                if writer_in.load(Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                readers_in.fetch_sub(1, Ordering::SeqCst);
                read.unlock().await.expect("read unlock");
                laps.end(lap);
            }
            laps.into_ns()
        }
    });
    let writer = {
        let write = rw.write_lock();
        let (phase, readers_in, writer_in, overlaps) = (
            phase.clone(),
            readers_in.clone(),
            writer_in.clone(),
            overlaps.clone(),
        );
        tokio::spawn(async move {
            // (waits that overlap the window, writes counted in it)
            let (mut waits, mut writes) = (Vec::new(), 0u64);
            loop {
                let at_start = phase.get();
                if at_start == STOP {
                    break;
                }
                let t0 = Instant::now();
                write.lock().await.expect("write lock");
                let wait = ns(t0.elapsed());
                let at_lock = phase.get();
                writer_in.store(true, Ordering::SeqCst);
                if readers_in.load(Ordering::SeqCst) > 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                writer_in.store(false, Ordering::SeqCst);
                write.unlock().await.expect("write unlock");
                if at_lock != WARMUP {
                    waits.push(wait);
                }
                if at_start == MEASURE && phase.get() == MEASURE {
                    writes += 1;
                }
            }
            (waits, writes)
        })
    };
    let (window, stats) = drive_counted(settings, &phase, &bench.raw).await;
    let read_lat = join_sorted(reader_handles, "reader task").await;
    let (mut waits, writes) = writer.await.expect("writer task");
    waits.sort_unstable();
    let secs = window.as_secs_f64();
    let (reads_per_s, writes_per_s) = (read_lat.len() as f64 / secs, writes as f64 / secs);
    let ping = bench.ping;
    let p99 = percentile_us(&waits, 99.0);
    let max = waits.last().map(|&w| w as f64 / 1000.0);
    let p99_pings = p99.map_or(f64::NAN, |w| w / ping);
    let overlaps = overlaps.load(Ordering::SeqCst);

    let mut row = Row::new(scenario);
    row.tasks = Some(readers + 1);
    row.ops_per_s = Some(reads_per_s + writes_per_s);
    set_cpu_per_op(&mut row, reads_per_s + writes_per_s, settings);
    row.p50_us = percentile_us(&waits, 50.0);
    row.p99_us = p99;
    row.ratio = Some(p99_pings);
    row.ratio_to = "writer p99 wait / p50 PING round trip".into();
    row.set("readers", json!(readers));
    row.set("writers", json!(1));
    row.set("reads_per_s", json!(round1(reads_per_s)));
    row.set("writes_per_s", json!(round1(writes_per_s)));
    row.set(
        "read_pair_p50_us",
        json!(percentile_us(&read_lat, 50.0).map(round1)),
    );
    row.set(
        "read_pair_p99_us",
        json!(percentile_us(&read_lat, 99.0).map(round1)),
    );
    row.set(
        "writer_wait_p50_us",
        json!(percentile_us(&waits, 50.0).map(round1)),
    );
    row.set("writer_wait_p99_us", json!(p99.map(round1)));
    row.set("writer_wait_max_us", json!(max.map(round1)));
    row.set("writer_wait_p99_pings", json!(round3(p99_pings)));
    row.set("writer_waits_counted", json!(waits.len()));
    row.set("exclusion_ok", json!(overlaps == 0));
    row.set("commandstats", json!(stats));
    row.notes = format!(
        "{:.0} reads/s, {:.0} writes/s; writer wait p50 {} µs, p99 {} µs ({:.1} PING), max {} µs (ops/s, p50, p99 = all acquisitions, writer's wait); exclusion {}",
        reads_per_s,
        writes_per_s,
        fmt_opt(percentile_us(&waits, 50.0), 0),
        fmt_opt(p99, 0),
        p99_pings,
        fmt_opt(max, 0),
        if overlaps == 0 { "held" } else { "BROKEN" }
    );
    let p99_us = fmt_opt(p99, 0);
    row.bound(p99_pings, 1, AtMost(MAX_WRITER_P99_PINGS), |pings, target| {
        format!("rw_mixed_16 writer: p99 wait {p99_us} µs = {pings} PING round trips (target {target}); {reads_per_s:.0} reads/s, {writes_per_s:.0} writes/s")
    });
    row.target(
        overlaps == 0,
        "rw_mixed_16 no reader inside while the writer is".into(),
    );
    bench.push(row);
}
