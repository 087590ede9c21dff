//! One lock kind against real Redisson: [`LockCase`], and the four properties that
//! [`super::Interop::check_lock_kind`] runs (raw state, wake-ups, mutual exclusion, the
//! watchdog).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use redisson_lock::fred::prelude::*;
use redisson_lock::kinds::{GroupRule, LockGroup};
use redisson_lock::{Client as LockClient, Lock, LockKind, LockOwner};

use super::*;
use crate::support::real_java::Version;

type RawClient = redisson_lock::fred::prelude::Client;

// ---- lock kinds ----------------------------------------------------------------------

/// What the per-kind checks do with one of the crate's locks (a [`Lock`] of any kind, a
/// `MultiLock`, a `RedLock`).
pub trait CrateLock: Clone + Send + Sync + 'static {
    fn lock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send;
    fn lock_with_lease(
        &self,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<()>> + Send;
    fn try_lock(&self) -> impl Future<Output = redisson_lock::Result<bool>> + Send;
    fn try_lock_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<bool>> + Send;
    fn unlock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send;
    fn owned_by(&self, owner: u64) -> Self;
}

impl<K: LockKind> CrateLock for Lock<K> {
    fn lock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        Lock::lock(self)
    }
    fn lock_with_lease(
        &self,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        Lock::lock_with_lease(self, lease)
    }
    fn try_lock(&self) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        Lock::try_lock(self)
    }
    fn try_lock_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        Lock::try_lock_with_lease(self, wait, lease)
    }
    fn unlock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        Lock::unlock(self)
    }
    fn owned_by(&self, owner: u64) -> Self {
        self.with_owner(LockOwner::from_raw(owner))
    }
}

impl<R: GroupRule> CrateLock for LockGroup<R> {
    fn lock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        LockGroup::lock(self)
    }
    fn lock_with_lease(
        &self,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        LockGroup::lock_with_lease(self, lease)
    }
    fn try_lock(&self) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        LockGroup::try_lock(self)
    }
    fn try_lock_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        LockGroup::try_lock_with_lease(self, wait, lease)
    }
    fn unlock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        LockGroup::unlock(self)
    }
    fn owned_by(&self, owner: u64) -> Self {
        self.with_owner(LockOwner::from_raw(owner))
    }
}

/// How Java names one lock object in the driver's verbs.
#[derive(Clone, Debug)]
pub enum JavaLock {
    /// One lock: `[alias/][kind:]name` for `lock`, `trylock`, `unlock`, `stress`.
    One(String),
    /// `RedissonMultiLock` (`multi`) or `RedissonRedLock` (`red`) over member names.
    Group(&'static str, Vec<String>),
}

impl JavaLock {
    fn verb(&self, verb: &str) -> String {
        match self {
            JavaLock::One(name) => format!("{verb} {name}"),
            JavaLock::Group(group, members) => {
                let verb = match (*group, verb) {
                    ("multi", v) => format!("multi{v}"),
                    ("red", "lock") => "redlock".to_string(),
                    ("red", v) => format!("red{v}"),
                    (g, _) => panic!("unknown group {g}"),
                };
                format!("{verb} {}", members.join(","))
            }
        }
    }

    /// `lock` with a lease in ms, or the watchdog (`None`).
    pub fn lock(&self, lease: Option<Duration>, thread: &str) -> String {
        format!("{} {} {thread}", self.verb("lock"), ms_or_minus(lease))
    }

    pub fn try_lock(&self, wait: Duration, lease: Option<Duration>, thread: &str) -> String {
        format!(
            "{} {} {} {thread}",
            self.verb("trylock"),
            wait.as_millis(),
            ms_or_minus(lease)
        )
    }

    pub fn unlock(&self, thread: &str) -> String {
        format!("{} {thread}", self.verb("unlock"))
    }
}

pub(crate) fn ms_or_minus(lease: Option<Duration>) -> String {
    lease.map_or("-1".to_string(), |l| l.as_millis().to_string())
}

/// Keys and values to write before a raw-state step, for a base name.
pub type Prepared = fn(&str) -> Vec<(String, String)>;

/// One lock kind as both sides name it, and what it writes.
pub struct LockCase<L: CrateLock> {
    pub label: &'static str,
    /// The crate's lock of base name `name`, on the clients of the servers in order.
    pub ours: fn(&[LockClient], &str) -> L,
    /// Java's lock of base name `name` (server `i` > 0 is the driver's alias `s<i>`).
    pub java: fn(&str) -> JavaLock,
    /// The Redis names where the object of base name `name` lives, as (server, name):
    /// what the watchdog must keep and what the snapshots read (`*<name>*`).
    pub keys: fn(&str) -> Vec<(usize, String)>,
    /// Whether a holder may take it again.
    pub reentrant: bool,
    /// How soon a waiter must be woken by the other side's release. Groups (MultiLock,
    /// RedLock) wait on a member for at most 1.5 s before they try all members again
    /// (both sides), so a lost message costs them at most that: their bound is below it.
    pub wake_bound: Duration,
    /// Whether a majority of members is enough (a RedLock): the crate may give back a
    /// member that answered late.
    pub quorum: bool,
    /// Whether a waiter subscribes (all kinds but the spin lock).
    pub listens: bool,
    /// Whether a queued waiter leaves state in Redis (the fair kinds).
    pub queues: bool,
    /// Whether the driver's `stress` verb can hold it (single-name kinds); otherwise
    /// mutual exclusion is driven verb by verb.
    pub stress: bool,
    /// The crate's name of the lock that Java's `stress` on `(case.java)(base)` holds
    /// (it appends the index `0`): `<base>0` for most kinds.
    pub stress_name: fn(&str) -> String,
    /// Prepared before each side's first acquisition of a state snapshot (the fenced
    /// lock's counter: the same start on both sides).
    pub before_state: Option<Prepared>,
}

// ---- raw state of the same operations -------------------------------------------------

pub(crate) fn norm_for_crate<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    name: &str,
) -> Norm {
    let mut norm = names_norm(case, name);
    for client in clients {
        norm = norm
            .with(format!("{}:1", client.id()), "HOLDER")
            .with(format!("{}:2", client.id()), "WAITER");
    }
    norm
}

pub(crate) fn norm_for_java<L: CrateLock>(case: &LockCase<L>, side: &Side<'_>, name: &str) -> Norm {
    let mut norm = names_norm(case, name);
    for ((_, thread), field) in &side.fields {
        let role = if thread == "A" { "HOLDER" } else { "WAITER" };
        norm = norm.with(field.clone(), role);
    }
    norm
}

/// Each Redis name of the object by its place (`N0`, `N1`, ...; on several servers the
/// first place wins: the snapshot tells the servers apart).
pub(crate) fn names_norm<L: CrateLock>(case: &LockCase<L>, name: &str) -> Norm {
    let mut norm = Norm::new();
    let mut seen = Vec::new();
    for (_, key) in (case.keys)(name) {
        if !seen.contains(&key) {
            norm = norm.with(key.clone(), format!("N{}", seen.len()));
            seen.push(key);
        }
    }
    norm
}

pub(crate) async fn prepare<L: CrateLock>(case: &LockCase<L>, raws: &[RawClient], name: &str) {
    if let Some(before) = case.before_state {
        for (key, value) in before(name) {
            let _: () = raws[0].set(key, value, None, None, false).await.unwrap();
        }
    }
}

/// What every Redis name of the object of base name `name` contains (the snapshot's
/// pattern).
pub(crate) fn pattern_name<L: CrateLock>(_case: &LockCase<L>, name: &str) -> String {
    name.to_string()
}

/// Runs `take` (the crate's acquisitions of the step, `times` holds by `HOLDER`) until
/// every member holds them. A group with a quorum (a RedLock) may have given back a
/// member whose answer came in after the majority's and a grace as long again (a
/// member on a slow server must not hold the lock up): then the step is released and
/// taken again, up to 10 times.
pub(crate) async fn whole<L, F, Fut>(
    case: &LockCase<L>,
    raws: &[RawClient],
    pattern: &str,
    norm: &Norm,
    (ours, times): (&L, usize),
    take: F,
) where
    L: CrateLock,
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let members = (case.keys)(pattern).len();
    for attempt in 1..=10 {
        take().await;
        if !case.quorum {
            return;
        }
        // Late members are given back in the background: let that happen first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let snap = snapshot_all(raws, pattern, norm).await;
        let whole = snap
            .0
            .values()
            .filter(|e| {
                e.content
                    .iter()
                    .any(|(f, v)| f == "HOLDER" && *v == times.to_string())
            })
            .count();
        if whole == members {
            return;
        }
        eprintln!(
            "{}: {whole} of {members} members held after attempt {attempt}: taking it again",
            case.label
        );
        for _ in 0..times {
            ours.unlock().await.unwrap();
        }
    }
    panic!("{}: never held on every member", case.label);
}

/// Each step is done by the crate on one name and by each Java version on names of
/// their own; after each, the normalised states must match.
pub(crate) async fn raw_state<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    raws: &[RawClient],
) {
    let lease = Duration::from_secs(20);
    let tolerance = Duration::from_millis(1_500);
    let ours_name = format!("{}-state-rs", case.label);
    let ours = (case.ours)(clients, &ours_name).owned_by(1);
    let crate_norm = norm_for_crate(case, clients, &ours_name);
    let pattern = pattern_name(case, &ours_name);
    prepare(case, raws, &ours_name).await;

    struct JavaState<'s, 'a> {
        side: &'s Side<'a>,
        lock: JavaLock,
        norm: Norm,
        pattern: String,
    }
    let mut theirs = Vec::new();
    for side in sides {
        let name = format!("{}-state-{}", case.label, side.tag());
        prepare(case, raws, &name).await;
        theirs.push(JavaState {
            side,
            lock: (case.java)(&name),
            norm: norm_for_java(case, side, &name),
            pattern: pattern_name(case, &name),
        });
    }
    let compare = |what: String, ours: Snapshot, theirs: Vec<(Version, Snapshot)>| {
        eprintln!("{}, {what}: {:?}", case.label, ours.0);
        for (version, snap) in theirs {
            assert_same_state(
                &format!("{}, {what}, Redisson {version}", case.label),
                &ours,
                &snap,
                tolerance,
            );
        }
    };
    async fn all(raws: &[RawClient], pattern: &str, norm: &Norm) -> Snapshot {
        snapshot_all(raws, pattern, norm).await
    }

    // 1. A hold with a lease (twice, where the kind re-enters), taken without a wait:
    // a group's lock(lease) takes its members with a random temporary lease (Redisson's
    // and the crate's alike) that a partial release would re-arm.
    let times = if case.reentrant { 2 } else { 1 };
    whole(
        case,
        raws,
        &pattern,
        &crate_norm,
        (&ours, times),
        || async {
            for _ in 0..times {
                assert!(
                    ours.try_lock_with_lease(Duration::ZERO, lease)
                        .await
                        .unwrap()
                );
            }
        },
    )
    .await;
    for _ in 0..times {
        for t in &theirs {
            assert!(
                t.side
                    .java
                    .bool(&t.lock.try_lock(Duration::ZERO, Some(lease), "A"))
                    .await
            );
        }
    }
    let mut snaps = Vec::new();
    for t in &theirs {
        snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
    }
    let first = all(raws, &pattern, &crate_norm).await;
    assert!(
        !first.0.is_empty(),
        "{}: the crate wrote nothing",
        case.label
    );
    compare(format!("held with a lease x{times}"), first, snaps);

    // 2. A queued waiter (fair kinds): the queue, the deadline set.
    if case.queues {
        let waiter = ours.owned_by(2);
        let task = tokio::spawn(async move { waiter.lock_with_lease(lease).await });
        let mut pendings = Vec::new();
        for t in &theirs {
            pendings.push(t.side.java.spawn(&t.lock.lock(Some(lease), "B")).await);
        }
        for name in std::iter::once(&pattern).chain(theirs.iter().map(|t| &t.pattern)) {
            let n = 1;
            let queue = format!("redisson_lock_queue:{{{}}}", (case.keys)(name)[0].1);
            let ok = crate::support::eventually(Duration::from_secs(20), || async {
                let len: i64 = raws[0]
                    .custom(redisson_lock::fred::cmd!("LLEN"), vec![queue.clone()])
                    .await
                    .unwrap();
                len as usize == n
            })
            .await;
            assert!(ok, "{}: nobody queued in {queue}", case.label);
        }
        let mut snaps = Vec::new();
        for t in &theirs {
            snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
        }
        compare(
            "held, one waiter queued".into(),
            all(raws, &pattern, &crate_norm).await,
            snaps,
        );
        // The holder lets go (fully), the waiter gets it; then the waiter lets go.
        for _ in 0..times {
            ours.unlock().await.unwrap();
            for t in &theirs {
                t.side.java.ok(&t.lock.unlock("A")).await;
            }
        }
        tokio::time::timeout(WAKE_BOUND, task)
            .await
            .expect("the queued crate waiter took the lock")
            .unwrap()
            .unwrap();
        for p in &pendings {
            assert_eq!(answer(p, WAKE_BOUND).await, "OK");
        }
        let mut snaps = Vec::new();
        for t in &theirs {
            snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
        }
        compare(
            "the waiter took it".into(),
            all(raws, &pattern, &crate_norm).await,
            snaps,
        );
        ours.owned_by(2).unlock().await.unwrap();
        for t in &theirs {
            t.side.java.ok(&t.lock.unlock("B")).await;
        }
    } else {
        // 2'. One release of a re-entered hold; then the last one.
        if case.reentrant {
            ours.unlock().await.unwrap();
            for t in &theirs {
                t.side.java.ok(&t.lock.unlock("A")).await;
            }
            let mut snaps = Vec::new();
            for t in &theirs {
                snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
            }
            compare(
                "one of two holds released".into(),
                all(raws, &pattern, &crate_norm).await,
                snaps,
            );
        }
        ours.unlock().await.unwrap();
        for t in &theirs {
            t.side.java.ok(&t.lock.unlock("A")).await;
        }
    }
    let mut snaps = Vec::new();
    for t in &theirs {
        snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
    }
    compare(
        "released".into(),
        all(raws, &pattern, &crate_norm).await,
        snaps,
    );

    // 3. A hold with the watchdog (lease -1): the TTL is the watchdog timeout. On names of
    // their own: Redisson's faster multi-lock object would still use the lease of its
    // earlier lease-mode hold (4.7.0: `lock(20 s)`, `unlock()`, `lock()` writes a 20 s
    // lease; its other kinds go back to the watchdog timeout, as the crate does).
    let ours_name = format!("{}-state2-rs", case.label);
    let ours = (case.ours)(clients, &ours_name).owned_by(1);
    let crate_norm = norm_for_crate(case, clients, &ours_name);
    let pattern = pattern_name(case, &ours_name);
    prepare(case, raws, &ours_name).await;
    let mut theirs = Vec::new();
    for side in sides {
        let name = format!("{}-state2-{}", case.label, side.tag());
        prepare(case, raws, &name).await;
        theirs.push(JavaState {
            side,
            lock: (case.java)(&name),
            norm: norm_for_java(case, side, &name),
            pattern: pattern_name(case, &name),
        });
    }
    whole(case, raws, &pattern, &crate_norm, (&ours, 1), || async {
        ours.lock().await.unwrap();
    })
    .await;
    for t in &theirs {
        t.side.java.ok(&t.lock.lock(None, "A")).await;
    }
    let mut snaps = Vec::new();
    for t in &theirs {
        snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
    }
    let held = all(raws, &pattern, &crate_norm).await;
    for entry in held.0.values().filter(|e| e.kind == "hash") {
        assert!(
            entry.pttl > 0 && entry.pttl <= WATCHDOG.as_millis() as i64,
            "{}: watchdog hold PTTL {}",
            case.label,
            entry.pttl
        );
    }
    compare("held with the watchdog".into(), held, snaps);
    ours.unlock().await.unwrap();
    for t in &theirs {
        t.side.java.ok(&t.lock.unlock("A")).await;
    }
}

// ---- wake-ups both ways ---------------------------------------------------------------

pub(crate) async fn wake_ups<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    raws: &[RawClient],
) {
    for side in sides {
        let java = side.java;
        let version = java.version();
        // (a) The crate holds with a long lease; a Java waiter is woken by its unlock.
        let name = format!("{}-wake-rs-{}", case.label, side.tag());
        let names = (case.keys)(&name);
        let ours = (case.ours)(clients, &name).owned_by(1);
        ours.lock_with_lease(WAKE_LEASE).await.unwrap();
        let target = (case.java)(&name);
        let waiter = java.spawn(&target.lock(None, "B")).await;
        until_listening(raws, &names, case.listens, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let released = Instant::now();
        ours.unlock().await.unwrap();
        assert_eq!(answer(&waiter, case.wake_bound).await, "OK");
        let took = released.elapsed();
        eprintln!(
            "{}: a Redisson {version} waiter took the lock {took:?} after the crate's unlock",
            case.label
        );
        assert!(took < case.wake_bound, "{took:?}");
        assert!(!ours.try_lock().await.unwrap(), "Java holds it now");
        java.ok(&target.unlock("B")).await;

        // (b) Java holds with a long lease; the crate's waiter is woken by Java's unlock.
        let name = format!("{}-wake-java-{}", case.label, side.tag());
        let names = (case.keys)(&name);
        let target = (case.java)(&name);
        java.ok(&target.lock(Some(WAKE_LEASE), "A")).await;
        let ours = (case.ours)(clients, &name).owned_by(2);
        let task = tokio::spawn({
            let ours = ours.clone();
            async move { ours.lock().await }
        });
        until_listening(raws, &names, case.listens, || async { !task.is_finished() }).await;
        let released = Instant::now();
        java.ok(&target.unlock("A")).await;
        tokio::time::timeout(case.wake_bound, task)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{}: the crate's waiter was not woken by Redisson {version}'s unlock",
                    case.label
                )
            })
            .unwrap()
            .unwrap();
        let took = released.elapsed();
        eprintln!(
            "{}: the crate's waiter took the lock {took:?} after Redisson {version}'s unlock",
            case.label
        );
        assert!(
            !java.bool(&target.try_lock(Duration::ZERO, None, "A")).await,
            "the crate holds it now"
        );
        ours.unlock().await.unwrap();
    }
}

// ---- mutual exclusion -----------------------------------------------------------------

/// Java threads per version and crate tasks, and their rounds.
pub(crate) const JAVA_THREADS: usize = 3;
pub(crate) const CRATE_TASKS: usize = 3;
pub(crate) const ROUNDS: usize = 15;
pub(crate) const HOLD_MAX_MS: u64 = 3;

pub(crate) async fn mutual_exclusion<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    url: &str,
    raw: &RawClient,
) {
    if case.stress {
        stress_exclusion(case, clients, sides, url, raw).await
    } else {
        driven_exclusion(case, clients, sides).await
    }
}

/// Every Java version runs `stress` (its threads lock, GET the counter, hold 0–3 ms,
/// SET it + 1, unlock) while the crate's tasks do the same on the same lock and counter:
/// an update lost by two holders at once shows as a count short of the acquisitions.
pub(crate) async fn stress_exclusion<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    url: &str,
    raw: &RawClient,
) {
    let base = format!("{}-mx", case.label);
    let JavaLock::One(java_prefix) = (case.java)(&base) else {
        panic!("stress needs a single lock")
    };
    // `stress` locks prefix + index: index 0.
    let java_name = format!("{java_prefix}0");
    let counter_prefix = format!("ck-{}", case.label);
    let counter = format!("{counter_prefix}:{java_name}");
    let ours = (case.ours)(clients, &(case.stress_name)(&base));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let mut pendings = Vec::new();
    for side in sides {
        pendings.push(
            side.java
                .spawn(&format!(
                    "stress {java_prefix} 1 {JAVA_THREADS} {ROUNDS} {HOLD_MAX_MS} {counter_prefix} {url}"
                ))
                .await,
        );
    }
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CRATE_TASKS {
        let (ours, raw, counter) = (ours.clone(), raw.clone(), counter.clone());
        let (inside, overlaps, refused) = (inside.clone(), overlaps.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                ours.lock().await.unwrap();
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                let seen: Option<i64> = raw.get(&counter).await.unwrap();
                let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                tokio::time::sleep(Duration::from_millis(hold)).await;
                let _: () = raw
                    .set(&counter, seen.unwrap_or(0) + 1, None, None, false)
                    .await
                    .unwrap();
                inside.fetch_sub(1, Ordering::SeqCst);
                // Counted, not unwrapped: a release refused because someone else
                // released our hold is a symptom; the counter below tells the cause.
                if ours.unlock().await.is_err() {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let mut java_total = 0;
    let mut replies = Vec::new();
    for (side, pending) in sides.iter().zip(&pendings) {
        let reply = answer(pending, Duration::from_secs(120)).await;
        // `OK <done> <errors>`: every round is an acquisition, failed or not.
        java_total += JAVA_THREADS * ROUNDS;
        replies.push((side.java.version(), reply));
    }
    let count: i64 = raw.get(&counter).await.unwrap();
    let expected = (java_total + CRATE_TASKS * ROUNDS) as i64;
    eprintln!(
        "{}: {expected} acquisitions ({java_total} by Java: {replies:?}), counter {count}",
        case.label
    );
    assert_eq!(
        count,
        expected,
        "{}: the counter lost {} updates: two holders at once",
        case.label,
        expected - count
    );
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two crate holders");
    for (version, reply) in replies {
        assert_eq!(
            reply,
            format!("OK {} 0", JAVA_THREADS * ROUNDS),
            "{}: Redisson {version} stress",
            case.label,
        );
    }
    assert_eq!(
        refused.load(Ordering::SeqCst),
        0,
        "the crate's releases refused"
    );
}

/// For groups (no `stress` verb): each Java version's threads lock, are marked inside by
/// the test once their `lock` answered, hold 0–3 ms, are marked out, unlock; the
/// crate's tasks do the same. The mark (inside the real holds on both sides) must never
/// count two.
pub(crate) async fn driven_exclusion<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
) {
    const THREADS: usize = 2;
    const DRIVEN_ROUNDS: usize = 6;
    let base = format!("{}-mx", case.label);
    let target = (case.java)(&base);
    let ours = (case.ours)(clients, &base);
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let rounds = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..THREADS {
        let ours = ours.clone();
        let (inside, overlaps, rounds) = (inside.clone(), overlaps.clone(), rounds.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..DRIVEN_ROUNDS {
                ours.lock().await.unwrap();
                hold_marked(&inside, &overlaps).await;
                rounds.fetch_add(1, Ordering::SeqCst);
                // A refused release is a symptom of a second holder: the mark tells.
                let _ = ours.unlock().await;
            }
        }));
    }
    let mut java_loops = Vec::new();
    for side in sides {
        for t in 0..THREADS {
            let (target, inside, overlaps, rounds) = (&target, &inside, &overlaps, &rounds);
            java_loops.push(async move {
                let thread = format!("M{t}");
                for _ in 0..DRIVEN_ROUNDS {
                    let pending = side.java.spawn(&target.lock(None, &thread)).await;
                    assert_eq!(answer(&pending, Duration::from_secs(60)).await, "OK");
                    hold_marked(inside, overlaps).await;
                    rounds.fetch_add(1, Ordering::SeqCst);
                    side.java.ok(&target.unlock(&thread)).await;
                }
            });
        }
    }
    futures::future::join_all(java_loops).await;
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let total = rounds.load(Ordering::SeqCst);
    eprintln!("{}: {total} acquisitions, driven", case.label);
    assert_eq!(total as usize, (sides.len() + 1) * THREADS * DRIVEN_ROUNDS);
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "{}: two holders at once",
        case.label
    );
}

/// Marks a holder inside for 0–3 ms; counts an overlap when another one already is.
pub async fn hold_marked(inside: &AtomicUsize, overlaps: &AtomicUsize) {
    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
        overlaps.fetch_add(1, Ordering::SeqCst);
    }
    let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
    tokio::time::sleep(Duration::from_millis(hold)).await;
    inside.fetch_sub(1, Ordering::SeqCst);
}

// ---- the watchdog on both sides -------------------------------------------------------

/// How long the watchdog holds must last: several watchdog timeouts.
pub const WATCHDOG_SPAN: Duration = Duration::from_millis(WATCHDOG.as_millis() as u64 * 5 / 2);

/// Java (each version) and the crate each hold a lock of their own with the watchdog
/// (lease -1) while the other steps run; a sampler reads every key's PTTL meanwhile.
pub(crate) struct Watchdog<L: CrateLock> {
    started: Instant,
    ours: L,
    /// (who, crate name, the Java lock)
    held: Vec<(String, String, JavaLock)>,
    sampler: tokio::task::JoinHandle<Vec<(String, i64, i64, i64)>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl<L: CrateLock> Watchdog<L> {
    pub(crate) async fn start(
        case: &LockCase<L>,
        clients: &[LockClient],
        sides: &[Side<'_>],
        raws: &[RawClient],
    ) -> Watchdog<L> {
        let mut held = Vec::new();
        let ours_name = format!("{}-wd-rs", case.label);
        let ours = (case.ours)(clients, &ours_name).owned_by(1);
        ours.lock().await.unwrap();
        held.push((
            "crate".to_string(),
            ours_name.clone(),
            (case.java)(&ours_name),
        ));
        for side in sides {
            let name = format!("{}-wd-{}", case.label, side.tag());
            let target = (case.java)(&name);
            side.java.ok(&target.lock(None, "A")).await;
            held.push((format!("Redisson {}", side.java.version()), name, target));
        }
        let started = Instant::now();
        let mut watched = Vec::new();
        for (who, name, _) in &held {
            let members = (case.keys)(name);
            let mut kept = Vec::new();
            for (server, key) in &members {
                let pttl: i64 = raws[*server].pttl(key).await.unwrap();
                // A RedLock may have given back a member that answered late.
                if pttl > 0 || !case.quorum {
                    kept.push((
                        format!("{who}: s{server}/{key}"),
                        raws[*server].clone(),
                        key.clone(),
                    ));
                }
            }
            assert!(
                kept.len() > members.len() / 2,
                "{}: {who} holds {} of {} members",
                case.label,
                kept.len(),
                members.len()
            );
            watched.extend(kept);
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = tokio::spawn({
            let stop = stop.clone();
            async move {
                // (key, lowest PTTL seen, highest, samples)
                let mut seen: Vec<(String, i64, i64, i64)> = watched
                    .iter()
                    .map(|w| (w.0.clone(), i64::MAX, i64::MIN, 0))
                    .collect();
                while !stop.load(Ordering::SeqCst) {
                    for (i, (_, raw, key)) in watched.iter().enumerate() {
                        let pttl: i64 = raw.pttl(key).await.unwrap();
                        seen[i].1 = seen[i].1.min(pttl);
                        seen[i].2 = seen[i].2.max(pttl);
                        seen[i].3 += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                seen
            }
        });
        Watchdog {
            started,
            ours,
            held,
            sampler,
            stop,
        }
    }

    pub(crate) async fn finish(
        self,
        case: &LockCase<L>,
        clients: &[LockClient],
        sides: &[Side<'_>],
    ) {
        let left = WATCHDOG_SPAN.saturating_sub(self.started.elapsed());
        tokio::time::sleep(left).await;
        self.stop.store(true, Ordering::SeqCst);
        let seen = self.sampler.await.unwrap();
        eprintln!(
            "{}: watchdog holds after {:.1?} (timeout {WATCHDOG:?}): (key, lowest PTTL, highest, samples) {:?}",
            case.label,
            self.started.elapsed(),
            seen
        );
        for (key, lowest, highest, samples) in &seen {
            assert!(*samples >= 5, "{key}: only {samples} samples");
            assert!(
                *lowest > 0,
                "{}: {key} expired (PTTL {lowest}) while its holder's watchdog should renew it",
                case.label
            );
            assert!(
                *highest <= WATCHDOG.as_millis() as i64,
                "{}: {key} renewed to {highest} ms, more than the watchdog timeout",
                case.label
            );
        }
        // Still held, and the other side stays out.
        for (who, name, target) in &self.held {
            if who == "crate" {
                for side in sides {
                    assert!(
                        !side
                            .java
                            .bool(&target.try_lock(Duration::ZERO, None, "B"))
                            .await,
                        "{}: Redisson {} took the crate's watchdog-held lock",
                        case.label,
                        side.java.version()
                    );
                }
            } else {
                let theirs = (case.ours)(clients, name).owned_by(2);
                assert!(
                    !theirs.try_lock().await.unwrap(),
                    "{}: the crate took {who}'s watchdog-held lock",
                    case.label
                );
            }
        }
        self.ours.unlock().await.unwrap();
        for side in sides {
            let (_, _, target) = self
                .held
                .iter()
                .find(|(who, _, _)| *who == format!("Redisson {}", side.java.version()))
                .unwrap();
            side.java.ok(&target.unlock("A")).await;
        }
    }
}
