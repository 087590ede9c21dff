//! Every lock kind beside real Redisson 3.23.3 and 4.7.0 (the kinds a version has), on one
//! server: mutual exclusion with a witness, wake-ups both ways, the watchdog on both
//! sides, and the same raw state whichever side wrote it
//! (`support::interop::Interop::check_lock_kind`). One test per kind, both versions in
//! it, so that each starts its JVMs once.

use crate::support::interop::*;
use crate::support::real_java::{JavaClient, Version};
use crate::support::{assert_seeded, hgetall, server_time_us};

use std::sync::Arc;
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::ClientLike;

use redisson_lock::fencing::FencingGate;
use redisson_lock::{Client, LockOwner};

const BOTH: &[Version] = &Version::ALL;
/// Kinds Redisson 3.23.3 does not have (the non-reentrant locks: 4.4+; the faster
/// multi-lock: 3.38+). Its driver would take `nonreentrant:x` for the plain lock of that
/// name.
const NEW_ONLY: &[Version] = &[Version::V4_7_0];

/// A group waiter polls its members again after at most 1.5 s (3 s for a MultiLock of
/// two): a woken one is far quicker (~20 ms), a missed message costs that poll.
const GROUP_WAKE_BOUND: Duration = Duration::from_secs(1);

fn one(name: &str) -> Vec<(usize, String)> {
    vec![(0, name.to_string())]
}

fn index0(base: &str) -> String {
    format!("{base}0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn rlock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "rlock",
        ours: |c: &[Client], n| c[0].get_lock(n),
        java: |n| JavaLock::One(n.to_string()),
        keys: one,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    rlock_details(&bed).await;
    bed.shutdown().await;
}

/// What a user checks by hand with a Java holder and a Rust one, for each version:
/// attempts on the other side's lock change nothing and wait for real; a Java thread's
/// number as our owner is still someone else (another client id); refused unlocks say
/// Redisson's text; Java sees our TTL; a partial release publishes nothing, the last
/// one wakes the other side; `force_unlock` of Java's lock wakes a Java waiter.
async fn rlock_details(bed: &Interop) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    for java in &bed.javas {
        let version = java.version();
        // Java holds, re-entered once, for a long lease.
        let name = format!("rlock-java-held-{version}");
        java.ok(&format!("lock {name} 120000 A")).await;
        java.ok(&format!("lock {name} 120000 A")).await;
        let field = java.field("A").await;
        let java_hash = vec![(field.clone(), "2".to_string())];
        assert_eq!(hgetall(raw, &name).await, java_hash);
        let lock = client.get_lock(&name);
        assert!(!lock.try_lock().await.unwrap());
        assert!(
            !lock
                .try_lock_with_lease(Duration::ZERO, Duration::from_secs(10))
                .await
                .unwrap()
        );
        let started = Instant::now();
        assert!(!lock.try_lock_for(Duration::from_millis(300)).await.unwrap());
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "it did wait"
        );
        let thread: u64 = field.rsplit_once(':').unwrap().1.parse().unwrap();
        let same_number = lock.with_owner(LockOwner::from_raw(thread));
        assert!(!same_number.try_lock().await.unwrap());
        assert!(!same_number.is_held_by_current_task().await.unwrap());
        assert!(lock.is_locked().await.unwrap());
        assert_eq!(lock.hold_count().await.unwrap(), 0);
        let ttl = lock.remain_time_to_live().await.unwrap().unwrap();
        assert!(
            ttl > Duration::from_secs(100) && ttl <= Duration::from_secs(120),
            "{ttl:?}"
        );
        let refused = same_number.unlock().await.unwrap_err();
        assert!(matches!(refused, redisson_lock::Error::NotOwner { .. }));
        assert_eq!(
            refused.to_string(),
            format!(
                "attempt to unlock lock, not locked by current thread by node id: {} thread-id: {thread}",
                client.id()
            )
        );
        assert_eq!(
            hgetall(raw, &name).await,
            java_hash,
            "none of that touched it"
        );

        // Our waiter: Java's partial unlock publishes nothing, its last one wakes it.
        let waiter = tokio::spawn({
            let lock = lock.clone();
            async move {
                lock.lock().await.unwrap();
                lock.unlock().await.unwrap();
            }
        });
        until_listening(&bed.raws, &[(0, name.clone())], true, || async {
            !waiter.is_finished()
        })
        .await;
        java.ok(&format!("unlock {name} A")).await;
        assert_eq!(java.int(&format!("holdcount {name} A")).await, 1);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "woken by a partial unlock");
        java.ok(&format!("unlock {name} A")).await;
        tokio::time::timeout(WAKE_BOUND, waiter)
            .await
            .expect("woken by Java's last unlock, not by its 120 s lease")
            .unwrap();

        // We hold with the watchdog: Java sees it held, with our TTL, not its own.
        let name = format!("rlock-ours-{version}");
        let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(1));
        lock.lock().await.unwrap();
        let ours = hgetall(raw, &name).await;
        assert!(!java.bool(&format!("trylock {name} 0 -1 B")).await);
        assert!(!java.bool(&format!("held {name} B")).await);
        assert!(java.bool(&format!("islocked {name}")).await);
        let ttl = java.int(&format!("ttl {name}")).await;
        assert!(
            (1..=3_000).contains(&ttl),
            "Java reads the watchdog TTL: {ttl}"
        );
        let refused = java.call(&format!("unlock {name} B")).await;
        assert!(
            refused.starts_with("ERR java.lang.IllegalMonitorStateException: attempt to unlock lock, not locked by current thread"),
            "{refused}"
        );
        assert_eq!(
            hgetall(raw, &name).await,
            ours,
            "Java's refused unlock changed nothing"
        );
        lock.unlock().await.unwrap();
        // A lease: Java's TTL is ours.
        lock.lock_with_lease(Duration::from_secs(5)).await.unwrap();
        let ttl = java.int(&format!("ttl {name}")).await;
        assert!((1..=5_000).contains(&ttl), "{ttl}");
        lock.unlock().await.unwrap();

        // force_unlock of a Java hold: it is gone, and a Java waiter takes it.
        let name = format!("rlock-forced-{version}");
        java.ok(&format!("lock {name} 120000 A")).await;
        let waiter = java.spawn(&format!("lock {name} -1 B")).await;
        until_listening(&bed.raws, &[(0, name.clone())], true, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let lock = client.get_lock(&name);
        assert!(lock.force_unlock().await.unwrap());
        assert_eq!(answer(&waiter, WAKE_BOUND).await, "OK");
        assert!(java.bool(&format!("held {name} B")).await);
        java.ok(&format!("unlock {name} B")).await;
        assert!(!lock.force_unlock().await.unwrap());
        assert!(lock.try_lock().await.unwrap());
        lock.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn fair_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "fair",
        ours: |c: &[Client], n| c[0].get_fair_lock(n),
        java: |n| JavaLock::One(format!("fair:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: true,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    // Java and Rust waiters queued in turn take the lock in that order, each side waking
    // the other through the per-waiter channels; with hand-offs within the queue, an
    // unlock whose head is a waiter of the same client hands it the lock without a
    // message, one whose head is a Java waiter wakes it.
    let [old, new] = [&bed.javas[0], &bed.javas[1]];
    let published = fair_queue_round(&bed, "fair-fifo", &[Some(old), None, Some(new), None]).await;
    // holder -> java 0 -> rust 1 -> java 2 -> rust 3: every turn changes side.
    assert_eq!(published, 4, "every turn to the other side is a message");
    let published = fair_queue_round(
        &bed,
        "fair-fifo-handoff",
        &[None, None, Some(old), None, Some(new)],
    )
    .await;
    // Published: rust 1 -> java 2, java 2 -> rust 3, rust 3 -> java 4. Handed without a
    // message: holder -> rust 0, rust 0 -> rust 1.
    assert_eq!(published, 3);
    bed.shutdown().await;
}

/// Queues one waiter per entry of `waiters` behind a crate holder, in that order (`Some`:
/// a thread of that Redisson, `None`: a task of the crate's client), each holding the
/// lock 20 ms when its turn comes; then the holder unlocks. The waiters must take the
/// lock in queue order; answers the `PUBLISH` calls the server ran from the holder's
/// unlock on.
async fn fair_queue_round(bed: &Interop, name: &str, waiters: &[Option<&JavaClient>]) -> u64 {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let hold = Duration::from_millis(20);
    let queue_key = format!("redisson_lock_queue:{{{name}}}");
    let holder = client
        .get_fair_lock(name)
        .with_owner(LockOwner::from_raw(1));
    holder.lock().await.unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut rust = Vec::new();
    let mut java = Vec::new();
    for (i, waiter) in waiters.iter().enumerate() {
        let member = match waiter {
            Some(j) => {
                let thread = format!("Q{i}");
                // Before the lock: `lockfield` runs on the thread, which `lock` blocks.
                let field = j.field(&thread).await;
                let pending = j.spawn(&format!("lock fair:{name} -1 {thread}")).await;
                java.push((i, *j, thread, pending));
                field
            }
            None => {
                let owner = 10 + i as u64;
                let lock = client
                    .get_fair_lock(name)
                    .with_owner(LockOwner::from_raw(owner));
                let order = order.clone();
                rust.push(tokio::spawn(async move {
                    lock.lock().await.unwrap();
                    order.lock().unwrap().push(i);
                    tokio::time::sleep(hold).await;
                    lock.unlock().await.unwrap();
                }));
                format!("{}:{owner}", client.id())
            }
        };
        let queued = crate::support::eventually(Duration::from_secs(20), || async {
            let queue: Vec<String> = raw
                .custom(
                    redisson_lock::fred::cmd!("LRANGE"),
                    vec![queue_key.as_str(), "0", "-1"],
                )
                .await
                .unwrap();
            queue.contains(&member)
        })
        .await;
        assert!(queued, "waiter {i} ({member}) never queued");
    }
    crate::support::reset_stats(raw).await;
    holder.unlock().await.unwrap();
    let java_turns = java.iter().map(|(i, j, thread, pending)| {
        let order = order.clone();
        async move {
            assert_eq!(answer(pending, Duration::from_secs(30)).await, "OK");
            order.lock().unwrap().push(*i);
            tokio::time::sleep(hold).await;
            j.ok(&format!("unlock fair:{name} {thread}")).await;
        }
    });
    futures::future::join_all(java_turns).await;
    for task in rust {
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("every crate waiter got its turn")
            .unwrap();
    }
    let order = order.lock().unwrap().clone();
    eprintln!("fair: {name}: turns {order:?}");
    assert_eq!(order, (0..waiters.len()).collect::<Vec<_>>(), "queue order");
    crate::support::command_calls(raw, "publish").await
}

/// The token counter: both sides start from the same value in the raw-state steps.
fn token_at_41(name: &str) -> Vec<(String, String)> {
    vec![(format!("redisson_lock_token:{{{name}}}"), "41".to_string())]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn fenced_lock() {
    let mut bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "fenced",
        ours: |c: &[Client], n| c[0].get_fenced_lock(n),
        java: |n| JavaLock::One(format!("fenced:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: Some(token_at_41),
    })
    .await;
    fenced_tokens(&mut bed).await;
    bed.shutdown().await;
}

/// A Java token refused by a gate, or admitted.
fn refused(gate: &FencingGate, token: u64) -> bool {
    match gate.check(token) {
        Ok(()) => false,
        Err(redisson_lock::Error::StaleToken { presented, .. }) => {
            assert_eq!(presented, token);
            true
        }
        Err(other) => panic!("{other:?}"),
    }
}

/// Java's `lockAndGetToken` with a lease, retried while Redisson reconnects after a
/// restart; the token.
async fn java_token(java: &JavaClient, name: &str, thread: &str) -> u64 {
    let start = Instant::now();
    loop {
        let answer = java
            .call(&format!("fencedlock {name} 30000 {thread}"))
            .await;
        match answer.parse() {
            Ok(token) => return token,
            Err(_) if start.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(_) => panic!("Redisson {}: fencedlock {name}: {answer}", java.version()),
        }
    }
}

/// Tokens across the sides: Java only `INCR`s (a fresh counter starts at 1), the crate
/// seeds a missing counter from the server clock; each side continues the other's
/// counter. After a restart without persistence where Java acquires first, its tokens
/// restart at 1: a `FencingGate` that saw the old ones refuses them, and the crate's
/// (which continue Java's counter) too, until `ensure_token_floor` raises the counter
/// to the server clock (docs/fencing.md, "Across a restart").
async fn fenced_tokens(bed: &mut Interop) {
    let client = &bed.clients[0];
    let raw = bed.raws[0].clone();
    let [old, new] = [&bed.javas[0], &bed.javas[1]];
    // Java first: 1, then the crate continues.
    let name = "fenced-java-first";
    assert_eq!(java_token(old, name, "A").await, 1);
    old.ok(&format!("unlock fenced:{name} A")).await;
    assert_eq!(java_token(new, name, "A").await, 2);
    new.ok(&format!("unlock fenced:{name} A")).await;
    let lock = client.get_fenced_lock(name);
    assert_eq!(lock.lock_and_get_token().await.unwrap(), 3);
    assert_eq!(old.call(&format!("token {name}")).await, "3");
    lock.unlock().await.unwrap();

    // The crate first: the server clock in µs, then Java continues.
    let name = "fenced-crate-first";
    let lock = client.get_fenced_lock(name);
    let gate = FencingGate::new();
    let before = server_time_us(&raw).await;
    let ours = lock.lock_and_get_token().await.unwrap();
    assert_seeded(ours, before, server_time_us(&raw).await);
    gate.check(ours).unwrap();
    lock.unlock().await.unwrap();
    let java = java_token(old, name, "A").await;
    assert_eq!(
        java,
        ours + 1,
        "Redisson 3.23.3 continues the seeded counter"
    );
    gate.check(java).unwrap();
    old.ok(&format!("unlock fenced:{name} A")).await;
    let java = java_token(new, name, "A").await;
    assert_eq!(java, ours + 2, "Redisson 4.7.0 too");
    gate.check(java).unwrap();
    new.ok(&format!("unlock fenced:{name} A")).await;

    // Taking turns (Redisson's testTokenIncrease with Java between ours): Java's
    // re-entry draws a token too, nobody draws while the other holds, every token is
    // new and larger.
    let mut drawn = vec![java];
    for java in [old, new] {
        let first = java_token(java, name, "A").await;
        let again = java_token(java, name, "A").await;
        assert_eq!(
            lock.try_lock_and_get_token_for(Duration::ZERO)
                .await
                .unwrap(),
            None
        );
        assert_eq!(lock.token().await.unwrap(), Some(again));
        java.ok(&format!("unlock fenced:{name} A")).await;
        java.ok(&format!("unlock fenced:{name} A")).await;
        let ours = lock.lock_and_get_token().await.unwrap();
        assert_eq!(
            java.call(&format!("fencedtrylock {name} 0 -1 B")).await,
            "null",
            "Redisson {} draws nothing while the crate holds it",
            java.version()
        );
        lock.unlock().await.unwrap();
        drawn.extend([first, again, ours]);
    }
    assert_eq!(
        drawn,
        (drawn[0]..drawn[0] + drawn.len() as u64).collect::<Vec<_>>(),
        "one counter, drawn in turn"
    );
    let java = *drawn.last().unwrap();
    gate.check(java).unwrap();

    // A restart without persistence; Redisson 3.23.3 acquires first.
    let restarted = Instant::now();
    bed.servers[0].restart_empty();
    let after = java_token(old, name, "A").await;
    eprintln!(
        "fenced: Redisson 3.23.3's first token after the restart ({:.1?}): {after}",
        restarted.elapsed()
    );
    assert_eq!(after, 1, "INCR of the lost counter");
    assert!(refused(&gate, after));
    old.ok(&format!("unlock fenced:{name} A")).await;
    let after_new = java_token(new, name, "A").await;
    assert_eq!(after_new, 2);
    assert!(refused(&gate, after_new));
    new.ok(&format!("unlock fenced:{name} A")).await;
    let client = &bed.clients[0];
    let lock = client.get_fenced_lock(name);
    let blocked = lock.lock_and_get_token().await.unwrap();
    assert_eq!(blocked, 3, "the crate only INCRs a counter that exists");
    assert!(refused(&gate, blocked));
    lock.unlock().await.unwrap();
    assert_eq!(gate.highest(), Some(java), "nothing was admitted");

    // The way out: the floor at the server clock; everyone is admitted again.
    let raw = bed.servers[0].raw().await;
    let before = server_time_us(&raw).await;
    let floor = lock.ensure_token_floor().await.unwrap();
    assert_seeded(floor, before, server_time_us(&raw).await);
    let ours = lock.lock_and_get_token().await.unwrap();
    assert_eq!(ours, floor + 1);
    gate.check(ours).unwrap();
    lock.unlock().await.unwrap();
    for (i, java) in [old, new].into_iter().enumerate() {
        let token = java_token(java, name, "A").await;
        assert_eq!(token, ours + 1 + i as u64);
        gate.check(token).unwrap();
        java.ok(&format!("unlock fenced:{name} A")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn spin_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "spin",
        ours: |c: &[Client], n| c[0].get_spin_lock(n),
        java: |n| JavaLock::One(format!("spin:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: false,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn non_reentrant_lock() {
    let bed = Interop::start(NEW_ONLY, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "nonreentrant",
        ours: |c: &[Client], n| c[0].get_non_reentrant_lock(n),
        java: |n| JavaLock::One(format!("nonreentrant:{n}")),
        keys: one,
        reentrant: false,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    non_reentrant_details(&bed).await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn non_reentrant_fair_lock() {
    let bed = Interop::start(NEW_ONLY, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "nonreentrantfair",
        ours: |c: &[Client], n| c[0].get_non_reentrant_fair_lock(n),
        java: |n| JavaLock::One(format!("nonreentrantfair:{n}")),
        keys: one,
        reentrant: false,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: true,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

/// Redisson 4.7.0's non-reentrant lock refuses its holder's second `lock()`, and a
/// Java plain `RLock` on the same name (the same hash layout) and the crate's
/// non-reentrant lock block each other both ways: re-entered Java holds, partial
/// releases that free nothing, the last release waking the other side.
async fn non_reentrant_details(bed: &Interop) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let java = bed.java(Version::V4_7_0);

    let name = "nr-java-refuses";
    java.ok(&format!("lock nonreentrant:{name} -1 A")).await;
    let again = java.call(&format!("lock nonreentrant:{name} -1 A")).await;
    assert!(
        again.starts_with("ERR java.lang.IllegalMonitorStateException: Lock")
            && again.contains("is non-reentrant"),
        "{again}"
    );
    let ours = client.get_non_reentrant_lock(name);
    assert!(!ours.try_lock().await.unwrap());
    java.ok(&format!("unlock nonreentrant:{name} A")).await;
    ours.lock().await.unwrap();
    assert!(matches!(
        ours.lock().await,
        Err(redisson_lock::Error::NonReentrant { .. })
    ));
    let retry = java
        .call(&format!("trylock nonreentrant:{name} 0 -1 A"))
        .await;
    assert_eq!(retry, "false");
    ours.unlock().await.unwrap();

    // A Java RLock holder, re-entered: ours waits, and is woken by the last release.
    let name = "nr-java-rlock";
    java.ok(&format!("lock {name} 60000 A")).await;
    java.ok(&format!("lock {name} 60000 A")).await;
    let field = java.field("A").await;
    let java_hash = vec![(field.clone(), "2".to_string())];
    assert_eq!(hgetall(raw, name).await, java_hash);
    let lock = client.get_non_reentrant_lock(name);
    assert!(!lock.try_lock().await.unwrap());
    let started = Instant::now();
    assert!(!lock.try_lock_for(Duration::from_millis(400)).await.unwrap());
    assert!(started.elapsed() >= Duration::from_millis(400), "it waited");
    let thread: u64 = field.rsplit_once(':').unwrap().1.parse().unwrap();
    assert!(
        !lock
            .with_owner(LockOwner::from_raw(thread))
            .try_lock()
            .await
            .unwrap()
    );
    assert!(matches!(
        lock.unlock().await,
        Err(redisson_lock::Error::NotOwner { .. })
    ));
    assert_eq!(hgetall(raw, name).await, java_hash, "untouched");
    let waiter = tokio::spawn({
        let lock = lock.with_owner(LockOwner::from_raw(1));
        async move { lock.try_lock_for(Duration::from_secs(30)).await.unwrap() }
    });
    until_listening(&bed.raws, &[(0, name.to_string())], true, || async {
        !waiter.is_finished()
    })
    .await;
    java.ok(&format!("unlock {name} A")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "a partial Java unlock frees nothing");
    java.ok(&format!("unlock {name} A")).await;
    let taken = tokio::time::timeout(WAKE_BOUND, waiter)
        .await
        .expect("woken by Java's unlock, not the 60 s lease")
        .unwrap();
    assert!(taken);
    let ours = vec![(format!("{}:1", client.id()), "1".to_string())];
    assert_eq!(hgetall(raw, name).await, ours);

    // Ours blocks Java's RLock; our release wakes a Java waiter.
    assert!(!java.bool(&format!("trylock {name} 0 -1 B")).await);
    let refused = java.call(&format!("unlock {name} B")).await;
    assert!(
        refused.starts_with("ERR java.lang.IllegalMonitorStateException"),
        "{refused}"
    );
    assert_eq!(hgetall(raw, name).await, ours);
    let java_waiter = java.spawn(&format!("lock {name} -1 B")).await;
    until_listening(&bed.raws, &[(0, name.to_string())], true, || async {
        java_waiter.poll().await.is_none()
    })
    .await;
    lock.with_owner(LockOwner::from_raw(1))
        .unlock()
        .await
        .unwrap();
    assert_eq!(answer(&java_waiter, WAKE_BOUND).await, "OK");
    assert_eq!(
        hgetall(raw, name).await,
        vec![(java.field("B").await, "1".to_string())]
    );
    java.ok(&format!("unlock {name} B")).await;
}

/// A faster multi-lock's base name is `<group>` (values `a`, `b`) or `<group>=<v1>|<v2>...`.
fn faster_parts(name: &str) -> (String, Vec<String>) {
    match name.split_once('=') {
        Some((group, values)) => (
            group.to_string(),
            values.split('|').map(str::to_string).collect(),
        ),
        None => (name.to_string(), vec!["a".into(), "b".into()]),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn faster_multi_lock() {
    let bed = Interop::start(NEW_ONLY, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "fastermulti",
        ours: |c: &[Client], n| {
            let (group, values) = faster_parts(n);
            c[0].get_multi_lock(group, values).unwrap()
        },
        java: |n| {
            let (group, values) = faster_parts(n);
            JavaLock::One(format!("fastermulti:{group}={}", values.join("|")))
        },
        keys: |n| one(&faster_parts(n).0),
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: false,
        stress: true,
        // `stress` appends the index to the last value.
        stress_name: |base| format!("{base}=a|b0"),
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn multi_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "multi",
        ours: |c: &[Client], n| {
            redisson_lock::MultiLock::new([
                c[0].get_lock(format!("{n}:1")),
                c[0].get_lock(format!("{n}:2")),
            ])
            .unwrap()
        },
        java: |n| JavaLock::Group("multi", vec![format!("{n}:1"), format!("{n}:2")]),
        keys: |n| vec![(0, format!("{n}:1")), (0, format!("{n}:2"))],
        reentrant: true,
        quorum: false,
        wake_bound: GROUP_WAKE_BOUND,
        listens: true,
        queues: false,
        stress: false,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn red_lock() {
    let bed = Interop::start(BOTH, 3).await;
    bed.check_lock_kind(&LockCase {
        label: "red",
        ours: |c: &[Client], n| {
            redisson_lock::RedLock::new([c[0].get_lock(n), c[1].get_lock(n), c[2].get_lock(n)])
                .unwrap()
        },
        java: |n| {
            JavaLock::Group(
                "red",
                vec![n.to_string(), format!("s1/{n}"), format!("s2/{n}")],
            )
        },
        keys: |n| (0..3).map(|i| (i, n.to_string())).collect(),
        reentrant: true,
        quorum: true,
        wake_bound: GROUP_WAKE_BOUND,
        listens: true,
        queues: false,
        stress: false,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

/// The write half as any exclusive kind, then the two halves together
/// (`check_read_write_halves`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn read_write_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "rw-write",
        ours: |c: &[Client], n| c[0].get_read_write_lock(n).write_lock(),
        java: |n| JavaLock::One(format!("write:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    check_read_write_halves(&bed).await;
    bed.shutdown().await;
}
