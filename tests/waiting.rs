//! Waiting without polling: waiters sleep on the lock's channel and are woken by the
//! unlock message (ours or a foreign client's), or by the holder's TTL running out.

mod support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, RLock};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Waits until Redis has run at least `n` scripts since the last `reset_stats`. A waiter
/// runs two before it sleeps (the first attempt, and the retry after subscribing).
async fn wait_scripts(raw: &fred::prelude::Client, n: u64) {
    let ran = eventually(Duration::from_secs(5), || async {
        script_calls(raw).await >= n
    })
    .await;
    assert!(ran, "expected {n} script calls within 5 s");
}

/// Lock and unlock once so that the scripts are cached: later `INFO commandstats` counts
/// then show no `NOSCRIPT` round trips.
async fn warm_up(client: &Client) {
    let lock = client.get_lock(key("warm-up"));
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
}

/// This file's set-up: [`Bed`] with its client warmed up ([`warm_up`]), and the RLock of
/// its name.
async fn warm_bed(what: &str) -> (Bed, RLock) {
    let bed = Bed::new(what).await;
    warm_up(&bed.1).await;
    let lock = bed.1.get_lock(&bed.3);
    (bed, lock)
}

/// Writes a lock hash the way another Redisson node would.
async fn hold_foreign(raw: &fred::prelude::Client, name: &str) {
    let field = format!("{}:1", uuid_like());
    let _: () = raw.hset(name, (field.as_str(), 1)).await.unwrap();
    let _: () = raw.pexpire(name, 30_000, None).await.unwrap();
}

fn uuid_like() -> String {
    // Any id that is not ours; Java writes a v4 UUID.
    "5f0c3a4e-9d2b-4c41-8e0a-0123456789ab".to_string()
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let index = (sorted.len() * p / 100).min(sorted.len() - 1);
    sorted[index]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_off_is_woken_by_the_unlock_message() {
    let (Bed(_server, client, raw, name), lock) = warm_bed("hand-off").await;

    let mut latencies = Vec::with_capacity(50);
    for round in 0..50 {
        let (locked_tx, locked_rx) = oneshot::channel();
        let (go_tx, go_rx) = oneshot::channel::<()>();
        let holder_lock = lock.clone();
        let holder = tokio::spawn(async move {
            holder_lock.lock().await.unwrap();
            locked_tx.send(()).unwrap();
            go_rx.await.unwrap();
            holder_lock.unlock().await.unwrap();
            Instant::now()
        });
        locked_rx.await.unwrap();
        if round == 0 {
            // A watchdog lease: only a message can explain a fast hand-off.
            assert!(pttl(&raw, &name).await > 29_000);
        }
        reset_stats(&raw).await;
        let waiter_lock = lock.clone();
        let waiter = tokio::spawn(async move {
            waiter_lock.lock().await.unwrap();
            let acquired_at = Instant::now();
            waiter_lock.unlock().await.unwrap();
            acquired_at
        });
        // Both attempts of the waiter ran: it is subscribed and about to sleep.
        wait_scripts(&raw, 2).await;
        go_tx.send(()).unwrap();
        let unlocked_at = holder.await.unwrap();
        let acquired_at = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter was not woken within 10 s")
            .unwrap();
        latencies.push(acquired_at.saturating_duration_since(unlocked_at));
    }

    latencies.sort();
    let median = percentile(&latencies, 50);
    let p90 = percentile(&latencies, 90);
    let max = *latencies.last().unwrap();
    println!("hand-off over 50 rounds: median {median:?}, p90 {p90:?}, max {max:?}");
    assert!(
        median < Duration::from_millis(100),
        "median hand-off {median:?}"
    );
    assert!(max < Duration::from_secs(1), "slowest hand-off {max:?}");
    assert!(
        eventually(Duration::from_secs(2), || async {
            client.subscribed_channels() == 0
        })
        .await
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_holder_is_outwaited_by_its_ttl() {
    let (Bed(_server, client, raw, _), lock) = warm_bed("vanished").await;

    let holder = lock.clone();
    let held_at = tokio::spawn(async move {
        // Never unlocked: the holder "crashes" while holding a 1 s lease.
        holder
            .lock_with_lease(Duration::from_secs(1))
            .await
            .unwrap();
        Instant::now()
    })
    .await
    .unwrap();
    reset_stats(&raw).await;

    tokio::time::timeout(Duration::from_secs(5), lock.lock())
        .await
        .expect("the waiter must retry when the holder's TTL runs out")
        .unwrap();
    let waited = held_at.elapsed();
    println!("acquired {waited:?} after a 1 s lease was taken");
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_millis(2_500),
        "acquired after {waited:?}"
    );
    // Nobody unlocked, so nothing was published: the TTL-bounded sleep did it.
    assert_eq!(command_calls(&raw, "publish").await, 0);
    // Slept through the TTL instead of polling: a handful of attempts, not hundreds.
    let scripts = script_calls(&raw).await;
    assert!(scripts <= 5, "{scripts} acquire attempts while waiting 1 s");
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_lock_with_a_wait_budget() {
    let Bed(_server, client, _raw, name) = Bed::new("budget").await;
    let lock = client.get_lock(&name);

    // Held for the whole budget: false after about the budget.
    let (locked_tx, locked_rx) = oneshot::channel();
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let holder_lock = lock.clone();
    let holder = tokio::spawn(async move {
        holder_lock.lock().await.unwrap();
        locked_tx.send(()).unwrap();
        release_rx.await.unwrap();
        holder_lock.unlock().await.unwrap();
    });
    locked_rx.await.unwrap();
    let start = Instant::now();
    let taken = lock
        .try_lock_with_lease(Duration::from_millis(300), Duration::from_secs(10))
        .await
        .unwrap();
    let took = start.elapsed();
    println!("try_lock(300 ms) on a held lock gave up after {took:?}");
    assert!(!taken);
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(1_500),
        "gave up after {took:?}"
    );
    release_tx.send(()).unwrap();
    holder.await.unwrap();

    // The holder unlocks after 100 ms: taken well within the budget.
    let (locked_tx, locked_rx) = oneshot::channel();
    let holder_lock = lock.clone();
    let holder = tokio::spawn(async move {
        holder_lock.lock().await.unwrap();
        locked_tx.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        holder_lock.unlock().await.unwrap();
    });
    locked_rx.await.unwrap();
    let start = Instant::now();
    let taken = lock
        .try_lock_with_lease(Duration::from_millis(300), Duration::from_secs(10))
        .await
        .unwrap();
    let took = start.elapsed();
    println!("try_lock(300 ms) with a holder leaving after 100 ms took {took:?}");
    assert!(taken);
    assert!(took < Duration::from_millis(300), "took {took:?}");
    holder.await.unwrap();
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_wait_is_exactly_one_attempt() {
    let (Bed(_server, client, raw, _), lock) = warm_bed("zero-wait").await;
    let holder = lock.clone();
    tokio::spawn(async move { holder.lock().await.unwrap() })
        .await
        .unwrap();

    reset_stats(&raw).await;
    let taken = lock
        .try_lock_with_lease(Duration::ZERO, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(!taken);
    assert_eq!(script_calls(&raw).await, 1);
    assert_eq!(command_calls(&raw, "subscribe").await, 0);

    reset_stats(&raw).await;
    assert!(!lock.try_lock_for(Duration::ZERO).await.unwrap());
    assert!(!lock.try_lock().await.unwrap());
    assert_eq!(script_calls(&raw).await, 2);
    assert_eq!(command_calls(&raw, "subscribe").await, 0);
    assert_eq!(client.subscribed_channels(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contention_does_not_poll() {
    const TASKS: usize = 16;
    let (Bed(_server, client, raw, name), lock) = warm_bed("contention").await;

    reset_stats(&raw).await;
    let acquisitions = Arc::new(AtomicU64::new(0));
    let stop_at = Instant::now() + Duration::from_secs(3);
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let lock = lock.clone();
            let acquisitions = acquisitions.clone();
            tokio::spawn(async move {
                while Instant::now() < stop_at {
                    lock.lock().await.unwrap();
                    acquisitions.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                    lock.unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let acquired = acquisitions.load(Ordering::Relaxed);
    let scripts = script_calls(&raw).await;
    // Every acquisition was unlocked exactly once by an unlock script, and nothing else
    // runs scripts here (the watchdog renews every 10 s; this test takes 3 s). So the
    // acquire scripts are the total minus one unlock per acquisition. A polling waiter
    // would run an acquire every few ms per task: thousands per second. Waking on
    // messages costs about two per acquisition (the first try, and the retry after
    // subscribing or after being woken, which may lose to a task that barges in).
    let acquire_scripts = scripts - acquired;
    let per_acquisition = acquire_scripts as f64 / acquired as f64;
    println!(
        "{TASKS} tasks, 3 s: {acquired} acquisitions, {scripts} scripts \
         ({acquire_scripts} acquires, {per_acquisition:.2} per acquisition)"
    );
    assert!(acquired >= TASKS as u64, "only {acquired} acquisitions");
    assert!(
        scripts < 5 * acquired,
        "{scripts} scripts for {acquired} acquisitions"
    );
    assert!(
        acquire_scripts < 4 * acquired,
        "{acquire_scripts} acquire scripts for {acquired} acquisitions"
    );

    let channel = channel(&name);
    assert!(
        eventually(Duration::from_secs(2), || async {
            numsub(&raw, &channel).await == 0 && client.subscribed_channels() == 0
        })
        .await,
        "still subscribed: NUMSUB {}, local channels {}",
        numsub(&raw, &channel).await,
        client.subscribed_channels()
    );
    assert!(!lock.is_locked().await.unwrap());
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_unlock_message_wakes_the_waiter() {
    let Bed(_server, client, raw, name) = Bed::new("foreign").await;
    warm_up(&client).await;
    hold_foreign(&raw, &name).await;

    reset_stats(&raw).await;
    let lock = client.get_lock(&name);
    let waiter = tokio::spawn(async move {
        lock.lock().await.unwrap();
        let acquired_at = Instant::now();
        lock.unlock().await.unwrap();
        acquired_at
    });
    wait_scripts(&raw, 2).await;
    assert_eq!(numsub(&raw, &channel(&name)).await, 1);

    // What a Java client's unlock does: delete the hash, publish 0.
    let _: i64 = raw.del(&name).await.unwrap();
    let _: i64 = raw.publish(channel(&name), "0").await.unwrap();
    let published_at = Instant::now();
    let acquired_at = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("not woken by the foreign message")
        .unwrap();
    let latency = acquired_at.saturating_duration_since(published_at);
    println!("woken by a foreign unlock after {latency:?}");
    assert!(
        latency < Duration::from_millis(300),
        "woken after {latency:?}"
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_one_wakes_the_local_line() {
    let Bed(_server, client, raw, name) = Bed::new("wake-all").await;
    warm_up(&client).await;
    hold_foreign(&raw, &name).await;

    reset_stats(&raw).await;
    let (acquired_tx, mut acquired_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut releases = Vec::new();
    let mut waiters = Vec::new();
    for i in 0..3 {
        let lock = client.get_lock(&name);
        let acquired_tx = acquired_tx.clone();
        let (release_tx, release_rx) = oneshot::channel::<()>();
        releases.push(Some(release_tx));
        waiters.push(tokio::spawn(async move {
            lock.lock().await.unwrap();
            acquired_tx.send((i, Instant::now())).unwrap();
            release_rx.await.unwrap();
            lock.unlock().await.unwrap();
        }));
    }
    // All three wait in the lock's local line; the first is subscribed and slept after
    // its retry, the two behind it wait locally.
    assert!(
        eventually(Duration::from_secs(5), || async {
            client.local_waiters() == 3
        })
        .await
    );
    wait_scripts(&raw, 2).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    reset_stats(&raw).await;
    let _: i64 = raw.del(&name).await.unwrap();
    let _: i64 = raw.publish(channel(&name), "1").await.unwrap();
    let published_at = Instant::now();
    let (first, at) = tokio::time::timeout(Duration::from_secs(5), acquired_rx.recv())
        .await
        .expect("nobody woke up")
        .unwrap();
    println!(
        "first waiter acquired {:?} after the `1`",
        at.saturating_duration_since(published_at)
    );
    // Only the head of the local line listens: the `1` woke it, and it took the lock with
    // one script; the two behind it are handed the lock in turn by the unlocks below,
    // with no script of their own.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(script_calls(&raw).await, 1);

    let mut order = vec![first];
    let mut next = first;
    for _ in 0..2 {
        releases[next].take().unwrap().send(()).unwrap();
        let (i, at) = tokio::time::timeout(Duration::from_secs(5), acquired_rx.recv())
            .await
            .expect("the next waiter was not handed the lock")
            .unwrap();
        order.push(i);
        next = i;
        assert!(at.saturating_duration_since(published_at) < Duration::from_secs(5));
    }
    releases[next].take().unwrap().send(()).unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }
    order.sort();
    assert_eq!(order, vec![0, 1, 2]);
    assert!(
        published_at.elapsed() < Duration::from_secs(10),
        "far below the 30 s TTL"
    );
    client.shutdown().await.unwrap();
}

/// A waiter must be subscribed in Redis before its retry runs: otherwise an unlock that
/// lands between the retry and the subscription is never heard, and the waiter sleeps
/// for the holder's whole TTL. Checked by the order Redis saw: once the waiter's second
/// script call has run, `PUBSUB NUMSUB` must already count its subscription. The holder
/// is another client (Redisson holders: `tests/java/locks.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_waiter_is_subscribed_before_it_retries() {
    let Bed(server, client, raw, _) = Bed::new("bed").await;
    let other = server.client().await;
    // Load the scripts, so that every attempt below is exactly one EVALSHA.
    for c in [&client, &other] {
        let warm = c.get_lock(key("warm"));
        warm.lock().await.unwrap();
        warm.unlock().await.unwrap();
    }

    for round in 0..20 {
        let name = key("subscribed-first");
        let holder = other
            .get_lock(&name)
            .with_owner(redisson_lock::LockOwner::from_raw(3));
        holder
            .lock_with_lease(Duration::from_secs(120))
            .await
            .unwrap();
        reset_stats(&raw).await;
        let waiter = tokio::spawn({
            let lock = client.get_lock(&name);
            async move {
                lock.lock().await.unwrap();
                lock.unlock().await.unwrap();
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while script_calls(&raw).await < 2 {
            assert!(
                Instant::now() < deadline,
                "round {round}: the waiter never retried"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(
            numsub(&raw, &channel(&name)).await,
            1,
            "round {round}: the retry ran before the subscription existed"
        );
        // The holder lets go; the message wakes the waiter long before the 120 s lease.
        holder.unlock().await.unwrap();
        tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the waiter missed the unlock"))
            .unwrap();
    }
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

/// The same semantics for every primitive's wait (`crate::engine::wait::waiter`): when subscribing
/// is slow, a wait with a deadline waits for it until the deadline and answers "not
/// taken" (`false` / `None`); it does not fail early with `Error::Timeout` because the
/// subscription timeout is shorter than its budget. (Until 0.1 the permit-expirable
/// semaphore failed with `Error::Timeout` at the subscription timeout while the others
/// waited to their deadline.) The subscriber connection is stalled by a proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscription_ends_every_wait_at_its_deadline() {
    let server = RedisServer::start();
    let proxy = support::faulty::FaultyProxy::start(server.port).await;
    let client = Client::connect(
        redisson_lock::Config::builder()
            .url(proxy.url())
            .subscription_timeout(Duration::from_millis(300))
            // No key-tracking listener (a third connection, made in the background): the
            // test stalls the second connection, the subscriber.
            .key_tracking(false)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        proxy.connections(),
        2,
        "a command and a subscriber connection"
    );
    // Everything the waits want is taken, by another client.
    let other = server.client().await;
    let names = [
        key("slow-sub-l"),
        key("slow-sub-f"),
        key("slow-sub-s"),
        key("slow-sub-p"),
        key("slow-sub-c"),
    ];
    other.get_lock(&names[0]).lock().await.unwrap();
    other.get_fair_lock(&names[1]).lock().await.unwrap();
    assert!(
        other
            .get_semaphore(&names[2])
            .try_set_permits(0)
            .await
            .unwrap()
    );
    let pes = other.get_permit_expirable_semaphore(&names[3]);
    assert!(pes.try_set_permits(1).await.unwrap());
    pes.acquire(None).await.unwrap();
    assert!(
        other
            .get_count_down_latch(&names[4])
            .try_set_count(1)
            .await
            .unwrap()
    );
    // The subscriber stalls: no SUBSCRIBE gets an answer.
    proxy.set_flow_of(1, support::faulty::Flow::Stall);

    let budget = Duration::from_millis(1500);
    let timed = |what: &'static str, started: Instant, answer: String| {
        let took = started.elapsed();
        println!("{what}: {answer} after {took:?}");
        assert!(
            took >= budget - Duration::from_millis(100),
            "{what} answered {answer} after {took:?}: before its deadline"
        );
        took
    };
    let started = Instant::now();
    let taken = client.get_lock(&names[0]).try_lock_for(budget).await;
    timed("lock", started, format!("{taken:?}"));
    assert!(matches!(taken, Ok(false)), "{taken:?}");
    let started = Instant::now();
    let taken = client.get_fair_lock(&names[1]).try_lock_for(budget).await;
    timed("fair lock", started, format!("{taken:?}"));
    assert!(matches!(taken, Ok(false)), "{taken:?}");
    let started = Instant::now();
    let taken = client
        .get_semaphore(&names[2])
        .try_acquire_for(1, budget)
        .await;
    timed(
        "semaphore",
        started,
        format!("{:?}", taken.as_ref().map(|p| p.is_some())),
    );
    assert!(
        matches!(taken, Ok(None)),
        "{:?}",
        taken.map(|p| p.is_some())
    );
    let started = Instant::now();
    let taken = client
        .get_permit_expirable_semaphore(&names[3])
        .try_acquire(budget, None)
        .await;
    timed("permit-expirable semaphore", started, format!("{taken:?}"));
    assert!(matches!(taken, Ok(None)), "{taken:?}");
    let started = Instant::now();
    let opened = client
        .get_count_down_latch(&names[4])
        .wait_for(budget)
        .await;
    timed("latch", started, format!("{opened:?}"));
    assert!(matches!(opened, Ok(false)), "{opened:?}");

    // Without a deadline, `Error::Timeout` at the subscription timeout, for all alike.
    let started = Instant::now();
    let locked =
        tokio::time::timeout(Duration::from_secs(5), client.get_lock(&names[0]).lock()).await;
    println!(
        "lock() without a deadline: {locked:?} after {:?}",
        started.elapsed()
    );
    assert!(
        matches!(locked, Ok(Err(redisson_lock::Error::Timeout { .. }))),
        "{locked:?}"
    );
    proxy.set_flow_of(1, support::faulty::Flow::Pass);
    other.shutdown().await.unwrap();
}

/// The same re-check for every primitive's wait (`crate::engine::wait::waiter::RECHECK`, 2 s): a
/// change that nobody published (another program's `DEL`, `SET` or `INCR`, or a message
/// lost with a connection) costs every waiter at most that long. (Until 0.1 a lock waiter
/// slept to the holder's TTL, up to the watchdog timeout, and the semaphore, the
/// permit-expirable semaphore and the latch re-checked after 2 s, 1 s and 5 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpublished_change_costs_every_waiter_at_most_the_recheck() {
    let server = RedisServer::start();
    let (client, other, raw) = (
        server.client().await,
        server.client().await,
        server.raw().await,
    );
    let names = [
        key("recheck-l"),
        key("recheck-f"),
        key("recheck-s"),
        key("recheck-p"),
        key("recheck-c"),
    ];
    other.get_lock(&names[0]).lock().await.unwrap();
    other.get_fair_lock(&names[1]).lock().await.unwrap();
    assert!(
        other
            .get_semaphore(&names[2])
            .try_set_permits(0)
            .await
            .unwrap()
    );
    assert!(
        other
            .get_permit_expirable_semaphore(&names[3])
            .try_set_permits(0)
            .await
            .unwrap()
    );
    assert!(
        other
            .get_count_down_latch(&names[4])
            .try_set_count(1)
            .await
            .unwrap()
    );
    let wait = Duration::from_secs(20);
    let waiters = {
        let (lock, fair) = (client.get_lock(&names[0]), client.get_fair_lock(&names[1]));
        let semaphore = client.get_semaphore(&names[2]);
        let pes = client.get_permit_expirable_semaphore(&names[3]);
        let latch = client.get_count_down_latch(&names[4]);
        let timed = |what: &'static str, done: tokio::task::JoinHandle<bool>| async move {
            (what, done.await.unwrap(), Instant::now())
        };
        vec![
            timed(
                "lock",
                tokio::spawn(async move { lock.try_lock_for(wait).await.unwrap() }),
            ),
            timed(
                "fair lock",
                tokio::spawn(async move { fair.try_lock_for(wait).await.unwrap() }),
            ),
            timed(
                "semaphore",
                tokio::spawn(async move {
                    semaphore
                        .try_acquire_for(1, wait)
                        .await
                        .unwrap()
                        .map(|p| p.forget())
                        .is_some()
                }),
            ),
            timed(
                "permit-expirable semaphore",
                tokio::spawn(async move { pes.try_acquire(wait, None).await.unwrap().is_some() }),
            ),
            timed(
                "latch",
                tokio::spawn(async move { latch.wait_for(wait).await.unwrap() }),
            ),
        ]
    };
    // Every waiter is asleep on its channel before the changes.
    assert!(
        eventually(Duration::from_secs(5), || async {
            let mut subscribed = 0;
            for channel in [
                format!("redisson_lock__channel:{{{}}}", names[0]),
                format!("redisson_sc:{{{}}}", names[2]),
                format!("redisson_sc:{{{}}}", names[3]),
                format!("redisson_countdownlatch__channel__{{{}}}", names[4]),
            ] {
                subscribed += numsub(&raw, &channel).await.min(1);
            }
            subscribed == 4
        })
        .await,
        "the waiters did not subscribe"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Changes nobody publishes.
    let changed = Instant::now();
    let _: i64 = raw
        .del(vec![
            names[0].as_str(),
            names[1].as_str(),
            names[4].as_str(),
        ])
        .await
        .unwrap();
    let _: () = raw.set(&names[2], 1, None, None, false).await.unwrap();
    let _: i64 = raw.incr(&names[3]).await.unwrap();
    for waiter in waiters {
        let (what, done, at) = waiter.await;
        let took = at - changed;
        println!("{what}: {done} {took:?} after the unpublished change");
        assert!(done, "{what} did not get what it waited for");
        assert!(
            took < Duration::from_millis(3_000),
            "{what} noticed an unpublished change after {took:?} (the re-check is 2 s)"
        );
    }
    other.shutdown().await.unwrap();
}
