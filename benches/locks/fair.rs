//! FairLock (`Lock<Fair>`): `fair_contended_16`, 16 tasks on one fair lock, each
//! incrementing a plain counter under it (the shared contended loop of `measure.rs`).
//!
//! A fair unlock publishes only to the head of the queue, which then runs one acquire
//! script: the hand-off should cost about one published message plus one script round
//! trip, and each acquisition about two acquire scripts (queue, then take when woken).

use crate::measure::{contended_scenario, counter_target};
use crate::report::Bound::AtMost;
use crate::Bench;

pub const SCENARIOS: &[&str] = &["fair_contended_16"];

/// Targets: cross-task hand-off p50 ≤ 3 PING round trips; ≤ 3 acquire scripts per
/// acquisition.
const MAX_HANDOFF_PINGS: f64 = 3.0;
const MAX_ACQUIRE_SCRIPTS: f64 = 3.0;
/// Target (issue 21): at most 3 scripts per acquisition with the unlock (Redisson's wait
/// loop needs 4: queue, retry after subscribing, take when woken, unlock).
const MAX_LOCK_SCRIPTS: f64 = 3.0;
/// Allocations per `fair_contended_16` acquisition before issue 21 (process-wide, this
/// bench's counting allocator): 185. The target is at most half.
const ALLOCS_BEFORE: f64 = 185.0;

pub async fn run(bench: &mut Bench) {
    let client = bench.client.clone();
    let Some((_, mut row)) = contended_scenario(bench, "fair_contended_16", 16, || {
        client.get_fair_lock("bench:fair_contended_16")
    })
    .await
    else {
        return;
    };
    let cross = row.f64("cross_task_handoff_p50_us");
    let pings = cross / bench.ping;
    let scripts = row.f64("acquire_scripts_per_acquisition");
    let all_scripts = row.f64("lock_scripts_per_acquisition");
    row.bound(pings, 2, AtMost(MAX_HANDOFF_PINGS), |pings, target| {
        format!("fair_contended_16 hand-off: p50 {cross:.0} µs = {pings} PING round trips (target {target})")
    });
    row.bound(scripts, 2, AtMost(MAX_ACQUIRE_SCRIPTS), |scripts, target| {
        format!("fair_contended_16 scripts: {scripts} acquire scripts per acquisition (target {target}); with the unlock script {all_scripts:.2}")
    });
    row.bound(all_scripts, 2, AtMost(MAX_LOCK_SCRIPTS), |scripts, target| {
        format!("fair_contended_16 scripts with the unlock: {scripts} per acquisition (target {target}; Redisson's loop: 4)")
    });
    let allocs = row.f64("allocs_per_acquisition");
    row.bound(allocs, 1, AtMost(ALLOCS_BEFORE / 2.0), |allocs, target| {
        format!("fair_contended_16 allocations: {allocs} per acquisition (target {target}, half of {ALLOCS_BEFORE:.0} before)")
    });
    counter_target(&mut row);
    bench.push(row);
}
