//! Redis Sentinel through fred: a primary, a replica and a sentinel, all real processes.
//! Locks work through the sentinel URL, and keep working after a manual failover, where
//! the client follows the sentinel to the promoted replica.
mod support;
use support::*;

use std::process::Command;
use std::time::{Duration, Instant};

use redisson_lock::{Client, Config};

fn role(port: u16) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "role"])
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Retries `op` until it succeeds: during a failover a call can fail, as with any client.
async fn eventually<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = redisson_lock::Result<T>>,
{
    let started = Instant::now();
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) if started.elapsed() < Duration::from_secs(20) => {
                println!("{what}: {e} (retrying)");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{what} still failing after 20 s: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_follow_the_primary_through_a_sentinel_failover() {
    let primary = RedisServer::start();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    let sentinel = SentinelServer::start(primary.port, 2000);
    // Wait for the replica to be in sync, so the failover can pick it.
    let started = Instant::now();
    while !Command::new("redis-cli")
        .args(["-p", &replica.port.to_string(), "info", "replication"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("master_link_status:up"))
        .unwrap_or(false)
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "replica never synced"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sentinel.wait_for(
        |s| {
            redis_cli(s.port, &["sentinel", "replicas", "mymaster"])
                .contains(&replica.port.to_string())
        },
        "sentinel to discover the replica",
    );

    let url = format!(
        "redis-sentinel://127.0.0.1:{}/0?sentinelServiceName=mymaster",
        sentinel.port
    );
    let client = Client::connect(Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let name = key("sentinel");
    let lock = client.get_lock(&name);

    // Through the sentinel, the lock lands on the primary.
    lock.lock().await.unwrap();
    let on_primary = primary.raw().await;
    assert_eq!(hgetall(&on_primary, &name).await.len(), 1);
    lock.unlock().await.unwrap();

    // Manual failover: the replica is promoted; the old primary is demoted.
    let answer = redis_cli(sentinel.port, &["sentinel", "failover", "mymaster"]);
    assert!(
        answer.contains("OK"),
        "SENTINEL FAILOVER answered {answer:?}"
    );
    sentinel.wait_for(|s| s.master_port() == Some(replica.port), "the failover");
    let started = Instant::now();
    while role(replica.port) != "master" {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "replica never became master"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Until the sentinel demotes the old primary, both accept writes (the split-brain
    // window every Sentinel deployment has); wait for the demotion, whose CLIENT KILL
    // sends every client back to the sentinel.
    let started = Instant::now();
    while role(primary.port) != "slave" {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "old primary never demoted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The same client follows: the lock is now written to the promoted replica.
    assert!(eventually("lock after failover", || lock.try_lock()).await);
    assert!(lock.is_held_by_current_task().await.unwrap());
    let on_new_primary = replica.raw().await;
    let hash = hgetall(&on_new_primary, &name).await;
    assert_eq!(hash.len(), 1, "lock not on the new primary: {hash:?}");
    assert!(hash[0].0.starts_with(client.id()));

    // Waiting and waking still work on the new primary.
    let waiter = {
        let lock = client.get_lock(&name);
        tokio::spawn(async move {
            lock.lock().await.unwrap();
            let at = Instant::now();
            lock.unlock().await.unwrap();
            at
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    lock.unlock().await.unwrap();
    let handoff = waiter.await.unwrap().duration_since(released);
    println!("hand-off after failover: {handoff:?}");
    assert!(
        handoff < Duration::from_secs(2),
        "waiter not woken by the message: {handoff:?}"
    );
    client.shutdown().await.unwrap();
}
