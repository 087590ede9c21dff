//! `fleet_share`: a hot `RLock` shared by real Redisson 3.23.3, real Redisson 4.7.0 and
//! the crate, three threads (tasks) each, lock / hold 0–5 ms / unlock, 200 rounds each
//! (`tests/support/fleet.rs`), against a fleet of three Java processes on the same name in
//! the same sitting: who finishes first, each one's share of the acquisitions made by
//! then, and the rate with the crate against the Java-only fleet's.
//!
//! It needs the real-Java drivers (`REDISSON_JAVA_DIR`, else `../shared/redisson-java`);
//! without them it says so and reports nothing. `BENCH_SHARE_RUNS` (3): races of each.

use serde_json::json;

use crate::Bench;
use crate::report::Bound::AtMost;
use crate::report::{Row, round3};
use crate::support::fleet::{ROUNDS, race, report};

pub const SCENARIOS: &[&str] = &["fleet_share"];

/// The target (issue 39): when the crate's process is the first to finish, it has made at
/// most this share of the acquisitions made by then.
const MAX_CRATE_SHARE_WHEN_FIRST: f64 = 0.45;

fn java_found() -> bool {
    let dir = std::env::var_os("REDISSON_JAVA_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/redisson-java")
        });
    dir.join("run.sh").is_file()
}

pub async fn run(bench: &mut Bench) {
    if !bench.wants("fleet_share") {
        return;
    }
    if !java_found() {
        eprintln!("fleet_share: no Redisson drivers (REDISSON_JAVA_DIR): not run");
        return;
    }
    let runs: usize = std::env::var("BENCH_SHARE_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut crate_first = Vec::new();
    let mut crate_shares = Vec::new();
    let mut rate_ratios = Vec::new();
    let mut rates = Vec::new();
    let mut lines = Vec::new();
    for run in 0..runs {
        eprintln!("fleet_share {}/{runs}", run + 1);
        let java_only = race(
            &bench.url,
            None,
            bench.raw.clone(),
            &format!("bj{run}"),
            ROUNDS,
        )
        .await;
        let client = redisson_lock::Client::connect(
            redisson_lock::Config::from_url(&bench.url).expect("url"),
        )
        .await
        .expect("connect");
        let mixed = race(
            &bench.url,
            Some(client),
            bench.raw.clone(),
            &format!("bm{run}"),
            ROUNDS,
        )
        .await;
        lines.push(report("java only", &java_only));
        lines.push(report("with the crate", &mixed));
        let share = mixed.share_of("crate");
        crate_shares.push(share);
        if mixed.first == "crate" {
            crate_first.push(share);
        }
        rates.push(mixed.rate());
        rate_ratios.push(mixed.rate() / java_only.rate());
    }
    for line in &lines {
        eprintln!("{line}");
    }
    let mut row = Row::new("fleet_share");
    row.tasks = Some(3);
    row.ops_per_s = Some(rates.iter().sum::<f64>() / rates.len() as f64);
    let worst_ratio = rate_ratios.iter().copied().fold(f64::INFINITY, f64::min);
    row.ratio = Some(worst_ratio);
    row.ratio_to =
        "the rate of a Java-only fleet (3 processes) in the same sitting (lowest of the runs)"
            .into();
    row.set("runs", json!(runs));
    row.set(
        "crate_shares_at_first_finish",
        json!(crate_shares.iter().map(|s| round3(*s)).collect::<Vec<_>>()),
    );
    row.set("crate_finished_first", json!(crate_first.len()));
    row.set(
        "rate_vs_java_only",
        json!(rate_ratios.iter().map(|r| round3(*r)).collect::<Vec<_>>()),
    );
    row.set("races", json!(lines));
    row.notes = format!(
        "the crate's share at the first finish {}; it finished first {} of {runs} times",
        crate_shares
            .iter()
            .map(|s| format!("{:.0}%", 100.0 * s))
            .collect::<Vec<_>>()
            .join(", "),
        crate_first.len()
    );
    let worst_first = crate_first.iter().copied().fold(0.0, f64::max);
    if crate_first.is_empty() {
        row.target_note("n/a fleet_share: the crate never finished first".into());
    } else {
        row.bound(worst_first, 3, AtMost(MAX_CRATE_SHARE_WHEN_FIRST), |share, target| {
            format!("fleet_share: the crate's share when it finished first {share} (target {target})")
        });
    }
    row.bound(
        worst_ratio,
        2,
        crate::report::Bound::AtLeast(1.0),
        |ratio, target| {
            format!("fleet_share rate: {ratio} × the Java-only fleet's (target {target})")
        },
    );
    bench.push(row);
}
