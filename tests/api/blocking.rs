//! The blocking API (`redisson_lock::blocking`, feature `blocking`) with `std::thread`s
//! against a real redis-server: the owner is the OS thread (re-entry per thread,
//! exclusion between threads and with async clients), waits and leases take the time
//! asked, every kind works, guards release on drop and on panic, shutdown and drop end
//! the client's threads, and calls made inside a tokio runtime work.
#![cfg(feature = "blocking")]

use crate::support;
use support::*;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex, RwLock, RwLockReadGuard};
use std::thread;
use std::time::{Duration, Instant};

use redisson_lock::blocking::{self, Client};
use redisson_lock::{Error, HoldState, LockOwner};

/// The thread-count test holds this exclusively, every other test shared: it counts the
/// process's runtime threads by name, which other tests' clients would disturb.
static THREAD_COUNT: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    THREAD_COUNT.read().unwrap_or_else(|p| p.into_inner())
}

fn connect(server: &RedisServer) -> Client {
    Client::connect(server.config().build().expect("config")).expect("connect")
}

/// Runs `f` on a new thread and returns its result.
fn on_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    thread::spawn(f).join().expect("thread")
}

#[test]
fn reentry_is_per_thread() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let lock = client.get_lock(key("reentry"));

    lock.lock().unwrap();
    lock.lock().unwrap();
    assert_eq!(lock.hold_count().unwrap(), 2);
    assert!(lock.is_held_by_current_thread().unwrap());
    assert!(lock.is_held_by(LockOwner::current_thread()).unwrap());
    // A second handle on the same name, same thread: the same owner.
    assert_eq!(client.get_lock(lock.name()).hold_count().unwrap(), 2);

    let other = lock.clone();
    let (held_elsewhere, count_elsewhere, unlock_elsewhere, waited) = on_thread(move || {
        let start = Instant::now();
        let taken = other.try_lock_for(Duration::from_millis(300)).unwrap();
        (
            other.is_held_by_current_thread().unwrap(),
            other.hold_count().unwrap(),
            other.unlock(),
            (taken, start.elapsed()),
        )
    });
    assert!(!held_elsewhere);
    assert_eq!(count_elsewhere, 0);
    assert!(matches!(unlock_elsewhere, Err(Error::NotOwner { .. })));
    assert!(!waited.0, "another thread must not get a held lock");
    assert!(waited.1 >= Duration::from_millis(250), "{:?}", waited.1);

    // A waiter in another thread gets the lock only after the second unlock.
    let waiter = lock.clone();
    let (got_tx, got_rx) = mpsc::channel();
    let waiting = thread::spawn(move || {
        waiter.lock().unwrap();
        got_tx.send(Instant::now()).unwrap();
        waiter.unlock().unwrap();
    });
    lock.unlock().unwrap();
    assert_eq!(lock.hold_count().unwrap(), 1);
    assert!(
        got_rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "one hold remains: the waiter must still wait"
    );
    let released = Instant::now();
    lock.unlock().unwrap();
    let got = got_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("waiter woken");
    assert!(got.duration_since(released) < Duration::from_secs(2));
    waiting.join().unwrap();
    assert!(!lock.is_locked().unwrap());
    client.shutdown().unwrap();
}

/// 8 blocking threads and 4 tasks of an async client (another Redisson node) take the
/// same lock `ROUNDS` times each and increment an in-process counter by a read, a pause
/// and a write: two holders at once would lose an increment or trip `inside`.
#[test]
fn threads_and_async_tasks_exclude_each_other() {
    const THREADS: usize = 8;
    const TASKS: usize = 4;
    const ROUNDS: u64 = 25;
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let name = key("mutex");
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicBool::new(false));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let async_client = runtime.block_on(server.client());
    let started = Instant::now();

    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let lock = async_client.get_lock(&name);
            let (counter, inside) = (counter.clone(), inside.clone());
            runtime.spawn(async move {
                for _ in 0..ROUNDS {
                    if t % 2 == 0 {
                        lock.lock().await.unwrap();
                    } else {
                        while !lock.try_lock_for(Duration::from_secs(5)).await.unwrap() {}
                    }
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    let value = counter.load(Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_micros(300)).await;
                    counter.store(value + 1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    lock.unlock().await.unwrap();
                }
            })
        })
        .collect();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let lock = client.get_lock(&name);
            let (counter, inside) = (counter.clone(), inside.clone());
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    // Mix the three ways in: waiting, bounded waiting, a guard.
                    let guard = match (t + round as usize) % 3 {
                        0 => {
                            lock.lock().unwrap();
                            None
                        }
                        1 => {
                            while !lock.try_lock_for(Duration::from_secs(5)).unwrap() {}
                            None
                        }
                        _ => Some(lock.acquire().unwrap()),
                    };
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    let value = counter.load(Ordering::SeqCst);
                    thread::sleep(Duration::from_micros(300));
                    counter.store(value + 1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    match guard {
                        Some(guard) => guard.unlock().unwrap(),
                        None => lock.unlock().unwrap(),
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a blocking worker panicked");
    }
    runtime.block_on(async {
        for task in tasks {
            task.await.expect("an async worker panicked");
        }
    });
    let expected = (THREADS + TASKS) as u64 * ROUNDS;
    assert_eq!(counter.load(Ordering::SeqCst), expected);
    eprintln!("{expected} acquisitions in {:?}", started.elapsed());
    assert!(!client.get_lock(&name).is_locked().unwrap());
    client.shutdown().unwrap();
    runtime.block_on(async_client.shutdown()).unwrap();
}

#[test]
fn try_lock_waits_as_long_as_asked() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let lock = client.get_lock(key("wait"));
    lock.lock().unwrap();

    let other = lock.clone();
    let (for_wait, with_lease_wait) = on_thread(move || {
        let start = Instant::now();
        assert!(!other.try_lock_for(Duration::from_millis(400)).unwrap());
        let for_wait = start.elapsed();
        let start = Instant::now();
        assert!(
            !other
                .try_lock_with_lease(Duration::from_millis(400), Duration::from_secs(5))
                .unwrap()
        );
        assert!(other.try_acquire_for(Duration::ZERO).unwrap().is_none());
        (for_wait, start.elapsed())
    });
    for waited in [for_wait, with_lease_wait] {
        assert!(
            waited >= Duration::from_millis(380) && waited < Duration::from_millis(1500),
            "gave up after {waited:?}, asked 400 ms"
        );
    }
    lock.unlock().unwrap();
    client.shutdown().unwrap();
}

#[test]
fn a_lease_ends_the_lock() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let lock = client.get_lock(key("lease"));
    let lease = Duration::from_millis(600);

    assert!(lock.try_lock_with_lease(Duration::ZERO, lease).unwrap());
    let ttl = lock.remain_time_to_live().unwrap().expect("held");
    assert!(ttl <= lease && ttl > Duration::from_millis(300), "{ttl:?}");
    let taken_at = Instant::now();

    let other = lock.clone();
    let (taken, after) = on_thread(move || {
        let taken = other.try_lock_for(Duration::from_secs(5)).unwrap();
        let after = taken_at.elapsed();
        other.unlock().unwrap();
        (taken, after)
    });
    assert!(taken);
    assert!(
        after >= Duration::from_millis(450) && after < Duration::from_millis(2500),
        "a 600 ms lease ended after {after:?}"
    );
    assert!(matches!(lock.unlock(), Err(Error::NotOwner { .. })));

    // The guard of a lease knows when it ran out.
    let guard = lock.acquire_with_lease(Duration::from_millis(300)).unwrap();
    assert!(!guard.is_lost());
    thread::sleep(Duration::from_millis(400));
    assert!(guard.is_lost());
    assert!(matches!(guard.unlock(), Err(Error::NotOwner { .. })));
    client.shutdown().unwrap();
}

/// Every kind the blocking API hands out works through it, with the calling thread as
/// the owner: the reentrant, fair, read-write, fenced, spin, non-reentrant,
/// non-reentrant fair and faster multi-locks each hold (another thread cannot take
/// them, the raw key in Redis names this client and thread) and release; the semaphore
/// and the permit-expirable semaphore hand out and take back permits; a count-down
/// latch wakes a thread waiting on it.
#[test]
fn every_kind_works() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    // The raw state as another program reads it.
    let raw = |args: &[&str]| redis_cli(server.port, args);
    let me = |owner: LockOwner| format!("{}:{owner}", client.id());

    // RLock: re-entry counted in the hash field of this client and thread.
    let plain = client.get_lock(key("plain"));
    plain.lock().unwrap();
    plain.lock().unwrap();
    assert_eq!(plain.hold_count().unwrap(), 2);
    assert_eq!(
        raw(&["hgetall", plain.raw_name()]),
        format!("{}\n2\n", me(plain.owner()))
    );
    let other = plain.clone();
    assert!(!on_thread(move || other.try_lock().unwrap()));
    plain.unlock().unwrap();
    plain.unlock().unwrap();
    assert!(!plain.is_locked().unwrap());
    assert_eq!(raw(&["exists", plain.raw_name()]).trim(), "0");
    assert_eq!(plain.acquire().unwrap().token(), None);

    let fair = client.get_fair_lock(key("fair"));
    fair.lock().unwrap();
    fair.lock().unwrap();
    assert_eq!(fair.hold_count().unwrap(), 2);
    assert_eq!(
        raw(&["hget", fair.raw_name(), &me(fair.owner())]).trim(),
        "2"
    );
    let other = fair.clone();
    assert!(!on_thread(move || other.try_lock().unwrap()));
    fair.unlock().unwrap();
    fair.unlock().unwrap();
    assert!(!fair.is_locked().unwrap());

    // Read-write: readers in two threads at once; a writer waits for both.
    let rw = client.get_read_write_lock(key("rw"));
    rw.read_lock().lock().unwrap();
    let other = rw.read_lock();
    assert!(on_thread(move || {
        let shared = other.try_lock().unwrap();
        other.unlock().unwrap();
        shared
    }));
    assert_eq!(
        raw(&["hget", rw.raw_name(), "mode"]).trim(),
        "read",
        "the read-write hash's mode"
    );
    let writer = rw.write_lock();
    assert!(!on_thread(move || writer.try_lock().unwrap()));
    rw.read_lock().unlock().unwrap();
    let writer = rw.write_lock();
    assert!(on_thread(move || {
        let taken = writer.try_lock().unwrap();
        writer.unlock().unwrap();
        taken
    }));
    assert!(!rw.write_lock().is_locked().unwrap());

    let fenced = client.get_fenced_lock(key("fenced"));
    let first = fenced.lock_and_get_token().unwrap();
    let other = fenced.clone();
    assert!(!on_thread(move || other.try_lock().unwrap()));
    fenced.unlock().unwrap();
    let second = fenced
        .try_lock_and_get_token(Duration::ZERO, Duration::from_secs(5))
        .unwrap()
        .expect("free");
    fenced.unlock().unwrap();
    let third = fenced
        .try_lock_and_get_token_for(Duration::ZERO)
        .unwrap()
        .expect("free");
    fenced.unlock().unwrap();
    let fourth = fenced
        .lock_and_get_token_with_lease(Duration::from_secs(5))
        .unwrap();
    fenced.unlock().unwrap();
    let guard = fenced.acquire().unwrap();
    let fifth = guard.token().expect("a fenced guard has a token");
    guard.unlock().unwrap();
    assert!(first < second && second < third && third < fourth && fourth < fifth);
    assert_eq!(fenced.token().unwrap(), Some(fifth));

    // Spin: a waiter in another thread polls its way in once the holder lets go.
    let spin = client.get_spin_lock(key("spin"));
    spin.lock().unwrap();
    let other = spin.clone();
    let (tx, rx) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let taken = other.try_lock_for(Duration::from_secs(5)).unwrap();
        tx.send(Instant::now()).unwrap();
        other.unlock().unwrap();
        taken
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "the spin waiter got a held lock"
    );
    let released = Instant::now();
    spin.unlock().unwrap();
    assert!(waiter.join().unwrap(), "the spin waiter polls its way in");
    assert!(rx.recv().unwrap() >= released);
    assert!(
        client.get_spin_lock(spin.name()).kind().backoff() == redisson_lock::Backoff::default()
    );

    let non_reentrant = client.get_non_reentrant_lock(key("nonreentrant"));
    non_reentrant.lock().unwrap();
    assert!(matches!(
        non_reentrant.lock(),
        Err(Error::NonReentrant { .. })
    ));
    assert!(!non_reentrant.try_lock().unwrap());
    let other = non_reentrant.clone();
    assert!(!on_thread(move || other.try_lock().unwrap()));
    non_reentrant.unlock().unwrap();
    assert!(!non_reentrant.is_locked().unwrap());

    let non_reentrant_fair = client.get_non_reentrant_fair_lock(key("nonreentrant-fair"));
    non_reentrant_fair.lock().unwrap();
    assert!(
        !non_reentrant_fair
            .try_lock_for(Duration::from_millis(50))
            .unwrap()
    );
    let other = non_reentrant_fair.clone();
    assert!(!on_thread(move || other.try_lock().unwrap()));
    non_reentrant_fair.unlock().unwrap();
    assert!(!non_reentrant_fair.is_locked().unwrap());

    // Faster multi-lock: every value of the group held by this thread, re-entrant,
    // excluding another thread, and gone with the last unlock.
    let group = key("multi");
    let multi = client.get_multi_lock(&group, ["a", "b"]).unwrap();
    multi.lock().unwrap();
    multi.lock().unwrap();
    assert_eq!(multi.hold_count().unwrap(), 2);
    let fields = raw(&["hgetall", multi.raw_name()]);
    for value in ["a", "b"] {
        let field = redisson_lock::kinds::FasterMulti::field_id(value);
        assert!(
            fields.contains(&format!("{field}\n{}\n", me(multi.owner()))),
            "{value} is not held by this thread: {fields:?}"
        );
    }
    let overlapping = client.get_multi_lock(&group, ["b", "c"]).unwrap();
    assert!(!on_thread(move || overlapping.try_lock().unwrap()));
    multi.unlock().unwrap();
    multi.unlock().unwrap();
    assert!(!multi.is_locked().unwrap());
    assert_eq!(raw(&["exists", multi.raw_name()]).trim(), "0");

    // force_unlock works from any thread.
    let forced = client.get_lock(key("forced"));
    forced.lock().unwrap();
    let other = forced.clone();
    assert!(on_thread(move || other.force_unlock().unwrap()));
    assert!(!forced.is_locked().unwrap());

    // Semaphore: permits go and come back, the count in Redis with them.
    let semaphore = client.get_semaphore(key("semaphore"));
    assert!(semaphore.try_set_permits(2).unwrap());
    let two = semaphore.acquire(2).unwrap();
    assert_eq!(two.permits(), 2);
    assert_eq!(raw(&["get", semaphore.name()]).trim(), "0");
    let other = semaphore.clone();
    assert!(on_thread(move || other.try_acquire(1).unwrap().is_none()));
    two.release().unwrap();
    assert_eq!(semaphore.available_permits().unwrap(), 2);
    let one = semaphore
        .try_acquire_for(1, Duration::from_secs(1))
        .unwrap()
        .expect("a free permit");
    assert_eq!(semaphore.available_permits().unwrap(), 1);
    one.release().unwrap();
    assert_eq!(raw(&["get", semaphore.name()]).trim(), "2");

    // Permit-expirable semaphore: a permit with a lease, released by its id.
    let expirable = client.get_permit_expirable_semaphore(key("expirable"));
    assert!(expirable.try_set_permits(1).unwrap());
    let id = expirable.acquire(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(expirable.available_permits().unwrap(), 0);
    assert_eq!(expirable.acquired_permits().unwrap(), 1);
    let other = expirable.clone();
    assert!(on_thread(move || other
        .try_acquire(Duration::ZERO, None)
        .unwrap()
        .is_none()));
    expirable.release(id).unwrap();
    assert_eq!(expirable.available_permits().unwrap(), 1);

    // Count-down latch: a thread waits until the count reaches zero.
    let latch = client.get_count_down_latch(key("latch"));
    assert!(latch.try_set_count(2).unwrap());
    let waiting = latch.clone();
    let (opened_tx, opened_rx) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let opened = waiting.wait_for(Duration::from_secs(10)).unwrap();
        opened_tx.send(Instant::now()).unwrap();
        opened
    });
    latch.count_down().unwrap();
    assert_eq!(latch.get_count().unwrap(), 1);
    assert!(
        opened_rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "the waiter went on with the count at 1"
    );
    let opened_at = Instant::now();
    latch.count_down().unwrap();
    assert!(waiter.join().unwrap(), "the latch did not open");
    let woke = opened_rx.recv().unwrap().duration_since(opened_at);
    assert!(woke < Duration::from_secs(2), "woken after {woke:?}");
    assert_eq!(raw(&["exists", latch.raw_name()]).trim(), "0");
    client.shutdown().unwrap();
}

/// A blocking guard's and a kept permit's signals, waited for from plain threads (the
/// guard's own methods, a clone of the permit's watch): at risk within moments of a
/// connection kill, held again after the reconnect, lost once found gone in Redis.
#[test]
fn a_guard_and_a_kept_permit_tell_their_threads_at_risk_held_again_and_lost() {
    let _shared = shared();
    let server = RedisServer::start();
    let config = server.config().watchdog_timeout(Duration::from_millis(900));
    let client = Client::connect(config.build().expect("config")).expect("connect");
    let name = key("signal");
    let permits = key("signal-permits");
    let guard = client.get_lock(&name).acquire().unwrap();
    let sem = client.get_permit_expirable_semaphore(&permits);
    sem.try_set_permits(1).unwrap();
    let permit = sem.acquire_kept().unwrap();
    assert_eq!(
        (guard.state(), permit.state()),
        (HoldState::Held, HoldState::Held)
    );
    let changes = guard.state_changes();
    assert_eq!(guard.wait_at_risk(Duration::from_millis(20)), None);
    assert!(guard.wait_held_again(Duration::ZERO));

    // Both threads wait before the kill; a third kills the connections.
    let ready = Arc::new(Barrier::new(3));
    let watch = permit.watch().clone();
    let permit_thread = thread::spawn({
        let ready = ready.clone();
        move || {
            ready.wait();
            let state = watch.wait_at_risk(Duration::from_secs(10));
            let at_risk = Instant::now();
            let held = watch.wait_held_again(Duration::from_secs(10));
            (state, at_risk, held, watch.state())
        }
    });
    let port = server.port;
    let killer = thread::spawn({
        let ready = ready.clone();
        move || {
            ready.wait();
            // Time for both waiters to be waiting.
            thread::sleep(Duration::from_millis(200));
            let fault = Instant::now();
            redis_cli(port, &["CLIENT", "KILL", "TYPE", "normal"]);
            fault
        }
    });
    ready.wait();
    let state = guard.wait_at_risk(Duration::from_secs(10));
    let at_risk = Instant::now();
    let fault = killer.join().unwrap();
    assert_eq!(state, Some(HoldState::AtRisk));
    assert!(
        guard.wait_held_again(Duration::from_secs(10)),
        "{:?}",
        guard.state()
    );
    assert_eq!(guard.state(), HoldState::Held);
    let (permit_state, permit_at_risk, permit_held, then) = permit_thread.join().unwrap();
    assert_eq!(permit_state, Some(HoldState::AtRisk));
    assert!(
        permit_held,
        "the permit was not confirmed: {:?}",
        permit.state()
    );
    assert_eq!(then, HoldState::Held);
    for told in [at_risk, permit_at_risk] {
        let after = told.saturating_duration_since(fault);
        assert!(
            after < Duration::from_secs(2),
            "at risk {after:?} after the kill"
        );
    }
    assert!(
        changes.has_changed().unwrap(),
        "the receiver saw the changes"
    );

    // Deleted behind their backs: lost at the next renewal.
    redis_cli(port, &["DEL", &name, &support::pes::timeouts(&permits)]);
    assert!(
        guard.wait_lost(Duration::from_secs(5)),
        "{:?}",
        guard.state()
    );
    assert!(
        permit.wait_lost(Duration::from_secs(5)),
        "{:?}",
        permit.state()
    );
    assert!(guard.is_lost() && permit.is_lost());
    assert_eq!(*changes.borrow(), HoldState::Lost);
    assert!(matches!(guard.unlock(), Err(Error::NotOwner { .. })));
    assert!(matches!(permit.release(), Err(Error::InvalidArgument(_))));
    // The connections were killed: closing them may race the reconnect.
    let _ = client.shutdown();
}

/// Four threads queue one after the other behind a holder; they get the fair lock in
/// that order.
#[test]
fn fair_lock_serves_threads_in_order() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let fair = client.get_fair_lock(key("fifo"));
    fair.lock().unwrap();

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..4 {
        let (lock, order) = (fair.clone(), order.clone());
        waiters.push(thread::spawn(move || {
            lock.lock().unwrap();
            order.lock().unwrap().push(i);
            lock.unlock().unwrap();
        }));
        // Let this waiter join the queue before the next one asks.
        thread::sleep(Duration::from_millis(150));
    }
    fair.unlock().unwrap();
    for waiter in waiters {
        waiter.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
    client.shutdown().unwrap();
}

#[test]
fn readers_share_and_a_writer_excludes() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let rw = client.get_read_write_lock(key("rw"));
    assert_eq!(rw.name(), rw.read_lock().name());

    // Three reader threads hold the read lock at the same time.
    let barrier = Arc::new(Barrier::new(4));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (read, barrier) = (rw.read_lock(), barrier.clone());
            thread::spawn(move || {
                let guard = read
                    .try_acquire_for(Duration::from_secs(5))
                    .unwrap()
                    .expect("readers share");
                barrier.wait(); // all three hold it now
                barrier.wait(); // the writer has tried
                guard.unlock().unwrap();
            })
        })
        .collect();
    barrier.wait();
    let write = rw.write_lock();
    let start = Instant::now();
    assert!(!write.try_lock_for(Duration::from_millis(200)).unwrap());
    assert!(start.elapsed() >= Duration::from_millis(180));
    barrier.wait();
    for reader in readers {
        reader.join().unwrap();
    }

    // With the readers gone the writer gets in, and excludes a reader of another thread.
    let guard = write
        .try_acquire_for(Duration::from_secs(5))
        .unwrap()
        .expect("free");
    let read = rw.read_lock();
    assert!(!on_thread(move || read.try_lock().unwrap()));
    // The writer's own thread may read (a downgrade).
    rw.read_lock().lock().unwrap();
    rw.read_lock().unlock().unwrap();
    guard.unlock().unwrap();
    assert!(!rw.write_lock().is_locked().unwrap());
    client.shutdown().unwrap();
}

#[test]
fn with_owner_and_guards_hand_a_lock_between_threads() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let name = key("handover");

    // Taken in one thread as owner 77, released in another as owner 77.
    let job = client.get_lock(&name).with_owner(LockOwner::from_raw(77));
    assert_eq!(job.owner(), LockOwner::from_raw(77));
    let taker = job.clone();
    on_thread(move || taker.lock().unwrap());
    assert!(job.is_held_by(LockOwner::from_raw(77)).unwrap());
    assert!(!client.get_lock(&name).is_held_by_current_thread().unwrap());
    let releaser = job.clone();
    on_thread(move || releaser.unlock().unwrap());
    assert!(!job.is_locked().unwrap());

    // A guard keeps its owner: taken here, unlocked in another thread.
    let lock = client.get_lock(&name);
    let guard = lock.acquire().unwrap();
    assert_eq!(guard.owner(), LockOwner::current_thread());
    assert_eq!(blocking::LockGuard::lock(&guard).hold_count().unwrap(), 1);
    on_thread(move || guard.unlock().unwrap());
    assert!(!lock.is_locked().unwrap());

    // into_lock: the hold stays until the handle unlocks it, from any thread.
    let guard = lock.acquire().unwrap();
    let handle = blocking::LockGuard::into_lock(guard);
    assert!(lock.is_locked().unwrap());
    on_thread(move || handle.unlock().unwrap());
    assert!(!lock.is_locked().unwrap());
    client.shutdown().unwrap();
}

/// Polls `check` every 10 ms until it holds or `limit` passes.
fn eventually_sync(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    check()
}

#[test]
fn a_dropped_guard_releases_even_when_its_thread_panics() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let lock = client.get_lock(key("panic"));

    let holder = lock.clone();
    let panicked = thread::spawn(move || {
        let _guard = holder.acquire().unwrap();
        panic!("work failed while holding the lock");
    })
    .join();
    assert!(panicked.is_err());
    // Well before the 30 s watchdog lease would end it.
    assert!(eventually_sync(Duration::from_secs(2), || !lock
        .is_locked()
        .unwrap()));
    assert_eq!(client.renewed_locks(), 0);

    // A guard dropped at the end of a scope, in another thread.
    let holder = lock.clone();
    on_thread(move || {
        let _guard = holder.acquire().unwrap();
    });
    assert!(eventually_sync(Duration::from_secs(2), || !lock
        .is_locked()
        .unwrap()));
    client.shutdown().unwrap();
}

/// The guard is the client's last handle: dropping it still releases the lock before the
/// client stops.
#[test]
fn a_guard_outlives_its_client_and_still_releases() {
    let _shared = shared();
    let server = RedisServer::start();
    let observer = connect(&server);
    let name = key("last-handle");
    let guard = {
        let client = connect(&server);
        let guard = client.get_lock(&name).acquire().unwrap();
        drop(client);
        guard
    };
    assert!(observer.get_lock(&name).is_locked().unwrap());
    assert!(!guard.is_lost(), "the client lives on in its guard");
    drop(guard);
    assert!(
        !observer.get_lock(&name).is_locked().unwrap(),
        "the unlock ran before the client stopped"
    );
    observer.shutdown().unwrap();
}

#[test]
fn calls_after_shutdown_are_typed_errors() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let lock = client.get_lock(key("shutdown"));
    let fenced = client.get_fenced_lock(key("shutdown-fenced"));
    lock.lock().unwrap();
    let guard = fenced.acquire().unwrap();

    // A thread waiting in lock() is woken by the shutdown.
    let other = lock.clone();
    let waiter = thread::spawn(move || {
        let start = Instant::now();
        (other.lock(), start.elapsed())
    });
    thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    client.shutdown().unwrap();
    assert!(start.elapsed() < Duration::from_secs(3));
    let (waited, _) = waiter.join().unwrap();
    assert!(matches!(waited, Err(Error::Shutdown)), "{waited:?}");

    assert!(client.is_shutdown());
    assert!(guard.is_lost());
    assert!(matches!(lock.lock(), Err(Error::Shutdown)));
    assert!(matches!(lock.try_lock(), Err(Error::Shutdown)));
    assert!(matches!(
        lock.try_lock_for(Duration::from_secs(1)),
        Err(Error::Shutdown)
    ));
    assert!(matches!(lock.unlock(), Err(Error::Shutdown)));
    assert!(matches!(lock.is_locked(), Err(Error::Shutdown)));
    assert!(matches!(lock.hold_count(), Err(Error::Shutdown)));
    assert!(matches!(lock.acquire(), Err(Error::Shutdown)));
    assert!(matches!(fenced.token(), Err(Error::Shutdown)));
    assert!(matches!(guard.unlock(), Err(Error::Shutdown)));
    assert!(matches!(
        client.get_fair_lock("new").lock(),
        Err(Error::Shutdown)
    ));
    client.shutdown().unwrap(); // again: nothing to do
    drop(client);
    drop(lock); // the last handles: nothing left to stop, no panic
}

/// The names of this process's threads, as Linux shows them (15 bytes).
#[cfg(target_os = "linux")]
fn runtime_threads() -> usize {
    let short = &blocking::THREAD_NAME[..15];
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == short)
        .count()
}

/// The runtime threads left once they had up to 3 s to finish exiting (a thread that has
/// been told to stop can still show in /proc for a moment on a loaded machine).
#[cfg(target_os = "linux")]
fn runtime_threads_after_exit() -> usize {
    let start = Instant::now();
    loop {
        let left = runtime_threads();
        if left == 0 || start.elapsed() > Duration::from_secs(3) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn dropping_the_client_ends_its_threads() {
    let _exclusive = THREAD_COUNT.write().unwrap_or_else(|p| p.into_inner());
    let server = RedisServer::start();
    #[cfg(target_os = "linux")]
    assert_eq!(runtime_threads_after_exit(), 0, "no blocking client yet");

    let client = connect(&server);
    let lock = client.get_lock(key("threads"));
    lock.lock().unwrap();
    #[cfg(target_os = "linux")]
    {
        let running = runtime_threads();
        assert!(
            (1..=blocking::WORKER_THREADS + 2).contains(&running),
            "{running} runtime threads"
        );
    }
    lock.unlock().unwrap();
    drop(lock);
    let start = Instant::now();
    drop(client);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "drop took {took:?}");
    #[cfg(target_os = "linux")]
    assert_eq!(
        runtime_threads_after_exit(),
        0,
        "the runtime's threads ended with the drop"
    );

    // The same after an explicit shutdown, even with a handle still alive.
    let client = connect(&server);
    let lock = client.get_lock(key("threads"));
    client.shutdown().unwrap();
    #[cfg(target_os = "linux")]
    assert_eq!(
        runtime_threads_after_exit(),
        0,
        "shutdown ended the threads"
    );
    assert!(matches!(lock.lock(), Err(Error::Shutdown)));

    // A failed connect stops the runtime it started.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port(); // free once the listener is dropped: nothing listens there
    let start = Instant::now();
    let refused = Client::connect(
        redisson_lock::Config::from_url(&format!("redis://127.0.0.1:{port}")).unwrap(),
    );
    assert!(matches!(refused, Err(Error::Redis(_))), "{refused:?}");
    eprintln!("a refused connect failed after {:?}", start.elapsed());
    #[cfg(target_os = "linux")]
    assert_eq!(
        runtime_threads_after_exit(),
        0,
        "a failed connect leaves no threads"
    );
}

/// Blocking calls inside a current-thread runtime (the body of `#[tokio::test]`) neither
/// panic nor deadlock: they block this thread while the client's own runtime does the
/// work, including a wait for a lock another thread releases.
#[tokio::test(flavor = "current_thread")]
// The guard only keeps the thread-count test out; no task ever waits for it.
#[allow(clippy::await_holding_lock)]
async fn works_inside_a_current_thread_runtime() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    inside_a_runtime(&client);
    // A task of this runtime may call it too.
    let lock = client.get_lock(key("in-task"));
    let held = tokio::spawn(async move {
        lock.lock().unwrap();
        let count = lock.hold_count().unwrap();
        lock.unlock().unwrap();
        count
    })
    .await
    .unwrap();
    assert_eq!(held, 1);
    drop(client); // the last handle, dropped inside a runtime: no panic
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// The guard only keeps the thread-count test out; no task ever waits for it.
#[allow(clippy::await_holding_lock)]
async fn works_inside_a_multi_thread_runtime() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    inside_a_runtime(&client);
    let worker = client.clone();
    let from_blocking = tokio::task::spawn_blocking(move || {
        let lock = worker.get_lock(key("spawn-blocking"));
        lock.lock().unwrap();
        lock.unlock()
    });
    from_blocking.await.unwrap().unwrap();
    client.shutdown().unwrap(); // shutdown inside a runtime: no panic
}

fn inside_a_runtime(client: &Client) {
    let lock = client.get_lock(key("in-runtime"));
    let holder = lock.clone();
    let (taken_tx, taken_rx) = mpsc::channel();
    let releaser = thread::spawn(move || {
        holder.lock().unwrap();
        taken_tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(300));
        holder.unlock().unwrap();
    });
    taken_rx.recv().unwrap();
    let start = Instant::now();
    lock.lock().unwrap();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(lock.hold_count().unwrap(), 1);
    lock.unlock().unwrap();
    releaser.join().unwrap();
}

/// A blocking guard dropped and the lock taken again at once by the same thread: the
/// dropped guard's release runs first, as after an `unlock()`, so the new hold stays (a
/// release that ran after it deleted the new hold when the dropped one had expired).
#[test]
fn a_lock_taken_again_after_a_guard_drop_keeps_its_new_hold() {
    let _shared = shared();
    let server = RedisServer::start();
    let client = connect(&server);
    let lock = client.get_lock(key("blocking-drop-retake"));
    for round in 0..10 {
        let expired = round % 2 == 0;
        let guard = lock.acquire().unwrap();
        if expired {
            redis_cli(server.port, &["del", lock.name()]);
        }
        drop(guard);
        lock.lock().unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(300) {
            let hash = redis_cli(server.port, &["hgetall", lock.name()]);
            let lines: Vec<&str> = hash.lines().collect();
            assert!(
                lines.len() == 2 && lines[1] == "1",
                "round {round} (dropped hold expired: {expired}): {hash:?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(lock.hold_count().unwrap(), 1);
        lock.unlock().unwrap();
    }
    client.shutdown().unwrap();
}
