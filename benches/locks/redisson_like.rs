//! `contended_vs_redisson_like`: this crate's client and a Redisson-like client (the
//! simulated Java client of `redisson_like_client.rs`: one subscription, each `0` wakes one
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
use crate::redisson_like_client::RedissonLike;
use crate::report::Bound::{AtLeast, AtMost};
use crate::report::{fmt_opt, round1, round3, Row};
use crate::Bench;

pub const SCENARIOS: &[&str] = &["contended_vs_redisson_like"];

/// Tasks of the crate's client, and threads of the Redisson-like client.
const PER_SIDE: usize = 8;
/// Target (issue 33): the crate's share of the acquisitions while both sides contend.
const MIN_CRATE_SHARE: f64 = 0.40;
const MAX_CRATE_SHARE: f64 = 0.60;

/// One acquisition: its place in the lock order (the counter read under the lock), its
/// side (0: the crate, 1: Redisson-like), its wait in `lock()`, when `lock()` returned
/// and when `unlock()` was called, and whether it started and ended in the window.
struct Step {
    seq: u64,
    side: usize,
    wait_ns: u64,
    locked_at: Instant,
    unlock_called_at: Instant,
    measured: bool,
}

/// One side's loop bookkeeping: the counter dance under the lock and the steps.
struct Recorder {
    side: usize,
    phase: Arc<Phase>,
    counter: Arc<AtomicU64>,
    steps: Vec<Step>,
}

impl Recorder {
    /// The phase at the start of the next `lock()` and its start, or `None` once stopped.
    fn begin(&self) -> Option<(u8, Instant)> {
        let at_start = self.phase.get();
        (at_start != STOP).then(|| (at_start, Instant::now()))
    }

    /// Under the lock (taken since `begin`'s `(at_start, t0)`): the counter is read,
    /// yielded over and written; the step is kept, `unlock()` is called next.
    async fn locked(&mut self, (at_start, t0): (u8, Instant)) {
        let locked_at = Instant::now();
        let seq = self.counter.load(Ordering::SeqCst);
        tokio::task::yield_now().await;
        self.counter.store(seq + 1, Ordering::SeqCst);
        self.steps.push(Step {
            seq,
            side: self.side,
            wait_ns: ns(locked_at - t0),
            locked_at,
            unlock_called_at: Instant::now(),
            measured: at_start == MEASURE,
        });
    }

    /// `unlock()` returned: the step counts if the window is still open.
    fn unlocked(&mut self) {
        let open = self.phase.get() == MEASURE;
        if let Some(step) = self.steps.last_mut() {
            step.measured &= open;
        }
    }
}

/// One run: the measured steps of both sides, in lock order, the window, and whether the
/// counter under the lock stayed exact.
struct Run {
    steps: Vec<Step>,
    secs: f64,
    counter_ok: bool,
}

impl Run {
    fn rate(&self) -> f64 {
        self.steps.len() as f64 / self.secs
    }

    /// `side`'s waits in `lock()`, sorted.
    fn waits(&self, side: usize) -> Vec<u64> {
        let mut waits: Vec<u64> = self
            .steps
            .iter()
            .filter(|s| s.side == side)
            .map(|s| s.wait_ns)
            .collect();
        waits.sort_unstable();
        waits
    }

    fn crate_share(&self) -> f64 {
        let mine = self.steps.iter().filter(|s| s.side == 0).count();
        mine as f64 / self.steps.len().max(1) as f64
    }

    /// The gaps (ns) from an `unlock()` call to the next holder's return from `lock()`,
    /// sorted, where the lock passed from side `from` to side `to`.
    fn gaps(&self, from: usize, to: usize) -> Vec<u64> {
        let mut gaps: Vec<u64> = self
            .steps
            .windows(2)
            .filter(|w| w[0].seq + 1 == w[1].seq && (w[0].side, w[1].side) == (from, to))
            .map(|w| {
                ns(w[1]
                    .locked_at
                    .saturating_duration_since(w[0].unlock_called_at))
            })
            .collect();
        gaps.sort_unstable();
        gaps
    }
}

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
    let recorder = |side| Recorder {
        side,
        phase: phase.clone(),
        counter: counter.clone(),
        steps: Vec::new(),
    };
    let tasks: Vec<_> = (0..crate_tasks)
        .map(|_| {
            let (lock, mut rec) = (client.get_lock(name), recorder(0));
            tokio::spawn(async move {
                while let Some(start) = rec.begin() {
                    lock.lock().await.expect("lock");
                    rec.locked(start).await;
                    lock.unlock().await.expect("unlock");
                    rec.unlocked();
                }
                rec.steps
            })
        })
        .collect();
    let threads: Vec<_> = (0..java_threads)
        .map(|_| {
            let mut rec = recorder(1);
            java.thread(move |thread| async move {
                while let Some(start) = rec.begin() {
                    thread.lock(name).await;
                    rec.locked(start).await;
                    thread.unlock(name).await;
                    rec.unlocked();
                }
                rec.steps
            })
        })
        .collect();
    let window = drive(bench.settings, &phase, async {}, async {}).await;
    let mut steps = Vec::new();
    for task in tasks {
        steps.extend(task.await.expect("crate task"));
    }
    let java_steps = tokio::task::spawn_blocking(move || {
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("java thread"))
            .collect::<Vec<_>>()
    })
    .await
    .expect("java threads");
    steps.extend(java_steps);
    java.quit().await;
    client.shutdown().await.expect("shutdown");
    steps.sort_by_key(|s| s.seq);
    let exact = counter.load(Ordering::SeqCst) == steps.len() as u64
        && steps.iter().enumerate().all(|(i, s)| s.seq == i as u64);
    steps.retain(|s| s.measured);
    Run {
        steps,
        secs: window.as_secs_f64(),
        counter_ok: exact,
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
    let (crate_waits, java_waits) = (mixed.waits(0), mixed.waits(1));
    let mut all: Vec<u64> = mixed.steps.iter().map(|s| s.wait_ns).collect();
    all.sort_unstable();
    (row.p50_us, row.p99_us) = p50_p99(&all);
    row.ratio = Some(rate / reference);
    row.ratio_to = "contended_16 acquisitions/s (same run)".into();
    let (crate_p50, crate_p99) = p50_p99(&crate_waits);
    let (java_p50, java_p99) = p50_p99(&java_waits);
    row.set("crate_share", json!(round3(share)));
    row.set("redisson_like_share", json!(round3(1.0 - share)));
    row.set(
        "crate_acquisitions_per_s",
        json!(round1(crate_waits.len() as f64 / mixed.secs)),
    );
    row.set(
        "redisson_like_acquisitions_per_s",
        json!(round1(java_waits.len() as f64 / mixed.secs)),
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
    // Where the time goes: the passes of the lock within a side and between the sides
    // (from the `unlock()` call to the next holder's return from `lock()`), and how
    // many acquisitions a side makes in a row.
    let mut passes = Vec::new();
    for (from, to, key) in [
        (0, 0, "crate_to_crate"),
        (0, 1, "crate_to_redisson_like"),
        (1, 1, "redisson_like_to_redisson_like"),
        (1, 0, "redisson_like_to_crate"),
    ] {
        let gaps = mixed.gaps(from, to);
        let p50 = p50_p99(&gaps).0;
        row.set(&format!("{key}_p50_us"), json!(p50.map(round1)));
        row.set(&format!("{key}_passes"), json!(gaps.len()));
        passes.push(format!("{key} {} × p50 {} µs", gaps.len(), fmt_opt(p50, 0)));
    }
    let switches = mixed.gaps(0, 1).len() + mixed.gaps(1, 0).len();
    let run_length = mixed.steps.len() as f64 / switches.max(1) as f64;
    row.set(
        "acquisitions_per_run_of_one_side",
        json!(round1(run_length)),
    );
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
    row.notes.push_str(&format!(
        "; passes: {}; {run_length:.1} acquisitions per run of one side",
        passes.join(", ")
    ));
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
