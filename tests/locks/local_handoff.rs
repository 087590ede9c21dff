//! The local line and hand-off (docs/lock-engine.md, "Local queue and hand-off"; protocol §16):
//! this client's waiters queue locally with one of them waiting in Redis, an unlock hands
//! the lock to the next local waiter in the same script (the field moves, nothing is
//! published), and hand-offs are bounded so that other clients, Java ones included, still
//! get the lock. Real Redisson waiters beside a line, and their share of a hot lock:
//! `tests/java/shares.rs`.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, LockOwner, RLock};
use support::*;
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn field_of(client: &Client, owner: LockOwner) -> String {
    format!("{}:{}", client.id(), owner)
}

fn pair(field: &str, count: i64) -> Vec<(String, String)> {
    vec![(field.to_owned(), count.to_string())]
}

/// A hold of `field` on `name`, written raw (count 1, 30 s), for the script tests.
async fn raw_hold(raw: &redisson_lock::fred::prelude::Client, name: &str, field: &str) {
    let _: () = raw.hset(name, (field, 1)).await.unwrap();
    let _: () = raw.pexpire(name, 30_000, None).await.unwrap();
}

/// Waits until `client` has `n` tasks in local lines.
async fn waiters(client: &Client, n: usize) {
    assert!(
        eventually(Duration::from_secs(5), || async {
            client.local_waiters() == n
        })
        .await,
        "expected {n} local waiters, have {}",
        client.local_waiters()
    );
}

/// Owner `owner`'s handle on `name`, holding the lock (watchdog mode).
async fn holding(client: &Client, name: &str, owner: u64) -> RLock {
    let lock = client.get_lock(name).with_owner(LockOwner::from_raw(owner));
    lock.lock().await.unwrap();
    lock
}

/// Owner `owner` in `lock()` on a task of its own, once `client` has `n` local waiters.
async fn in_line(
    client: &Client,
    name: &str,
    owner: u64,
    n: usize,
) -> tokio::task::JoinHandle<redisson_lock::Result<()>> {
    let lock = client.get_lock(name).with_owner(LockOwner::from_raw(owner));
    let task = tokio::spawn(async move { lock.lock().await });
    waiters(client, n).await;
    task
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_hands_the_lock_to_a_local_waiter_without_a_message() {
    let Bed(server, client, raw, name) = Bed::new("handoff-basic").await;
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;

    let holder = holding(&client, &name, 1).await;
    let waiter = client.get_lock(&name).with_owner(LockOwner::from_raw(2));
    let task = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.lock().await }
    });
    waiters(&client, 1).await;
    tokio::time::sleep(ms(100)).await;
    assert!(!task.is_finished());

    holder.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .expect("handed over at once")
        .unwrap()
        .unwrap();
    // The field moved from owner 1 to owner 2; the TTL is the watchdog's; no message.
    assert_eq!(
        hgetall(&raw, &name).await,
        pair(&field_of(&client, LockOwner::from_raw(2)), 1)
    );
    let ttl = pttl(&raw, &name).await;
    assert!((25_000..=30_000).contains(&ttl), "{ttl}");
    assert_eq!(drain_first(&mut rx, ms(300)).await, None);
    assert!(waiter.is_held_by_current_task().await.unwrap());
    assert_eq!(client.local_waiters(), 0);

    // The new holder is renewed by the watchdog and unlocks as usual (a real release:
    // nobody waits).
    assert_eq!(client.renewed_locks(), 1);
    waiter.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        drain_first(&mut rx, Duration::from_secs(2)).await,
        Some((channel(&name), b"0".to_vec()))
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_waiter_is_handed_the_lock_with_its_own_lease() {
    let Bed(_server, client, raw, name) = Bed::new("handoff-lease").await;
    let holder = holding(&client, &name, 1).await;
    let waiter = client.get_lock(&name).with_owner(LockOwner::from_raw(2));
    let task = tokio::spawn({
        let waiter = waiter.clone();
        async move {
            waiter
                .try_lock_with_lease(Duration::from_secs(10), Duration::from_secs(3))
                .await
        }
    });
    waiters(&client, 1).await;
    holder.unlock().await.unwrap();
    assert!(task.await.unwrap().unwrap());
    let ttl = pttl(&raw, &name).await;
    assert!((2_000..=3_000).contains(&ttl), "{ttl}");
    assert_eq!(client.renewed_locks(), 0, "a lease hold is not renewed");
    // Its lease ends it, as any lease hold.
    assert!(
        gone_within(&raw, &name, Duration::from_secs(5))
            .await
            .is_some()
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_head_waits_in_redis_and_hand_offs_follow_arrival_order() {
    let Bed(_server, client, raw, name) = Bed::new("handoff-order").await;
    let holder = client.get_lock(&name).with_owner(LockOwner::from_raw(100));
    holder.lock().await.unwrap();
    reset_stats(&raw).await;

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..10u64 {
        let lock = client
            .get_lock(&name)
            .with_owner(LockOwner::from_raw(i + 1));
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            lock.lock().await.unwrap();
            order.lock().unwrap().push(i);
            lock.unlock().await.unwrap();
        }));
        waiters(&client, i as usize + 1).await;
    }
    // Ten waiters: the first tried before it queued and again after subscribing; the nine
    // behind it queued behind a local holder without sending anything.
    let scripts = script_calls(&raw).await;
    assert!(scripts <= 3, "{scripts} scripts for 10 waiters");
    assert_eq!(client.subscribed_channels(), 1);
    // The head, 100 ms into its wait without a message, reads the key once so that Redis
    // tracks it (one EXISTS beside the one of each acquire that failed); it is awaited
    // here, or it could fall among the hand-offs' counts below.
    assert!(
        eventually(Duration::from_secs(5), || async {
            command_calls(&raw, "exists").await == scripts + 1
        })
        .await,
        "the head's tracking read: {} EXISTS after {scripts} scripts",
        command_calls(&raw, "exists").await
    );

    reset_stats(&raw).await;
    holder.unlock().await.unwrap();
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    // Eleven unlock scripts ran (each reads its latch once: ten hand-offs, one real
    // release with the only message), and no acquire script (which asks EXISTS before
    // its write and after it; a hand-off reads the key it handed once, for tracking).
    assert_eq!(command_calls(&raw, "evalsha").await, 11, "scripts");
    assert_eq!(
        command_calls(&raw, "get").await,
        11,
        "one script per hand-off"
    );
    assert_eq!(command_calls(&raw, "hdel").await, 10);
    assert_eq!(command_calls(&raw, "exists").await, 10);
    assert_eq!(command_calls(&raw, "publish").await, 1);
    assert!(!exists(&raw, &name).await);
    assert!(
        eventually(Duration::from_secs(2), || async {
            client.subscribed_channels() == 0
        })
        .await
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_share_a_contended_lock() {
    let Duo(_server, clients, _raw, name) = Duo::new("handoff-mixed").await;
    let counter = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for _ in 0..4 {
            let lock = client.get_lock(&name);
            tasks.push((c, spawn_counting(lock, counter.clone(), stop.clone())));
        }
    }
    // A run of 1,000 acquisitions (under a second on 2 shared cores), not a fixed time.
    assert!(
        eventually(Duration::from_secs(60), || async {
            counter.load(Ordering::SeqCst) >= 1_000
        })
        .await,
        "1,000 acquisitions within 60 s: {}",
        counter.load(Ordering::SeqCst)
    );
    stop.store(true, Ordering::Relaxed);
    let mut shares = [0u64; 2];
    for (c, task) in tasks {
        let mine = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
        shares[c] += mine;
    }
    let total = shares[0] + shares[1];
    eprintln!("shares: {shares:?}");
    assert_eq!(counter.load(Ordering::SeqCst), total, "no lost update");
    for share in shares {
        assert!(
            share * 5 >= total,
            "each client gets a fair part: {shares:?}"
        );
    }
    for client in clients {
        client.shutdown().await.unwrap();
    }
}

/// The head of a line listens on the lock channel and, in the same `SUBSCRIBE`, on the
/// mark of local lines (`redisson_lock__channel:{N}:local_line`, protocol §16), which nobody
/// publishes on: a hand-off script counts the channel's other listeners with it. Both go
/// once the line is gone (after the channel's linger).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_listens_with_the_mark_of_local_lines() {
    let Bed(server, client, raw, name) = Bed::new("handoff-mark").await;
    let marker = format!("redisson_lock__channel:{{{name}}}:local_line");
    // Another process holds it.
    let other = server.client().await;
    let holder = other.get_lock(&name).with_owner(LockOwner::from_raw(7));
    holder
        .lock_with_lease(Duration::from_secs(30))
        .await
        .unwrap();
    let waiter = in_line(&client, &name, 1, 1).await;
    assert!(
        eventually(Duration::from_secs(2), || async {
            numsub(&raw, &channel(&name)).await == 1 && numsub(&raw, &marker).await == 1
        })
        .await,
        "channel {} and mark {} listeners",
        numsub(&raw, &channel(&name)).await,
        numsub(&raw, &marker).await
    );
    holder.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        pair(&field_of(&client, LockOwner::from_raw(1)), 1)
    );
    assert!(
        eventually(Duration::from_secs(3), || async {
            numsub(&raw, &channel(&name)).await == 0 && numsub(&raw, &marker).await == 0
        })
        .await
    );
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

/// `lua/lock_handoff.lua` with the mark (KEYS[4], ARGV[9]; protocol §16), run raw: while
/// the turn goes on it hands off without counting; past it, a listener of the channel
/// that is not marked (a Java waiter) makes it release for real and answer 3 (the latch
/// keeps 3: 2 + one such listener), and when every listener is marked the listener limit decides as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hand_off_script_yields_to_unmarked_listeners_past_the_turn() {
    let Bed(server, _client, raw, name) = Bed::new("handoff-script").await;
    let marker = format!("redisson_lock__channel:{{{name}}}:local_line");
    let (a, b) = ("c:1".to_owned(), "c:2".to_owned());
    let handoff = |from: String, to: String, limit: i64, turn: &'static str| {
        let (raw, name, marker) = (raw.clone(), name.clone(), marker.clone());
        async move {
            let latch = format!(
                "redisson_unlock_latch:{{{name}}}:{}",
                uuid::Uuid::new_v4().simple()
            );
            let reply: Value = raw
                .eval(
                    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lock_handoff.lua")),
                    vec![name.clone(), channel(&name), latch.clone(), marker],
                    vec![
                        Value::from("0"),
                        Value::from(30_000),
                        Value::from(from),
                        Value::from("PUBLISH"),
                        Value::from(10_000),
                        Value::from(to),
                        Value::from(30_000),
                        Value::from(limit),
                        Value::from(turn),
                    ],
                )
                .await
                .unwrap();
            let kept: Option<String> = raw.get(&latch).await.unwrap();
            (reply, kept)
        }
    };
    // A Java waiter listens (unmarked: a raw subscriber stands for it, the script only
    // counts listeners); a line of this crate listens on both.
    let (java_listener, mut rx) = listen(&server, &channel(&name)).await;
    let (line, _line_rx) = listen(&server, &channel(&name)).await;
    line.subscribe(marker.as_str()).await.unwrap();
    let _: Value = line.ping(None).await.unwrap();
    // Held by some owner `j:1` (a raw hold: the script only moves fields).
    let a_field = "j:1".to_owned();
    raw_hold(&raw, &name, &a_field).await;
    // The turn goes on (within the bounds): handed, nothing counted or published.
    assert_eq!(
        handoff(a_field.clone(), a.clone(), -1, "1").await,
        (Value::Integer(2), Some("2".into()))
    );
    assert_eq!(hgetall(&raw, &name).await, pair(&a, 1));
    // Past the turn: the Java listener is not marked, so a real release, reply 3.
    assert_eq!(
        handoff(a.clone(), b.clone(), -1, "0").await,
        (Value::Integer(3), Some("3".into()))
    );
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        drain_first(&mut rx, Duration::from_secs(2)).await,
        Some((channel(&name), b"0".to_vec()))
    );
    // Without the Java listener, only marked listeners: within the bounds it hands off.
    java_listener.quit().await.unwrap();
    assert!(
        eventually(Duration::from_secs(2), || async {
            numsub(&raw, &channel(&name)).await == 1
        })
        .await
    );
    raw_hold(&raw, &name, &a_field).await;
    assert_eq!(
        handoff(a_field.clone(), a.clone(), -1, "0").await,
        (Value::Integer(2), Some("2".into()))
    );
    // Past the bounds the limit decides: one listener allowed, one listens: handed.
    assert_eq!(
        handoff(a.clone(), b.clone(), 1, "0").await,
        (Value::Integer(2), Some("2".into()))
    );
    // None allowed: a plain real release (1).
    assert_eq!(
        handoff(b.clone(), a.clone(), 0, "1").await,
        (Value::Integer(1), Some("1".into()))
    );
    assert!(!exists(&raw, &name).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_off_off_publishes_every_release() {
    let Bed(server, client, raw, name) =
        Bed::with_config("handoff-off", |c| c.local_handoffs(0)).await;
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;
    let holder = holding(&client, &name, 1).await;
    let task = in_line(&client, &name, 2, 1).await;
    holder.unlock().await.unwrap();
    assert_eq!(
        drain_first(&mut rx, Duration::from_secs(2)).await,
        Some((channel(&name), b"0".to_vec()))
    );
    tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        pair(&field_of(&client, LockOwner::from_raw(2)), 1)
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_dropped_around_a_hand_off_leave_nothing_held() {
    let Bed(_server, client, raw, name) = Bed::new("handoff-cancel").await;
    for round in 0..150u64 {
        let holder = holding(&client, &name, 1).await;
        let waiters: Vec<_> = (0..3u64)
            .map(|i| {
                let lock = client
                    .get_lock(&name)
                    .with_owner(LockOwner::from_raw(10 + i));
                tokio::spawn(async move { lock.lock().await })
            })
            .collect();
        let _ = eventually(ms(500), || async { client.local_waiters() == 3 }).await;
        // Unlock (a hand-off to the head) while the waiters are aborted at various points.
        let unlock = tokio::spawn(async move { holder.unlock().await });
        tokio::time::sleep(Duration::from_micros(round * 37 % 700)).await;
        for waiter in &waiters {
            waiter.abort();
        }
        unlock.await.unwrap().unwrap();
        for waiter in waiters {
            if let Ok(Ok(())) = waiter.await {
                // It finished before the abort: it holds the lock; give it back.
                let fields = hgetall(&raw, &name).await;
                let owner = fields[0].0.rsplit(':').next().unwrap().parse().unwrap();
                client
                    .get_lock(&name)
                    .with_owner(LockOwner::from_raw(owner))
                    .unlock()
                    .await
                    .unwrap();
            }
        }
        assert!(
            gone_within(&raw, &name, Duration::from_secs(5))
                .await
                .is_some(),
            "round {round}: a hold was left: {:?}",
            hgetall(&raw, &name).await
        );
        assert!(
            eventually(Duration::from_secs(2), || async {
                client.local_waiters() == 0
            })
            .await
        );
    }
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_lock_for_waiter_gives_up_in_line_and_the_next_one_is_served() {
    let Bed(_server, client, _raw, name) = Bed::new("handoff-timeout").await;
    let holder = holding(&client, &name, 1).await;
    let first = tokio::spawn({
        let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(2));
        async move {
            let t0 = Instant::now();
            (lock.try_lock_for(ms(300)).await.unwrap(), t0.elapsed())
        }
    });
    waiters(&client, 1).await;
    let second = tokio::spawn({
        let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(3));
        async move {
            let taken = lock.try_lock_for(Duration::from_secs(5)).await.unwrap();
            lock.unlock().await.unwrap();
            taken
        }
    });
    waiters(&client, 2).await;
    let (taken, waited) = first.await.unwrap();
    assert!(!taken);
    assert!(
        waited >= ms(290) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    holder.unlock().await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(3), second)
            .await
            .unwrap()
            .unwrap()
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_holder_that_loses_its_lock_does_not_strand_the_line() {
    let Bed(_server, client, raw, name) = Bed::new("handoff-lost").await;
    // A lease holder that never unlocks: its lease ends it; the head tries then.
    let holder = client.get_lock(&name).with_owner(LockOwner::from_raw(1));
    holder.lock_with_lease(ms(400)).await.unwrap();
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..3u64)
        .map(|i| {
            let lock = client
                .get_lock(&name)
                .with_owner(LockOwner::from_raw(2 + i));
            tokio::spawn(async move {
                lock.lock().await.unwrap();
                lock.unlock().await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("served after the holder's lease ended")
            .unwrap();
    }
    assert!(t0.elapsed() >= ms(300));
    // Someone else deleting the lock of a local holder: the head is woken by the message.
    holder.lock().await.unwrap();
    let waiter = in_line(&client, &name, 9, 1).await;
    let _: i64 = raw.del(&name).await.unwrap();
    let _: i64 = raw.publish(channel(&name), "0").await.unwrap();
    tokio::time::timeout(Duration::from_secs(3), waiter)
        .await
        .expect("woken by the message")
        .unwrap()
        .unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_re_enters_past_its_own_waiters() {
    let Bed(_server, client, raw, name) = Bed::new("handoff-reenter").await;
    // Taken before any line exists: the line does not know this holder.
    let holder = holding(&client, &name, 1).await;
    let waiter = in_line(&client, &name, 2, 1).await;
    // A re-entry of the holder (recursive code) must not queue behind its own waiter.
    tokio::time::timeout(Duration::from_secs(2), holder.lock())
        .await
        .expect("a re-entry never waits")
        .unwrap();
    assert_eq!(holder.hold_count().await.unwrap(), 2);
    holder.unlock().await.unwrap();
    assert!(!waiter.is_finished());
    holder.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .expect("handed over after the last unlock")
        .unwrap()
        .unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        pair(&field_of(&client, LockOwner::from_raw(2)), 1)
    );
    client.shutdown().await.unwrap();
}
