//! `PermitExpirableSemaphore`'s holds and faults against real redis-server: the
//! watchdog-kept `Permit` (renewed in batches beside the locks, at risk at a connection
//! kill, lost when removed), dropped acquire futures, lost acquire replies, an acquire no
//! replica acknowledged, a cluster, and shutdown.
use crate::support;
use support::pes::*;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, HoldState};
use tokio::time::Instant;

/// A watchdog-kept permit outlives three watchdog timeouts, is renewed in Redis (its
/// score moves), is at risk within milliseconds of its connection's kill, is held again
/// after the reconnect, and is given back when dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_permit_survives_three_watchdog_timeouts_and_is_at_risk_at_a_connection_kill() {
    const WATCHDOG: Duration = Duration::from_millis(900);
    let Bed(_server, client, raw, name) =
        Bed::with_config("pes-kept", |c| c.watchdog_timeout(WATCHDOG)).await;
    let other = _server.client().await;
    let sem = client.get_permit_expirable_semaphore(&name);
    let others = other.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();

    let permit = sem.acquire_kept().await.unwrap();
    assert_eq!(permit.state(), HoldState::Held);
    assert_eq!(client.renewed_locks(), 1);
    let first = zrange(&raw, &timeouts(&name)).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].0, permit.id().as_bytes().to_vec());
    let lease = first[0].1 - now_ms();
    assert!(
        lease > 500 && lease <= 900,
        "a watchdog lease, {lease} ms left"
    );

    // Three watchdog timeouts, while another client keeps reclaiming expired permits.
    let until = Instant::now() + WATCHDOG * 3;
    while Instant::now() < until {
        assert_eq!(others.available_permits().await.unwrap(), 0);
        assert!(
            others
                .try_acquire(Duration::ZERO, None)
                .await
                .unwrap()
                .is_none()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let later = zrange(&raw, &timeouts(&name)).await;
    assert_eq!(later.len(), 1, "still held");
    assert!(later[0].1 > first[0].1 + 1_000, "the score moved on");
    assert_eq!(permit.state(), HoldState::Held);

    // A connection kill: at risk within milliseconds, as its watch (a clone, in a task
    // of its own) and its receiver see it.
    let mut changes = permit.state_changes();
    let watch = permit.watch().clone();
    let told = tokio::spawn(async move {
        let state = watch.at_risk().await;
        (state, Instant::now())
    });
    let fault = Instant::now();
    assert!(kill_clients(&raw, "normal").await >= 1);
    let (state, at) = tokio::time::timeout(Duration::from_secs(2), told)
        .await
        .expect("at risk after the kill")
        .unwrap();
    assert_eq!(state, HoldState::AtRisk);
    let at_risk = at - fault;
    let seen = tokio::time::timeout(
        Duration::from_secs(2),
        changes.wait_for(|s| *s != HoldState::Held),
    )
    .await
    .is_ok_and(|seen| seen.is_ok());
    assert!(seen, "the receiver missed the risk");
    eprintln!(
        "kept permit at risk {} ms after the connection kill",
        at_risk.as_millis()
    );
    assert!(at_risk < Duration::from_millis(300), "{at_risk:?}");
    tokio::time::timeout(Duration::from_secs(5), permit.held_again())
        .await
        .expect("held again after the reconnect");
    assert_eq!(permit.state(), HoldState::Held);

    // Dropped: given back at once, renewal stopped.
    drop(permit);
    assert!(
        eventually(Duration::from_secs(2), || async {
            get(&raw, &name).await.as_deref() == Some("1")
        })
        .await
    );
    assert!(zrange(&raw, &timeouts(&name)).await.is_empty());
    assert_eq!(client.renewed_locks(), 0);
    // Both clients' connections were killed: closing them may race the reconnect.
    let _ = client.shutdown().await;
    let _ = other.shutdown().await;
}

/// A kept permit deleted behind its back is lost at the next renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_permit_removed_in_redis_is_lost() {
    let Bed(_server, client, raw, name) = Bed::with_config("pes-kept-lost", |c| {
        c.watchdog_timeout(Duration::from_millis(900))
    })
    .await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    let permit = sem.acquire_kept().await.unwrap();
    let watch = permit.watch().clone();
    let told = tokio::spawn(async move { watch.lost().await });
    let _: i64 = raw.del(timeouts(&name)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), permit.lost())
        .await
        .expect("lost at the next renewal");
    assert!(permit.is_lost());
    tokio::time::timeout(Duration::from_millis(500), told)
        .await
        .expect("its watch's task is told too")
        .unwrap();
    assert!(matches!(
        permit.release().await,
        Err(Error::InvalidArgument(_))
    ));
    client.shutdown().await.unwrap();
}

/// Dropping acquire futures at any point never leaves a permit taken, and never a
/// subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquires_never_leak_a_permit_or_a_subscription() {
    use rand::Rng;
    let Bed(server, client, raw, name) = Bed::new("pes-cancel").await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(2).await.unwrap();
    let mut kept = Vec::new();
    for round in 0..60 {
        let after = Duration::from_micros(rand::thread_rng().gen_range(0..3_000));
        let sem2 = sem.clone();
        let attempt = async move {
            if round % 3 == 0 {
                sem2.acquire_kept().await.map(|p| {
                    let id = p.id();
                    std::mem::forget(p);
                    id
                })
            } else {
                // No lease: a permit leaked here would never come back.
                sem2.acquire(None).await
            }
        };
        // Dropped after one poll (the script just handed to the connection), or after a
        // random time.
        let outcome = if round % 2 == 0 {
            let mut attempt = Box::pin(attempt);
            match futures::poll!(attempt.as_mut()) {
                std::task::Poll::Ready(result) => Ok(result),
                std::task::Poll::Pending => Err(()),
            }
        } else {
            tokio::time::timeout(after, attempt).await.map_err(|_| ())
        };
        match outcome {
            // Taken before the drop: the caller owns it.
            Ok(Ok(id)) => kept.push(id),
            Ok(Err(error)) => panic!("{error}"),
            Err(_) => {}
        }
        // Give back what the caller got, so that the pool never runs dry.
        for id in kept.drain(..) {
            sem.release(id).await.unwrap();
        }
    }
    // Contended: waiters dropped while they wait.
    let blocker = tokio::time::timeout(Duration::from_secs(10), sem.acquire_many(2, None))
        .await
        .expect("both permits free again: none leaked")
        .unwrap();
    for _ in 0..20 {
        let after = Duration::from_millis(rand::thread_rng().gen_range(0..30));
        let _ = tokio::time::timeout(after, sem.acquire(None)).await;
    }
    assert_eq!(sem.try_release_many(&blocker).await.unwrap(), 2);
    assert!(
        eventually(Duration::from_secs(5), || async {
            get(&raw, &name).await.as_deref() == Some("2")
                && zrange(&raw, &timeouts(&name)).await.is_empty()
        })
        .await,
        "permits leaked: N={:?}, held={:?}",
        get(&raw, &name).await,
        zrange(&raw, &timeouts(&name)).await
    );
    // Every subscription goes once the channel's linger is over.
    assert!(
        eventually(Duration::from_secs(10), || async {
            client.subscribed_channels() == 0 && numsub(&raw, &sc(&name)).await == 0
        })
        .await,
        "subscriptions left: {} on the client, {} on the server",
        client.subscribed_channels(),
        numsub(&raw, &sc(&name)).await
    );
    drop(server);
}

/// A lost acquire reply (Redis paused past the response timeout, the script run after
/// the permit's lease had already ended) is settled by looking for the ids the crate
/// chose: never a permit whose lease has ended (Redisson's re-send with the old deadline
/// returned one that had expired 28 s earlier, docs/protocol.md §24.4), never a ghost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_acquire_reply_never_returns_an_expired_permit() {
    init_tracing();
    let server = RedisServer::start_pausable();
    let client = server
        .client_with(server.config().response_timeout(Duration::from_millis(300)))
        .await;
    let raw = server.raw().await;
    let name = key("pes-lost");
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    // The scripts in the server's cache, so that the paused one runs (not NOSCRIPT).
    let warm = sem.acquire(None).await.unwrap();
    sem.release(warm).await.unwrap();

    let pause = server.stall(0.8).await;
    let started = Instant::now();
    let id = sem
        .try_acquire(Duration::from_secs(5), Some(Duration::from_millis(400)))
        .await
        .unwrap()
        .expect("a permit");
    let returned_at = now_ms();
    pause.await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "the pause was not felt"
    );
    let held = zrange(&raw, &timeouts(&name)).await;
    assert_eq!(held.len(), 1, "one permit, no ghost: {held:?}");
    assert_eq!(held[0].0, id.as_bytes().to_vec());
    assert!(
        held[0].1 > returned_at,
        "the permit returned had expired {} ms before it was returned",
        returned_at - held[0].1
    );
    assert_eq!(get(&raw, &name).await.as_deref(), Some("0"));
    assert!(sem.try_release(id).await.unwrap());

    // A lease that outlives the pause: the permit the lost reply took is the one
    // returned (found by its id), and no second one is taken.
    let pause = server.stall(0.8).await;
    let id = sem
        .try_acquire(Duration::from_secs(5), Some(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("a permit");
    pause.await.unwrap();
    let held = zrange(&raw, &timeouts(&name)).await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].0, id.as_bytes().to_vec());
    assert_eq!(get(&raw, &name).await.as_deref(), Some("0"));
    assert!(sem.try_release(id).await.unwrap());
    client.shutdown().await.unwrap();
}

/// With replicas that acknowledge nothing (frozen), an acquire is undone by its ids and
/// fails with Redisson's text, once: no re-run with the old expiry, nothing held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_no_replica_acknowledged_is_undone_by_its_ids() {
    let primary = RedisServer::start();
    let replica = RedisServer::start_replica_of(&primary);
    wait_replica_linked(replica.port, Duration::from_secs(20));
    let sentinel = SentinelServer::start(primary.port, 10_000);
    sentinel.wait_for(|s| s.known_replicas() == 1, "sentinel to see the replica");
    let config = redisson_lock::Config::builder()
        .url(sentinel.url())
        .build()
        .unwrap();
    let client = redisson_lock::Client::connect(config).await.unwrap();
    let raw = primary.raw().await;
    let name = key("pes-sync");
    let sem = client.get_permit_expirable_semaphore(&name);
    assert!(sem.try_set_permits(2).await.unwrap());
    let kept = sem.acquire(None).await.unwrap();

    replica.pause();
    let started = Instant::now();
    let error = sem
        .try_acquire(Duration::ZERO, Some(Duration::from_secs(5)))
        .await
        .unwrap_err();
    let took = started.elapsed();
    eprintln!("unsynced acquire failed after {took:?}: {error}");
    assert!(
        matches!(error, Error::NoSyncedReplicas { replicas: 1, .. }),
        "{error:?}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(get(&raw, &name).await.as_deref(), Some("1"));
    let held = zrange(&raw, &timeouts(&name)).await;
    assert_eq!(held, vec![(kept.as_bytes().to_vec(), NO_LEASE)]);
    replica.resume();
    let id = sem.acquire(None).await.unwrap();
    assert_eq!(get(&raw, &name).await.as_deref(), Some("0"));
    sem.release(id).await.unwrap();
    sem.release(kept).await.unwrap();
    client.shutdown().await.unwrap();
}

/// Kept permits are renewed in batches with the locks' renewals: ten permits and a lock
/// cost two scripts per watchdog round (one per kind of hold), not eleven.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_permits_are_renewed_in_one_batch_per_round() {
    const WATCHDOG: Duration = Duration::from_millis(900);
    let Bed(_server, client, raw, name) =
        Bed::with_config("pes-batch", |c| c.watchdog_timeout(WATCHDOG)).await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(10).await.unwrap();
    let mut permits = Vec::new();
    for _ in 0..10 {
        permits.push(sem.acquire_kept().await.unwrap());
    }
    let lock = client.get_lock(format!("{name}-lock"));
    lock.lock().await.unwrap();
    assert_eq!(client.renewed_locks(), 11);
    reset_stats(&raw).await;
    // Until every permit was renewed (its score moved on) and the lock re-armed: one
    // round (every 300 ms), or two if the wait began mid-round.
    let before: Vec<i64> = zrange(&raw, &timeouts(&name))
        .await
        .into_iter()
        .map(|(_, score)| score)
        .collect();
    let lock_key = format!("{name}-lock");
    let lock_ttl = pttl(&raw, &lock_key).await;
    let started = Instant::now();
    let renewed = eventually(Duration::from_secs(5), || async {
        let now: Vec<i64> = zrange(&raw, &timeouts(&name))
            .await
            .into_iter()
            .map(|(_, score)| score)
            .collect();
        now.len() == before.len()
            && now.iter().min() > before.iter().max()
            && rearmed_since(pttl(&raw, &lock_key).await, lock_ttl, started.elapsed())
    })
    .await;
    assert!(renewed, "the permits or the lock were not renewed");
    let scripts = script_calls(&raw).await;
    eprintln!(
        "{scripts} scripts renewed 10 permits and a lock in {:?}",
        started.elapsed()
    );
    // 1 or 2 rounds of 2 scripts (a third if the machine is slow); one script per hold
    // would be 11 or more.
    assert!((2..=6).contains(&scripts), "{scripts} scripts in one round");
    let now = now_ms();
    for (_, score) in zrange(&raw, &timeouts(&name)).await {
        assert!(score > now + 400, "renewed: {} ms left", score - now);
    }
    lock.unlock().await.unwrap();
    drop(permits);
    client.shutdown().await.unwrap();
}

/// On a cluster: every key and the channel of a semaphore share its slot (braced names
/// too), kept permits on many slots are renewed per slot, and a release reaches a waiter
/// of another client through sharded pub/sub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_on_a_cluster() {
    let cluster = support::cluster::Cluster::start();
    let config = || {
        redisson_lock::Config::builder()
            .url(cluster.url())
            .watchdog_timeout(Duration::from_millis(900))
            .build()
            .unwrap()
    };
    let a = redisson_lock::Client::connect(config()).await.unwrap();
    let b = redisson_lock::Client::connect(config()).await.unwrap();
    let raw = cluster.raw().await;
    let names: Vec<String> = (0..12)
        .map(|i| {
            if i % 3 == 0 {
                key(&format!("pes{{tag{i}}}x"))
            } else {
                key(&format!("pes-cluster-{i}"))
            }
        })
        .collect();
    let mut permits = Vec::new();
    for name in &names {
        let sem = a.get_permit_expirable_semaphore(name);
        assert!(sem.try_set_permits(1).await.unwrap());
        permits.push(sem.acquire_kept().await.unwrap());
    }
    let timeout_key = |name: &str| {
        if name.contains('{') {
            format!("{name}:timeout")
        } else {
            timeouts(name)
        }
    };
    // Until every permit, on every slot, was renewed (its score moved on); a batch that
    // mixed slots would fail with CROSSSLOT and renew none of them.
    let mut before = Vec::new();
    for name in &names {
        before.push(zrange(&raw, &timeout_key(name)).await[0].1);
    }
    let started = Instant::now();
    let renewed = eventually(Duration::from_secs(10), || async {
        for (name, first) in names.iter().zip(&before) {
            let held = zrange(&raw, &timeout_key(name)).await;
            if held.len() != 1 || held[0].1 <= first + 200 {
                return false;
            }
        }
        true
    })
    .await;
    println!("every permit renewed within {:?}", started.elapsed());
    assert!(renewed, "not every permit was renewed");
    let now = now_ms();
    for (name, permit) in names.iter().zip(&permits) {
        let held = zrange(&raw, &timeout_key(name)).await;
        assert_eq!(held.len(), 1, "{name}");
        assert!(held[0].1 > now, "{name}: renewed");
        assert_eq!(permit.state(), HoldState::Held);
    }
    // A waiter of client B, woken by A's release.
    let name = names[1].clone();
    let waiter = {
        let sem = b.get_permit_expirable_semaphore(&name);
        tokio::spawn(async move {
            let id = sem.try_acquire(Duration::from_secs(5), None).await.unwrap();
            (id, Instant::now())
        })
    };
    // The waiter is subscribed on the slot's owner: waiting.
    let owner = tokio::task::block_in_place(|| cluster.owner_of_key(&name));
    let channel = sc(&name);
    assert!(
        eventually(Duration::from_secs(5), || async {
            support::cluster::shard_subscribers(owner, &channel).await == 1
        })
        .await,
        "the waiter never subscribed on {owner}"
    );
    let released = Instant::now();
    permits.remove(1).release().await.unwrap();
    let (id, got) = waiter.await.unwrap();
    assert!(id.is_some());
    assert!(
        got - released < Duration::from_millis(300),
        "{:?}",
        got - released
    );
    drop(permits);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Shutdown: a waiter returns `Error::Shutdown` at once, a kept permit says `Lost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_waiters_and_kept_permits() {
    let Bed(_server, client, _raw, name) = Bed::new("pes-shutdown").await;
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    let permit = sem.acquire_kept().await.unwrap();
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(None).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    client.shutdown().await.unwrap();
    let outcome = waiter.await.unwrap();
    assert!(matches!(outcome, Err(Error::Shutdown)), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(permit.is_lost());
}

/// A renewal round in flight when a kept permit is given back never brings it back: the
/// round's script (its `EVALSHA` meeting `NOSCRIPT`, then its `EVAL`, both held up by a
/// stalled Redis) lands after the release, finds the permit gone and changes nothing
/// (as the read-write lock's regression `a_renewal_round_in_flight_never_lands_after_a_
/// partial_unlock`, where a late renewal did re-arm a hold).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_round_in_flight_never_brings_back_a_released_permit() {
    const WATCHDOG: Duration = Duration::from_millis(900);
    const PERIOD: Duration = Duration::from_millis(300);
    let server = RedisServer::start_pausable();
    let client = server
        .client_with(server.config().watchdog_timeout(WATCHDOG))
        .await;
    let raw = server.raw().await;
    let name = key("pes-round-across-release");
    let sem = client.get_permit_expirable_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    // The acquire and release scripts cached, the renewal's not.
    raw.script_flush(false).await.unwrap();
    sem.acquire_kept().await.unwrap().release().await.unwrap();

    let permit = sem.acquire_kept().await.unwrap();
    let id = permit.id().to_string();
    assert_eq!(zrange(&raw, &timeouts(&name)).await.len(), 1);
    reset_stats(&raw).await;
    // The first round goes out one period after the acquire, into the stall.
    let stalled = server.stall(1.5).await;
    tokio::time::sleep(PERIOD + PERIOD / 2).await;
    permit.release().await.unwrap();
    stalled.await.unwrap();
    // The round ran: its EVAL (after NOSCRIPT) is counted once the stall ended.
    assert!(
        eventually(Duration::from_secs(3), || async {
            command_calls(&raw, "eval").await >= 1
        })
        .await,
        "no renewal round reached Redis after the stall"
    );
    let start = Instant::now();
    while start.elapsed() < PERIOD * 2 {
        let members = zrange(&raw, &timeouts(&name)).await;
        assert!(
            members.is_empty(),
            "permit {id} is back after its release: {members:?}"
        );
        assert_eq!(get(&raw, &name).await.as_deref(), Some("1"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}
