//! The read-write lock (`ReadWriteLock`, protocol §11) against real redis-server
//! processes.
//!
//! Sections:
//! 1. raw state after each step, compared with protocol §11 (hash fields, per-hold
//!    timeout keys and their TTLs, the hash TTL, channel messages, names with braces);
//! 2. Redisson's `RedissonReadWriteLockTest` scenarios that apply (timing bounds widened
//!    for a loaded 2-core machine);
//! 3. self-deadlock of a reader asking for the write lock;
//! 4. mutual exclusion of writers and readers on a shared non-atomic state;
//! 5. the watchdog for read and write holds;
//! 6. cancel safety of both halves;
//! 7. mixing with other key types, and bad input.
//!
//! Real Redisson's read and write locks beside these: `tests/java/locks.rs`
//! (`read_write_lock`).

use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use rand::Rng;
use redisson_lock::fred::prelude::*;
use redisson_lock::{Client as LockClient, Error, LockOwner, ReadLock, ReadWriteLock, WriteLock};
use tokio::time::Instant;

// ---- shared helpers ---------------------------------------------------------------------

/// Slack for TTL comparisons: a PTTL read this long after the write may be this much lower.
const TTL_SLACK_MS: i64 = 1_000;

/// Redisson's `prefixName` hash tag: `{N}`, or `N` when it already has a brace.
fn tag(name: &str) -> String {
    if name.contains('{') {
        name.to_string()
    } else {
        format!("{{{name}}}")
    }
}

/// The read-write lock's channel, `redisson_rwlock:tag(N)`.
fn rw_channel(name: &str) -> String {
    format!("redisson_rwlock:{}", tag(name))
}

/// Read hold `k` of `field`: `tag(N):<field>:rwlock_timeout:<k>`.
fn hold_key(name: &str, field: &str, k: u32) -> String {
    format!("{}:{field}:rwlock_timeout:{k}", tag(name))
}

/// The reader field `<client-id>:<owner>` of this handle's owner.
fn reader(client: &LockClient, lock: &ReadLock) -> String {
    format!("{}:{}", client.id(), lock.owner())
}

/// The writer field `<client-id>:<owner>:write` of this handle's owner.
fn writer(client: &LockClient, lock: &WriteLock) -> String {
    format!("{}:{}:write", client.id(), lock.owner())
}

/// Both halves of `name` acting as the explicit owner `owner`.
fn halves(client: &LockClient, name: &str, owner: u64) -> (ReadLock, WriteLock) {
    let rw: ReadWriteLock = client.get_read_write_lock(name);
    let owner = LockOwner::from_raw(owner);
    (
        rw.read_lock().with_owner(owner),
        rw.write_lock().with_owner(owner),
    )
}

/// Sorted (field, value) pairs, for comparing with `hgetall`.
fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = pairs
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

/// Every `rwlock_timeout` key on the server, sorted.
async fn timeout_keys(raw: &Client) -> Vec<String> {
    let mut keys: Vec<String> = raw
        .custom(fred::cmd!("KEYS"), vec!["*rwlock_timeout*"])
        .await
        .unwrap();
    keys.sort();
    keys
}

/// Asserts `key`'s PTTL is at most `expected_ms` and no more than the slack below it.
async fn assert_ttl_near(raw: &Client, key: &str, expected_ms: i64) {
    let ttl = pttl(raw, key).await;
    assert!(
        ttl <= expected_ms && ttl >= expected_ms - TTL_SLACK_MS,
        "PTTL of {key} is {ttl} ms, expected about {expected_ms} ms"
    );
}

/// The messages on `rx` until 300 ms of quiet, as payload strings of `channel` only.
async fn payloads(
    rx: &mut tokio::sync::broadcast::Receiver<fred::types::Message>,
    channel: &str,
) -> Vec<String> {
    drain(rx, Duration::from_millis(300))
        .await
        .into_iter()
        .filter(|(c, _)| c == channel)
        .map(|(_, p)| String::from_utf8(p).unwrap())
        .collect()
}

/// Closes a raw subscriber from `listen`, so that it no longer counts in `PUBSUB NUMSUB`.
async fn stop_listening(subscriber: Client) {
    subscriber.quit().await.unwrap();
}

/// Waits until the lock, its hold keys and every subscription are gone.
async fn assert_clean(raw: &Client, clients: &[&LockClient], name: &str, limit: Duration) {
    let channel = rw_channel(name);
    let clean = eventually(limit, || async {
        !exists(raw, name).await
            && timeout_keys(raw).await.is_empty()
            && numsub(raw, &channel).await == 0
            && clients
                .iter()
                .all(|c| c.subscribed_channels() == 0 && c.renewed_locks() == 0)
    })
    .await;
    assert!(
        clean,
        "left behind: hash {:?}, hold keys {:?}, NUMSUB {}, local channels {:?}, renewed {:?}",
        hgetall(raw, name).await,
        timeout_keys(raw).await,
        numsub(raw, &channel).await,
        clients
            .iter()
            .map(|c| c.subscribed_channels())
            .collect::<Vec<_>>(),
        clients
            .iter()
            .map(|c| c.renewed_locks())
            .collect::<Vec<_>>(),
    );
}

// ---- 1. raw state -------------------------------------------------------------------------

#[tokio::test]
async fn raw_read_holds_their_timeout_keys_and_the_hash_ttl() {
    let Bed(server, client, raw, name) = Bed::new("rw-raw-read").await;
    let (a, _) = halves(&client, &name, 1);
    let (b, _) = halves(&client, &name, 2);
    let (fa, fb) = (reader(&client, &a), reader(&client, &b));
    let channel = rw_channel(&name);
    let (sub, mut rx) = listen(&server, &channel).await;

    // A's first hold: mode=read, A=1, hold key 1 with its lease, hash TTL = that lease.
    a.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&fa, "1")])
    );
    assert_eq!(timeout_keys(&raw).await, vec![hold_key(&name, &fa, 1)]);
    let value: String = raw.get(hold_key(&name, &fa, 1)).await.unwrap();
    assert_eq!(value, "1");
    assert_ttl_near(&raw, &hold_key(&name, &fa, 1), 10_000).await;
    assert_ttl_near(&raw, &name, 10_000).await;

    // A again, longer: hold 2 with its own lease; the hash lives as long as the longest.
    a.lock_with_lease(Duration::from_secs(20)).await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&fa, "2")])
    );
    assert_ttl_near(&raw, &hold_key(&name, &fa, 2), 20_000).await;
    assert_ttl_near(&raw, &hold_key(&name, &fa, 1), 10_000).await;
    assert_ttl_near(&raw, &name, 20_000).await;

    // B, shorter: its own field and key; the hash TTL stays the longest.
    b.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&fa, "2"), (&fb, "1")])
    );
    assert_ttl_near(&raw, &hold_key(&name, &fb, 1), 5_000).await;
    assert_ttl_near(&raw, &name, 20_000).await;

    // A's unlock drops its newest hold; the hash TTL becomes the longest remaining (A:1).
    a.unlock().await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&fa, "1"), (&fb, "1")])
    );
    assert_eq!(
        timeout_keys(&raw).await,
        vec![hold_key(&name, &fa, 1), hold_key(&name, &fb, 1)]
    );
    assert_ttl_near(&raw, &name, 10_000).await;

    // A's last hold: its field and key go; the hash TTL becomes B's lease.
    a.unlock().await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&fb, "1")])
    );
    assert_eq!(timeout_keys(&raw).await, vec![hold_key(&name, &fb, 1)]);
    assert_ttl_near(&raw, &name, 5_000).await;
    assert!(
        payloads(&mut rx, &channel).await.is_empty(),
        "no message while held"
    );

    // The last reader: the hash and its key go, and `0` is published.
    b.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert!(timeout_keys(&raw).await.is_empty());
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);

    // Watchdog mode: the hold key and the hash get the watchdog timeout (30 s).
    a.lock().await.unwrap();
    assert_ttl_near(&raw, &hold_key(&name, &fa, 1), 30_000).await;
    assert_ttl_near(&raw, &name, 30_000).await;
    a.unlock().await.unwrap();
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);
    stop_listening(sub).await;
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn raw_write_hold_downgrade_and_messages() {
    let Bed(server, client, raw, name) = Bed::new("rw-raw-write").await;
    let (read, write) = halves(&client, &name, 7);
    let (fr, fw) = (reader(&client, &read), writer(&client, &write));
    let channel = rw_channel(&name);
    let (sub, mut rx) = listen(&server, &channel).await;

    // A write hold: mode=write, `<id>:<owner>:write`=1, lease on the hash, no hold keys.
    write
        .lock_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "write"), (&fw, "1")])
    );
    assert!(timeout_keys(&raw).await.is_empty());
    assert_ttl_near(&raw, &name, 10_000).await;

    // The writer also reads: a reader field and hold key; the hash keeps the longer TTL.
    read.lock_with_lease(Duration::from_secs(3)).await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "write"), (&fw, "1"), (&fr, "1")])
    );
    assert_eq!(timeout_keys(&raw).await, vec![hold_key(&name, &fr, 1)]);
    assert_ttl_near(&raw, &hold_key(&name, &fr, 1), 3_000).await;
    assert_ttl_near(&raw, &name, 10_000).await;

    // Write unlock with reads left: downgrade to mode=read, and nothing is published.
    write.unlock().await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&fr, "1")])
    );
    assert!(
        payloads(&mut rx, &channel).await.is_empty(),
        "downgrade is silent"
    );

    // The read unlock releases it and publishes `0`.
    read.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert!(timeout_keys(&raw).await.is_empty());
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);

    // A plain write unlock publishes `1`.
    write.lock().await.unwrap();
    assert_ttl_near(&raw, &name, 30_000).await;
    write.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(payloads(&mut rx, &channel).await, vec!["1"]);
    stop_listening(sub).await;
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn raw_names_with_braces_use_the_name_itself_as_prefix() {
    let Bed(server, client, raw, _) = Bed::new("bed").await;
    let name = format!("{{{}}}:rw", key("braced"));
    let (read, write) = halves(&client, &name, 3);
    let fr = reader(&client, &read);
    let channel = format!("redisson_rwlock:{name}");
    assert_eq!(rw_channel(&name), channel);
    let (sub, mut rx) = listen(&server, &channel).await;

    read.lock().await.unwrap();
    assert_eq!(
        timeout_keys(&raw).await,
        vec![format!("{name}:{fr}:rwlock_timeout:1")]
    );
    read.unlock().await.unwrap();
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);
    write.lock().await.unwrap();
    write.unlock().await.unwrap();
    assert_eq!(payloads(&mut rx, &channel).await, vec!["1"]);
    stop_listening(sub).await;
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

// ---- 2. Redisson's scenarios --------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_readers_at_once_from_several_clients() {
    let Duo(_server, clients, raw, name) = Duo::new("rw-many-readers").await;

    // Three tasks per client take the read lock at the same time, and hold it.
    let release = Arc::new(tokio::sync::Notify::new());
    let held = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for client in &clients {
        for _ in 0..3 {
            let read = client.get_read_write_lock(&name).read_lock();
            let (release, held) = (release.clone(), held.clone());
            tasks.push(tokio::spawn(async move {
                let released = release.notified();
                tokio::pin!(released);
                released.as_mut().enable();
                assert!(read.try_lock_for(Duration::from_secs(5)).await.unwrap());
                held.fetch_add(1, Ordering::SeqCst);
                released.await;
                read.unlock().await.unwrap();
            }));
        }
    }
    assert!(
        eventually(Duration::from_secs(5), || async {
            held.load(Ordering::SeqCst) == 6
        })
        .await
    );
    // 6 readers and `mode`, 6 hold keys.
    let state = hgetall(&raw, &name).await;
    assert_eq!(state.len(), 7, "{state:?}");
    assert!(state.contains(&("mode".to_string(), "read".to_string())));
    assert_eq!(timeout_keys(&raw).await.len(), 6);

    // Nobody writes meanwhile.
    let write = clients[0].get_read_write_lock(&name).write_lock();
    assert!(!write.try_lock().await.unwrap());
    assert!(
        clients[1]
            .get_read_write_lock(&name)
            .read_lock()
            .is_locked()
            .await
            .unwrap()
    );

    release.notify_waiters();
    for task in tasks {
        task.await.unwrap();
    }
    assert!(write.try_lock().await.unwrap());
    write.unlock().await.unwrap();
    assert_clean(
        &raw,
        &[&clients[0], &clients[1]],
        &name,
        Duration::from_secs(2),
    )
    .await;
}

/// Readers of three clients hold (watchdog mode: a 30 s TTL, so only a message can wake
/// the writer in time); a writer waits with `lock()`; the readers leave one by one.
/// Returns how long the writer took to get the lock after the last reader's unlock was
/// sent. (A Java reader last: `tests/java/locks.rs`.)
async fn writer_wake_up_after_last_reader(third_is_last: bool) -> Duration {
    let Duo(server, clients, raw, name) = Duo::new("rw-writer-waits").await;
    let third = server.client().await;
    let (r1, _) = halves(&clients[0], &name, 1);
    let (r2, _) = halves(&clients[1], &name, 2);
    let (r9, _) = halves(&third, &name, 9);
    r1.lock().await.unwrap();
    r2.lock().await.unwrap();
    r9.lock().await.unwrap();

    let (_, write) = halves(&clients[0], &name, 3);
    let writer = {
        let write = write.clone();
        tokio::spawn(async move {
            write.lock().await.unwrap();
            let at = Instant::now();
            (at, write)
        })
    };
    assert!(
        eventually(Duration::from_secs(3), || async {
            numsub(&raw, &rw_channel(&name)).await == 1
        })
        .await,
        "the writer subscribes"
    );
    let leave = |i: usize| {
        let (r1, r2, r9) = (r1.clone(), r2.clone(), r9.clone());
        async move {
            match i {
                1 => r1.unlock().await.unwrap(),
                2 => r2.unlock().await.unwrap(),
                _ => r9.unlock().await.unwrap(),
            }
        }
    };
    let order: [usize; 3] = if third_is_last { [1, 2, 9] } else { [9, 1, 2] };
    for &i in &order[..2] {
        leave(i).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !writer.is_finished(),
            "the writer got in while a reader held"
        );
    }
    let sent = Instant::now();
    leave(order[2]).await;
    let (at, write) = tokio::time::timeout(Duration::from_secs(10), writer)
        .await
        .expect("the writer is woken by the last read unlock, not its 30 s TTL")
        .unwrap();
    let woke = at.duration_since(sent);
    assert!(woke < Duration::from_secs(2), "writer took {woke:?}");
    let fw = format!("{}:{}:write", clients[0].id(), write.owner());
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "write"), (&fw, "1")])
    );
    write.unlock().await.unwrap();
    assert_clean(
        &raw,
        &[&clients[0], &clients[1]],
        &name,
        Duration::from_secs(2),
    )
    .await;
    woke
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_waits_for_the_last_reader_and_is_woken_by_its_unlock() {
    let second_last = writer_wake_up_after_last_reader(false).await;
    let third_last = writer_wake_up_after_last_reader(true).await;
    println!(
        "writer wake-up after the last read unlock: {second_last:?} (the second client's \
         reader last), {third_last:?} (the third client's)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_exclude_each_other() {
    let Duo(_server, clients, raw, name) = Duo::new("rw-exclusion").await;
    let (r1, w1) = halves(&clients[0], &name, 1);
    let (r2, w2) = halves(&clients[1], &name, 2);

    // A writer excludes readers and other writers.
    w1.lock().await.unwrap();
    assert!(!r2.try_lock().await.unwrap());
    assert!(!w2.try_lock().await.unwrap());
    let started = Instant::now();
    assert!(!r2.try_lock_for(Duration::from_millis(300)).await.unwrap());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(280),
        "waited only {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "waited {waited:?}");

    // Readers waiting on two clients are all woken by the write unlock (message `1`).
    let waiting: Vec<_> = (0..4)
        .map(|i| {
            let read = clients[i % 2].get_read_write_lock(&name).read_lock();
            tokio::spawn(async move {
                read.lock().await.unwrap();
                let at = Instant::now();
                read.unlock().await.unwrap();
                at
            })
        })
        .collect();
    assert!(
        eventually(Duration::from_secs(3), || async {
            numsub(&raw, &rw_channel(&name)).await == 2
        })
        .await
    );
    let sent = Instant::now();
    w1.unlock().await.unwrap();
    for task in waiting {
        let at = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("readers woken by the write unlock")
            .unwrap();
        assert!(at.duration_since(sent) < Duration::from_secs(2));
    }

    // Readers exclude writers.
    r1.lock().await.unwrap();
    assert!(!w2.try_lock().await.unwrap());
    assert!(
        !w1.try_lock().await.unwrap(),
        "no upgrade: a reader cannot write"
    );
    r1.unlock().await.unwrap();
    assert!(w2.try_lock().await.unwrap());
    w2.unlock().await.unwrap();
    assert_clean(
        &raw,
        &[&clients[0], &clients[1]],
        &name,
        Duration::from_secs(2),
    )
    .await;
}

#[tokio::test]
async fn write_then_read_by_the_same_owner_downgrades() {
    let Bed(_server, client, raw, name) = Bed::new("rw-downgrade").await;
    let (r1, w1) = halves(&client, &name, 1);
    let (r2, w2) = halves(&client, &name, 2);

    w1.lock().await.unwrap();
    assert!(r1.try_lock().await.unwrap(), "the writer may read");
    assert!(!r2.try_lock().await.unwrap(), "nobody else may");
    assert_eq!(r1.hold_count().await.unwrap(), 1);
    assert_eq!(w1.hold_count().await.unwrap(), 1);

    // The write unlock leaves mode=read with the writer's read hold.
    w1.unlock().await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&reader(&client, &r1), "1")])
    );
    assert!(!w1.is_held_by_current_task().await.unwrap());
    // Now other readers may join; writers may not.
    assert!(r2.try_lock().await.unwrap());
    assert!(!w2.try_lock().await.unwrap());
    r2.unlock().await.unwrap();
    r1.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

/// The writer's own short read holds must not cut its write lease short. Redisson's read
/// unlock re-arms the hash to the longest remaining read hold even in write mode, so
/// there the write lock would expire with the read hold and a second writer get in while
/// the first still holds (a deviation, see docs/protocol.md).
#[tokio::test]
async fn a_writers_read_unlock_never_shortens_its_write_lease() {
    let Bed(_server, client, raw, name) = Bed::new("rw-downgrade-ttl").await;
    let (read, write) = halves(&client, &name, 1);
    let (_, intruder) = halves(&client, &name, 2);

    write
        .lock_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    read.lock_with_lease(Duration::from_millis(300))
        .await
        .unwrap();
    read.lock_with_lease(Duration::from_millis(300))
        .await
        .unwrap();
    read.unlock().await.unwrap();
    assert_ttl_near(&raw, &name, 10_000).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !intruder.try_lock().await.unwrap(),
        "a second writer got in during the first one's lease"
    );
    assert!(write.is_held_by_current_task().await.unwrap());
    read.unlock().await.unwrap();
    write.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_expiration_keeps_the_hash_for_the_longest_lease() {
    let Bed(_server, client, raw, name) = Bed::new("rw-expire-read").await;
    let leases = [600u64, 1_200, 2_000];
    let readers: Vec<ReadLock> = (0..3).map(|i| halves(&client, &name, i + 1).0).collect();
    let started = Instant::now();
    for (read, lease) in readers.iter().zip(leases) {
        read.lock_with_lease(Duration::from_millis(lease))
            .await
            .unwrap();
    }
    assert_ttl_near(&raw, &name, 2_000).await;

    // The shortest hold's key expires by itself; its field stays (nobody removes it),
    // and the hash lives on.
    let first = hold_key(&name, &reader(&client, &readers[0]), 1);
    let gone = gone_within(&raw, &first, Duration::from_secs(3)).await;
    assert!(gone.is_some(), "the 600 ms hold key expires");
    assert!(exists(&raw, &name).await);
    assert!(started.elapsed() < Duration::from_millis(1_900));

    // A read unlock of the longest hold re-arms the hash to the longest remaining one.
    readers[2].unlock().await.unwrap();
    let ttl = pttl(&raw, &name).await;
    let left = 1_200 - started.elapsed().as_millis() as i64;
    assert!(
        ttl <= 1_200 && ttl >= left - TTL_SLACK_MS,
        "PTTL {ttl}, expected about {left}"
    );

    // The hash goes with the middle hold; then a writer gets in.
    let write = client.get_read_write_lock(&name).write_lock();
    assert!(!write.try_lock().await.unwrap());
    assert!(
        gone_within(&raw, &name, Duration::from_secs(3))
            .await
            .is_some()
    );
    assert!(started.elapsed() >= Duration::from_millis(1_100));
    assert!(write.try_lock().await.unwrap());
    write.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
}

/// Nobody unlocks: the write lease runs out, which publishes nothing. A waiting reader
/// sleeps at most the hash's TTL, so it gets in right after the lease, not at its own
/// wait limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_gets_in_when_a_write_lease_runs_out() {
    let Duo(_server, clients, raw, name) = Duo::new("rw-write-lease-ends").await;
    let (_, write) = halves(&clients[0], &name, 1);
    let (read, _) = halves(&clients[1], &name, 2);

    write
        .lock_with_lease(Duration::from_millis(800))
        .await
        .unwrap();
    let started = Instant::now();
    assert!(read.try_lock_for(Duration::from_secs(10)).await.unwrap());
    let waited = started.elapsed();
    println!("reader got in {waited:?} after an 800 ms write lease began");
    assert!(
        waited >= Duration::from_millis(600) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );
    assert_eq!(read.hold_count().await.unwrap(), 1);
    assert_eq!(write.hold_count().await.unwrap(), 0);
    read.unlock().await.unwrap();
    assert_clean(
        &raw,
        &[&clients[0], &clients[1]],
        &name,
        Duration::from_secs(2),
    )
    .await;
}

#[tokio::test]
async fn unlock_by_another_owner_fails_with_redissons_text() {
    let Bed(server, client, raw, name) = Bed::new("rw-not-owner").await;
    let (r1, w1) = halves(&client, &name, 1);
    let (r2, w2) = halves(&client, &name, 2);
    let expect_not_owner = |result: Result<(), Error>, owner: u64| match result {
        Err(error @ Error::NotOwner { .. }) => assert_eq!(
            error.to_string(),
            format!(
                "attempt to unlock lock, not locked by current thread by node id: {} thread-id: {owner}",
                client.id()
            )
        ),
        other => panic!("expected NotOwner, got {other:?}"),
    };

    r1.lock().await.unwrap();
    let before = hgetall(&raw, &name).await;
    expect_not_owner(r2.unlock().await, 2);
    expect_not_owner(w1.unlock().await, 1); // the read holder's write half holds nothing
    assert_eq!(hgetall(&raw, &name).await, before, "nothing changed");
    r1.unlock().await.unwrap();

    w1.lock().await.unwrap();
    expect_not_owner(w2.unlock().await, 2);
    expect_not_owner(r2.unlock().await, 2);
    w1.unlock().await.unwrap();

    // On a free lock both halves answer NotOwner (Redisson 3.44+), and publish as
    // Redisson's scripts do: `0` for the read half, `1` for the write half.
    let channel = rw_channel(&name);
    let (sub, mut rx) = listen(&server, &channel).await;
    expect_not_owner(r1.unlock().await, 1);
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);
    expect_not_owner(w1.unlock().await, 1);
    assert_eq!(payloads(&mut rx, &channel).await, vec!["1"]);
    stop_listening(sub).await;
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn write_reentry_adds_the_lease() {
    let Bed(_server, client, raw, name) = Bed::new("rw-write-reentry").await;
    let (_, write) = halves(&client, &name, 1);
    let lease = Duration::from_secs(10);

    write.lock_with_lease(lease).await.unwrap();
    assert_ttl_near(&raw, &name, 10_000).await;
    // Redisson quirk: a write re-entry ADDS its lease to the remaining TTL.
    write.lock_with_lease(lease).await.unwrap();
    assert_ttl_near(&raw, &name, 20_000).await;
    assert_eq!(write.hold_count().await.unwrap(), 2);
    // A partial unlock re-arms the last lease.
    write.unlock().await.unwrap();
    assert_ttl_near(&raw, &name, 10_000).await;
    write.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn is_locked_of_each_half() {
    let Bed(_server, client, raw, name) = Bed::new("rw-is-locked").await;
    let (r1, w1) = halves(&client, &name, 1);
    let (r2, _) = halves(&client, &name, 2);
    let locked = |r: ReadLock, w: WriteLock| async move {
        (r.is_locked().await.unwrap(), w.is_locked().await.unwrap())
    };

    assert_eq!(locked(r1.clone(), w1.clone()).await, (false, false));
    r2.lock().await.unwrap();
    assert_eq!(locked(r1.clone(), w1.clone()).await, (true, false));
    r2.unlock().await.unwrap();

    w1.lock().await.unwrap();
    assert_eq!(locked(r1.clone(), w1.clone()).await, (false, true));
    // The writer also reads: mode=write with more than `mode` and the writer (#4400).
    r1.lock().await.unwrap();
    assert_eq!(locked(r1.clone(), w1.clone()).await, (true, true));
    assert!(r1.is_held_by_current_task().await.unwrap());
    assert!(w1.is_held_by_current_task().await.unwrap());
    assert!(!r2.is_held_by_current_task().await.unwrap());
    // Downgrade: only the read half is locked.
    w1.unlock().await.unwrap();
    assert_eq!(locked(r1.clone(), w1.clone()).await, (true, false));
    r1.unlock().await.unwrap();
    assert_eq!(locked(r1.clone(), w1.clone()).await, (false, false));
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn force_unlock_of_each_half() {
    let Bed(server, client, raw, name) = Bed::new("rw-force").await;
    let (r1, w1) = halves(&client, &name, 1);
    let (r2, w2) = halves(&client, &name, 2);
    let channel = rw_channel(&name);
    let (_sub, mut rx) = listen(&server, &channel).await;

    // Read mode: the write half's force unlock does nothing; the read half's deletes it.
    r1.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    r2.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    let before = hgetall(&raw, &name).await;
    assert!(!w2.force_unlock().await.unwrap());
    assert_eq!(hgetall(&raw, &name).await, before);
    assert!(payloads(&mut rx, &channel).await.is_empty());
    assert!(r2.force_unlock().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);
    // The hold keys are left to expire, as in Redisson.
    assert_eq!(timeout_keys(&raw).await.len(), 2);
    assert!(!r2.force_unlock().await.unwrap());

    // Write mode: the read half's force unlock does nothing; the write half's deletes it.
    w1.lock().await.unwrap();
    assert!(!r2.force_unlock().await.unwrap());
    assert!(exists(&raw, &name).await);
    assert!(w2.force_unlock().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert_eq!(payloads(&mut rx, &channel).await, vec!["1"]);
    assert!(!w2.force_unlock().await.unwrap());
    // The forced-out holders now get NotOwner.
    assert!(matches!(w1.unlock().await, Err(Error::NotOwner { .. })));
    assert!(matches!(r1.unlock().await, Err(Error::NotOwner { .. })));
    client.shutdown().await.unwrap();
}

/// A write waiter of this client, woken by a force unlock's own message, takes the lock
/// before the force unlock's reply is read (here: the force unlock's future is polled
/// once, which sends its script, and finished only after a waiter took the lock). The
/// client must still count that hold: its owner's read try is a downgrade, which never
/// waits for this client's other write waiter (that one waits for the owner). CI run 26's
/// model sequence met it: the client had forgotten the hold and the read try yielded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_woken_by_a_force_unlock_keeps_its_hold_counted() {
    let Bed(_server, client, raw, name) = Bed::new("rw-force-woken").await;
    let (_, holder) = halves(&client, &name, 1);
    let (_, forcer) = halves(&client, &name, 2);
    holder.lock().await.unwrap();
    // The force unlock's script loaded, so that its first send runs it (a first EVALSHA
    // would come back NOSCRIPT, and the EVAL after it needs another poll).
    let warm = client.get_read_write_lock(format!("{name}-warm"));
    assert!(!warm.write_lock().force_unlock().await.unwrap());
    reset_stats(&raw).await;
    // Two write waiters of this client: whichever takes the lock, the other waits on.
    let mut waiters: Vec<_> = (3..=4u64)
        .map(|owner| {
            let (read, write) = halves(&client, &name, owner);
            let task = tokio::spawn({
                let write = write.clone();
                async move { write.try_lock_for(Duration::from_secs(10)).await }
            });
            (read, write, Some(task))
        })
        .collect();
    let both_tried =
        || async { script_calls(&raw).await >= 2 && client.subscribed_channels() == 1 };
    assert!(eventually(Duration::from_secs(5), both_tried).await);
    // Each announces itself to the client's readers right after its first try.
    tokio::time::sleep(Duration::from_millis(100)).await;

    let force = forcer.force_unlock();
    tokio::pin!(force);
    assert!(
        futures::poll!(&mut force).is_pending(),
        "the force unlock finished at its first poll: the order could not be arranged"
    );
    let first = {
        let [one, two] = &mut waiters[..] else {
            unreachable!()
        };
        let (a, b) = (one.2.as_mut().unwrap(), two.2.as_mut().unwrap());
        let first = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::select! {
                took = a => (0, took),
                took = b => (1, took),
            }
        })
        .await;
        let Ok((winner, Ok(Ok(true)))) = first else {
            panic!("no waiter took the lock the force unlock freed: {first:?}");
        };
        winner
    };
    waiters[first].2 = None;
    assert!(force.await.unwrap());
    let (read, write, _) = &waiters[first];
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "write"), (&writer(&client, write), "1")])
    );
    assert!(
        read.try_lock().await.unwrap(),
        "the write holder's read try yielded to the writer waiting for it"
    );
    read.unlock().await.unwrap();
    write.unlock().await.unwrap();
    let (_, other, task) = &mut waiters[1 - first];
    let took = tokio::time::timeout(Duration::from_secs(5), task.take().unwrap()).await;
    assert!(matches!(took, Ok(Ok(Ok(true)))), "{took:?}");
    other.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

// ---- 3. self-deadlock ---------------------------------------------------------------------

#[tokio::test]
async fn a_reader_asking_for_the_write_lock_waits_for_itself() {
    let Bed(_server, client, raw, name) = Bed::new("rw-self-deadlock").await;
    let (read, write) = halves(&client, &name, 1);

    read.lock().await.unwrap();
    assert!(!write.try_lock().await.unwrap());
    let started = Instant::now();
    assert!(
        !write
            .try_lock_for(Duration::from_millis(300))
            .await
            .unwrap()
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(280) && waited < Duration::from_secs(2),
        "try_lock_for(300 ms) took {waited:?}"
    );
    // `write.lock()` here would wait forever, exactly as Redisson's `writeLock().lock()`
    // does for a thread that holds the read lock: there is no upgrade, and the writer
    // waits for the last reader, which is itself. Shown with a bound:
    assert!(
        tokio::time::timeout(Duration::from_millis(500), write.lock())
            .await
            .is_err(),
        "lock() does not return while the same owner reads"
    );
    read.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(3)).await;
    client.shutdown().await.unwrap();
}

// ---- 4. mutual exclusion ------------------------------------------------------------------

const EXCLUSION_CLIENTS: usize = 2;
const EXCLUSION_TASKS: usize = 8;
const WRITER_ROUNDS: u64 = 25;
const READER_ROUNDS: u64 = 40;

/// Shared state the lock protects: a counter incremented by hand and a pair written in
/// two steps, in Redis; and who is inside, counted in this process (all clients of the
/// test live in it).
struct Shared {
    counter: String,
    first: String,
    second: String,
    readers_inside: AtomicUsize,
    writers_inside: AtomicUsize,
    most_readers: AtomicUsize,
}

/// Takes the write lock, increments the counter non-atomically, writes the pair in two
/// steps with a pause between them; nobody else may be inside meanwhile.
async fn exclusion_writer(write: WriteLock, redis: Client, shared: Arc<Shared>) {
    for _ in 0..WRITER_ROUNDS {
        write.lock().await.unwrap();
        assert_eq!(
            shared.writers_inside.fetch_add(1, Ordering::SeqCst),
            0,
            "two writers"
        );
        assert_eq!(
            shared.readers_inside.load(Ordering::SeqCst),
            0,
            "a writer with readers"
        );
        let value: Option<u64> = redis.get(&shared.counter).await.unwrap();
        let next = value.unwrap_or(0) + 1;
        tokio::task::yield_now().await;
        let _: () = redis
            .set(&shared.counter, next, None, None, false)
            .await
            .unwrap();
        let _: () = redis
            .set(&shared.first, next, None, None, false)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let _: () = redis
            .set(&shared.second, next, None, None, false)
            .await
            .unwrap();
        shared.writers_inside.fetch_sub(1, Ordering::SeqCst);
        write.unlock().await.unwrap();
        tokio::task::yield_now().await;
    }
}

/// Takes the read lock and reads the pair in two steps; it must never be torn, and no
/// writer may be inside meanwhile.
async fn exclusion_reader(read: ReadLock, redis: Client, shared: Arc<Shared>) {
    for _ in 0..READER_ROUNDS {
        read.lock().await.unwrap();
        let now = shared.readers_inside.fetch_add(1, Ordering::SeqCst) + 1;
        shared.most_readers.fetch_max(now, Ordering::SeqCst);
        assert_eq!(
            shared.writers_inside.load(Ordering::SeqCst),
            0,
            "a reader with a writer"
        );
        let first: Option<u64> = redis.get(&shared.first).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let second: Option<u64> = redis.get(&shared.second).await.unwrap();
        assert_eq!(first, second, "a reader saw a torn write");
        shared.readers_inside.fetch_sub(1, Ordering::SeqCst);
        read.unlock().await.unwrap();
        let pause = rand::thread_rng().gen_range(0..5);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_and_readers_exclude_each_other_under_contention() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let name = key("rw-exclusion-load");
    let shared = Arc::new(Shared {
        counter: key("rw-counter"),
        first: key("rw-first"),
        second: key("rw-second"),
        readers_inside: AtomicUsize::new(0),
        writers_inside: AtomicUsize::new(0),
        most_readers: AtomicUsize::new(0),
    });
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    let started = Instant::now();
    for _ in 0..EXCLUSION_CLIENTS {
        let client = server.client().await;
        for t in 0..EXCLUSION_TASKS {
            let rw = client.get_read_write_lock(&name);
            let redis = client.redis().clone();
            let shared = shared.clone();
            tasks.push(if t % 2 == 0 {
                tokio::spawn(exclusion_writer(rw.write_lock(), redis, shared))
            } else {
                tokio::spawn(exclusion_reader(rw.read_lock(), redis, shared))
            });
        }
        clients.push(client);
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("the workload finishes")
            .unwrap();
    }
    let half = (EXCLUSION_CLIENTS * EXCLUSION_TASKS / 2) as u64;
    let writes = half * WRITER_ROUNDS;
    let counter: u64 = raw.get(&shared.counter).await.unwrap();
    let most = shared.most_readers.load(Ordering::SeqCst);
    println!(
        "{writes} writes and {} reads in {:?}; at most {most} readers inside at once",
        half * READER_ROUNDS,
        started.elapsed(),
    );
    assert_eq!(counter, writes, "every increment survived");
    assert!(most >= 2, "readers shared the lock at least once");
    let refs: Vec<&LockClient> = clients.iter().collect();
    assert_clean(&raw, &refs, &name, Duration::from_secs(3)).await;
}

// ---- 5. watchdog --------------------------------------------------------------------------

/// The watchdog timeout of these tests; renewal runs every third of it.
const WATCHDOG: Duration = Duration::from_millis(900);
const PERIOD: Duration = Duration::from_millis(300);
/// The lowest PTTL a renewed key may show on a loaded machine.
const MIN_HEALTHY_PTTL: i64 = 200;

/// This section's set-up: a client whose watchdog renews every `WATCHDOG / 3`.
async fn watchdog_bed(what: &str) -> Bed {
    Bed::with_config(what, |c| c.watchdog_timeout(WATCHDOG)).await
}

/// Samples every key in `keys` for `span`; each must keep a healthy PTTL throughout.
async fn assert_kept_alive(raw: &Client, keys: &[String], span: Duration) {
    let start = Instant::now();
    let mut lowest = i64::MAX;
    while start.elapsed() < span {
        for key in keys {
            let ttl = pttl(raw, key).await;
            assert!(
                ttl >= MIN_HEALTHY_PTTL,
                "PTTL of {key} fell to {ttl} ms after {:?}",
                start.elapsed()
            );
            lowest = lowest.min(ttl);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("lowest PTTL over {span:?}: {lowest} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_holds_stay_alive_through_renewal() {
    let Bed(_server, client, raw, read_name) = watchdog_bed("rw-watchdog-read").await;
    let write_name = key("rw-watchdog-write");
    let (read, _) = halves(&client, &read_name, 1);
    let (own_read, write) = halves(&client, &write_name, 2);

    for _ in 0..3 {
        read.lock().await.unwrap();
    }
    write.lock().await.unwrap();
    write.lock().await.unwrap();
    own_read.lock().await.unwrap(); // the writer's own read hold
    assert_eq!(client.renewed_locks(), 3, "(lock, owner field) entries");

    let fr = reader(&client, &read);
    let mut keys = vec![read_name.clone(), write_name.clone()];
    keys.extend((1..=3).map(|k| hold_key(&read_name, &fr, k)));
    keys.push(hold_key(&write_name, &reader(&client, &own_read), 1));
    assert_kept_alive(&raw, &keys, WATCHDOG * 5).await;
    for key in &keys {
        assert!(pttl(&raw, key).await <= WATCHDOG.as_millis() as i64);
    }

    // Unlocking holds one by one: the rest stay renewed.
    read.unlock().await.unwrap();
    read.unlock().await.unwrap();
    write.unlock().await.unwrap();
    assert_kept_alive(
        &raw,
        &[
            read_name.clone(),
            hold_key(&read_name, &fr, 1),
            write_name.clone(),
        ],
        WATCHDOG * 2,
    )
    .await;
    read.unlock().await.unwrap();
    write.unlock().await.unwrap();
    own_read.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    assert_clean(&raw, &[&client], &read_name, Duration::from_secs(2)).await;
    assert_clean(&raw, &[&client], &write_name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

/// Redisson #4217: after a downgrade (write unlock with read holds left) the read holds
/// are still renewed, in mode=read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgraded_hold_stays_renewed() {
    let Bed(_server, client, raw, name) = watchdog_bed("rw-watchdog-downgrade").await;
    let (read, write) = halves(&client, &name, 1);
    write.lock().await.unwrap();
    read.lock().await.unwrap();
    reset_stats(&raw).await;
    assert!(scripts_ran(&raw, 1).await, "no renewal round");
    write.unlock().await.unwrap();
    let hold = hold_key(&name, &reader(&client, &read), 1);
    assert_kept_alive(&raw, &[name.clone(), hold], WATCHDOG * 3).await;
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&reader(&client, &read), "1")])
    );
    read.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_touches_only_this_clients_read_holds() {
    let Bed(server, client, raw, name) = watchdog_bed("rw-watchdog-own").await;
    let other = server.client().await;
    let (mine, _) = halves(&client, &name, 1);
    let (foreign, _) = halves(&other, &name, 1);
    mine.lock().await.unwrap();
    foreign
        .lock_with_lease(Duration::from_millis(1_200))
        .await
        .unwrap();

    // The other client's hold key expires on its own, while ours lives.
    let theirs = [hold_key(&name, &reader(&other, &foreign), 1)];
    for key in &theirs {
        let gone = gone_within(&raw, key, Duration::from_secs(4)).await;
        assert!(gone.is_some(), "{key} was kept alive by our renewal");
    }
    let ours = hold_key(&name, &reader(&client, &mine), 1);
    assert_kept_alive(&raw, &[name.clone(), ours], WATCHDOG * 2).await;

    // Their fields stay (nobody removes them), but with no live hold keys they do not
    // keep the lock (no "zombie readers", Redisson #1458): our unlock deletes the hash
    // and wakes a waiting writer.
    let channel = rw_channel(&name);
    let (sub, mut rx) = listen(&server, &channel).await;
    let (_, write) = halves(&other, &name, 9);
    let writer = {
        let write = write.clone();
        tokio::spawn(async move { write.try_lock_for(Duration::from_secs(10)).await })
    };
    // The writer subscribed (after its first try) beside our listener: waiting.
    assert!(
        eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel).await >= 2
        })
        .await,
        "the writer never subscribed"
    );
    assert!(!writer.is_finished());
    mine.unlock().await.unwrap();
    assert_eq!(payloads(&mut rx, &channel).await, vec!["0"]);
    let taken = tokio::time::timeout(Duration::from_secs(2), writer)
        .await
        .expect("the writer is woken by our unlock")
        .unwrap()
        .unwrap();
    assert!(taken);
    write.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    stop_listening(sub).await;
    assert_clean(&raw, &[&client, &other], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

/// Renewal re-arms a read holder's hash to the watchdog timeout, but never below what
/// other holds gave it: a longer lease of another reader (here another client's) or of
/// the same owner's write hold. Redisson 4.4+ sets the hash to the watchdog timeout
/// outright, so the other holds end early if this client stops (crash) or, for the
/// write hold, as soon as its read holds are gone (a deviation, see docs/protocol.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_renewal_never_shortens_the_hash() {
    let Bed(server, client, raw, name) = watchdog_bed("rw-renew-read-mode").await;
    let other = server.client().await;

    // Read mode: another client's reader with a 5 s lease.
    let (mine, _) = halves(&client, &name, 1);
    let (theirs, _) = halves(&other, &name, 1);
    theirs
        .lock_with_lease(Duration::from_secs(5))
        .await
        .unwrap();
    mine.lock().await.unwrap();
    reset_stats(&raw).await;
    assert!(scripts_ran(&raw, 2).await, "no renewal rounds");
    let ttl = pttl(&raw, &name).await;
    assert!(
        ttl > 2_500,
        "the hash TTL fell to {ttl} ms under a 5 s lease"
    );
    mine.unlock().await.unwrap();
    theirs.unlock().await.unwrap();

    // Write mode: the same owner's write hold with a 5 s lease, and a watchdog read hold.
    let name = key("rw-renew-write-mode");
    let (read, write) = halves(&client, &name, 1);
    write.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    read.lock().await.unwrap();
    reset_stats(&raw).await;
    assert!(scripts_ran(&raw, 2).await, "no renewal rounds");
    read.unlock().await.unwrap();
    let ttl = pttl(&raw, &name).await;
    assert!(ttl > 2_500, "the write lease fell to {ttl} ms");
    write.unlock().await.unwrap();
    assert_clean(&raw, &[&client, &other], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

/// A renewal round in flight never lands after an unlock called once it started: the
/// holds left keep their lease. Found by the read-write model after a connection kill:
/// the sentry's check round after the reconnect was the first renewal on that server,
/// its `EVALSHA` answered `NOSCRIPT`, and its `EVAL` came after the model's partial
/// unlock, so the watchdog's lease was written on the 10 s lease hold that was left.
/// Here the write half holds a watchdog hold, then a 10 s lease hold (the re-entry adds
/// its lease), and the watchdog hold is given back while the first renewal round waits
/// in the socket of a stalled Redis. The renewal script is the only one not cached.
/// With a 900 ms watchdog, a renewal after the unlock cuts the lease hold to 900 ms.
/// The unlock now waits for the round (`hold::rounds`), so its own re-arm to the 10 s
/// lease comes last. (The read half cannot show this: a read renewal re-arms every read
/// hold key of the owner, lease holds included, as Redisson 4.4+ does, whether it lands
/// before or after the unlock.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_round_in_flight_never_lands_after_a_partial_unlock() {
    const LEASE: Duration = Duration::from_secs(10);
    let server = RedisServer::start_pausable();
    let client = server
        .client_with(server.config().watchdog_timeout(WATCHDOG))
        .await;
    let raw = server.raw().await;
    let name = key("rw-round-across-unlock");
    let (_, write) = halves(&client, &name, 1);
    raw.script_flush(false).await.unwrap();
    // Caches the acquire and release scripts, not the renewal's.
    assert!(
        write
            .try_lock_with_lease(Duration::ZERO, LEASE)
            .await
            .unwrap()
    );
    write.unlock().await.unwrap();

    write.lock().await.unwrap();
    assert!(
        write
            .try_lock_with_lease(Duration::ZERO, LEASE)
            .await
            .unwrap()
    );
    // The first round goes out one period after the watchdog hold, into the stall. No
    // event says it did while Redis sleeps, so the unlock waits a period and a half.
    let stalled = server.stall(1.5).await;
    tokio::time::sleep(PERIOD + PERIOD / 2).await;
    write.unlock().await.unwrap();
    stalled.await.unwrap();
    assert_eq!(
        write.hold_count().await.unwrap(),
        1,
        "the lease hold is left"
    );
    let mut lowest = i64::MAX;
    let start = Instant::now();
    while start.elapsed() < PERIOD * 2 {
        lowest = lowest.min(pttl(&raw, &name).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        lowest > 5_000,
        "the lease hold left fell to {lowest} ms: a renewal landed after the unlock"
    );
    write.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

/// Takes a guard of `lock` in watchdog mode, deletes the hash behind its back, and
/// checks that `lost()` fires within a couple of renewal periods.
async fn assert_loss_detected<K: redisson_lock::LockKind>(
    client: &LockClient,
    raw: &Client,
    lock: &redisson_lock::Lock<K>,
) {
    let guard = lock.acquire().await.unwrap();
    // Right after a renewal, so the loss is seen at the next one.
    reset_stats(raw).await;
    assert!(scripts_ran(raw, 1).await, "no renewal round");
    assert!(!guard.is_lost(), "renewed, not lost");
    let _: i64 = raw.del(lock.name()).await.unwrap();
    let started = Instant::now();
    tokio::time::timeout(PERIOD * 2 + Duration::from_secs(2), guard.lost())
        .await
        .expect("lost() fires after the hash is deleted");
    println!("loss of a {lock:?} detected after {:?}", started.elapsed());
    assert!(guard.is_lost());
    assert_eq!(client.renewed_locks(), 0);
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_read_hold_fires_the_guard() {
    let Bed(_server, client, raw, name) = watchdog_bed("rw-lost-read").await;
    let (read, _) = halves(&client, &name, 1);
    assert_loss_detected(&client, &raw, &read).await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_write_hold_fires_the_guard() {
    let Bed(_server, client, raw, name) = watchdog_bed("rw-lost-write").await;
    let (_, write) = halves(&client, &name, 1);
    assert_loss_detected(&client, &raw, &write).await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_force_unlock_of_one_half_keeps_the_other_renewed() {
    let Bed(_server, client, raw, name) = watchdog_bed("rw-force-keeps-renewal").await;
    let (read, write) = halves(&client, &name, 1);

    // Read held: the write half's force unlock finds nothing to delete, and must not
    // stop the read hold's renewal.
    read.lock().await.unwrap();
    assert!(!write.force_unlock().await.unwrap());
    assert_eq!(client.renewed_locks(), 1);
    let hold = hold_key(&name, &reader(&client, &read), 1);
    assert_kept_alive(&raw, &[name.clone(), hold], WATCHDOG * 3).await;
    read.unlock().await.unwrap();

    // Write held: likewise for the read half's force unlock.
    write.lock().await.unwrap();
    assert!(!read.force_unlock().await.unwrap());
    assert_eq!(client.renewed_locks(), 1);
    assert_kept_alive(&raw, std::slice::from_ref(&name), WATCHDOG * 3).await;
    write.unlock().await.unwrap();
    assert_clean(&raw, &[&client], &name, Duration::from_secs(2)).await;
    client.shutdown().await.unwrap();
}

// ---- 6. cancel safety ---------------------------------------------------------------------

const CANCEL_TASKS: usize = 4;
const CANCEL_ROUNDS_PER_TASK: usize = 50; // 200 rounds in all

#[derive(Clone, Copy, Debug)]
enum Half {
    Read,
    Write,
}

/// One round: `lock()` on `half` under a random 0–20 ms timeout; unlock when it got in.
async fn cancel_round(rw: &ReadWriteLock, half: Half) -> bool {
    let limit = Duration::from_millis(rand::thread_rng().gen_range(0..=20));
    match half {
        Half::Read => {
            let read = rw.read_lock();
            match tokio::time::timeout(limit, read.lock()).await {
                Ok(taken) => {
                    taken.unwrap();
                    read.unlock().await.unwrap();
                    true
                }
                Err(_) => false,
            }
        }
        Half::Write => {
            let write = rw.write_lock();
            match tokio::time::timeout(limit, write.lock()).await {
                Ok(taken) => {
                    taken.unwrap();
                    write.unlock().await.unwrap();
                    true
                }
                Err(_) => false,
            }
        }
    }
}

/// 200 cancellable acquisitions of `half` while another client holds the other half part
/// of the time (watchdog mode, so a leaked hold key would live 30 s and be seen).
async fn cancelled_acquisitions_leave_nothing(half: Half) {
    let Bed(server, client, raw, name) = Bed::new("rw-cancel").await;
    let other = server.client().await;

    let stop = Arc::new(AtomicBool::new(false));
    let contender = {
        let rw = other.get_read_write_lock(&name);
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                // Bounded waits, so that a hold leaked by a cancelled acquisition (it
                // would live 30 s) cannot stall the contender past `stop`.
                let wait = Duration::from_millis(50);
                match half {
                    Half::Read => {
                        let write = rw.write_lock();
                        if write.try_lock_for(wait).await.unwrap() {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            write.unlock().await.unwrap();
                        }
                    }
                    Half::Write => {
                        let read = rw.read_lock();
                        if read.try_lock_for(wait).await.unwrap() {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            read.unlock().await.unwrap();
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };

    let acquired = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..CANCEL_TASKS)
        .map(|_| {
            let rw = client.get_read_write_lock(&name);
            let acquired = acquired.clone();
            tokio::spawn(async move {
                for _ in 0..CANCEL_ROUNDS_PER_TASK {
                    if cancel_round(&rw, half).await {
                        acquired.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    contender.await.unwrap();
    let acquired = acquired.load(Ordering::Relaxed);
    let total = (CANCEL_TASKS * CANCEL_ROUNDS_PER_TASK) as u64;
    println!(
        "{half:?}: {total} rounds, {acquired} acquired, {} cancelled",
        total - acquired
    );
    assert!(acquired < total, "no round was cancelled: proves nothing");
    assert_clean(&raw, &[&client, &other], &name, Duration::from_secs(5)).await;
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_read_acquisitions_leave_nothing_behind() {
    cancelled_acquisitions_leave_nothing(Half::Read).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_write_acquisitions_leave_nothing_behind() {
    cancelled_acquisitions_leave_nothing(Half::Write).await;
}

// ---- 7. mixing and bad input --------------------------------------------------------------

#[tokio::test]
async fn a_string_key_is_wrong_type_and_nothing_is_written() {
    let Bed(_server, client, raw, name) = Bed::new("rw-string").await;
    let _: () = raw.set(&name, "payload", None, None, false).await.unwrap();
    let (read, write) = halves(&client, &name, 1);
    let wrong =
        |r: Result<bool, Error>| assert!(matches!(r, Err(Error::WrongType { .. })), "{r:?}");

    wrong(read.try_lock().await);
    wrong(read.lock().await.map(|_| true));
    wrong(read.try_lock_for(Duration::from_millis(100)).await);
    wrong(write.try_lock().await);
    wrong(write.lock().await.map(|_| true));
    wrong(read.unlock().await.map(|_| true));
    wrong(write.unlock().await.map(|_| true));

    let value: String = raw.get(&name).await.unwrap();
    assert_eq!(value, "payload");
    assert!(timeout_keys(&raw).await.is_empty());
    assert_eq!(client.subscribed_channels(), 0);
    assert_eq!(client.renewed_locks(), 0);
    let dbsize: i64 = raw
        .custom(fred::cmd!("DBSIZE"), Vec::<Value>::new())
        .await
        .unwrap();
    assert_eq!(dbsize, 1, "only the string itself");
    client.shutdown().await.unwrap();
}

/// An RLock's hash has no `mode` field. Redisson's read and write acquire scripts only
/// look at `mode`, see nil, and take the lock, adding their fields next to the RLock
/// holder's; Redisson behaves exactly the same, so this crate does too. What follows is
/// what actually happens.
#[tokio::test]
async fn a_read_or_write_lock_on_an_rlock_hash_mixes_fields_as_redisson_does() {
    let Bed(_server, client, raw, name) = Bed::new("rw-on-rlock-read").await;

    // Read on an RLock-held key: taken; mode=read next to the RLock field.
    let rlock = client.get_lock(&name).with_owner(LockOwner::from_raw(1));
    let (read, write) = halves(&client, &name, 2);
    rlock.lock().await.unwrap();
    let rf = format!("{}:1", client.id());
    assert!(read.try_lock().await.unwrap());
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&rf, "1"), (&reader(&client, &read), "1")])
    );
    // A writer sees mode=read and waits; the RLock still counts as held by its owner.
    assert!(!write.try_lock().await.unwrap());
    assert!(rlock.is_held_by_current_task().await.unwrap());
    // The RLock's full unlock deletes the whole hash, taking the read hold with it.
    rlock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert!(matches!(read.unlock().await, Err(Error::NotOwner { .. })));

    // Write on an RLock-held key: taken likewise; the RLock owner can still re-enter
    // (its script checks only its own field).
    let name = key("rw-on-rlock-write");
    let rlock = client.get_lock(&name).with_owner(LockOwner::from_raw(1));
    let (_, write) = halves(&client, &name, 2);
    rlock.lock().await.unwrap();
    assert!(write.try_lock().await.unwrap());
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[
            ("mode", "write"),
            (&rf, "1"),
            (&writer(&client, &write), "1")
        ])
    );
    assert!(rlock.try_lock().await.unwrap());
    assert_eq!(rlock.hold_count().await.unwrap(), 2);
    // The write unlock sees other fields than `mode` left and downgrades to mode=read
    // (it cannot tell an RLock field from a read hold).
    write.unlock().await.unwrap();
    assert_eq!(
        hgetall(&raw, &name).await,
        fields(&[("mode", "read"), (&rf, "2")])
    );
    rlock.unlock().await.unwrap();
    rlock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_empty_name_and_a_zero_lease_are_invalid() {
    let Bed(_server, client, raw, name) = Bed::new("rw-zero-lease").await;
    let invalid =
        |r: Result<bool, Error>| assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");

    let (read, write) = halves(&client, "", 1);
    invalid(read.lock().await.map(|_| true));
    invalid(read.try_lock().await);
    invalid(write.lock().await.map(|_| true));
    invalid(write.try_lock_for(Duration::from_millis(10)).await);
    invalid(read.unlock().await.map(|_| true));
    invalid(write.force_unlock().await);
    invalid(read.is_locked().await);

    let (read, write) = halves(&client, &name, 1);
    invalid(read.lock_with_lease(Duration::ZERO).await.map(|_| true));
    invalid(
        read.try_lock_with_lease(Duration::from_millis(10), Duration::ZERO)
            .await,
    );
    invalid(write.lock_with_lease(Duration::ZERO).await.map(|_| true));
    invalid(
        write
            .try_lock_with_lease(Duration::ZERO, Duration::from_micros(500))
            .await,
    );
    let dbsize: i64 = raw
        .custom(fred::cmd!("DBSIZE"), Vec::<Value>::new())
        .await
        .unwrap();
    assert_eq!(dbsize, 0, "nothing written");
    client.shutdown().await.unwrap();
}

// ---- writer preference within one client ---------------------------------------------

/// Redisson lets a reader in whenever the lock is in read mode, so readers that keep
/// coming starve a writer. Within one client the engine knows a writer waits, and its
/// readers that hold nothing let the writer go first: with 8 readers looping without
/// pause, each of the writer's 10 acquisitions still comes within a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_of_the_same_client_let_a_waiting_writer_go_first() {
    let server = RedisServer::start();
    let client = server.client().await;
    let name = key("rw-writer-first");
    let rw = client.get_read_write_lock(&name);
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    // Staggered 20 ms read holds taken back at once: the lock is never out of read mode
    // unless the readers let a writer in.
    for i in 0..8u64 {
        let read = rw.read_lock();
        let (stop, reads) = (stop.clone(), reads.clone());
        readers.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(3 * i)).await;
            while !stop.load(Ordering::Relaxed) {
                if read.try_lock_for(Duration::from_secs(5)).await.unwrap() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    read.unlock().await.unwrap();
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let write = rw.write_lock();
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let started = Instant::now();
        assert!(
            write.try_lock_for(Duration::from_secs(3)).await.unwrap(),
            "the writer starved behind its own client's readers"
        );
        slowest = slowest.max(started.elapsed());
        write.unlock().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.await.unwrap();
    }
    assert!(
        slowest < Duration::from_secs(1),
        "slowest write acquisition {slowest:?}"
    );
    assert!(
        reads.load(Ordering::Relaxed) > 50,
        "the readers made no progress"
    );
    // Channels linger half a second after their last waiter.
    assert!(
        eventually(Duration::from_secs(2), || async {
            client.subscribed_channels() == 0
        })
        .await,
        "still subscribed: {}",
        client.subscribed_channels()
    );
    client.shutdown().await.unwrap();
}
