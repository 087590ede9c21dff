//! Sharing locks with a Java Redisson client. The "Java client" here is a raw fred
//! connection that writes exactly what Redisson writes: the hash `name` with field
//! `<its uuid>:<thread id>`, `PEXPIRE`, and Redisson's acquire and unlock semantics as
//! Lua written for this test (not the crate's scripts), so both sides are checked
//! against the protocol rather than against each other's code.

mod support;
use support::*;

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, FencingGate, LockOwner};

use support::java::{
    acquire as java_acquire, field as java_field, lock_and_get_token as java_lock_and_get_token,
    token_key, unlock as java_unlock,
};

/// Writes a Java-held lock the way Redisson does: one field, count 1, a lease.
async fn java_holds(raw: &Client, name: &str, thread: u64, lease_ms: i64) {
    let _: i64 = raw.hset(name, (java_field(thread), 1)).await.unwrap();
    let set: bool = raw.pexpire(name, lease_ms, None).await.unwrap();
    assert!(set);
}

#[tokio::test]
async fn a_java_held_lock_blocks_us_and_is_not_ours_to_unlock() {
    let Bed(server, client, raw, name) = Bed::new("java-held").await;
    java_holds(&raw, &name, 1, 30_000).await;
    let before = hgetall(&raw, &name).await;
    assert_eq!(before, vec![(java_field(1), "1".to_string())]);

    let lock = client.get_lock(&name);
    assert!(!lock.try_lock().await.unwrap());
    assert!(!lock
        .try_lock_with_lease(Duration::ZERO, Duration::from_secs(10))
        .await
        .unwrap());
    let started = Instant::now();
    assert!(!lock.try_lock_for(Duration::from_millis(300)).await.unwrap());
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "it did wait"
    );

    // Same thread number as the Java holder, but our client id: still someone else.
    let same_number = lock.with_owner(LockOwner::from_raw(1));
    assert!(!same_number.try_lock().await.unwrap());
    assert!(!same_number.is_held_by_current_task().await.unwrap());

    assert!(lock.is_locked().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 0);
    assert!(!lock.is_held_by_current_task().await.unwrap());
    let ttl = lock.remain_time_to_live().await.unwrap().unwrap();
    assert!(
        ttl > Duration::from_secs(15) && ttl <= Duration::from_secs(30),
        "{ttl:?}"
    );
    // None of our attempts touched the Java hash.
    assert_eq!(hgetall(&raw, &name).await, before);

    let error = lock.unlock().await.unwrap_err();
    match &error {
        Error::NotOwner { client_id, owner } => {
            assert_eq!(client_id, client.id());
            assert_eq!(*owner, lock.owner());
        }
        other => panic!("expected NotOwner, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        format!(
            "attempt to unlock lock, not locked by current thread by node id: {} thread-id: {}",
            client.id(),
            lock.owner()
        )
    );
    let explicit = same_number.unlock().await.unwrap_err();
    assert_eq!(
        explicit.to_string(),
        format!(
            "attempt to unlock lock, not locked by current thread by node id: {} thread-id: 1",
            client.id()
        )
    );
    assert_eq!(
        hgetall(&raw, &name).await,
        before,
        "a refused unlock changes nothing"
    );

    // force_unlock removes the Java lock and tells Java's waiters.
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;
    assert!(lock.force_unlock().await.unwrap());
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    assert_eq!(
        drain_first(&mut rx, Duration::from_secs(10)).await,
        Some((channel(&name), b"0".to_vec()))
    );
    assert!(!lock.force_unlock().await.unwrap());

    // Now it is free for us.
    assert!(lock.try_lock().await.unwrap());
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn java_sees_our_lock_as_held_and_gets_its_ttl() {
    let Bed(_server, client, raw, name) = Bed::new("java-sees-watchdog").await;

    // Watchdog mode: Java's acquire answers the PTTL, a number near 30 s, not nil.
    let lock = client.get_lock(&name);
    lock.lock().await.unwrap();
    let ours = hgetall(&raw, &name).await;
    match java_acquire(&raw, &name, 30_000, 1).await {
        Value::Integer(ttl) => assert!((20_000..=30_000).contains(&ttl), "PTTL {ttl}"),
        other => panic!("Java's acquire must answer the PTTL, got {other:?}"),
    }
    assert_eq!(
        hgetall(&raw, &name).await,
        ours,
        "Java's failed attempt changed nothing"
    );
    // Java's unlock of our lock is "not owner" (nil), and changes nothing.
    assert_eq!(java_unlock(&raw, &name, 1).await, Value::Null);
    assert_eq!(hgetall(&raw, &name).await, ours);
    lock.unlock().await.unwrap();
    // Released by us: Java takes it.
    assert_eq!(java_acquire(&raw, &name, 30_000, 1).await, Value::Null);
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(java_field(1), "1".to_string())]
    );
    assert!(!lock.try_lock().await.unwrap());
    assert_eq!(java_unlock(&raw, &name, 1).await, Value::Integer(1));

    // Lease mode: the PTTL Java sees is bounded by our lease.
    let name = key("java-sees-lease");
    let lock = client.get_lock(&name);
    lock.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    match java_acquire(&raw, &name, 30_000, 1).await {
        Value::Integer(ttl) => assert!((1..=5_000).contains(&ttl), "PTTL {ttl}"),
        other => panic!("Java's acquire must answer the PTTL, got {other:?}"),
    }
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_unlock_wakes_our_waiter_and_ours_reaches_java() {
    let Bed(server, client, raw, name) = Bed::new("java-wakes").await;

    // Java holds the lock for a long lease and re-enters once.
    assert_eq!(java_acquire(&raw, &name, 120_000, 7).await, Value::Null);
    assert_eq!(java_acquire(&raw, &name, 120_000, 7).await, Value::Null);
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(java_field(7), "2".to_string())]
    );

    let lock = client.get_lock(&name);
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move {
            lock.lock().await.unwrap();
            let held = lock.hold_count().await.unwrap();
            (lock, held)
        }
    });
    // Wait until our waiter is subscribed (Java's unlock publishes to it).
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.subscribed_channels() == 0 {
        assert!(Instant::now() < deadline, "the waiter never subscribed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The partial Java unlock publishes nothing and keeps it held.
    assert_eq!(java_unlock(&raw, &name, 7).await, Value::Integer(0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    // The full Java unlock publishes `0`, which wakes our waiter long before the lease.
    assert_eq!(java_unlock(&raw, &name, 7).await, Value::Integer(1));
    let (lock, held) = tokio::time::timeout(Duration::from_secs(30), waiter)
        .await
        .expect("woken by Java's unlock message, not by the 120 s lease")
        .unwrap();
    assert_eq!(held, 1);

    // Our unlock reaches a Java waiter's subscription.
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;
    // The holder was the spawned task; unlock as that owner.
    let owner = {
        let fields = hgetall(&raw, &name).await;
        assert_eq!(fields.len(), 1);
        let (field, count) = &fields[0];
        assert_eq!(count, "1");
        let (id, owner) = field.rsplit_once(':').unwrap();
        assert_eq!(id, client.id());
        LockOwner::from_raw(owner.parse().unwrap())
    };
    lock.with_owner(owner).unlock().await.unwrap();
    assert_eq!(
        drain_first(&mut rx, Duration::from_secs(10)).await,
        Some((channel(&name), b"0".to_vec()))
    );
    assert_eq!(java_acquire(&raw, &name, 30_000, 7).await, Value::Null);
    client.shutdown().await.unwrap();
}

/// A waiter must be subscribed in Redis before its retry runs: otherwise an unlock that
/// lands between the retry and the subscription is never heard, and the waiter sleeps
/// for the holder's whole TTL. Checked by the order Redis saw: once the waiter's second
/// script call has run, `PUBSUB NUMSUB` must already count its subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_waiter_is_subscribed_before_it_retries() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;
    // Load the scripts, so that every attempt below is exactly one EVALSHA.
    let warm = client.get_lock(key("java-warm"));
    warm.lock().await.unwrap();
    warm.unlock().await.unwrap();

    for round in 0..20 {
        let name = key("java-subscribed-first");
        assert_eq!(java_acquire(&raw, &name, 120_000, 3).await, Value::Null);
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
        let numsub: Vec<Value> = raw
            .custom(
                fred::cmd!("PUBSUB"),
                vec!["NUMSUB".to_string(), channel(&name)],
            )
            .await
            .unwrap();
        assert_eq!(
            numsub.get(1),
            Some(&Value::Integer(1)),
            "round {round}: the retry ran before the subscription existed"
        );
        // Java lets go; the message wakes the waiter long before the 120 s lease.
        assert_eq!(java_unlock(&raw, &name, 3).await, Value::Integer(1));
        tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the waiter missed the unlock"))
            .unwrap();
    }
    client.shutdown().await.unwrap();
}

// ---- fenced locks across a restart (docs/fencing.md, "Across a restart") ----------------

fn assert_refused(result: redisson_lock::Result<()>, seen: u64, presented: u64) {
    match result {
        Err(Error::StaleToken {
            seen: s,
            presented: p,
        }) => assert_eq!((s, p), (seen, presented)),
        other => {
            panic!("expected StaleToken {{ seen: {seen}, presented: {presented} }}, got {other:?}")
        }
    }
}

/// Java only `INCR`s. After our first acquisition it continues from the seeded value.
/// After a restart without persistence where Java acquires first, its `INCR` of the
/// missing key restarts the counter at 1: a `FencingGate` that saw the old tokens refuses
/// Java's, and ours too (we continue from Java's counter): safe, but blocked. The
/// documented way out, `ensure_token_floor`, raises the counter to the server clock, and
/// from then on both sides' tokens are admitted again.
#[tokio::test]
async fn after_a_restart_a_java_first_acquire_blocks_a_gate_until_the_floor_is_raised() {
    let mut server = RedisServer::start();
    let client = server.client().await;
    let mut raw = server.raw().await;
    let name = key("java-fenced-restart");
    let lock = client.get_fenced_lock(&name);
    let gate = FencingGate::new();

    // Before the restart: we draw first (seeded from the clock), Java continues by one.
    let before = server_time_us(&raw).await;
    let ours = lock.lock_and_get_token().await.unwrap();
    assert_seeded(ours, before, server_time_us(&raw).await);
    gate.check(ours).unwrap();
    lock.unlock().await.unwrap();
    let java = java_lock_and_get_token(&raw, &name, 1, 30_000)
        .await
        .unwrap() as u64;
    assert_eq!(java, ours + 1, "Java continues from the seeded counter");
    gate.check(java).unwrap();
    assert_eq!(java_unlock(&raw, &name, 1).await, Value::Integer(1));

    // Restart without persistence; Java is first: its INCR starts the counter at 1.
    server.restart_empty();
    raw = server.raw().await;
    let counter: Option<String> = raw.get(token_key(&name)).await.unwrap();
    assert_eq!(counter, None, "the restart lost the counter");
    assert_eq!(java_lock_and_get_token(&raw, &name, 2, 30_000).await, Ok(1));
    assert_refused(gate.check(1), java, 1);
    assert_eq!(java_unlock(&raw, &name, 2).await, Value::Integer(1));
    // We only INCR a counter that exists, so we are refused as well.
    let blocked = lock.lock_and_get_token().await.unwrap();
    assert_eq!(blocked, 2);
    assert_refused(gate.check(blocked), java, blocked);
    lock.unlock().await.unwrap();
    assert_eq!(gate.highest(), Some(java), "nothing was admitted");

    // The way out: raise the counter to the server clock. Both sides are admitted again.
    let before = server_time_us(&raw).await;
    let floor = lock.ensure_token_floor().await.unwrap();
    assert_seeded(floor, before, server_time_us(&raw).await);
    assert!(floor > java);
    let ours = lock.lock_and_get_token().await.unwrap();
    assert_eq!(ours, floor + 1);
    gate.check(ours).unwrap();
    lock.unlock().await.unwrap();
    let java = java_lock_and_get_token(&raw, &name, 3, 30_000)
        .await
        .unwrap() as u64;
    assert_eq!(java, ours + 1);
    gate.check(java).unwrap();
    assert_eq!(java_unlock(&raw, &name, 3).await, Value::Integer(1));
    assert_eq!(gate.highest(), Some(java));
    if let Err(error) = client.shutdown().await {
        eprintln!("shutdown after a restart: {error}");
    }
}
