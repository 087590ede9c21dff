//! How the scenarios measure: the warm-up / window / stop driver, percentiles, CPU,
//! allocations and memory of this process, and the contended loop every exclusive lock
//! kind shares (N tasks on one name, possibly from several clients, a plain counter under
//! the lock, hand-offs and scripts counted).

use std::collections::BTreeMap;
use std::future::Future;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redisson_lock::fred::interfaces::ClientLike;
use redisson_lock::{Lock, LockKind};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::alloc_count::Allocs;
use crate::report::{Row, fmt_opt, round1, round3};
use crate::server::{client_commands, command_stats, reset_stats, script_calls};
use crate::settings::Settings;
use crate::{Bench, Raw};

pub const WARMUP: u8 = 0;
pub const MEASURE: u8 = 1;
pub const STOP: u8 = 2;

pub fn percentile_us(sorted_ns: &[u64], p: f64) -> Option<f64> {
    if sorted_ns.is_empty() {
        return None;
    }
    let idx = ((p / 100.0) * (sorted_ns.len() - 1) as f64).round() as usize;
    Some(sorted_ns[idx.min(sorted_ns.len() - 1)] as f64 / 1000.0)
}

/// The row of a scenario timed round by round: `rounds` in `elapsed_s` seconds by
/// `tasks` tasks, the latency columns from `sorted_ns`, and the PING round trip
/// (`ping_rtt_p50_us`) beside them.
pub fn rounds_row(
    bench: &Bench,
    scenario: &str,
    tasks: usize,
    rounds: u64,
    elapsed_s: f64,
    sorted_ns: &[u64],
) -> Row {
    let mut row = Row::new(scenario);
    row.tasks = Some(tasks);
    row.ops_per_s = Some(rounds as f64 / elapsed_s.max(f64::MIN_POSITIVE));
    row.p50_us = percentile_us(sorted_ns, 50.0);
    row.p99_us = percentile_us(sorted_ns, 99.0);
    row.set("rounds", json!(rounds));
    row.set("ping_rtt_p50_us", json!(round1(bench.ping)));
    row
}

pub fn percentile_signed_us(sorted_ns: &[i64], p: f64) -> Option<f64> {
    if sorted_ns.is_empty() {
        return None;
    }
    let idx = ((p / 100.0) * (sorted_ns.len() - 1) as f64).round() as usize;
    Some(sorted_ns[idx.min(sorted_ns.len() - 1)] as f64 / 1000.0)
}

pub fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// Resident memory of this process (VmRSS), bytes.
pub fn vm_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU time (user + system) of this process so far.
pub fn cpu_time() -> Option<Duration> {
    process_cpu_time("self")
}

/// CPU time (user + system) of the redis-server so far, if it is a local process.
fn server_cpu_time() -> Option<Duration> {
    process_cpu_time(&crate::server::server_pid()?.to_string())
}

/// CPU time (user + system) of process `pid` (`self` or a number) so far.
fn process_cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `) `.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks()))
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Warm-up, measure, stop: what the driver tells the tasks.
pub struct Phase(AtomicU8);

impl Phase {
    pub fn new() -> Arc<Phase> {
        Arc::new(Phase(AtomicU8::new(WARMUP)))
    }
    pub fn get(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
    fn set(&self, phase: u8) {
        self.0.store(phase, Ordering::Release)
    }
}

/// The latencies (ns) of one task's timed loop: [`Laps::start`] before each operation,
/// [`Laps::end`] after it; an operation that started and ended inside the measured window
/// is kept.
pub struct Laps {
    phase: Arc<Phase>,
    ns: Vec<u64>,
}

/// One lap in progress: when it started, and in which phase.
pub struct Lap {
    t0: Instant,
    phase: u8,
}

impl Laps {
    pub fn new(phase: &Arc<Phase>) -> Laps {
        Laps {
            phase: phase.clone(),
            ns: Vec::new(),
        }
    }

    /// The next lap, or `None` once the window has closed.
    pub fn start(&self) -> Option<Lap> {
        let phase = self.phase.get();
        (phase != STOP).then(|| Lap {
            t0: Instant::now(),
            phase,
        })
    }

    /// Ends `lap`, keeping its latency if it was measured.
    pub fn end(&mut self, lap: Lap) {
        let dt = ns(lap.t0.elapsed());
        if lap.phase == MEASURE && self.phase.get() == MEASURE {
            self.ns.push(dt);
        }
    }

    pub fn into_ns(self) -> Vec<u64> {
        self.ns
    }
}

/// Spawns `tasks` timed loops, `body(task, laps)` each (it returns [`Laps::into_ns`]).
pub fn spawn_laps<F, Fut>(
    phase: &Arc<Phase>,
    tasks: usize,
    mut body: F,
) -> Vec<JoinHandle<Vec<u64>>>
where
    F: FnMut(usize, Laps) -> Fut,
    Fut: Future<Output = Vec<u64>> + Send + 'static,
{
    (0..tasks)
        .map(|task| tokio::spawn(body(task, Laps::new(phase))))
        .collect()
}

/// Every latency of `handles`' tasks, sorted.
pub async fn join_sorted(handles: Vec<JoinHandle<Vec<u64>>>, what: &str) -> Vec<u64> {
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await.unwrap_or_else(|e| panic!("{what}: {e}")));
    }
    all.sort_unstable();
    all
}

/// The p50 and p99 (µs) of sorted latencies.
pub fn p50_p99(sorted_ns: &[u64]) -> (Option<f64>, Option<f64>) {
    (
        percentile_us(sorted_ns, 50.0),
        percentile_us(sorted_ns, 99.0),
    )
}

/// Operations timed in rotation by one task, so that a noisy machine slows them alike:
/// rounds of `K` timings ([`timed`]), kept after the warm-up, until the window closes.
pub struct Rotation<const K: usize> {
    warm_until: Instant,
    until: Instant,
    series: [Vec<u64>; K],
}

impl<const K: usize> Rotation<K> {
    pub fn new(warm: Duration, window: Duration) -> Rotation<K> {
        let warm_until = Instant::now() + warm;
        Rotation {
            warm_until,
            until: warm_until + window,
            series: std::array::from_fn(|_| Vec::new()),
        }
    }

    /// `Some(measured)` while the window is open: whether this round's timings count.
    pub fn next_round(&self) -> Option<bool> {
        let now = Instant::now();
        (now < self.until).then_some(now > self.warm_until)
    }

    /// One round's timings (ns), one per operation, kept if `measured`.
    pub fn record(&mut self, measured: bool, round: [u64; K]) {
        if measured {
            for (series, ns) in self.series.iter_mut().zip(round) {
                series.push(ns);
            }
        }
    }

    /// Each operation's timings, sorted.
    pub fn into_sorted(mut self) -> [Vec<u64>; K] {
        for series in &mut self.series {
            series.sort_unstable();
        }
        self.series
    }
}

/// How long `op` takes, ns.
pub async fn timed(op: impl Future<Output = ()>) -> u64 {
    let t0 = Instant::now();
    op.await;
    ns(t0.elapsed())
}

/// One PING round trip (timed beside lock pairs as the yardstick).
pub async fn ping(redis: &Raw) {
    let _: String = redis.ping(None).await.expect("PING");
}

/// One RLock pair: `lock()` then `unlock()` (the reference group and fenced pairs are
/// compared with).
pub async fn rlock_pair(lock: &Lock) {
    lock.lock().await.expect("lock");
    lock.unlock().await.expect("unlock");
}

/// The p50 (µs) of sorted timings, NaN when there are none.
pub fn p50_us(sorted_ns: &[u64]) -> f64 {
    percentile_us(sorted_ns, 50.0).unwrap_or(f64::NAN)
}

/// Runs warm-up then the measured window; `on_measure` runs when measuring starts and
/// `on_stop` when it ends. Returns the measured window's length.
pub async fn drive<F, G>(settings: &Settings, phase: &Phase, on_measure: F, on_stop: G) -> Duration
where
    F: std::future::Future<Output = ()>,
    G: std::future::Future<Output = ()>,
{
    tokio::time::sleep(Duration::from_secs_f64(settings.warmup)).await;
    on_measure.await;
    phase.set(MEASURE);
    let start = Instant::now();
    let cpu0 = cpu_time().unwrap_or_default();
    let server0 = server_cpu_time();
    let allocs0 = Allocs::now();
    tokio::time::sleep(Duration::from_secs_f64(settings.secs)).await;
    phase.set(STOP);
    let allocs = Allocs::now().since(allocs0);
    let window = start.elapsed();
    let cpu = cpu_time().unwrap_or_default().saturating_sub(cpu0);
    WINDOW_CPU_NS.store(ns(cpu), Ordering::Relaxed);
    let server = server0
        .zip(server_cpu_time())
        .map_or(u64::MAX, |(before, after)| ns(after.saturating_sub(before)));
    WINDOW_SERVER_CPU_NS.store(server, Ordering::Relaxed);
    WINDOW_NS.store(ns(window), Ordering::Relaxed);
    WINDOW_ALLOCS.store(allocs.count, Ordering::Relaxed);
    WINDOW_ALLOC_BYTES.store(allocs.bytes, Ordering::Relaxed);
    on_stop.await;
    window
}

/// [`drive`] with `CONFIG RESETSTAT` when the window opens and `INFO commandstats` when
/// it closes; returns the window and those stats.
pub async fn drive_counted(
    settings: &Settings,
    phase: &Phase,
    raw: &Raw,
) -> (Duration, BTreeMap<String, u64>) {
    let after = std::sync::Mutex::new(BTreeMap::new());
    let window = drive(settings, phase, reset_stats(raw), async {
        *after.lock().expect("stats") = command_stats(raw).await;
    })
    .await;
    (window, after.into_inner().expect("stats"))
}

/// The bench process's CPU time during the last measured window.
static WINDOW_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// The bench process's CPU time per operation in the last window, µs (all threads: the
/// tasks, fred's connection tasks, the library's background tasks).
fn cpu_us_per_op(ops_per_s: f64, settings: &Settings) -> f64 {
    let cpu_us = WINDOW_CPU_NS.load(Ordering::Relaxed) as f64 / 1000.0;
    round1(cpu_us / (ops_per_s * settings.secs).max(1.0))
}

/// Sets a row's `bench_cpu_us_per_op` and `server_cpu_us_per_op` for the last window at
/// `ops_per_s`; returns the bench's.
pub fn set_cpu_per_op(row: &mut Row, ops_per_s: f64, settings: &Settings) -> f64 {
    let cpu = cpu_us_per_op(ops_per_s, settings);
    row.set("bench_cpu_us_per_op", json!(cpu));
    row.set(
        "server_cpu_us_per_op",
        json!(server_cpu_us_per_op(ops_per_s, settings)),
    );
    cpu
}

/// The redis-server's CPU time in the last window (`u64::MAX`: not a local process).
static WINDOW_SERVER_CPU_NS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The redis-server's CPU time per operation in the last window, µs (its scripts, its
/// network reads and writes); `None` when the server is not a local process. With the
/// bench's own figure it says which side a scenario is bound by on a shared machine.
fn server_cpu_us_per_op(ops_per_s: f64, settings: &Settings) -> Option<f64> {
    match WINDOW_SERVER_CPU_NS.load(Ordering::Relaxed) {
        u64::MAX => None,
        cpu_ns => Some(round1(
            cpu_ns as f64 / 1000.0 / (ops_per_s * settings.secs).max(1.0),
        )),
    }
}

/// The last measured window's length, and the heap allocations (count, bytes) of the
/// whole process during it (see `alloc_count.rs`).
static WINDOW_NS: AtomicU64 = AtomicU64::new(0);
static WINDOW_ALLOCS: AtomicU64 = AtomicU64::new(0);
static WINDOW_ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);

/// Operations in the last window at `ops_per_s` (at least 1).
fn window_ops(ops_per_s: f64) -> f64 {
    let secs = WINDOW_NS.load(Ordering::Relaxed) as f64 / 1e9;
    (ops_per_s * secs).max(1.0)
}

/// Heap allocations per operation in the last window: process-wide, so fred's connection
/// task, tokio and the bench's bookkeeping are in it, not only the lock calls.
pub fn allocs_per_op(ops_per_s: f64) -> f64 {
    round1(WINDOW_ALLOCS.load(Ordering::Relaxed) as f64 / window_ops(ops_per_s))
}

/// Bytes allocated per operation in the last window (process-wide, as [`allocs_per_op`]).
pub fn alloc_bytes_per_op(ops_per_s: f64) -> f64 {
    WINDOW_ALLOC_BYTES.load(Ordering::Relaxed) as f64 / window_ops(ops_per_s)
}

// ---- the contended loop ----------------------------------------------------------------

/// One acquisition in a contended run.
struct Acquisition {
    /// The counter value read under the lock: the acquisition's place in the lock order.
    seq: u64,
    task: usize,
    /// The task's group (its client, in `contended_mixed`; 0 elsewhere).
    group: usize,
    wait_ns: u64,
    locked_at: Instant,
    /// Taken just before `unlock()` is called: with the local line the next holder's
    /// `lock()` may return before this `unlock()` does, never before it is called.
    unlock_called_at: Instant,
    measured: bool,
}

pub struct Contended {
    pub acquisitions_per_s: f64,
    waits: Vec<u64>,
    /// The measured waits of each group's tasks (sorted), indexed by group.
    pub group_waits: Vec<Vec<u64>>,
    handoffs: Vec<i64>,
    cross_task_handoffs: Vec<i64>,
    total: u64,
    counter: u64,
    order_ok: bool,
    scripts: u64,
    commands: u64,
    measured: u64,
    stats: BTreeMap<String, u64>,
}

impl Contended {
    /// Acquire scripts per acquisition: every acquisition in the window is released once
    /// in it (give or take the edges), so acquire scripts = all scripts - acquisitions.
    pub fn acquire_scripts_per_acquisition(&self) -> f64 {
        self.scripts.saturating_sub(self.measured) as f64 / self.measured.max(1) as f64
    }

    /// The share of the measured acquisitions made by `group`'s tasks.
    pub fn group_share(&self, group: usize) -> f64 {
        self.group_waits.get(group).map_or(0, Vec::len) as f64 / self.measured.max(1) as f64
    }
}

/// N tasks on one name, each handle from `make` (called once per task, owner = the task);
/// a plain counter (load, yield, store) under the lock.
pub async fn contended<K, F>(settings: &Settings, raw: &Raw, tasks: usize, make: F) -> Contended
where
    K: LockKind,
    F: Fn() -> Lock<K>,
{
    contended_groups(settings, raw, tasks, |_| (0, make())).await
}

/// [`contended`] with the tasks in groups: `make(task)` returns the task's group and its
/// handle (e.g. a group per client, each task's handle from its group's client); the
/// waits are also kept per group ([`Contended::group_waits`]).
pub async fn contended_groups<K, F>(
    settings: &Settings,
    raw: &Raw,
    tasks: usize,
    make: F,
) -> Contended
where
    K: LockKind,
    F: Fn(usize) -> (usize, Lock<K>),
{
    let counter = Arc::new(AtomicU64::new(0));
    let phase = Phase::new();
    // Groups are counted from `make`, so a group whose tasks never got the lock is there.
    let mut groups = 1;
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (group, lock) = make(task);
            groups = groups.max(group + 1);
            let phase = phase.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut log = Vec::new();
                loop {
                    let at_start = phase.get();
                    if at_start == STOP {
                        break;
                    }
                    let t0 = Instant::now();
                    lock.lock().await.expect("lock");
                    let locked_at = Instant::now();
                    // Not an atomic increment: only the lock keeps it exact.
                    let seq = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    counter.store(seq + 1, Ordering::SeqCst);
                    let unlock_called_at = Instant::now();
                    lock.unlock().await.expect("unlock");
                    log.push(Acquisition {
                        seq,
                        task,
                        group,
                        wait_ns: ns(locked_at - t0),
                        locked_at,
                        unlock_called_at,
                        measured: at_start == MEASURE && phase.get() == MEASURE,
                    });
                }
                log
            })
        })
        .collect();
    let (window, after) = drive_counted(settings, &phase, raw).await;
    let mut log = Vec::new();
    for handle in handles {
        log.extend(handle.await.expect("contended task"));
    }
    log.sort_by_key(|a| a.seq);
    let total = log.len() as u64;
    let order_ok = log.iter().enumerate().all(|(i, a)| a.seq == i as u64);
    let mut waits: Vec<u64> = log
        .iter()
        .filter(|a| a.measured)
        .map(|a| a.wait_ns)
        .collect();
    waits.sort_unstable();
    let mut group_waits = vec![Vec::new(); groups];
    for a in log.iter().filter(|a| a.measured) {
        group_waits[a.group].push(a.wait_ns);
    }
    for w in &mut group_waits {
        w.sort_unstable();
    }
    let mut handoffs = Vec::new();
    let mut cross = Vec::new();
    for pair in log.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        if !next.measured || !prev.measured {
            continue;
        }
        // From the release's call to the next holder's return from `lock()`. Signed so
        // that a negative gap (which would mean the clock or the log is wrong) shows.
        let gap = if next.locked_at >= prev.unlock_called_at {
            ns(next.locked_at - prev.unlock_called_at) as i64
        } else {
            -(ns(prev.unlock_called_at - next.locked_at) as i64)
        };
        handoffs.push(gap);
        if next.task != prev.task {
            cross.push(gap);
        }
    }
    handoffs.sort_unstable();
    cross.sort_unstable();
    let measured = waits.len() as u64;
    Contended {
        acquisitions_per_s: measured as f64 / window.as_secs_f64(),
        waits,
        group_waits,
        handoffs,
        cross_task_handoffs: cross,
        total,
        counter: counter.load(Ordering::SeqCst),
        order_ok,
        scripts: script_calls(&after),
        commands: client_commands(&after),
        measured,
        stats: after,
    }
}

/// A contended scenario, if `bench` wants it: `tasks` tasks on the handles of `make`
/// (one name), then its row from [`contended_row`] for the caller's targets.
pub async fn contended_scenario<K, F>(
    bench: &Bench,
    scenario: &str,
    tasks: usize,
    make: F,
) -> Option<(Contended, Row)>
where
    K: LockKind,
    F: Fn() -> Lock<K>,
{
    if !bench.wants(scenario) {
        return None;
    }
    eprintln!("{scenario}");
    let c = contended(bench.settings, &bench.raw, tasks, make).await;
    let row = contended_row(bench, scenario, tasks, &c);
    Some((c, row))
}

/// The target every contended row ends with: the counter under the lock stayed exact.
pub fn counter_target(row: &mut Row) {
    let text = format!("{} counter equals acquisitions", row.scenario);
    row.target(row.flag("counter_ok"), text);
}

/// The row of a contended run (`contended_N`, `fair_contended_16`, `spin_contended_16`):
/// acquisitions/s, the wait in `lock()`, hand-offs in PING round trips, scripts and
/// commands per acquisition, and whether the counter stayed exact.
pub fn contended_row(bench: &Bench, scenario: &str, tasks: usize, c: &Contended) -> Row {
    let ping = bench.ping;
    let mut row = Row::new(scenario);
    row.tasks = Some(tasks);
    row.ops_per_s = Some(c.acquisitions_per_s);
    set_cpu_per_op(&mut row, c.acquisitions_per_s, bench.settings);
    row.set(
        "allocs_per_acquisition",
        json!(allocs_per_op(c.acquisitions_per_s)),
    );
    row.set(
        "alloc_bytes_per_acquisition",
        json!(alloc_bytes_per_op(c.acquisitions_per_s).round()),
    );
    row.p50_us = percentile_us(&c.waits, 50.0);
    row.p99_us = percentile_us(&c.waits, 99.0);
    row.ratio = bench.serial_limit().map(|l| c.acquisitions_per_s / l);
    row.ratio_to = "redis-benchmark EVALSHA -c 1 / 2".into();
    let handoff_p50 = percentile_signed_us(&c.handoffs, 50.0);
    let cross_p50 = percentile_signed_us(&c.cross_task_handoffs, 50.0);
    let cross_p99 = percentile_signed_us(&c.cross_task_handoffs, 99.0);
    let per_acq = |x: u64| x as f64 / c.measured.max(1) as f64;
    let same_task = if c.handoffs.is_empty() {
        f64::NAN
    } else {
        1.0 - c.cross_task_handoffs.len() as f64 / c.handoffs.len() as f64
    };
    row.set("handoff_p50_us", json!(handoff_p50.map(round1)));
    row.set(
        "handoff_p99_us",
        json!(percentile_signed_us(&c.handoffs, 99.0).map(round1)),
    );
    // The least hand-off: from the release's call, so never below 0.
    row.set(
        "handoff_min_us",
        json!(c.handoffs.first().map(|&h| round1(h as f64 / 1000.0))),
    );
    row.set("cross_task_handoff_p50_us", json!(cross_p50.map(round1)));
    row.set("cross_task_handoff_p99_us", json!(cross_p99.map(round1)));
    row.set(
        "cross_task_handoff_p50_pings",
        json!(cross_p50.map(|h| round3(h / ping))),
    );
    row.set("same_task_reacquire_share", json!(round3(same_task)));
    row.set(
        "acquire_scripts_per_acquisition",
        json!(round3(c.acquire_scripts_per_acquisition())),
    );
    row.set(
        "lock_scripts_per_acquisition",
        json!(round3(per_acq(c.scripts))),
    );
    row.set(
        "client_commands_per_acquisition",
        json!(round3(per_acq(c.commands))),
    );
    row.set(
        "all_commands_per_acquisition",
        json!(round3(per_acq(c.stats.values().sum::<u64>()))),
    );
    row.set("acquisitions_total", json!(c.total));
    row.set("counter", json!(c.counter));
    row.set("counter_ok", json!(c.counter == c.total && c.order_ok));
    row.set("commandstats", json!(c.stats));
    row.notes = format!(
        "hand-off p50 {} µs ({:.2} PING) across tasks, {} µs any; per acquisition {:.2} acquire + 1 unlock scripts, {:.2} commands sent, {:.1} allocations (process-wide); counter {}",
        fmt_opt(cross_p50, 0),
        cross_p50.map_or(f64::NAN, |h| h / ping),
        fmt_opt(handoff_p50, 0),
        c.acquire_scripts_per_acquisition(),
        per_acq(c.commands),
        allocs_per_op(c.acquisitions_per_s),
        if c.counter == c.total && c.order_ok {
            "exact"
        } else {
            "WRONG"
        }
    );
    row
}
