//! Concurrent sequences with a witness (issue 31, part 2): many tasks on two clients run
//! random sequences of lock operations at once on a few reentrant, fair and read-write
//! locks: `try_acquire_for` with no wait and with waits, `acquire` (waiting without a
//! bound), leases, re-entry, unlock, dropping a guard, `force_unlock` by the holder, and
//! cancellations (futures dropped at random points by `tokio::time::timeout`).
//!
//! A witness Redis, never faulted, numbers every entry and exit with one `INCR` counter
//! (the fault suite's method, tests/resilience/faults.rs): each hold is an interval on one total
//! order, entered after the acquisition returned and left before the release was sent.
//! After the run: no two holds of one name overlap unless both are reads, every guard was
//! `Held` when the witness admitted it, no task hung, and nothing is left in Redis (no
//! lock hash, queue entry, deadline, hold key or unlock latch; no subscribed channel,
//! `PUBSUB CHANNELS` empty and `subscribed_channels()` 0 on both clients).
//!
//! The choices come from a seeded RNG (printed; `SEQUENCES_SEED=<n>` replays them, the
//! timing being the machine's). CI runs 8 s of operations; `SEQUENCES_SECS=<n>` runs
//! longer.

use crate::support;
use support::*;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, HoldState, Lock, LockGuard, LockKind, LockOwner};
use tokio::time::Instant;

const TASKS_PER_CLIENT: usize = 6;
/// A short watchdog (a renewal every 667 ms) so that the longer holds are renewed.
const WATCHDOG: Duration = Duration::from_secs(2);

/// One hold as the witness saw it.
#[derive(Debug, Clone)]
struct Interval {
    name: &'static str,
    exclusive: bool,
    enter: u64,
    exit: u64,
    task: usize,
}

#[derive(Default)]
struct Counts {
    operations: AtomicU64,
    acquisitions: AtomicU64,
    not_taken: AtomicU64,
    cancelled_acquires: AtomicU64,
    cancelled_unlocks: AtomicU64,
    reentries: AtomicU64,
    force_unlocks: AtomicU64,
    dropped_guards: AtomicU64,
    lease_holds: AtomicU64,
    long_holds: AtomicU64,
    not_held_at_entry: AtomicU64,
    errors: AtomicU64,
}

impl Counts {
    fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

struct Run {
    witness: fred::prelude::Client,
    intervals: Mutex<Vec<Interval>>,
    counts: Counts,
    until: Instant,
}

impl Run {
    async fn tick(&self) -> u64 {
        self.witness.incr("clock").await.expect("witness INCR")
    }
}

/// Which lock a round uses.
#[derive(Clone, Copy, Debug)]
enum Target {
    Reentrant(&'static str),
    Fair(&'static str),
    Read(&'static str),
    Write(&'static str),
}

const TARGETS: [Target; 6] = [
    Target::Reentrant("seq:r0"),
    Target::Reentrant("seq:r1"),
    Target::Fair("seq:f0"),
    Target::Read("seq:rw0"),
    Target::Read("seq:rw0"),
    Target::Write("seq:rw0"),
];

async fn task(run: Arc<Run>, client: Client, index: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let owner = LockOwner::from_raw(1_000 + index as u64);
    while Instant::now() < run.until {
        let target = TARGETS[rng.gen_range(0..TARGETS.len())];
        match target {
            Target::Reentrant(name) => {
                let lock = client.get_lock(name).with_owner(owner);
                round(&run, lock, name, true, true, &mut rng, index).await
            }
            Target::Fair(name) => {
                let lock = client.get_fair_lock(name).with_owner(owner);
                round(&run, lock, name, true, true, &mut rng, index).await
            }
            Target::Read(name) => {
                let lock = client
                    .get_read_write_lock(name)
                    .read_lock()
                    .with_owner(owner);
                round(&run, lock, name, false, false, &mut rng, index).await
            }
            Target::Write(name) => {
                let lock = client
                    .get_read_write_lock(name)
                    .write_lock()
                    .with_owner(owner);
                round(&run, lock, name, true, false, &mut rng, index).await
            }
        }
        // Some rounds start at once, others after a pause.
        if rng.gen_bool(0.3) {
            tokio::time::sleep(Duration::from_micros(rng.gen_range(0..3_000))).await;
        }
    }
}

/// One acquisition attempt and, if it took the lock, one hold and its release.
async fn round<K: LockKind>(
    run: &Run,
    lock: Lock<K>,
    name: &'static str,
    exclusive: bool,
    forcible: bool,
    rng: &mut StdRng,
    index: usize,
) {
    let counts = &run.counts;
    Counts::add(&counts.operations);
    let acquired = match rng.gen_range(0..10) {
        0..=2 => Some(lock.try_acquire_for(Duration::ZERO).await),
        3..=5 => {
            let wait = Duration::from_millis(rng.gen_range(1..150));
            Some(lock.try_acquire_for(wait).await)
        }
        6 | 7 => {
            let limit = Duration::from_millis(rng.gen_range(20..400));
            tokio::time::timeout(limit, lock.acquire())
                .await
                .ok()
                .map(|r| r.map(Some))
        }
        8 => {
            Counts::add(&counts.lease_holds);
            let wait = Duration::from_millis(rng.gen_range(1..150));
            Some(
                lock.try_acquire_with_lease(wait, Duration::from_secs(10))
                    .await,
            )
        }
        _ => {
            // Dropped at a random point: before, while or after the script runs, while
            // subscribing, while asleep on the channel, while leaving a queue.
            let limit = Duration::from_micros(rng.gen_range(0..3_000));
            let wait = Duration::from_millis(rng.gen_range(0..100));
            tokio::time::timeout(limit, lock.try_acquire_for(wait))
                .await
                .ok()
        }
    };
    let guard = match acquired {
        None => {
            Counts::add(&counts.cancelled_acquires);
            return;
        }
        Some(Ok(None)) => {
            Counts::add(&counts.not_taken);
            return;
        }
        Some(Err(error)) => {
            Counts::add(&counts.errors);
            eprintln!("task {index}: acquire of {name} failed: {error}");
            return;
        }
        Some(Ok(Some(guard))) => guard,
    };
    Counts::add(&counts.acquisitions);
    let enter = run.tick().await;
    if guard.state() != HoldState::Held {
        Counts::add(&counts.not_held_at_entry);
        eprintln!("task {index}: {name} admitted while {:?}", guard.state());
    }
    hold(run, &lock, name, rng, index).await;
    let exit = run.tick().await;
    run.intervals.lock().unwrap().push(Interval {
        name,
        exclusive,
        enter,
        exit,
        task: index,
    });
    release(run, guard, forcible, rng, index).await;
}

/// The work under the lock: sometimes a re-entry (taken and given back), mostly a few
/// milliseconds, now and then longer than a renewal period.
async fn hold<K: LockKind>(run: &Run, lock: &Lock<K>, name: &str, rng: &mut StdRng, index: usize) {
    let counts = &run.counts;
    if rng.gen_bool(0.25) {
        Counts::add(&counts.reentries);
        match lock.try_lock().await {
            Ok(true) => {
                if let Err(error) = lock.unlock().await {
                    Counts::add(&counts.errors);
                    eprintln!("task {index}: re-entry unlock of {name} failed: {error}");
                }
            }
            other => {
                Counts::add(&counts.errors);
                eprintln!("task {index}: re-entry of {name} refused: {other:?}");
            }
        }
    }
    let work = if rng.gen_ratio(1, 60) {
        Counts::add(&counts.long_holds);
        Duration::from_millis(rng.gen_range(700..1_000))
    } else {
        Duration::from_micros(rng.gen_range(0..4_000))
    };
    tokio::time::sleep(work).await;
}

async fn release<K: LockKind>(
    run: &Run,
    guard: LockGuard<K>,
    forcible: bool,
    rng: &mut StdRng,
    index: usize,
) {
    let counts = &run.counts;
    match rng.gen_range(0..10) {
        0..=4 => {
            if let Err(error) = guard.unlock().await {
                Counts::add(&counts.errors);
                eprintln!("task {index}: unlock failed: {error}");
            }
        }
        5 | 6 => {
            Counts::add(&counts.dropped_guards);
            drop(guard); // released in the background
        }
        7 => {
            let limit = Duration::from_micros(rng.gen_range(0..1_500));
            match tokio::time::timeout(limit, guard.unlock()).await {
                Err(_) => Counts::add(&counts.cancelled_unlocks), // finished in the background
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    Counts::add(&counts.errors);
                    eprintln!("task {index}: unlock failed: {error}");
                }
            }
        }
        _ if forcible => {
            Counts::add(&counts.force_unlocks);
            let lock = LockGuard::into_lock(guard);
            match lock.force_unlock().await {
                Ok(true) => {}
                other => {
                    Counts::add(&counts.errors);
                    eprintln!("task {index}: force_unlock of a held lock: {other:?}");
                }
            }
        }
        _ => {
            if let Err(error) = guard.unlock().await {
                Counts::add(&counts.errors);
                eprintln!("task {index}: unlock failed: {error}");
            }
        }
    }
}

/// Every pair of holds of one name that overlap on the witness's order, unless both are
/// reads: (earlier, later).
fn overlaps(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
    let mut by_name: HashMap<&str, Vec<&Interval>> = HashMap::new();
    for interval in intervals {
        by_name.entry(interval.name).or_default().push(interval);
    }
    let mut found = Vec::new();
    for (_, mut holds) in by_name {
        holds.sort_by_key(|i| i.enter);
        for (at, a) in holds.iter().enumerate() {
            for b in &holds[at + 1..] {
                if b.enter > a.exit {
                    break;
                }
                if a.exclusive || b.exclusive {
                    found.push(((*a).clone(), (*b).clone()));
                }
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sequences_keep_exclusion_and_leave_nothing() {
    init_tracing();
    let secs: u64 = std::env::var("SEQUENCES_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let seed: u64 = std::env::var("SEQUENCES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().r#gen());
    println!("seed {seed} (SEQUENCES_SEED={seed} replays the choices), {secs} s of operations");

    let server = RedisServer::start();
    let witness_server = RedisServer::start();
    let raw = server.raw().await;
    let config = || server.config().watchdog_timeout(WATCHDOG);
    let clients = [
        server.client_with(config()).await,
        server.client_with(config()).await,
    ];
    let run = Arc::new(Run {
        witness: witness_server.raw().await,
        intervals: Mutex::new(Vec::new()),
        counts: Counts::default(),
        until: Instant::now() + Duration::from_secs(secs),
    });

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for t in 0..TASKS_PER_CLIENT {
            let index = c * TASKS_PER_CLIENT + t;
            tasks.push(tokio::spawn(task(run.clone(), client.clone(), index, seed)));
        }
    }
    // Every round is bounded (waits of at most 400 ms, holds of at most 1 s): a task still
    // running 20 s after the end hung.
    let limit = Duration::from_secs(secs + 20);
    let all = tokio::time::timeout(limit, futures::future::join_all(tasks))
        .await
        .unwrap_or_else(|_| panic!("a task hung: not finished {limit:?} after the start"));
    for outcome in all {
        outcome.expect("a task panicked");
    }
    let ran_for = started.elapsed();

    // Nothing left: the background releases (dropped guards, cancelled unlocks and
    // acquires), queue exits and latch deletions finish, and the channels are given back.
    let settle = Instant::now();
    let clean = eventually(Duration::from_secs(10), || async {
        let keys = strings(&raw, ["KEYS", "*"]).await;
        let channels = crate_channels(&raw).await;
        keys.is_empty()
            && channels.is_empty()
            && clients
                .iter()
                .all(|c| c.subscribed_channels() == 0 && c.renewed_locks() == 0)
    })
    .await;
    let keys = strings(&raw, ["KEYS", "*"]).await;
    let channels = crate_channels(&raw).await;
    let subscribed: Vec<usize> = clients.iter().map(|c| c.subscribed_channels()).collect();
    let renewed: Vec<usize> = clients.iter().map(|c| c.renewed_locks()).collect();
    let settled_in = settle.elapsed();

    let intervals = run.intervals.lock().unwrap().clone();
    let overlapping = overlaps(&intervals);
    let counts = &run.counts;
    let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let mut per_name: Vec<(&str, usize)> = intervals
        .iter()
        .fold(HashMap::new(), |mut m: HashMap<&str, usize>, i| {
            *m.entry(i.name).or_default() += 1;
            m
        })
        .into_iter()
        .collect();
    per_name.sort();
    println!(
        "{} tasks on 2 clients for {ran_for:?}: {} operations, {} acquisitions {per_name:?}, \
         {} not taken in time, {} acquires cancelled, {} unlocks cancelled, {} guards dropped, \
         {} re-entries, {} force unlocks, {} lease holds, {} holds across a renewal; \
         {} overlaps, {} not Held at entry, {} errors; left behind: {} keys, {} channels, \
         subscribed {subscribed:?}, renewed {renewed:?} (settled in {settled_in:?})",
        2 * TASKS_PER_CLIENT,
        count(&counts.operations),
        count(&counts.acquisitions),
        count(&counts.not_taken),
        count(&counts.cancelled_acquires),
        count(&counts.cancelled_unlocks),
        count(&counts.dropped_guards),
        count(&counts.reentries),
        count(&counts.force_unlocks),
        count(&counts.lease_holds),
        count(&counts.long_holds),
        overlapping.len(),
        count(&counts.not_held_at_entry),
        count(&counts.errors),
        keys.len(),
        channels.len(),
    );

    assert!(
        overlapping.is_empty(),
        "holds overlapped (earlier, later): {:?}",
        &overlapping[..overlapping.len().min(5)]
    );
    assert_eq!(
        count(&counts.not_held_at_entry),
        0,
        "a guard not Held at entry"
    );
    assert_eq!(count(&counts.errors), 0, "operations failed (see stderr)");
    assert!(
        clean,
        "left behind: keys {keys:?}, channels {channels:?}, subscribed {subscribed:?}, \
         renewed {renewed:?}"
    );
    // The run exercised what it claims.
    assert!(count(&counts.acquisitions) > 50, "too few acquisitions");
    assert!(
        count(&counts.cancelled_acquires) > 0,
        "no acquire was cancelled"
    );
    let tasks_seen: std::collections::HashSet<usize> = intervals.iter().map(|i| i.task).collect();
    assert!(
        tasks_seen.len() > TASKS_PER_CLIENT,
        "one client's tasks never held a lock"
    );
    for client in clients {
        client.shutdown().await.unwrap();
    }
}
