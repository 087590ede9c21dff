//! `contended_vs_redisson_like`: this crate's client and a Redisson-like client (the
//! simulated Java client of `tests/support/java.rs`: one subscription, each `0` wakes one
//! of its threads, which tries; every thread an OS thread) with as many tasks as threads,
//! all looping lock / counter / unlock on one name, as `contended_16` does. Each side's
//! share of the acquisitions, each side's wait in `lock()`, and the total rate against
//! `contended_16`'s and against the Redisson-like client's rate alone (its threads on the
//! name without the crate, measured just before and just after the mixed run: the mean).
//!
//! If `contended_16` is not selected, it is measured here too (no row of its own).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use redisson_lock::{Client, Config};
use serde_json::json;

use crate::measure::{contended, counter_target, drive, ns, p50_p99, Phase, MEASURE, STOP};
use crate::report::Bound::{AtLeast, AtMost};
use crate::report::{fmt_opt, round1, round3, Row};
use crate::support::java::RedissonLike;
use crate::Bench;

pub const SCENARIOS: &[&str] = &["contended_vs_redisson_like"];

/// Tasks of the crate's client, and threads of the Redisson-like client.
const PER_SIDE: usize = 8;
/// Target (issue 33): the crate's share of the acquisitions while both sides contend.
const MIN_CRATE_SHARE: f64 = 0.40;
const MAX_CRATE_SHARE: f64 = 0.60;

/// One run: acquisitions in the window by each side, their waits, and whether the
/// counter under the lock stayed exact.
struct Run {
    crate_waits: Vec<u64>,
    java_waits: Vec<u64>,
    secs: f64,
    counter_ok: bool,
}

impl Run {
    fn rate(&self) -> f64 {
        (self.crate_waits.len() + self.java_waits.len()) as f64 / self.secs
    }

    fn crate_share(&self) -> f64 {
        let all = self.crate_waits.len() + self.java_waits.len();
        self.crate_waits.len() as f64 / all.max(1) as f64
    }
}

/// What one loop of either side returns: its measured waits (ns) and all acquisitions.
type Log = (Vec<u64>, u64);

/// `crate_tasks` tasks of a fresh crate client and `java_threads` threads of a fresh
/// Redisson-like client on one name; the counter is read, yielded over and written
/// under the lock.
async fn run_sides(bench: &Bench, crate_tasks: usize, java_threads: usize) -> Run {
    let name = "bench:contended_vs_redisson_like";
    let client = Client::connect(Config::from_url(&bench.url).expect("url"))
        .await
        .expect("connect");
    let java = RedissonLike::connect(&bench.url).await;
    let phase = Phase::new();
    let counter = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..crate_tasks)
        .map(|_| {
            let (lock, phase, counter) = (client.get_lock(name), phase.clone(), counter.clone());
            tokio::spawn(async move {
                let (mut waits, mut all) = (Vec::new(), 0u64);
                loop {
                    let at_start = phase.get();
                    if at_start == STOP {
                        break;
                    }
                    let t0 = Instant::now();
                    lock.lock().await.expect("lock");
                    let wait = ns(t0.elapsed());
                    let seq = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    counter.store(seq + 1, Ordering::SeqCst);
                    lock.unlock().await.expect("unlock");
                    all += 1;
                    if at_start == MEASURE && phase.get() == MEASURE {
                        waits.push(wait);
                    }
                }
                (waits, all)
            })
        })
        .collect();
    let threads: Vec<_> = (0..java_threads)
        .map(|_| {
            let (phase, counter) = (phase.clone(), counter.clone());
            java.thread(move |thread| async move {
                let (mut waits, mut all) = (Vec::new(), 0u64);
                loop {
                    let at_start = phase.get();
                    if at_start == STOP {
                        break;
                    }
                    let t0 = Instant::now();
                    thread.lock(name).await;
                    let wait = ns(t0.elapsed());
                    let seq = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    counter.store(seq + 1, Ordering::SeqCst);
                    thread.unlock(name).await;
                    all += 1;
                    if at_start == MEASURE && phase.get() == MEASURE {
                        waits.push(wait);
                    }
                }
                (waits, all)
            })
        })
        .collect();
    let window = drive(bench.settings, &phase, async {}, async {}).await;
    let mut crate_log: Vec<Log> = Vec::new();
    for task in tasks {
        crate_log.push(task.await.expect("crate task"));
    }
    let java_log: Vec<Log> = tokio::task::spawn_blocking(move || {
        threads
            .into_iter()
            .map(|t| t.join().expect("java thread"))
            .collect()
    })
    .await
    .expect("java threads");
    java.quit().await;
    client.shutdown().await.expect("shutdown");
    let total: u64 = crate_log.iter().chain(&java_log).map(|(_, all)| all).sum();
    let merge = |log: Vec<Log>| {
        let mut waits: Vec<u64> = log.into_iter().flat_map(|(w, _)| w).collect();
        waits.sort_unstable();
        waits
    };
    Run {
        crate_waits: merge(crate_log),
        java_waits: merge(java_log),
        secs: window.as_secs_f64(),
        counter_ok: counter.load(Ordering::SeqCst) == total,
    }
}

pub async fn run(bench: &mut Bench) {
    let scenario = SCENARIOS[0];
    if !bench.wants(scenario) {
        return;
    }
    // The Redisson-like threads alone just before and just after the mixed run (a busy
    // machine moves their rate by a third from one run to the next): their mean.
    eprintln!("{scenario}: the Redisson-like client alone");
    let alone_before = run_sides(bench, 0, PER_SIDE).await;
    eprintln!("{scenario}");
    let mixed = run_sides(bench, PER_SIDE, PER_SIDE).await;
    eprintln!("{scenario}: the Redisson-like client alone again");
    let alone_after = run_sides(bench, 0, PER_SIDE).await;
    let (reference, source) = match bench.row("contended_16") {
        Some(row) => (row.ops_per_s.unwrap_or(f64::NAN), "row"),
        None => {
            eprintln!("  contended_16 (reference for {scenario})");
            let client = bench.client.clone();
            let c = contended(bench.settings, &bench.raw, 16, || {
                client.get_lock("bench:contended_16")
            })
            .await;
            (c.acquisitions_per_s, "measured alongside")
        }
    };

    let alone_rates = [alone_before.rate(), alone_after.rate()];
    let (rate, alone_rate) = (mixed.rate(), (alone_rates[0] + alone_rates[1]) / 2.0);
    let share = mixed.crate_share();
    let mut row = Row::new(scenario);
    row.tasks = Some(2 * PER_SIDE);
    row.ops_per_s = Some(rate);
    let mut all: Vec<u64> = mixed
        .crate_waits
        .iter()
        .chain(&mixed.java_waits)
        .copied()
        .collect();
    all.sort_unstable();
    (row.p50_us, row.p99_us) = p50_p99(&all);
    row.ratio = Some(rate / reference);
    row.ratio_to = "contended_16 acquisitions/s (same run)".into();
    let (crate_p50, crate_p99) = p50_p99(&mixed.crate_waits);
    let (java_p50, java_p99) = p50_p99(&mixed.java_waits);
    row.set("crate_share", json!(round3(share)));
    row.set("redisson_like_share", json!(round3(1.0 - share)));
    row.set(
        "crate_acquisitions_per_s",
        json!(round1(mixed.crate_waits.len() as f64 / mixed.secs)),
    );
    row.set(
        "redisson_like_acquisitions_per_s",
        json!(round1(mixed.java_waits.len() as f64 / mixed.secs)),
    );
    row.set("redisson_like_alone_per_s", json!(round1(alone_rate)));
    row.set(
        "redisson_like_alone_before_after_per_s",
        json!(alone_rates.map(round1)),
    );
    row.set("vs_redisson_like_alone", json!(round3(rate / alone_rate)));
    row.set("contended_16_acquisitions_per_s", json!(round1(reference)));
    row.set("contended_16_source", json!(source));
    row.set("crate_wait_p50_us", json!(crate_p50.map(round1)));
    row.set("crate_wait_p99_us", json!(crate_p99.map(round1)));
    row.set("redisson_like_wait_p50_us", json!(java_p50.map(round1)));
    row.set("redisson_like_wait_p99_us", json!(java_p99.map(round1)));
    let exact = mixed.counter_ok && alone_before.counter_ok && alone_after.counter_ok;
    row.set("counter_ok", json!(exact));
    row.notes = format!(
        "{PER_SIDE} crate tasks + {PER_SIDE} Redisson-like threads: crate {:.0}%, wait p50/p99 {}/{} µs; Redisson-like {:.0}%, {}/{} µs; {rate:.0}/s = {:.2} × contended_16 ({reference:.0}), {:.2} × the Redisson-like threads alone ({alone_rate:.0}: {:.0} before, {:.0} after)",
        100.0 * share,
        fmt_opt(crate_p50, 0),
        fmt_opt(crate_p99, 0),
        100.0 * (1.0 - share),
        fmt_opt(java_p50, 0),
        fmt_opt(java_p99, 0),
        rate / reference,
        rate / alone_rate,
        alone_rates[0],
        alone_rates[1],
    );
    let pct = 100.0 * share;
    row.bound(pct, 1, AtLeast(100.0 * MIN_CRATE_SHARE), |pct, target| {
        format!("{scenario}: the crate's share {pct}% (target {target}%)")
    });
    row.bound(pct, 1, AtMost(100.0 * MAX_CRATE_SHARE), |pct, target| {
        format!("{scenario}: the crate's share {pct}% (target {target}%)")
    });
    row.bound(rate, 0, AtLeast(alone_rate.round()), |rate, target| {
        format!("{scenario}: {rate} acquisitions/s in all (target {target}: the Redisson-like threads alone)")
    });
    counter_target(&mut row);
    bench.push(row);
}
