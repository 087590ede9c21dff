//! RLock's standing costs: `watchdog_10k` (renewal scripts and CPU while 10,000 locks are
//! held in watchdog mode) and `memory` (VmRSS per held lock and per waiting task).
//!
//! Both run first, before the limits and the throughput scenarios: memory while the
//! allocator holds nothing from earlier scenarios, the watchdog in a process that has not
//! run thousands of tasks yet (measured after them its CPU read 2-3% instead of 1.7-1.8%).
//! Their rows are listed after the others.

use std::time::{Duration, Instant};

use futures::StreamExt;
use redisson_lock::fred::interfaces::ClientLike;
use redisson_lock::fred::types::InfoKind;
use redisson_lock::{Client, LockOwner, RLock};
use serde_json::json;

use crate::Raw;
use crate::alloc_count::Live;
use crate::measure::{cpu_time, vm_rss};
use crate::report::Bound::{AtMost, Below};
use crate::report::{Row, round1, round3};
use crate::server::{command_stats, lock_client, reset_stats, script_calls};
use crate::settings::Settings;

pub const SCENARIOS: &[&str] = &["watchdog_10k", "memory"];

/// Target: VmRSS growth per task waiting in `lock()` ≤ this many bytes.
const MAX_BYTES_PER_WAITING_TASK: f64 = 2048.0;
/// Target: VmRSS growth per lock held in watchdog mode ≤ this many bytes.
const MAX_BYTES_PER_HELD_LOCK: f64 = 1024.0;

struct Watchdog {
    locks: usize,
    acquire_s: f64,
    hold_s: f64,
    period_s: f64,
    renewal_scripts: u64,
    cpu_s: f64,
    still_held: i64,
    renewed_after: usize,
}

/// `watchdog_10k`, if selected: its row (JSON already printed) with its targets.
pub async fn watchdog_row(settings: &Settings, url: &str, raw: &Raw) -> Option<Row> {
    if !settings.wants("watchdog_10k") {
        return None;
    }
    eprintln!("watchdog_10k");
    let w = watchdog(settings, url, raw).await;
    let periods = w.hold_s / w.period_s;
    let per_period = w.renewal_scripts as f64 / periods;
    let cpu_pct = 100.0 * w.cpu_s / w.hold_s;
    let ideal = (w.locks as f64 / redisson_lock::config::DEFAULT_RENEWAL_BATCH_SIZE as f64).ceil();
    let mut row = Row::new("watchdog_10k");
    row.tasks = Some(w.locks);
    row.ops_per_s = Some(w.renewal_scripts as f64 / w.hold_s);
    row.ratio = Some(per_period / ideal);
    row.ratio_to = "renewal scripts per period / (locks / batch size)".into();
    row.set("locks", json!(w.locks));
    row.set("acquire_all_s", json!(round3(w.acquire_s)));
    row.set("hold_s", json!(round3(w.hold_s)));
    row.set("renewal_period_s", json!(round3(w.period_s)));
    row.set("renewal_scripts", json!(w.renewal_scripts));
    row.set("renewal_scripts_per_period", json!(round1(per_period)));
    row.set("cpu_s", json!(round3(w.cpu_s)));
    row.set("cpu_pct_of_one_core", json!(round3(cpu_pct)));
    row.set("locks_alive_after_hold", json!(w.still_held));
    row.set("locks_registered_after_hold", json!(w.renewed_after));
    row.notes = format!(
        "{} renewal scripts in {:.0} s ({:.1}/period); CPU {:.2}% of a core; {}/{} locks alive",
        w.renewal_scripts, w.hold_s, per_period, cpu_pct, w.still_held, w.locks
    );
    row.bound(per_period, 1, AtMost(100.0), |n, target| {
        format!("watchdog_10k scripts: {n} renewal scripts per period (target {target})")
    });
    row.bound(cpu_pct, 2, Below(2.0), |pct, target| {
        format!("watchdog_10k CPU: {pct}% of one core during the hold (target {target}%)")
    });
    row.target(
        w.still_held == w.locks as i64,
        "watchdog_10k every lock survived the hold".into(),
    );
    println!("{}", row.json());
    Some(row)
}

/// `watchdog_10k`: N locks held in watchdog mode (3 s timeout, renewed every 1 s).
async fn watchdog(settings: &Settings, url: &str, raw: &Raw) -> Watchdog {
    let timeout = Duration::from_secs(3);
    let client = lock_client(url, |c| c.watchdog_timeout(timeout)).await;
    let n = settings.locks;
    let names: Vec<String> = (0..n).map(|i| format!("bench:watchdog:{i}")).collect();
    let locks: Vec<RLock> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            client
                .get_lock(name.as_str())
                .with_owner(LockOwner::from_raw(i as u64 + 1))
        })
        .collect();
    let t0 = Instant::now();
    futures::stream::iter(locks.iter().map(|l| l.lock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("lock") })
        .await;
    let acquire_s = t0.elapsed().as_secs_f64();
    assert_eq!(client.renewed_locks(), n);
    eprintln!(
        "  {n} locks taken in {acquire_s:.2} s; holding for {} s",
        settings.hold
    );
    reset_stats(raw).await;
    let cpu0 = cpu_time().unwrap_or_default();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(settings.hold)).await;
    let cpu1 = cpu_time().unwrap_or_default();
    let hold_s = start.elapsed().as_secs_f64();
    let stats = command_stats(raw).await;
    let renewal_scripts = script_calls(&stats);
    // Every lock must still be there: the hold outlasted the 3 s lease many times over.
    let still_held: i64 = raw
        .custom(redisson_lock::fred::cmd!("EXISTS"), names.clone())
        .await
        .expect("EXISTS");
    let renewed_after = client.renewed_locks();
    futures::stream::iter(locks.iter().map(|l| l.unlock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("unlock") })
        .await;
    client.shutdown().await.expect("shutdown");
    Watchdog {
        locks: n,
        acquire_s,
        hold_s,
        period_s: timeout.as_secs_f64() / 3.0,
        renewal_scripts,
        cpu_s: (cpu1.saturating_sub(cpu0)).as_secs_f64(),
        still_held,
        renewed_after,
    }
}

pub struct Memory {
    n: usize,
    per_held: f64,
    /// Heap bytes requested per held lock and not freed (the allocator's headers and
    /// rounding, freed holes and pages not returned are in VmRSS only): the figure that
    /// does not move between runs.
    heap_per_held: f64,
    /// Live heap allocations per held lock.
    heap_allocs_per_held: f64,
    per_waiter: f64,
    /// Heap bytes requested per waiting task and not freed (as `heap_per_held`).
    heap_per_waiter: f64,
    /// The server's `used_memory` growth per held lock (its hash and, with key tracking,
    /// its tracking-table entry).
    server_per_held: f64,
    /// The server's `tracking_total_keys` with the locks held.
    tracked_keys: u64,
}

/// One numeric field of `INFO <section>`.
async fn info_field(raw: &Raw, section: InfoKind, field: &str) -> u64 {
    let info: String = raw.info(Some(section)).await.unwrap_or_default();
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `n` lock handles `<prefix>:<i>`, each with its own owner (as many holds as handles):
/// what the memory rows and `holds_curve` hold.
pub fn held_handles(client: &Client, prefix: &str, n: usize) -> Vec<RLock> {
    (0..n)
        .map(|i| {
            client
                .get_lock(format!("{prefix}:{i}"))
                .with_owner(LockOwner::from_raw(i as u64 + 1))
        })
        .collect()
}

/// `memory`, if selected: VmRSS growth per held lock (handle + watchdog registration) and
/// per task waiting in `lock()` on one held lock.
pub async fn memory(settings: &Settings, client: &Client, raw: &Raw) -> Option<Memory> {
    if !settings.wants("memory") {
        return None;
    }
    eprintln!(
        "memory: {} held locks, {} waiting tasks",
        settings.locks, settings.locks
    );
    let n = settings.locks;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss0 = vm_rss().unwrap_or(0);
    let heap0 = Live::now();
    let server0 = info_field(raw, InfoKind::Memory, "used_memory").await;
    let locks = held_handles(client, "bench:memory:held", n);
    futures::stream::iter(locks.iter().map(|l| l.lock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("lock") })
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss1 = vm_rss().unwrap_or(0);
    let (heap_allocs_per_held, heap_per_held) = Live::now().per(heap0, n);
    let server1 = info_field(raw, InfoKind::Memory, "used_memory").await;
    let tracked_keys = info_field(raw, InfoKind::Stats, "tracking_total_keys").await;

    let holder = client
        .get_lock("bench:memory:wait")
        .with_owner(LockOwner::from_raw(1 << 40));
    holder.lock().await.expect("lock");
    reset_stats(raw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss2 = vm_rss().unwrap_or(0);
    let heap2 = Live::now();
    let waiters: Vec<_> = (0..n)
        .map(|_| {
            let lock = client.get_lock("bench:memory:wait");
            tokio::spawn(async move { lock.lock().await })
        })
        .collect();
    // The holder is a task of the same client: every waiter queues in the lock's local
    // line (the first one waits in Redis, subscribed), then sleeps.
    let deadline = Instant::now() + Duration::from_secs(120);
    while client.local_waiters() < n {
        assert!(Instant::now() < deadline, "waiters did not settle");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss3 = vm_rss().unwrap_or(0);
    let (_, heap_per_waiter) = Live::now().per(heap2, n);
    for waiter in &waiters {
        waiter.abort();
    }
    for waiter in waiters {
        let _ = waiter.await;
    }
    holder.unlock().await.expect("unlock");
    futures::stream::iter(locks.iter().map(|l| l.unlock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("unlock") })
        .await;
    Some(Memory {
        n,
        per_held: rss1.saturating_sub(rss0) as f64 / n as f64,
        heap_per_held,
        heap_allocs_per_held,
        heap_per_waiter,
        per_waiter: rss3.saturating_sub(rss2) as f64 / n as f64,
        server_per_held: server1.saturating_sub(server0) as f64 / n as f64,
        tracked_keys,
    })
}

/// The `memory` row (built at the end, where the original bench printed it).
pub fn memory_row(m: &Memory, client: &Client) -> Row {
    let mut row = Row::new("memory");
    row.tasks = Some(m.n);
    row.ratio_to = "n/a".into();
    row.set("bytes_per_held_lock", json!(m.per_held.round()));
    row.set("heap_bytes_per_held_lock", json!(m.heap_per_held.round()));
    row.set(
        "heap_allocations_per_held_lock",
        json!((m.heap_allocs_per_held * 10.0).round() / 10.0),
    );
    row.set("bytes_per_waiting_task", json!(m.per_waiter.round()));
    row.set(
        "heap_bytes_per_waiting_task",
        json!(m.heap_per_waiter.round()),
    );
    row.set(
        "server_bytes_per_held_lock",
        json!(m.server_per_held.round()),
    );
    row.set("server_tracked_keys", json!(m.tracked_keys));
    let probe = client.get_lock("bench:probe");
    row.set(
        "lock_future_bytes",
        json!(std::mem::size_of_val(&probe.lock())),
    );
    row.notes = format!(
        "VmRSS: {:.0} B per held lock (heap: {:.0} B in {:.1} allocations), {:.0} B per waiting task (heap: {:.0} B; {} of each); server: {:.0} B per held lock, {} keys tracked",
        m.per_held,
        m.heap_per_held,
        m.heap_allocs_per_held,
        m.per_waiter,
        m.heap_per_waiter,
        m.n,
        m.server_per_held,
        m.tracked_keys
    );
    let waiter = AtMost(MAX_BYTES_PER_WAITING_TASK);
    row.bound(m.per_waiter, 0, waiter, |bytes, target| {
        format!("memory: {bytes} B per waiting task (target {target})")
    });
    row.bound(
        m.per_held,
        0,
        AtMost(MAX_BYTES_PER_HELD_LOCK),
        |bytes, target| format!("memory: {bytes} B per held watchdog lock (target {target})"),
    );
    row
}
