//! The scripts and how they are sent: the unlock latch makes a repeated release return
//! the first answer; a flushed script cache is refilled without the caller noticing;
//! `WRONGTYPE` names the key; bad arguments never reach Redis; a lost connection never
//! applies a hold twice.

use crate::support;
use support::*;

use std::time::{Duration, Instant};

use redisson_lock::config::MAX_LEASE;
use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, LockOwner};

fn latch_key(name: &str) -> String {
    format!(
        "redisson_unlock_latch:{{{name}}}:{}",
        uuid::Uuid::new_v4().simple()
    )
}

/// Runs the crate's release script with raw `EVAL`, as a retrying client would.
async fn release(raw: &Client, name: &str, latch: &str, field: &str) -> Value {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    raw.eval(
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lock_release.lua")),
        vec![name, channel.as_str(), latch],
        vec![
            Value::from("0"),
            Value::from(30_000),
            Value::from(field),
            Value::from("PUBLISH"),
            Value::from(13_500),
        ],
    )
    .await
    .unwrap()
}

async fn hget(raw: &Client, name: &str, field: &str) -> Option<String> {
    raw.hget(name, field).await.unwrap()
}

async fn keys(raw: &Client, pattern: &str) -> Vec<String> {
    raw.custom(fred::cmd!("KEYS"), vec![pattern]).await.unwrap()
}

/// All command calls since the last `CONFIG RESETSTAT`, except `INFO` and `CONFIG`
/// (the test's own).
async fn other_commands(raw: &Client) -> Vec<String> {
    let info: String = raw
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_"))
        .filter(|line| !line.starts_with("info:") && !line.starts_with("config"))
        .map(str::to_string)
        .collect()
}

/// Waits until `CLIENT LIST TYPE normal` shows at least `n` connections.
async fn wait_for_connections(raw: &Client, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list: String = raw
            .custom(fred::cmd!("CLIENT"), vec!["LIST", "TYPE", "normal"])
            .await
            .unwrap();
        if list.lines().count() >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the client did not reconnect:\n{list}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_release_repeated_with_the_same_latch_returns_the_first_answer() {
    let Bed(server, client, raw, name) = Bed::new("latch").await;
    let lock = client.get_lock(&name);
    let field = format!("{}:{}", client.id(), lock.owner());
    let (_subscriber, mut rx) = listen(&server, "redisson_lock__channel:*").await;

    // Held twice: two calls with one latch give back one hold, both answer 0.
    lock.lock_with_lease(Duration::from_secs(60)).await.unwrap();
    lock.lock_with_lease(Duration::from_secs(60)).await.unwrap();
    assert_eq!(hget(&raw, &name, &field).await.as_deref(), Some("2"));
    let first = latch_key(&name);
    assert_eq!(
        first.len(),
        format!("redisson_unlock_latch:{{{name}}}:").len() + 32
    );
    assert_eq!(
        release(&raw, &name, &first, &field).await,
        Value::Integer(0)
    );
    assert_eq!(hget(&raw, &name, &field).await.as_deref(), Some("1"));
    assert_eq!(
        release(&raw, &name, &first, &field).await,
        Value::Integer(0)
    );
    assert_eq!(
        hget(&raw, &name, &field).await.as_deref(),
        Some("1"),
        "the repeat changed nothing"
    );
    let remembered: Option<String> = raw.get(&first).await.unwrap();
    assert_eq!(remembered.as_deref(), Some("0"));
    let latch_ttl = pttl(&raw, &first).await;
    assert!((1..=13_500).contains(&latch_ttl), "latch PTTL {latch_ttl}");
    assert!(drain(&mut rx, Duration::from_millis(300)).await.is_empty());

    // Held once: both calls answer 1, one release, one `0` message.
    let second = latch_key(&name);
    assert_eq!(
        release(&raw, &name, &second, &field).await,
        Value::Integer(1)
    );
    assert_eq!(
        release(&raw, &name, &second, &field).await,
        Value::Integer(1)
    );
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    let remembered: Option<String> = raw.get(&second).await.unwrap();
    assert_eq!(remembered.as_deref(), Some("1"));
    let seen = messages(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(
        seen,
        vec![(format!("redisson_lock__channel:{{{name}}}"), b"0".to_vec())],
        "exactly one unlock message"
    );

    // A fresh latch on a lock that is gone: not the owner (nil).
    assert_eq!(
        release(&raw, &name, &latch_key(&name), &field).await,
        Value::Null
    );
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn our_unlocks_write_latches_and_delete_them_after_the_reply() {
    let Bed(server, client, raw, _) = Bed::new("bed").await;
    let _: () = raw
        .custom(
            fred::cmd!("CONFIG"),
            vec!["SET", "notify-keyspace-events", "KA"],
        )
        .await
        .unwrap();
    // fred hands keyspace notifications to their own stream, not to `message_rx`.
    let watcher = server.raw().await;
    let mut rx = watcher.keyspace_event_rx();
    watcher
        .psubscribe("__keyspace@0__:redisson_unlock_latch:*")
        .await
        .unwrap();
    let _: Value = watcher.ping(None).await.unwrap();
    let name = key("latch-cleanup");
    let lock = client.get_lock(&name);
    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();

    // Deleted off the caller's path: wait for it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !keys(&raw, "redisson_unlock_latch:*").await.is_empty() {
        assert!(Instant::now() < deadline, "latches were not deleted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        command_calls(&raw, "unlink").await >= 1,
        "latches go with UNLINK"
    );

    // (latch key, event) as Redis announced them.
    let mut events: Vec<(String, String)> = Vec::new();
    while let Ok(event) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
        let event = event.expect("keyspace stream");
        let key = event.key.as_str().expect("utf-8 key").to_string();
        events.push((key, event.operation));
    }
    let prefix = format!("redisson_unlock_latch:{{{name}}}:");
    let mut latches: Vec<&str> = events
        .iter()
        .map(|(key, _)| key.strip_prefix(&prefix).expect("a latch of this lock"))
        .collect();
    latches.sort();
    latches.dedup();
    assert_eq!(latches.len(), 2, "one latch per unlock: {events:?}");
    for id in &latches {
        assert_eq!(id.len(), 32, "{id}");
        assert!(
            id.chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
            "{id}"
        );
        let of_this: Vec<&str> = events
            .iter()
            .filter(|(key, _)| key.ends_with(id))
            .map(|(_, event)| event.as_str())
            .collect();
        assert_eq!(
            of_this,
            ["set", "expire", "del"],
            "written with a TTL, then deleted"
        );
    }
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn script_flush_mid_run_is_refilled_with_one_eval_per_script() {
    let Bed(_server, client, raw, name) = Bed::new("flush").await;
    let lock = client.get_lock(&name);
    let lease = Duration::from_secs(60); // lease mode: no renewal script in the way
    let shas: Vec<String> = [
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lock_acquire.lua")),
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lock_release.lua")),
    ]
    .iter()
    .map(|s| fred::util::sha1_hash(s))
    .collect();

    // Warm: one hold taken and given, one hold kept across the flush.
    lock.lock_with_lease(lease).await.unwrap();
    lock.lock_with_lease(lease).await.unwrap();
    lock.unlock().await.unwrap();
    let cached: Vec<bool> = raw.script_exists(shas.clone()).await.unwrap();
    assert_eq!(cached, vec![true, true]);

    raw.script_flush(false).await.unwrap();
    reset_stats(&raw).await;
    let cached: Vec<bool> = raw.script_exists(shas.clone()).await.unwrap();
    assert_eq!(cached, vec![false, false]);

    // Acquire: NOSCRIPT, then EVAL once; later calls go back to EVALSHA.
    lock.lock_with_lease(lease).await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    assert_eq!(command_calls(&raw, "eval").await, 1);
    let evalsha_before = command_calls(&raw, "evalsha").await;
    lock.lock_with_lease(lease).await.unwrap();
    assert!(
        lock.try_lock_with_lease(Duration::ZERO, lease)
            .await
            .unwrap()
    );
    assert_eq!(lock.hold_count().await.unwrap(), 4);
    assert_eq!(command_calls(&raw, "eval").await, 1);
    assert_eq!(command_calls(&raw, "evalsha").await, evalsha_before + 2);

    // Release: the same, once for its own script.
    lock.unlock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 3);
    assert_eq!(command_calls(&raw, "eval").await, 2);
    let evalsha_before = command_calls(&raw, "evalsha").await;
    for left in (0..3).rev() {
        lock.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), left);
    }
    assert_eq!(command_calls(&raw, "eval").await, 2);
    assert_eq!(command_calls(&raw, "evalsha").await, evalsha_before + 3);
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    let cached: Vec<bool> = raw.script_exists(shas).await.unwrap();
    assert_eq!(cached, vec![true, true], "EVAL put both scripts back");
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_key_that_is_not_a_lock_is_wrong_type_naming_the_key() {
    let Bed(_server, client, raw, name) = Bed::new("wrongtype").await;
    let _: () = raw
        .set(&name, "somestring", None, None, false)
        .await
        .unwrap();
    let lock = client.get_lock(&name);

    let expect_wrong_type = |what: &str, result: Result<(), Error>| match result {
        Err(Error::WrongType { key }) => assert_eq!(key, name, "{what}"),
        other => panic!("{what}: expected WrongType, got {other:?}"),
    };
    expect_wrong_type("try_lock", lock.try_lock().await.map(drop));
    expect_wrong_type("lock", lock.lock().await);
    expect_wrong_type(
        "lock_with_lease",
        lock.lock_with_lease(Duration::from_secs(5)).await,
    );
    expect_wrong_type(
        "try_lock_for",
        lock.try_lock_for(Duration::from_millis(200))
            .await
            .map(drop),
    );
    expect_wrong_type("acquire", lock.acquire().await.map(drop));
    expect_wrong_type("unlock", lock.unlock().await);
    expect_wrong_type("hold_count", lock.hold_count().await.map(drop));
    expect_wrong_type(
        "is_held_by_current_task",
        lock.is_held_by_current_task().await.map(drop),
    );
    expect_wrong_type(
        "is_held_by",
        lock.is_held_by(LockOwner::from_raw(1)).await.map(drop),
    );

    let text = lock.try_lock().await.unwrap_err().to_string();
    assert!(text.contains(&name), "{text}");
    assert!(text.contains("WRONGTYPE"), "{text}");

    // The foreign value is untouched, and nothing was registered for renewal.
    let value: Option<String> = raw.get(&name).await.unwrap();
    assert_eq!(value.as_deref(), Some("somestring"));
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn invalid_arguments_are_rejected_before_any_io() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;
    wait_key_tracking(&raw).await;
    reset_stats(&raw).await;

    fn invalid<T: std::fmt::Debug>(what: &str, result: Result<T, Error>) {
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "{what}: expected InvalidArgument, got {result:?}"
        );
    }

    // An empty name, whatever the operation.
    let empty = client.get_lock("");
    let second = Duration::from_secs(1);
    invalid("lock", empty.lock().await);
    invalid("lock_with_lease", empty.lock_with_lease(second).await);
    invalid("try_lock", empty.try_lock().await);
    invalid("try_lock_for", empty.try_lock_for(second).await);
    invalid(
        "try_lock_with_lease",
        empty.try_lock_with_lease(second, second).await,
    );
    invalid("acquire", empty.acquire().await);
    invalid("try_acquire_for", empty.try_acquire_for(second).await);
    invalid("unlock", empty.unlock().await);
    invalid("force_unlock", empty.force_unlock().await);
    invalid("is_locked", empty.is_locked().await);
    invalid("is_held_by", empty.is_held_by(LockOwner::from_raw(1)).await);
    invalid(
        "is_held_by_current_task",
        empty.is_held_by_current_task().await,
    );
    invalid("hold_count", empty.hold_count().await);
    invalid("remain_time_to_live", empty.remain_time_to_live().await);

    // Leases Redis cannot express: zero, under a millisecond, absurdly large.
    let name = key("invalid-lease");
    let lock = client.get_lock(&name);
    let bad_leases = [
        Duration::ZERO,
        Duration::from_micros(999),
        Duration::from_nanos(1),
        MAX_LEASE + Duration::from_millis(1),
        Duration::MAX,
    ];
    for lease in bad_leases {
        let what = format!("lease {lease:?}");
        invalid(&what, lock.lock_with_lease(lease).await);
        invalid(&what, lock.try_lock_with_lease(Duration::ZERO, lease).await);
        invalid(&what, lock.try_lock_with_lease(second, lease).await);
        invalid(&what, lock.acquire_with_lease(lease).await);
        invalid(&what, lock.try_acquire_with_lease(second, lease).await);
    }

    // Nothing reached Redis: no script, no command at all.
    assert_eq!(script_calls(&raw).await, 0);
    assert_eq!(other_commands(&raw).await, Vec::<String>::new());
    assert_eq!(client.renewed_locks(), 0);
    assert_eq!(client.subscribed_channels(), 0);

    // The boundaries themselves are fine: 1 ms and MAX_LEASE.
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    lock.lock_with_lease(MAX_LEASE).await.unwrap();
    let ttl = pttl(&raw, &name).await;
    assert!(ttl > (MAX_LEASE.as_millis() as i64) - 60_000, "PTTL {ttl}");
    lock.unlock().await.unwrap();
    let short = client.get_lock(key("one-ms"));
    assert!(
        short
            .try_lock_with_lease(Duration::ZERO, Duration::from_millis(1))
            .await
            .unwrap()
    );
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn after_client_kill_locks_work_and_counts_are_exact() {
    let Bed(_server, client, raw, name) = Bed::new("kill").await;
    let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(7));
    let field = format!("{}:7", client.id());
    let lease = Duration::from_secs(60);

    lock.lock_with_lease(lease).await.unwrap();
    lock.lock_with_lease(lease).await.unwrap();
    let killed: i64 = raw
        .custom(
            fred::cmd!("CLIENT"),
            vec!["KILL", "TYPE", "normal", "SKIPME", "yes"],
        )
        .await
        .unwrap();
    assert!(killed >= 1, "the crate's connections were killed");
    // raw + the crate's command and subscriber connections.
    wait_for_connections(&raw, 3).await;

    assert_eq!(lock.hold_count().await.unwrap(), 2);
    lock.lock_with_lease(lease).await.unwrap();
    assert_eq!(hget(&raw, &name, &field).await.as_deref(), Some("3"));
    lock.unlock().await.unwrap();
    assert_eq!(hget(&raw, &name, &field).await.as_deref(), Some("2"));
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));

    // Watchdog mode too, through the reconnected client.
    let plain = client.get_lock(&name);
    plain.lock().await.unwrap();
    assert_eq!(plain.hold_count().await.unwrap(), 1);
    plain.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_cut_off_in_flight_is_sent_again_only_once_known_not_run() {
    let Bed(_server, client, raw, name) = Bed::new("kill-in-flight").await;
    let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(7));
    let field = format!("{}:7", client.id());
    let lease = Duration::from_secs(60);
    lock.lock_with_lease(lease).await.unwrap();

    // Hold every write (scripts included) at the server, so the acquire is in flight.
    let _: () = raw
        .custom(fred::cmd!("CLIENT"), vec!["PAUSE", "30000", "WRITE"])
        .await
        .unwrap();
    let in_flight = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock_with_lease(lease).await }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list: String = raw
            .custom(fred::cmd!("CLIENT"), vec!["LIST"])
            .await
            .unwrap();
        if list
            .lines()
            .any(|l| l.contains(" flags=b") && l.contains("cmd=evalsha"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the acquire never reached the server:\n{list}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Cut the connection under it. The script was written once and never ran: the crate
    // must not re-send it blind. It reads the owner's count (still 1: the script did not
    // run) and only then sends it again, which runs once writes are let through.
    let _: i64 = raw
        .custom(
            fred::cmd!("CLIENT"),
            vec!["KILL", "TYPE", "normal", "SKIPME", "yes"],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        hget(&raw, &name, &field).await.as_deref(),
        Some("1"),
        "nothing ran while writes were paused"
    );
    let _: () = raw
        .custom(fred::cmd!("CLIENT"), vec!["UNPAUSE"])
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), in_flight)
        .await
        .expect("the cut-off acquire returns")
        .unwrap();
    assert!(
        outcome.is_ok(),
        "the acquire, settled as not run and sent again, takes the lock: {outcome:?}"
    );
    // Exactly one more hold: the cut-off script never ran, the second one ran once.
    assert_eq!(hget(&raw, &name, &field).await.as_deref(), Some("2"));
    assert_eq!(lock.hold_count().await.unwrap(), 2);

    // And the client works: both holds given back.
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    client.shutdown().await.unwrap();
}
