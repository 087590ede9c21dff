//! 0 permits is a no-op, as in Redisson (checked beside real Redisson in
//! tests/java/expiry.rs): `Semaphore::acquire(0)` and `try_acquire*(0)` give a guard of no
//! permits at once, `release(0)` does nothing, `release_if_exists(0)` answers `false`; a
//! permit-expirable semaphore's `acquire_many(0)` / `try_acquire_many(0)` give an empty
//! list at once. None of them sends a command or publishes.

use crate::support;
use support::*;

use std::time::Duration;

#[tokio::test]
async fn zero_permits_take_and_give_nothing_without_io() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = server.client().await;
    let name = key("zero");
    let sem = client.get_semaphore(&name);
    reset_stats(&raw).await;

    let none = sem.acquire(0).await.unwrap();
    assert_eq!(none.permits(), 0);
    none.release().await.unwrap();
    assert_eq!(
        sem.try_acquire(0).await.unwrap().map(|p| p.permits()),
        Some(0)
    );
    let none = sem
        .try_acquire_for(0, Duration::from_secs(1))
        .await
        .unwrap();
    drop(none); // a dropped guard of no permits gives nothing back
    sem.release(0).await.unwrap();
    assert!(!sem.release_if_exists(0).await.unwrap());

    let pes = client.get_permit_expirable_semaphore(&name);
    assert!(pes.acquire_many(0, None).await.unwrap().is_empty());
    assert!(
        pes.try_acquire_many(0, Duration::ZERO, Some(Duration::from_secs(1)))
            .await
            .unwrap()
            .is_empty()
    );
    // Arguments are still checked.
    assert!(pes.acquire_many(0, Some(Duration::ZERO)).await.is_err());

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(script_calls(&raw).await, 0, "no script was sent");
    assert!(!exists(&raw, &name).await, "nothing was created");

    // An empty name and a closed client are still refused.
    assert!(client.get_semaphore("").acquire(0).await.is_err());
    client.shutdown().await.unwrap();
    assert!(matches!(
        sem.release(0).await,
        Err(redisson_lock::Error::Shutdown)
    ));
}
