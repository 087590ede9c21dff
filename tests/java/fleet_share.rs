//! The fleet race (`support::fleet`) on a single server, a Sentinel set and a cluster:
//! the crate's share of a hot lock beside real Redisson 3.23.3 and 4.7.0.
//!
//! The `*_share` tests run one shorter race per topology and check that the crate takes
//! turns with the Java waiters: when the first process finishes, the crate has made at
//! most [`MAX_SHARE`] of the acquisitions made by then (a fair share is a third; without
//! turns the crate made 90–98 % on Sentinel and Cluster). The full measurement (200
//! rounds, a Java-only fleet beside it, `SHARE_RUNS` runs) is `measure_*`, meant for a
//! release build:
//!
//! ```sh
//! SHARE_RUNS=5 cargo test --release --all-features --test java -- --ignored --nocapture measure_
//! ```

use std::time::Duration;

use crate::support::cluster::Cluster;
use crate::support::fleet::{ROUNDS, Race, race, report};
use crate::support::sentinel_set::SentinelSet;
use crate::support::*;

use redisson_lock::fred::prelude::Client as RawClient;
use redisson_lock::{Client as LockClient, Config};

/// The most the crate may have made when the first process finishes (a third is fair;
/// slack for a short race on a loaded machine).
const MAX_SHARE: f64 = 0.5;

/// Rounds per thread in the CI races.
const CI_ROUNDS: usize = 80;

async fn connect(url: &str) -> LockClient {
    LockClient::connect(Config::from_url(url).expect("url"))
        .await
        .expect("connect")
}

/// One mixed race on `url`, checked: every process finished its rounds, and the crate's
/// share when the first finished is at most [`MAX_SHARE`].
async fn takes_turns(topology: &str, url: &str, raw: RawClient) -> Race {
    let mixed = race(url, Some(connect(url).await), raw, topology, CI_ROUNDS).await;
    let line = report(topology, &mixed);
    eprintln!("{line}");
    assert_eq!(mixed.total as usize, 3 * 3 * CI_ROUNDS, "{line}");
    let share = mixed.share_of("crate");
    assert!(
        share <= MAX_SHARE,
        "the crate made {:.0}% of the acquisitions by the first finish (at most {:.0}%): {line}",
        100.0 * share,
        100.0 * MAX_SHARE
    );
    for (who, made) in &mixed.shares {
        assert!(
            *made > 0,
            "{who} made no acquisition by the first finish: {line}"
        );
    }
    mixed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn single_server_share() {
    let server = RedisServer::start();
    takes_turns("single", &server.url(), server.raw().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn sentinel_share() {
    let set = SentinelSet::start(5_000);
    let raw = RedisServer::raw_at(set.primary.port).await;
    takes_turns("sentinel", &set.url(), raw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn cluster_share() {
    let cluster = Cluster::start();
    takes_turns("cluster", &cluster.url(), cluster.raw().await).await;
}

fn runs() -> usize {
    std::env::var("SHARE_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
}

/// `SHARE_RUNS` full races on `url`, each a Java-only fleet then the mixed one.
async fn measure(topology: &str, url: &str, raw: RawClient) {
    crate::support::real_java::measuring();
    for run in 0..runs() {
        let tag = format!("{topology}-{run}");
        let java_only = race(url, None, raw.clone(), &format!("j{tag}"), ROUNDS).await;
        eprintln!("{}", report(&format!("{topology}, java only"), &java_only));
        let mixed = race(url, Some(connect(url).await), raw.clone(), &tag, ROUNDS).await;
        eprintln!("{}", report(&format!("{topology}, with the crate"), &mixed));
        eprintln!(
            "{topology}: rate with the crate {:.2} × the Java-only fleet's",
            mixed.rate() / java_only.rate()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement (release build): SHARE_RUNS=5 cargo test --release --all-features --test java -- --ignored --nocapture measure_"]
async fn measure_single_server() {
    let server = RedisServer::start();
    measure("single", &server.url(), server.raw().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement (release build): SHARE_RUNS=5 cargo test --release --all-features --test java -- --ignored --nocapture measure_"]
async fn measure_sentinel() {
    let set = SentinelSet::start(5_000);
    let raw = RedisServer::raw_at(set.primary.port).await;
    measure("sentinel", &set.url(), raw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement (release build): SHARE_RUNS=5 cargo test --release --all-features --test java -- --ignored --nocapture measure_"]
async fn measure_cluster() {
    let cluster = Cluster::start();
    measure("cluster", &cluster.url(), cluster.raw().await).await;
}
