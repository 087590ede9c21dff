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
//!   `None` at once;
//! * the conditional expiry (`expireIfSet`, `expireIfNotSet`, `expireIfGreater`,
//!   `expireIfLess`, in their `Duration` and `Instant` forms) and `getExpireTime` of both
//!   semaphores, which the driver has no verbs for: real Redisson's own methods run in
//!   `probe/ExpiryProbe.java` (compiled here against each version's jars; it needs
//!   `javac`, a JDK 17); from each starting state (no key, no TTL, a shorter and a longer
//!   TTL set by Java) both answer alike, and the TTLs Java's `objttl` then reads, and both
//!   keys of the permit semaphore, are the same.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::real_java::{JavaClient, Version};
use crate::support::*;

use redisson_lock::fred::prelude::KeysInterface;
use redisson_lock::synchronizers::{Expiration, ExpireTime};

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
    assert!(
        pes.expire_at(SystemTime::now() + Duration::from_secs(30))
            .await
            .unwrap()
    );
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
        assert!(
            sem.try_acquire_many(0, Duration::ZERO, None)
                .await
                .unwrap()
                .is_empty()
        );
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

async fn check_version(
    java: &JavaClient,
    probe: &JavaClient,
    client: &redisson_lock::Client,
    raw: &Raw,
) -> usize {
    let tag = match java.version() {
        Version::V3_23_3 => "x3",
        Version::V4_7_0 => "x4",
    };
    semaphore_expiry(java, client, raw, &format!("{tag}-sem")).await;
    permit_semaphore_expiry(java, client, raw, &format!("{tag}-pes")).await;
    latch_existence(java, client, &format!("{tag}-latch")).await;
    zero_permits_and_token(java, client, raw, &format!("{tag}-zero")).await;
    conditional_expiry(java, probe, client, raw).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn expiry_existence_and_zero_permits_beside_java() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let url = server.url();
    let ([old, new], client, probe3, probe4) = tokio::join!(
        JavaClient::both(&url),
        server.client(),
        JavaClient::start_probe(Version::V3_23_3, &url, "ExpiryProbe"),
        JavaClient::start_probe(Version::V4_7_0, &url, "ExpiryProbe")
    );
    let started = std::time::Instant::now();
    let (n3, n4) = tokio::join!(
        check_version(&old, &probe3, &client, &raw),
        check_version(&new, &probe4, &client, &raw)
    );
    eprintln!(
        "expiry beside Redisson 3.23.3 and 4.7.0: agreed, with {n3} and {n4} conditional \
         expiries ({:?})",
        started.elapsed()
    );
    let _: i64 = raw.del("x3-sem").await.unwrap();
    client.shutdown().await.unwrap();
}

/// A starting state of an object before a conditional expiry.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Start {
    NoKey,
    NoTtl,
    /// A TTL Java set, shorter than the new one (20 s against 40 s).
    Shorter,
    /// Longer than the new one (60 s).
    Longer,
}

/// Whether a conditional expiry changes a key that is in a [`Start`].
type Changes = fn(Start) -> bool;

/// The conditional expiries: the probe's verb, and whether Redis changes a key in `start`.
const CONDITIONS: [(&str, Changes); 4] = [
    ("ifset", |s| matches!(s, Start::Shorter | Start::Longer)),
    ("ifnotset", |s| s == Start::NoTtl),
    ("ifgreater", |s| s == Start::Shorter),
    ("ifless", |s| matches!(s, Start::NoTtl | Start::Longer)),
];

/// The new expiry: 40 s from now.
const NEW_TTL_MS: i64 = 40_000;

/// Sets up `kind`'s object `name` in `start` through Java.
async fn start_state(java: &JavaClient, kind: &str, name: &str, start: Start) {
    if start == Start::NoKey {
        return;
    }
    if kind == "sem" {
        assert!(java.bool(&format!("semset {name} 3")).await);
    } else {
        assert!(java.bool(&format!("pesset {name} 2")).await);
        // A leased permit: the leases' key `{N}:timeout` exists too.
        let id = java.call(&format!("pesacquire {name} 300000 A")).await;
        assert_eq!(id.len(), 32, "{id}");
    }
    let ttl = match start {
        Start::Shorter => 20_000,
        Start::Longer => 60_000,
        _ => return,
    };
    assert!(java.bool(&format!("objexpire {kind} {name} {ttl}")).await);
}

/// The crate's conditional expiry `verb` on `kind`'s object `name`.
async fn crate_expire_if(
    client: &redisson_lock::Client,
    kind: &str,
    name: &str,
    verb: &str,
    when: Expiration,
) -> bool {
    let sem = client.get_semaphore(name);
    let pes = client.get_permit_expirable_semaphore(name);
    match (kind, verb) {
        ("sem", "ifset") => sem.expire_if_set(when).await,
        ("sem", "ifnotset") => sem.expire_if_not_set(when).await,
        ("sem", "ifgreater") => sem.expire_if_greater(when).await,
        ("sem", _) => sem.expire_if_less(when).await,
        (_, "ifset") => pes.expire_if_set(when).await,
        (_, "ifnotset") => pes.expire_if_not_set(when).await,
        (_, "ifgreater") => pes.expire_if_greater(when).await,
        _ => pes.expire_if_less(when).await,
    }
    .unwrap()
}

/// The crate's `expire_time` of `kind`'s object `name`, as Redisson's number.
async fn crate_expire_time(client: &redisson_lock::Client, kind: &str, name: &str) -> i64 {
    let time = if kind == "sem" {
        client.get_semaphore(name).expire_time().await
    } else {
        client
            .get_permit_expirable_semaphore(name)
            .expire_time()
            .await
    };
    match time.unwrap() {
        ExpireTime::Missing => -2,
        ExpireTime::Never => -1,
        ExpireTime::At(at) => at.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64,
    }
}

/// Two TTLs read a moment apart agree: the same "none"/"no key", or within 2 s.
fn same_ttl(a: i64, b: i64) -> bool {
    if a < 0 || b < 0 {
        return a == b;
    }
    (a - b).abs() <= 2_000
}

/// Every conditional expiry, in both forms, from every start, on both semaphores: Java's
/// method and the crate's answer alike and leave the same TTLs on every key.
async fn conditional_expiry(
    java: &JavaClient,
    probe: &JavaClient,
    client: &redisson_lock::Client,
    raw: &Raw,
) -> usize {
    let v = java.version();
    let tag = match v {
        Version::V3_23_3 => "c3",
        Version::V4_7_0 => "c4",
    };
    let mut cases = 0;
    for kind in ["sem", "pes"] {
        for (n, (verb, changes)) in CONDITIONS.iter().enumerate() {
            // `ifnotset` and `ifless` in Java's `Instant` form, the others as a `Duration`.
            let instant = n % 2 == 1;
            for start in [Start::NoKey, Start::NoTtl, Start::Shorter, Start::Longer] {
                let what =
                    format!("Redisson {v} {kind} {verb} (instant: {instant}) from {start:?}");
                let java_name = format!("{tag}-{kind}-{verb}-{start:?}-j");
                let crate_name = format!("{tag}-{kind}-{verb}-{start:?}-c");
                start_state(java, kind, &java_name, start).await;
                start_state(java, kind, &crate_name, start).await;
                let now = SystemTime::now();
                let (line, when) = if instant {
                    let at = now + Duration::from_millis(NEW_TTL_MS as u64);
                    let ms = at.duration_since(UNIX_EPOCH).unwrap().as_millis();
                    (
                        format!("{kind} {java_name} {verb}at {ms}"),
                        Expiration::At(at),
                    )
                } else {
                    let ttl = Duration::from_millis(NEW_TTL_MS as u64);
                    (
                        format!("{kind} {java_name} {verb} {NEW_TTL_MS}"),
                        Expiration::After(ttl),
                    )
                };
                let java_answer = probe.call(&line).await;
                let crate_answer = crate_expire_if(client, kind, &crate_name, verb, when).await;
                assert_eq!(java_answer, crate_answer.to_string(), "{what}");
                assert_eq!(crate_answer, changes(start), "{what}");
                // The TTL Java reads, and both keys of the permit semaphore.
                let java_ttl = java.int(&format!("objttl {kind} {java_name}")).await;
                let crate_ttl = java.int(&format!("objttl {kind} {crate_name}")).await;
                assert!(
                    same_ttl(java_ttl, crate_ttl),
                    "{what}: objttl {java_ttl} / {crate_ttl}"
                );
                if changes(start) {
                    assert!(same_ttl(crate_ttl, NEW_TTL_MS), "{what}: {crate_ttl}");
                }
                if kind == "pes" {
                    let leases = |name: &str| format!("{{{name}}}:timeout");
                    let java_leases: i64 = raw.pttl(leases(&java_name)).await.unwrap();
                    let crate_leases: i64 = raw.pttl(leases(&crate_name)).await.unwrap();
                    assert!(
                        same_ttl(java_leases, crate_leases),
                        "{what}: the leases' TTL {java_leases} / {crate_leases}"
                    );
                    assert!(same_ttl(crate_leases, crate_ttl), "{what}: keys apart");
                }
                // getExpireTime of the crate's object, read by both: the same millisecond.
                let java_time = probe.call(&format!("{kind} {crate_name} expiretime")).await;
                let crate_time = crate_expire_time(client, kind, &crate_name).await;
                assert_eq!(java_time, crate_time.to_string(), "{what}: expire time");
                let java_own: i64 = probe
                    .call(&format!("{kind} {java_name} expiretime"))
                    .await
                    .parse()
                    .unwrap();
                assert!(
                    same_ttl(java_own, crate_time),
                    "{what}: {java_own} / {crate_time}"
                );
                for name in [&java_name, &crate_name] {
                    let _: i64 = raw
                        .del(vec![name.clone(), format!("{{{name}}}:timeout")])
                        .await
                        .unwrap();
                }
                cases += 1;
            }
        }
    }
    cases
}
