//! `cargo bench --bench locks`: throughput, latency, watchdog cost and memory of
//! redisson-lock, next to the limits of the Redis server it runs against (measured in the
//! same run with `redis-benchmark`). See docs/benchmarks.md for results and how to read
//! them.
//!
//! The bench starts its own `redis-server` on a free loopback port (persistence off) and
//! kills it at the end; with `REDIS_URL` set it uses that server instead (it then writes
//! keys under `bench:`, runs `CONFIG RESETSTAT`, and does not flush anything).
//!
//! Environment (all optional):
//! * `BENCH_SECS` (5): measured seconds per scenario; `BENCH_WARMUP_SECS` (1): warm-up.
//! * `BENCH_HOLD_SECS` (25): how long `watchdog_10k` holds its locks.
//! * `BENCH_LOCKS` (10000): locks in `watchdog_10k`, and held locks / waiting tasks in
//!   `memory`.
//! * `BENCH_ONLY`: comma-separated scenario names (plus `limits`) to run only those. A
//!   scenario whose target compares with another scenario (`uncontended_1` with
//!   `bare_fred_1`, `distinct_64` with `bare_fred_64`, `rw_read_16` with `distinct_16`,
//!   `spin_contended_16` with `contended_16`, `contended_16` with `bare_chain_16`) measures that one too, without a
//!   row of its own, when it is not selected. Unknown names are reported on stderr.
//! * `BENCH_PLOT`: where to draw the SVG plot (default
//!   `target/bench/benchmarks-pairs.svg`, under `CARGO_TARGET_DIR` if set, so that a run
//!   leaves the working tree clean; `BENCH_PLOT=docs/benchmarks-pairs.svg` updates the
//!   docs' copy); `BENCH_PLOT=` (empty) draws none.
//! * `BENCH_NO_TRACKING`: set, the bench's clients run without key tracking
//!   (`ConfigBuilder::key_tracking(false)`), to see what telling holders at once costs.
//!
//! Output: one JSON object per line per scenario on stdout, then a Markdown table and the
//! targets with PASS/MISS (each judged number printed with the digits it needs to read on
//! the same side of its limit as the verdict). Progress goes to stderr.
//!
//! RLock's scenarios and what they add to the common columns (ops/s, p50/p99 µs, ratio):
//! * `uncontended_1`, `uncontended_lease_1`: one task, lock/unlock pairs on its own name
//!   (watchdog mode; a 10 s lease). `bench_cpu_us_per_op` (this process's CPU per pair),
//!   `allocs_per_pair` and `alloc_bytes_per_pair`, and a rotation of crate pair / PING /
//!   bare pair on one task (`interleaved_*_p50_us`, `pair_p50_vs_bare_p50`: the crate's
//!   pair against the same two scripts without the crate, at the same moment).
//!   `uncontended_1` also reports `pair_p50_vs_bare_fred_1_p50`; `uncontended_lease_1`
//!   its scripts and commands per acquisition (`lock_scripts_per_acquisition`,
//!   `client_commands_per_acquisition`, `all_commands_per_acquisition`: those run
//!   inside scripts included), as `trylock_wait_16` does.
//! * `bare_fred_1`: the baseline without the crate: one task sending the two `EVALSHA`s
//!   of an RLock pair (acquire, then release with its channel and latch keys) through the
//!   crate's fred client (`client.redis()`), in the same loop as `uncontended_1`; pairs/s,
//!   p50/p99, CPU and allocations per pair.
//! * `distinct_16/64/1024`: N tasks, one name each. `distinct_64` also reports
//!   `bare_fred_64_pairs_per_s`, `bare_fred_64_cpu_us_per_pair` and
//!   `pairs_vs_bare_fred_64`: fred's own floor at the same concurrency.
//! * `bare_fred_64`: 64 tasks, one name each, looping `bare_fred_1`'s two `EVALSHA`s.
//! * `contended_4/16`: N tasks on one name, a plain counter under the lock: hand-offs
//!   (from the moment the releasing task calls `unlock()` to the return of the next
//!   holder's `lock()`: never negative, even when a local hand-off lets the next holder
//!   return before the releasing `unlock()` does), scripts and commands per acquisition,
//!   `allocs_per_acquisition`, `counter_ok`.
//!   `contended_16` also reports `bare_chain_16_steps_per_s` and
//!   `acquisitions_vs_bare_chain_16`.
//! * `bare_chain_16`: the floor of a hand-off chain without the crate: 16 tasks pass a
//!   turn round a ring; the task whose turn it is sends one `EVALSHA` (RLock's acquire)
//!   through the crate's fred client, then wakes the next (one script and one task
//!   wake-up per step, as a local hand-off).
//! * `contended_mixed`: the same loop with two clients (two `Client::connect`s) × 8 tasks
//!   on one name: besides the above, `client_N_share` of the acquisitions and
//!   `client_N_wait_p50_us` / `client_N_wait_p99_us` (time in `lock()`) per client.
//! * `fleet_share`: a hot RLock shared by real Redisson 3.23.3, 4.7.0 and the crate (3
//!   threads / tasks each, 200 rounds, hold 0–5 ms; `tests/support/fleet.rs`), against a
//!   fleet of three Java processes in the same sitting: the crate's share of the
//!   acquisitions when the first process finished, and the rate against the Java-only
//!   fleet's (`BENCH_SHARE_RUNS` races, 3 by default; needs the real-Java drivers).
//! * `map_entry_uncontended_1` (`map_entry`): `uncontended_1`'s pair on a map entry's lock
//!   (`client.map(..).get_lock(key)`), against an RLock pair timed in rotation, and
//!   `handle_ns` (making the handle: encoding, hash, name).
//! * `pes_uncontended_1`: a permit-expirable semaphore's `acquire(None)` + `release(id)`
//!   pair on one task, against the two-round-trip floor (the same two scripts sent
//!   without the crate) and a PING, timed in rotation.
//! * `trylock_wait_16`: 16 tasks, `try_lock_with_lease(200 ms, 5 s)` on one name: the
//!   share of tries that succeed, scripts and commands per acquisition (as above).
//! * `watchdog_10k`; `memory` (`bytes_per_held_lock`, `bytes_per_waiting_task`: VmRSS
//!   growth; `heap_bytes_per_held_lock`, `heap_allocations_per_held_lock`,
//!   `heap_bytes_per_waiting_task`: the live heap, which does not move between runs).
//! * `latch_fanout_64` (`latch`): one `count_down` releasing 64 waiting tasks; the time
//!   to the last one's release against the PING round trip.
//! * `told_at_once` (`told`): another connection changes a held lock (`DEL`, `UNLINK`,
//!   `HDEL` of the owner's field, `PEXPIRE 100`); the time to the holder's first signal,
//!   p99 against issue 48's 50 ms and in PING round trips.
//! * `holds_curve` (`curves`, opt-in: only when `BENCH_ONLY` names it): 10k / 100k / 1M
//!   locks held by one client, a row `holds_<N>` each: `heap_bytes_per_hold`,
//!   `rss_bytes_per_hold`, `renewal_scripts_per_period`, `cpu_ms_per_period`,
//!   `cpu_ns_per_hold_per_period`, `alive_after` (`BENCH_CURVE_HOLDS` sets the steps).
//! * `java`: real Redisson's own benchmark (3.23.3 and 4.7.0, `bench.sh` of
//!   `REDISSON_JAVA_DIR` or `../shared/redisson-java`) on the same server after the
//!   crate's scenarios, for the scenarios both have: `java_<version>_ops_per_s` and
//!   `vs_best_java` on the crate's rows, and a table of both (see `java.rs`).
//!
//! Allocations come from a counting global allocator (`alloc_count`) read at the edges of
//! each measured window: process-wide, so fred's connection task, tokio and the bench's
//! bookkeeping are in them, not only the lock calls.
//!
//! Layout: one module per lock kind's scenarios (`reentrant`, `watchdog`, `fenced`,
//! `fair`, `spin`, `read_write`, `multi`, `told`), each with `SCENARIOS` (its names) and
//! `run(&mut Bench)` (runs the selected ones and pushes one [`report::Row`] each, with its
//! target lines); `limits` (the server's), `measure` (the driver, percentiles, CPU and
//! allocations per window, the timed loop of a task (`Laps`, `spawn_laps`), operations
//! timed in rotation by one task (`Rotation`), the shared contended loop, with tasks in
//! groups for several clients), `alloc_count` (the counting allocator), `report` (JSON
//! lines, tables, PASS/MISS: a target on a number is one `Row::bound`), `plot`. A new
//! lock kind adds one module and two lines here (its `SCENARIOS` in [`known_scenarios`],
//! its `run` in [`run`]).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it does nothing.

use redisson_lock::Client;
use redisson_lock::fred::interfaces::ClientLike;

// The tests' redis-server starter, shared rather than copied.
#[path = "../../tests/support/mod.rs"]
mod support;

mod alloc_count;
mod curves;
mod fair;
mod fenced;
mod fleet;
mod java;
mod latch;
mod limits;
mod map_entry;
mod measure;
mod multi;
mod permits;
mod plot;
mod read_write;
mod reentrant;
mod report;
mod semaphore;
mod server;
mod settings;
mod spin;
mod told;
mod watchdog;

use limits::Limits;
use report::Row;
use settings::Settings;

type Raw = redisson_lock::fred::prelude::Client;

/// What every scenario gets: the settings, the clients, the server's limits, the PING
/// round trip to compare hand-offs with, and the rows so far.
pub struct Bench {
    pub settings: &'static Settings,
    /// The server's URL, for scenarios that connect clients of their own.
    pub url: String,
    pub client: Client,
    pub raw: Raw,
    pub limits: Limits,
    /// The PING round trip (µs) hand-offs are compared with: the one measured interleaved
    /// with lock pairs in `uncontended_1` once it ran (same moment, same load), else the
    /// back-to-back loop of the limits.
    pub ping: f64,
    pub interleaved_ping: Option<f64>,
    pub rows: Vec<Row>,
}

impl Bench {
    pub fn wants(&self, scenario: &str) -> bool {
        self.settings.wants(scenario)
    }

    /// `redis-benchmark EVALSHA -c 1 / 2`: one client's script pairs per second.
    pub fn serial_limit(&self) -> Option<f64> {
        self.limits.evalsha_c1.map(|r| r / 2.0)
    }

    /// `redis-benchmark EVALSHA -c 50 -P 16 / 2`: pipelined script pairs per second.
    pub fn parallel_limit(&self) -> Option<f64> {
        self.limits.evalsha_c50_p16.map(|r| r / 2.0)
    }

    /// The row of `scenario`, if it ran.
    pub fn row(&self, scenario: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.scenario == scenario)
    }

    /// Prints the row's JSON line and keeps it for the tables.
    pub fn push(&mut self, row: Row) {
        println!("{}", row.json());
        self.rows.push(row);
    }
}

/// Every scenario name `BENCH_ONLY` accepts.
fn known_scenarios() -> Vec<&'static str> {
    [
        &["limits"][..],
        watchdog::SCENARIOS,
        curves::SCENARIOS,
        reentrant::SCENARIOS,
        fenced::SCENARIOS,
        map_entry::SCENARIOS,
        fair::SCENARIOS,
        spin::SCENARIOS,
        read_write::SCENARIOS,
        multi::SCENARIOS,
        fleet::SCENARIOS,
        latch::SCENARIOS,
        permits::SCENARIOS,
        semaphore::SCENARIOS,
        told::SCENARIOS,
        java::SCENARIOS,
    ]
    .concat()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "benches/locks/main.rs: run it with `cargo bench --bench locks`; nothing to do here"
        );
        return;
    }
    let settings = Settings::from_env();
    settings.check_names(&known_scenarios());
    let server = server::Server::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let settings: &'static Settings = Box::leak(Box::new(settings));
    let (url, owned) = (server.url.clone(), server.owned());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(run(settings, url, owned))
    }));
    drop(runtime);
    drop(server);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn run(settings: &'static Settings, url: String, owned: bool) {
    let raw = server::raw_client(&url).await;
    server::learn_server_pid(&raw).await;
    let client = server::lock_client(&url, |c| c).await;

    // Memory first, while the allocator holds nothing from earlier scenarios; then the
    // watchdog, before the throughput scenarios (see watchdog.rs). The watchdog's JSON
    // line is printed now, its row listed after the others.
    let memory = watchdog::memory(settings, &client, &raw).await;
    let watchdog_row = watchdog::watchdog_row(settings, &url, &raw).await;

    let limits = limits::measure(settings, &url, &client, &raw).await;
    println!("{}", limits.json());
    if owned {
        let _: () = raw.flushall(false).await.expect("FLUSHALL");
    }
    let mut bench = Bench {
        settings,
        url,
        ping: limits.ping_p50_us.unwrap_or(f64::NAN),
        client,
        raw,
        limits,
        interleaved_ping: None,
        rows: Vec::new(),
    };

    // RLock's scenarios first, so that they run as they did before the other kinds had
    // any (before/after comparisons); then one module per kind.
    reentrant::run(&mut bench).await;
    fenced::run(&mut bench).await;
    map_entry::run(&mut bench).await;
    fair::run(&mut bench).await;
    spin::run(&mut bench).await;
    read_write::run(&mut bench).await;
    multi::run(&mut bench).await;
    fleet::run(&mut bench).await;
    latch::run(&mut bench).await;
    permits::run(&mut bench).await;
    semaphore::run(&mut bench).await;
    told::run(&mut bench).await;
    // Opt-in (minutes at a million holds): only when `BENCH_ONLY` names it.
    curves::run(&mut bench).await;

    if let Some(row) = watchdog_row {
        bench.rows.push(row);
    }
    // Real Redisson's own benchmark on the same server, now that the crate's ran.
    java::run(&mut bench).await;
    if let Some(m) = &memory {
        let row = watchdog::memory_row(m, &bench.client);
        bench.push(row);
    }
    bench.client.shutdown().await.expect("shutdown");

    report::print(&bench);
    java::print(&bench);
    plot::draw(&bench);
}
