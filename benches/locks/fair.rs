//! FairLock (`Lock<Fair>`): `fair_contended_16`, 16 tasks on one fair lock, each
//! incrementing a plain counter under it (the shared contended loop of `measure.rs`).
//!
//! A fair unlock publishes only to the head of the queue, which then runs one acquire
//! script: the hand-off should cost about one published message plus one script round
//! trip, and each acquisition about two acquire scripts (queue, then take when woken).

use serde_json::Value as Json;

use crate::measure::{contended, contended_row};
use crate::Bench;

pub const SCENARIOS: &[&str] = &["fair_contended_16"];

/// Targets: cross-task hand-off p50 ≤ 3 PING round trips; ≤ 3 acquire scripts per
/// acquisition.
const MAX_HANDOFF_PINGS: f64 = 3.0;
const MAX_ACQUIRE_SCRIPTS: f64 = 3.0;

pub async fn run(bench: &mut Bench) {
    let scenario = "fair_contended_16";
    if !bench.wants(scenario) {
        return;
    }
    eprintln!("{scenario}");
    let client = bench.client.clone();
    let c = contended(bench.settings, &bench.raw, 16, || {
        client.get_fair_lock("bench:fair_contended_16")
    })
    .await;
    let mut row = contended_row(bench, scenario, 16, &c);
    let ping = bench.ping;
    let cross = row.f64("cross_task_handoff_p50_us");
    let scripts = row.f64("acquire_scripts_per_acquisition");
    let all_scripts = row.f64("lock_scripts_per_acquisition");
    let ok = row
        .extra
        .get("counter_ok")
        .and_then(Json::as_bool)
        .unwrap_or(false);
    row.target(
        cross / ping <= MAX_HANDOFF_PINGS,
        format!(
            "fair_contended_16 hand-off: p50 {:.0} µs = {:.2} PING round trips (target ≤ {MAX_HANDOFF_PINGS})",
            cross,
            cross / ping
        ),
    );
    row.target(
        scripts <= MAX_ACQUIRE_SCRIPTS,
        format!(
            "fair_contended_16 scripts: {scripts:.2} acquire scripts per acquisition (target ≤ {MAX_ACQUIRE_SCRIPTS}); with the unlock script {all_scripts:.2}"
        ),
    );
    row.target(ok, "fair_contended_16 counter equals acquisitions".into());
    bench.push(row);
}
