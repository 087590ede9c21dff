//! Told at once (`CLIENT TRACKING`): a holder learns within a round trip when anyone else
//! changes or removes its lock, on a single server. Each change is made by another client
//! (or the server itself) while the guard is held, and the time to the guard's first
//! signal (`at_risk()`, which a loss completes too) is measured over several rounds:
//! DEL, UNLINK, FLUSHDB, FLUSHALL, PEXPIRE shortened, HDEL of the owner field, the
//! CLI's force-unlock, an eviction under `maxmemory` by real writes, and a kept permit
//! of a permit-expirable semaphore removed. With tracking switched off the same DEL is not
//! heard for a whole renewal period (the checker can fail), and the client's own
//! re-entries, unlocks and renewals, other clients contending, and a tracking table far
//! too small give no signal at all. The members of a multi-lock and of a RedLock, on
//! servers of their own, are told at once too.
use crate::support;
use support::pes::*;
use support::told::*;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, HoldState, Lock, LockGuard, LockKind, LockOwner, MultiLock, RedLock};
use tokio::time::Instant;

/// Rounds per change.
const ROUNDS: usize = 8;

/// Every foreign change to a held lock is heard within a round trip or so, not at the
/// next renewal (9.7 s before): the guard says lost (gone) or at risk (shortened).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_foreign_change_of_a_held_lock_is_told_at_once() {
    let server = RedisServer::start();
    let client = server.client().await;
    let port = server.port;
    let servers = Servers::connect(&[port], move |_| port).await;
    // The listener's set-up is in the background: wait until it is on.
    servers.wait_key_tracking().await;
    let all = every_foreign_change(&client, &servers, &server.url(), ROUNDS).await;
    // Slack for a loaded 2-core machine; the bench reports the figure.
    assert!(
        p99(&all) < Duration::from_millis(500),
        "p99 {:?}",
        p99(&all)
    );
}

/// A shortened lease is at risk, then held again: the sentry's renewal re-arms it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shortened_lease_is_at_risk_then_held_again() {
    init_tracing();
    let Bed(_server, client, raw, name) = Bed::new("told-shortened").await;
    wait_key_tracking(&raw).await;
    let guard = client.get_lock(&name).acquire().await.unwrap();
    tokio::time::sleep(HELD_FIRST).await;
    let _: bool = raw.pexpire(&name, 500, None).await.unwrap();
    tokio::time::timeout(TOLD_WITHIN, guard.at_risk())
        .await
        .unwrap();
    tokio::time::timeout(TOLD_WITHIN, guard.held_again())
        .await
        .unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    assert!(
        pttl(&raw, &name).await > 20_000,
        "re-armed by the sentry's renewal"
    );
    guard.unlock().await.unwrap();
}

/// Switched off, the same DEL is heard only at the next renewal: the tests above fail
/// without tracking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tracking_a_delete_is_not_heard_until_the_next_renewal() {
    let Bed(_server, client, raw, name) =
        Bed::with_config("told-off", |c| c.key_tracking(false)).await;
    let guard = client.get_lock(&name).acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(tracking_connections(&raw).await, 0, "nothing tracks");
    let _: i64 = raw.del(&name).await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(1), guard.at_risk()).await;
    assert!(heard.is_err(), "not heard within a second without tracking");
    assert_eq!(guard.state(), HoldState::Held);
}

/// A hold evicted under `maxmemory` (`allkeys-random`) by another client's real writes is
/// heard at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_hold_is_told_at_once() {
    let server = RedisServer::start_with(&["--maxmemory-policy", "allkeys-random"]);
    let client = server.client().await;
    let raw = server.raw().await;
    wait_key_tracking(&raw).await;
    let name = key("told-evicted");
    let guard = client.get_lock(&name).acquire().await.unwrap();
    tokio::time::sleep(HELD_FIRST).await;
    let used: String = raw.info(Some(fred::types::InfoKind::Memory)).await.unwrap();
    let used: u64 = used
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let _: () = raw
        .custom(
            fred::cmd!("CONFIG"),
            vec![
                "SET".to_owned(),
                "maxmemory".to_owned(),
                (used + 2_000_000).to_string(),
            ],
        )
        .await
        .unwrap();
    let started = Instant::now();
    let value = "x".repeat(10_000);
    let mut written = 0;
    while exists(&raw, &name).await {
        for _ in 0..50 {
            let _: () = raw
                .set(
                    format!("filler:{written}"),
                    value.as_str(),
                    None,
                    None,
                    false,
                )
                .await
                .unwrap();
            written += 1;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the hold is never evicted"
        );
    }
    let evicted = Instant::now();
    tokio::time::timeout(TOLD_WITHIN, guard.lost())
        .await
        .unwrap();
    eprintln!(
        "told at once: eviction: lost {:?} after the key was seen gone ({written} writes)",
        evicted.elapsed()
    );
}

/// A kept permit removed from its sorted set by another client is heard at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_permit_removed_by_another_client_is_told_at_once() {
    let Bed(_server, client, raw, name) = Bed::new("told-pes").await;
    wait_key_tracking(&raw).await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(3).await.unwrap();
    let kept = sem.acquire_kept().await.unwrap();
    let other = sem.acquire_kept().await.unwrap();
    tokio::time::sleep(HELD_FIRST).await;
    let changed = Instant::now();
    let member = Value::Bytes(kept.id().as_bytes().to_vec().into());
    let removed: i64 = raw
        .custom(
            fred::cmd!("ZREM"),
            vec![Value::from(timeouts(&name)), member],
        )
        .await
        .unwrap();
    assert_eq!(removed, 1);
    tokio::time::timeout(TOLD_WITHIN, kept.lost())
        .await
        .unwrap();
    eprintln!(
        "told at once: permit removed: lost after {:?}",
        changed.elapsed()
    );
    assert_eq!(
        other.state(),
        HoldState::Held,
        "the other permit is untouched"
    );
    other.release().await.unwrap();
}

/// Holds the watchdog has renewed (a write, after which Redis no longer tracks the key
/// for this client) are still heard at once: every renewal script reads its keys again.
/// One hold per renewal script (a lock hash, a read hold, a faster multi-lock group, a
/// kept permit), deleted between two renewals (every second, a 3 s watchdog): without
/// those reads each would be heard only at its next renewal, about 0.9 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_the_watchdog_renewed_are_still_told_at_once() {
    let server = RedisServer::start();
    let client = server
        .client_with(server.config().watchdog_timeout(Duration::from_secs(3)))
        .await;
    let raw = server.raw().await;
    wait_key_tracking(&raw).await;
    let names: Vec<String> = ["lock", "read", "group", "permit"]
        .iter()
        .map(|what| key(&format!("told-renewed-{what}")))
        .collect();
    let lock = client.get_lock(&names[0]).acquire().await.unwrap();
    let read = client
        .get_read_write_lock(&names[1])
        .read_lock()
        .acquire()
        .await
        .unwrap();
    let group = client
        .get_multi_lock(&names[2], ["a", "b"])
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let sem = client.get_permit_expirable_semaphore(&names[3]);
    sem.try_set_permits(1).await.unwrap();
    let permit = sem.acquire_kept().await.unwrap();
    // Two renewal rounds (at about 1 s and 2 s), then halfway to the third.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let watches = [
        lock.watch().clone(),
        read.watch().clone(),
        group.watch().clone(),
        permit.watch().clone(),
    ];
    for (what, watch) in ["lock", "read", "group", "permit"].iter().zip(&watches) {
        assert_eq!(watch.state(), HoldState::Held, "{what} renewed and held");
    }
    let deleted = Instant::now();
    let _: i64 = raw
        .del(vec![
            names[0].clone(),
            names[1].clone(),
            names[2].clone(),
            timeouts(&names[3]),
        ])
        .await
        .unwrap();
    for (what, watch) in ["lock", "read", "group", "permit"].iter().zip(&watches) {
        tokio::time::timeout(TOLD_WITHIN, watch.lost())
            .await
            .unwrap();
        let after = deleted.elapsed();
        eprintln!("told at once after renewals: {what} lost after {after:?}");
        // The next renewal is about 900 ms away; slack for a loaded 2-core machine.
        assert!(after < Duration::from_millis(500), "{what}: {after:?}");
    }
}

/// Takes `lock` and gives it back at once (on a lock its owner holds: a re-entry, then a
/// partial unlock).
async fn in_and_out<K: LockKind>(lock: &Lock<K>) {
    lock.acquire().await.unwrap().unlock().await.unwrap();
}

/// Every script that writes a key this client still holds reads it once more (Redis
/// forgets a written key's tracking entry), so a hold is heard at once after each kind's
/// first hold, re-entry, partial unlock, a sibling owner's unlock of a shared key, a
/// hand-off to a local waiter and a kept permit's release; deleted at once after the
/// write, with nothing else reading the key. Without those reads each would be heard only
/// at its next renewal, 10 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kinds_own_writes_keep_its_holds_told_at_once() {
    let Bed(_server, client, raw, base) = Bed::new("told-own").await;
    wait_key_tracking(&raw).await;
    let name = |what: &str| format!("{base}-{what}");
    let owner = LockOwner::from_raw;
    let mut told = Vec::new();
    macro_rules! check {
        ($what:expr, $key:expr, $watch:expr) => {{
            let what = $what;
            told.push((what, deleted_and_told(&raw, what, &$key, $watch).await));
        }};
    }

    let lock = client.get_lock(name("lock"));
    let first = lock.acquire().await.unwrap();
    check!("lock: first hold", name("lock"), first.watch());
    let lock = client.get_lock(name("reentry"));
    let (first, _again) = (lock.acquire().await.unwrap(), lock.acquire().await.unwrap());
    check!("lock: re-entry", name("reentry"), first.watch());
    let lock = client.get_lock(name("partial"));
    let first = lock.acquire().await.unwrap();
    in_and_out(&lock).await;
    check!("lock: partial unlock", name("partial"), first.watch());
    let lock = client.get_fair_lock(name("fair"));
    let first = lock.acquire().await.unwrap();
    check!("fair: first hold", name("fair"), first.watch());
    let lock = client.get_fair_lock(name("fair-partial"));
    let first = lock.acquire().await.unwrap();
    in_and_out(&lock).await;
    check!("fair: partial unlock", name("fair-partial"), first.watch());
    let lock = client.get_spin_lock(name("spin"));
    let first = lock.acquire().await.unwrap();
    in_and_out(&lock).await;
    check!("spin: partial unlock", name("spin"), first.watch());
    let first = client
        .get_fenced_lock(name("fenced"))
        .acquire()
        .await
        .unwrap();
    check!("fenced: first hold", name("fenced"), first.watch());
    let first = client
        .get_non_reentrant_lock(name("non-reentrant"))
        .acquire()
        .await
        .unwrap();
    check!(
        "non-reentrant: first hold",
        name("non-reentrant"),
        first.watch()
    );

    let rw = client.get_read_write_lock(name("write"));
    let first = rw.write_lock().acquire().await.unwrap();
    in_and_out(&rw.write_lock()).await;
    check!("write: partial unlock", name("write"), first.watch());
    let rw = client.get_read_write_lock(name("read"));
    let first = rw.read_lock().acquire().await.unwrap();
    check!("read: first hold", name("read"), first.watch());
    let rw = client.get_read_write_lock(name("readers"));
    let first = rw.read_lock().with_owner(owner(1)).acquire().await.unwrap();
    let second = rw.read_lock().with_owner(owner(2)).acquire().await.unwrap();
    second.unlock().await.unwrap();
    check!(
        "read: another reader's unlock",
        name("readers"),
        first.watch()
    );
    let rw = client.get_read_write_lock(name("downgrade"));
    let write = rw.write_lock().acquire().await.unwrap();
    let read = rw.read_lock().acquire().await.unwrap();
    write.unlock().await.unwrap();
    check!("read: the writer's unlock", name("downgrade"), read.watch());

    let group = |values: &[&str]| client.get_multi_lock(name("group"), values).unwrap();
    let first = group(&["a", "b"])
        .with_owner(owner(1))
        .acquire()
        .await
        .unwrap();
    check!("group: first hold", name("group"), first.watch());
    let group = |values: &[&str]| client.get_multi_lock(name("groups"), values).unwrap();
    let first = group(&["a", "b"])
        .with_owner(owner(1))
        .acquire()
        .await
        .unwrap();
    let second = group(&["c"]).with_owner(owner(2)).acquire().await.unwrap();
    second.unlock().await.unwrap();
    check!(
        "group: another owner's unlock",
        name("groups"),
        first.watch()
    );

    let lock = client.get_lock(name("handoff"));
    let holder = lock.with_owner(owner(1)).acquire().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.with_owner(owner(2));
        async move { lock.acquire().await }
    });
    assert!(
        eventually(Duration::from_secs(5), || async {
            client.local_waiters() == 1
        })
        .await
    );
    holder.unlock().await.unwrap();
    let handed = waiter.await.unwrap().unwrap();
    check!(
        "lock: handed to a local waiter",
        name("handoff"),
        handed.watch()
    );

    let sem = client.get_permit_expirable_semaphore(name("permits"));
    sem.try_set_permits(2).await.unwrap();
    let first = sem.acquire_kept().await.unwrap();
    check!(
        "permit: acquired",
        timeouts(&name("permits")),
        first.watch()
    );
    let sem = client.get_permit_expirable_semaphore(name("permit-released"));
    sem.try_set_permits(2).await.unwrap();
    let first = sem.acquire_kept().await.unwrap();
    sem.acquire_kept().await.unwrap().release().await.unwrap();
    check!(
        "permit: another permit's release",
        timeouts(&name("permit-released")),
        first.watch()
    );

    for (what, after) in &told {
        eprintln!("told at once after an own write: {what}: {after:?}");
    }
    let late: Vec<_> = told
        .iter()
        .filter(|(_, after)| after.is_none_or(|after| after > Duration::from_millis(500)))
        .collect();
    assert!(late.is_empty(), "heard late or never: {late:?}");
}

/// No false signal: this client's own re-entries, partial unlocks, renewals, another
/// client's failed tries on the same names, and another connection's writes that leave
/// the hold as it was (a field of its own in the lock's hash, so every one is an
/// invalidation whose check runs while the holder's re-entries lengthen the lease), under
/// a tracking table far too small (`tracking-table-max-keys 2`, so Redis keeps dropping
/// and re-announcing keys), give no `at_risk()` and no `lost()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_writes_other_clients_and_a_full_tracking_table_give_no_signal() {
    let server = RedisServer::start_with(&["--tracking-table-max-keys", "2"]);
    // Renewed every second (a 3 s watchdog): three renewal rounds in the run.
    let client = server
        .client_with(server.config().watchdog_timeout(Duration::from_secs(3)))
        .await;
    let other = server.client().await;
    let raw = server.raw().await;
    wait_key_tracking(&raw).await;
    let names: Vec<String> = (0..8).map(|i| key(&format!("told-quiet-{i}"))).collect();
    let mut guards = Vec::new();
    let mut told = Vec::new();
    for name in &names {
        let guard = client.get_lock(name).acquire().await.unwrap();
        let watch = guard.watch().clone();
        told.push(tokio::spawn(async move { watch.at_risk().await }));
        guards.push(guard);
    }
    let until = Instant::now() + Duration::from_millis(3_500);
    // The holders' re-entries and partial unlocks every few milliseconds (each sets the
    // lease again, so a check that ran before one reads less time left than the holder
    // set after it).
    let mut again = Vec::new();
    for guard in &guards {
        let lock = LockGuard::lock(guard).clone();
        again.push(tokio::spawn(async move {
            let mut times = 0u64;
            while Instant::now() < until {
                lock.acquire().await.unwrap().unlock().await.unwrap();
                times += 1;
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            times
        }));
    }
    let mut round = 0;
    while Instant::now() < until {
        for name in &names {
            // A failed try by another client; a write that leaves the hold as it was.
            assert!(!other.get_lock(name).try_lock().await.unwrap());
            let _: i64 = raw.hset(name, ("not-a-holder", 1)).await.unwrap();
            let _: i64 = raw.hdel(name, "not-a-holder").await.unwrap();
        }
        round += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut reentries = 0;
    for task in again {
        reentries += task.await.unwrap();
    }
    for ((name, guard), told) in names.iter().zip(&guards).zip(&told) {
        assert_eq!(guard.state(), HoldState::Held, "{name}");
        assert!(!told.is_finished(), "{name}: never at risk");
    }
    eprintln!(
        "told at once: {reentries} re-entries, {round} rounds of others' tries and writes, no signal"
    );
    for guard in guards {
        guard.unlock().await.unwrap();
    }
}

/// The fallback: a user whose ACL forbids `CLIENT TRACKING` locks as before (every kind
/// tried here, raw state checked), the refusal is logged once, and a foreign change is
/// heard at the next renewal instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_client_tracking_locks_as_before_and_is_told_once() {
    init_tracing();
    let server = RedisServer::start();
    let raw = server.raw().await;
    let _: Value = raw
        .custom(
            fred::cmd!("ACL"),
            vec![
                "SETUSER",
                "locker",
                "on",
                ">pw",
                "~*",
                "&*",
                "+@all",
                "-client|tracking",
            ],
        )
        .await
        .unwrap();
    let url = format!("redis://locker:pw@127.0.0.1:{}", server.port);
    let client = Client::connect(
        redisson_lock::Config::builder()
            .url(&url)
            .watchdog_timeout(Duration::from_millis(900))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let refused = ["key tracking refused", "client|tracking"];
    assert!(
        eventually(Duration::from_secs(5), || async {
            support::events::count(&refused) >= 1
        })
        .await,
        "the refusal is logged"
    );
    assert_eq!(tracking_connections(&raw).await, 0);
    // Other tests of this binary may log their own refusals: this client's is one.
    let said = support::events::count(&refused);

    let name = key("told-acl");
    let lock = client.get_lock(&name);
    let guard = lock.acquire().await.unwrap();
    let again = lock.acquire().await.unwrap();
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(hgetall(&raw, &name).await, vec![(field, "2".to_owned())]);
    again.unlock().await.unwrap();
    let fair = client.get_fair_lock(key("told-acl-fair"));
    fair.acquire().await.unwrap().unlock().await.unwrap();
    let rw = client.get_read_write_lock(key("told-acl-rw"));
    rw.read_lock()
        .acquire()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    in_and_out(&rw.write_lock()).await;
    let sem = client.get_permit_expirable_semaphore(key("told-acl-pes"));
    sem.try_set_permits(1).await.unwrap();
    sem.acquire_kept().await.unwrap().release().await.unwrap();

    // A DEL is heard at the next renewal (300 ms here), not at once.
    let _: i64 = raw.del(&name).await.unwrap();
    let deleted = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), guard.lost())
        .await
        .unwrap();
    eprintln!(
        "told at once: without CLIENT TRACKING, lost after {:?} (the next renewal)",
        deleted.elapsed()
    );
    assert_eq!(support::events::count(&refused), said, "said once");
    client.shutdown().await.unwrap();
}

/// A waiter of a lock deleted rather than unlocked (no unlock message comes) takes it
/// within milliseconds of the delete once it has waited 100 ms (its key is then tracked),
/// not at its next re-check (up to 2 s later, 1.7 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_of_a_deleted_lock_takes_it_at_once() {
    let Bed(server, holder, raw, name) = Bed::new("told-waiter").await;
    let waiter = server.client().await;
    assert!(
        eventually(Duration::from_secs(5), || async {
            tracking_connections(&raw).await >= 2
        })
        .await,
        "both clients track"
    );
    let guard = holder.get_lock(&name).acquire().await.unwrap();
    let waiting = spawn_waiter(waiter.get_lock(&name));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the lock is held");
    let deleted: i64 = raw.del(&name).await.unwrap();
    assert_eq!(deleted, 1);
    let changed = Instant::now();
    let acquired = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    let took = acquired.saturating_duration_since(changed.into_std());
    eprintln!("told at once: a waiter took a deleted lock {took:?} after the DEL");
    assert!(
        took < Duration::from_secs(1),
        "the waiter took the deleted lock after {took:?}, not at once"
    );
    tokio::time::timeout(TOLD_WITHIN, guard.lost())
        .await
        .unwrap();
}

/// The members of a multi-lock and of a RedLock (plain RLocks, each on its own server)
/// are tracked like any hold: a member deleted by another client is heard at once, not
/// at the next renewal 10 s later. The multi-lock is lost with one member; the RedLock of
/// three stays held with one member gone and is lost with the second. (Without tracking,
/// neither is told within 2 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_and_redlock_members_are_told_at_once() {
    let fleet = Fleet::new(3, |c| c).await;
    for raw in &fleet.raws {
        wait_key_tracking(raw).await;
    }
    let names: Vec<String> = (0..3).map(|i| key(&format!("told-multi-{i}"))).collect();
    let group = MultiLock::new((0..3).map(|i| fleet.clients[i].get_lock(names[i].clone())))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let deleted = Instant::now();
    let _: i64 = fleet.raws[1].del(&names[1]).await.unwrap();
    tokio::time::timeout(TOLD_WITHIN, group.watch().lost())
        .await
        .expect("the multi-lock told of its deleted member");
    let multi = deleted.elapsed();

    let name = key("told-red");
    let red = RedLock::new(fleet.clients.iter().map(|c| c.get_lock(&name)))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let watch = red.watch().clone();
    let _: i64 = fleet.raws[0].del(&name).await.unwrap();
    // One member of three gone: the majority holds (no signal to wait for, so a pause).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(watch.state(), HoldState::Held, "one member of three gone");
    let deleted = Instant::now();
    let _: i64 = fleet.raws[2].del(&name).await.unwrap();
    tokio::time::timeout(TOLD_WITHIN, watch.lost())
        .await
        .expect("the RedLock told of its second deleted member");
    let redlock = deleted.elapsed();
    eprintln!(
        "told at once: multi-lock member after {multi:?}, RedLock's second after {redlock:?}"
    );
    // The next renewal is 10 s away; slack for a loaded 2-core machine.
    for (what, after) in [("multi-lock", multi), ("RedLock", redlock)] {
        assert!(after < Duration::from_millis(500), "{what}: {after:?}");
    }
    let _ = group.unlock().await;
    let _ = red.unlock().await;
}
