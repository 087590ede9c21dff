//! PermitExpirableSemaphore: `pes_uncontended_1`, one task looping `acquire(None)` +
//! `release(id)` on one semaphore with permits to spare.
//!
//! Each operation is one script, so a pair costs two round trips: its target compares the
//! pair's p50 with the floor of those two round trips, the same two scripts (`EVALSHA`
//! of `lua/pes_acquire.lua` and `lua/pes_release.lua`, same keys and arguments) sent
//! through the crate's fred client without the crate, both timed in rotation by one task
//! at the same moment with a PING, as `uncontended_1` does for RLock.

use std::time::Duration;

use redisson_lock::Client;
use serde_json::json;

use crate::Bench;
use crate::measure::{
    Phase, Rotation, drive, join_sorted, p50_p99, p50_us, ping, set_cpu_per_op, spawn_laps, timed,
};
use crate::report::Bound::AtMost;
use crate::report::{Row, round1, round3};
use crate::settings::Settings;

pub const SCENARIOS: &[&str] = &["pes_uncontended_1"];

/// Target: pair p50 ≤ 1.2 × the bare pair's p50, measured interleaved.
const MAX_RATIO: f64 = 1.2;

const NAME: &str = "bench:pes_uncontended_1";

pub async fn run(bench: &mut Bench) {
    if !bench.wants("pes_uncontended_1") {
        return;
    }
    eprintln!("pes_uncontended_1");
    let settings = bench.settings;
    let sem = bench.client.get_permit_expirable_semaphore(NAME);
    sem.delete().await.expect("delete");
    sem.try_set_permits(8).await.expect("try_set_permits");
    let (rate, lat) = pairs(settings, &bench.client).await;
    let mix = interleaved(settings, &bench.client).await;
    let left_over = sem.acquired_permits().await.expect("acquired_permits");
    let mut row = Row::new("pes_uncontended_1");
    row.tasks = Some(1);
    row.ops_per_s = Some(rate);
    set_cpu_per_op(&mut row, rate, settings);
    (row.p50_us, row.p99_us) = p50_p99(&lat);
    let ratio = mix.pair / mix.bare;
    row.ratio = Some(ratio);
    row.ratio_to = "p50 acquire+release / p50 of the same two scripts without the crate (measured interleaved)".into();
    row.set("interleaved_pair_p50_us", json!(round1(mix.pair)));
    row.set("interleaved_bare_pair_p50_us", json!(round1(mix.bare)));
    row.set("interleaved_ping_p50_us", json!(round1(mix.ping)));
    row.set(
        "interleaved_pair_p50_pings",
        json!(round3(mix.pair / mix.ping)),
    );
    if let Some(limit) = bench.serial_limit() {
        row.set("pairs_vs_evalsha_c1_half", json!(round3(rate / limit)));
    }
    row.set("permits_left_held", json!(left_over));
    row.notes = format!(
        "interleaved p50s: pair {:.0} µs = {ratio:.2} × the bare pair ({:.0} µs) = {:.2} PING ({:.0} µs); {left_over} permits left held",
        mix.pair,
        mix.bare,
        mix.pair / mix.ping,
        mix.ping
    );
    row.bound(ratio, 2, AtMost(MAX_RATIO), |ratio, target| {
        format!("pes_uncontended_1: p50 pair = {ratio} × the same two scripts without the crate, measured interleaved (target {target})")
    });
    row.target(
        left_over == 0,
        "pes_uncontended_1 every permit given back".into(),
    );
    bench.push(row);
    sem.delete().await.expect("delete");
}

/// One task: `acquire(None)` + `release(id)`; pairs/s in the window and their latencies.
async fn pairs(settings: &Settings, client: &Client) -> (f64, Vec<u64>) {
    let phase = Phase::new();
    let handles = spawn_laps(&phase, 1, |_, mut laps| {
        let sem = client.get_permit_expirable_semaphore(NAME);
        async move {
            while let Some(lap) = laps.start() {
                let id = sem.acquire(None).await.expect("acquire");
                sem.release(id).await.expect("release");
                laps.end(lap);
            }
            laps.into_ns()
        }
    });
    let window = drive(settings, &phase, async {}, async {}).await;
    let latencies = join_sorted(handles, "pes task").await;
    (latencies.len() as f64 / window.as_secs_f64(), latencies)
}

struct Interleaved {
    pair: f64,
    bare: f64,
    ping: f64,
}

/// p50s (µs) of a pair, of the bare pair and of a PING, timed in rotation by one task.
async fn interleaved(settings: &'static Settings, client: &Client) -> Interleaved {
    use redisson_lock::fred::prelude::{LuaInterface, Value};
    let client = client.clone();
    tokio::spawn(async move {
        let redis = client.redis();
        let sem = client.get_permit_expirable_semaphore(NAME);
        let acquire: String = redis
            .script_load(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/lua/pes_acquire.lua"
            )))
            .await
            .expect("SCRIPT LOAD");
        let release: String = redis
            .script_load(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/lua/pes_release.lua"
            )))
            .await
            .expect("SCRIPT LOAD");
        let (n, t, c) = (
            NAME.to_string(),
            format!("{{{NAME}}}:timeout"),
            format!("redisson_sc:{{{NAME}}}"),
        );
        let id = Value::Bytes(vec![7u8; 16].into());
        let mut rotation = Rotation::new(
            Duration::from_secs_f64(settings.warmup.min(1.0)),
            Duration::from_secs_f64(settings.secs.min(3.0)),
        );
        while let Some(measured) = rotation.next_round() {
            let pair = timed(async {
                let id = sem.acquire(None).await.expect("acquire");
                sem.release(id).await.expect("release");
            })
            .await;
            let bare = timed(async {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .unwrap_or(0);
                let _: Value = redis
                    .evalsha(
                        &acquire,
                        vec![n.clone(), t.clone(), c.clone()],
                        vec![
                            Value::from(1),
                            Value::from(922_337_203_685_477i64),
                            Value::from(now),
                            Value::from(922_337_203_685_477i64),
                            Value::from("PUBLISH"),
                            id.clone(),
                        ],
                    )
                    .await
                    .expect("bare acquire");
                let _: Value = redis
                    .evalsha(
                        &release,
                        vec![n.clone(), c.clone(), t.clone()],
                        vec![
                            id.clone(),
                            Value::from(1),
                            Value::from(now),
                            Value::from("PUBLISH"),
                        ],
                    )
                    .await
                    .expect("bare release");
            })
            .await;
            let ping = timed(ping(redis)).await;
            rotation.record(measured, [pair, bare, ping]);
        }
        let [pair, bare, ping] = rotation.into_sorted();
        Interleaved {
            pair: p50_us(&pair),
            bare: p50_us(&bare),
            ping: p50_us(&ping),
        }
    })
    .await
    .expect("interleaved task")
}
