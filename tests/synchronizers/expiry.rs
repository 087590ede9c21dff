//! Expiry and existence of the synchronizers (Redisson's `RExpirable` / `RObject`), against
//! a real server: `Semaphore` and `PermitExpirableSemaphore` `expire`, `expire_at`,
//! `clear_expire`, `remain_time_to_live`, `is_exists` with Redisson's answers for a missing
//! key and a key without TTL, the permit-expirable semaphore's two keys (`N` and
//! `{N}:timeout`) changed together, `CountDownLatch::is_exists`, arguments refused before
//! any I/O, and the blocking twins. The same answers beside real Redisson:
//! tests/java/expiry.rs.

use crate::support;
use support::*;

use std::time::{Duration, SystemTime};

use redisson_lock::Error;
use redisson_lock::fred::prelude::KeysInterface;

/// The TTL is at most `expected` and at most 3 s below it (a busy machine).
fn about(ttl: i64, expected: i64) -> bool {
    (expected - 3_000..=expected).contains(&ttl)
}

#[tokio::test]
async fn semaphore_expiry_follows_redisson() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = server.client().await;
    let name = key("sem-expiry");
    let sem = client.get_semaphore(&name);

    // A missing semaphore: nothing to expire, clear or find (Redisson's false / -2).
    assert!(!sem.is_exists().await.unwrap());
    assert!(!sem.expire(Duration::from_secs(10)).await.unwrap());
    assert!(!sem.clear_expire().await.unwrap());
    assert_eq!(sem.remain_time_to_live().await.unwrap(), None);
    assert!(!exists(&raw, &name).await, "expire created nothing");

    assert!(sem.try_set_permits(3).await.unwrap());
    assert!(sem.is_exists().await.unwrap());
    assert_eq!(
        sem.remain_time_to_live().await.unwrap(),
        Some(Duration::MAX)
    );
    assert!(!sem.clear_expire().await.unwrap(), "no TTL to clear");

    assert!(sem.expire(Duration::from_secs(60)).await.unwrap());
    assert!(about(pttl(&raw, &name).await, 60_000));
    let left = sem.remain_time_to_live().await.unwrap().unwrap();
    assert!(
        left <= Duration::from_secs(60) && left > Duration::from_secs(55),
        "{left:?}"
    );

    let at = SystemTime::now() + Duration::from_secs(120);
    assert!(sem.expire_at(at).await.unwrap());
    assert!(about(pttl(&raw, &name).await, 120_000));

    assert!(sem.clear_expire().await.unwrap());
    assert_eq!(pttl(&raw, &name).await, -1);
    assert_eq!(
        sem.available_permits().await.unwrap(),
        3,
        "the count is kept"
    );

    // A time in the past deletes the key, as PEXPIREAT (and Redisson) does.
    assert!(
        sem.expire_at(SystemTime::now() - Duration::from_secs(1))
            .await
            .unwrap()
    );
    assert!(!sem.is_exists().await.unwrap());

    // A short TTL really ends the semaphore.
    assert!(sem.try_set_permits(1).await.unwrap());
    assert!(sem.expire(Duration::from_millis(50)).await.unwrap());
    assert!(
        gone_within(&raw, &name, Duration::from_secs(3))
            .await
            .is_some()
    );
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn permit_semaphore_keys_expire_together() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = server.client().await;
    let name = key("pes-expiry");
    let timeouts = format!("{{{name}}}:timeout");
    let sem = client.get_permit_expirable_semaphore(&name);

    assert!(!sem.is_exists().await.unwrap());
    assert!(!sem.expire(Duration::from_secs(10)).await.unwrap());
    assert_eq!(sem.remain_time_to_live().await.unwrap(), None);

    assert!(sem.try_set_permits(2).await.unwrap());
    let id = sem.acquire(None).await.unwrap();
    assert!(
        exists(&raw, &timeouts).await,
        "a held permit is in {timeouts}"
    );
    assert_eq!(
        sem.remain_time_to_live().await.unwrap(),
        Some(Duration::MAX)
    );

    assert!(sem.expire(Duration::from_secs(60)).await.unwrap());
    let (count_ttl, lease_ttl) = (pttl(&raw, &name).await, pttl(&raw, &timeouts).await);
    assert!(
        about(count_ttl, 60_000) && about(lease_ttl, 60_000),
        "{count_ttl} {lease_ttl}"
    );
    assert!(sem.remain_time_to_live().await.unwrap().unwrap() <= Duration::from_secs(60));

    assert!(
        sem.expire_at(SystemTime::now() + Duration::from_secs(90))
            .await
            .unwrap()
    );
    assert!(about(pttl(&raw, &name).await, 90_000));
    assert!(about(pttl(&raw, &timeouts).await, 90_000));

    assert!(sem.clear_expire().await.unwrap());
    assert_eq!(
        (pttl(&raw, &name).await, pttl(&raw, &timeouts).await),
        (-1, -1)
    );
    assert!(!sem.clear_expire().await.unwrap());

    // Only the leases left (every permit taken): `expire` still reaches them, and answers
    // true, as Redisson's script does for any key it changed.
    let _other = sem.acquire(None).await.unwrap();
    let _: i64 = raw.del(&name).await.unwrap();
    assert!(
        !sem.is_exists().await.unwrap(),
        "is_exists reads the count key only"
    );
    assert!(sem.expire(Duration::from_secs(30)).await.unwrap());
    assert!(about(pttl(&raw, &timeouts).await, 30_000));
    assert!(sem.release(id).await.is_ok());
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_and_the_latch() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = server.client().await;
    let name = key("expiry-args");
    let sem = client.get_semaphore(&name);
    sem.try_set_permits(1).await.unwrap();
    let invalid = |r: Result<bool, Error>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(invalid(sem.expire(Duration::ZERO).await));
    assert!(invalid(sem.expire(Duration::from_micros(900)).await));
    assert!(invalid(
        sem.expire_at(SystemTime::UNIX_EPOCH - Duration::from_secs(1))
            .await
    ));
    let pes = client.get_permit_expirable_semaphore(&name);
    assert!(invalid(pes.expire(Duration::ZERO).await));
    assert_eq!(pttl(&raw, &name).await, -1, "nothing was sent");
    assert!(invalid(client.get_semaphore("").is_exists().await));

    let latch = client.get_count_down_latch(key("latch-exists"));
    assert!(!latch.is_exists().await.unwrap());
    latch.try_set_count(1).await.unwrap();
    assert!(latch.is_exists().await.unwrap());
    latch.count_down().await.unwrap();
    assert!(
        !latch.is_exists().await.unwrap(),
        "counted down to 0: deleted"
    );

    client.shutdown().await.unwrap();
    assert!(matches!(
        sem.expire(Duration::from_secs(1)).await,
        Err(Error::Shutdown)
    ));
}

#[cfg(feature = "blocking")]
#[test]
fn blocking_twins() {
    let server = RedisServer::start();
    let client =
        redisson_lock::blocking::Client::connect(server.config().build().unwrap()).unwrap();
    let name = key("blocking-expiry");
    let sem = client.get_semaphore(&name);
    assert!(!sem.is_exists().unwrap());
    sem.try_set_permits(2).unwrap();
    assert!(sem.expire(Duration::from_secs(60)).unwrap());
    assert!(sem.remain_time_to_live().unwrap().unwrap() > Duration::from_secs(50));
    assert!(sem.clear_expire().unwrap());
    assert!(
        sem.expire_at(SystemTime::now() + Duration::from_secs(60))
            .unwrap()
    );
    let pes = client.get_permit_expirable_semaphore(key("blocking-pes-expiry"));
    pes.try_set_permits(1).unwrap();
    assert!(pes.is_exists().unwrap());
    assert!(pes.expire(Duration::from_secs(60)).unwrap());
    assert!(
        pes.expire_at(SystemTime::now() + Duration::from_secs(60))
            .unwrap()
    );
    assert!(pes.remain_time_to_live().unwrap().is_some());
    assert!(pes.clear_expire().unwrap());
    assert!(!client.get_count_down_latch("nope").is_exists().unwrap());
    client.shutdown().unwrap();
}

/// Redis 7's conditional expiry (Redisson's `expireIfSet`, `expireIfNotSet`,
/// `expireIfGreater`, `expireIfLess`) and `PEXPIRETIME` (`getExpireTime`): on the
/// semaphore's key, and on both keys of the permit-expirable semaphore, the leases' key
/// with a TTL of its own that only the condition decides about.
#[tokio::test]
async fn conditional_expiry_and_expire_time() {
    use redisson_lock::synchronizers::ExpireTime;
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = server.client().await;
    let name = key("sem-if");
    let sem = client.get_semaphore(&name);
    let ttl = |s: u64| Duration::from_secs(s);

    // No key: nothing changes, and no expire time.
    assert!(!sem.expire_if_not_set(ttl(10)).await.unwrap());
    assert!(!sem.expire_if_less(ttl(10)).await.unwrap());
    assert_eq!(sem.expire_time().await.unwrap(), ExpireTime::Missing);
    assert!(!exists(&raw, &name).await);

    assert!(sem.try_set_permits(2).await.unwrap());
    assert_eq!(sem.expire_time().await.unwrap(), ExpireTime::Never);
    assert!(!sem.expire_if_set(ttl(30)).await.unwrap(), "XX: no TTL yet");
    assert!(
        !sem.expire_if_greater(ttl(30)).await.unwrap(),
        "GT: none is forever"
    );
    assert_eq!(pttl(&raw, &name).await, -1);
    assert!(sem.expire_if_not_set(ttl(30)).await.unwrap(), "NX");
    assert!(about(pttl(&raw, &name).await, 30_000));
    assert!(
        !sem.expire_if_not_set(ttl(90)).await.unwrap(),
        "NX: one is set"
    );
    assert!(
        !sem.expire_if_less(ttl(60)).await.unwrap(),
        "LT: 60 s is later"
    );
    assert!(sem.expire_if_greater(ttl(60)).await.unwrap(), "GT");
    assert!(about(pttl(&raw, &name).await, 60_000));
    let at = SystemTime::now() + ttl(20);
    assert!(sem.expire_if_less(at).await.unwrap(), "LT, an instant");
    assert!(about(pttl(&raw, &name).await, 20_000));
    assert!(sem.expire_if_set(ttl(45)).await.unwrap(), "XX");
    let ExpireTime::At(when) = sem.expire_time().await.unwrap() else {
        panic!("no expire time");
    };
    let left = when.duration_since(SystemTime::now()).unwrap_or_default();
    assert!(left > ttl(40) && left <= ttl(46), "{left:?}");
    assert!(
        sem.expire_if_less(Duration::ZERO).await.is_err(),
        "under 1 ms"
    );

    // The permit-expirable semaphore: both keys, each by its own TTL.
    let pes_name = key("pes-if");
    let pes = client.get_permit_expirable_semaphore(&pes_name);
    let leases = format!("{{{pes_name}}}:timeout");
    assert!(pes.try_set_permits(2).await.unwrap());
    let _id = pes.acquire(Some(ttl(300))).await.unwrap();
    assert!(exists(&raw, &leases).await);
    let _: bool = raw.pexpire(&leases, 50_000, None).await.unwrap();
    // NX: only the count, which has no TTL; XX then changes both.
    assert!(pes.expire_if_not_set(ttl(30)).await.unwrap());
    assert!(about(pttl(&raw, &pes_name).await, 30_000));
    assert!(
        about(pttl(&raw, &leases).await, 50_000),
        "the leases kept theirs"
    );
    assert!(
        pes.expire_if_greater(ttl(40)).await.unwrap(),
        "GT: the count's 30 s"
    );
    assert!(about(pttl(&raw, &pes_name).await, 40_000));
    assert!(about(pttl(&raw, &leases).await, 50_000), "GT: 50 s stays");
    assert!(pes.expire_if_set(ttl(20)).await.unwrap());
    assert!(about(pttl(&raw, &pes_name).await, 20_000));
    assert!(about(pttl(&raw, &leases).await, 20_000));
    assert!(
        !pes.expire_if_not_set(ttl(20)).await.unwrap(),
        "both have one"
    );
    assert!(matches!(
        pes.expire_time().await.unwrap(),
        ExpireTime::At(_)
    ));
    client.shutdown().await.unwrap();
}
