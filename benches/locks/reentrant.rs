//! RLock (`Lock<Reentrant>`) throughput and latency: `uncontended_1`,
//! `uncontended_lease_1`, `distinct_16/64/1024`, `contended_4/16`, `trylock_wait_16`.
//! (Its watchdog and memory costs are in `watchdog.rs`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redisson_lock::fred::interfaces::{ClientLike, LuaInterface};
use redisson_lock::Client;
use serde_json::json;

use crate::measure::{
    contended, contended_row, cpu_us_per_op, drive, ns, percentile_us, Phase, MEASURE, STOP,
};
use crate::report::{round1, round3, Row};
use crate::settings::Settings;
use crate::Bench;

pub const SCENARIOS: &[&str] = &[
    "uncontended_1",
    "uncontended_lease_1",
    "distinct_16",
    "distinct_64",
    "distinct_1024",
    "contended_4",
    "contended_16",
    "trylock_wait_16",
];

pub async fn run(bench: &mut Bench) {
    for (scenario, lease) in [
        ("uncontended_1", None),
        ("uncontended_lease_1", Some(Duration::from_secs(10))),
    ] {
        if bench.wants(scenario) {
            uncontended(bench, scenario, lease).await;
        }
    }
    for tasks in [16usize, 64, 1024] {
        let scenario = format!("distinct_{tasks}");
        if bench.wants(&scenario) {
            distinct(bench, &scenario, tasks).await;
        }
    }
    for tasks in [4usize, 16] {
        let scenario = format!("contended_{tasks}");
        if bench.wants(&scenario) {
            eprintln!("{scenario}");
            let name = format!("bench:contended_{tasks}");
            let client = bench.client.clone();
            let c = contended(bench.settings, &bench.raw, tasks, || {
                client.get_lock(name.clone())
            })
            .await;
            let mut row = contended_row(bench, &scenario, tasks, &c);
            if tasks == 16 {
                contended_16_targets(bench, &mut row);
            }
            bench.push(row);
        }
    }
    if bench.wants("trylock_wait_16") {
        trylock_wait_row(bench).await;
    }
}

// ---- uncontended_1, uncontended_lease_1 -------------------------------------------------

async fn uncontended(bench: &mut Bench, scenario: &str, lease: Option<Duration>) {
    eprintln!("{scenario}");
    let settings = bench.settings;
    let (rate, lat) = pairs(settings, &bench.client, scenario, 1, lease).await;
    let mut row = Row::new(scenario);
    row.tasks = Some(1);
    row.ops_per_s = Some(rate);
    row.set("bench_cpu_us_per_op", json!(cpu_us_per_op(rate, settings)));
    row.p50_us = percentile_us(&lat, 50.0);
    row.p99_us = percentile_us(&lat, 99.0);
    let mix = interleaved(settings, &bench.client, lease).await;
    if scenario == "uncontended_1" {
        // The PING round trip hand-offs are compared with from now on: measured at the
        // same moment and under the same load as lock pairs.
        bench.ping = mix.ping_p50_us;
        bench.interleaved_ping = Some(mix.ping_p50_us);
    }
    row.ratio = Some(mix.pair_p50_us / mix.ping_p50_us);
    row.ratio_to = "p50 pair / p50 PING round trip (measured interleaved)".into();
    row.set("interleaved_pair_p50_us", json!(round1(mix.pair_p50_us)));
    row.set("interleaved_ping_p50_us", json!(round1(mix.ping_p50_us)));
    row.set(
        "bare_scripts_pair_p50_us",
        json!(round1(mix.bare_pair_p50_us)),
    );
    row.set(
        "bare_scripts_pair_p50_pings",
        json!(round3(mix.bare_pair_p50_us / mix.ping_p50_us)),
    );
    let serial_limit = bench.serial_limit();
    if let Some(limit) = serial_limit {
        row.set("pairs_vs_evalsha_c1_half", json!(round3(rate / limit)));
    }
    row.notes = format!(
        "interleaved p50s: pair {:.0} µs = {:.2} PING ({:.0} µs); bare 2 EVALSHAs {:.2} PING; {:.0}% of 1-client EVALSHA/2",
        mix.pair_p50_us,
        mix.pair_p50_us / mix.ping_p50_us,
        mix.ping_p50_us,
        mix.bare_pair_p50_us / mix.ping_p50_us,
        serial_limit.map_or(f64::NAN, |l| 100.0 * rate / l)
    );
    if scenario == "uncontended_1" {
        let ratio = row.ratio.unwrap_or(f64::NAN);
        row.target(
            ratio <= 2.3,
            format!(
                "uncontended_1: p50 pair = {ratio:.2} × p50 PING round trip, measured interleaved (target ≤ 2.3)"
            ),
        );
    }
    bench.push(row);
}

/// `uncontended_1`, `uncontended_lease_1`, `distinct_N`: each task loops lock/unlock on its
/// own name; pairs completed in the measured window, and their latencies.
pub async fn pairs(
    settings: &Settings,
    client: &Client,
    scenario: &str,
    tasks: usize,
    lease: Option<Duration>,
) -> (f64, Vec<u64>) {
    let phase = Phase::new();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let lock = client.get_lock(format!("bench:{scenario}:{i}"));
            let phase = phase.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let at_start = phase.get();
                    if at_start == STOP {
                        break;
                    }
                    let t0 = Instant::now();
                    match lease {
                        None => lock.lock().await.expect("lock"),
                        Some(lease) => lock.lock_with_lease(lease).await.expect("lock"),
                    }
                    lock.unlock().await.expect("unlock");
                    let dt = t0.elapsed();
                    if at_start == MEASURE && phase.get() == MEASURE {
                        latencies.push(ns(dt));
                    }
                }
                latencies
            })
        })
        .collect();
    let window = drive(settings, &phase, async {}, async {}).await;
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await.expect("pair task"));
    }
    all.sort_unstable();
    (all.len() as f64 / window.as_secs_f64(), all)
}

/// p50s (µs) of a library lock/unlock pair, a PING, and a bare pair (the acquire and
/// release scripts as plain `EVALSHA`s, without the library), measured in rotation on
/// the same fred client so that a noisy machine slows all three alike.
struct Interleaved {
    pair_p50_us: f64,
    ping_p50_us: f64,
    bare_pair_p50_us: f64,
}

async fn interleaved(
    settings: &'static Settings,
    client: &Client,
    lease: Option<Duration>,
) -> Interleaved {
    let client = client.clone();
    tokio::spawn(async move { interleaved_task(settings, &client, lease).await })
        .await
        .expect("interleaved task")
}

async fn interleaved_task(
    settings: &Settings,
    client: &Client,
    lease: Option<Duration>,
) -> Interleaved {
    use redisson_lock::fred::prelude::Value;
    let redis = client.redis();
    let lock = client.get_lock("bench:interleaved");
    let acquire: String = redis
        .script_load(redisson_lock::lua::LOCK_ACQUIRE)
        .await
        .expect("SCRIPT LOAD");
    let release: String = redis
        .script_load(redisson_lock::lua::LOCK_RELEASE)
        .await
        .expect("SCRIPT LOAD");
    let field = format!("{}:1", client.id());
    let (mut pairs, mut pings, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    let warm_until = Instant::now() + Duration::from_secs_f64(settings.warmup.min(1.0));
    let until = warm_until + Duration::from_secs_f64(settings.secs.min(3.0));
    let mut i = 0u64;
    while Instant::now() < until {
        i += 1;
        let measured = Instant::now() > warm_until;

        let t0 = Instant::now();
        match lease {
            None => lock.lock().await.expect("lock"),
            Some(lease) => lock.lock_with_lease(lease).await.expect("lock"),
        }
        lock.unlock().await.expect("unlock");
        let pair = ns(t0.elapsed());

        let t0 = Instant::now();
        let _: String = redis.ping(None).await.expect("PING");
        let ping = ns(t0.elapsed());

        let t0 = Instant::now();
        let args: Vec<Value> = vec![
            acquire.as_str().into(),
            1.into(),
            "bench:bare".into(),
            30_000.into(),
            field.as_str().into(),
        ];
        let _: Value = redis
            .custom(redisson_lock::fred::cmd!("EVALSHA"), args)
            .await
            .expect("EVALSHA");
        let args: Vec<Value> = vec![
            release.as_str().into(),
            3.into(),
            "bench:bare".into(),
            "redisson_lock__channel:{bench:bare}".into(),
            format!("redisson_unlock_latch:{{bench:bare}}:{i}").into(),
            "0".into(),
            30_000.into(),
            field.as_str().into(),
            "PUBLISH".into(),
            1_000.into(),
        ];
        let _: Value = redis
            .custom(redisson_lock::fred::cmd!("EVALSHA"), args)
            .await
            .expect("EVALSHA");
        if measured {
            pairs.push(pair);
            pings.push(ping);
            bare.push(ns(t0.elapsed()));
        }
    }
    for v in [&mut pairs, &mut pings, &mut bare] {
        v.sort_unstable();
    }
    Interleaved {
        pair_p50_us: percentile_us(&pairs, 50.0).unwrap_or(f64::NAN),
        ping_p50_us: percentile_us(&pings, 50.0).unwrap_or(f64::NAN),
        bare_pair_p50_us: percentile_us(&bare, 50.0).unwrap_or(f64::NAN),
    }
}

// ---- distinct_N -------------------------------------------------------------------------

async fn distinct(bench: &mut Bench, scenario: &str, tasks: usize) {
    eprintln!("{scenario}");
    let settings = bench.settings;
    let (rate, lat) = pairs(settings, &bench.client, scenario, tasks, None).await;
    let mut row = Row::new(scenario);
    row.tasks = Some(tasks);
    row.ops_per_s = Some(rate);
    row.set("bench_cpu_us_per_op", json!(cpu_us_per_op(rate, settings)));
    row.p50_us = percentile_us(&lat, 50.0);
    row.p99_us = percentile_us(&lat, 99.0);
    let parallel_limit = bench.parallel_limit();
    row.ratio = parallel_limit.map(|l| rate / l);
    row.ratio_to = "redis-benchmark EVALSHA -c 50 -P 16 / 2".into();
    row.notes = format!(
        "{:.0}% of pipelined EVALSHA/2",
        100.0 * row.ratio.unwrap_or(f64::NAN)
    );
    if scenario == "distinct_1024" {
        match row.ratio {
            Some(ratio) => row.target(
                ratio >= 0.40,
                format!(
                    "distinct_1024: {:.0} pairs/s = {:.0}% of pipelined EVALSHA / 2 ({:.0}) (target ≥ 40%)",
                    rate,
                    100.0 * ratio,
                    parallel_limit.unwrap_or(f64::NAN)
                ),
            ),
            None => row.target_note("n/a  distinct_1024: redis-benchmark not available".into()),
        }
    }
    bench.push(row);
}

// ---- contended_N ------------------------------------------------------------------------

fn contended_16_targets(bench: &Bench, row: &mut Row) {
    let ping = bench.ping;
    let cross = row.f64("cross_task_handoff_p50_us");
    let all_scripts = row.f64("lock_scripts_per_acquisition");
    let scripts = row.f64("acquire_scripts_per_acquisition");
    let ok = row
        .extra
        .get("counter_ok")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    row.target(
        cross / ping <= 3.0,
        format!(
            "contended_16 hand-off: p50 {:.0} µs = {:.2} PING round trips (target ≤ 3)",
            cross,
            cross / ping
        ),
    );
    row.target(
        scripts < 3.0,
        format!(
            "contended_16 scripts: {scripts:.2} lock (acquire) scripts per acquisition (target < 3); with the unlock script {all_scripts:.2}"
        ),
    );
    row.target(ok, "contended_16 counter equals acquisitions".into());
}

// ---- trylock_wait_16 --------------------------------------------------------------------

async fn trylock_wait_row(bench: &mut Bench) {
    eprintln!("trylock_wait_16");
    let settings = bench.settings;
    let (rate, success, waits, exact) = trylock_wait(settings, &bench.client, 16).await;
    let mut row = Row::new("trylock_wait_16");
    row.tasks = Some(16);
    row.ops_per_s = Some(rate);
    row.set("bench_cpu_us_per_op", json!(cpu_us_per_op(rate, settings)));
    row.p50_us = percentile_us(&waits, 50.0);
    row.p99_us = percentile_us(&waits, 99.0);
    row.ratio = bench.serial_limit().map(|l| rate / l);
    row.ratio_to = "redis-benchmark EVALSHA -c 1 / 2".into();
    row.set("success_rate", json!(round3(success)));
    row.set("counter_ok", json!(exact));
    row.notes = format!(
        "{:.1}% of tries succeed; counter {}",
        100.0 * success,
        if exact { "exact" } else { "WRONG" }
    );
    bench.push(row);
}

/// `trylock_wait_16`: try_lock_with_lease(200 ms, 5 s) in a loop on one name.
async fn trylock_wait(
    settings: &Settings,
    client: &Client,
    tasks: usize,
) -> (f64, f64, Vec<u64>, bool) {
    let name = format!("bench:trylock_wait_{tasks}");
    let counter = Arc::new(AtomicU64::new(0));
    let phase = Phase::new();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let lock = client.get_lock(name.clone());
            let phase = phase.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let (mut tries, mut acquired, mut total) = (0u64, Vec::new(), 0u64);
                loop {
                    let at_start = phase.get();
                    if at_start == STOP {
                        break;
                    }
                    let t0 = Instant::now();
                    let got = lock
                        .try_lock_with_lease(Duration::from_millis(200), Duration::from_secs(5))
                        .await
                        .expect("try_lock_with_lease");
                    let dt = ns(t0.elapsed());
                    if got {
                        let v = counter.load(Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        counter.store(v + 1, Ordering::SeqCst);
                        lock.unlock().await.expect("unlock");
                        total += 1;
                    }
                    if at_start == MEASURE && phase.get() == MEASURE {
                        tries += 1;
                        if got {
                            acquired.push(dt);
                        }
                    }
                }
                (tries, acquired, total)
            })
        })
        .collect();
    let window = drive(settings, &phase, async {}, async {}).await;
    let (mut tries, mut waits, mut total) = (0, Vec::new(), 0);
    for handle in handles {
        let (t, a, n) = handle.await.expect("trylock task");
        tries += t;
        waits.extend(a);
        total += n;
    }
    waits.sort_unstable();
    let success = if tries == 0 {
        0.0
    } else {
        waits.len() as f64 / tries as f64
    };
    let exact = counter.load(Ordering::SeqCst) == total;
    (
        waits.len() as f64 / window.as_secs_f64(),
        success,
        waits,
        exact,
    )
}
