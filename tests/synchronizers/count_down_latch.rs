//! `CountDownLatch` against docs/protocol.md §21: the count key and the channel's
//! messages after each operation, read by a raw client and a raw subscriber; waiting (one
//! count down releasing 64 waiters, timeouts, a stray `0`, `delete`, a dropped wait,
//! shutdown); a name mapper, braces, a cluster. Real Redisson's `RCountDownLatch` on the
//! same names: `tests/java/synchronizers.rs`.

use crate::support;
use support::*;

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Error, PrefixNameMapper};

/// `redisson_countdownlatch__channel__{N}`: braces always added.
fn channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// The raw value of the count key, `None` when missing.
async fn raw_count(raw: &Client, key: &str) -> Option<String> {
    raw.get(key).await.unwrap()
}

/// Waits until `n` connections listen on `channel` (the waiters subscribed).
async fn subscribed(raw: &Client, channel: &str, n: i64) {
    assert!(
        eventually(Duration::from_secs(10), || async {
            numsub(raw, channel).await == n
        })
        .await,
        "{n} subscriber(s) on {channel}"
    );
}

#[tokio::test]
async fn raw_state_and_messages_after_each_operation() {
    let Bed(server, client, raw, name) = Bed::new("latch-raw").await;
    let ch = channel(&name);
    let (_listener, mut rx) = listen(&server, "redisson_countdownlatch__channel__*").await;
    let latch = client.get_count_down_latch(&name);
    assert_eq!(latch.channel(), ch);
    let quiet = Duration::from_millis(300);

    // Open before anything: no key, count 0.
    assert_eq!(latch.get_count().await.unwrap(), 0);
    assert_eq!(raw_count(&raw, &name).await, None);

    // trySetCount(2): a plain string "2", no TTL, `1` published.
    assert!(latch.try_set_count(2).await.unwrap());
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("2"));
    let kind: String = raw.r#type(&name).await.unwrap();
    assert_eq!(kind, "string");
    assert_eq!(pttl(&raw, &name).await, -1, "Redisson never sets a TTL");
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(ch.clone(), b"1".to_vec())]
    );

    // A second trySetCount changes nothing and publishes nothing.
    assert!(!latch.try_set_count(5).await.unwrap());
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("2"));
    assert!(drain(&mut rx, quiet).await.is_empty());

    // countDown 2 → 1: DECR, nothing published.
    latch.count_down().await.unwrap();
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("1"));
    assert_eq!(latch.get_count().await.unwrap(), 1);
    assert!(drain(&mut rx, quiet).await.is_empty());

    // countDown 1 → 0: the key is deleted and `0` published.
    latch.count_down().await.unwrap();
    assert_eq!(raw_count(&raw, &name).await, None);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(ch.clone(), b"0".to_vec())]
    );

    // countDown on an open latch: no `-1` left behind, nothing published.
    latch.count_down().await.unwrap();
    assert_eq!(raw_count(&raw, &name).await, None);
    assert!(drain(&mut rx, quiet).await.is_empty());

    // A negative count is stored as given and reads back (Java's getCount → -3).
    assert!(latch.try_set_count(-3).await.unwrap());
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("-3"));
    assert_eq!(latch.get_count().await.unwrap(), -3);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(ch.clone(), b"1".to_vec())]
    );
    assert!(
        latch.wait_for(Duration::ZERO).await.unwrap(),
        "a count below zero is open"
    );

    // delete: the key goes, and `0` (not Java's `1`) is published; again: nothing.
    assert!(latch.delete().await.unwrap());
    assert_eq!(raw_count(&raw, &name).await, None);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(ch.clone(), b"0".to_vec())]
    );
    assert!(!latch.delete().await.unwrap());
    assert!(drain(&mut rx, quiet).await.is_empty());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_name_with_braces_keeps_them_inside_new_ones() {
    let Bed(server, client, raw, name) = Bed::new("latch-braces").await;
    let name = format!("{name}{{tag}}");
    let ch = format!("redisson_countdownlatch__channel__{{{name}}}");
    let (_listener, mut rx) = listen(&server, "redisson_countdownlatch__channel__*").await;
    let latch = client.get_count_down_latch(&name);
    assert_eq!(latch.channel(), ch);

    assert!(latch.try_set_count(1).await.unwrap());
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("1"));
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(ch.clone(), b"1".to_vec())]
    );
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_secs(20)).await }
    });
    subscribed(&raw, &ch, 1).await; // NUMSUB does not count our pattern listener
    let other = server.client().await;
    other
        .get_count_down_latch(&name)
        .count_down()
        .await
        .unwrap();
    assert!(waiter.await.unwrap().unwrap());
    other.shutdown().await.unwrap();
    assert_eq!(
        messages(&mut rx, Duration::from_secs(5)).await,
        vec![(ch, b"0".to_vec())]
    );
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn one_count_down_releases_64_waiters_through_one_subscription() {
    let Duo(_server, [client, other], raw, name) = Duo::new("latch-64").await;
    let latch = client.get_count_down_latch(&name);
    assert!(latch.try_set_count(1).await.unwrap());
    let started = Instant::now();
    let waiters: Vec<_> = (0..64)
        .map(|_| {
            let latch = latch.clone();
            tokio::spawn(async move {
                latch.wait().await.unwrap();
                Instant::now()
            })
        })
        .collect();
    subscribed(&raw, &channel(&name), 1).await;
    assert_eq!(client.subscribed_channels(), 1, "64 waiters, one channel");
    // Every waiter is asleep (none returned) before the count down.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(waiters.iter().all(|w| !w.is_finished()));

    let counted = Instant::now();
    other
        .get_count_down_latch(&name)
        .count_down()
        .await
        .unwrap();
    let mut slowest = Duration::ZERO;
    for waiter in waiters {
        let done = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("every waiter released")
            .unwrap();
        slowest = slowest.max(done.saturating_duration_since(counted));
    }
    eprintln!(
        "64 waiters released {slowest:?} after the count down (set up in {:?})",
        counted - started
    );
    assert!(
        slowest < Duration::from_secs(2),
        "released after {slowest:?}"
    );
    // The shared subscription goes once nobody waits.
    assert!(
        eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel(&name)).await == 0
        })
        .await
    );
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test]
async fn wait_for_returns_false_at_its_timeout_and_true_when_opened() {
    let Duo(_server, [client, other], raw, name) = Duo::new("latch-timing").await;
    let latch = client.get_count_down_latch(&name);

    // Open latch: true at once, no subscription.
    let t = Instant::now();
    assert!(latch.wait_for(Duration::from_secs(5)).await.unwrap());
    assert!(t.elapsed() < Duration::from_millis(500));
    assert_eq!(numsub(&raw, &channel(&name)).await, 0);

    // Closed: false after the timeout, never before, and not much after. "Not much after"
    // is asked up to three times: a waiter that slept past its deadline (to the 2 s
    // re-check) would do so every time, while a stall of a loaded CI machine (one run
    // took 2.4 s beside the other lane) does not repeat.
    assert!(latch.try_set_count(1).await.unwrap());
    let mut tries = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        assert!(!latch.wait_for(Duration::from_millis(400)).await.unwrap());
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(400),
            "wait_for(400 ms) gave up after {took:?}"
        );
        tries.push(took);
        if took < Duration::from_millis(1400) {
            break;
        }
    }
    assert!(
        tries
            .last()
            .is_some_and(|took| *took < Duration::from_millis(1400)),
        "wait_for(400 ms) took {tries:?}"
    );

    // Opened by another client 300 ms in: true, within a moment of the count down.
    let t = Instant::now();
    let counter = tokio::spawn({
        let latch = other.get_count_down_latch(&name);
        async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            latch.count_down().await.unwrap();
            Instant::now()
        }
    });
    assert!(latch.wait_for(Duration::from_secs(10)).await.unwrap());
    let released = Instant::now();
    let counted = counter.await.unwrap();
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(
        released.saturating_duration_since(counted) < Duration::from_millis(700),
        "released {:?} after the count down",
        released.saturating_duration_since(counted)
    );
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

/// Java's waiter spins on GET and ignores its timeout after a stray `0` (docs/protocol.md
/// §21.3); the crate's reads the count once and sleeps on to its deadline.
#[tokio::test]
async fn a_stray_zero_costs_one_get_and_the_waiter_keeps_its_timeout() {
    let Bed(_server, client, raw, name) = Bed::new("latch-stray").await;
    let latch = client.get_count_down_latch(&name);
    assert!(latch.try_set_count(2).await.unwrap());
    let t = Instant::now();
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_millis(1500)).await }
    });
    subscribed(&raw, &channel(&name), 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    reset_stats(&raw).await;
    let _: i64 = raw.publish(channel(&name), "0").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let gets_after_stray = command_calls(&raw, "get").await;
    let opened = waiter.await.unwrap().unwrap();
    let took = t.elapsed();
    let gets_total = command_calls(&raw, "get").await;
    eprintln!(
        "stray 0: {gets_after_stray} GET at once, {gets_total} in all, returned after {took:?}"
    );
    assert!(!opened, "the count is still 2");
    assert_eq!(gets_after_stray, 1, "one GET for the stray 0");
    assert!(gets_total <= 3, "{gets_total} GETs: the waiter spun");
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_millis(2500),
        "wait_for(1500 ms) took {took:?}"
    );
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("2"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn count_down_and_wait_is_a_barrier() {
    let Duo(_server, [client, other], raw, name) = Duo::new("latch-barrier").await;
    assert!(
        client
            .get_count_down_latch(&name)
            .try_set_count(3)
            .await
            .unwrap()
    );
    let parties: Vec<_> = [&client, &other, &client]
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let latch = c.get_count_down_latch(&name);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200 * i as u64)).await;
                latch.count_down_and_wait().await.unwrap();
                Instant::now()
            })
        })
        .collect();
    let mut released = Vec::new();
    for party in parties {
        released.push(party.await.unwrap());
    }
    let first = *released.iter().min().unwrap();
    let last = *released.iter().max().unwrap();
    assert!(
        last - first < Duration::from_millis(500),
        "released together: {:?}",
        last - first
    );
    assert_eq!(raw_count(&raw, &name).await, None);
    // The last party returned without waiting; a timed one on a closed latch times out.
    let latch = client.get_count_down_latch(&name);
    assert!(latch.try_set_count(2).await.unwrap());
    let t = Instant::now();
    assert!(
        !latch
            .count_down_and_wait_for(Duration::from_millis(300))
            .await
            .unwrap()
    );
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("1"));
    assert!(
        latch
            .count_down_and_wait_for(Duration::from_millis(300))
            .await
            .unwrap()
    );
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_dropped_wait_leaves_no_subscription() {
    let Bed(_server, client, raw, name) = Bed::new("latch-cancel").await;
    let latch = client.get_count_down_latch(&name);
    assert!(latch.try_set_count(1).await.unwrap());
    // Dropped at every stage: before the first read, during the subscription, asleep.
    for after_ms in [0u64, 1, 2, 3, 5, 8, 13, 50, 300] {
        let _ = tokio::time::timeout(Duration::from_millis(after_ms), latch.wait()).await;
    }
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait().await }
    });
    subscribed(&raw, &channel(&name), 1).await;
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    assert!(
        eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel(&name)).await == 0 && client.subscribed_channels() == 0
        })
        .await,
        "still subscribed: {} connection(s), {} local channel(s)",
        numsub(&raw, &channel(&name)).await,
        client.subscribed_channels()
    );
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("1"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_wakes_waiters_and_bad_input_is_typed() {
    let Bed(_server, client, raw, name) = Bed::new("latch-misc").await;
    let latch = client.get_count_down_latch(&name);
    assert!(matches!(
        client.get_count_down_latch("").get_count().await,
        Err(Error::InvalidArgument(_))
    ));
    let hash = format!("{name}:hash");
    let _: i64 = raw.hset(&hash, ("f", "v")).await.unwrap();
    let wrong = client.get_count_down_latch(&hash);
    assert!(matches!(
        wrong.get_count().await,
        Err(Error::WrongType { .. })
    ));
    assert!(matches!(
        wrong.count_down().await,
        Err(Error::WrongType { .. })
    ));
    let text = format!("{name}:text");
    let _: () = raw.set(&text, "abc", None, None, false).await.unwrap();
    let wrong = client.get_count_down_latch(&text);
    assert!(matches!(
        wrong.get_count().await,
        Err(Error::WrongType { .. })
    ));
    assert!(matches!(
        wrong.count_down().await,
        Err(Error::WrongType { .. })
    ));

    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait().await }
    });
    subscribed(&raw, &channel(&name), 1).await;
    client.shutdown().await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken by the shutdown")
        .unwrap();
    assert!(matches!(outcome, Err(Error::Shutdown)), "{outcome:?}");
    assert!(matches!(latch.count_down().await, Err(Error::Shutdown)));
}

#[tokio::test]
async fn the_name_mapper_maps_the_key_and_the_channel() {
    let Bed(server, client, raw, name) = Bed::with_config("latch-mapper", |c| {
        c.name_mapper(PrefixNameMapper::new("app1:"))
    })
    .await;
    let latch = client.get_count_down_latch(&name);
    let mapped = format!("app1:{name}");
    assert_eq!(latch.name(), name);
    assert_eq!(latch.raw_name(), mapped);
    assert_eq!(latch.channel(), channel(&mapped));
    assert!(latch.try_set_count(1).await.unwrap());
    assert_eq!(raw_count(&raw, &mapped).await.as_deref(), Some("1"));
    assert_eq!(raw_count(&raw, &name).await, None);
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_secs(20)).await }
    });
    subscribed(&raw, &channel(&mapped), 1).await;
    // A client without the mapper, on the mapped name: the same latch.
    let unmapped = server.client().await;
    unmapped
        .get_count_down_latch(&mapped)
        .count_down()
        .await
        .unwrap();
    assert!(waiter.await.unwrap().unwrap());
    unmapped.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

/// On a cluster a braced name's channel hashes to another slot than its key
/// (docs/protocol.md §25.3): Java fails every script with CROSSSLOT; the crate refuses the
/// name before any I/O.
#[tokio::test]
async fn a_cluster_refuses_braced_names_and_serves_the_others() {
    let cluster = support::cluster::Cluster::start();
    let client =
        redisson_lock::Client::connect(redisson_lock::Config::from_url(&cluster.url()).unwrap())
            .await
            .unwrap();
    let raw = cluster.raw().await;
    // What Java hits: any script with these two keys (its trySetCount's) is refused.
    let braced = "jobs{tag}";
    let crossslot = raw
        .eval::<Value, _, _, _>(
            "return redis.call('exists', KEYS[1])",
            vec![braced.to_owned(), channel(braced)],
            Vec::<Value>::new(),
        )
        .await;
    assert!(crossslot.is_err(), "{crossslot:?}");
    let latch = client.get_count_down_latch(braced);
    for outcome in [
        latch.try_set_count(1).await.map(|_| ()),
        latch.count_down().await,
        latch.get_count().await.map(|_| ()),
        latch.wait_for(Duration::from_millis(10)).await.map(|_| ()),
    ] {
        match outcome {
            Err(Error::InvalidArgument(text)) => assert!(text.contains("CROSSSLOT"), "{text}"),
            other => panic!("not refused: {other:?}"),
        }
    }

    let latch = client.get_count_down_latch("jobs-plain");
    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_secs(20)).await }
    });
    // The waiter is waiting: subscribed to the latch's channel.
    assert!(
        eventually(Duration::from_secs(10), || async {
            client.subscribed_channels() == 1
        })
        .await,
        "the waiter never subscribed"
    );
    latch.count_down().await.unwrap();
    assert!(waiter.await.unwrap().unwrap());
    assert_eq!(latch.get_count().await.unwrap(), 0);
    client.shutdown().await.unwrap();
}

/// The blocking latch is the same latch: a thread blocked in `wait` is released by an
/// async client's count down; `wait_for` times out on its own.
#[cfg(feature = "blocking")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocking_latch_waits_on_a_thread() {
    let Bed(server, client, raw, name) = Bed::new("latch-blocking").await;
    let url = server.url();
    let blocking = tokio::task::spawn_blocking(move || {
        redisson_lock::blocking::Client::connect(redisson_lock::Config::from_url(&url).unwrap())
            .unwrap()
    })
    .await
    .unwrap();
    let latch = blocking.get_count_down_latch(&name);
    assert_eq!(latch.name(), name);
    // The thread tells when its bounded wait timed out; it then waits without a bound.
    let (timed_out, told) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn({
        let latch = latch.clone();
        move || {
            assert!(latch.try_set_count(1).unwrap());
            let t = Instant::now();
            assert!(!latch.wait_for(Duration::from_millis(200)).unwrap());
            assert!(t.elapsed() >= Duration::from_millis(200));
            timed_out.send(()).unwrap();
            latch.wait().unwrap();
            latch.get_count().unwrap()
        }
    });
    subscribed(&raw, &channel(&name), 1).await;
    tokio::task::spawn_blocking(move || told.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the bounded wait timed out");
    client
        .get_count_down_latch(&name)
        .count_down()
        .await
        .unwrap();
    let count = tokio::task::spawn_blocking(move || waiter.join().unwrap())
        .await
        .unwrap();
    assert_eq!(count, 0);
    tokio::task::spawn_blocking(move || blocking.shutdown().unwrap())
        .await
        .unwrap();
    client.shutdown().await.unwrap();
}

/// The latch's metrics, recorded by a recorder local to this test's thread (the client's
/// tasks run on this thread's runtime): one count down that opens, one that does not; a
/// wait that opened and one that timed out; the waiters gauge back at 0.
#[cfg(feature = "metrics")]
#[test]
fn latch_metrics() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let Bed(_server, client, _raw, name) = Bed::new("latch-metrics").await;
            let latch = client.get_count_down_latch(&name);
            assert!(latch.try_set_count(2).await.unwrap());
            latch.count_down().await.unwrap();
            assert!(!latch.wait_for(Duration::from_millis(50)).await.unwrap());
            latch.count_down().await.unwrap();
            assert!(latch.wait_for(Duration::from_millis(50)).await.unwrap());
            client.shutdown().await.unwrap();
        });
    });
    let mut seen = std::collections::BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let id = format!("{}{{{}}}", key.name(), labels.join(","));
        let shown = match value {
            DebugValue::Counter(n) => n as f64,
            DebugValue::Gauge(g) => g.0,
            DebugValue::Histogram(h) => h.len() as f64,
        };
        seen.insert(id, shown);
    }
    let get = |id: &str| {
        seen.get(id)
            .copied()
            .unwrap_or_else(|| panic!("{id} in {seen:#?}"))
    };
    assert_eq!(
        get("redisson_lock_latch_count_down_total{opened=false}"),
        1.0
    );
    assert_eq!(
        get("redisson_lock_latch_count_down_total{opened=true}"),
        1.0
    );
    assert_eq!(get("redisson_lock_latch_wait_total{outcome=opened}"), 1.0);
    assert_eq!(
        get("redisson_lock_latch_wait_total{outcome=timed_out}"),
        1.0
    );
    assert_eq!(
        get("redisson_lock_latch_wait_seconds{outcome=timed_out}"),
        1.0
    );
    assert_eq!(get("redisson_lock_waiters{kind=count_down_latch}"), 0.0);
}

/// A count down whose reply is lost (the server stalls past the response timeout) is
/// reported as `OutcomeUnknown` and never sent again: the count went down exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_down_whose_reply_is_lost_is_not_sent_again() {
    let server = RedisServer::start_pausable();
    let client = server
        .client_with(server.config().response_timeout(Duration::from_millis(500)))
        .await;
    let raw = server.raw().await;
    let name = key("latch-lost-reply");
    let latch = client.get_count_down_latch(&name);
    assert!(latch.try_set_count(3).await.unwrap());
    latch.count_down().await.unwrap(); // the script is in the server's cache: 2 left
    let paused = server.stall(1.5).await;
    let outcome = latch.count_down().await;
    assert!(
        matches!(
            &outcome,
            Err(Error::OutcomeUnknown {
                operation: "count_down",
                ..
            })
        ),
        "{outcome:?}"
    );
    paused.await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("1"));
    assert_eq!(latch.get_count().await.unwrap(), 1);
    client.shutdown().await.unwrap();
}

/// Through Sentinel: the count lands on the primary, the waiter's subscription works, and
/// another client's count down on the primary releases it (the latch never sends `WAIT`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_sentinel() {
    let primary = RedisServer::start();
    let replica = RedisServer::start_replica_of(&primary);
    wait_replica_linked(replica.port, Duration::from_secs(20));
    let sentinel = SentinelServer::start(primary.port, 2000);
    let url = format!(
        "redis-sentinel://127.0.0.1:{}/0?sentinelServiceName=mymaster",
        sentinel.port
    );
    let client = redisson_lock::Client::connect(redisson_lock::Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let raw = primary.raw().await;
    let name = key("latch-sentinel");
    let latch = client.get_count_down_latch(&name);
    assert!(latch.try_set_count(1).await.unwrap());
    assert_eq!(raw_count(&raw, &name).await.as_deref(), Some("1"));
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_secs(20)).await }
    });
    subscribed(&raw, &channel(&name), 1).await;
    let other = primary.client().await;
    other
        .get_count_down_latch(&name)
        .count_down()
        .await
        .unwrap();
    assert!(waiter.await.unwrap().unwrap());
    assert_eq!(command_calls(&raw, "wait").await, 0, "no WAIT for a latch");
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}
