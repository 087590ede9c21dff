//! The `http_service` example's router under real HTTP requests: the requests for one
//! resource that did their work never overlapped (no increment of the resource's value was
//! lost, read back from Redis), a busy resource answers 409 after the wait, work that
//! outlives its lease answers 503 and writes nothing, a request overtaken by a newer holder
//! has its write refused (503), and the value in Redis was written with the highest token,
//! which a stale holder cannot overwrite.

use crate::support;
use support::*;

#[allow(dead_code)] // the example's `main` and demo
#[path = "../../examples/http_service.rs"]
mod service;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use redisson_lock::fencing::FencedWriter;
use redisson_lock::fred::prelude::KeysInterface;
use redisson_lock::{Client, Error};
use service::{Settings, post_work};

/// Serves the example's router on a free loopback port until the test ends.
async fn serve(client: &Client, settings: Settings) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = service::router(client, settings);
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// The value of resource `id` in Redis, read with a plain client.
async fn stored(raw: &redisson_lock::fred::prelude::Client, id: &str) -> Option<i64> {
    raw.get(service::data_key(id)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_for_one_resource_never_overlap() {
    const PER_RESOURCE: usize = 10;
    let ids = ["r1", "r2", "r3"];
    let work_ms = 30;
    let redis = RedisServer::start();
    let client = redis.client().await;
    let raw = redis.raw().await;
    // Several requests fit into one wait (some serialised writes per resource to check),
    // not all of them (some 409s).
    let settings = Settings {
        wait: Duration::from_millis(150),
        lease: Duration::from_secs(10),
    };
    let addr = serve(&client, settings).await;

    let mut running = tokio::task::JoinSet::new();
    for _ in 0..PER_RESOURCE {
        for id in ids {
            running.spawn(async move {
                let started = Instant::now();
                let reply = post_work(addr, id, work_ms).await.unwrap();
                (id, reply, started.elapsed())
            });
        }
    }
    // Per resource: (token, value) of each write, and the number of 409s.
    let mut writes: BTreeMap<&str, Vec<(u64, i64)>> = BTreeMap::new();
    let mut busy: BTreeMap<&str, usize> = BTreeMap::new();
    while let Some(done) = running.join_next().await {
        let (id, reply, took) = done.unwrap();
        match reply.status {
            200 => {
                let token = reply.body["token"].as_u64().expect("a token");
                let value = reply.body["value"].as_i64().expect("a value");
                writes.entry(id).or_default().push((token, value));
            }
            409 => {
                assert_eq!(reply.retry_after.as_deref(), Some("1"), "{id}");
                assert!(took >= settings.wait, "{id}: 409 after {took:?}");
                *busy.entry(id).or_default() += 1;
            }
            other => panic!("{id}: status {other}: {}", reply.body),
        }
    }
    let writer = FencedWriter::new(&client);
    for id in ids {
        let mut done = writes.remove(id).unwrap_or_default();
        done.sort_unstable();
        assert!(done.len() >= 2, "{id}: too few writes to compare: {done:?}");
        // The witness: each request read the value the previous holder wrote. Two that
        // overlapped would have read the same value and both written its successor.
        let values: Vec<i64> = done.iter().map(|&(_, value)| value).collect();
        let expected: Vec<i64> = (1..=done.len() as i64).collect();
        assert_eq!(
            values, expected,
            "{id}: (token, value) in token order: {done:?}"
        );
        assert!(
            done.windows(2).all(|w| w[0].0 < w[1].0),
            "{id}: tokens {done:?}"
        );

        // In Redis: the last value, written with the highest token.
        let (last_token, last_value) = done[done.len() - 1];
        let key = service::data_key(id);
        assert_eq!(stored(&raw, id).await, Some(last_value), "{id}");
        assert_eq!(
            writer.highest(&key).await.unwrap(),
            Some(last_token),
            "{id}"
        );
        let reported = service::get_resource(addr, id).await.unwrap();
        assert_eq!(reported.status, 200);
        assert_eq!(reported.body["value"].as_i64(), Some(last_value), "{id}");
        assert_eq!(reported.body["token"].as_u64(), Some(last_token), "{id}");

        // The first holder, late, is refused and changes nothing.
        let (first_token, _) = done[0];
        match writer.set(&key, -1, first_token).await {
            Err(Error::StaleToken { seen, presented }) => {
                assert_eq!((seen, presented), (last_token, first_token), "{id}")
            }
            other => panic!("{id}: a stale write gave {other:?}"),
        }
        assert_eq!(stored(&raw, id).await, Some(last_value), "{id}");
    }
    // Some requests met a busy resource (more than fit into one wait).
    assert!(busy.values().sum::<usize>() > 0, "no 409 at all");
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_held_resource_answers_409_after_the_wait() {
    let redis = RedisServer::start();
    let client = redis.client().await;
    let settings = Settings {
        wait: Duration::from_millis(200),
        lease: Duration::from_secs(10),
    };
    let addr = serve(&client, settings).await;

    // Another instance of the service (or a Java Redisson) holds the resource.
    let other = redis.client().await;
    let held = other.get_fenced_lock(service::lock_name("held"));
    let other_token = held
        .lock_and_get_token_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    let started = Instant::now();
    let reply = post_work(addr, "held", 10).await.unwrap();
    let took = started.elapsed();
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(reply.retry_after.as_deref(), Some("1"));
    assert!(took >= settings.wait, "answered after {took:?}");

    held.unlock().await.unwrap();
    let reply = post_work(addr, "held", 10).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["value"].as_i64(), Some(1));
    assert!(reply.body["token"].as_u64().expect("a token") > other_token);
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn work_that_outlives_its_lease_is_abandoned_with_503() {
    let redis = RedisServer::start();
    let client = redis.client().await;
    let raw = redis.raw().await;
    let settings = Settings {
        wait: Duration::from_millis(500),
        lease: Duration::from_millis(300),
    };
    let addr = serve(&client, settings).await;

    let started = Instant::now();
    let reply = post_work(addr, "slow", 3_000).await.unwrap();
    let took = started.elapsed();
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(reply.retry_after.as_deref(), Some("1"));
    assert!(
        took >= settings.lease && took < Duration::from_millis(2_000),
        "answered after {took:?}: the work should stop at the lease"
    );
    // Nothing was written, and no token was recorded.
    assert_eq!(stored(&raw, "slow").await, None);
    let writer = FencedWriter::new(&client);
    assert_eq!(
        writer.highest(&service::data_key("slow")).await.unwrap(),
        None
    );

    // The resource is free again; the next request's token is the next one drawn.
    let drawn = client
        .get_fenced_lock(service::lock_name("slow"))
        .token()
        .await
        .unwrap()
        .expect("the abandoned request drew a token");
    let reply = post_work(addr, "slow", 10).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["value"].as_i64(), Some(1));
    assert_eq!(reply.body["token"].as_u64(), Some(drawn + 1));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_holder_overtaken_during_its_work_is_refused_with_503() {
    let redis = RedisServer::start();
    let client = redis.client().await;
    let raw = redis.raw().await;
    let settings = Settings {
        wait: Duration::from_millis(100),
        lease: Duration::from_secs(10),
    };
    let addr = serve(&client, settings).await;

    // A request takes the lock and works for 800 ms.
    let request = tokio::spawn(async move { post_work(addr, "x", 800).await.unwrap() });
    let other = redis.client().await;
    let lock = other.get_fenced_lock(service::lock_name("x"));
    assert!(
        eventually(Duration::from_secs(5), || async {
            lock.is_locked().await.unwrap()
        })
        .await,
        "the request never took the lock"
    );
    // Meanwhile an operator (or a Java forceUnlock()) deletes the lock, and another holder
    // takes it and writes. The request's guard cannot notice (a lease has no watchdog).
    assert!(lock.force_unlock().await.unwrap());
    let newer = lock
        .lock_and_get_token_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    let key = service::data_key("x");
    FencedWriter::new(&other)
        .set(&key, 100, newer)
        .await
        .unwrap();
    lock.unlock().await.unwrap();

    // The request finishes its work and writes with its older token: refused.
    let reply = request.await.unwrap();
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(reply.retry_after.as_deref(), Some("1"));
    assert_eq!(stored(&raw, "x").await, Some(100));
    assert_eq!(
        FencedWriter::new(&client).highest(&key).await.unwrap(),
        Some(newer)
    );
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_requests_answer_400() {
    let redis = RedisServer::start();
    let client = redis.client().await;
    let addr = serve(&client, Settings::default()).await;
    // `a{b` (percent-encoded): a brace would make a hash tag of the id.
    for (id, work_ms) in [("a%7Bb", 10), ("ok", 60_001)] {
        let reply = post_work(addr, id, work_ms).await.unwrap();
        assert_eq!(reply.status, 400, "{id} {work_ms}: {}", reply.body);
        assert!(reply.body["error"].is_string());
    }
    client.shutdown().await.unwrap();
}
