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
//! * `BENCH_ONLY`: comma-separated scenario names (plus `limits`) to run only those.
//! * `BENCH_PLOT`: where to draw the SVG plot (default `docs/benchmarks-pairs.svg`);
//!   `BENCH_PLOT=` (empty) draws none.
//!
//! Output: one JSON object per line per scenario on stdout, then a Markdown table and the
//! targets with PASS/MISS. Progress goes to stderr.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it does nothing.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use redisson_lock::fred::interfaces::{ClientLike, LuaInterface};
use redisson_lock::fred::types::InfoKind;
use redisson_lock::{Client, Config, LockOwner, RLock};
use serde_json::{json, Map, Value as Json};

type Raw = redisson_lock::fred::prelude::Client;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

const IMPL: &str = "redisson-lock";
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

// ---- settings ------------------------------------------------------------------------

struct Settings {
    secs: f64,
    warmup: f64,
    hold: f64,
    locks: usize,
    only: Option<Vec<String>>,
    plot: Option<PathBuf>,
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

impl Settings {
    fn from_env() -> Settings {
        let only = std::env::var("BENCH_ONLY")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
        let plot = match std::env::var("BENCH_PLOT") {
            Ok(path) if path.is_empty() => None,
            Ok(path) => Some(PathBuf::from(path)),
            Err(_) => Some(PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/docs/benchmarks-pairs.svg"
            ))),
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

    fn wants(&self, scenario: &str) -> bool {
        self.only
            .as_ref()
            .map_or(true, |only| only.iter().any(|s| s == scenario))
    }
}

// ---- the server ----------------------------------------------------------------------

/// Our own `redis-server` (killed on drop), or the one `REDIS_URL` names.
struct Server {
    child: Option<Child>,
    dir: Option<PathBuf>,
    url: String,
}

impl Server {
    fn start() -> Server {
        if let Ok(url) = std::env::var("REDIS_URL") {
            eprintln!("using REDIS_URL={url}");
            return Server {
                child: None,
                dir: None,
                url,
            };
        }
        let bin = std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into());
        for attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free loopback port");
            let dir = std::env::temp_dir().join(format!(
                "redisson-lock-bench-{}-{attempt}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--dir", dir.to_str().expect("utf-8 temp dir")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {bin} (install redis-server): {e}"));
            let mut server = Server {
                child: Some(child),
                dir: Some(dir),
                url: format!("redis://127.0.0.1:{port}"),
            };
            if server.wait_ready(port) {
                eprintln!("started redis-server on 127.0.0.1:{port}");
                return server;
            }
        }
        panic!("redis-server did not start on a free port after 5 tries");
    }

    fn wait_ready(&mut self, port: u16) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false;
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buf = [0u8; 16];
                if s.write_all(b"PING\r\n").is_ok() {
                    if let Ok(n) = s.read(&mut buf) {
                        if buf[..n].starts_with(b"+PONG") {
                            return true;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn owned(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

async fn raw_client(url: &str) -> Raw {
    let config = redisson_lock::fred::prelude::Config::from_url(url).expect("REDIS_URL");
    let client = redisson_lock::fred::prelude::Builder::from_config(config)
        .build()
        .expect("fred client");
    client.init().await.expect("connect to redis");
    client
}

async fn reset_stats(raw: &Raw) {
    let _: () = raw
        .custom(redisson_lock::fred::cmd!("CONFIG"), vec!["RESETSTAT"])
        .await
        .expect("CONFIG RESETSTAT");
}

/// `INFO commandstats` as command → calls.
async fn command_stats(raw: &Raw) -> BTreeMap<String, u64> {
    let info: String = raw
        .info(Some(InfoKind::CommandStats))
        .await
        .expect("INFO commandstats");
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_"))
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            let calls = rest
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

fn script_calls(stats: &BTreeMap<String, u64>) -> u64 {
    stats.get("evalsha").copied().unwrap_or(0) + stats.get("eval").copied().unwrap_or(0)
}

/// Commands the scripts run inside Redis (counted by commandstats too), and the bench's
/// own bookkeeping commands: what is left was sent by the lock client.
const NOT_SENT_BY_CLIENT: &[&str] = &[
    "exists",
    "hexists",
    "hincrby",
    "pexpire",
    "pttl",
    "del",
    "publish",
    "spublish",
    "get",
    "set",
    "info",
    "config|resetstat",
];

fn client_commands(stats: &BTreeMap<String, u64>) -> u64 {
    stats
        .iter()
        .filter(|(name, _)| !NOT_SENT_BY_CLIENT.contains(&name.as_str()))
        .map(|(_, calls)| calls)
        .sum()
}

// ---- measurements ----------------------------------------------------------------------

fn percentile_us(sorted_ns: &[u64], p: f64) -> Option<f64> {
    if sorted_ns.is_empty() {
        return None;
    }
    let idx = ((p / 100.0) * (sorted_ns.len() - 1) as f64).round() as usize;
    Some(sorted_ns[idx.min(sorted_ns.len() - 1)] as f64 / 1000.0)
}

fn percentile_signed_us(sorted_ns: &[i64], p: f64) -> Option<f64> {
    if sorted_ns.is_empty() {
        return None;
    }
    let idx = ((p / 100.0) * (sorted_ns.len() - 1) as f64).round() as usize;
    Some(sorted_ns[idx.min(sorted_ns.len() - 1)] as f64 / 1000.0)
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// Resident memory of this process (VmRSS), bytes.
fn vm_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `) `.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks()))
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Warm-up, measure, stop: what the driver tells the tasks.
struct Phase(AtomicU8);

impl Phase {
    fn new() -> Arc<Phase> {
        Arc::new(Phase(AtomicU8::new(WARMUP)))
    }
    fn get(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
    fn set(&self, phase: u8) {
        self.0.store(phase, Ordering::Release)
    }
}

/// Runs warm-up then the measured window; `on_measure` runs when measuring starts and
/// `on_stop` when it ends. Returns the measured window's length.
async fn drive<F, G>(settings: &Settings, phase: &Phase, on_measure: F, on_stop: G) -> Duration
where
    F: std::future::Future<Output = ()>,
    G: std::future::Future<Output = ()>,
{
    tokio::time::sleep(Duration::from_secs_f64(settings.warmup)).await;
    on_measure.await;
    phase.set(MEASURE);
    let start = Instant::now();
    let cpu0 = cpu_time().unwrap_or_default();
    tokio::time::sleep(Duration::from_secs_f64(settings.secs)).await;
    phase.set(STOP);
    let window = start.elapsed();
    let cpu = cpu_time().unwrap_or_default().saturating_sub(cpu0);
    WINDOW_CPU_NS.store(ns(cpu), Ordering::Relaxed);
    on_stop.await;
    window
}

/// The bench process's CPU time during the last measured window.
static WINDOW_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// The bench process's CPU time per operation in the last window, µs (all threads: the
/// tasks, fred's connection tasks, the library's background tasks).
fn cpu_us_per_op(ops_per_s: f64, settings: &Settings) -> f64 {
    let cpu_us = WINDOW_CPU_NS.load(Ordering::Relaxed) as f64 / 1000.0;
    round1(cpu_us / (ops_per_s * settings.secs).max(1.0))
}

// ---- results -------------------------------------------------------------------------

struct Row {
    scenario: String,
    tasks: Option<usize>,
    ops_per_s: Option<f64>,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    ratio: Option<f64>,
    ratio_to: String,
    extra: Map<String, Json>,
    notes: String,
}

impl Row {
    fn new(scenario: &str) -> Row {
        Row {
            scenario: scenario.to_owned(),
            tasks: None,
            ops_per_s: None,
            p50_us: None,
            p99_us: None,
            ratio: None,
            ratio_to: String::new(),
            extra: Map::new(),
            notes: String::new(),
        }
    }

    fn json(&self) -> Json {
        let mut map = Map::new();
        map.insert("impl".into(), json!(IMPL));
        map.insert("scenario".into(), json!(self.scenario));
        map.insert("ops_per_s".into(), json!(self.ops_per_s.map(round1)));
        map.insert("p50_us".into(), json!(self.p50_us.map(round1)));
        map.insert("p99_us".into(), json!(self.p99_us.map(round1)));
        if let Some(tasks) = self.tasks {
            map.insert("tasks".into(), json!(tasks));
        }
        map.insert("ratio".into(), json!(self.ratio.map(round3)));
        map.insert("ratio_to".into(), json!(self.ratio_to));
        for (k, v) in &self.extra {
            map.insert(k.clone(), v.clone());
        }
        Json::Object(map)
    }

    fn set(&mut self, key: &str, value: Json) {
        self.extra.insert(key.to_owned(), value);
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(x) if x.abs() >= 1000.0 => format!("{:.0}", x),
        Some(x) => format!("{x:.digits$}"),
        None => "–".into(),
    }
}

// ---- limits ----------------------------------------------------------------------------

#[derive(Default)]
struct Limits {
    ping_p50_us: Option<f64>,
    ping_p99_us: Option<f64>,
    ping_mbulk_c1: Option<f64>,
    ping_mbulk_c50: Option<f64>,
    evalsha_c1: Option<f64>,
    evalsha_c50: Option<f64>,
    evalsha_c50_p16: Option<f64>,
}

impl Limits {
    fn json(&self) -> Json {
        json!({
            "impl": "redis-server limits",
            "ping_rtt_p50_us": self.ping_p50_us.map(round1),
            "ping_rtt_p99_us": self.ping_p99_us.map(round1),
            "ping_mbulk_c1_rps": self.ping_mbulk_c1.map(round1),
            "ping_mbulk_c50_rps": self.ping_mbulk_c50.map(round1),
            "evalsha_acquire_c1_rps": self.evalsha_c1.map(round1),
            "evalsha_acquire_c50_rps": self.evalsha_c50.map(round1),
            "evalsha_acquire_c50_p16_rps": self.evalsha_c50_p16.map(round1),
        })
    }
}

/// Single-client PING round trips from the fred client the lock client uses.
///
/// Timed from a spawned task, like the lock scenarios: `block_on`'s thread is not a
/// runtime worker, and timing from it would add a thread hand-off to every reply.
async fn ping_rtt(client: &Client, settings: &'static Settings) -> (f64, f64) {
    let client = client.clone();
    tokio::spawn(async move { ping_rtt_task(&client, settings).await })
        .await
        .expect("ping task")
}

async fn ping_rtt_task(client: &Client, settings: &Settings) -> (f64, f64) {
    let redis = client.redis();
    let warm_until = Instant::now() + Duration::from_secs_f64(settings.warmup.min(1.0));
    while Instant::now() < warm_until {
        let _: String = redis.ping(None).await.expect("PING");
    }
    let mut samples = Vec::new();
    let until = Instant::now() + Duration::from_secs_f64(settings.secs.min(3.0));
    while Instant::now() < until {
        let t0 = Instant::now();
        let _: String = redis.ping(None).await.expect("PING");
        samples.push(ns(t0.elapsed()));
    }
    samples.sort_unstable();
    (
        percentile_us(&samples, 50.0).unwrap_or(f64::NAN),
        percentile_us(&samples, 99.0).unwrap_or(f64::NAN),
    )
}

fn redis_benchmark_installed() -> bool {
    Command::new("redis-benchmark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs `redis-benchmark -u URL -q --csv ARGS` and returns the requests per second.
fn redis_benchmark(url: &str, args: &[String]) -> Option<f64> {
    eprintln!("  redis-benchmark {}", args.join(" "));
    let output = Command::new("redis-benchmark")
        .args(["-u", url, "-q", "--csv"])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter(|line| !line.starts_with("\"test\""))
        .find_map(|line| line.split(',').nth(1)?.trim_matches('"').parse().ok())
}

async fn measure_limits(
    settings: &'static Settings,
    url: &str,
    client: &Client,
    raw: &Raw,
) -> Limits {
    eprintln!("measuring the server's limits");
    let mut limits = Limits::default();
    let (p50, p99) = ping_rtt(client, settings).await;
    limits.ping_p50_us = Some(p50);
    limits.ping_p99_us = Some(p99);
    if !redis_benchmark_installed() {
        eprintln!("  redis-benchmark is not installed: server limits are not measured");
        return limits;
    }
    let sha: String = raw
        .script_load(redisson_lock::lua::LOCK_ACQUIRE)
        .await
        .expect("SCRIPT LOAD");
    // Request counts sized to take roughly BENCH_SECS each on a small machine.
    let n = |per_sec: f64| ((per_sec * settings.secs) as u64).max(1000).to_string();
    let url = url.to_owned();
    let evalsha = |clients: &str, pipeline: &str, per_sec: f64| -> Vec<String> {
        [
            "-c",
            clients,
            "-P",
            pipeline,
            "-n",
            &n(per_sec),
            "-r",
            "100000",
            "EVALSHA",
            &sha,
            "1",
            "bench:key:__rand_int__",
            "30000",
            "bench-owner",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let ping = |clients: &str, per_sec: f64| -> Vec<String> {
        ["-t", "ping_mbulk", "-c", clients, "-n", &n(per_sec)]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let runs = [
        ping("1", 15_000.0),
        ping("50", 80_000.0),
        evalsha("1", "1", 12_000.0),
        evalsha("50", "1", 50_000.0),
        evalsha("50", "16", 100_000.0),
    ];
    let rates = tokio::task::spawn_blocking(move || {
        runs.iter()
            .map(|args| redis_benchmark(&url, args))
            .collect::<Vec<_>>()
    })
    .await
    .expect("redis-benchmark thread");
    limits.ping_mbulk_c1 = rates[0];
    limits.ping_mbulk_c50 = rates[1];
    limits.evalsha_c1 = rates[2];
    limits.evalsha_c50 = rates[3];
    limits.evalsha_c50_p16 = rates[4];
    limits
}

// ---- scenarios -------------------------------------------------------------------------

/// `uncontended_1`, `uncontended_lease_1`, `distinct_N`: each task loops lock/unlock on its
/// own name; pairs completed in the measured window, and their latencies.
async fn pairs(
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

/// One acquisition in a contended run.
struct Acquisition {
    /// The counter value read under the lock: the acquisition's place in the lock order.
    seq: u64,
    task: usize,
    wait_ns: u64,
    locked_at: Instant,
    unlocked_at: Instant,
    measured: bool,
}

struct Contended {
    acquisitions_per_s: f64,
    waits: Vec<u64>,
    handoffs: Vec<i64>,
    cross_task_handoffs: Vec<i64>,
    total: u64,
    counter: u64,
    order_ok: bool,
    scripts: u64,
    commands: u64,
    measured: u64,
    stats: BTreeMap<String, u64>,
}

/// `contended_N`: N tasks on one name; a plain counter (load, yield, store) under the lock.
async fn contended(settings: &Settings, client: &Client, raw: &Raw, tasks: usize) -> Contended {
    let name = format!("bench:contended_{tasks}");
    let counter = Arc::new(AtomicU64::new(0));
    let phase = Phase::new();
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let lock = client.get_lock(name.clone());
            let phase = phase.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut log = Vec::new();
                loop {
                    let at_start = phase.get();
                    if at_start == STOP {
                        break;
                    }
                    let t0 = Instant::now();
                    lock.lock().await.expect("lock");
                    let locked_at = Instant::now();
                    // Not an atomic increment: only the lock keeps it exact.
                    let seq = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    counter.store(seq + 1, Ordering::SeqCst);
                    lock.unlock().await.expect("unlock");
                    let unlocked_at = Instant::now();
                    log.push(Acquisition {
                        seq,
                        task,
                        wait_ns: ns(locked_at - t0),
                        locked_at,
                        unlocked_at,
                        measured: at_start == MEASURE && phase.get() == MEASURE,
                    });
                }
                log
            })
        })
        .collect();
    let after = std::sync::Mutex::new(BTreeMap::new());
    let window = drive(settings, &phase, reset_stats(raw), async {
        *after.lock().expect("stats") = command_stats(raw).await;
    })
    .await;
    let mut log = Vec::new();
    for handle in handles {
        log.extend(handle.await.expect("contended task"));
    }
    log.sort_by_key(|a| a.seq);
    let total = log.len() as u64;
    let order_ok = log.iter().enumerate().all(|(i, a)| a.seq == i as u64);
    let mut waits: Vec<u64> = log
        .iter()
        .filter(|a| a.measured)
        .map(|a| a.wait_ns)
        .collect();
    waits.sort_unstable();
    let mut handoffs = Vec::new();
    let mut cross = Vec::new();
    for pair in log.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        if !next.measured || !prev.measured {
            continue;
        }
        let gap = if next.locked_at >= prev.unlocked_at {
            ns(next.locked_at - prev.unlocked_at) as i64
        } else {
            -(ns(prev.unlocked_at - next.locked_at) as i64)
        };
        handoffs.push(gap);
        if next.task != prev.task {
            cross.push(gap);
        }
    }
    handoffs.sort_unstable();
    cross.sort_unstable();
    let measured = waits.len() as u64;
    let after = after.into_inner().expect("stats");
    Contended {
        acquisitions_per_s: measured as f64 / window.as_secs_f64(),
        waits,
        handoffs,
        cross_task_handoffs: cross,
        total,
        counter: counter.load(Ordering::SeqCst),
        order_ok,
        scripts: script_calls(&after),
        commands: client_commands(&after),
        measured,
        stats: after,
    }
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

struct Watchdog {
    locks: usize,
    acquire_s: f64,
    hold_s: f64,
    period_s: f64,
    renewal_scripts: u64,
    cpu_s: f64,
    still_held: i64,
    renewed_after: usize,
}

/// `watchdog_10k`: N locks held in watchdog mode (3 s timeout, renewed every 1 s).
async fn watchdog(settings: &Settings, url: &str, raw: &Raw) -> Watchdog {
    let timeout = Duration::from_secs(3);
    let client = Client::connect(
        Config::builder()
            .url(url)
            .watchdog_timeout(timeout)
            .build()
            .expect("config"),
    )
    .await
    .expect("connect");
    let n = settings.locks;
    let names: Vec<String> = (0..n).map(|i| format!("bench:watchdog:{i}")).collect();
    let locks: Vec<RLock> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            client
                .get_lock(name.as_str())
                .with_owner(LockOwner::from_raw(i as u64 + 1))
        })
        .collect();
    let t0 = Instant::now();
    futures::stream::iter(locks.iter().map(|l| l.lock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("lock") })
        .await;
    let acquire_s = t0.elapsed().as_secs_f64();
    assert_eq!(client.renewed_locks(), n);
    eprintln!(
        "  {n} locks taken in {acquire_s:.2} s; holding for {} s",
        settings.hold
    );
    reset_stats(raw).await;
    let cpu0 = cpu_time().unwrap_or_default();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(settings.hold)).await;
    let cpu1 = cpu_time().unwrap_or_default();
    let hold_s = start.elapsed().as_secs_f64();
    let stats = command_stats(raw).await;
    let renewal_scripts = script_calls(&stats);
    // Every lock must still be there: the hold outlasted the 3 s lease many times over.
    let still_held: i64 = raw
        .custom(redisson_lock::fred::cmd!("EXISTS"), names.clone())
        .await
        .expect("EXISTS");
    let renewed_after = client.renewed_locks();
    futures::stream::iter(locks.iter().map(|l| l.unlock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("unlock") })
        .await;
    client.shutdown().await.expect("shutdown");
    Watchdog {
        locks: n,
        acquire_s,
        hold_s,
        period_s: timeout.as_secs_f64() / 3.0,
        renewal_scripts,
        cpu_s: (cpu1.saturating_sub(cpu0)).as_secs_f64(),
        still_held,
        renewed_after,
    }
}

struct Memory {
    n: usize,
    per_held: f64,
    per_waiter: f64,
}

/// `memory`: VmRSS growth per held lock (handle + watchdog registration) and per task
/// waiting in `lock()` on one held lock.
async fn memory(settings: &Settings, client: &Client, raw: &Raw) -> Memory {
    let n = settings.locks;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss0 = vm_rss().unwrap_or(0);
    let locks: Vec<RLock> = (0..n)
        .map(|i| {
            client
                .get_lock(format!("bench:memory:held:{i}"))
                .with_owner(LockOwner::from_raw(i as u64 + 1))
        })
        .collect();
    futures::stream::iter(locks.iter().map(|l| l.lock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("lock") })
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss1 = vm_rss().unwrap_or(0);

    let holder = client
        .get_lock("bench:memory:wait")
        .with_owner(LockOwner::from_raw(1 << 40));
    holder.lock().await.expect("lock");
    reset_stats(raw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss2 = vm_rss().unwrap_or(0);
    let waiters: Vec<_> = (0..n)
        .map(|_| {
            let lock = client.get_lock("bench:memory:wait");
            tokio::spawn(async move { lock.lock().await })
        })
        .collect();
    // Each waiter runs two acquire scripts (before and after subscribing), then sleeps.
    let deadline = Instant::now() + Duration::from_secs(120);
    while script_calls(&command_stats(raw).await) < 2 * n as u64 {
        assert!(Instant::now() < deadline, "waiters did not settle");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss3 = vm_rss().unwrap_or(0);
    for waiter in &waiters {
        waiter.abort();
    }
    for waiter in waiters {
        let _ = waiter.await;
    }
    holder.unlock().await.expect("unlock");
    futures::stream::iter(locks.iter().map(|l| l.unlock()))
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("unlock") })
        .await;
    Memory {
        n,
        per_held: rss1.saturating_sub(rss0) as f64 / n as f64,
        per_waiter: rss3.saturating_sub(rss2) as f64 / n as f64,
    }
}

// ---- plot ------------------------------------------------------------------------------

fn plot(
    path: &std::path::Path,
    distinct: &[(f64, f64)],
    contended: &[(f64, f64)],
    limit: Option<f64>,
) -> Result<(), BoxError> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = distinct
        .iter()
        .chain(contended)
        .map(|p| p.1)
        .chain(limit)
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "redisson-lock: lock()+unlock() per second vs tasks",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d((0.7f64..2000f64).log_scale(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("tasks (log scale)")
        .y_desc("pairs / s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
        .draw()?;
    if let Some(limit) = limit {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.7, limit), (2000.0, limit)],
                6,
                4,
                BLACK.stroke_width(1),
            ))?
            .label("server: pipelined EVALSHA / 2")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    }
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    chart
        .draw_series(LineSeries::new(
            distinct.iter().copied(),
            blue.stroke_width(2),
        ))?
        .label("one name per task (1 = uncontended_1)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2)));
    chart.draw_series(distinct.iter().map(|&p| Circle::new(p, 4, blue.filled())))?;
    chart
        .draw_series(LineSeries::new(
            contended.iter().copied(),
            red.stroke_width(2),
        ))?
        .label("all tasks on one name (acquisitions / s)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
    chart.draw_series(
        contended
            .iter()
            .map(|&p| TriangleMarker::new(p, 5, red.filled())),
    )?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

// ---- main ------------------------------------------------------------------------------

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("benches/locks.rs: run it with `cargo bench --bench locks`; nothing to do here");
        return;
    }
    let settings = Settings::from_env();
    let server = Server::start();
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
    let raw = raw_client(&url).await;
    let client = Client::connect(Config::from_url(&url).expect("url"))
        .await
        .expect("connect");
    let mut rows: Vec<Row> = Vec::new();

    // Memory first, while the allocator holds nothing from earlier scenarios.
    let memory = if settings.wants("memory") {
        eprintln!(
            "memory: {} held locks, {} waiting tasks",
            settings.locks, settings.locks
        );
        Some(memory(settings, &client, &raw).await)
    } else {
        None
    };

    // The watchdog next, in a process that has not run the throughput scenarios yet: its
    // CPU figure must be the renewal's, not what thousands of finished tasks left behind
    // (measured after them it read 2-3% instead of 1.7-1.8%). Its row is listed in order.
    let mut watchdog_row = None;
    let watchdog = if settings.wants("watchdog_10k") {
        eprintln!("watchdog_10k");
        let w = watchdog(settings, &url, &raw).await;
        let periods = w.hold_s / w.period_s;
        let per_period = w.renewal_scripts as f64 / periods;
        let cpu_pct = 100.0 * w.cpu_s / w.hold_s;
        let ideal = (w.locks as f64 / redisson_lock::DEFAULT_RENEWAL_BATCH_SIZE as f64).ceil();
        let mut row = Row::new("watchdog_10k");
        row.tasks = Some(w.locks);
        row.ops_per_s = Some(w.renewal_scripts as f64 / w.hold_s);
        row.ratio = Some(per_period / ideal);
        row.ratio_to = "renewal scripts per period / (locks / batch size)".into();
        row.set("locks", json!(w.locks));
        row.set("acquire_all_s", json!(round3(w.acquire_s)));
        row.set("hold_s", json!(round3(w.hold_s)));
        row.set("renewal_period_s", json!(round3(w.period_s)));
        row.set("renewal_scripts", json!(w.renewal_scripts));
        row.set("renewal_scripts_per_period", json!(round1(per_period)));
        row.set("cpu_s", json!(round3(w.cpu_s)));
        row.set("cpu_pct_of_one_core", json!(round3(cpu_pct)));
        row.set("locks_alive_after_hold", json!(w.still_held));
        row.set("locks_registered_after_hold", json!(w.renewed_after));
        row.notes = format!(
            "{} renewal scripts in {:.0} s ({:.1}/period); CPU {:.2}% of a core; {}/{} locks alive",
            w.renewal_scripts, w.hold_s, per_period, cpu_pct, w.still_held, w.locks
        );
        println!("{}", row.json());
        watchdog_row = Some(row);
        Some((per_period, cpu_pct, w.still_held == w.locks as i64))
    } else {
        None
    };

    let limits = if settings.wants("limits") {
        measure_limits(settings, &url, &client, &raw).await
    } else {
        let (p50, p99) = ping_rtt(&client, settings).await;
        Limits {
            ping_p50_us: Some(p50),
            ping_p99_us: Some(p99),
            ..Limits::default()
        }
    };
    println!("{}", limits.json());
    if owned {
        let _: () = raw.flushall(false).await.expect("FLUSHALL");
    }
    // The PING round trip the hand-off is compared with: the one measured interleaved with
    // lock pairs in uncontended_1 (same moment, same load), else the back-to-back loop.
    let mut ping = limits.ping_p50_us.unwrap_or(f64::NAN);
    let mut interleaved_ping = None;
    let serial_limit = limits.evalsha_c1.map(|r| r / 2.0);
    let parallel_limit = limits.evalsha_c50_p16.map(|r| r / 2.0);

    for (scenario, lease) in [
        ("uncontended_1", None),
        ("uncontended_lease_1", Some(Duration::from_secs(10))),
    ] {
        if !settings.wants(scenario) {
            continue;
        }
        eprintln!("{scenario}");
        let (rate, lat) = pairs(settings, &client, scenario, 1, lease).await;
        let mut row = Row::new(scenario);
        row.tasks = Some(1);
        row.ops_per_s = Some(rate);
        row.set("bench_cpu_us_per_op", json!(cpu_us_per_op(rate, settings)));
        row.p50_us = percentile_us(&lat, 50.0);
        row.p99_us = percentile_us(&lat, 99.0);
        let mix = interleaved(settings, &client, lease).await;
        if scenario == "uncontended_1" {
            ping = mix.ping_p50_us;
            interleaved_ping = Some(mix.ping_p50_us);
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
        println!("{}", row.json());
        rows.push(row);
    }

    for tasks in [16usize, 64, 1024] {
        let scenario = format!("distinct_{tasks}");
        if !settings.wants(&scenario) {
            continue;
        }
        eprintln!("{scenario}");
        let (rate, lat) = pairs(settings, &client, &scenario, tasks, None).await;
        let mut row = Row::new(&scenario);
        row.tasks = Some(tasks);
        row.ops_per_s = Some(rate);
        row.set("bench_cpu_us_per_op", json!(cpu_us_per_op(rate, settings)));
        row.p50_us = percentile_us(&lat, 50.0);
        row.p99_us = percentile_us(&lat, 99.0);
        row.ratio = parallel_limit.map(|l| rate / l);
        row.ratio_to = "redis-benchmark EVALSHA -c 50 -P 16 / 2".into();
        row.notes = format!(
            "{:.0}% of pipelined EVALSHA/2",
            100.0 * row.ratio.unwrap_or(f64::NAN)
        );
        println!("{}", row.json());
        rows.push(row);
    }

    for tasks in [4usize, 16] {
        let scenario = format!("contended_{tasks}");
        if !settings.wants(&scenario) {
            continue;
        }
        eprintln!("{scenario}");
        let c = contended(settings, &client, &raw, tasks).await;
        let mut row = Row::new(&scenario);
        row.tasks = Some(tasks);
        row.ops_per_s = Some(c.acquisitions_per_s);
        row.set(
            "bench_cpu_us_per_op",
            json!(cpu_us_per_op(c.acquisitions_per_s, settings)),
        );
        row.p50_us = percentile_us(&c.waits, 50.0);
        row.p99_us = percentile_us(&c.waits, 99.0);
        row.ratio = serial_limit.map(|l| c.acquisitions_per_s / l);
        row.ratio_to = "redis-benchmark EVALSHA -c 1 / 2".into();
        let handoff_p50 = percentile_signed_us(&c.handoffs, 50.0);
        let cross_p50 = percentile_signed_us(&c.cross_task_handoffs, 50.0);
        let cross_p99 = percentile_signed_us(&c.cross_task_handoffs, 99.0);
        let per_acq = |x: u64| x as f64 / c.measured.max(1) as f64;
        let same_task = if c.handoffs.is_empty() {
            f64::NAN
        } else {
            1.0 - c.cross_task_handoffs.len() as f64 / c.handoffs.len() as f64
        };
        row.set("handoff_p50_us", json!(handoff_p50.map(round1)));
        row.set(
            "handoff_p99_us",
            json!(percentile_signed_us(&c.handoffs, 99.0).map(round1)),
        );
        row.set("cross_task_handoff_p50_us", json!(cross_p50.map(round1)));
        row.set("cross_task_handoff_p99_us", json!(cross_p99.map(round1)));
        row.set(
            "cross_task_handoff_p50_pings",
            json!(cross_p50.map(|h| round3(h / ping))),
        );
        row.set("same_task_reacquire_share", json!(round3(same_task)));
        // Every acquisition in the window is released once in it (give or take the
        // edges), so acquire scripts = all scripts - acquisitions.
        row.set(
            "acquire_scripts_per_acquisition",
            json!(round3(per_acq(c.scripts.saturating_sub(c.measured)))),
        );
        row.set(
            "lock_scripts_per_acquisition",
            json!(round3(per_acq(c.scripts))),
        );
        row.set(
            "client_commands_per_acquisition",
            json!(round3(per_acq(c.commands))),
        );
        row.set(
            "all_commands_per_acquisition",
            json!(round3(per_acq(c.stats.values().sum::<u64>()))),
        );
        row.set("acquisitions_total", json!(c.total));
        row.set("counter", json!(c.counter));
        row.set("counter_ok", json!(c.counter == c.total && c.order_ok));
        row.set("commandstats", json!(c.stats));
        row.notes = format!(
            "hand-off p50 {} µs ({:.2} PING) across tasks, {} µs any; per acquisition {:.2} acquire + 1 unlock scripts, {:.2} commands sent; counter {}",
            fmt_opt(cross_p50, 0),
            cross_p50.map_or(f64::NAN, |h| h / ping),
            fmt_opt(handoff_p50, 0),
            per_acq(c.scripts.saturating_sub(c.measured)),
            per_acq(c.commands),
            if c.counter == c.total && c.order_ok { "exact" } else { "WRONG" }
        );
        println!("{}", row.json());
        rows.push(row);
    }

    if settings.wants("trylock_wait_16") {
        eprintln!("trylock_wait_16");
        let (rate, success, waits, exact) = trylock_wait(settings, &client, 16).await;
        let mut row = Row::new("trylock_wait_16");
        row.tasks = Some(16);
        row.ops_per_s = Some(rate);
        row.set("bench_cpu_us_per_op", json!(cpu_us_per_op(rate, settings)));
        row.p50_us = percentile_us(&waits, 50.0);
        row.p99_us = percentile_us(&waits, 99.0);
        row.ratio = serial_limit.map(|l| rate / l);
        row.ratio_to = "redis-benchmark EVALSHA -c 1 / 2".into();
        row.set("success_rate", json!(round3(success)));
        row.set("counter_ok", json!(exact));
        row.notes = format!(
            "{:.1}% of tries succeed; counter {}",
            100.0 * success,
            if exact { "exact" } else { "WRONG" }
        );
        println!("{}", row.json());
        rows.push(row);
    }

    if let Some(row) = watchdog_row {
        rows.push(row);
    }

    if let Some(m) = &memory {
        let mut row = Row::new("memory");
        row.tasks = Some(m.n);
        row.ratio_to = "n/a".into();
        row.set("bytes_per_held_lock", json!(m.per_held.round()));
        row.set("bytes_per_waiting_task", json!(m.per_waiter.round()));
        let probe = client.get_lock("bench:probe");
        row.set(
            "lock_future_bytes",
            json!(std::mem::size_of_val(&probe.lock())),
        );
        row.notes = format!(
            "VmRSS: {:.0} B per held lock, {:.0} B per waiting task ({} of each)",
            m.per_held, m.per_waiter, m.n
        );
        println!("{}", row.json());
        rows.push(row);
    }

    client.shutdown().await.expect("shutdown");

    // ---- table, targets, plot ----
    println!();
    println!("| scenario | tasks | ops/s | p50 µs | p99 µs | ratio | ratio to | notes |");
    println!("|---|---:|---:|---:|---:|---:|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.tasks.map_or("–".into(), |t| t.to_string()),
            fmt_opt(r.ops_per_s, 0),
            fmt_opt(r.p50_us, 0),
            fmt_opt(r.p99_us, 0),
            fmt_opt(r.ratio, 2),
            r.ratio_to,
            r.notes
        );
    }
    println!();
    println!("Server limits (same run):");
    println!("| limit | value |");
    println!("|---|---:|");
    println!(
        "| PING round trip p50, interleaved with lock pairs (fred, 1 task) | {} µs |",
        fmt_opt(interleaved_ping, 0)
    );
    println!(
        "| PING round trip p50 / p99, back to back (fred, 1 task) | {} / {} µs |",
        fmt_opt(limits.ping_p50_us, 0),
        fmt_opt(limits.ping_p99_us, 0)
    );
    println!(
        "| redis-benchmark PING_MBULK -c 1 | {} req/s |",
        fmt_opt(limits.ping_mbulk_c1, 0)
    );
    println!(
        "| redis-benchmark PING_MBULK -c 50 | {} req/s |",
        fmt_opt(limits.ping_mbulk_c50, 0)
    );
    println!(
        "| redis-benchmark EVALSHA acquire -c 1 | {} req/s |",
        fmt_opt(limits.evalsha_c1, 0)
    );
    println!(
        "| redis-benchmark EVALSHA acquire -c 50 | {} req/s |",
        fmt_opt(limits.evalsha_c50, 0)
    );
    println!(
        "| redis-benchmark EVALSHA acquire -c 50 -P 16 | {} req/s |",
        fmt_opt(limits.evalsha_c50_p16, 0)
    );

    println!();
    println!("Targets:");
    let find = |name: &str| rows.iter().find(|r| r.scenario == name);
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    if let Some(r) = find("uncontended_1") {
        let ratio = r.ratio.unwrap_or(f64::NAN);
        println!(
            "{} uncontended_1: p50 pair = {:.2} × p50 PING round trip, measured interleaved (target ≤ 2.3)",
            verdict(ratio <= 2.3),
            ratio,
        );
    }
    if let Some(r) = find("distinct_1024") {
        match r.ratio {
            Some(ratio) => println!(
                "{} distinct_1024: {:.0} pairs/s = {:.0}% of pipelined EVALSHA / 2 ({:.0}) (target ≥ 40%)",
                verdict(ratio >= 0.40),
                r.ops_per_s.unwrap_or(0.0),
                100.0 * ratio,
                parallel_limit.unwrap_or(f64::NAN)
            ),
            None => println!("n/a  distinct_1024: redis-benchmark not available"),
        }
    }
    if let Some(r) = find("contended_16") {
        let cross = r
            .extra
            .get("cross_task_handoff_p50_us")
            .and_then(Json::as_f64)
            .unwrap_or(f64::NAN);
        let all_scripts = r
            .extra
            .get("lock_scripts_per_acquisition")
            .and_then(Json::as_f64)
            .unwrap_or(f64::NAN);
        let scripts = r
            .extra
            .get("acquire_scripts_per_acquisition")
            .and_then(Json::as_f64)
            .unwrap_or(f64::NAN);
        let ok = r
            .extra
            .get("counter_ok")
            .and_then(Json::as_bool)
            .unwrap_or(false);
        println!(
            "{} contended_16 hand-off: p50 {:.0} µs = {:.2} PING round trips (target ≤ 3)",
            verdict(cross / ping <= 3.0),
            cross,
            cross / ping
        );
        println!(
            "{} contended_16 scripts: {:.2} lock (acquire) scripts per acquisition (target < 3); with the unlock script {:.2}",
            verdict(scripts < 3.0),
            scripts,
            all_scripts
        );
        println!("{} contended_16 counter equals acquisitions", verdict(ok));
    }
    if let Some((per_period, cpu_pct, alive)) = watchdog {
        println!(
            "{} watchdog_10k scripts: {:.1} renewal scripts per period (target ≤ 100)",
            verdict(per_period <= 100.0),
            per_period
        );
        println!(
            "{} watchdog_10k CPU: {:.2}% of one core during the hold (target < 2%)",
            verdict(cpu_pct < 2.0),
            cpu_pct
        );
        println!(
            "{} watchdog_10k every lock survived the hold",
            verdict(alive)
        );
    }

    if let Some(path) = &settings.plot {
        let rate = |name: &str| find(name).and_then(|r| r.ops_per_s);
        let distinct: Vec<(f64, f64)> = [
            ("uncontended_1", 1.0),
            ("distinct_16", 16.0),
            ("distinct_64", 64.0),
            ("distinct_1024", 1024.0),
        ]
        .iter()
        .filter_map(|(n, x)| rate(n).map(|y| (*x, y)))
        .collect();
        let contended: Vec<(f64, f64)> = [("contended_4", 4.0), ("contended_16", 16.0)]
            .iter()
            .filter_map(|(n, x)| rate(n).map(|y| (*x, y)))
            .collect();
        if distinct.len() + contended.len() >= 2 {
            match plot(path, &distinct, &contended, parallel_limit) {
                Ok(()) => eprintln!("plot written to {}", path.display()),
                Err(error) => eprintln!("could not draw the plot: {error}"),
            }
        }
    }
}
