//! Take a lock in one task and release it in another, with an explicit owner id (what
//! Redisson's `threadId` overloads do).
//!
//! `cargo run --example handover`
mod common;

use redisson_lock::{Client, Config, LockOwner};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = common::Redis::from_env_or_spawn()?;
    let client = Client::connect(Config::from_url(&redis.url)?).await?;
    let job = client
        .get_lock("example:job:7")
        .with_owner(LockOwner::from_raw(42));

    job.lock().await?;
    println!("taken by owner 42 in task A");
    let releaser = job.clone();
    tokio::spawn(async move { releaser.unlock().await }).await??;
    println!(
        "released by owner 42 in task B; locked now: {}",
        job.is_locked().await?
    );
    client.shutdown().await?;
    Ok(())
}
