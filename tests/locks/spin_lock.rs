//! The spin lock (`RSpinLock`, protocol §13) against real `redis-server`s: RLock's hash and
//! field, no pub/sub at all (never publishes, never subscribes), polling with back-off,
//! bounded waits that end within one back-off step, sharing a name with an RLock, and
//! refused back-offs.

use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Backoff, Client as LockClient, Error, LockOwner, SpinLock};

// ---- helpers ----------------------------------------------------------------------------

fn pair(field: &str, count: u32) -> Vec<(String, String)> {
    vec![(field.to_string(), count.to_string())]
}

fn field_of(client: &LockClient, owner: LockOwner) -> String {
    format!("{}:{owner}", client.id())
}

fn assert_watchdog_ttl(ttl: i64) {
    assert!((20_000..=30_000).contains(&ttl), "PTTL {ttl} is not 30 s");
}

fn assert_lease_ttl(ttl: i64, lease_ms: i64) {
    assert!(
        (lease_ms - 5_000..=lease_ms).contains(&ttl),
        "PTTL {ttl} is not the {lease_ms} ms lease"
    );
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The largest delay of a back-off.
fn max_delay(backoff: Backoff) -> Duration {
    match backoff {
        Backoff::Exponential { max, .. } => max,
        Backoff::Constant(delay) => delay,
        _ => unreachable!("a back-off this test does not know"),
    }
}

/// `PUBSUB CHANNELS *`: every channel anybody is subscribed to.
async fn all_channels(raw: &Client) -> Vec<String> {
    let channels: Vec<String> = raw
        .custom(fred::cmd!("PUBSUB"), vec!["CHANNELS", "*"])
        .await
        .unwrap();
    // The key-tracking listener's (never a lock's).
    channels
        .into_iter()
        .filter(|c| c != "__redis__:invalidate")
        .collect()
}

/// No subscription anywhere: none in these clients, none in Redis for `name`'s channel.
async fn assert_no_subscription(raw: &Client, clients: &[&LockClient], name: &str) {
    for client in clients {
        assert_eq!(client.subscribed_channels(), 0, "a spin lock subscribed");
    }
    assert_eq!(numsub(raw, &channel(name)).await, 0);
    assert_eq!(all_channels(raw).await, Vec::<String>::new());
}

/// Times one `try_lock_with_lease`.
async fn timed_try(lock: &SpinLock, wait: Duration) -> (bool, Duration) {
    let started = Instant::now();
    let taken = lock
        .try_lock_with_lease(wait, Duration::from_secs(10))
        .await
        .unwrap();
    (taken, started.elapsed())
}

/// A spawned waiter that takes `lock` with `lock()`; answers when it got it and as whom.
fn spawn_lock<K: redisson_lock::LockKind>(
    lock: redisson_lock::Lock<K>,
) -> tokio::task::JoinHandle<(Instant, LockOwner)> {
    tokio::spawn(async move {
        lock.lock().await.unwrap();
        (Instant::now(), lock.owner())
    })
}

// ---- 1. raw state, and nothing published ------------------------------------------------

#[tokio::test]
async fn raw_state_is_rlocks_and_nothing_is_ever_published() {
    let Bed(server, client, raw, name) = Bed::new("spin-raw").await;
    let (_subscriber, mut rx) = listen(&server, "*").await;
    let lock = client.get_spin_lock(&name);
    assert_eq!(lock.kind().backoff(), Backoff::default());
    let field = field_of(&client, lock.owner());

    lock.lock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    let kind: String = raw.r#type(&name).await.unwrap();
    assert_eq!(kind, "hash");
    assert_watchdog_ttl(pttl(&raw, &name).await);
    assert_eq!(client.renewed_locks(), 1, "watchdog mode as RLock");

    // Re-entries: same field, count up, TTL re-armed to the new lease.
    assert!(lock.try_lock().await.unwrap());
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));
    lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 3));
    assert_lease_ttl(pttl(&raw, &name).await, 10_000);

    // An RLock handle of the same owner reads the very same hold.
    let as_rlock = client.get_lock(&name).with_owner(lock.owner());
    assert_eq!(as_rlock.hold_count().await.unwrap(), 3);
    assert!(as_rlock.is_held_by_current_task().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 3);
    assert!(lock.is_locked().await.unwrap());

    // Partial unlocks re-arm the last lease (Redisson's internalLockLeaseTime).
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    assert_lease_ttl(pttl(&raw, &name).await, 10_000);
    // The last one deletes the hash.
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));

    // force_unlock deletes another client's hold, and says whether there was one.
    let other = server.client().await;
    let theirs = other.get_spin_lock(&name);
    theirs.lock().await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert!(!lock.force_unlock().await.unwrap());

    assert_eq!(
        drain(&mut rx, Duration::from_millis(500)).await,
        vec![],
        "a spin lock never publishes"
    );
    // The unlock latches are cleaned up, as RLock's.
    assert!(
        eventually(Duration::from_secs(5), || async {
            let latches: Vec<String> = raw
                .custom(fred::cmd!("KEYS"), vec!["redisson_unlock_latch:*"])
                .await
                .unwrap();
            latches.is_empty()
        })
        .await
    );
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

// ---- 2. mutual exclusion, never a subscription ------------------------------------------

const CLIENTS: usize = 2;
const TASKS_PER_CLIENT: usize = 8;
const ROUNDS: usize = 50;

/// Takes the lock through one of the waiting calls (varied by `task` and `round`).
async fn take_spin(lock: &SpinLock, task: usize, round: usize) {
    match (task + round) % 3 {
        0 => lock.lock().await.unwrap(),
        1 => assert!(lock.try_lock_for(Duration::from_secs(60)).await.unwrap()),
        _ => assert!(
            lock.try_lock_with_lease(Duration::from_secs(60), Duration::from_secs(30))
                .await
                .unwrap()
        ),
    }
}

/// `ROUNDS` times: take the lock, bump the counter by load + yield + store (not atomic:
/// two holders at once lose an increment), release.
async fn spinner(lock: SpinLock, task: usize, counter: Arc<AtomicU64>, inside: Arc<AtomicBool>) {
    for round in 0..ROUNDS {
        take_spin(&lock, task, round).await;
        assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
        let seen = counter.load(Ordering::SeqCst);
        tokio::task::yield_now().await;
        counter.store(seen + 1, Ordering::SeqCst);
        inside.store(false, Ordering::SeqCst);
        lock.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_sixteen_tasks_exclude_each_other_without_subscribing() {
    let Bed(server, a, raw, name) = Bed::new("spin-mutex").await;
    // One client polls with Redisson's default back-off, the other with a constant one.
    let b = server.client().await;
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));

    // Watches for any subscription while the run goes on.
    let watcher = tokio::spawn({
        let (a, b, raw, name, done) = (
            a.clone(),
            b.clone(),
            server.raw().await,
            name.clone(),
            done.clone(),
        );
        async move {
            let mut checks = 0u32;
            while !done.load(Ordering::SeqCst) {
                assert_no_subscription(&raw, &[&a, &b], &name).await;
                checks += 1;
                tokio::time::sleep(ms(5)).await;
            }
            checks
        }
    });

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in [&a, &b].into_iter().enumerate() {
        for t in 0..TASKS_PER_CLIENT {
            let lock = if c == 0 {
                client.get_spin_lock(&name)
            } else {
                client.get_spin_lock_with(&name, Backoff::constant(ms(5)).unwrap())
            };
            tasks.push(tokio::spawn(spinner(
                lock,
                c * TASKS_PER_CLIENT + t,
                counter.clone(),
                inside.clone(),
            )));
        }
    }
    let results = tokio::time::timeout(Duration::from_secs(180), futures::future::join_all(tasks))
        .await
        .expect("the run finished");
    for result in results {
        result.unwrap();
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let checks = watcher.await.unwrap();

    let total = (CLIENTS * TASKS_PER_CLIENT * ROUNDS) as u64;
    assert_eq!(
        counter.load(Ordering::SeqCst),
        total,
        "every increment survived"
    );
    assert!(checks > 10, "the watcher ran ({checks} checks)");
    assert_no_subscription(&raw, &[&a, &b], &name).await;
    assert!(!exists(&raw, &name).await, "free at the end");
    assert_eq!(a.renewed_locks() + b.renewed_locks(), 0);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    eprintln!("{total} spin acquisitions in {elapsed:?} ({checks} subscription checks)");
}

// ---- 3. bounded waits end within one back-off step --------------------------------------

/// `wait` is honoured: false no earlier than `wait`, and no later than `wait` plus one
/// back-off step (a step longer than the wait is cut at the deadline, so at most `wait`)
/// plus slack for a loaded machine.
async fn assert_wait_honoured(lock: &SpinLock, wait: Duration) {
    let step = max_delay(lock.kind().backoff());
    // The wait cuts a longer step; a step never ends a wait late by more than itself.
    let late = wait.saturating_add(step.min(wait)).saturating_add(ms(700));
    let (taken, took) = timed_try(lock, wait).await;
    assert!(!taken);
    assert!(took >= wait, "gave up early: {took:?} < {wait:?}");
    assert!(
        took <= late,
        "gave up late: {took:?} for {wait:?} with steps up to {step:?}"
    );
    let started = Instant::now();
    assert!(!lock.try_lock_for(wait).await.unwrap());
    let took = started.elapsed();
    assert!(took >= wait && took <= late, "{took:?} for {wait:?}");
}

#[tokio::test]
async fn bounded_waits_end_within_one_backoff_step() {
    let Bed(server, client, raw, name) = Bed::new("spin-wait").await;
    let holder = server.client().await;
    holder.get_spin_lock(&name).lock().await.unwrap();
    let held = hgetall(&raw, &name).await;

    let backoffs = [
        Backoff::default(),
        Backoff::constant(Backoff::DEFAULT_CONSTANT).unwrap(),
        Backoff::constant(ms(400)).unwrap(),
        // A step far longer than the wait: the wait still ends on time.
        Backoff::constant(Duration::from_secs(10)).unwrap(),
        Backoff::exponential(ms(3), ms(300), 3).unwrap(),
    ];
    for backoff in backoffs {
        let lock = client.get_spin_lock_with(&name, backoff);
        for wait in [ms(1), ms(250), ms(900)] {
            assert_wait_honoured(&lock, wait).await;
        }
        // A zero wait is one attempt.
        let (taken, took) = timed_try(&lock, Duration::ZERO).await;
        assert!(!taken && took < ms(500), "{took:?}");
    }
    assert_eq!(
        hgetall(&raw, &name).await,
        held,
        "the holder's hash untouched"
    );
    assert_no_subscription(&raw, &[&client, &holder], &name).await;
    client.shutdown().await.unwrap();
    holder.shutdown().await.unwrap();
}

// ---- hand-off timing with the default back-off ------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_off_with_the_default_backoff_is_within_one_step() {
    let Bed(_server, client, raw, name) = Bed::new("spin-hand-off").await;
    let holder = client
        .get_spin_lock(&name)
        .with_owner(LockOwner::from_raw(1));
    let step = max_delay(Backoff::default());

    let mut latencies = Vec::new();
    for hold_ms in [20, 100, 300, 1_000, 2_000, 50, 500, 1_500] {
        holder.lock().await.unwrap();
        let waiter = spawn_lock(client.get_spin_lock(&name));
        tokio::time::sleep(ms(hold_ms)).await;
        holder.unlock().await.unwrap();
        let released = Instant::now();
        let (taken_at, owner) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter got it")
            .unwrap();
        let latency = taken_at.saturating_duration_since(released);
        latencies.push((hold_ms, latency));
        assert!(
            latency <= step + ms(500),
            "hand-off after a {hold_ms} ms hold took {latency:?}"
        );
        client
            .get_spin_lock(&name)
            .with_owner(owner)
            .unlock()
            .await
            .unwrap();
    }
    assert_no_subscription(&raw, &[&client], &name).await;
    eprintln!("spin hand-off latency (hold ms, latency): {latencies:?}");
    client.shutdown().await.unwrap();
}

// ---- 4. sharing a name with an RLock ----------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spin_waiter_polls_past_an_rlock_holder() {
    let Bed(server, rlock_client, raw, name) = Bed::new("spin-after-rlock").await;
    let spin_client = server.client().await;

    let rlock = rlock_client.get_lock(&name);
    rlock.lock().await.unwrap();
    reset_stats(&raw).await;
    let waiter = spawn_lock(spin_client.get_spin_lock(&name));
    assert!(scripts_ran(&raw, 3).await, "the waiter is not polling");
    assert!(!waiter.is_finished());
    assert_no_subscription(&raw, &[&rlock_client, &spin_client], &name).await;
    tokio::time::sleep(ms(500)).await;

    rlock.unlock().await.unwrap(); // publishes `0`, which nobody hears
    let released = Instant::now();
    let (taken_at, owner) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the spin waiter got it")
        .unwrap();
    let latency = taken_at.saturating_duration_since(released);
    assert!(
        latency <= max_delay(Backoff::default()) + ms(500),
        "{latency:?}"
    );
    assert_eq!(
        hgetall(&raw, &name).await,
        pair(&field_of(&spin_client, owner), 1)
    );
    // And the RLock sees the spin hold as a foreign hold.
    assert!(!rlock.try_lock().await.unwrap());
    spin_client
        .get_spin_lock(&name)
        .with_owner(owner)
        .unlock()
        .await
        .unwrap();
    eprintln!("spin waiter after an RLock unlock: {latency:?}");
    rlock_client.shutdown().await.unwrap();
    spin_client.shutdown().await.unwrap();
}

/// The cost of mixing: a spin unlock publishes nothing, so an RLock waiter on the same
/// name, without key tracking, only notices at the end of its TTL-bounded sleep, i.e. up
/// to the holder's lease (the watchdog timeout, 30 s by default, for a watchdog-mode
/// holder) after its last attempt, instead of a few ms after the unlock. (With key
/// tracking, the default, Redis's invalidation of the deleted key wakes it at once:
/// `told_at_once::a_waiter_of_a_deleted_lock_takes_it_at_once`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rlock_waiter_notices_a_spin_unlock_only_at_its_ttl_bound() {
    let Bed(server, rlock_client, raw, name) =
        Bed::with_config("rlock-after-spin", |c| c.key_tracking(false)).await;
    let spin_client = server.client().await;
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;
    let lease = Duration::from_secs(3);

    let spin = spin_client.get_spin_lock(&name);
    spin.lock_with_lease(lease).await.unwrap();
    let locked_at = Instant::now();
    let waiter = tokio::spawn({
        let rlock = rlock_client.get_lock(&name);
        async move {
            let taken = rlock.try_lock_for(Duration::from_secs(20)).await.unwrap();
            (taken, Instant::now(), rlock.owner())
        }
    });
    assert!(
        eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel(&name)).await == 2
        })
        .await,
        "the RLock waiter subscribed (next to the raw listener)"
    );
    tokio::time::sleep(ms(300)).await;
    spin.unlock().await.unwrap();
    let released = Instant::now();
    assert!(!exists(&raw, &name).await);

    let (taken, taken_at, owner) = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the RLock waiter finished")
        .unwrap();
    assert!(taken, "it got the lock within its wait");
    let latency = taken_at.saturating_duration_since(released);
    let since_lock = taken_at.saturating_duration_since(locked_at);
    assert!(
        latency >= ms(1_500),
        "woken after {latency:?}: something woke it before its TTL bound"
    );
    assert!(
        since_lock <= lease + ms(1_500),
        "took {since_lock:?} from the spin lock, lease {lease:?}"
    );
    assert_eq!(
        drain(&mut rx, ms(300)).await,
        vec![],
        "the spin unlock published nothing"
    );
    rlock_client
        .get_lock(&name)
        .with_owner(owner)
        .unlock()
        .await
        .unwrap();
    eprintln!("RLock waiter after a spin unlock: {latency:?} (holder's lease {lease:?})");
    rlock_client.shutdown().await.unwrap();
    spin_client.shutdown().await.unwrap();
}

// ---- 5. bad back-offs -------------------------------------------------------------------

fn assert_invalid(result: redisson_lock::Result<Backoff>, what: &str) {
    match result {
        Err(Error::InvalidArgument(message)) => assert!(!message.is_empty(), "{what}"),
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_backoffs_are_invalid_argument_and_extreme_ones_do_not_panic() {
    assert_invalid(Backoff::constant(Duration::ZERO), "constant 0");
    assert_invalid(Backoff::constant(Duration::from_nanos(1)), "constant 1 ns");
    assert_invalid(
        Backoff::constant(Duration::from_micros(999)),
        "constant < 1 ms",
    );
    assert_invalid(Backoff::exponential(Duration::ZERO, ms(10), 2), "initial 0");
    assert_invalid(
        Backoff::exponential(Duration::from_micros(500), ms(10), 2),
        "initial < 1 ms",
    );
    assert_invalid(Backoff::exponential(ms(10), ms(5), 2), "max < initial");
    assert_invalid(Backoff::exponential(ms(1), Duration::ZERO, 2), "max 0");
    assert_invalid(Backoff::exponential(ms(1), ms(128), 0), "multiplier 0");

    // Built through the variants, they are refused by every acquisition, before any I/O.
    let Bed(_server, client, raw, name) = Bed::new("spin-hand-built").await;
    reset_stats(&raw).await;
    let hand_built = [
        Backoff::Constant(Duration::ZERO),
        Backoff::Constant(Duration::from_micros(10)),
        Backoff::Exponential {
            initial: Duration::ZERO,
            max: ms(10),
            multiplier: 2,
        },
        Backoff::Exponential {
            initial: ms(10),
            max: ms(5),
            multiplier: 2,
        },
        Backoff::Exponential {
            initial: ms(1),
            max: ms(128),
            multiplier: 0,
        },
    ];
    for backoff in hand_built {
        let lock = client.get_spin_lock_with(&name, backoff);
        let is_invalid = |result: redisson_lock::Result<()>, what: &str| {
            assert!(
                matches!(result, Err(Error::InvalidArgument(_))),
                "{backoff:?} {what}: {result:?}"
            )
        };
        is_invalid(lock.lock().await, "lock");
        is_invalid(lock.try_lock().await.map(drop), "try_lock");
        is_invalid(lock.try_lock_for(ms(100)).await.map(drop), "try_lock_for");
        is_invalid(
            lock.try_lock_with_lease(ms(100), ms(1_000)).await.map(drop),
            "try_lock_with_lease",
        );
        is_invalid(lock.acquire().await.map(drop), "acquire");
        // What needs no back-off still works.
        assert!(!lock.is_locked().await.unwrap());
    }
    assert_eq!(script_calls(&raw).await, 0, "no acquire script ran");
    assert!(!exists(&raw, &name).await);
    let lock = client.get_spin_lock_with(&name, hand_built[0]);
    assert!(!lock.force_unlock().await.unwrap());

    // The smallest and largest accepted ones.
    assert!(Backoff::constant(ms(1)).is_ok());
    assert!(Backoff::exponential(ms(1), ms(1), 1).is_ok());
    let huge_steps = Backoff::exponential(ms(1), Duration::MAX, u32::MAX).unwrap();
    let never_again = Backoff::constant(Duration::MAX).unwrap();

    // Used for real, they wait without panicking or overflowing.
    let name = key("spin-extreme");
    client
        .get_spin_lock(&name)
        .with_owner(LockOwner::from_raw(1))
        .lock_with_lease(Duration::from_secs(2))
        .await
        .unwrap();
    for backoff in [huge_steps, never_again] {
        let lock = client.get_spin_lock_with(&name, backoff);
        assert_wait_honoured(&lock, ms(150)).await;
    }
    // A step longer than the wait is cut at the wait's re-check (2 s) or the deadline,
    // where one last attempt runs: one of them finds the lease (2 s) ended and takes the
    // lock.
    for backoff in [huge_steps, never_again] {
        let lock = client.get_spin_lock_with(&name, backoff);
        let started = Instant::now();
        assert!(lock.try_lock_for(Duration::from_secs(3)).await.unwrap());
        let took = started.elapsed();
        assert!(took >= ms(1_900) && took < ms(4_500), "{took:?}");
        lock.unlock().await.unwrap();
        client
            .get_spin_lock(&name)
            .with_owner(LockOwner::from_raw(1))
            .lock_with_lease(Duration::from_secs(2))
            .await
            .unwrap();
    }
    client.shutdown().await.unwrap();
}

/// A waiter sleeping a long back-off step still sees a shutdown at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spin_waiter_in_a_long_step_sees_shutdown_promptly() {
    let Bed(server, client, raw, name) = Bed::new("spin-shutdown").await;
    let holder = server.client().await;
    holder.get_spin_lock(&name).lock().await.unwrap();

    let lock =
        client.get_spin_lock_with(&name, Backoff::constant(Duration::from_secs(30)).unwrap());
    reset_stats(&raw).await;
    let waiter = tokio::spawn(async move { lock.lock().await });
    // It tried, and now sleeps its 30 s step.
    assert!(scripts_ran(&raw, 1).await, "the waiter never tried");
    client.shutdown().await.unwrap();
    let stopped = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter ended")
        .unwrap();
    assert!(matches!(result, Err(Error::Shutdown)), "{result:?}");
    assert!(
        stopped.elapsed() < Duration::from_secs(2),
        "{:?}",
        stopped.elapsed()
    );
    holder.shutdown().await.unwrap();
}

// ---- 6. the local line: one client's waiters are handed the lock ------------------------

/// Eight tasks of one client on one spin lock: only the head of the client's line polls,
/// an unlock hands the lock to the next local waiter in the same script (the field moves,
/// nothing is published, nobody subscribes), so an acquisition costs about one script
/// (the unlock) instead of a poll or more; a spin waiter of another client still gets
/// the lock (within 10 s here: the real release after each run of hand-offs frees it for
/// about a round trip, and the foreign poller must land in one; its wait is printed, not
/// bounded more tightly on a noisy machine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_waiters_are_handed_the_lock_and_another_client_still_gets_it() {
    const TASKS: usize = 8;
    const IN_A_ROW: u32 = 16;
    let Bed(server, client, raw, name) =
        Bed::with_config("spin-line", |c| c.local_handoffs(IN_A_ROW)).await;
    let other = server.client().await;
    let counter = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    reset_stats(&raw).await;
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let lock = client.get_spin_lock_with(&name, Backoff::constant(ms(20)).unwrap());
        tasks.push(spawn_counting(lock, counter.clone(), stop.clone()));
    }
    // Another client's spin waiter, once the local tasks are busy.
    let busy = |n: u64| {
        let counter = counter.clone();
        move || {
            let done = counter.load(Ordering::SeqCst) >= n;
            async move { done }
        }
    };
    assert!(
        eventually(Duration::from_secs(10), busy(10)).await,
        "the local tasks took nothing"
    );
    let foreign = other.get_spin_lock_with(&name, Backoff::constant(ms(2)).unwrap());
    let started = Instant::now();
    assert!(
        foreign.try_lock_for(Duration::from_secs(10)).await.unwrap(),
        "the other client's spin waiter got the lock"
    );
    let foreign_wait = started.elapsed();
    foreign.unlock().await.unwrap();
    // The local tasks go on after it.
    let after = counter.load(Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(10), busy((after + 10).max(60))).await,
        "the local tasks stopped after the other client's hold"
    );
    stop.store(true, Ordering::Relaxed);
    let mut local = 0u64;
    for task in tasks {
        local += tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("a local task finished")
            .unwrap();
    }
    let scripts = script_calls(&raw).await;
    let published = command_calls(&raw, "publish").await;
    eprintln!(
        "{local} local acquisitions, {scripts} scripts ({:.2} per acquisition); the other client waited {foreign_wait:?}",
        scripts as f64 / local as f64
    );
    assert_eq!(counter.load(Ordering::SeqCst), local, "no lost update");
    assert!(local > 50, "the local tasks made progress: {local}");
    assert_eq!(
        published, 0,
        "a spin lock publishes nothing, hand-off or not"
    );
    assert_no_subscription(&raw, &[&client, &other], &name).await;
    // Hand-offs: one script per acquisition (its unlock), plus the head's polls and the
    // real releases after each run of hand-offs. Without the line every task polls: more
    // than two scripts per acquisition under this contention.
    assert!(
        (scripts as f64) < 1.5 * local as f64,
        "{scripts} scripts for {local} acquisitions: waiters poll instead of being handed the lock"
    );
    assert!(!exists(&raw, &name).await, "free at the end");
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

/// Found by the model tests (`tests/models.rs`, spin): a waiter of the client that holds
/// a spin lock, parked behind that local holder, slept until the holder's lease would end
/// (30 s with the watchdog) when another client freed the lock (a force unlock publishes
/// nothing to a spin lock, as Redisson's). Redisson's spin waiters poll all along, so it
/// must take the lock within a back-off step or so. The race was about 1 round in 30.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_waiter_takes_a_lock_another_client_force_unlocked_within_a_backoff_step() {
    let Duo(_server, [a, b], _raw, name) = Duo::new("spin-foreign-release").await;
    for round in 0..100 {
        let name = format!("{name}-{round}");
        let holder = a.get_spin_lock(&name).with_owner(LockOwner::from_raw(1));
        let waiter = a.get_spin_lock(&name).with_owner(LockOwner::from_raw(2));
        let other = b.get_spin_lock(&name).with_owner(LockOwner::from_raw(3));
        assert!(holder.try_lock().await.unwrap());
        let lease = Duration::from_secs(10);
        assert!(
            holder
                .try_lock_with_lease(Duration::ZERO, lease)
                .await
                .unwrap()
        );
        let waiting =
            tokio::spawn(async move { waiter.try_lock_for(Duration::from_secs(40)).await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(holder.try_lock().await.unwrap(), "re-entry");
        holder.unlock().await.unwrap();
        assert!(other.force_unlock().await.unwrap());
        let took = tokio::time::timeout(Duration::from_secs(3), waiting).await;
        assert!(
            matches!(took, Ok(Ok(Ok(true)))),
            "round {round}: the local waiter did not take the free lock within 3 s: {took:?}"
        );
    }
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
