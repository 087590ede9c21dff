//! What the server can do at all, measured in the same run: the PING round trip from the
//! lock client's own fred client, and `redis-benchmark` PING and EVALSHA (of the crate's
//! acquire script) with 1 and 50 clients, pipelined or not.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redisson_lock::Client;
use redisson_lock::fred::interfaces::{ClientLike, LuaInterface};
use serde_json::{Value as Json, json};

use crate::Raw;
use crate::measure::{ns, percentile_us};
use crate::report::round1;
use crate::settings::Settings;

#[derive(Default)]
pub struct Limits {
    pub ping_p50_us: Option<f64>,
    pub ping_p99_us: Option<f64>,
    pub ping_mbulk_c1: Option<f64>,
    pub ping_mbulk_c50: Option<f64>,
    pub evalsha_c1: Option<f64>,
    pub evalsha_c50: Option<f64>,
    pub evalsha_c50_p16: Option<f64>,
}

impl Limits {
    pub fn json(&self) -> Json {
        json!({
            "impl": "redis-server limits",
            "ping_rtt_p50_us": self.ping_p50_us.map(round1),
            "ping_rtt_p99_us": self.ping_p99_us.map(round1),
            "ping_mbulk_c1_rps": self.ping_mbulk_c1.map(round1),
            "ping_mbulk_c50_rps": self.ping_mbulk_c50.map(round1),
            "evalsha_acquire_c1_rps": self.evalsha_c1.map(round1),
            "evalsha_acquire_c50_rps": self.evalsha_c50.map(round1),
            "evalsha_acquire_c50_p16_rps": self.evalsha_c50_p16.map(round1),
        })
    }
}

/// The limits: all of them when `limits` is selected, else only the PING round trip.
pub async fn measure(settings: &'static Settings, url: &str, client: &Client, raw: &Raw) -> Limits {
    if settings.wants("limits") {
        measure_all(settings, url, client, raw).await
    } else {
        let (p50, p99) = ping_rtt(client, settings).await;
        Limits {
            ping_p50_us: Some(p50),
            ping_p99_us: Some(p99),
            ..Limits::default()
        }
    }
}

/// Single-client PING round trips from the fred client the lock client uses.
///
/// Timed from a spawned task, like the lock scenarios: `block_on`'s thread is not a
/// runtime worker, and timing from it would add a thread hand-off to every reply.
async fn ping_rtt(client: &Client, settings: &'static Settings) -> (f64, f64) {
    let client = client.clone();
    tokio::spawn(async move { ping_rtt_task(&client, settings).await })
        .await
        .expect("ping task")
}

async fn ping_rtt_task(client: &Client, settings: &Settings) -> (f64, f64) {
    let redis = client.redis();
    let warm_until = Instant::now() + Duration::from_secs_f64(settings.warmup.min(1.0));
    while Instant::now() < warm_until {
        let _: String = redis.ping(None).await.expect("PING");
    }
    let mut samples = Vec::new();
    let until = Instant::now() + Duration::from_secs_f64(settings.secs.min(3.0));
    while Instant::now() < until {
        let t0 = Instant::now();
        let _: String = redis.ping(None).await.expect("PING");
        samples.push(ns(t0.elapsed()));
    }
    samples.sort_unstable();
    (
        percentile_us(&samples, 50.0).unwrap_or(f64::NAN),
        percentile_us(&samples, 99.0).unwrap_or(f64::NAN),
    )
}

fn redis_benchmark_installed() -> bool {
    Command::new("redis-benchmark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs `redis-benchmark -u URL -q --csv ARGS` and returns the requests per second.
fn redis_benchmark(url: &str, args: &[String]) -> Option<f64> {
    eprintln!("  redis-benchmark {}", args.join(" "));
    let output = Command::new("redis-benchmark")
        .args(["-u", url, "-q", "--csv"])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter(|line| !line.starts_with("\"test\""))
        .find_map(|line| line.split(',').nth(1)?.trim_matches('"').parse().ok())
}

async fn measure_all(settings: &'static Settings, url: &str, client: &Client, raw: &Raw) -> Limits {
    eprintln!("measuring the server's limits");
    let mut limits = Limits::default();
    let (p50, p99) = ping_rtt(client, settings).await;
    limits.ping_p50_us = Some(p50);
    limits.ping_p99_us = Some(p99);
    if !redis_benchmark_installed() {
        eprintln!("  redis-benchmark is not installed: server limits are not measured");
        return limits;
    }
    let sha: String = raw
        .script_load(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/lock_acquire.lua"
        )))
        .await
        .expect("SCRIPT LOAD");
    // Request counts sized to take roughly BENCH_SECS each on a small machine.
    let n = |per_sec: f64| ((per_sec * settings.secs) as u64).max(1000).to_string();
    let url = url.to_owned();
    let evalsha = |clients: &str, pipeline: &str, per_sec: f64| -> Vec<String> {
        [
            "-c",
            clients,
            "-P",
            pipeline,
            "-n",
            &n(per_sec),
            "-r",
            "100000",
            "EVALSHA",
            &sha,
            "1",
            "bench:key:__rand_int__",
            "30000",
            "bench-owner",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let ping = |clients: &str, per_sec: f64| -> Vec<String> {
        ["-t", "ping_mbulk", "-c", clients, "-n", &n(per_sec)]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let runs = [
        ping("1", 15_000.0),
        ping("50", 80_000.0),
        evalsha("1", "1", 12_000.0),
        evalsha("50", "1", 50_000.0),
        evalsha("50", "16", 100_000.0),
    ];
    let rates = tokio::task::spawn_blocking(move || {
        runs.iter()
            .map(|args| redis_benchmark(&url, args))
            .collect::<Vec<_>>()
    })
    .await
    .expect("redis-benchmark thread");
    limits.ping_mbulk_c1 = rates[0];
    limits.ping_mbulk_c50 = rates[1];
    limits.evalsha_c1 = rates[2];
    limits.evalsha_c50 = rates[3];
    limits.evalsha_c50_p16 = rates[4];
    limits
}
