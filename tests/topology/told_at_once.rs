//! Told at once on Sentinel: another client's `DEL` of a held lock is heard within a round
//! trip or so on the primary a Sentinel set names, and again on the new primary after a
//! `SENTINEL FAILOVER` (tracking is set up again there). (Not on Redis Cluster yet: see
//! docs/reliability.md, "Told at once".)
use crate::support;
use support::sentinel_set::SentinelSet;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, HoldState};
use tokio::time::Instant;

const TOLD_WITHIN: Duration = Duration::from_secs(2);

/// How many connections of the server at `port` have tracking on.
async fn tracking_on(port: u16) -> usize {
    let raw = RedisServer::raw_at(port).await;
    let on = tracking_connections(&raw).await;
    let _ = raw.quit().await;
    on
}

/// Takes `name`, lets it be read once, deletes it on the server at `port` from another
/// connection, and returns how long the guard took to say lost.
async fn deleted_and_told(client: &Client, name: &str, port: u16) -> Duration {
    let guard = client.get_lock(name).acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(guard.state(), HoldState::Held);
    let raw = RedisServer::raw_at(port).await;
    let deleted: i64 = raw.del(name).await.unwrap();
    assert_eq!(deleted, 1, "{name} is on the server at {port}");
    let changed = Instant::now();
    tokio::time::timeout(TOLD_WITHIN, guard.lost())
        .await
        .unwrap_or_else(|_| panic!("{name}: not told within {TOLD_WITHIN:?}"));
    let _ = raw.quit().await;
    changed.elapsed()
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
    let before = deleted_and_told(&client, &key("told-sentinel-0"), primary).await;

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
    let name = key("told-sentinel-1");
    assert!(
        eventually(Duration::from_secs(20), || async {
            client.get_lock(&name).try_lock().await.unwrap_or(false)
        })
        .await
    );
    client.get_lock(&name).unlock().await.unwrap();
    let after = deleted_and_told(&client, &name, new_primary).await;
    eprintln!("told at once on sentinel: {before:?} before the failover, {after:?} after");
}
