//! The crate beside real Redisson 3.23.3 and 4.7.0 on a Sentinel set (a primary, a
//! replica, three sentinels; `SentinelSet`): Redisson reads with readMode SLAVE,
//! subscribes on the primary and follows every lock script with `WAIT`; the crate
//! publishes and subscribes on the primary too. Every lock kind, the synchronizers and
//! the name mapper (`support::topo_interop`), and a `SENTINEL FAILOVER` with Java in
//! the fleet.

use crate::support::sentinel_set::SentinelSet;
use crate::support::topo_interop::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn every_lock_kind_with_both_versions() {
    let set = SentinelSet::start(5_000);
    let topo = Topo::sentinel(&set).await;
    lock_family(&topo, "sentinel locks").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn synchronizers_with_both_versions() {
    let set = SentinelSet::start(5_000);
    let topo = Topo::sentinel(&set).await;
    synchronizer_family(&topo, "sentinel synchronizers").await;
}
