//! Semaphore (Redisson's `RSemaphore`): `semaphore_16`, 16 tasks sharing a semaphore of
//! 4 permits, each looping acquire(1) → yield → release through the guard. What it reports:
//! acquisitions/s against the server's limit (as every contended row), the p50/p99 of an
//! acquire + release pair (the wait included), scripts per acquisition (acquire attempts
//! and the release; the floor is 2), and the most holders seen at once (never above 4).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use crate::Bench;
use crate::measure::{
    Phase, allocs_per_op, drive_counted, join_sorted, p50_p99, set_cpu_per_op, spawn_laps,
};
use crate::report::{Row, round3};
use crate::server::script_calls;

pub const SCENARIOS: &[&str] = &["semaphore_16"];

const TASKS: usize = 16;
const PERMITS: usize = 4;

pub async fn run(bench: &mut Bench) {
    let scenario = "semaphore_16";
    if !bench.wants(scenario) {
        return;
    }
    eprintln!("  {scenario}");
    let semaphore = bench.client.get_semaphore("bench:semaphore_16");
    semaphore.delete().await.expect("delete");
    assert!(
        semaphore
            .try_set_permits(PERMITS as i64)
            .await
            .expect("try_set_permits")
    );
    let phase = Phase::new();
    let holders = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let handles = spawn_laps(&phase, TASKS, |_, mut laps| {
        let (semaphore, holders, most) = (semaphore.clone(), holders.clone(), most.clone());
        async move {
            while let Some(lap) = laps.start() {
                let permit = semaphore.acquire(1).await.expect("acquire");
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Hold the permit across an await, so that holders can overlap.
                tokio::task::yield_now().await;
                holders.fetch_sub(1, Ordering::SeqCst);
                permit.release().await.expect("release");
                laps.end(lap);
            }
            laps.into_ns()
        }
    });
    let (window, stats) = drive_counted(bench.settings, &phase, &bench.raw).await;
    let laps = join_sorted(handles, scenario).await;
    let per_s = laps.len() as f64 / window.as_secs_f64();
    let (p50, p99) = p50_p99(&laps);
    let scripts = script_calls(&stats) as f64 / laps.len().max(1) as f64;
    let most = most.load(Ordering::SeqCst);
    let left = semaphore.available_permits().await.expect("available");

    let mut row = Row::new(scenario);
    row.tasks = Some(TASKS);
    row.ops_per_s = Some(per_s);
    row.p50_us = p50;
    row.p99_us = p99;
    row.ratio = bench.serial_limit().map(|l| per_s / l);
    row.ratio_to = "redis-benchmark EVALSHA -c 1 / 2".into();
    set_cpu_per_op(&mut row, per_s, bench.settings);
    row.set("permits", json!(PERMITS));
    row.set("parallel_limit_per_s", json!(bench.parallel_limit()));
    row.set(
        "ratio_to_parallel_limit",
        json!(bench.parallel_limit().map(|l| round3(per_s / l))),
    );
    row.set("scripts_per_acquisition", json!(round3(scripts)));
    row.set("allocs_per_acquisition", json!(allocs_per_op(per_s)));
    row.set("most_holders", json!(most));
    row.set("permits_left", json!(left));
    row.set("commandstats", json!(stats));
    row.notes = format!(
        "{PERMITS} permits, {TASKS} tasks; per acquisition {scripts:.2} scripts (floor 2: acquire + release); at most {most} holders at once; {left} permits left after"
    );
    row.target(
        most <= PERMITS && left == PERMITS as i64,
        format!("{scenario}: at most {most} holders at once (limit {PERMITS}), {left} permits left (all {PERMITS} back)"),
    );
    row.target_note(format!(
        "info {scenario}: {scripts:.2} scripts per acquisition with its release (floor 2): a release's count wakes that many waiters, and a waiter that loses the race to a task acquiring without waiting tries in vain, as in Redisson"
    ));
    semaphore.delete().await.expect("delete");
    bench.push(row);
}
