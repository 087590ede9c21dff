//! Real Redisson's own figures beside the crate's: Redisson's benchmark (`bench.sh` of
//! the real-Java drivers, versions 3.23.3 and 4.7.0) on the same server, in the same
//! sitting, right after the crate's scenarios, for the scenarios both have. Each of the
//! crate's rows gets every version's rate and the ratio to the best of them
//! (`vs_best_java`; for `watchdog_10k`, whose rate is fixed by the period, the ratio of
//! the CPU a core spends: the JVM's against the crate's).
//!
//! The drivers are found at `REDISSON_JAVA_DIR`, else `../shared/redisson-java` beside the
//! repository (they need their `deps.sh` once). Without them the bench says so on stderr
//! and reports the crate alone: a bench is not a test, and a user's clone has no Java.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value as Json, json};

use crate::Bench;
use crate::report::{Row, fmt_opt, round1, round3};

/// `BENCH_ONLY=java` (with the crate's scenarios to compare) runs it; it runs by default.
pub const SCENARIOS: &[&str] = &["java"];

/// The scenarios Redisson's benchmark has under the same names and loops.
const SHARED: &[&str] = &[
    "uncontended_1",
    "uncontended_lease_1",
    "distinct_16",
    "distinct_64",
    "contended_4",
    "contended_16",
    "trylock_wait_16",
    "watchdog_10k",
];

const VERSIONS: [&str; 2] = ["3.23.3", "4.7.0"];

/// Redisson's JIT needs a few seconds before its figures settle (its own default is 5).
const MIN_JAVA_WARMUP_SECS: f64 = 3.0;

fn java_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("REDISSON_JAVA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/redisson-java")
        });
    dir.join("bench.sh").is_file().then_some(dir)
}

/// One version's line for one scenario.
struct JavaFigure {
    version: &'static str,
    ops_per_s: f64,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    evals_per_op: Option<f64>,
    cpu_pct: Option<f64>,
}

pub async fn run(bench: &mut Bench) {
    let selected = bench.settings.only.is_none() || bench.wants("java");
    let scenarios: Vec<&str> = SHARED
        .iter()
        .copied()
        .filter(|s| bench.row(s).is_some())
        .collect();
    if !selected || scenarios.is_empty() {
        return;
    }
    let Some(dir) = java_dir() else {
        eprintln!(
            "java: no Redisson drivers (REDISSON_JAVA_DIR, or ../shared/redisson-java beside \
             the repository): the crate's figures stand alone"
        );
        return;
    };
    let mut figures: Vec<(&str, JavaFigure)> = Vec::new();
    for version in VERSIONS {
        eprintln!(
            "java: Redisson {version}'s benchmark: {}",
            scenarios.join(",")
        );
        let args = vec![
            version.to_owned(),
            bench.url.clone(),
            "--duration".into(),
            format!("{}", bench.settings.secs),
            "--warmup".into(),
            format!("{}", bench.settings.warmup.max(MIN_JAVA_WARMUP_SECS)),
            "--scenarios".into(),
            scenarios.join(","),
        ];
        let script = dir.join("bench.sh");
        let output = tokio::task::spawn_blocking(move || Command::new(script).args(args).output())
            .await
            .expect("bench.sh task");
        let output = match output {
            Ok(output) if output.status.success() => output,
            Ok(output) => {
                eprintln!(
                    "java: bench.sh {version} failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                );
                continue;
            }
            Err(error) => {
                eprintln!("java: cannot run bench.sh: {error}");
                continue;
            }
        };
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let Ok(json) = serde_json::from_str::<Json>(line) else {
                continue;
            };
            println!("{line}");
            let (Some(scenario), Some(ops)) = (
                json.get("scenario").and_then(Json::as_str),
                json.get("ops_per_s").and_then(Json::as_f64),
            ) else {
                continue;
            };
            let Some(scenario) = SHARED.iter().copied().find(|s| *s == scenario) else {
                continue;
            };
            let num = |key: &str| json.get(key).and_then(Json::as_f64);
            figures.push((
                scenario,
                JavaFigure {
                    version,
                    ops_per_s: ops,
                    p50_us: num("p50_us"),
                    p99_us: num("p99_us"),
                    evals_per_op: num("evals_per_op"),
                    cpu_pct: num("jvm_cpu_pct"),
                },
            ));
        }
    }
    for scenario in scenarios {
        let mine: Vec<&JavaFigure> = figures
            .iter()
            .filter(|(s, _)| *s == scenario)
            .map(|(_, f)| f)
            .collect();
        let Some(row) = bench.rows.iter_mut().find(|r| r.scenario == scenario) else {
            continue;
        };
        compare(row, &mine);
    }
}

/// Puts the Java figures of one scenario into the crate's row.
fn compare(row: &mut Row, java: &[&JavaFigure]) {
    if java.is_empty() {
        return;
    }
    for figure in java {
        let v = figure.version;
        row.set(
            &format!("java_{v}_ops_per_s"),
            json!(round1(figure.ops_per_s)),
        );
        row.set(
            &format!("java_{v}_p50_us"),
            json!(figure.p50_us.map(round1)),
        );
        row.set(
            &format!("java_{v}_p99_us"),
            json!(figure.p99_us.map(round1)),
        );
        row.set(
            &format!("java_{v}_evals_per_op"),
            json!(figure.evals_per_op),
        );
        if let Some(cpu) = figure.cpu_pct {
            row.set(&format!("java_{v}_cpu_pct_of_one_core"), json!(round3(cpu)));
        }
    }
    let note = if row.scenario == "watchdog_10k" {
        // The renewal rate is the period's: compare what keeping 10,000 locks costs.
        let mine = row.f64("cpu_pct_of_one_core");
        let Some(best) = java
            .iter()
            .filter_map(|f| f.cpu_pct.map(|c| (f.version, c)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return;
        };
        row.set("best_java", json!(best.0));
        row.set("vs_best_java_cpu", json!(round3(best.1 / mine)));
        format!(
            "best Java ({}) {:.2}% of a core: {:.1} × the crate's CPU",
            best.0,
            best.1,
            best.1 / mine
        )
    } else {
        let Some(best) = java
            .iter()
            .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
        else {
            return;
        };
        let Some(mine) = row.ops_per_s else { return };
        row.set("best_java", json!(best.version));
        row.set("vs_best_java", json!(round3(mine / best.ops_per_s)));
        format!(
            "best Java ({}) {} ops/s: the crate {:.2} × its rate",
            best.version,
            fmt_opt(Some(best.ops_per_s), 0),
            mine / best.ops_per_s
        )
    };
    row.target_note(format!("info {} vs Java: {note}", row.scenario));
    if !row.notes.is_empty() {
        row.notes.push_str("; ");
    }
    row.notes.push_str(&note);
}

/// The table of the crate's rate beside each Java version's, for the rows that have them.
pub fn print(bench: &Bench) {
    let rows: Vec<&Row> = bench
        .rows
        .iter()
        .filter(|r| r.extra.contains_key("best_java"))
        .collect();
    if rows.is_empty() {
        return;
    }
    println!();
    println!("Beside real Redisson (its own benchmark, same server, same sitting):");
    println!("| scenario | crate ops/s | Redisson 3.23.3 | Redisson 4.7.0 | crate ÷ best Java |");
    println!("|---|---:|---:|---:|---:|");
    for row in rows {
        let java = |v: &str| {
            let ops = row.f64(&format!("java_{v}_ops_per_s"));
            let cpu = row.f64(&format!("java_{v}_cpu_pct_of_one_core"));
            if row.scenario == "watchdog_10k" && !cpu.is_nan() {
                format!("{cpu:.2}% CPU")
            } else if ops.is_nan() {
                "–".into()
            } else {
                fmt_opt(Some(ops), 0)
            }
        };
        let (mine, ratio) = if row.scenario == "watchdog_10k" {
            (
                format!("{:.2}% CPU", row.f64("cpu_pct_of_one_core")),
                format!("{:.1} × less CPU", row.f64("vs_best_java_cpu")),
            )
        } else {
            (
                fmt_opt(row.ops_per_s, 0),
                format!("{:.2}", row.f64("vs_best_java")),
            )
        };
        println!(
            "| {} | {} | {} | {} | {} |",
            row.scenario,
            mine,
            java("3.23.3"),
            java("4.7.0"),
            ratio
        );
    }
}
