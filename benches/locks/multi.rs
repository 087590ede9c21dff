//! MultiLock / RedLock scenarios: a placeholder, filled in when those kinds land.
//!
//! The pattern every kind module follows (see `fenced.rs` for a small complete one):
//!
//! * `SCENARIOS`: the names this module answers to in `BENCH_ONLY` (and prints as
//!   `scenario` in its JSON lines), e.g. `multi_uncontended_3`, `redlock_contended_16`.
//! * `run(&mut Bench)`: for each selected scenario (`bench.wants(name)`), measure with the
//!   helpers of `measure.rs` (`drive`/`drive_counted` for a warm-up and a window, the
//!   shared `contended` loop for any `Lock<K>`), build a `report::Row` (ops/s, p50/p99,
//!   a `ratio` with its `ratio_to`, never an absolute time alone), add its targets with
//!   `row.target(ok, text)`, and `bench.push(row)` (prints the JSON line).
//! * The row of another scenario of the same run is `bench.row(name)`; if a target
//!   compares with one that may not be selected, measure it here too (as `spin.rs` does).

use crate::Bench;

pub const SCENARIOS: &[&str] = &[];

pub async fn run(_bench: &mut Bench) {}
