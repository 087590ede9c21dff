//! The crate in one screen: take a lock, re-enter it, wait for it, release it.
//!
//! `cargo run --example quickstart` (uses `REDIS_URL`, or starts its own redis-server).
mod common;

use std::time::{Duration, Instant};

use redisson_lock::{Client, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = common::Redis::from_env_or_spawn()?;
    let client = Client::connect(Config::from_url(&redis.url)?).await?;
    println!("client id: {}", client.id());

    let lock = client.get_lock("quickstart:stock:product_101");

    // Held until unlocked; the watchdog renews it every 10 s.
    lock.lock().await?;
    lock.lock().await?; // same task: re-entry
    println!(
        "hold count after two lock() calls: {}",
        lock.hold_count().await?
    );
    let raw: std::collections::HashMap<String, String> = {
        use redisson_lock::fred::prelude::HashesInterface;
        client.redis().hgetall(lock.name()).await?
    };
    println!("the hash in Redis, as Java Redisson sees it: {raw:?}");

    // Another task waits; it wakes on our unlock message, not by polling.
    let waiter = {
        let lock = lock.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let got = lock
                .try_lock_with_lease(Duration::from_secs(5), Duration::from_secs(10))
                .await?;
            let waited = started.elapsed();
            if got {
                lock.unlock().await?;
            }
            Ok::<_, redisson_lock::Error>((got, waited))
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    lock.unlock().await?;
    lock.unlock().await?; // released: `0` goes out on redisson_lock__channel:{...}
    let (got, waited) = waiter.await??;
    println!("the waiting task got the lock: {got}, after {waited:?}");

    // Guards: released on drop, and they know when the lock is lost.
    let guard = lock.acquire().await?;
    println!(
        "guard holds the lock as owner {}; lost: {}",
        guard.owner(),
        guard.is_lost()
    );
    guard.unlock().await?;
    println!("locked now: {}", lock.is_locked().await?);

    client.shutdown().await?;
    Ok(())
}
