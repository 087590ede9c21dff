//! Fencing tokens end to end: a holder that stalls past its lease cannot overwrite the
//! data of the holder that came after it, because the resource refuses its older token.
//!
//! `cargo run --example fencing`
//!
//! ```text
//! A: lock, token n ─ write(n) ✓ ─ stalls .......................... wakes ─ write(n) ✗ stale
//! lease (200 ms)    ├──────────────┤
//! B:                      waits ──┴ lock, token n+1 ─ write(n+1) ✓ ─ unlock
//! ```
mod common;

use std::time::Duration;

use redisson_lock::fencing::FencedWriter;
use redisson_lock::{Client, Config, Error};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = common::Redis::from_env_or_spawn()?;
    let a = Client::connect(Config::from_url(&redis.url)?).await?;
    let b = Client::connect(Config::from_url(&redis.url)?).await?;
    let (lock_name, data) = ("example:fencing:lock", "example:fencing:stock");

    // A takes the lock for 200 ms and writes with its token.
    let a_lock = a.get_fenced_lock(lock_name);
    let a_token = a_lock
        .try_lock_and_get_token(Duration::ZERO, Duration::from_millis(200))
        .await?
        .ok_or("the lock was busy")?;
    let a_writer = FencedWriter::new(&a);
    a_writer.set(data, "written by A", a_token).await?;
    println!("A holds the lock with token {a_token} and wrote");

    // B waits for the lock; A stalls past its lease, so B gets it and writes.
    let b_lock = b.get_fenced_lock(lock_name);
    let b_writer = FencedWriter::new(&b);
    let b_token = b_lock.lock_and_get_token().await?;
    b_writer.set(data, "written by B", b_token).await?;
    println!("A's lease ran out; B holds the lock with token {b_token} and wrote");
    b_lock.unlock().await?;

    // A wakes up and, still believing it holds the lock, writes with its old token.
    match a_writer
        .set(data, "written by A after its stall", a_token)
        .await
    {
        Err(Error::StaleToken { seen, presented }) => {
            println!(
                "A's late write was refused: it presented {presented}, the resource has seen {seen}"
            )
        }
        other => return Err(format!("expected a refusal, got {other:?}").into()),
    }
    let value: Option<String> =
        redisson_lock::fred::prelude::KeysInterface::get(b.redis(), data).await?;
    println!("the data is still {value:?}");

    a.shutdown().await?;
    b.shutdown().await?;
    Ok(())
}
