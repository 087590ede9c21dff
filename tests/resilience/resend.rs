//! Acquire and unlock are written once. A proxy between the crate and Redis lets a script
//! run on the server, swallows its reply and cuts the connection, so fred reconnects with
//! the command still "in flight". A client that re-sent the acquire would count the hold
//! twice; one that re-sent the unlock without the latch would give back two holds.
use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Forwards loopback connections to Redis. When armed, the next reply Redis sends on a
/// command connection is dropped and that connection is cut (once).
struct ReplyEater {
    port: u16,
    armed: Arc<AtomicBool>,
}

impl ReplyEater {
    async fn start(redis_port: u16) -> ReplyEater {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(AtomicBool::new(false));
        let flag = armed.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", redis_port)).await.unwrap();
                tokio::spawn(pump(client, server, flag.clone()));
            }
        });
        ReplyEater { port, armed }
    }

    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

async fn pump(client: TcpStream, server: TcpStream, armed: Arc<AtomicBool>) {
    let (mut client_rd, mut client_wr) = client.into_split();
    let (mut server_rd, mut server_wr) = server.into_split();
    let upstream = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match client_rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if server_wr.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match server_rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                // Pub/sub pushes start with '>' (RESP3) or are arrays of "message"; only
                // eat replies on command connections: a reply to a script is ':' or '_'
                // or '$-1' (nil).
                let reply = matches!(buf[0], b':' | b'_' | b'$');
                if reply && armed.swap(false, Ordering::SeqCst) {
                    break; // swallow it and cut the connection
                }
                if client_wr.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    upstream.abort();
}

/// A client connected through the proxy, with the scripts already in the server's cache
/// (so that `INFO commandstats` counts no `NOSCRIPT` round).
async fn client_through(eater: &ReplyEater) -> redisson_lock::Client {
    let config = redisson_lock::Config::builder()
        .url(format!("redis://127.0.0.1:{}", eater.port))
        .response_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let client = redisson_lock::Client::connect(config).await.unwrap();
    let warm = client.get_lock(key("warm-up"));
    warm.lock().await.unwrap();
    warm.unlock().await.unwrap();
    // Let the background UNLINK of the warm-up's unlock latch pass the proxy first, so
    // the reply the proxy eats is the script's.
    tokio::time::sleep(Duration::from_millis(150)).await;
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_acquire_reply_is_settled_never_a_doubled_count() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let eater = ReplyEater::start(server.port).await;
    let client = client_through(&eater).await;
    let name = key("resend-acquire");
    let lock = client
        .get_lock(&name)
        .with_owner(redisson_lock::LockOwner::from_raw(7));
    reset_stats(&raw).await;

    eater.arm();
    // The script runs, its reply is lost with the connection; the crate reads the
    // owner's count (one more than before: it ran) and reports the acquisition.
    let outcome = lock.try_lock().await;
    assert!(
        matches!(outcome, Ok(true)),
        "a lost reply of an acquire that ran must be reported as taken, got {outcome:?}"
    );
    // The script ran exactly once on the server: one hold, not two.
    let field = format!("{}:7", client.id());
    assert_eq!(hgetall(&raw, &name).await, vec![(field, "1".to_string())]);
    assert_eq!(script_calls(&raw).await, 1, "the acquire was re-sent");

    // The client is usable again after fred's reconnect.
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    lock.unlock().await.unwrap();
    assert_eq!(raw.exists::<i64, _>(&name).await.unwrap(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_unlock_reply_is_asked_again_and_answered_by_the_latch() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let eater = ReplyEater::start(server.port).await;
    let client = client_through(&eater).await;
    let name = key("resend-unlock");
    let lock = client
        .get_lock(&name)
        .with_owner(redisson_lock::LockOwner::from_raw(8));
    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    reset_stats(&raw).await;

    eater.arm();
    // The first unlock runs (2 -> 1) but its reply is lost; the crate asks again with the
    // same request id and the latch answers "still held" instead of unlocking again.
    lock.unlock().await.unwrap();
    let field = format!("{}:8", client.id());
    assert_eq!(hgetall(&raw, &name).await, vec![(field, "1".to_string())]);
    // One unlock and one latch replay; the cut connection also made the hold at risk,
    // and the client checked it after reconnecting with the renewal script (EVALSHA,
    // then EVAL after NOSCRIPT on this fresh server): 2 more, never a second unlock (the
    // count above). The check runs off the caller's path, so it may still be on its way
    // when `unlock` returns: wait for it (a few milliseconds; 3 s is slack).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    let mut calls = script_calls(&raw).await;
    while calls < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        calls = script_calls(&raw).await;
    }
    assert_eq!(
        calls, 4,
        "one unlock, one latch replay and the at-risk check's EVALSHA + EVAL"
    );
    assert!(lock.is_locked().await.unwrap());

    lock.unlock().await.unwrap();
    assert_eq!(raw.exists::<i64, _>(&name).await.unwrap(), 0);
    // The latches are cleaned up off the caller's path.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let latches: Vec<String> = raw
        .custom(fred::cmd!("KEYS"), vec!["redisson_unlock_latch:*"])
        .await
        .unwrap();
    assert!(latches.is_empty(), "latches left behind: {latches:?}");
    client.shutdown().await.unwrap();
}
