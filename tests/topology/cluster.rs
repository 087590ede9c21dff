//! Redis Cluster: three real primaries built with `redis-cli --cluster create`. Shows that
//! the crate picks sharded pub/sub as Java Redisson does on a Redis 7 cluster, that
//! waiters are woken by `SPUBLISH`, that renewal batches never mix hash slots, and that a
//! waiter's subscription follows its slot to a new owner (a manual failover, a slot
//! migration), where the server ended it on the old one.
use crate::support;
use support::cluster::{Cluster, shard_subscribers};
use support::*;

use std::time::{Duration, Instant};

use futures::FutureExt;

use redisson_lock::config::PublishMode;
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
    // the locks expire. Once the watchdog re-armed the locks 4 times each on average
    // (counted from now: 4 periods of 300 ms, past the 900 ms lease any lock left out would
    // have had), every lock is still there with a healthy TTL.
    cluster.reset_stats().await;
    let renewals = names.len() as u64 * 4;
    let renewed = poll_every(Duration::from_secs(20), Duration::from_millis(100), || {
        cluster.calls("pexpire").map(|n| n >= renewals)
    })
    .await;
    assert!(
        renewed,
        "the watchdog re-armed {} of {renewals} locks",
        cluster.calls("pexpire").await
    );
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
    let waiter = spawn_waiter(other.get_lock(&contested));
    // The waiter is subscribed on the slot's owner: waiting.
    let owner = {
        let slot = redisson_lock::fred::util::redis_keyslot(contested.as_bytes());
        tokio::task::block_in_place(|| cluster.owner_of(slot))
    };
    let contested_channel = channel(&contested);
    assert!(
        eventually(Duration::from_secs(5), || shard_subscribers(
            owner,
            &contested_channel
        )
        .map(|n| n == 1))
        .await,
        "the waiter never subscribed on {owner}"
    );
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

/// Every node's `PUBSUB SHARDNUMSUB channel`, as `port=count`, for failure messages.
async fn shard_subscribers_everywhere(cluster: &Cluster, channel: &str) -> String {
    let mut counts = Vec::new();
    for node in &cluster.nodes {
        let count = shard_subscribers(node.port, channel).await;
        counts.push(format!("{}={count}", node.port));
    }
    counts.join(" ")
}

/// When the holder unlocks, in [`waiter_follows_its_slot`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unlock {
    /// Once the waiter is subscribed on the new owner: the unlock's message wakes it.
    AfterResubscribed,
    /// As soon as every node sees the new owner, before the waiter can have subscribed
    /// there: the message is lost, and the waiter's retry right after subscribing again
    /// finds the lock free.
    RightAfterTheMove,
}

/// A waiter of this crate on `name`, held by another client; `moved` changes the slot's
/// owner to the node on the port it returns. With [`Unlock::AfterResubscribed`] the
/// waiter must be subscribed on the new owner and get the lock within 100 ms of the
/// holder's unlock; with [`Unlock::RightAfterTheMove`], within a topology scan (1 s) and
/// slack, long before the holder's TTL (at least 20 s) would end its sleep.
async fn waiter_follows_its_slot<F>(cluster: &Cluster, name: &str, unlock: Unlock, moved: F)
where
    F: FnOnce(u16, u16) -> u16 + Send + 'static,
{
    let holder = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let waiter = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let slot = redisson_lock::fred::util::redis_keyslot(name.as_bytes());
    let channel = channel(name);
    assert_eq!(
        redisson_lock::fred::util::redis_keyslot(channel.as_bytes()),
        slot
    );
    let owner = cluster.owner_of(slot);

    holder.get_lock(name).lock().await.unwrap();
    let waiting = spawn_waiter(waiter.get_lock(name));
    assert!(
        eventually(Duration::from_secs(5), || shard_subscribers(
            owner, &channel
        )
        .map(|n| n == 1))
        .await,
        "the waiter never subscribed on the slot's owner {owner}"
    );

    let moved_at = Instant::now();
    let new_owner = tokio::task::spawn_blocking(move || moved(slot, owner))
        .await
        .unwrap();
    println!(
        "slot {slot} moved from {owner} to {new_owner} in {:?}",
        moved_at.elapsed()
    );
    assert_ne!(new_owner, owner);

    if unlock == Unlock::AfterResubscribed {
        // The server ended the subscription on the old owner; the waiter subscribes
        // again on the new one, on its own.
        let followed = Instant::now();
        let subscribed = eventually(Duration::from_secs(10), || {
            shard_subscribers(new_owner, &channel).map(|n| n == 1)
        })
        .await;
        assert!(
            subscribed,
            "the waiter is not subscribed on the new owner {new_owner} 10 s after the move; \
             SHARDNUMSUB per node: {}",
            shard_subscribers_everywhere(cluster, &channel).await
        );
        println!(
            "re-subscribed on the new owner within {:?}",
            followed.elapsed()
        );
        assert!(!waiting.is_finished(), "the waiter took a lock still held");
    }

    // The holder's own routing to the slot is fresh (a read follows MOVED), so the time
    // below is the unlock's and the wake-up's, not a redirection's.
    assert!(holder.get_lock(name).is_locked().await.unwrap());
    let raw = cluster.raw().await;
    let hash = hgetall(&raw, name).await;
    assert_eq!(hash.len(), 1, "the hold on the new owner: {hash:?}");
    assert!(hash[0].0.starts_with(holder.id()));
    assert!(pttl(&raw, name).await > 20_000);

    let released = Instant::now();
    holder.get_lock(name).unlock().await.unwrap();
    let acquired = tokio::time::timeout(Duration::from_secs(40), waiting)
        .await
        .expect("the waiter got the lock")
        .unwrap();
    let handoff = acquired.saturating_duration_since(released);
    println!("{unlock:?}: the waiter got the lock {handoff:?} after the unlock");
    let limit = match unlock {
        Unlock::AfterResubscribed => Duration::from_millis(100),
        Unlock::RightAfterTheMove => Duration::from_millis(2_500),
    };
    assert!(
        handoff < limit,
        "{unlock:?}: the waiter got the lock {handoff:?} after the unlock (limit {limit:?})"
    );

    let _ = raw.quit().await;
    holder.shutdown().await.unwrap();
    waiter.shutdown().await.unwrap();
}

/// A name whose slot the primary on `port` serves.
fn name_served_by(cluster: &Cluster, port: u16, what: &str) -> String {
    (0..1_000)
        .map(|i| key(&format!("{what}-{i}")))
        .find(|name| {
            let slot = redisson_lock::fred::util::redis_keyslot(name.as_bytes());
            cluster.owner_of(slot) == port
        })
        .expect("a name in the primary's slots")
}

/// `CLUSTER FAILOVER` on the replica of the slot's owner; returns the new owner.
fn fail_over(cluster: &Cluster, slot: u16, owner: u16) -> u16 {
    let replica = cluster.replica_of(owner);
    cluster.failover(replica, owner, slot);
    replica
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_follows_its_slot_through_a_failover() {
    let cluster = std::sync::Arc::new(Cluster::start_with_replicas());
    // P -> R, the holder unlocking once the waiter is subscribed on R.
    let first = key("follow-failover");
    let topology = cluster.clone();
    waiter_follows_its_slot(
        &cluster,
        &first,
        Unlock::AfterResubscribed,
        move |slot, owner| fail_over(&topology, slot, owner),
    )
    .await;
    // R -> P again, the holder unlocking at once.
    let slot = redisson_lock::fred::util::redis_keyslot(first.as_bytes());
    let second = name_served_by(&cluster, cluster.owner_of(slot), "follow-failback");
    let topology = cluster.clone();
    waiter_follows_its_slot(
        &cluster,
        &second,
        Unlock::RightAfterTheMove,
        move |slot, owner| fail_over(&topology, slot, owner),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_follows_its_slot_through_a_migration() {
    init_tracing();
    let cluster = std::sync::Arc::new(Cluster::start());
    let other_primary = |topology: &Cluster, owner: u16| {
        topology
            .nodes
            .iter()
            .map(|node| node.port)
            .find(|&port| port != owner)
            .expect("another primary")
    };
    for (what, unlock) in [
        ("follow-migration", Unlock::AfterResubscribed),
        ("follow-migration-at-once", Unlock::RightAfterTheMove),
    ] {
        let name = key(what);
        let topology = cluster.clone();
        waiter_follows_its_slot(&cluster, &name, unlock, move |slot, owner| {
            let target = other_primary(&topology, owner);
            topology.migrate_slot(slot, owner, target);
            target
        })
        .await;
    }
}

/// `PUBSUB NUMSUB channel` on the node on `port` alone (classic subscriptions are local
/// to the node a subscriber is connected to).
async fn classic_subscribers(port: u16, channel: &str) -> i64 {
    let raw = support::RedisServer::raw_at(port).await;
    let count = numsub(&raw, channel).await;
    let _ = raw.quit().await;
    count
}

/// Classic pub/sub on a cluster (`PublishMode::Publish`): the waiter's subscription lives
/// on one node whatever the slot, and survives a move there (`PUBLISH` reaches every
/// node). A failover of that node makes the client drop its connection there once it
/// refreshes its slot map (which following sharded channels does): the subscription
/// must still exist somewhere (here: on the new primary), and the unlock must still
/// wake the waiter at once. A guard for the fix of issue 35, not a test of its defect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_waiter_follows_its_node_through_a_failover() {
    let cluster = Cluster::start_with_replicas();
    let config = || {
        Config::builder()
            .url(cluster.url())
            .publish_mode(PublishMode::Publish)
            .build()
            .unwrap()
    };
    let holder = Client::connect(config()).await.unwrap();
    let waiter = Client::connect(config()).await.unwrap();
    let name = key("follow-classic");
    let channel = channel(&name);

    holder.get_lock(&name).lock().await.unwrap();
    let waiting = spawn_waiter(waiter.get_lock(&name));
    let started = Instant::now();
    let home = 'found: loop {
        for node in &cluster.nodes {
            if classic_subscribers(node.port, &channel).await == 1 {
                break 'found node.port;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the waiter never subscribed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // The node the subscription lives on: a primary (fred routes classic subscriptions
    // by the slot of its client id).
    let replica = cluster.replica_of(home);
    let topology_slot = cluster
        .topology(home)
        .into_iter()
        .find(|node| node.port == home)
        .and_then(|node| node.slots.first().map(|range| range.0))
        .expect("the node serves slots");
    let moved_at = Instant::now();
    tokio::task::block_in_place(|| cluster.failover(replica, home, topology_slot));
    println!(
        "{home} failed over to {replica} in {:?}",
        moved_at.elapsed()
    );

    // The client has seen the failover (a scan, 1 s), dropped its connection to the
    // demoted node and re-subscribed where it had to.
    let per_node = || async {
        let mut counts = Vec::new();
        for node in &cluster.nodes {
            counts.push((node.port, classic_subscribers(node.port, &channel).await));
        }
        counts
    };
    let started = Instant::now();
    let counts = loop {
        let counts = per_node().await;
        let (at_home, total) = counts.iter().fold((0, 0), |(home_n, total), (port, n)| {
            (home_n + if *port == home { *n } else { 0 }, total + n)
        });
        if (at_home == 0 && total >= 1) || started.elapsed() > Duration::from_secs(10) {
            break counts;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    println!(
        "NUMSUB per node {:?} after the failover: {counts:?}",
        started.elapsed()
    );
    let total: i64 = counts.iter().map(|(_, n)| n).sum();
    assert!(total >= 1, "the waiter is subscribed nowhere: {counts:?}");
    assert!(!waiting.is_finished(), "the waiter took a lock still held");

    assert!(holder.get_lock(&name).is_locked().await.unwrap());
    let released = Instant::now();
    holder.get_lock(&name).unlock().await.unwrap();
    let acquired = tokio::time::timeout(Duration::from_secs(40), waiting)
        .await
        .expect("the waiter got the lock")
        .unwrap();
    let handoff = acquired.saturating_duration_since(released);
    println!("classic hand-off after the failover: {handoff:?}");
    assert!(
        handoff < Duration::from_millis(100),
        "the waiter got the lock {handoff:?} after the unlock (not woken by it)"
    );
    holder.shutdown().await.unwrap();
    waiter.shutdown().await.unwrap();
}

/// fred 10.1 ends a client's routing task when a command it may write only once (an
/// acquire script, sent with `Resend::Never`) meets an `ASK` (its slot migrating, its key
/// on neither side yet): every later command of the client would wait for its response
/// timeout. The crate starts the task again (`connection/routing_keeper.rs`): the try
/// fails (it did not run) and the client answers a lock elsewhere at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_outlives_an_ask_for_a_call_written_once() {
    init_tracing();
    let cluster = Cluster::start();
    let client = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let name = key("ask-once");
    let elsewhere = key("ask-once-elsewhere");
    let slot = redisson_lock::fred::util::redis_keyslot(name.as_bytes());
    assert_ne!(
        redisson_lock::fred::util::redis_keyslot(elsewhere.as_bytes()),
        slot
    );
    let from = cluster.owner_of(slot);
    let to = cluster
        .nodes
        .iter()
        .map(|node| node.port)
        .find(|&port| port != from)
        .expect("another primary");
    let (from_id, to_id) = (cluster.id_of(from), cluster.id_of(to));
    let slot_text = slot.to_string();
    let setslot = |port: u16, args: &[&str]| {
        let mut all = vec!["cluster", "setslot", &slot_text];
        all.extend_from_slice(args);
        let reply = cluster.cli(port, &all);
        assert_eq!(reply.trim(), "OK", "{all:?} on {port}: {reply}");
    };
    setslot(to, &["importing", &from_id]);
    setslot(from, &["migrating", &to_id]);

    let asked_at = epoch_secs();
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(15), client.get_lock(&name).try_lock())
        .await
        .expect("a try in a migrating slot ends");
    println!(
        "try in the migrating slot: {answer:?} after {:?}",
        started.elapsed()
    );
    let started = Instant::now();
    let other = client.get_lock(&elsewhere);
    match other.try_lock().await {
        Ok(true) => {}
        answer => panic!(
            "after the ASK the client no longer answers: {answer:?} after {:?}",
            started.elapsed()
        ),
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a lock elsewhere took {:?}",
        started.elapsed()
    );
    other.unlock().await.unwrap();
    // The trap was met (else this test shows nothing): the keeper started the task again.
    assert!(
        events::all(&["routing task", "starting it again"])
            .iter()
            .any(|&at| at >= asked_at),
        "fred's routing task did not end: the ASK trap was not met"
    );
    client.shutdown().await.unwrap();
}
