//! The `metrics` feature: counters, histograms and gauges read back through a recorder
//! after a known sequence of operations against a real redis-server.
#![cfg(feature = "metrics")]

mod support;
use support::*;

use std::collections::HashMap;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, LockOwner};

/// Cumulative metrics: the debugging recorder's snapshots hand out what happened since
/// the previous one (counters, gauges and histograms are all reset by a snapshot; the
/// crate's gauges only move up and down), so every read first folds a new snapshot into
/// these totals.
struct Totals {
    snapshotter: Snapshotter,
    counters: HashMap<String, u64>,
    gauges: HashMap<String, f64>,
    histograms: HashMap<String, Vec<f64>>,
}

/// One series: `name{k=v,...}` with its labels sorted.
fn series(name: &str, mut labels: Vec<String>) -> String {
    labels.sort();
    format!("{name}{{{}}}", labels.join(","))
}

impl Totals {
    fn new(snapshotter: Snapshotter) -> Totals {
        Totals {
            snapshotter,
            counters: HashMap::new(),
            gauges: HashMap::new(),
            histograms: HashMap::new(),
        }
    }

    fn fold(&mut self) {
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let key = key.key();
            let labels = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let id = series(key.name(), labels);
            match value {
                DebugValue::Counter(n) => *self.counters.entry(id).or_default() += n,
                DebugValue::Gauge(v) => *self.gauges.entry(id).or_default() += v.0,
                DebugValue::Histogram(v) => self
                    .histograms
                    .entry(id)
                    .or_default()
                    .extend(v.into_iter().map(|x| x.0)),
            }
        }
    }

    /// Every series of `name` whose labels include all of `labels`.
    fn matching<'a, T>(
        map: &'a HashMap<String, T>,
        name: &str,
        labels: &[(&str, &str)],
    ) -> impl Iterator<Item = &'a T> + use<'a, T> {
        let prefix = format!("{name}{{");
        let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        map.iter()
            .filter(move |(id, _)| {
                id.strip_prefix(&prefix).is_some_and(|rest| {
                    let have: Vec<&str> = rest.trim_end_matches('}').split(',').collect();
                    wanted.iter().all(|w| have.contains(&w.as_str()))
                })
            })
            .map(|(_, v)| v)
    }

    fn counter(&mut self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.fold();
        Self::matching(&self.counters, name, labels).sum()
    }

    fn gauge(&mut self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.fold();
        Self::matching(&self.gauges, name, labels).sum()
    }

    fn samples(&mut self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.fold();
        Self::matching(&self.histograms, name, labels)
            .flatten()
            .copied()
            .collect()
    }

    /// Polls until `check` holds (up to `limit`).
    async fn until(&mut self, limit: Duration, check: impl Fn(&mut Totals) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if check(self) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

const ACQUIRE: &str = "redisson_lock_acquire_total";
const UNLOCK: &str = "redisson_lock_unlock_total";
const TRACKING_CHECKS: &str = "redisson_lock_tracking_checks_total";

/// One test, because a process has one global recorder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_sequence_shows_up_in_the_metrics() {
    let recorder = DebuggingRecorder::new();
    let mut m = Totals::new(recorder.snapshotter());
    recorder
        .install()
        .expect("the only recorder of this test binary");

    let Bed(server, client, raw, name) = Bed::with_config("metrics-plain", |c| {
        c.watchdog_timeout(Duration::from_millis(900))
    })
    .await;
    let reentrant = [("kind", "reentrant")];

    // One acquisition, held ~50 ms, released.
    let lock = client.get_lock(&name);
    lock.lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    lock.unlock().await.unwrap();
    let acquired = [("kind", "reentrant"), ("outcome", "acquired")];
    assert_eq!(m.counter(ACQUIRE, &acquired), 1);
    assert_eq!(
        m.counter(UNLOCK, &[("kind", "reentrant"), ("outcome", "released")]),
        1
    );
    let held = m.samples("redisson_lock_hold_seconds", &reentrant);
    assert_eq!(held.len(), 1);
    assert!(held[0] >= 0.045, "hold time {held:?}");
    assert_eq!(
        m.samples("redisson_lock_acquire_wait_seconds", &acquired)
            .len(),
        1
    );

    // A waiter that gives up after 500 ms: timed out, and counted as a waiter meanwhile.
    lock.lock().await.unwrap();
    let waiter = {
        let other = client.get_lock(&name);
        tokio::spawn(async move { other.try_lock_for(Duration::from_millis(500)).await })
    };
    assert!(
        m.until(Duration::from_secs(1), |m| m
            .gauge("redisson_lock_waiters", &reentrant)
            == 1.0)
            .await,
        "the waiter was not counted"
    );
    assert!(
        m.until(Duration::from_secs(1), |m| m
            .gauge("redisson_lock_subscriptions", &[])
            == 1.0)
            .await,
        "the waiter subscription was not counted: {:?}",
        m.gauges
    );
    assert!(!waiter.await.unwrap().unwrap());
    let timed_out = [("kind", "reentrant"), ("outcome", "timed_out")];
    assert_eq!(m.counter(ACQUIRE, &timed_out), 1);
    let waited = m.samples("redisson_lock_acquire_wait_seconds", &timed_out);
    assert!(waited[0] >= 0.45, "wait time {waited:?}");
    assert_eq!(m.gauge("redisson_lock_waiters", &reentrant), 0.0);

    // Held across renewal rounds (every 300 ms), then lost behind its back.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(m.counter("redisson_lock_renewal_rounds_total", &[]) >= 1);
    assert!(m.counter("redisson_lock_renewals_total", &[("outcome", "renewed")]) >= 1);
    let _: i64 = raw.del(&name).await.unwrap();
    assert!(
        m.until(Duration::from_secs(3), |m| m
            .counter("redisson_lock_lost_total", &[("cause", "field_gone")])
            == 1)
            .await,
        "the lost lock was not counted"
    );
    // Its unlock now answers "not the owner".
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));
    assert_eq!(
        m.counter(UNLOCK, &[("kind", "reentrant"), ("outcome", "not_owner")]),
        1
    );

    // An error: a lock on a key that holds a string.
    let string_key = key("metrics-string");
    let _: () = raw.set(&string_key, "x", None, None, false).await.unwrap();
    assert!(matches!(
        client.get_lock(&string_key).try_lock().await,
        Err(Error::WrongType { .. })
    ));
    assert_eq!(
        m.counter(ACQUIRE, &[("kind", "reentrant"), ("outcome", "error")]),
        1
    );

    // Other kinds carry their own label; no lock name label unless opted in.
    let fair = client.get_fair_lock(key("metrics-fair"));
    fair.lock().await.unwrap();
    fair.unlock().await.unwrap();
    assert_eq!(
        m.counter(ACQUIRE, &[("kind", "fair"), ("outcome", "acquired")]),
        1
    );
    m.fold();
    assert!(
        !m.counters.keys().any(|id| id.contains("lock=")),
        "lock names are labels only when opted in"
    );

    // A reader's last hold given back while other readers hold on: the unlock ended its
    // hold (`released`, with a hold time; Redisson's script answers 0 for the lock, kept
    // by the others), and the next change of the key by another client, checked at once
    // (key tracking), finds the reader left still held and reports nothing lost.
    let rw = key("metrics-rw");
    let other = server.client_with(server.config()).await;
    let mine = client.get_read_write_lock(&rw).read_lock();
    let mine_too = client
        .get_read_write_lock(&rw)
        .read_lock()
        .with_owner(LockOwner::from_raw(7));
    let theirs = other.get_read_write_lock(&rw).read_lock();
    mine.lock().await.unwrap();
    mine_too.lock().await.unwrap();
    theirs.lock().await.unwrap();
    let lost = m.counter("redisson_lock_lost_total", &[]);
    let checked = m.counter(TRACKING_CHECKS, &[("outcome", "held")]);
    let gone = m.counter(TRACKING_CHECKS, &[("outcome", "gone")]);
    mine.unlock().await.unwrap();
    let read = [("kind", "read")];
    assert_eq!(
        m.counter(UNLOCK, &[("kind", "read"), ("outcome", "released")]),
        1,
        "{:?}",
        m.counters
    );
    assert_eq!(m.samples("redisson_lock_hold_seconds", &read).len(), 1);
    theirs.unlock().await.unwrap();
    assert!(
        m.until(Duration::from_secs(2), |m| m
            .counter(TRACKING_CHECKS, &[("outcome", "held")])
            > checked)
            .await,
        "the other client's unlock was not checked: {:?}",
        m.counters
    );
    assert_eq!(m.counter(TRACKING_CHECKS, &[("outcome", "gone")]), gone);
    assert_eq!(m.counter("redisson_lock_lost_total", &[]), lost);
    mine_too.unlock().await.unwrap();
    assert_eq!(
        m.counter(UNLOCK, &[("kind", "read"), ("outcome", "still_held")]),
        0
    );
    other.shutdown().await.unwrap();

    // Opted in: the lock name is a label.
    let named = server
        .client_with(server.config().metrics_lock_names(true))
        .await;
    let opted = key("metrics-named");
    let lock = named.get_lock(&opted);
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    assert_eq!(
        m.counter(ACQUIRE, &[("kind", "reentrant"), ("lock", opted.as_str())]),
        1
    );

    assert!(
        m.until(Duration::from_secs(2), |m| m
            .gauge("redisson_lock_subscriptions", &[])
            == 0.0)
            .await
    );
    client.shutdown().await.unwrap();
    named.shutdown().await.unwrap();
}
