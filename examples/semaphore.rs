//! At most N concurrent calls to a slow service, across processes: a `Semaphore`
//! (Redisson's `RSemaphore`) caps them, whichever process (or Java app sharing the name)
//! makes them.
//!
//! `cargo run --example semaphore` (uses `REDIS_URL`, or starts its own redis-server):
//! the example starts 3 worker processes (itself, with `--worker`), each making 6 calls
//! from 4 tasks to a "partner API" that allows 2 at a time and takes 100 ms a call. Every
//! call counts itself in and out of a Redis counter, so the highest concurrency seen
//! across the processes is measured, not assumed.
mod common;

use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config};

const PERMITS: i64 = 2;
const WORKERS: usize = 3;
const TASKS: usize = 4;
const CALLS_PER_WORKER: usize = 6;
const SEMAPHORE: &str = "example:partner-api";
const IN_FLIGHT: &str = "example:partner-api:in-flight";
const HIGHEST: &str = "example:partner-api:highest";

/// Counts a call in, keeping the highest count seen.
const ENTER: &str = r#"
local n = redis.call('incr', KEYS[1])
if n > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], n) end
return n
"#;

/// The slow partner API: 100 ms a call, counted in and out.
async fn call_partner_api(client: &Client) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let _: i64 = client
        .redis()
        .eval(ENTER, vec![IN_FLIGHT, HIGHEST], Vec::<String>::new())
        .await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _: i64 = client.redis().decr(IN_FLIGHT).await?;
    Ok(())
}

/// One worker process: `TASKS` tasks share `CALLS_PER_WORKER` calls, each under a permit.
async fn worker(url: &str, id: usize) -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::connect(Config::from_url(url)?).await?;
    let semaphore = client.get_semaphore(SEMAPHORE);
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let (client, semaphore) = (client.clone(), semaphore.clone());
        tasks.push(tokio::spawn(async move {
            for _ in (task..CALLS_PER_WORKER).step_by(TASKS) {
                let permit = semaphore.acquire(1).await?;
                call_partner_api(&client).await?;
                permit.release().await?;
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for task in tasks {
        task.await?.map_err(|e| e.to_string())?;
    }
    println!("worker {id}: {CALLS_PER_WORKER} calls done");
    client.shutdown().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, url, id] = args.as_slice()
        && flag == "--worker"
    {
        return worker(url, id.parse()?).await;
    }

    let redis = common::Redis::from_env_or_spawn()?;
    let client = Client::connect(Config::from_url(&redis.url)?).await?;
    let semaphore = client.get_semaphore(SEMAPHORE);
    semaphore.delete().await?;
    let _: i64 = client.redis().del(vec![IN_FLIGHT, HIGHEST]).await?;
    semaphore.try_set_permits(PERMITS).await?;
    println!(
        "{PERMITS} permits in `{SEMAPHORE}`; {WORKERS} processes x {TASKS} tasks make {} calls of 100 ms",
        WORKERS * CALLS_PER_WORKER
    );

    let started = Instant::now();
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for id in 0..WORKERS {
        children.push(
            std::process::Command::new(&exe)
                .args(["--worker", &redis.url, &id.to_string()])
                .spawn()?,
        );
    }
    for mut child in children {
        let status = child.wait()?;
        if !status.success() {
            return Err(format!("a worker failed: {status}").into());
        }
    }
    let took = started.elapsed();
    let highest: Option<i64> = client.redis().get(HIGHEST).await?;
    println!(
        "highest concurrency seen across the processes: {} (limit {PERMITS}); {} calls in {took:?} \
         (at least {:?} at {PERMITS} at a time)",
        highest.unwrap_or(0),
        WORKERS * CALLS_PER_WORKER,
        Duration::from_millis(100) * (WORKERS * CALLS_PER_WORKER) as u32 / PERMITS as u32
    );
    println!("permits left: {}", semaphore.available_permits().await?);
    if highest.unwrap_or(0) > PERMITS {
        return Err("the semaphore let too many calls through".into());
    }
    semaphore.delete().await?;
    client.shutdown().await?;
    Ok(())
}
