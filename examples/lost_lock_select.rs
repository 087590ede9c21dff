//! Stop work the moment the lock stops protecting it: race the work against
//! `LockGuard::lost()`. Here the lock is deleted behind the holder's back.
//!
//! `cargo run --example lost_lock_select`
mod common;

use std::time::Duration;

use redisson_lock::fred::prelude::KeysInterface;
use redisson_lock::{Client, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = common::Redis::from_env_or_spawn()?;
    let config = Config::builder()
        .url(&redis.url)
        .watchdog_timeout(Duration::from_secs(3)) // renewal (and loss detection) every 1 s
        .build()?;
    let client = Client::connect(config).await?;
    let lock = client.get_lock("example:lost");
    let guard = lock.acquire().await?;

    // Somebody deletes the lock (an operator, a failover, a Java forceUnlock()).
    let admin = client.redis().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let _: i64 = admin.del("example:lost").await.unwrap_or(0);
    });

    let mut batches = 0u32;
    loop {
        tokio::select! {
            _ = guard.lost() => {
                println!("lock lost after {batches} batches: stopping before writing more");
                break;
            }
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                batches += 1; // one unit of protected work
            }
        }
    }
    // The guard knows; unlocking now reports that we were no longer the owner.
    println!(
        "unlock: {:?}",
        guard.unlock().await.err().map(|e| e.to_string())
    );
    client.shutdown().await?;
    Ok(())
}
