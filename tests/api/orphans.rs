//! `redisson-lock orphans`: a Redis seeded with the leftovers of killed waiters and killed
//! holders (taken with this crate's own lock kinds), live locks of the same kinds beside
//! them; every leftover is found with its reason, no live key is reported, `--clean`
//! removes only the dead keys and every live lock is still held by its holder afterwards.
#![cfg(feature = "cli")]

use crate::support;
use support::cli::*;
use support::*;

use std::collections::BTreeSet;
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client as LockClient, LockOwner};
use serde_json::Value as Json;

const DEAD_LATCH: &str = "redisson_unlock_latch:{dead-latch}:0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const LIVE_LATCH: &str = "redisson_unlock_latch:{live-latch}:00112233445566778899aabbccddeeff";

/// A client in a runtime of its own, for a process that will be killed: dropping the
/// runtime with `shutdown_background` ends its tasks and connections without any of its
/// clean-up reaching Redis, as a SIGKILL would.
async fn doomed_client(
    config: redisson_lock::ConfigBuilder,
) -> (tokio::runtime::Runtime, LockClient) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let client = runtime
        .spawn(async move { LockClient::connect(config.build().unwrap()).await })
        .await
        .unwrap()
        .unwrap();
    (runtime, client)
}

async fn llen(raw: &Client, key: &str) -> i64 {
    raw.custom(redisson_lock::fred::cmd!("LLEN"), vec![key])
        .await
        .unwrap()
}

fn orphan_keys(report: &Json) -> BTreeSet<String> {
    report["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap().to_owned())
        .collect()
}

fn orphan<'a>(report: &'a Json, key: &str) -> &'a Json {
    report["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"] == key)
        .unwrap_or_else(|| panic!("{key} not reported: {report:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_are_found_with_reasons_and_clean_keeps_every_live_lock() {
    let server = RedisServer::start();
    let url = server.url();
    let raw = server.raw().await;
    let live = server.client().await;
    let live_waiter = server.client().await;
    let owner = LockOwner::from_raw(11);

    // --- The leftovers of a process that dies (a waiter and a holder). ---
    let (doomed_runtime, doomed) = doomed_client(
        server
            .config()
            .watchdog_timeout(Duration::from_millis(600))
            .fair_lock_wait_timeout(Duration::from_millis(300)),
    )
    .await;
    // A fair lock held with a short lease; the doomed process queues behind it.
    let holder = live.get_fair_lock("dead-fair").with_owner(owner);
    holder
        .lock_with_lease(Duration::from_millis(700))
        .await
        .unwrap();
    let waiting = doomed.get_fair_lock("dead-fair");
    doomed_runtime.spawn(async move { waiting.lock().await });
    assert!(
        eventually(Duration::from_secs(5), || async {
            llen(&raw, "redisson_lock_queue:{dead-fair}").await == 1
        })
        .await,
        "the doomed waiter never queued"
    );
    // A fenced lock held under the watchdog (its lease ends 600 ms after the kill).
    let fenced = doomed.get_fenced_lock("dead-fenced").with_owner(owner);
    let token = doomed_runtime
        .spawn(async move { fenced.lock_and_get_token().await })
        .await
        .unwrap()
        .unwrap();
    // A read hold with a 60 s lease, force-unlocked by an operator after the kill.
    let read = doomed
        .get_read_write_lock("dead-read")
        .read_lock()
        .with_owner(owner);
    doomed_runtime
        .spawn(async move { read.lock_with_lease(Duration::from_secs(60)).await })
        .await
        .unwrap()
        .unwrap();
    let dead_read_timeout = format!("{{dead-read}}:{}:{owner}:rwlock_timeout:1", doomed.id());
    assert!(exists(&raw, &dead_read_timeout).await);
    doomed_runtime.shutdown_background(); // the kill
    assert!(
        live.get_read_write_lock("dead-read")
            .read_lock()
            .force_unlock()
            .await
            .unwrap()
    );
    // An unlock latch without a TTL (its retry window never ends), and one with its TTL.
    let _: () = raw.set(DEAD_LATCH, "1", None, None, false).await.unwrap();
    let _: () = raw
        .set(LIVE_LATCH, "1", Some(Expiration::PX(60_000)), None, false)
        .await
        .unwrap();

    // --- Live locks of the same kinds. ---
    let live_fair = live.get_fair_lock("live-fair").with_owner(owner);
    live_fair.lock().await.unwrap();
    let waiter = live_waiter
        .get_fair_lock("live-fair")
        .with_owner(LockOwner::from_raw(12));
    let waiter_task = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.lock().await }
    });
    assert!(
        eventually(Duration::from_secs(5), || async {
            llen(&raw, "redisson_lock_queue:{live-fair}").await == 1
        })
        .await
    );
    let live_fenced = live.get_fenced_lock("live-fenced").with_owner(owner);
    let live_token = live_fenced.lock_and_get_token().await.unwrap();
    let live_read = live
        .get_read_write_lock("live-read")
        .read_lock()
        .with_owner(owner);
    live_read
        .lock_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
    let live_read_timeout = format!("{{live-read}}:{}:{owner}:rwlock_timeout:1", live.id());
    assert!(exists(&raw, &live_read_timeout).await);
    // A database that is mostly other keys.
    for i in 0..500 {
        let _: () = raw
            .set(format!("user:{i}"), i, None, None, false)
            .await
            .unwrap();
    }

    // The doomed holds end: the fair lock's lease, the fenced lock's watchdog lease, and
    // the doomed waiter's deadline (700 ms lease + 300 ms reserve after it queued).
    assert!(
        gone_within(&raw, "dead-fair", Duration::from_secs(5))
            .await
            .is_some()
    );
    assert!(
        gone_within(&raw, "dead-fenced", Duration::from_secs(5))
            .await
            .is_some()
    );
    tokio::time::sleep(Duration::from_millis(600)).await;

    // --- The report. ---
    let out = cli(&url, ["orphans", "--json", "--count", "100"]).await;
    no_panic(&out);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = json(&out);
    let expected: BTreeSet<String> = [
        "redisson_lock_queue:{dead-fair}",
        "redisson_lock_timeout:{dead-fair}",
        "redisson_lock_token:{dead-fenced}",
        DEAD_LATCH,
        dead_read_timeout.as_str(),
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(orphan_keys(&report), expected, "{report:#}");
    assert!(report["scanned"].as_u64().unwrap() >= 500 + 10);
    assert_eq!(
        report["live"],
        serde_json::json!({
            "fair-deadlines": 1, "fair-queue": 1, "fencing-token": 1,
            "read-hold-timeout": 1, "unlock-latch": 1
        })
    );
    let queue = orphan(&report, "redisson_lock_queue:{dead-fair}");
    assert_eq!(queue["kind"], "fair-queue");
    assert_eq!(queue["lock"], "dead-fair");
    assert!(
        queue["reason"]
            .as_str()
            .unwrap()
            .contains("no lock; 1 queued waiter"),
        "{queue}"
    );
    let token_report = orphan(&report, "redisson_lock_token:{dead-fenced}");
    assert_eq!(token_report["value"], token.to_string());
    assert!(
        token_report["reason"]
            .as_str()
            .unwrap()
            .contains("token counter with no lock")
    );
    assert_eq!(token_report["cleaned"], false);
    assert!(
        orphan(&report, DEAD_LATCH)["reason"]
            .as_str()
            .unwrap()
            .contains("without a TTL")
    );
    assert!(
        orphan(&report, &dead_read_timeout)["reason"]
            .as_str()
            .unwrap()
            .contains("hold is gone")
    );

    // The text form says the same, and why the token counter stays.
    let text = cli(&url, ["orphans"]).await;
    assert_eq!(code(&text), 0);
    let text = stdout(&text);
    let line = text
        .lines()
        .find(|l| l.starts_with("redisson_lock_timeout:{dead-fair} "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("fair-deadlines") && line.contains("orphaned"),
        "{line}"
    );
    assert!(line.contains("every one passed"), "{line}");
    assert!(text.contains("5 orphaned (0 removed), 5 live"), "{text}");
    assert!(text.contains("restart that lock's tokens at 1"), "{text}");
    // --pattern: by lock name.
    let only = json(&cli(&url, ["orphans", "--json", "--pattern", "dead-f*"]).await);
    assert_eq!(orphan_keys(&only).len(), 3, "{only:#}");

    // --- --clean: the dead keys go, the token counter stays, every live lock is intact. ---
    let cleaned = json(&cli(&url, ["orphans", "--json", "--clean"]).await);
    assert_eq!(cleaned["cleaned"], 4, "{cleaned:#}");
    assert_eq!(cleaned["remaining"], 1);
    for key in &expected {
        let gone = !exists(&raw, key).await;
        assert_eq!(gone, !key.starts_with("redisson_lock_token:"), "{key}");
    }
    assert_eq!(live_fair.hold_count().await.unwrap(), 1);
    assert_eq!(live_fenced.hold_count().await.unwrap(), 1);
    assert_eq!(live_read.hold_count().await.unwrap(), 1);
    assert!(exists(&raw, &live_read_timeout).await);
    assert!(exists(&raw, LIVE_LATCH).await);
    let live_token_key = "redisson_lock_token:{live-fenced}";
    let value: u64 = raw.get(live_token_key).await.unwrap();
    assert_eq!(value, live_token);
    // The live waiter is still queued and takes the lock when its holder lets go.
    assert!(!waiter_task.is_finished());
    live_fair.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter_task)
        .await
        .expect("the live waiter took the lock")
        .unwrap()
        .unwrap();
    assert!(waiter.is_held_by(LockOwner::from_raw(12)).await.unwrap());
    waiter.unlock().await.unwrap();

    // --- Token counters: refused without --yes, with the explanation. ---
    let refused = cli(&url, ["orphans", "--clean-tokens"]).await;
    assert_eq!(code(&refused), 2);
    assert!(stderr(&refused).contains("starts the lock's tokens again at 1"));
    assert!(exists(&raw, "redisson_lock_token:{dead-fenced}").await);
    let removed = cli(&url, ["orphans", "--json", "--clean-tokens", "--yes"]).await;
    assert_eq!(code(&removed), 0);
    assert!(stderr(&removed).contains("starts the lock's tokens again at 1"));
    let removed = json(&removed);
    assert_eq!(removed["cleaned"], 1, "{removed:#}");
    assert!(!exists(&raw, "redisson_lock_token:{dead-fenced}").await);
    assert!(exists(&raw, live_token_key).await);
    assert_eq!(live_fenced.hold_count().await.unwrap(), 1);

    let none = json(&cli(&url, ["orphans", "--json"]).await);
    assert_eq!(orphan_keys(&none), BTreeSet::new());
    live.shutdown().await.unwrap();
    live_waiter.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_are_found_on_every_primary_of_a_cluster() {
    let cluster = support::cluster::Cluster::start();
    let raw = cluster.raw().await;
    // Token counters without locks, spread over the three primaries' slots.
    let names: Vec<String> = (0..12).map(|i| format!("gone-{i}")).collect();
    for name in &names {
        let _: () = raw
            .set(
                format!("redisson_lock_token:{{{name}}}"),
                7,
                None,
                None,
                false,
            )
            .await
            .unwrap();
    }
    let out = cli(&cluster.url(), ["orphans", "--json", "--count", "5"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(orphan_keys(&report).len(), names.len(), "{report:#}");
    assert!(
        report["orphans"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["value"] == "7")
    );
}
