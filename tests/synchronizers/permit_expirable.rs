//! `PermitExpirableSemaphore` against real redis-server: the raw state after each
//! operation (`GET N`, `ZRANGE {N}:timeout WITHSCORES` with 16-byte members, TTLs), the
//! messages on `redisson_sc:{N}` read by a raw subscriber, the earliest-expiry hint, the
//! client's clock against the server's, the name mapper, the blocking API. The kept
//! `Permit`, cancel safety, lost replies, replicas and the cluster are in
//! `permit_expirable_holds.rs`; real Redisson's `RPermitExpirableSemaphore` on the same
//! keys in `tests/java/synchronizers.rs`.
use crate::support;
use support::pes::*;
use support::*;

use std::time::Duration;

use redisson_lock::Error;
use redisson_lock::fred::prelude::*;
use redisson_lock::synchronizers::PermitId;
use tokio::time::Instant;

#[tokio::test]
async fn raw_state_and_messages_after_each_operation() {
    let Bed(server, client, raw, name) = Bed::new("pes-raw").await;
    let (_subscriber, mut rx) = listen(&server, &sc(&name)).await;
    let sem = client.get_permit_expirable_semaphore(&name);
    let t = timeouts(&name);
    let quiet = Duration::from_millis(150);

    // trySetPermits: SET N 3, publishes 3.
    assert!(sem.try_set_permits(3).await.unwrap());
    assert!(!sem.try_set_permits(5).await.unwrap());
    assert_eq!(get(&raw, &name).await.as_deref(), Some("3"));
    assert_eq!(texts(&drain(&mut rx, quiet).await), ["3"]);

    // An acquire with a lease: N 2, one 16-byte member scored now + lease.
    let before = now_ms();
    let leased = sem.acquire(Some(Duration::from_secs(10))).await.unwrap();
    let after = now_ms();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("2"));
    let held = zrange(&raw, &t).await;
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].0, leased.as_bytes().to_vec(), "the raw 16 bytes");
    assert_eq!(held[0].0.len(), 16);
    assert!(
        (before + 10_000..=after + 10_000).contains(&held[0].1),
        "score {} is the client's now + 10 s",
        held[0].1
    );
    assert_eq!(leased.to_string().len(), 32);
    assert_eq!(leased.to_string().parse::<PermitId>().unwrap(), leased);

    // Without a lease: Redisson's sentinel score.
    let unlimited = sem.acquire(None).await.unwrap();
    let held = zrange(&raw, &t).await;
    assert!(held.contains(&(unlimited.as_bytes().to_vec(), NO_LEASE)));
    assert_eq!(get(&raw, &name).await.as_deref(), Some("1"));
    assert_eq!(pttl(&raw, &t).await, -1, "no TTL unless N has one");
    // Acquires publish nothing.
    assert!(drain(&mut rx, quiet).await.is_empty());

    // Queries.
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert_eq!(sem.acquired_permits().await.unwrap(), 2);
    assert_eq!(sem.get_permits().await.unwrap(), 3);
    assert_eq!(sem.get_lease_time(unlimited).await.unwrap(), None);
    let left = sem.get_lease_time(leased).await.unwrap().unwrap();
    assert!(left > Duration::from_secs(9) && left <= Duration::from_secs(10));

    // updateLeaseTime rewrites the score; publishes nothing.
    let before = now_ms();
    assert!(
        sem.update_lease_time(leased, Some(Duration::from_secs(20)))
            .await
            .unwrap()
    );
    let score = zrange(&raw, &t)
        .await
        .into_iter()
        .find(|(m, _)| m == leased.as_bytes())
        .unwrap()
        .1;
    assert!((before + 20_000..=now_ms() + 20_000).contains(&score));
    assert!(drain(&mut rx, quiet).await.is_empty());

    // release: ZREM, INCRBY, publishes the new count.
    sem.release(leased).await.unwrap();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("2"));
    assert_eq!(zrange(&raw, &t).await.len(), 1);
    assert_eq!(texts(&drain(&mut rx, quiet).await), ["2"]);
    // Twice: Redisson's text, nothing changes, nothing published.
    match sem.release(leased).await {
        Err(Error::InvalidArgument(text)) => assert_eq!(
            text,
            format!("Permit with id {leased} has already been released or doesn't exist")
        ),
        other => panic!("{other:?}"),
    }
    assert!(!sem.try_release(leased).await.unwrap());
    assert!(!sem.update_lease_time(leased, None).await.unwrap());
    assert!(drain(&mut rx, quiet).await.is_empty());

    // Many at once; all-or-none release publishes the number released.
    let two = sem.acquire_many(2, None).await.unwrap();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("0"));
    assert_eq!(zrange(&raw, &t).await.len(), 3);
    let stranger = PermitId::from_bytes([9; 16]);
    assert_eq!(sem.try_release_many(&[two[0], stranger]).await.unwrap(), 0);
    assert_eq!(zrange(&raw, &t).await.len(), 3, "all or none");
    assert_eq!(sem.try_release_many(&two).await.unwrap(), 2);
    assert_eq!(get(&raw, &name).await.as_deref(), Some("2"));
    assert_eq!(texts(&drain(&mut rx, quiet).await), ["2"]);

    // setPermits: the total becomes 5 (2 free + 1 held → 4 free), publishes the total.
    sem.set_permits(5).await.unwrap();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("4"));
    assert_eq!(texts(&drain(&mut rx, quiet).await), ["5"]);
    sem.set_permits(5).await.unwrap();
    assert!(
        drain(&mut rx, quiet).await.is_empty(),
        "unchanged: no message"
    );

    // addPermits: SET (drops N's TTL), publishes the delta only when positive.
    let _: () = raw.pexpire(&name, 60_000, None).await.unwrap();
    sem.add_permits(2).await.unwrap();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("6"));
    assert_eq!(pttl(&raw, &name).await, -1);
    assert_eq!(texts(&drain(&mut rx, quiet).await), ["2"]);
    sem.add_permits(-1).await.unwrap();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("5"));
    assert!(drain(&mut rx, quiet).await.is_empty());

    // An acquire copies N's TTL onto the sorted set.
    let _: () = raw.pexpire(&name, 60_000, None).await.unwrap();
    let id = sem.acquire(None).await.unwrap();
    let ttl = pttl(&raw, &t).await;
    assert!((50_000..=60_000).contains(&ttl), "PTTL {ttl}");
    sem.release(id).await.unwrap();
    drain(&mut rx, quiet).await;

    // delete: DEL N {N}:timeout.
    assert!(sem.delete().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert!(!exists(&raw, &t).await);
    assert!(!sem.delete().await.unwrap());
    assert!(drain(&mut rx, quiet).await.is_empty());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_expired_lease_comes_back_at_the_next_operation_and_no_count_below_one_is_published() {
    let Bed(server, client, raw, name) = Bed::new("pes-reclaim").await;
    let (_subscriber, mut rx) = listen(&server, &sc(&name)).await;
    let sem = client.get_permit_expirable_semaphore(&name);
    let quiet = Duration::from_millis(150);
    sem.try_set_permits(1).await.unwrap();
    drain(&mut rx, quiet).await;

    let id = sem.acquire(Some(Duration::from_millis(200))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Expired, but nothing in Redis changed yet, and nothing was published.
    assert!(drain(&mut rx, Duration::from_millis(10)).await.is_empty());
    assert_eq!(zrange(&raw, &timeouts(&name)).await.len(), 1);
    // The next query reclaims it and publishes the new count.
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert_eq!(zrange(&raw, &timeouts(&name)).await.len(), 0);
    assert_eq!(texts(&drain(&mut rx, quiet).await), ["1"]);
    assert!(!sem.try_release(id).await.unwrap());

    // A count of 0 or less is never published: try_set_permits(0) on a fresh name, and a
    // release that leaves the count negative.
    let other = client.get_permit_expirable_semaphore(format!("{name}-2"));
    let (_subscriber2, mut rx2) = listen(&server, &sc(&format!("{name}-2"))).await;
    assert!(other.try_set_permits(0).await.unwrap());
    other.add_permits(1).await.unwrap();
    drain(&mut rx2, quiet).await;
    let id = other.acquire(None).await.unwrap();
    other.add_permits(-3).await.unwrap();
    assert_eq!(get(&raw, &format!("{name}-2")).await.as_deref(), Some("-3"));
    assert!(other.try_release(id).await.unwrap());
    assert_eq!(get(&raw, &format!("{name}-2")).await.as_deref(), Some("-2"));
    assert!(
        drain(&mut rx2, quiet).await.is_empty(),
        "a count of -2 must not be published"
    );
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_a_typed_error_before_any_io() {
    let Bed(_server, client, _raw, name) = Bed::new("pes-bad").await;
    let sem = client.get_permit_expirable_semaphore(&name);
    // 0 permits takes nothing: tests/synchronizers/zero_permits.rs.
    assert!(matches!(
        sem.acquire(Some(Duration::ZERO)).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        sem.try_release_many(&[]).await,
        Err(Error::InvalidArgument(_))
    ));
    let malformed = "1eb2488e6f9d590b9cc83be240eff4bg".parse::<PermitId>();
    let error = malformed.unwrap_err();
    assert!(error.to_string().contains("not a permit id"), "{error}");
    assert!(matches!(Error::from(error), Error::InvalidArgument(_)));
    // A wrong-type key.
    let _: () = _raw.hset(&name, ("f", "v")).await.unwrap();
    assert!(matches!(
        sem.try_acquire(Duration::ZERO, None).await,
        Err(Error::WrongType { .. })
    ));
    client.shutdown().await.unwrap();
}

/// The expiry-hint path: a permit freed only by its lease's end (nobody publishes) goes
/// to a waiter within 50 ms of that end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_gets_a_permit_freed_by_expiry_within_50_ms_without_a_message() {
    let Duo(server, [a, b], raw, name) = Duo::new("pes-hint").await;
    let sem_a = a.get_permit_expirable_semaphore(&name);
    let sem_b = b.get_permit_expirable_semaphore(&name);
    sem_a.try_set_permits(1).await.unwrap();
    let (_subscriber, mut rx) = listen(&server, &sc(&name)).await;

    let held = sem_a
        .acquire(Some(Duration::from_millis(700)))
        .await
        .unwrap();
    let expiry = zrange(&raw, &timeouts(&name)).await[0].1;
    let waiter = tokio::spawn(async move {
        let id = sem_b
            .try_acquire(Duration::from_secs(5), Some(Duration::from_secs(30)))
            .await
            .unwrap();
        (id, now_ms())
    });
    // Nothing is published before the expiry: the waiter's wake-up is the hint's.
    let early = drain_first(
        &mut rx,
        Duration::from_millis(((expiry - now_ms()).max(0)) as u64),
    )
    .await;
    assert_eq!(early, None, "a message came before the lease ended");
    let (id, got_at) = waiter.await.unwrap();
    let id = id.expect("the waiter got the permit");
    assert_ne!(id, held);
    let late = got_at - expiry;
    eprintln!("the waiter got the expired permit {late} ms after its lease ended");
    assert!((0..=50).contains(&late), "{late} ms after the expiry");
    // The reclaim was the waiter's own script: its message (the new count) came with it.
    let after: Vec<String> = texts(&drain(&mut rx, Duration::from_millis(200)).await);
    assert!(after.len() <= 1, "{after:?}");
    assert!(!sem_a.try_release(held).await.unwrap());
}

/// The crate's clock, which writes every expiry, against the server's `TIME`.
#[tokio::test]
async fn the_clients_clock_against_the_servers_time() {
    let Bed(_server, client, raw, name) = Bed::new("pes-clock").await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    let before_us = server_time_us(&raw).await as i64;
    let id = sem.acquire(Some(Duration::from_secs(100))).await.unwrap();
    let after_us = server_time_us(&raw).await as i64;
    let written = zrange(&raw, &timeouts(&name)).await[0].1 - 100_000;
    let (before, after) = (before_us / 1000, after_us / 1000);
    let offset = if written < before {
        written - before
    } else if written > after {
        written - after
    } else {
        0
    };
    eprintln!(
        "client clock vs server TIME: the acquire's now was {written}, server between {before} and {after}: offset {offset} ms"
    );
    assert!(offset.abs() < 1_000, "offset {offset} ms");
    sem.release(id).await.unwrap();
    client.shutdown().await.unwrap();
}

/// The blocking API: the same permits from a plain thread; a dropped kept permit is
/// given back.
#[cfg(feature = "blocking")]
#[test]
fn blocking_permits_from_a_plain_thread() {
    let server = RedisServer::start();
    let client =
        redisson_lock::blocking::Client::connect(server.config().build().unwrap()).unwrap();
    let name = key("pes-blocking");
    let sem = client.get_permit_expirable_semaphore(&name);
    assert!(sem.try_set_permits(2).unwrap());
    let id = sem.acquire(Some(Duration::from_secs(10))).unwrap();
    let permit = sem.acquire_kept().unwrap();
    assert_eq!(permit.state(), redisson_lock::HoldState::Held);
    assert_eq!(sem.acquired_permits().unwrap(), 2);
    assert!(
        sem.try_acquire(Duration::from_millis(50), None)
            .unwrap()
            .is_none()
    );
    sem.release(id).unwrap();
    drop(permit);
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while sem.available_permits().unwrap() != 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the dropped permit came back"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    client.shutdown().unwrap();
}

/// The name mapper maps the semaphore's name, and every key and the channel follow it.
#[tokio::test]
async fn the_name_mapper_maps_every_key_and_the_channel() {
    let Bed(server, client, raw, name) = Bed::with_config("pes-mapped", |c| {
        c.name_mapper(redisson_lock::PrefixNameMapper::new("app1:"))
    })
    .await;
    let mapped = format!("app1:{name}");
    let (_subscriber, mut rx) = listen(&server, &sc(&mapped)).await;
    let sem = client.get_permit_expirable_semaphore(&name);
    assert_eq!(sem.name(), name);
    assert_eq!(sem.raw_name(), mapped);
    sem.try_set_permits(1).await.unwrap();
    let id = sem.acquire(None).await.unwrap();
    assert_eq!(get(&raw, &mapped).await.as_deref(), Some("0"));
    assert_eq!(zrange(&raw, &timeouts(&mapped)).await.len(), 1);
    sem.release(id).await.unwrap();
    assert_eq!(
        texts(&drain(&mut rx, Duration::from_millis(150)).await),
        ["1", "1"]
    );
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

/// A release after the lease ended (nothing reclaimed it yet) gives the permit back and
/// publishes, but answers `false`, as Redisson (docs/protocol.md §20.4).
#[tokio::test]
async fn a_release_after_the_lease_ended_gives_back_and_answers_false() {
    let Bed(server, client, raw, name) = Bed::new("pes-late").await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(3).await.unwrap();
    let (_subscriber, mut rx) = listen(&server, &sc(&name)).await;
    let id = sem.acquire(Some(Duration::from_millis(200))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!sem.try_release(id).await.unwrap());
    assert_eq!(get(&raw, &name).await.as_deref(), Some("3"));
    assert!(zrange(&raw, &timeouts(&name)).await.is_empty());
    assert_eq!(
        texts(&drain(&mut rx, Duration::from_millis(150)).await),
        ["3"]
    );
    client.shutdown().await.unwrap();
}

/// A waiter for several permits is woken by any release and takes them all once there
/// are enough (Redisson 3.23.4–3.50 slept until its timeout: redisson#6664, #6687).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_for_two_permits_is_woken_by_a_release_of_one() {
    let Bed(_server, client, raw, name) = Bed::new("pes-two").await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move {
            let ids = sem
                .try_acquire_many(2, Duration::from_secs(5), None)
                .await
                .unwrap();
            (ids, Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let added = Instant::now();
    sem.add_permits(1).await.unwrap();
    let (ids, got) = waiter.await.unwrap();
    assert_eq!(ids.len(), 2);
    assert!(
        got - added < Duration::from_millis(200),
        "{:?}",
        got - added
    );
    assert_eq!(get(&raw, &name).await.as_deref(), Some("0"));
    assert_eq!(sem.try_release_many(&ids).await.unwrap(), 2);
    client.shutdown().await.unwrap();
}
