//! Lock metrics in Prometheus text format: a few acquisitions (one that times out), a
//! hold, an unlock, then the metrics as a Prometheus scrape would see them.
//!
//! `cargo run --example metrics --features metrics`
//!
//! In a service, serve `handle.render()` on your `/metrics` endpoint (or enable
//! `metrics-exporter-prometheus`'s own HTTP listener).
mod common;

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use redisson_lock::{Client, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let handle = PrometheusBuilder::new().install_recorder()?;
    let redis = common::Redis::from_env_or_spawn()?;
    let client = Client::connect(Config::from_url(&redis.url)?).await?;

    let lock = client.get_lock("example:metrics");
    let guard = lock.acquire().await?;
    // Another task gives up after 50 ms: a `timed_out` acquisition, and a waiter meanwhile.
    let other = client.get_lock("example:metrics");
    let taken =
        tokio::spawn(async move { other.try_lock_for(Duration::from_millis(50)).await }).await??;
    assert!(!taken);
    tokio::time::sleep(Duration::from_millis(20)).await;
    guard.unlock().await?;

    let fair = client.get_fair_lock("example:metrics:fair");
    fair.lock().await?;
    fair.unlock().await?;

    println!("{}", handle.render());
    client.shutdown().await?;
    Ok(())
}
