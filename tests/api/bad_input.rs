//! Every bad input is a typed error (or works): one test per row group of the
//! "Bad input" table in `docs/reliability.md`. Names (empty, huge, binary), durations
//! (zero, sub-millisecond, overflowing), wrong-type keys, URLs (scheme, host, port), calls
//! after `shutdown`, and a server that is not Redis.
use crate::support;
use support::*;

use std::time::{Duration, Instant};

use redisson_lock::config::MAX_LEASE;
use redisson_lock::fencing::FencedWriter;
use redisson_lock::fred::prelude::*;
use redisson_lock::{Backoff, Client, Config, Error};

fn invalid<T: std::fmt::Debug>(result: redisson_lock::Result<T>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[tokio::test]
async fn names_empty_huge_and_binary() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;

    // Empty: refused before any I/O by every entry point of every kind.
    let lock = client.get_lock("");
    invalid(lock.lock().await);
    invalid(lock.try_lock().await);
    invalid(lock.try_lock_for(Duration::from_millis(10)).await);
    invalid(lock.unlock().await);
    invalid(lock.force_unlock().await);
    invalid(lock.is_locked().await);
    invalid(lock.is_held_by_current_task().await);
    invalid(lock.hold_count().await);
    invalid(lock.remain_time_to_live().await);
    invalid(lock.acquire().await);
    invalid(client.get_fair_lock("").lock().await);
    invalid(client.get_read_write_lock("").read_lock().lock().await);
    invalid(client.get_read_write_lock("").write_lock().lock().await);
    invalid(client.get_fenced_lock("").lock_and_get_token().await);
    invalid(client.get_spin_lock("").lock().await);
    invalid(client.get_non_reentrant_lock("").lock().await);
    invalid(FencedWriter::new(&client).set("", "v", 1).await);

    // Control bytes, NUL, CR LF, braces, non-ASCII: stored byte for byte.
    for name in [
        "nul\0inside",
        "crlf\r\n*1\r\n$4\r\nPING",
        "\u{1}\u{7f}\u{1b}[0m",
        "{tag}rest",
        "é—🔒",
        " ",
    ] {
        let lock = client.get_lock(name);
        lock.lock().await.unwrap();
        assert_eq!(hgetall(&raw, name).await.len(), 1, "{name:?}");
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        lock.unlock().await.unwrap();
        assert!(!exists(&raw, name).await, "{name:?}");
        let fair = client.get_fair_lock(name);
        fair.lock().await.unwrap();
        fair.unlock().await.unwrap();
    }

    // 1 MB: works, including a contended wait on a 1 MB channel name.
    let huge = "x".repeat(1 << 20);
    let lock = client.get_lock(huge.as_str());
    lock.lock().await.unwrap();
    assert!(lock.is_locked().await.unwrap());
    let other = client
        .get_lock(huge.as_str())
        .with_owner(redisson_lock::LockOwner::from_raw(99));
    let waiter = tokio::spawn(async move { other.try_lock_for(Duration::from_secs(5)).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    lock.unlock().await.unwrap();
    assert!(waiter.await.unwrap().unwrap(), "the waiter was not woken");
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn durations_zero_tiny_and_overflowing() {
    let server = RedisServer::start();
    let client = server.client().await;
    let lock = client.get_lock(key("durations"));

    // Leases: under 1 ms (zero is the "negative" of Duration) and above MAX_LEASE.
    for lease in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(999),
        MAX_LEASE + Duration::from_millis(1),
        Duration::MAX,
    ] {
        invalid(lock.lock_with_lease(lease).await);
        invalid(lock.try_lock_with_lease(Duration::ZERO, lease).await);
        invalid(lock.acquire_with_lease(lease).await);
        invalid(
            client
                .get_fenced_lock(key("fenced"))
                .lock_and_get_token_with_lease(lease)
                .await,
        );
        invalid(
            FencedWriter::new(&client)
                .set_with_ttl(&key("fw"), "v", lease, 1)
                .await,
        );
    }
    // Waits: zero is one attempt; an overflowing wait is "for ever" (no panic).
    assert!(lock.try_lock_for(Duration::ZERO).await.unwrap());
    assert!(lock.try_lock_for(Duration::MAX).await.unwrap()); // re-entry
    let other = lock.with_owner(redisson_lock::LockOwner::from_raw(7));
    let started = Instant::now();
    assert!(!other.try_lock_for(Duration::ZERO).await.unwrap());
    assert!(started.elapsed() < Duration::from_secs(1));
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    assert!(
        other
            .try_lock_with_lease(Duration::MAX, MAX_LEASE)
            .await
            .unwrap()
    );
    other.unlock().await.unwrap();

    // Settings.
    let url = server.url();
    invalid(
        Config::builder()
            .url(&url)
            .watchdog_timeout(Duration::ZERO)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .watchdog_timeout(Duration::MAX)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .response_timeout(Duration::ZERO)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .subscription_timeout(Duration::ZERO)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .unlock_latch_ttl(Duration::ZERO)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .unlock_latch_ttl(Duration::MAX)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .fair_lock_wait_timeout(Duration::ZERO)
            .build(),
    );
    invalid(
        Config::builder()
            .url(&url)
            .replicas_sync_timeout(Duration::ZERO)
            .build(),
    );
    invalid(Config::builder().url(&url).renewal_batch_size(0).build());
    invalid(Backoff::constant(Duration::ZERO));
    invalid(Backoff::exponential(
        Duration::ZERO,
        Duration::from_millis(5),
        2,
    ));
    invalid(Backoff::exponential(
        Duration::from_millis(5),
        Duration::from_millis(1),
        2,
    ));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn wrong_type_keys() {
    let Bed(_server, client, raw, name) = Bed::new("string").await;
    let _: () = raw
        .set(&name, "not a lock", None, None, false)
        .await
        .unwrap();

    let lock = client.get_lock(&name);
    let wrong = |r: redisson_lock::Result<_>| {
        assert!(
            matches!(r, Err(Error::WrongType { ref key }) if *key == name),
            "{r:?}"
        )
    };
    wrong(lock.lock().await.map(drop));
    wrong(lock.try_lock().await.map(drop));
    wrong(lock.try_lock_for(Duration::from_millis(50)).await.map(drop));
    wrong(lock.unlock().await.map(drop));
    wrong(lock.hold_count().await.map(drop));
    wrong(lock.is_held_by_current_task().await.map(drop));
    wrong(client.get_fair_lock(&name).lock().await.map(drop));
    wrong(client.get_fenced_lock(&name).lock().await.map(drop));
    wrong(client.get_spin_lock(&name).try_lock().await.map(drop));
    wrong(
        client
            .get_non_reentrant_lock(&name)
            .try_lock()
            .await
            .map(drop),
    );
    let rw = client.get_read_write_lock(&name);
    wrong(rw.read_lock().try_lock().await.map(drop));
    wrong(rw.write_lock().try_lock().await.map(drop));
    wrong(rw.read_lock().is_locked().await.map(drop));
    // Type-blind queries answer about the key: it exists and has no TTL.
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(
        lock.remain_time_to_live().await.unwrap(),
        Some(Duration::MAX)
    );
    // The value is untouched by all of the above.
    let value: String = raw.get(&name).await.unwrap();
    assert_eq!(value, "not a lock");
    // force_unlock deletes whatever is there (Redisson's forceUnlock is a DEL too).
    assert!(lock.force_unlock().await.unwrap());

    // A fenced lock whose token key holds a non-integer.
    let fenced = client.get_fenced_lock(key("fenced"));
    let token_key = format!("redisson_lock_token:{{{}}}", fenced.name());
    let _: () = raw.set(&token_key, "abc", None, None, false).await.unwrap();
    assert!(matches!(
        fenced.lock_and_get_token().await,
        Err(Error::BadToken { .. })
    ));
    assert!(!exists(&raw, fenced.name()).await);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn urls_wrong_scheme_host_or_port() {
    // Refused when the config is built, naming what is wrong.
    for (url, names) in [
        ("http://nope", "`http`"),
        ("https://127.0.0.1:6379", "`https`"),
        ("tcp://127.0.0.1:6379", "`tcp`"),
        ("127.0.0.1:6379", "no scheme"),
        ("", "no scheme"),
        ("redis://", "redis://"),
        ("redis://127.0.0.1:99999", "127.0.0.1:99999"),
        ("redis://127.0.0.1:notaport", "notaport"),
        ("redis-sentinel://127.0.0.1:26379", "sentinel"),
    ] {
        let message = invalid(Config::from_url(url));
        assert!(
            message.to_lowercase().contains(&names.to_lowercase()),
            "{url}: {message}"
        );
    }
    invalid(Config::builder().build());
    // Accepted schemes fred cannot serve in this build (no `unix-sockets` feature).
    invalid(Config::from_url("redis+unix:///tmp/redis.sock"));
    // Parsed, but nothing answers: Redis errors, fast.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for url in [
        format!("redis://127.0.0.1:{closed}"),
        "redis://nonexistent.invalid:6379".to_string(),
    ] {
        let started = Instant::now();
        let result = Client::connect(Config::from_url(&url).unwrap()).await;
        assert!(matches!(result, Err(Error::Redis(_))), "{url}: {result:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{url}");
    }
}

#[tokio::test]
async fn calls_after_shutdown() {
    let server = RedisServer::start();
    let client = server.client().await;
    let name = key("after");
    let lock = client.get_lock(&name);
    let guard = client.get_lock(key("guarded")).acquire().await.unwrap();
    client.shutdown().await.unwrap();
    client.shutdown().await.unwrap(); // again: nothing
    assert!(client.is_shutdown());
    let shut = |r: redisson_lock::Result<_>| assert!(matches!(r, Err(Error::Shutdown)), "{r:?}");
    shut(lock.lock().await.map(drop));
    shut(lock.try_lock().await.map(drop));
    shut(lock.unlock().await.map(drop));
    shut(lock.force_unlock().await.map(drop));
    shut(lock.is_locked().await.map(drop));
    shut(lock.hold_count().await.map(drop));
    shut(lock.is_held_by_current_task().await.map(drop));
    shut(lock.remain_time_to_live().await.map(drop));
    shut(lock.acquire().await.map(drop));
    shut(client.get_fair_lock(&name).lock().await.map(drop));
    shut(
        client
            .get_read_write_lock(&name)
            .write_lock()
            .lock()
            .await
            .map(drop),
    );
    shut(
        client
            .get_fenced_lock(&name)
            .lock_and_get_token()
            .await
            .map(drop),
    );
    shut(client.get_fenced_lock(&name).token().await.map(drop));
    shut(client.get_spin_lock(&name).lock().await.map(drop));
    shut(
        FencedWriter::new(&client)
            .set(&name, "v", 1)
            .await
            .map(drop),
    );
    assert!(guard.is_lost());
    shut(guard.unlock().await.map(drop));
}

/// A TCP port that speaks something else: `reply` bytes, then close (or hold the
/// connection silently when `reply` is `None`).
async fn foreign_server(reply: Option<&'static [u8]>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            match reply {
                Some(bytes) => {
                    use tokio::io::AsyncWriteExt;
                    let _ = socket.write_all(bytes).await;
                }
                None => held.push(socket),
            }
        }
    });
    port
}

#[tokio::test]
async fn a_server_that_is_not_redis() {
    for (what, reply, limit) in [
        (
            "HTTP",
            Some(&b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"[..]),
            Duration::from_secs(5),
        ),
        (
            "SSH banner",
            Some(&b"SSH-2.0-OpenSSH_9.6\r\n"[..]),
            Duration::from_secs(5),
        ),
        (
            "binary",
            Some(&[0u8, 159, 146, 150, 255, 10][..]),
            Duration::from_secs(5),
        ),
        ("closes at once", Some(&b""[..]), Duration::from_secs(5)),
        // Says nothing: the connect timeout (1 s here, 10 s by default) ends it.
        ("silent", None, Duration::from_secs(5)),
    ] {
        let port = foreign_server(reply).await;
        let started = Instant::now();
        let config = Config::builder()
            .url(format!("redis://127.0.0.1:{port}"))
            .connect_timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let result = tokio::time::timeout(limit, Client::connect(config))
            .await
            .unwrap_or_else(|_| panic!("{what}: connect hung past {limit:?}"));
        println!(
            "{what}: {:?} after {:?}",
            result.as_ref().err(),
            started.elapsed()
        );
        assert!(matches!(result, Err(Error::Redis(_))), "{what}: {result:?}");
        if reply.is_none() {
            assert!(
                started.elapsed() >= Duration::from_millis(900),
                "the silent server is given the whole connect timeout"
            );
        }
    }
}
