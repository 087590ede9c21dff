//! CountDownLatch: `latch_fanout_64`, one `count_down` (from a second client, as another
//! process would) releasing 64 tasks of one client waiting on the latch.
//!
//! Each round sets the count to 1, starts 64 `wait()`s, lets them fall asleep (20 ms after
//! the last one started), then counts down and times, from the `count_down` call, each
//! waiter's return. The figures: the round trip until the **last** waiter returned
//! (p50/p99 over rounds, the row's latency columns), each waiter's release (p50), and
//! the `GET`s per round (each waiter reads the count once before sleeping, the channel
//! being subscribed from the previous round, and once after its wake-up: about 2 × 64;
//! 3 × 64 on a cold channel). Server limits beside it: the PING round trip (one script,
//! its message and one `GET` is about three of them), `redis-benchmark` PING_MBULK -c 50
//! (64 reads take at least 64 / that rate: `reads_64_at_ping_mbulk_c50_us`) and EVALSHA
//! -c 1.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Barrier;

use crate::Bench;
use crate::measure::{ns, percentile_us, rounds_row};
use crate::report::round1;
use crate::server::{command_stats, reset_stats};

pub const SCENARIOS: &[&str] = &["latch_fanout_64"];

const WAITERS: usize = 64;

pub async fn run(bench: &mut Bench) {
    let scenario = "latch_fanout_64";
    if !bench.wants(scenario) {
        return;
    }
    eprintln!("{scenario}");
    let counter =
        redisson_lock::Client::connect(redisson_lock::Config::from_url(&bench.url).expect("url"))
            .await
            .expect("second client");
    let name = "bench:latch_fanout_64";
    let latch = bench.client.get_count_down_latch(name);
    let count_down = counter.get_count_down_latch(name);
    let warm_until = Instant::now() + Duration::from_secs_f64(bench.settings.warmup);
    let mut measuring_since = None;
    let (mut last, mut each, mut rounds) = (Vec::new(), Vec::new(), 0u64);
    loop {
        let now = Instant::now();
        if now >= warm_until && measuring_since.is_none() {
            reset_stats(&bench.raw).await;
            measuring_since = Some(now);
        }
        if measuring_since.is_some_and(|t| t.elapsed().as_secs_f64() >= bench.settings.secs) {
            break;
        }
        latch.try_set_count(1).await.expect("try_set_count");
        let started = Arc::new(Barrier::new(WAITERS + 1));
        let waiters: Vec<_> = (0..WAITERS)
            .map(|_| {
                let latch = latch.clone();
                let started = started.clone();
                tokio::spawn(async move {
                    started.wait().await;
                    latch.wait().await.expect("wait");
                    Instant::now()
                })
            })
            .collect();
        started.wait().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t0 = Instant::now();
        count_down.count_down().await.expect("count_down");
        let mut slowest = 0u64;
        for waiter in waiters {
            let released = ns(waiter.await.expect("waiter").saturating_duration_since(t0));
            slowest = slowest.max(released);
            if measuring_since.is_some() {
                each.push(released);
            }
        }
        if measuring_since.is_some() {
            last.push(slowest);
            rounds += 1;
        }
    }
    let elapsed = measuring_since.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let stats = command_stats(&bench.raw).await;
    counter.shutdown().await.expect("shutdown");
    last.sort_unstable();
    each.sort_unstable();
    let gets = stats.get("get").copied().unwrap_or(0) as f64 / rounds.max(1) as f64;
    let mut row = rounds_row(bench, scenario, WAITERS, rounds, elapsed, &last);
    row.ratio = row.p50_us.map(|p| p / bench.ping);
    row.ratio_to = "PING round trip p50 (last waiter released, in round trips)".into();
    row.set("evalsha_c1_rps", json!(bench.limits.evalsha_c1.map(round1)));
    let reads_floor_us = bench
        .limits
        .ping_mbulk_c50
        .map(|rate| WAITERS as f64 / rate * 1e6);
    row.set(
        "reads_64_at_ping_mbulk_c50_us",
        json!(reads_floor_us.map(round1)),
    );
    row.set(
        "each_waiter_release_p50_us",
        json!(percentile_us(&each, 50.0).map(round1)),
    );
    row.set("gets_per_round", json!(round1(gets)));
    row.notes = format!(
        "ops = rounds/s (set 1, 64 waits asleep, one count_down from another client); p50/p99 = count_down call to the last of 64 released; {gets:.0} GETs per round ({:.1} per waiter); PING p50 {:.1} µs",
        gets / WAITERS as f64,
        bench.ping
    );
    bench.push(row);
}
