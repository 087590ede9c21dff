//! The bench's settings, from the environment (see the crate doc in `main.rs`).

use std::path::PathBuf;

pub struct Settings {
    pub secs: f64,
    pub warmup: f64,
    pub hold: f64,
    pub locks: usize,
    pub only: Option<Vec<String>>,
    pub plot: Option<PathBuf>,
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// `<target dir>/bench/benchmarks-pairs.svg`: a run leaves the working tree as it was
/// (`CARGO_TARGET_DIR` if set, else `target/` of the package).
fn default_plot() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target")))
        .join("bench")
        .join("benchmarks-pairs.svg")
}

impl Settings {
    pub fn from_env() -> Settings {
        let only = std::env::var("BENCH_ONLY")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
        let plot = match std::env::var("BENCH_PLOT") {
            Ok(path) if path.is_empty() => None,
            Ok(path) => Some(PathBuf::from(path)),
            Err(_) => Some(default_plot()),
        };
        Settings {
            secs: env_f64("BENCH_SECS", 5.0).max(0.1),
            warmup: env_f64("BENCH_WARMUP_SECS", 1.0).max(0.0),
            hold: env_f64("BENCH_HOLD_SECS", 25.0).max(1.0),
            locks: env_f64("BENCH_LOCKS", 10_000.0).max(1.0) as usize,
            only,
            plot,
        }
    }

    /// Whether `BENCH_ONLY` names `scenario`: for the opt-in scenarios, which a plain run
    /// leaves out (`holds_curve`).
    pub fn names(&self, scenario: &str) -> bool {
        self.only
            .as_ref()
            .is_some_and(|only| only.iter().any(|s| s == scenario))
    }

    /// Whether `scenario` runs: every scenario without `BENCH_ONLY`, else the names it lists.
    pub fn wants(&self, scenario: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|s| s == scenario))
    }

    /// Warns (stderr) about `BENCH_ONLY` names no module knows, so a typo does not pass
    /// for an empty run.
    pub fn check_names(&self, known: &[&str]) {
        let Some(only) = &self.only else { return };
        let unknown: Vec<&str> = only
            .iter()
            .map(String::as_str)
            .filter(|name| !known.contains(name))
            .collect();
        if !unknown.is_empty() {
            eprintln!(
                "BENCH_ONLY: unknown scenario(s) {}; known: {}",
                unknown.join(", "),
                known.join(", ")
            );
        }
    }
}
