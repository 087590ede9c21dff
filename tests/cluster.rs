//! Redis Cluster: three real primaries built with `redis-cli --cluster create`. Shows that
//! the crate picks sharded pub/sub as Java Redisson does on a Redis 7 cluster, that
//! waiters are woken by `SPUBLISH`, and that renewal batches never mix hash slots.
mod support;
use support::cluster::Cluster;
use support::*;

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_pubsub_and_per_slot_renewal_on_a_cluster() {
    let cluster = Cluster::start();
    let config = Config::builder()
        .url(cluster.url())
        .watchdog_timeout(Duration::from_millis(900))
        .build()
        .unwrap();
    assert!(config.redis().server.is_clustered());
    let client = Client::connect(config).await.unwrap();
    let raw = cluster.raw().await;

    // Locks on many names land on all three nodes; each is one hash with our field.
    let names: Vec<String> = (0..60).map(|i| key(&format!("cluster-{i}"))).collect();
    for name in &names {
        client.get_lock(name).lock().await.unwrap();
    }
    for name in &names {
        let hash = hgetall(&raw, name).await;
        assert_eq!(hash.len(), 1, "{name}: {hash:?}");
        assert!(hash[0].0.starts_with(client.id()));
    }

    // Renewal: batches must stay within one slot, or the script fails with CROSSSLOT and
    // the locks expire. After 4 timeouts every lock is still there with a healthy TTL.
    tokio::time::sleep(Duration::from_millis(3_600)).await;
    for name in &names {
        let ttl = pttl(&raw, name).await;
        assert!(ttl > 200, "{name} was not renewed (pttl {ttl})");
    }

    // Unlock publishes with SPUBLISH (Redis 7 cluster), never PUBLISH.
    cluster.reset_stats().await;
    let mut shard_messages = {
        let sub = cluster.raw().await;
        let rx = sub.message_rx();
        sub.ssubscribe(format!("redisson_lock__channel:{{{}}}", names[0]))
            .await
            .unwrap();
        (sub, rx)
    };
    client.get_lock(&names[0]).unlock().await.unwrap();
    let message = tokio::time::timeout(Duration::from_secs(2), shard_messages.1.recv())
        .await
        .expect("the sharded subscriber got the unlock message")
        .unwrap();
    assert_eq!(message.value.as_bytes(), Some(&b"0"[..]));
    assert_eq!(cluster.calls("spublish").await, 1);
    assert_eq!(cluster.calls("publish").await, 0);

    // A waiter of another client is woken by the sharded message, well before the TTL.
    let other = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let contested = names[1].clone();
    let waiter = {
        let lock = other.get_lock(&contested);
        tokio::spawn(async move {
            lock.lock().await.unwrap();
            let at = Instant::now();
            lock.unlock().await.unwrap();
            at
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    client.get_lock(&contested).unlock().await.unwrap();
    let acquired = waiter.await.unwrap();
    let handoff = acquired.duration_since(released);
    println!("cluster hand-off: {handoff:?}");
    assert!(
        handoff < Duration::from_millis(300),
        "hand-off took {handoff:?}"
    );

    for name in &names[2..] {
        client.get_lock(name).unlock().await.unwrap();
    }
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
    let _ = shard_messages.0.quit().await;
}
