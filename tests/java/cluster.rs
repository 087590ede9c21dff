//! The crate beside real Redisson 3.23.3 and 4.7.0 on a Redis 7 Cluster (three primaries;
//! `Cluster`): both sides pick sharded pub/sub (`SPUBLISH` in the scripts, `SSUBSCRIBE`
//! for waiters, protocol §3.4), so a wake-up across languages proves they agree on it.
//! Every lock kind, the synchronizers and the name mapper (`support::topo_interop`), and
//! a manual failover of the slot holding the lock with Java in the fleet.

use crate::support::cluster::Cluster;
use crate::support::topo_interop::*;

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
