//! Told at once beyond a single server. On Sentinel: another client's `DEL` of a held lock
//! is heard within a round trip or so on the primary a Sentinel set names, and every
//! foreign change again on the new primary after a `SENTINEL FAILOVER` (tracking is set up
//! again there). On Redis Cluster: every foreign change on whichever primary holds the
//! key, and a hold whose slot is migrated to another primary stays held (no false signal)
//! and is heard there afterwards.
use crate::support;
use support::cluster::Cluster;
use support::sentinel_set::SentinelSet;
use support::told::{
    HELD_FIRST, Servers, TOLD_WITHIN, deleted_and_told, every_foreign_change, p99,
};
use support::*;

use std::sync::Arc;
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, HoldState};
use tokio::time::Instant;

/// Rounds per change (the single-server test runs more).
const ROUNDS: usize = 4;

/// How many connections of the server at `port` have tracking on.
async fn tracking_on(port: u16) -> usize {
    let raw = RedisServer::raw_at(port).await;
    let on = tracking_connections(&raw).await;
    let _ = raw.quit().await;
    on
}

/// Takes `name`, deletes it on the server at `port` from another connection, and returns
/// how long the guard took to hear it.
async fn taken_deleted_and_told(client: &Client, name: &str, port: u16) -> Duration {
    let guard = client.get_lock(name).acquire().await.unwrap();
    let raw = RedisServer::raw_at(port).await;
    let told = deleted_and_told(&raw, name, name, guard.watch()).await;
    let _ = raw.quit().await;
    told.unwrap_or_else(|| panic!("{name}: not told within {TOLD_WITHIN:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_hold_is_told_at_once_on_sentinel_before_and_after_a_failover() {
    init_tracing();
    let set = SentinelSet::start(2_000);
    let client = Client::connect(Config::from_url(&set.url()).unwrap())
        .await
        .unwrap();
    let primary = set.primary.port;
    assert!(
        eventually(Duration::from_secs(5), || async {
            tracking_on(primary).await >= 1
        })
        .await
    );
    let before = taken_deleted_and_told(&client, &key("told-sentinel-0"), primary).await;
    // Holds alive across the switch: each is at risk at `+switch-master` (however short
    // the risk), until checked on the new primary, then held again there.
    let mut across = Vec::new();
    for i in 0..3 {
        let name = key(&format!("told-sentinel-across-{i}"));
        let guard = client.get_lock(&name).acquire().await.unwrap();
        let watch = guard.watch().clone();
        let told = tokio::spawn(async move { watch.at_risk().await });
        across.push((name, guard, told));
    }

    let answer = redis_cli(set.sentinels[0].port, &["sentinel", "failover", "mymaster"]);
    assert!(
        answer.contains("OK"),
        "SENTINEL FAILOVER answered {answer:?}"
    );
    let new_primary = set.replica.port;
    assert!(
        poll_every(
            Duration::from_secs(30),
            Duration::from_millis(100),
            || async { server_role(new_primary) == "master" && server_role(primary) == "slave" }
        )
        .await,
        "the failover completes"
    );
    // The client follows, and sets tracking up on the new primary.
    assert!(
        eventually(Duration::from_secs(20), || async {
            tracking_on(new_primary).await >= 1
        })
        .await,
        "tracking on the new primary"
    );
    for (name, guard, told) in across {
        let state = tokio::time::timeout(Duration::from_secs(5), told)
            .await
            .expect("at risk at the switch")
            .unwrap();
        assert_eq!(state, HoldState::AtRisk, "at risk, not lost, at the switch");
        tokio::time::timeout(Duration::from_secs(10), guard.held_again())
            .await
            .expect("held again once checked on the new primary");
        let raw = RedisServer::raw_at(new_primary).await;
        assert_eq!(hgetall(&raw, &name).await.len(), 1, "on the new primary");
        let _ = raw.quit().await;
        guard.unlock().await.unwrap();
    }
    let name = key("told-sentinel-1");
    assert!(
        eventually(Duration::from_secs(20), || async {
            client.get_lock(&name).try_lock().await.unwrap_or(false)
        })
        .await
    );
    client.get_lock(&name).unlock().await.unwrap();
    let after = taken_deleted_and_told(&client, &name, new_primary).await;
    eprintln!("told at once on sentinel: {before:?} before the failover, {after:?} after");
    let servers = Servers::connect(&[new_primary], move |_| new_primary).await;
    let all = every_foreign_change(&client, &servers, &set.url(), ROUNDS).await;
    assert!(
        p99(&all) < Duration::from_millis(500),
        "p99 {:?}",
        p99(&all)
    );
}

/// On a cluster every primary's command connection tracks the keys it holds, with the
/// listener's connection to the same node: every foreign change is heard from whichever
/// node holds the key. A slot migrated under a held lock (the key deleted on one node by
/// `MIGRATE`, written on the other) is checked and found still held: no signal; a `DEL` on
/// its new node is heard at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_foreign_change_is_told_at_once_on_a_cluster_and_after_a_slot_moves() {
    init_tracing();
    let cluster = Arc::new(Cluster::start());
    let client = Client::connect(Config::from_url(&cluster.url()).unwrap())
        .await
        .unwrap();
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let map = tokio::task::block_in_place(|| cluster.topology(ports[0]));
    let owner = move |name: &str| {
        let slot = redisson_lock::fred::util::redis_keyslot(name.as_bytes());
        map.iter()
            .find(|node| node.primary && node.serves(slot))
            .map(|node| node.port)
            .expect("a primary serves the slot")
    };
    let servers = Servers::connect(&ports, owner).await;
    servers.wait_key_tracking().await;
    for &port in &ports {
        assert_eq!(
            tracking_on(port).await,
            1,
            "one tracking connection on {port}"
        );
    }
    let all = every_foreign_change(&client, &servers, &cluster.url(), ROUNDS).await;
    assert!(
        p99(&all) < Duration::from_millis(500),
        "p99 {:?}",
        p99(&all)
    );

    // A slot moves under a held lock.
    let name = key("told-cluster-moved");
    let guard = client.get_lock(&name).acquire().await.unwrap();
    let watch = guard.watch().clone();
    let told = tokio::spawn(async move { watch.at_risk().await });
    tokio::time::sleep(HELD_FIRST).await;
    let slot = redisson_lock::fred::util::redis_keyslot(name.as_bytes());
    let from = servers.port_of(&name);
    let to = *ports.iter().find(|&&p| p != from).unwrap();
    let moving = cluster.clone();
    tokio::task::spawn_blocking(move || moving.migrate_slot(slot, from, to))
        .await
        .unwrap();
    // The check after MIGRATE's delete, and a renewal's round, find it on the new node.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(guard.state(), HoldState::Held);
    assert!(!told.is_finished(), "no signal for a hold that only moved");
    assert!(client.get_lock(&name).is_locked().await.unwrap());
    let raw = RedisServer::raw_at(to).await;
    let deleted: i64 = raw.del(&name).await.unwrap();
    assert_eq!(deleted, 1, "{name} is on {to} after the move");
    let changed = Instant::now();
    tokio::time::timeout(TOLD_WITHIN, guard.lost())
        .await
        .expect("the DEL on the new node is heard");
    eprintln!(
        "told at once on a cluster: a DEL after the slot moved from {from} to {to}: lost after {:?}",
        changed.elapsed()
    );
    let _ = raw.quit().await;
}
