//! The crate beside real Redisson 3.23.3 and 4.7.0 on a Redis 7 Cluster (three primaries;
//! `Cluster`): both sides pick sharded pub/sub (`SPUBLISH` in the scripts, `SSUBSCRIBE`
//! for waiters, protocol §3.4), so a wake-up across languages proves they agree on it.
//! Every lock kind, the synchronizers and the name mapper (`support::topo_interop`), and
//! a manual failover of the slot holding the lock with Java in the fleet.

use crate::support::RedisServer;
use crate::support::cluster::Cluster;
use crate::support::topo_failover::*;
use crate::support::topo_interop::*;

use std::sync::Arc;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn every_lock_kind_with_both_versions() {
    let cluster = Cluster::start();
    let topo = Topo::cluster(&cluster).await;
    lock_family(&topo, "cluster locks").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn synchronizers_with_both_versions() {
    let cluster = Cluster::start();
    let topo = Topo::cluster(&cluster).await;
    synchronizer_family(&topo, "cluster synchronizers").await;
}

/// A manual failover (`CLUSTER FAILOVER` on the replica) of the slot holding the locks
/// while the crate and both Redisson versions hold locks there (watchdog) and wait for
/// one (3.23.3 holds it, a crate task and 4.7.0 wait): how long each side takes to lock
/// on the new primary and when the waiters listen there again; then they are woken
/// there, the lock works across languages both ways and excludes (witness), and the
/// crate's watchdog hold is still held there or its guard says it was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn failover_of_the_lock_slot_with_java_in_the_fleet() {
    let cluster = Arc::new(Cluster::start_with_replicas());
    let before = Topo::cluster(&cluster).await;
    // Every name under the hash tag {fo}: one slot.
    let base = "{fo}";
    let slot = redisson_lock::fred::util::redis_keyslot(base.as_bytes());
    let owner = cluster.owner_of(slot);
    let replica = cluster.replica_of(owner);
    let (javas, client) = tokio::join!(java_pair(&before.url), crate_client(&before, false));
    let flight = in_flight(&before, &javas, &client, base).await;

    let asked = Instant::now();
    let failing = {
        let cluster = cluster.clone();
        tokio::task::spawn_blocking(move || cluster.failover(replica, owner, slot))
    };
    await_role(replica, "master", "the replica").await;
    let promoted = asked.elapsed();
    let switched = Instant::now();
    let new_primary = RedisServer::raw_at(replica).await;
    let channel = flight.channel();
    let mark = flight.mark();
    let (relocked, crate_back, back, failed_over) = tokio::join!(
        relock_times(&javas, &client, &new_primary, base, asked),
        listening_again(&new_primary, true, &mark, 1, switched),
        listening_again(&new_primary, true, &channel, 2, switched),
        failing
    );
    failed_over.unwrap();
    let settled = asked.elapsed();

    let mut after = Topo::cluster(&cluster).await;
    assert_eq!(after.port_of(base), replica, "the slot's new owner");
    // Java's stress verb reads its counter through its own client: with readMode SLAVE
    // on a cluster with replicas that is a replica; give it the slot's primary alone.
    after.counter_url = format!("redis://127.0.0.1:{replica}");
    let lines = flight.after(&after, &client, switched).await;
    eprintln!(
        "cluster failover of slot {slot} ({owner} -> {replica}): replica promoted \
         {promoted:?}, every node agreeing {settled:?} after CLUSTER FAILOVER; first lock \
         on the new primary: {relocked:?}; after the promotion, the crate's waiter \
         listening there {crate_back:?}, both {back:?}\n  {}",
        lines.join("\n  ")
    );
    client.shutdown().await.unwrap();
}
