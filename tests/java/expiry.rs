//! The synchronizers' expiry and existence beside real Redisson 3.23.3 and 4.7.0 (its
//! `RExpirable` / `RObject` through the driver's `objexpire`, `objclearexpire`, `objttl`,
//! `objexists`), and where the crate follows or leaves Redisson on 0 permits and the
//! no-argument `tryLockAndGetToken()`:
//!
//! * a TTL the crate sets is Java's `remainTimeToLive`, and Java's is the crate's
//!   `remain_time_to_live`, for the semaphore and the permit-expirable semaphore, whose
//!   two keys (`N`, `{N}:timeout`) get and lose the TTL together whichever side set it;
//!   both answer alike for a missing object and a key without TTL (`false`, `-2`/`None`,
//!   `-1`/`Duration::MAX`); `is_exists` agrees on both semaphores and the latch, whose
//!   expiry Java does not have either;
//! * 0 permits: the semaphore's `acquire(0)`, `tryAcquire(0)`, `release(0)`,
//!   `releaseIfExists(0)` (4.7.0) answer as the crate's and write nothing; Java's
//!   permit semaphore's `tryAcquire(0, ...)` is empty and its `acquire(0)` never returns
//!   (4.7.0), where the crate answers an empty list at once;
//! * Java's `tryLockAndGetToken()` without a wait blocks while the crate holds the lock
//!   (and gets a token once it is released), where the crate's one-attempt form answers
//!   `None` at once.

use std::time::{Duration, SystemTime};

use crate::support::real_java::{JavaClient, Version};
use crate::support::*;

use redisson_lock::fred::prelude::KeysInterface;

type Raw = redisson_lock::fred::prelude::Client;

/// `ms` is a TTL set `set_ms` ago at most 5 s ago (a busy machine).
fn about(ms: i64, set_ms: i64) -> bool {
    (set_ms - 5_000..=set_ms).contains(&ms)
}

/// Both sides on one semaphore: TTLs set by either side seen by the other.
async fn semaphore_expiry(
    java: &JavaClient,
    client: &redisson_lock::Client,
    raw: &Raw,
    name: &str,
) {
    let v = java.version();
    let sem = client.get_semaphore(name);
    assert!(
        !java.bool(&format!("objexpire sem {name} 1000")).await,
        "{v}: missing"
    );
    assert!(!sem.expire(Duration::from_secs(1)).await.unwrap());
    assert_eq!(java.int(&format!("objttl sem {name}")).await, -2, "{v}");
    assert_eq!(sem.remain_time_to_live().await.unwrap(), None);
    assert!(!java.bool(&format!("objexists sem {name}")).await);

    assert!(sem.try_set_permits(3).await.unwrap());
    assert!(java.bool(&format!("objexists sem {name}")).await, "{v}");
    assert_eq!(
        java.int(&format!("objttl sem {name}")).await,
        -1,
        "{v}: no TTL yet"
    );
    assert_eq!(
        sem.remain_time_to_live().await.unwrap(),
        Some(Duration::MAX)
    );
    assert!(
        !java.bool(&format!("objclearexpire sem {name}")).await,
        "{v}: nothing to clear"
    );

    assert!(sem.expire(Duration::from_secs(60)).await.unwrap());
    let ttl = java.int(&format!("objttl sem {name}")).await;
    assert!(
        about(ttl, 60_000),
        "{v}: Java sees the crate's TTL as {ttl}"
    );
    assert!(java.bool(&format!("objexpire sem {name} 120000")).await);
    let ours = sem
        .remain_time_to_live()
        .await
        .unwrap()
        .unwrap()
        .as_millis() as i64;
    assert!(
        about(ours, 120_000),
        "{v}: the crate sees Java's TTL as {ours}"
    );
    assert!(java.bool(&format!("objclearexpire sem {name}")).await);
    assert_eq!(
        sem.remain_time_to_live().await.unwrap(),
        Some(Duration::MAX),
        "{v}"
    );
    assert!(!sem.clear_expire().await.unwrap(), "{v}: Java cleared it");

    let at = SystemTime::now() + Duration::from_secs(90);
    assert!(sem.expire_at(at).await.unwrap());
    let ttl = java.int(&format!("objttl sem {name}")).await;
    assert!(about(ttl, 90_000), "{v}: {ttl}");
    assert!(sem.clear_expire().await.unwrap());
    assert_eq!(java.int(&format!("objttl sem {name}")).await, -1, "{v}");
    assert_eq!(pttl(raw, name).await, -1);
}

/// The permit-expirable semaphore's two keys expire together whichever side sets it.
async fn permit_semaphore_expiry(
    java: &JavaClient,
    client: &redisson_lock::Client,
    raw: &Raw,
    name: &str,
) {
    let v = java.version();
    let timeouts = format!("{{{name}}}:timeout");
    let pes = client.get_permit_expirable_semaphore(name);
    assert!(!java.bool(&format!("objexpire pes {name} 1000")).await);
    assert!(!pes.expire(Duration::from_secs(1)).await.unwrap());
    assert!(java.bool(&format!("pesset {name} 2")).await);
    let id = java.call(&format!("pesacquire {name} -1 A")).await;
    assert_eq!(id.len(), 32, "{v}: {id}");
    assert!(exists(raw, &timeouts).await);
    assert_eq!(
        java.bool(&format!("objexists pes {name}")).await,
        pes.is_exists().await.unwrap()
    );

    assert!(pes.expire(Duration::from_secs(60)).await.unwrap());
    let (count, leases) = (pttl(raw, name).await, pttl(raw, &timeouts).await);
    assert!(
        about(count, 60_000) && about(leases, 60_000),
        "{v}: {count} {leases}"
    );
    let ttl = java.int(&format!("objttl pes {name}")).await;
    assert!(about(ttl, 60_000), "{v}: Java sees {ttl}");

    assert!(java.bool(&format!("objexpire pes {name} 120000")).await);
    let (count, leases) = (pttl(raw, name).await, pttl(raw, &timeouts).await);
    assert!(
        about(count, 120_000) && about(leases, 120_000),
        "{v}: Java's: {count} {leases}"
    );
    let ours = pes
        .remain_time_to_live()
        .await
        .unwrap()
        .unwrap()
        .as_millis() as i64;
    assert!(about(ours, 120_000), "{v}: {ours}");

    assert!(pes.clear_expire().await.unwrap());
    assert_eq!(
        (pttl(raw, name).await, pttl(raw, &timeouts).await),
        (-1, -1),
        "{v}"
    );
    assert_eq!(java.int(&format!("objttl pes {name}")).await, -1);
    assert!(pes
        .expire_at(SystemTime::now() + Duration::from_secs(30))
        .await
        .unwrap());
    assert!(java.bool(&format!("objclearexpire pes {name}")).await);
    assert_eq!(
        (pttl(raw, name).await, pttl(raw, &timeouts).await),
        (-1, -1),
        "{v}: Java's"
    );
    java.ok(&format!("pesrelease {name} {id}")).await;
}

/// The latch's existence; its expiry is not Java's API either.
async fn latch_existence(java: &JavaClient, client: &redisson_lock::Client, name: &str) {
    let latch = client.get_count_down_latch(name);
    assert!(!java.bool(&format!("objexists latch {name}")).await);
    assert!(!latch.is_exists().await.unwrap());
    assert!(java.bool(&format!("latchset {name} 1")).await);
    assert!(latch.is_exists().await.unwrap());
    assert!(java.bool(&format!("objexists latch {name}")).await);
    let answer = java.call(&format!("objexpire latch {name} 1000")).await;
    assert!(answer.starts_with("ERR unsupported"), "{answer}");
    latch.count_down().await.unwrap();
    assert!(!java.bool(&format!("objexists latch {name}")).await);
}

/// 0 permits on both sides, and the token without a wait.
async fn zero_permits_and_token(
    java: &JavaClient,
    client: &redisson_lock::Client,
    raw: &Raw,
    name: &str,
) {
    let v = java.version();
    java.ok(&format!("semacquire {name} 0 A")).await;
    assert!(java.bool(&format!("semtryacquire {name} 0 -1 A")).await);
    java.ok(&format!("semrelease {name} 0")).await;
    let sem = client.get_semaphore(name);
    sem.acquire(0).await.unwrap().forget();
    assert!(sem.try_acquire(0).await.unwrap().is_some());
    sem.release(0).await.unwrap();
    assert!(!exists(raw, name).await, "{v}: 0 permits created the key");
    let pes = format!("{name}-pes");
    if v == Version::V4_7_0 {
        assert!(!java.bool(&format!("semreleaseifexists {name} 0")).await);
        assert!(!sem.release_if_exists(0).await.unwrap());
        let answer = java
            .call(&format!("pestryacquiremany {pes} 0 0 -1 A"))
            .await;
        assert_eq!(answer, "empty");
        let sem = client.get_permit_expirable_semaphore(&pes);
        assert!(sem
            .try_acquire_many(0, Duration::ZERO, None)
            .await
            .unwrap()
            .is_empty());
        assert!(sem.acquire_many(0, None).await.unwrap().is_empty());
        // Java's `acquire(0)` waits (on its own thread, never answered).
        let stuck = java.spawn(&format!("pesacquiremany {pes} 0 -1 Z")).await;
        assert_eq!(
            stuck.wait(Duration::from_millis(500)).await,
            None,
            "Java's acquire(0) returned"
        );
    }

    // Java's tryLockAndGetToken() (no wait) blocks while the crate holds the lock.
    let fenced = client.get_fenced_lock(format!("{name}-fenced"));
    let token = fenced.lock_and_get_token().await.unwrap();
    let java_try = java
        .spawn(&format!("fencedtrylock {name}-fenced -1 -1 Y"))
        .await;
    assert_eq!(
        java_try.wait(Duration::from_millis(500)).await,
        None,
        "{v}: no wait"
    );
    let other = client.get_fenced_lock(format!("{name}-fenced"));
    let none = tokio::spawn(async move { other.try_lock_and_get_token_for(Duration::ZERO).await });
    assert_eq!(
        none.await.unwrap().unwrap(),
        None,
        "the crate's one attempt"
    );
    fenced.unlock().await.unwrap();
    let answer = java_try.answer(Duration::from_secs(10)).await;
    assert_eq!(
        answer,
        (token + 1).to_string(),
        "{v}: Java's token after the crate's"
    );
    java.ok(&format!("unlock {name}-fenced Y")).await;
}

async fn check_version(java: &JavaClient, client: &redisson_lock::Client, raw: &Raw) {
    let tag = match java.version() {
        Version::V3_23_3 => "x3",
        Version::V4_7_0 => "x4",
    };
    semaphore_expiry(java, client, raw, &format!("{tag}-sem")).await;
    permit_semaphore_expiry(java, client, raw, &format!("{tag}-pes")).await;
    latch_existence(java, client, &format!("{tag}-latch")).await;
    zero_permits_and_token(java, client, raw, &format!("{tag}-zero")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn expiry_existence_and_zero_permits_beside_java() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let url = server.url();
    let ([old, new], client) = tokio::join!(JavaClient::both(&url), server.client());
    let started = std::time::Instant::now();
    tokio::join!(
        check_version(&old, &client, &raw),
        check_version(&new, &client, &raw)
    );
    eprintln!(
        "expiry beside Redisson 3.23.3 and 4.7.0: agreed ({:?})",
        started.elapsed()
    );
    let _: i64 = raw.del("x3-sem").await.unwrap();
    client.shutdown().await.unwrap();
}
