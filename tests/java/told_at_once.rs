//! Told at once beside real Redisson 4.7.0: Java's `forceUnlock()` of a lock the crate
//! holds is heard within a round trip or so (`CLIENT TRACKING`), and Java's failed
//! `tryLock`s on the same name, which write nothing, give no signal.

use crate::support::real_java::{JavaClient, Version};
use crate::support::{key, RedisServer};

use std::time::Duration;

use redisson_lock::HoldState;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn java_force_unlock_is_told_at_once() {
    let server = RedisServer::start();
    let client = server.client().await;
    let java = JavaClient::start(Version::V4_7_0, &server.url()).await;
    let mut times = Vec::new();
    for round in 0..8 {
        let name = key(&format!("told-java-{round}"));
        let guard = client.get_lock(&name).acquire().await.unwrap();
        // Java tries and fails: nothing written, nothing told.
        assert_eq!(java.call(&format!("trylock {name} 0 -1 A")).await, "false");
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            guard.state(),
            HoldState::Held,
            "a failed Java try tells nothing"
        );
        let answer = java.call(&format!("forceunlock {name}")).await;
        let changed = Instant::now();
        assert_eq!(
            answer, "true",
            "Java's forceUnlock() removed the crate's hold"
        );
        tokio::time::timeout(Duration::from_secs(2), guard.lost())
            .await
            .unwrap_or_else(|_| panic!("round {round}: Java's forceUnlock() was not told"));
        times.push(changed.elapsed());
        // Java takes it now; the crate's guard said lost before.
        assert_eq!(java.call(&format!("trylock {name} 0 -1 A")).await, "true");
        assert_eq!(java.call(&format!("unlock {name} A")).await, "OK");
    }
    times.sort();
    eprintln!(
        "told at once: Java forceUnlock(): lost after p50 {:?}, max {:?} (measured from Java's answer)",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}
