//! Told at once beside real Redisson 4.7.0: Java's `forceUnlock()` of a lock the crate
//! holds is heard within a round trip or so (`CLIENT TRACKING`), and Java's failed
//! `tryLock`s on the same name, which write nothing, give no signal.

use crate::support::real_java::{JavaClient, Version};
use crate::support::{RedisServer, key};

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

/// How long the mixed run lasts: `TOLD_MIXED_SECS`, 8 s by default (the 60 s by
/// hand: `TOLD_MIXED_SECS=60`).
fn mixed_run_length() -> Duration {
    let secs = std::env::var("TOLD_MIXED_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    Duration::from_secs(secs)
}

/// No false signal: three clients × 8 tasks on 4 names (re-entries, renewals every
/// second, some holds across renewals) beside real Redisson 3.23.3 and 4.7.0 contending on
/// the same names; nobody changes a held key, so no hold is ever at risk or lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn a_mixed_run_beside_java_gives_no_false_signal() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    let server = RedisServer::start();
    let url = server.url();
    let prefix = key("told-mixed");
    let length = mixed_run_length();
    let until = Instant::now() + length;
    let (holds, signals) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut tasks = Vec::new();
    for c in 0..3 {
        let config = server.config().watchdog_timeout(Duration::from_secs(3));
        let client = server.client_with(config).await;
        for t in 0..8u64 {
            let (client, prefix) = (client.clone(), prefix.clone());
            let (holds, signals) = (holds.clone(), signals.clone());
            tasks.push(tokio::spawn(async move {
                let mut round = 0u64;
                while Instant::now() < until {
                    round += 1;
                    let lock = client.get_lock(format!("{prefix}{}", (t + round) % 4));
                    let guard = lock.acquire().await.unwrap();
                    let again = lock.acquire().await.unwrap();
                    // Mostly short holds; every 50th of one task per client spans a
                    // renewal (every second).
                    let hold = if t == 0 && round.is_multiple_of(50) {
                        Duration::from_millis(1_300)
                    } else {
                        Duration::from_millis(round % 4)
                    };
                    tokio::select! {
                        state = guard.watch().at_risk() => {
                            signals.fetch_add(1, Ordering::Relaxed);
                            panic!("client {c} task {t}: {state} while nobody touched the key");
                        }
                        () = tokio::time::sleep(hold) => {}
                    }
                    again.unlock().await.unwrap();
                    assert_eq!(guard.state(), HoldState::Held);
                    guard.unlock().await.unwrap();
                    holds.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }
    let javas = [
        JavaClient::start(Version::V3_23_3, &url).await,
        JavaClient::start(Version::V4_7_0, &url).await,
    ];
    let mut java_rounds = 0;
    while Instant::now() < until {
        let line = format!("stress {prefix} 4 4 25 3 - {url}");
        let (a, b) = futures::join!(javas[0].call(&line), javas[1].call(&line));
        assert_eq!(a, "OK 100 0");
        assert_eq!(b, "OK 100 0");
        java_rounds += 200;
    }
    for task in tasks {
        task.await.unwrap();
    }
    let holds = holds.load(Ordering::Relaxed);
    eprintln!(
        "told at once: mixed run of {length:?}: {holds} crate holds (each re-entered), \
         {java_rounds} Java holds, {} signals",
        signals.load(Ordering::Relaxed)
    );
    assert!(holds > 100, "the crate's tasks got the locks: {holds}");
    assert_eq!(signals.load(Ordering::Relaxed), 0);
}
