//! What a lock looks like in Redis after each operation, read with plain commands by a
//! separate fred client: the hash, its field and count, its TTL, the key's removal, and
//! the `0` published on the lock channel.

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, LockOwner};

fn pair(field: &str, count: u32) -> Vec<(String, String)> {
    vec![(field.to_string(), count.to_string())]
}

/// Watchdog leases are 30 000 ms; allow a loaded machine several seconds between the
/// write and the read.
fn assert_watchdog_ttl(ttl: i64) {
    assert!(
        (20_000..=30_000).contains(&ttl),
        "PTTL {ttl} is not the 30 s watchdog lease"
    );
}

#[tokio::test]
async fn client_id_is_a_lowercase_hyphenated_v4_uuid() {
    let server = RedisServer::start();
    let a = server.client().await;
    let b = server.client().await;
    for id in [a.id(), b.id()] {
        assert_eq!(id.len(), 36, "{id}");
        for (i, c) in id.chars().enumerate() {
            if [8, 13, 18, 23].contains(&i) {
                assert_eq!(c, '-', "{id}");
            } else {
                assert!(c.is_ascii_digit() || ('a'..='f').contains(&c), "{id}");
            }
        }
        assert_eq!(&id[14..15], "4", "version nibble of {id}");
        assert!("89ab".contains(&id[19..20]), "variant nibble of {id}");
    }
    assert_ne!(a.id(), b.id(), "two clients are two Redisson nodes");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn watchdog_lock_hash_ttl_and_release_message() {
    let Bed(server, client, raw, name) = Bed::new("raw-watchdog").await;
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let (_subscriber, mut rx) = listen(&server, "redisson_lock__channel:*").await;

    let lock = client.get_lock(&name);
    let field = format!("{}:{}", client.id(), lock.owner());

    // Before: nothing.
    assert_eq!(pttl(&raw, &name).await, -2);
    assert!(hgetall(&raw, &name).await.is_empty());

    lock.lock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    assert_watchdog_ttl(pttl(&raw, &name).await);
    let kind: String = raw.r#type(&name).await.unwrap();
    assert_eq!(kind, "hash");

    // Re-entry through lock() and try_lock(): same field, count up, TTL re-armed.
    lock.lock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));
    assert_watchdog_ttl(pttl(&raw, &name).await);
    assert!(lock.try_lock().await.unwrap());
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 3));
    assert_watchdog_ttl(pttl(&raw, &name).await);

    // Partial unlocks: count down, TTL re-armed to the watchdog lease, nothing published.
    lock.unlock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));
    assert_watchdog_ttl(pttl(&raw, &name).await);
    lock.unlock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    assert!(
        drain(&mut rx, Duration::from_millis(300)).await.is_empty(),
        "a partial unlock publishes nothing"
    );

    // Last unlock: key gone, exactly one `0` on the lock's channel.
    lock.unlock().await.unwrap();
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    assert_eq!(pttl(&raw, &name).await, -2);
    let seen = messages(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(seen, vec![(channel, b"0".to_vec())]);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn lease_sets_the_ttl_and_partial_unlock_rearms_the_last_lease() {
    let Bed(_server, client, raw, name) = Bed::new("raw-lease").await;
    let lock = client.get_lock(&name);
    let field = format!("{}:{}", client.id(), lock.owner());

    lock.lock_with_lease(Duration::from_secs(20)).await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    let ttl = pttl(&raw, &name).await;
    assert!(
        (10_000..=20_000).contains(&ttl),
        "PTTL {ttl} is not the 20 s lease"
    );
    assert_eq!(
        client.renewed_locks(),
        0,
        "a lease-mode lock is not renewed"
    );

    // Re-entry with another lease: the TTL becomes the new lease.
    assert!(
        lock.try_lock_with_lease(Duration::ZERO, Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));
    let ttl = pttl(&raw, &name).await;
    assert!(
        (50_000..=60_000).contains(&ttl),
        "PTTL {ttl} is not the 60 s lease"
    );

    // A partial unlock re-arms the last lease taken through this handle, not 30 s.
    lock.unlock().await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    let ttl = pttl(&raw, &name).await;
    assert!(
        (50_000..=60_000).contains(&ttl),
        "PTTL {ttl} after a partial unlock"
    );

    lock.unlock().await.unwrap();
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);

    // After a full unlock the handle is back to the watchdog lease.
    lock.lock().await.unwrap();
    assert_watchdog_ttl(pttl(&raw, &name).await);
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn custom_watchdog_timeout_is_the_lease() {
    let Bed(_server, client, raw, name) = Bed::with_config("raw-custom-watchdog", |c| {
        c.watchdog_timeout(Duration::from_secs(90))
    })
    .await;
    let lock = client.get_lock(&name);
    lock.lock().await.unwrap();
    let ttl = pttl(&raw, &name).await;
    assert!(
        (80_000..=90_000).contains(&ttl),
        "PTTL {ttl} is not the 90 s watchdog lease"
    );
    assert_eq!(client.renewed_locks(), 1);
    lock.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn name_with_hash_tag_is_used_as_is_for_the_channel() {
    let Bed(server, client, raw, _) = Bed::new("bed").await;
    let (_subscriber, mut rx) = listen(&server, "redisson_lock__channel:*").await;

    let name = "a{grp}b";
    let lock = client.get_lock(name);
    lock.lock().await.unwrap();
    let field = format!("{}:{}", client.id(), lock.owner());
    // The key itself is the name, unchanged.
    assert_eq!(hgetall(&raw, name).await, pair(&field, 1));
    lock.unlock().await.unwrap();
    let exists: i64 = raw.exists(name).await.unwrap();
    assert_eq!(exists, 0);

    let seen = messages(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(
        seen,
        vec![("redisson_lock__channel:a{grp}b".to_string(), b"0".to_vec())],
        "no extra braces around a name that already has a hash tag"
    );
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn queries_answer_what_raw_state_says() {
    let Bed(server, client, raw, name) = Bed::new("raw-queries").await;
    let other = server.client().await;
    let lock = client.get_lock(&name);
    let me = lock.owner();
    let stranger = LockOwner::from_raw(987_654);

    // Free.
    assert_eq!(lock.remain_time_to_live().await.unwrap(), None);
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 0);
    assert!(!lock.is_held_by(me).await.unwrap());
    assert!(!lock.is_held_by_current_task().await.unwrap());

    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    let ttl = lock.remain_time_to_live().await.unwrap().expect("locked");
    assert!(
        ttl > Duration::from_secs(20) && ttl <= Duration::from_secs(30),
        "remaining {ttl:?}"
    );
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    assert!(lock.is_held_by(me).await.unwrap());
    assert!(lock.is_held_by_current_task().await.unwrap());
    assert!(!lock.is_held_by(stranger).await.unwrap());
    assert_eq!(lock.with_owner(stranger).hold_count().await.unwrap(), 0);
    assert!(
        !lock
            .with_owner(stranger)
            .is_held_by_current_task()
            .await
            .unwrap()
    );

    // Another client with the same owner number is another Redisson node.
    let theirs = other.get_lock(&name).with_owner(me);
    assert!(theirs.is_locked().await.unwrap());
    assert!(!theirs.is_held_by(me).await.unwrap());
    assert_eq!(theirs.hold_count().await.unwrap(), 0);
    assert!(!theirs.try_lock().await.unwrap());
    assert!(matches!(theirs.unlock().await, Err(Error::NotOwner { .. })));
    // Their failed attempts changed nothing.
    let field = format!("{}:{}", client.id(), me);
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 2));

    // A key without expiry (only a foreign PERSIST makes one) reads as Duration::MAX.
    let persisted: i64 = raw.persist(&name).await.unwrap();
    assert_eq!(persisted, 1);
    assert_eq!(
        lock.remain_time_to_live().await.unwrap(),
        Some(Duration::MAX)
    );

    // force_unlock: true while there is a lock, then false.
    let (_subscriber, mut rx) = listen(&server, "redisson_lock__channel:*").await;
    assert!(lock.force_unlock().await.unwrap());
    let exists: i64 = raw.exists(&name).await.unwrap();
    assert_eq!(exists, 0);
    assert_eq!(client.renewed_locks(), 0, "force_unlock stops renewal");
    let seen = messages(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(
        seen,
        vec![(format!("redisson_lock__channel:{{{name}}}"), b"0".to_vec())]
    );
    assert!(!lock.force_unlock().await.unwrap());
    assert!(
        drain(&mut rx, Duration::from_millis(300)).await.is_empty(),
        "a force_unlock that deleted nothing publishes nothing"
    );

    assert_eq!(lock.remain_time_to_live().await.unwrap(), None);
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 0);
    assert!(!lock.is_held_by(me).await.unwrap());
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failed_attempt_leaves_the_holders_state_alone() {
    let Bed(_server, client, raw, name) = Bed::new("raw-contended").await;
    let lock = client.get_lock(&name);
    lock.lock_with_lease(Duration::from_secs(40)).await.unwrap();
    let field = format!("{}:{}", client.id(), lock.owner());
    let before = pttl(&raw, &name).await;

    let rival = lock.with_owner(LockOwner::from_raw(5));
    assert!(!rival.try_lock().await.unwrap());
    assert!(
        !rival
            .try_lock_with_lease(Duration::from_millis(200), Duration::from_secs(1))
            .await
            .unwrap()
    );
    assert_eq!(hgetall(&raw, &name).await, pair(&field, 1));
    let after = pttl(&raw, &name).await;
    assert!(
        after <= before,
        "a failed attempt must not re-arm the TTL ({before} -> {after})"
    );
    // The waiter's subscription is given back in the background.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while client.subscribed_channels() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the waiter never unsubscribed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}
