//! `Semaphore` (Redisson's `RSemaphore`, docs/protocol.md §19) against real servers: the raw
//! count, TTL and channel message after each operation; the wake-up budget a message
//! carries; waiting, guards, lost replies, bad input, replica sync. Real Redisson's
//! semaphore on the same name: `tests/java/synchronizers.rs`.

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, Error, Semaphore};
use tokio::time::Instant;

/// `GET name` as text (`None`: missing).
async fn count(raw: &redisson_lock::fred::prelude::Client, name: &str) -> Option<String> {
    raw.get(name).await.unwrap()
}

/// The payloads published on the channel within 200 ms of quiet.
async fn published(
    rx: &mut tokio::sync::broadcast::Receiver<redisson_lock::fred::types::Message>,
    channel: &str,
) -> Vec<String> {
    drain(rx, Duration::from_millis(200))
        .await
        .into_iter()
        .map(|(c, payload)| {
            assert_eq!(c, channel, "published on another channel");
            String::from_utf8(payload).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn raw_state_and_message_after_each_operation() {
    let Bed(server, client, raw, name) = Bed::new("sem-raw").await;
    let channel = format!("redisson_sc:{{{name}}}");
    let (_subscriber, mut rx) = listen(&server, "redisson_sc:*").await;
    let semaphore = client.get_semaphore(&name);

    assert!(semaphore.try_set_permits(3).await.unwrap());
    assert_eq!(count(&raw, &name).await.as_deref(), Some("3"));
    assert_eq!(pttl(&raw, &name).await, -1);
    assert_eq!(published(&mut rx, &channel).await, ["3"]);
    let encoding: String = raw
        .custom(
            redisson_lock::fred::cmd!("OBJECT"),
            vec!["ENCODING", name.as_str()],
        )
        .await
        .unwrap();
    // Redis keeps a short integer string as `int`, Valkey 9 (set from a script) as
    // `embstr`; either way a string holding the decimal count.
    assert!(
        encoding == "int" || encoding == "embstr",
        "the count is not a plain string: {encoding}"
    );

    assert!(!semaphore.try_set_permits(9).await.unwrap());
    assert_eq!(count(&raw, &name).await.as_deref(), Some("3"));
    assert!(published(&mut rx, &channel).await.is_empty());

    let taken = semaphore.try_acquire(2).await.unwrap().expect("2 of 3");
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1"));
    assert!(
        published(&mut rx, &channel).await.is_empty(),
        "acquire publishes nothing"
    );
    assert!(semaphore.try_acquire(2).await.unwrap().is_none());
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1"));
    assert_eq!(taken.forget(), 2);

    semaphore.release(1).await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("2"));
    assert_eq!(published(&mut rx, &channel).await, ["2"], "the new count");

    assert_eq!(semaphore.add_permits(-2).await.unwrap(), 0);
    assert_eq!(count(&raw, &name).await.as_deref(), Some("0"));
    assert_eq!(semaphore.add_permits(-1).await.unwrap(), -1);
    assert_eq!(count(&raw, &name).await.as_deref(), Some("-1"));
    assert!(
        published(&mut rx, &channel).await.is_empty(),
        "0 and negative counts are never published"
    );
    assert_eq!(semaphore.available_permits().await.unwrap(), -1);
    semaphore.release(1).await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("0"));
    assert!(published(&mut rx, &channel).await.is_empty());

    assert!(semaphore.release_if_exists(2).await.unwrap());
    assert_eq!(count(&raw, &name).await.as_deref(), Some("2"));
    assert_eq!(published(&mut rx, &channel).await, ["2"]);

    assert_eq!(semaphore.add_permits(3).await.unwrap(), 5);
    assert_eq!(published(&mut rx, &channel).await, ["5"]);

    assert_eq!(semaphore.drain_permits().await.unwrap(), 5);
    assert_eq!(count(&raw, &name).await.as_deref(), Some("0"));
    assert!(
        published(&mut rx, &channel).await.is_empty(),
        "drain publishes nothing"
    );
    assert_eq!(semaphore.available_permits().await.unwrap(), 0);

    assert!(semaphore.delete().await.unwrap());
    assert_eq!(count(&raw, &name).await, None);
    assert!(!semaphore.delete().await.unwrap());
    assert_eq!(semaphore.drain_permits().await.unwrap(), 0);
    assert_eq!(
        count(&raw, &name).await,
        None,
        "drain does not create the key"
    );
    assert!(!semaphore.release_if_exists(1).await.unwrap());
    assert_eq!(count(&raw, &name).await, None);
    assert_eq!(semaphore.available_permits().await.unwrap(), 0);
    assert!(published(&mut rx, &channel).await.is_empty());

    // release on a missing key creates it.
    semaphore.release(1).await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1"));
    assert_eq!(published(&mut rx, &channel).await, ["1"]);
    semaphore.delete().await.unwrap();

    // With a TTL: SET PX; INCRBY/DECRBY keep it; addPermits and drainPermits drop it.
    assert!(
        semaphore
            .try_set_permits_with_ttl(4, Duration::from_secs(10))
            .await
            .unwrap()
    );
    let ttl = pttl(&raw, &name).await;
    assert!((5_000..=10_000).contains(&ttl), "PTTL {ttl}");
    assert_eq!(published(&mut rx, &channel).await, ["4"]);
    semaphore.try_acquire(1).await.unwrap().unwrap().forget();
    semaphore.release(1).await.unwrap();
    assert!(
        pttl(&raw, &name).await > 0,
        "acquire and release keep the TTL"
    );
    assert_eq!(published(&mut rx, &channel).await, ["4"]);
    assert_eq!(semaphore.add_permits(1).await.unwrap(), 5);
    assert_eq!(
        pttl(&raw, &name).await,
        -1,
        "addPermits drops the TTL (Redisson's SET)"
    );
    assert_eq!(published(&mut rx, &channel).await, ["5"]);

    // A zero or negative pool is set, and not published.
    let other = client.get_semaphore(format!("{name}-neg"));
    assert!(other.try_set_permits(-2).await.unwrap());
    assert_eq!(
        count(&raw, &format!("{name}-neg")).await.as_deref(),
        Some("-2")
    );
    let (_s2, mut rx2) = listen(&server, "redisson_sc:*").await;
    assert!(drain(&mut rx2, Duration::from_millis(200)).await.is_empty());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn braces_and_name_mapper_shape_the_key_and_channel() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = server
        .client_with(
            server
                .config()
                .name_mapper(redisson_lock::PrefixNameMapper::new("app1:")),
        )
        .await;
    let name = key("sem{tag}");
    let (_subscriber, mut rx) = listen(&server, "redisson_sc:*").await;
    let semaphore = client.get_semaphore(&name);
    assert_eq!(semaphore.name(), name);
    assert_eq!(semaphore.raw_name(), format!("app1:{name}"));
    semaphore.release(2).await.unwrap();
    assert_eq!(
        count(&raw, &format!("app1:{name}")).await.as_deref(),
        Some("2")
    );
    // A name with braces: its channel is not wrapped again (docs/protocol.md §19.1).
    let channel = format!("redisson_sc:app1:{name}");
    assert_eq!(published(&mut rx, &channel).await, ["2"]);
    client.shutdown().await.unwrap();
}

/// Five waiters of one client; a message of 3 wakes exactly 3 of them (3 attempts), and
/// a release that publishes 3 lets exactly 3 through while the other 2 keep waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_of_three_wakes_three_of_five_waiters() {
    let Bed(_server, client, raw, name) = Bed::new("sem-budget").await;
    let channel = format!("redisson_sc:{{{name}}}");
    let semaphore = client.get_semaphore(&name);
    // Both scripts in the server's cache (no NOSCRIPT round in the counts below).
    semaphore.release(1).await.unwrap();
    semaphore.try_acquire(1).await.unwrap().unwrap().forget();
    // The waiters one by one, each asleep before the next: the first tries, subscribes
    // and tries again; the others join its subscription and try once.
    reset_stats(&raw).await;
    let mut waiters = Vec::new();
    for attempts in [2, 3, 4, 5, 6] {
        let semaphore = semaphore.clone();
        waiters.push(tokio::spawn(async move {
            semaphore.acquire(1).await.map(|p| p.forget())
        }));
        assert!(
            asleep(&raw, &channel, attempts).await,
            "waiter {} never made its attempt",
            waiters.len()
        );
    }
    assert!(eventually(Duration::from_secs(5), || numsub_is(&raw, &channel, 1)).await);
    // Every waiter is asleep; none re-checks before 2 s, and this part takes < 1 s.
    assert_eq!(script_calls(&raw).await, 6, "a waiter tried more than once");
    reset_stats(&raw).await;

    // A bare message of 3 with no permits: 3 waiters retry, in vain (a 4th would follow
    // within milliseconds).
    let _: i64 = raw.publish(&channel, "3").await.unwrap();
    assert!(calls_reach(&raw, 3).await, "a message of 3 woke nobody");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        script_calls(&raw).await,
        3,
        "a message of 3 wakes exactly 3 waiters"
    );
    // 0, negatives and garbage wake nobody: a message of 1 after them (in order on the
    // same channel) wakes one, once they were all read.
    for payload in ["0", "-1", "abc", "1"] {
        let _: i64 = raw.publish(&channel, payload).await.unwrap();
    }
    assert!(calls_reach(&raw, 4).await, "a message of 1 woke nobody");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(script_calls(&raw).await, 4, "0, -1 and abc woke someone");

    // A release that publishes 3: exactly 3 of 5 acquire; 3 attempts + the release.
    semaphore.release(3).await.unwrap();
    assert!(
        eventually(Duration::from_secs(1), || async {
            waiters.iter().filter(|w| w.is_finished()).count() == 3
        })
        .await
    );
    assert_eq!(script_calls(&raw).await, 4 + 1 + 3);
    assert_eq!(count(&raw, &name).await.as_deref(), Some("0"));
    // The other two keep waiting through their re-checks (2 s after their last try).
    assert!(
        poll_every(Duration::from_secs(5), Duration::from_millis(50), || {
            calls_reach(&raw, 4 + 1 + 3 + 2)
        })
        .await,
        "the two left never re-checked"
    );
    assert_eq!(waiters.iter().filter(|w| w.is_finished()).count(), 3);

    semaphore.release(2).await.unwrap();
    for waiter in waiters {
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(2), waiter)
                .await
                .expect("the last two waiters acquire")
                .unwrap()
                .unwrap(),
            1
        );
    }
    client.shutdown().await.unwrap();
}

async fn numsub_is(raw: &redisson_lock::fred::prelude::Client, channel: &str, n: i64) -> bool {
    numsub(raw, channel).await == n
}

/// Whether at least `n` scripts ran since the last `CONFIG RESETSTAT`, within 5 s.
async fn calls_reach(raw: &redisson_lock::fred::prelude::Client, n: u64) -> bool {
    eventually(Duration::from_secs(5), || async {
        script_calls(raw).await >= n
    })
    .await
}

/// Whether, within 5 s, a connection is subscribed to `channel` and `attempts` scripts ran
/// since the last `CONFIG RESETSTAT`: a waiter whose attempt after subscribing ran (its
/// wake-up enabled before it) is asleep. The acquire script must be in the server's
/// cache (a `NOSCRIPT` answer is counted too).
async fn asleep(raw: &redisson_lock::fred::prelude::Client, channel: &str, attempts: u64) -> bool {
    eventually(Duration::from_secs(5), || async {
        numsub(raw, channel).await >= 1 && script_calls(raw).await >= attempts
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_acquire_for_waits_its_budget_and_wakes_on_release() {
    let Duo(_server, [a, b], raw, name) = Duo::new("sem-timing").await;
    let waiting = a.get_semaphore(&name);
    let releasing = b.get_semaphore(&name);

    let started = Instant::now();
    assert!(
        waiting
            .try_acquire_for(1, Duration::from_millis(400))
            .await
            .unwrap()
            .is_none()
    );
    let took = started.elapsed();
    println!("try_acquire_for(400 ms) with no permit: {took:?}");
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(took < Duration::from_millis(1_500), "{took:?}");

    // Another process releases 200 ms into a 5 s wait: the waiter gets it promptly.
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let at = Instant::now();
        releasing.release(1).await.unwrap();
        at
    });
    let started = Instant::now();
    let permit = waiting
        .try_acquire_for(1, Duration::from_secs(5))
        .await
        .unwrap()
        .expect("released in time");
    let woke = Instant::now();
    let released_at = release.await.unwrap();
    println!(
        "acquired {:?} after the release (waited {:?})",
        woke - released_at,
        woke - started
    );
    assert!(woke - released_at < Duration::from_millis(500));
    assert!(
        woke - started < Duration::from_secs(2),
        "woken by the message, not the re-check"
    );
    permit.release().await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1"));
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// A change nobody published (a raw SET) is found by the waiter's bounded re-check.
#[tokio::test]
async fn a_waiter_rechecks_without_a_message() {
    let Bed(_server, client, raw, name) = Bed::new("sem-recheck").await;
    let semaphore = client.get_semaphore(&name);
    // The script in the server's cache; then the waiter tries, subscribes, tries again.
    assert!(semaphore.try_acquire(1).await.unwrap().is_none());
    reset_stats(&raw).await;
    let waiter = {
        let semaphore = semaphore.clone();
        tokio::spawn(async move { semaphore.acquire(1).await.map(|p| p.forget()) })
    };
    let channel = format!("redisson_sc:{{{name}}}");
    assert!(asleep(&raw, &channel, 2).await, "the waiter never slept");
    let _: () = raw.set(&name, 1, None, None, false).await.unwrap();
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(4), waiter)
        .await
        .expect("the waiter re-checks within 2 s")
        .unwrap()
        .unwrap();
    println!("found the unpublished permit after {:?}", started.elapsed());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_dropped_guard_gives_its_permits_back() {
    let Bed(server, client, raw, name) = Bed::new("sem-guard").await;
    let channel = format!("redisson_sc:{{{name}}}");
    let semaphore = client.get_semaphore(&name);
    semaphore.try_set_permits(3).await.unwrap();
    let (_subscriber, mut rx) = listen(&server, &channel).await;

    let permits = semaphore.acquire(2).await.unwrap();
    assert_eq!(permits.permits(), 2);
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1"));
    drop(permits);
    assert!(
        eventually(Duration::from_secs(2), || async {
            count(&raw, &name).await.as_deref() == Some("3")
        })
        .await,
        "the dropped guard's permits came back"
    );
    assert_eq!(published(&mut rx, &channel).await, ["3"]);

    let kept = semaphore.acquire(1).await.unwrap();
    assert_eq!(kept.forget(), 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        count(&raw, &name).await.as_deref(),
        Some("2"),
        "forget keeps them taken"
    );

    let explicit = semaphore.acquire(2).await.unwrap();
    explicit.release().await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("2"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_dropped_acquire_leaves_no_subscription() {
    let Bed(_server, client, raw, name) = Bed::new("sem-cancel").await;
    let channel = format!("redisson_sc:{{{name}}}");
    let semaphore = client.get_semaphore(&name);
    let outcome = tokio::time::timeout(Duration::from_millis(300), semaphore.acquire(1)).await;
    assert!(outcome.is_err(), "no permit: still waiting");
    assert!(
        eventually(Duration::from_secs(3), || numsub_is(&raw, &channel, 0)).await,
        "the dropped waiter's subscription stayed"
    );
    assert_eq!(client.subscribed_channels(), 0);
    assert_eq!(
        count(&raw, &name).await,
        None,
        "nothing taken, nothing created"
    );
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_and_wrong_type() {
    let Bed(_server, client, raw, name) = Bed::new("sem-bad").await;
    let semaphore = client.get_semaphore(&name);
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument(_)));
    // 0 permits is a no-op, as in Redisson: tests/synchronizers/zero_permits.rs.
    assert!(invalid(
        semaphore
            .try_set_permits_with_ttl(1, Duration::from_micros(10))
            .await
            .map(drop)
    ));
    assert!(invalid(
        client.get_semaphore("").available_permits().await.map(drop)
    ));
    assert_eq!(count(&raw, &name).await, None, "nothing was written");

    let _: () = raw.hset(&name, ("a", "1")).await.unwrap();
    let wrong =
        |r: Result<(), Error>| matches!(r, Err(Error::WrongType { ref key }) if *key == name);
    assert!(wrong(semaphore.try_acquire(1).await.map(drop)));
    assert!(wrong(semaphore.acquire(1).await.map(drop)));
    assert!(wrong(semaphore.release(1).await));
    assert!(wrong(semaphore.release_if_exists(1).await.map(drop)));
    assert!(wrong(semaphore.add_permits(1).await.map(drop)));
    assert!(wrong(semaphore.drain_permits().await.map(drop)));
    assert!(wrong(semaphore.try_set_permits(1).await.map(drop)));
    assert!(wrong(semaphore.available_permits().await.map(drop)));
    assert_eq!(
        hgetall(&raw, &name).await,
        [("a".to_string(), "1".to_string())]
    );
    client.shutdown().await.unwrap();
}

/// An acquire whose reply was lost (Redis paused past the response timeout) is not sent
/// again: the caller gets `OutcomeUnknown`, and the script ran exactly once.
#[tokio::test]
async fn a_lost_acquire_reply_is_outcome_unknown_and_not_resent() {
    let server = RedisServer::start_pausable();
    let raw = server.raw().await;
    let client = server
        .client_with(server.config().response_timeout(Duration::from_millis(300)))
        .await;
    let name = key("sem-lost");
    let semaphore = client.get_semaphore(&name);
    semaphore.try_set_permits(3).await.unwrap();
    // Both scripts in the server's cache: an EVALSHA that found none would answer
    // NOSCRIPT after the pause, and its EVAL would never be sent.
    semaphore.release(1).await.unwrap();
    semaphore.try_acquire(1).await.unwrap().unwrap().forget();

    let pause = server.stall(0.8).await;
    let error = semaphore.try_acquire(1).await.unwrap_err();
    println!("{error}");
    assert!(
        matches!(
            error,
            Error::OutcomeUnknown {
                operation: "semaphore acquire",
                ..
            }
        ),
        "{error:?}"
    );
    pause.await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        count(&raw, &name).await.as_deref(),
        Some("2"),
        "the acquire ran once after the pause, and was not sent again"
    );

    // A release whose reply is lost: the same.
    let pause = server.stall(0.8).await;
    assert!(matches!(
        semaphore.release(1).await,
        Err(Error::OutcomeUnknown { .. })
    ));
    pause.await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        count(&raw, &name).await.as_deref(),
        Some("3"),
        "released once"
    );
    client.shutdown().await.unwrap();
}

/// A primary with two replicas behind a sentinel; the replicas frozen: an acquire is
/// undone exactly once and fails with `NoSyncedReplicas`; `add_permits` is applied once
/// (Redisson applies it up to five times, docs/protocol.md §24.4) and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_replica_acks_an_acquire_is_undone_once_and_add_permits_applied_once() {
    let primary = RedisServer::start();
    let replicas = [
        RedisServer::start_replica_of(&primary),
        RedisServer::start_replica_of(&primary),
    ];
    for replica in &replicas {
        wait_replica_linked(replica.port, Duration::from_secs(20));
    }
    let sentinel = SentinelServer::start(primary.port, 10_000);
    sentinel.wait_for(|s| s.known_replicas() == 2, "sentinel to see both replicas");
    let config = Config::builder()
        .url(sentinel.url())
        .check_lock_synced_replicas(true)
        .build()
        .unwrap();
    let client = Client::connect(config).await.unwrap();
    let raw = primary.raw().await;
    let name = key("sem-sync");
    let channel = format!("redisson_sc:{{{name}}}");
    let semaphore: Semaphore = client.get_semaphore(&name);
    assert!(semaphore.try_set_permits(3).await.unwrap());
    let permit = semaphore.acquire(1).await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("2"));

    // Every script in the server's cache (no NOSCRIPT round in the counts below).
    semaphore.release(1).await.unwrap();
    semaphore.try_acquire(1).await.unwrap().unwrap().forget();
    assert_eq!(semaphore.add_permits(0).await.unwrap(), 2);
    let (_subscriber, mut rx) = listen(&primary, &channel).await;
    for replica in &replicas {
        replica.pause();
    }
    reset_stats(&raw).await;
    let started = Instant::now();
    let error = semaphore.try_acquire(1).await.unwrap_err();
    println!(
        "try_acquire without replica acks: {error} after {:?}",
        started.elapsed()
    );
    assert!(
        matches!(error, Error::NoSyncedReplicas { replicas: 2, .. }),
        "{error:?}"
    );
    assert_eq!(
        count(&raw, &name).await.as_deref(),
        Some("2"),
        "given back exactly once"
    );
    assert_eq!(
        script_calls(&raw).await,
        2,
        "one acquire and one undo; the acquire is not run again"
    );
    assert_eq!(
        published(&mut rx, &channel).await,
        ["2"],
        "the undo's release"
    );

    reset_stats(&raw).await;
    let started = Instant::now();
    assert_eq!(semaphore.add_permits(1).await.unwrap(), 3);
    println!("add_permits without replica acks: {:?}", started.elapsed());
    assert_eq!(
        count(&raw, &name).await.as_deref(),
        Some("3"),
        "applied once, not five times"
    );
    assert_eq!(script_calls(&raw).await, 1);
    assert_eq!(published(&mut rx, &channel).await, ["3"]);

    // A release no replica acknowledged happened: Ok (Redisson throws after applying it).
    reset_stats(&raw).await;
    semaphore.release(1).await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("4"));
    assert_eq!(script_calls(&raw).await, 1);
    assert_eq!(published(&mut rx, &channel).await, ["4"]);

    for replica in &replicas {
        replica.resume();
    }
    permit.release().await.unwrap();
    assert_eq!(count(&raw, &name).await.as_deref(), Some("5"));
    client.shutdown().await.unwrap();
}

/// The blocking API: the same semaphore from plain threads; a dropped guard's permits
/// come back.
#[cfg(feature = "blocking")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocking_semaphore_shares_the_permits() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let name = key("sem-blocking");
    let url = server.url();
    let thread_name = name.clone();
    let taken = std::thread::spawn(move || {
        let client =
            redisson_lock::blocking::Client::connect(Config::from_url(&url).unwrap()).unwrap();
        let semaphore = client.get_semaphore(&thread_name);
        assert!(semaphore.try_set_permits(2).unwrap());
        let two = semaphore.acquire(2).unwrap();
        assert!(semaphore.try_acquire(1).unwrap().is_none());
        drop(two);
        let one = semaphore
            .try_acquire_for(1, Duration::from_secs(2))
            .unwrap()
            .expect("the dropped guard's permits came back");
        let kept = one.forget();
        client.shutdown().unwrap();
        kept
    })
    .join()
    .unwrap();
    assert_eq!(taken, 1);
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1"));
}

/// On a Redis 7 cluster: every name (braced ones too) works on its node, releases are
/// published with `SPUBLISH` (as Java's sharded mode), and a waiter of another client is
/// woken by them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_messages_on_a_cluster() {
    let cluster = support::cluster::Cluster::start();
    let client = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let other = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let raw = cluster.raw().await;
    let mut names: Vec<String> = (0..12).map(|i| key(&format!("csem-{i}"))).collect();
    names.push(key("csem{tag}"));
    for name in &names {
        let semaphore = client.get_semaphore(name);
        assert!(semaphore.try_set_permits(2).await.unwrap());
        semaphore.try_acquire(2).await.unwrap().unwrap().forget();
        semaphore.release(1).await.unwrap();
        assert_eq!(count(&raw, name).await.as_deref(), Some("1"), "{name}");
    }

    let name = names.last().unwrap().clone();
    let channel = format!("redisson_sc:{name}");
    let sub = cluster.raw().await;
    let mut rx = sub.message_rx();
    sub.ssubscribe(&channel).await.unwrap();
    client
        .get_semaphore(&name)
        .try_acquire(1)
        .await
        .unwrap()
        .unwrap()
        .forget();
    let waiter = {
        let semaphore = other.get_semaphore(&name);
        tokio::spawn(async move {
            semaphore.acquire(1).await.unwrap().forget();
            Instant::now()
        })
    };
    // The waiter is subscribed on the slot's owner (ours is there too): waiting.
    let owner = tokio::task::block_in_place(|| cluster.owner_of_key(&name));
    assert!(
        eventually(Duration::from_secs(5), || async {
            support::cluster::shard_subscribers(owner, &channel).await == 2
        })
        .await,
        "the waiter never subscribed on {owner}"
    );
    cluster.reset_stats().await;
    let released = Instant::now();
    client.get_semaphore(&name).release(1).await.unwrap();
    let acquired = tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the sharded message woke the other client's waiter")
        .unwrap();
    println!("cluster wake-up: {:?}", acquired - released);
    let message = tokio::time::timeout(Duration::from_secs(2), rx.recv())
        .await
        .expect("the sharded subscriber got the release's count")
        .unwrap();
    assert_eq!(message.value.as_bytes(), Some(&b"1"[..]));
    assert_eq!(cluster.calls("spublish").await, 1);
    assert_eq!(cluster.calls("publish").await, 0);
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
    let _ = sub.quit().await;
}

/// An acquire dropped while its script is in flight (Redis paused) leaks nothing: the
/// attempt is finished in the background and the permit it took is given back.
#[tokio::test]
async fn an_acquire_dropped_mid_call_gives_back_what_it_took() {
    let server = RedisServer::start_pausable();
    let raw = server.raw().await;
    let client = server.client().await;
    let name = key("sem-drop-mid");
    let semaphore = client.get_semaphore(&name);
    semaphore.try_set_permits(1).await.unwrap();
    semaphore
        .try_acquire(1)
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    reset_stats(&raw).await;

    let pause = server.stall(0.6).await;
    let dropped = tokio::time::timeout(Duration::from_millis(200), semaphore.acquire(1)).await;
    assert!(dropped.is_err(), "the acquire was still in flight");
    pause.await.unwrap();
    assert!(
        eventually(Duration::from_secs(2), || async {
            count(&raw, &name).await.as_deref() == Some("1")
        })
        .await,
        "the dropped acquire's permit was not given back: {:?}",
        count(&raw, &name).await
    );
    assert_eq!(
        script_calls(&raw).await,
        2,
        "the acquire ran (after the pause), then the give-back"
    );
    client.shutdown().await.unwrap();
}

/// The undo of an unsynced acquire is a release with a latch key: sent twice (its first
/// reply lost), it gives back once.
#[tokio::test]
async fn the_undo_release_with_a_latch_gives_back_once() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let name = key("sem-latch");
    let channel = format!("redisson_sc:{{{name}}}");
    let latch = format!(
        "redisson_unlock_latch:{{{name}}}:{}",
        uuid::Uuid::new_v4().simple()
    );
    let (_subscriber, mut rx) = listen(&server, &channel).await;
    for _ in 0..2 {
        let applied: i64 = raw
            .eval(
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/lua/semaphore_release.lua"
                )),
                vec![name.clone(), channel.clone(), latch.clone()],
                vec!["2", "PUBLISH", "0", "10000"],
            )
            .await
            .unwrap();
        assert_eq!(applied, 1);
    }
    assert_eq!(
        count(&raw, &name).await.as_deref(),
        Some("2"),
        "given back once"
    );
    assert_eq!(published(&mut rx, &channel).await, ["2"]);
    let ttl = pttl(&raw, &latch).await;
    assert!((1..=10_000).contains(&ttl), "the latch expires: {ttl}");
}

/// A huge count (a pool of two billion permits, as a Java app may set) wakes the waiters
/// at once and does not stall the client's pub/sub loop: a message `n` costs what the
/// channel's waiters need, not `n` wake-ups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_count_wakes_at_once_and_stalls_nothing() {
    let Bed(_server, client, raw, name) = Bed::new("sem-huge").await;
    let semaphore = client.get_semaphore(&name);
    assert!(semaphore.try_acquire(1).await.unwrap().is_none());
    reset_stats(&raw).await;
    let waiter = {
        let semaphore = semaphore.clone();
        tokio::spawn(async move { semaphore.acquire(1).await.unwrap().forget() })
    };
    let channel = format!("redisson_sc:{{{name}}}");
    assert!(asleep(&raw, &channel, 2).await, "the waiter never slept");
    let started = Instant::now();
    assert_eq!(
        semaphore.add_permits(2_000_000_000).await.unwrap(),
        2_000_000_000
    );
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the waiter was woken at once")
        .unwrap();
    // A second waiter on another name is served by the same pub/sub loop.
    let other = client.get_semaphore(format!("{name}-other"));
    let second = {
        let other = other.clone();
        tokio::spawn(async move { other.acquire(1).await.unwrap().forget() })
    };
    let other_channel = format!("redisson_sc:{{{name}-other}}");
    assert!(
        eventually(Duration::from_secs(5), || async {
            numsub(&raw, &other_channel).await >= 1
        })
        .await,
        "the second waiter never subscribed"
    );
    other.release(1).await.unwrap();
    tokio::time::timeout(Duration::from_secs(1), second)
        .await
        .expect("the pub/sub loop is not stalled")
        .unwrap();
    println!("both woken within {:?}", started.elapsed());
    assert_eq!(count(&raw, &name).await.as_deref(), Some("1999999999"));
    client.shutdown().await.unwrap();
}
