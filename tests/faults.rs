//! The fault suite: several real processes lock while the lock's Redis is hurt.
//!
//! Each scenario starts three child processes (this test binary run again, as
//! `--exact fault_child` with `FAULT_CHILD_CONFIG` set; without that variable the child
//! test returns at once). Each child has its own `Client` and eight tasks that loop on
//! four lock names: `acquire()`, record the critical section on a *witness* Redis that is
//! never faulted, race a short piece of work against `guard.lost()`, then
//! `guard.unlock()`. Meanwhile the parent hurts the lock's Redis: connection kills,
//! pauses shorter and longer than the lease, a proxy that cuts every connection, restarts
//! without persistence, a Sentinel failover.
//!
//! The witness numbers every entry and exit with one `INCR` counter, so intervals are
//! totally ordered; after the run the parent finds *every* overlapping pair on a name and
//! splits them into "a holder was told" (its `lost()` fired before it left, or its unlock
//! answered `NotOwner`) and "nobody was told". It also reports holds left behind after an
//! error, tasks stuck at the end, keys and subscriptions left after the processes quit,
//! and the longest time a task made no progress. `the_checker_catches_a_broken_lock`
//! proves the checker can fail: children that skip the lock must be caught.
//!
//! `FAULT_SECS` (default 8) sets how long faults last per scenario; the results are
//! described in docs/reliability.md.
mod support;
use support::*;

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener as StdListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, Error};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const PROCESSES: usize = 3;
const TASKS: usize = 8;
const NAMES: usize = 4;
const CHILD_ENV: &str = "FAULT_CHILD_CONFIG";
const SUMMARY_PREFIX: &str = "FAULT_SUMMARY ";
/// How long a task may take to finish its last round after the run ends.
const TASK_EXIT_BOUND: Duration = Duration::from_secs(20);

/// Scenarios run one at a time (each uses every core it can get).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn fault_secs() -> u64 {
    std::env::var("FAULT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

// ------------------------------------------------------------------------------------
// The child process
// ------------------------------------------------------------------------------------

/// What one child is told to do, passed as `k=v;k=v` in `FAULT_CHILD_CONFIG`.
#[derive(Debug, Clone)]
struct ChildConfig {
    scenario: String,
    proc_index: usize,
    /// The lock's Redis as the client sees it (direct, proxy or sentinel URL).
    url: String,
    /// The lock's Redis for the child's own raw checks (never through the proxy).
    raw_url: String,
    witness: String,
    tasks: usize,
    names: Vec<String>,
    watchdog_ms: u64,
    run_ms: u64,
    skip_lock: bool,
}

impl ChildConfig {
    fn encode(&self) -> String {
        format!(
            "scenario={};proc={};url={};raw_url={};witness={};tasks={};names={};watchdog_ms={};run_ms={};skip={}",
            self.scenario,
            self.proc_index,
            self.url,
            self.raw_url,
            self.witness,
            self.tasks,
            self.names.join(","),
            self.watchdog_ms,
            self.run_ms,
            u8::from(self.skip_lock)
        )
    }

    fn decode(text: &str) -> ChildConfig {
        let map: HashMap<&str, &str> = text
            .split(';')
            .filter_map(|kv| kv.split_once('='))
            .collect();
        let get = |k: &str| -> String {
            map.get(k)
                .unwrap_or_else(|| panic!("{CHILD_ENV} lacks {k}"))
                .to_string()
        };
        ChildConfig {
            scenario: get("scenario"),
            proc_index: get("proc").parse().unwrap(),
            url: get("url"),
            raw_url: get("raw_url"),
            witness: get("witness"),
            tasks: get("tasks").parse().unwrap(),
            names: get("names").split(',').map(str::to_string).collect(),
            watchdog_ms: get("watchdog_ms").parse().unwrap(),
            run_ms: get("run_ms").parse().unwrap(),
            skip_lock: get("skip") == "1",
        }
    }
}

/// What one task saw.
#[derive(Debug, Default, Clone)]
struct Tally {
    acquired: u64,
    lost_signals: u64,
    not_owner: u64,
    outcome_unknown: u64,
    other_errors: u64,
    holds_left_after_error: u64,
    max_stall_ms: u64,
    samples: Vec<String>,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.acquired += other.acquired;
        self.lost_signals += other.lost_signals;
        self.not_owner += other.not_owner;
        self.outcome_unknown += other.outcome_unknown;
        self.other_errors += other.other_errors;
        self.holds_left_after_error += other.holds_left_after_error;
        self.max_stall_ms = self.max_stall_ms.max(other.max_stall_ms);
        for s in &other.samples {
            if self.samples.len() < 6 && !self.samples.contains(s) {
                self.samples.push(s.clone());
            }
        }
    }

    fn error(&mut self, what: &str, error: &Error) {
        match error {
            Error::OutcomeUnknown { .. } => self.outcome_unknown += 1,
            _ => self.other_errors += 1,
        }
        let text = format!("{what}: {error}");
        let text: String = text.chars().take(160).collect();
        if self.samples.len() < 4 && !self.samples.contains(&text) {
            self.samples.push(text);
        }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "acquired": self.acquired,
            "lost_signals": self.lost_signals,
            "not_owner": self.not_owner,
            "outcome_unknown": self.outcome_unknown,
            "other_errors": self.other_errors,
            "holds_left_after_error": self.holds_left_after_error,
            "max_stall_ms": self.max_stall_ms,
            "samples": self.samples,
        })
    }

    fn from_json(v: &serde_json::Value) -> Tally {
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Tally {
            acquired: n("acquired"),
            lost_signals: n("lost_signals"),
            not_owner: n("not_owner"),
            outcome_unknown: n("outcome_unknown"),
            other_errors: n("other_errors"),
            holds_left_after_error: n("holds_left_after_error"),
            max_stall_ms: n("max_stall_ms"),
            samples: v["samples"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A raw fred client that reconnects quickly and gives up on a command after 1 s.
async fn raw_client(url: &str) -> fred::prelude::Client {
    let client = Builder::from_config(fred::prelude::Config::from_url(url).unwrap())
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(1))
        .set_policy(ReconnectPolicy::new_constant(0, 100))
        .build()
        .unwrap();
    client.init().await.expect("raw client connects");
    client
}

/// `HGET name field` as a count, retried for up to 3 s (the lock's Redis may be down).
async fn raw_count(raw: &fred::prelude::Client, name: &str, field: &str) -> Option<i64> {
    let start = Instant::now();
    loop {
        match raw.hget::<Option<i64>, _, _>(name, field).await {
            Ok(count) => return Some(count.unwrap_or(0)),
            Err(_) if start.elapsed() < Duration::from_secs(3) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(_) => return None,
        }
    }
}

/// The child's side of a scenario. Returns at once in a normal test run.
#[test]
fn fault_child() {
    let Ok(text) = std::env::var(CHILD_ENV) else {
        return;
    };
    let config = ChildConfig::decode(&text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(child_main(config));
    // Tasks stuck past the bound are reported, not waited for.
    std::process::exit(0);
}

async fn child_main(config: ChildConfig) {
    let client = Client::connect(
        Config::builder()
            .url(&config.url)
            .watchdog_timeout(Duration::from_millis(config.watchdog_ms))
            .response_timeout(Duration::from_secs(1))
            .build()
            .unwrap(),
    )
    .await
    .expect("child connects to the lock's Redis");
    let witness = raw_client(&config.witness).await;
    let raw = raw_client(&config.raw_url).await;
    let deadline = Instant::now() + Duration::from_millis(config.run_ms);
    let config = Arc::new(config);

    let mut tasks = Vec::new();
    for task in 0..config.tasks {
        let (client, witness, raw, config) =
            (client.clone(), witness.clone(), raw.clone(), config.clone());
        tasks.push(tokio::spawn(async move {
            task_loop(task, &client, &witness, &raw, &config, deadline).await
        }));
    }
    let mut total = Tally::default();
    let mut stuck = 0u64;
    let bound = tokio::time::Instant::from_std(deadline + TASK_EXIT_BOUND);
    for handle in tasks {
        match tokio::time::timeout_at(bound, handle).await {
            Ok(Ok(tally)) => total.add(&tally),
            Ok(Err(panic)) => panic!("a task panicked: {panic}"),
            Err(_) => stuck += 1,
        }
    }
    // Holds of this client still in Redis once every task is done: each was left behind
    // by an error (every round ends with an unlock).
    let mut end_fields = 0u64;
    for name in &config.names {
        let start = Instant::now();
        loop {
            match raw.hkeys::<Vec<String>, _>(name).await {
                Ok(fields) => {
                    end_fields +=
                        fields.iter().filter(|f| f.starts_with(client.id())).count() as u64;
                    break;
                }
                Err(_) if start.elapsed() < Duration::from_secs(5) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("cannot read {name} at the end: {e}"),
            }
        }
    }
    let _ = client.shutdown().await;
    let mut summary = total.to_json();
    summary["stuck"] = stuck.into();
    summary["end_fields"] = end_fields.into();
    // On a line of its own: libtest has already printed `test fault_child ... `.
    println!("\n{SUMMARY_PREFIX}{summary}");
}

/// One task: lock, record, work (racing `lost()`), unlock, until the deadline.
async fn task_loop(
    task: usize,
    client: &Client,
    witness: &fred::prelude::Client,
    raw: &fred::prelude::Client,
    config: &ChildConfig,
    deadline: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut last_progress = Instant::now();
    let mut round = task;
    // After an acquire error the task asks for the same lock again (a user retries).
    let mut retry_name: Option<String> = None;
    let mut in_doubt: Option<String> = None;
    let intervals = format!("intervals:{}", config.scenario);
    while Instant::now() < deadline {
        round += 1;
        let name = retry_name
            .take()
            .unwrap_or_else(|| config.names[(round * 7 + task) % config.names.len()].clone());
        let lock = client.get_lock(&name);
        let field = format!("{}:{}", client.id(), lock.owner());
        let guard = if config.skip_lock {
            None
        } else {
            match lock.acquire().await {
                Ok(guard) => {
                    in_doubt = None;
                    Some(guard)
                }
                Err(error) => {
                    tally.error("acquire", &error);
                    if matches!(error, Error::OutcomeUnknown { .. }) {
                        // The crate undoes a hold in doubt at this owner's next call on
                        // the lock: the retry below.
                        in_doubt = Some(name.clone());
                    } else if raw_count(raw, &name, &field).await.unwrap_or(0) > 0 {
                        tally.holds_left_after_error += 1;
                    }
                    retry_name = Some(name);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            }
        };
        let enter: i64 = witness.incr("clock").await.expect("witness INCR");
        tally.acquired += 1;
        let stall = last_progress.elapsed();
        tally.max_stall_ms = tally.max_stall_ms.max(stall.as_millis() as u64);
        last_progress = Instant::now();
        // Mostly short work; now and then long enough for a fault to land inside, and
        // rarely longer than the longest pause (so that a holder is still inside when
        // Redis comes back without its lock).
        let work = if round.is_multiple_of(50) {
            Duration::from_millis(1_600 + (round as u64 * 37) % 800)
        } else if round.is_multiple_of(10) {
            Duration::from_millis(200 + (round as u64 * 37) % 400)
        } else {
            Duration::from_millis(5 + (round as u64 * 13) % 20)
        };
        let mut told = false;
        match &guard {
            Some(guard) => {
                tokio::select! {
                    _ = guard.lost() => { told = true; tally.lost_signals += 1; }
                    _ = tokio::time::sleep(work) => {}
                }
            }
            None => tokio::time::sleep(work).await,
        }
        let exit: i64 = witness.incr("clock").await.expect("witness INCR");
        if let Some(guard) = guard {
            match guard.unlock().await {
                Ok(()) => {}
                Err(Error::NotOwner { .. }) => {
                    told = true;
                    tally.not_owner += 1;
                }
                Err(error) => {
                    tally.error("unlock", &error);
                    if raw_count(raw, &name, &field).await.unwrap_or(0) > 0 {
                        tally.holds_left_after_error += 1;
                    }
                }
            }
        }
        let record = format!(
            "{name} {} {task} {enter} {exit} {}",
            config.proc_index,
            u8::from(told)
        );
        let _: i64 = witness
            .custom(fred::cmd!("RPUSH"), vec![intervals.clone(), record])
            .await
            .expect("witness RPUSH");
    }
    // A last acquire that ended in doubt: `unlock()` settles it (undoes the hold if it
    // ran) and answers NotOwner; afterwards nothing of this owner may be left.
    if let Some(name) = in_doubt {
        let lock = client.get_lock(&name);
        let field = format!("{}:{}", client.id(), lock.owner());
        let _ = lock.unlock().await;
        if raw_count(raw, &name, &field).await.unwrap_or(0) > 0 {
            tally.holds_left_after_error += 1;
        }
    }
    tally.max_stall_ms = tally
        .max_stall_ms
        .max(last_progress.elapsed().as_millis() as u64);
    tally
}

// ------------------------------------------------------------------------------------
// The parent: Redis processes, fault injectors, the checker
// ------------------------------------------------------------------------------------

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn server_bin() -> String {
    std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into())
}

/// A redis-server that can be shut down without saving and started again on its port.
struct Restartable {
    port: u16,
    dir: PathBuf,
    child: Option<std::process::Child>,
}

impl Restartable {
    fn start() -> Restartable {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "redisson-lock-faults-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = Restartable {
            port,
            dir,
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = std::process::Command::new(server_bin())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", self.dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server");
        self.child = Some(child);
        let start = Instant::now();
        while !redis_cli(self.port, &["ping"]).contains("PONG") {
            assert!(start.elapsed() < Duration::from_secs(10), "restart failed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `SHUTDOWN NOSAVE`, then the same server again, empty.
    fn restart(&mut self) {
        let _ = redis_cli(self.port, &["shutdown", "nosave"]);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        self.spawn();
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Restartable {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback proxy to Redis that cuts every connection it carries when told to.
struct CuttingProxy {
    port: u16,
    cut: tokio::sync::watch::Sender<u64>,
}

impl CuttingProxy {
    async fn start(redis_port: u16) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, cuts) = tokio::sync::watch::channel(0u64);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", redis_port)).await else {
                    continue;
                };
                let mut cuts = cuts.clone();
                tokio::spawn(async move {
                    cuts.borrow_and_update();
                    tokio::select! {
                        _ = splice(client, server) => {}
                        _ = cuts.changed() => {} // dropping both sockets cuts the connection
                    }
                });
            }
        });
        CuttingProxy { port, cut }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

async fn splice(client: TcpStream, server: TcpStream) {
    let (mut client_rd, mut client_wr) = client.into_split();
    let (mut server_rd, mut server_wr) = server.into_split();
    let up = async {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = client_rd.read(&mut buf).await {
            if n == 0 || server_wr.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = server_rd.read(&mut buf).await {
            if n == 0 || client_wr.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// What is done to the lock's Redis during a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// Nothing (for the checker's own test).
    None,
    /// `CLIENT KILL TYPE normal` and `TYPE pubsub` every 200 ms.
    Kill,
    /// `DEBUG SLEEP secs` every `every`.
    Pause { secs: f64, every: Duration },
    /// A proxy between the children and Redis cuts every connection every second.
    ProxyCut,
    /// `SHUTDOWN NOSAVE` and a restart on the same port every 5 s.
    Restart,
    /// A Sentinel failover to the replica.
    Failover,
}

/// Whether Redis itself keeps the lock under this fault.
fn redis_keeps_the_lock(fault: Fault, watchdog: Duration) -> bool {
    match fault {
        Fault::None | Fault::Kill | Fault::ProxyCut => true,
        Fault::Pause { secs, .. } => Duration::from_secs_f64(secs) < watchdog,
        Fault::Restart | Fault::Failover => false,
    }
}

/// One scenario's measurements.
#[derive(Debug, Default)]
struct Report {
    label: String,
    faults: u64,
    tally: Tally,
    violations_told: u64,
    violations_untold: u64,
    stuck: u64,
    end_fields: u64,
    /// Keys with their PTTL (-1: none), and subscriptions (-1).
    left_after_quit: Vec<(String, i64)>,
}

impl Report {
    fn holds_left(&self) -> u64 {
        self.tally.holds_left_after_error + self.end_fields
    }

    fn row(&self) -> String {
        format!(
            "| {} | {} | {} | {} / {} | {} | {} | {} | {} / {} / {} / {} | {} ms |",
            self.label,
            self.faults,
            self.tally.acquired,
            self.violations_told,
            self.violations_untold,
            self.holds_left(),
            self.stuck,
            self.left_after_quit.len(),
            self.tally.lost_signals,
            self.tally.not_owner,
            self.tally.outcome_unknown,
            self.tally.other_errors,
            self.tally.max_stall_ms
        )
    }
}

/// One interval a task spent inside a critical section, in witness clock ticks.
#[derive(Debug, Clone)]
struct Interval {
    name: String,
    who: String,
    enter: i64,
    exit: i64,
    told: bool,
}

/// Every overlapping pair of intervals on one name: (told, untold).
fn overlaps(records: &[String]) -> (u64, u64, Vec<String>) {
    let mut by_name: BTreeMap<String, Vec<Interval>> = BTreeMap::new();
    for r in records {
        let p: Vec<&str> = r.split(' ').collect();
        assert_eq!(p.len(), 6, "bad witness record {r:?}");
        by_name.entry(p[0].to_string()).or_default().push(Interval {
            name: p[0].to_string(),
            who: format!("p{}t{}", p[1], p[2]),
            enter: p[3].parse().unwrap(),
            exit: p[4].parse().unwrap(),
            told: p[5] == "1",
        });
    }
    let (mut told, mut untold, mut examples) = (0, 0, Vec::new());
    for list in by_name.values_mut() {
        list.sort_by_key(|i| i.enter);
        for (n, a) in list.iter().enumerate() {
            // Later entries that began before `a` left overlap it.
            for b in list[n + 1..].iter().take_while(|b| b.enter < a.exit) {
                if a.told || b.told {
                    told += 1;
                } else {
                    untold += 1;
                    if examples.len() < 5 {
                        examples.push(format!(
                            "{}: {} [{}, {}] and {} [{}, {}]",
                            a.name, a.who, a.enter, a.exit, b.who, b.enter, b.exit
                        ));
                    }
                }
            }
        }
    }
    (told, untold, examples)
}

/// Keys (with their PTTL) and lock channels on the lock's Redis (nothing of the
/// children may remain).
async fn leftovers(url: &str) -> Vec<(String, i64)> {
    let raw = raw_client(url).await;
    let keys: Vec<String> = raw
        .custom(fred::cmd!("KEYS"), vec!["*"])
        .await
        .expect("KEYS");
    let mut left = Vec::new();
    for key in keys {
        let ttl: i64 = raw.pttl(&key).await.unwrap_or(-3);
        left.push((key, ttl));
    }
    let channels: Vec<String> = raw
        .custom(fred::cmd!("PUBSUB"), vec!["CHANNELS", "redisson_lock*"])
        .await
        .expect("PUBSUB CHANNELS");
    left.extend(
        channels
            .into_iter()
            .map(|c| (format!("subscription {c}"), -1)),
    );
    let _ = raw.quit().await;
    left
}

/// `total_connections_received` from `INFO stats`: proof that the faults reached the
/// children's connections.
async fn connections_received(url: &str) -> Result<String, fred::error::Error> {
    let raw = raw_client(url).await;
    let info: String = raw.info(Some(fred::types::InfoKind::Stats)).await?;
    let _ = raw.quit().await;
    Ok(info
        .lines()
        .find(|l| l.starts_with("total_connections_received"))
        .unwrap_or("")
        .trim()
        .to_string())
}

/// Runs one scenario and returns its report (asserting nothing itself).
async fn run_scenario(label: &str, fault: Fault, watchdog: Duration, skip_lock: bool) -> Report {
    let _one = ONE_AT_A_TIME.lock().await;
    let fault_time = match fault {
        Fault::None => Duration::from_secs(fault_secs().min(5)),
        Fault::Failover => Duration::from_secs(fault_secs() + 4),
        _ => Duration::from_secs(fault_secs()),
    };
    // A second of calm before the faults and a little after them.
    let run = fault_time + Duration::from_millis(2_500);
    let witness = RedisServer::start();

    // The lock's Redis and how the children reach it.
    let mut direct: Option<RedisServer> = None;
    let mut restartable: Option<Restartable> = None;
    let mut proxy: Option<CuttingProxy> = None;
    // Kept alive until the end of the scenario.
    let mut _replica: Option<RedisServer> = None;
    let mut sentinel: Option<SentinelServer> = None;
    let (url, raw_url) = match fault {
        Fault::Restart => {
            let server = Restartable::start();
            let url = server.url();
            restartable = Some(server);
            (url.clone(), url)
        }
        Fault::ProxyCut => {
            let server = RedisServer::start();
            let cutting = CuttingProxy::start(server.port).await;
            let urls = (cutting.url(), server.url());
            direct = Some(server);
            proxy = Some(cutting);
            urls
        }
        Fault::Failover => {
            let primary = RedisServer::start();
            let copy =
                RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
            let start = Instant::now();
            while !redis_cli(copy.port, &["info", "replication"]).contains("master_link_status:up")
            {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "replica never synced"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            let watcher = SentinelServer::start(primary.port, 2000);
            let copy_port = copy.port.to_string();
            watcher.wait_for(
                |s| redis_cli(s.port, &["sentinel", "replicas", "mymaster"]).contains(&copy_port),
                "the sentinel to see the replica",
            );
            let url = watcher.url();
            direct = Some(primary);
            _replica = Some(copy);
            sentinel = Some(watcher);
            (url.clone(), url)
        }
        _ => {
            let server = RedisServer::start_with(&["--enable-debug-command", "yes"]);
            let url = server.url();
            direct = Some(server);
            (url.clone(), url)
        }
    };
    let scenario = label.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let names: Vec<String> = (0..NAMES)
        .map(|i| format!("fault-{scenario}-{i}"))
        .collect();

    // The children.
    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    for proc_index in 0..PROCESSES {
        let config = ChildConfig {
            scenario: scenario.clone(),
            proc_index,
            url: url.clone(),
            raw_url: raw_url.clone(),
            witness: witness.url(),
            tasks: TASKS,
            names: names.clone(),
            watchdog_ms: watchdog.as_millis() as u64,
            run_ms: run.as_millis() as u64,
            skip_lock,
        };
        let child = tokio::process::Command::new(&exe)
            .args(["--exact", "fault_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, config.encode())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("re-run the test binary as a child");
        children.push(child);
    }

    // The injector: faults from 1 s after the start for `fault_time`.
    let stop = Arc::new(AtomicBool::new(false));
    let injected = {
        let stop = stop.clone();
        let pause_url = direct.as_ref().map(|s| s.url());
        let sentinel_port = sentinel.as_ref().map(|s| s.port);
        let mut restartable = restartable.take();
        let cut = proxy.as_ref().map(|p| p.cut.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let mut count = 0u64;
            let raw = match &pause_url {
                Some(u) if matches!(fault, Fault::Kill | Fault::Pause { .. }) => {
                    Some(raw_client(u).await)
                }
                _ => None,
            };
            let period = match fault {
                Fault::None => return (count, restartable),
                Fault::Kill => Duration::from_millis(200),
                Fault::Pause { every, .. } => every,
                Fault::ProxyCut => Duration::from_secs(1),
                Fault::Restart => Duration::from_secs(5),
                Fault::Failover => Duration::from_secs(2),
            };
            // At a fixed rate: the first fault half a period in, then one per period
            // (however long a fault itself takes), none after `fault_time`.
            let begin = tokio::time::Instant::now();
            let mut next = period / 2;
            while next < fault_time && !stop.load(Ordering::Relaxed) {
                tokio::time::sleep_until(begin + next).await;
                next += period;
                match fault {
                    Fault::Kill => {
                        let raw = raw.as_ref().unwrap();
                        for kind in ["normal", "pubsub"] {
                            let _: Result<i64, _> = raw
                                .custom(fred::cmd!("CLIENT"), vec!["KILL", "TYPE", kind])
                                .await;
                        }
                    }
                    Fault::Pause { secs, .. } => {
                        let raw = raw.as_ref().unwrap();
                        let options = Options {
                            timeout: Some(Duration::from_secs_f64(secs + 5.0)),
                            ..Default::default()
                        };
                        let _: Result<Value, _> = raw
                            .with_options(&options)
                            .custom(
                                fred::cmd!("DEBUG"),
                                vec!["SLEEP".to_string(), secs.to_string()],
                            )
                            .await;
                    }
                    Fault::ProxyCut => cut.as_ref().unwrap().send_modify(|n| *n += 1),
                    Fault::Restart => {
                        let mut server = restartable.take().unwrap();
                        server = tokio::task::spawn_blocking(move || {
                            server.restart();
                            server
                        })
                        .await
                        .unwrap();
                        restartable = Some(server);
                    }
                    Fault::Failover => {
                        // One failover per scenario: Sentinel refuses another within its
                        // failover timeout.
                        if count == 0 {
                            let port = sentinel_port.unwrap();
                            let answer = tokio::task::spawn_blocking(move || {
                                redis_cli(port, &["sentinel", "failover", "mymaster"])
                            })
                            .await
                            .unwrap();
                            assert!(answer.contains("OK"), "SENTINEL FAILOVER: {answer}");
                        } else {
                            continue;
                        }
                    }
                    Fault::None => {}
                }
                count += 1;
            }
            (count, restartable)
        })
    };

    // Collect the children's summaries.
    let mut report = Report {
        label: label.to_string(),
        ..Report::default()
    };
    for (index, mut child) in children.into_iter().enumerate() {
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let bound = run + TASK_EXIT_BOUND + Duration::from_secs(40);
        let summary = tokio::time::timeout(bound, async {
            let mut summary = None;
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find(SUMMARY_PREFIX) {
                    summary = Some(line[at + SUMMARY_PREFIX.len()..].to_string());
                }
            }
            summary
        })
        .await;
        match summary {
            Ok(Some(json)) => {
                let v: serde_json::Value = serde_json::from_str(&json).unwrap();
                report.tally.add(&Tally::from_json(&v));
                report.stuck += v["stuck"].as_u64().unwrap_or(0);
                report.end_fields += v["end_fields"].as_u64().unwrap_or(0);
            }
            Ok(None) => panic!("child {index} of {label} ended without a summary"),
            Err(_) => {
                // The whole process is stuck: every one of its tasks counts.
                let _ = child.kill().await;
                report.stuck += TASKS as u64;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (count, restartable) = injected.await.unwrap();
    report.faults = count;

    // Every overlapping pair, from the witness.
    let witness_raw = witness.raw().await;
    let records: Vec<String> = witness_raw
        .custom(
            fred::cmd!("LRANGE"),
            vec![format!("intervals:{scenario}"), "0".into(), "-1".into()],
        )
        .await
        .unwrap();
    let (told, untold, examples) = overlaps(&records);
    report.violations_told = told;
    report.violations_untold = untold;
    for e in examples {
        println!("{label}: untold overlap {e}");
    }

    // Nothing of the children may remain on the lock's Redis (on the primary of now).
    let inspect_url = match (&sentinel, &direct) {
        (Some(s), Some(p)) => {
            let port = s.master_port().unwrap_or(p.port);
            format!("redis://127.0.0.1:{port}")
        }
        _ => raw_url.clone(),
    };
    report.left_after_quit = leftovers(&inspect_url).await;
    if let Ok(info) = connections_received(&inspect_url).await {
        println!("{label}: {info} on the lock's Redis (since its last start)");
    }
    drop(restartable);
    println!(
        "| fault | injected | acquisitions | violations told / untold | holds left after an error | stuck tasks | left after quit | lost() / NotOwner / OutcomeUnknown / other errors | longest stall |"
    );
    println!("{}", report.row());
    if !report.left_after_quit.is_empty() {
        println!("{label}: left after quit: {:?}", report.left_after_quit);
    }
    if !report.tally.samples.is_empty() {
        println!("{label}: error samples: {:?}", report.tally.samples);
    }
    report
}

/// The targets every scenario meets. Where Redis itself loses writes (a failover), a
/// delete it acknowledged can be lost too: keys left there must at least expire.
fn assert_clean(report: &Report, redis_keeps: bool) {
    assert_eq!(report.stuck, 0, "{}: stuck tasks", report.label);
    assert_eq!(
        report.holds_left(),
        0,
        "{}: holds left after an error",
        report.label
    );
    if redis_keeps {
        assert!(
            report.left_after_quit.is_empty(),
            "{}: left after quit: {:?}",
            report.label,
            report.left_after_quit
        );
    } else {
        assert!(
            report.left_after_quit.iter().all(|(_, ttl)| *ttl > 0),
            "{}: left after quit, for good: {:?}",
            report.label,
            report.left_after_quit
        );
    }
    assert!(
        report.tally.acquired > 0,
        "{}: nothing acquired",
        report.label
    );
}

/// Where Redis keeps the lock: no overlap at all may go untold.
async fn redis_keeps(label: &str, fault: Fault, watchdog: Duration) {
    assert!(redis_keeps_the_lock(fault, watchdog));
    let report = run_scenario(label, fault, watchdog, false).await;
    assert_eq!(
        report.violations_untold, 0,
        "{label}: violations nobody was told about"
    );
    assert_clean(&report, true);
}

/// Where Redis loses the lock: overlaps may happen, but each is told to a holder.
async fn redis_loses(label: &str, fault: Fault, watchdog: Duration) {
    assert!(!redis_keeps_the_lock(fault, watchdog));
    let report = run_scenario(label, fault, watchdog, false).await;
    assert_eq!(
        report.violations_untold, 0,
        "{label}: violations nobody was told about"
    );
    assert_clean(&report, false);
}

const WATCHDOG: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_broken_lock() {
    let report = run_scenario("no lock (checker)", Fault::None, WATCHDOG, true).await;
    assert!(
        report.violations_untold > 0,
        "children that skip the lock must be caught: {report:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_faults_baseline() {
    redis_keeps("no faults (baseline)", Fault::None, WATCHDOG).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_kills() {
    redis_keeps("CLIENT KILL every 200 ms", Fault::Kill, WATCHDOG).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pauses_shorter_than_the_lease() {
    let pause = Fault::Pause {
        secs: 0.5,
        every: Duration::from_secs(2),
    };
    redis_keeps("DEBUG SLEEP 0.5 every 2 s", pause, WATCHDOG).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_cuts_every_connection() {
    redis_keeps("proxy cuts all every 1 s", Fault::ProxyCut, WATCHDOG).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pauses_longer_than_the_lease() {
    let pause = Fault::Pause {
        secs: 1.5,
        every: Duration::from_secs(4),
    };
    redis_loses(
        "DEBUG SLEEP 1.5 every 4 s (1 s watchdog)",
        pause,
        Duration::from_secs(1),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_without_persistence() {
    redis_loses(
        "SHUTDOWN NOSAVE + restart every 5 s",
        Fault::Restart,
        WATCHDOG,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover() {
    redis_loses("Sentinel failover", Fault::Failover, WATCHDOG).await;
}

/// `Client::shutdown` right after an unlock deletes the answered unlock latch itself
/// (the batched delete would otherwise never run, and the latch would live out its TTL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_unlock_latch() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;
    let lock = client.get_lock(key("latch-at-shutdown"));
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
    let latches: Vec<String> = raw
        .custom(fred::cmd!("KEYS"), vec!["redisson_unlock_latch:*"])
        .await
        .unwrap();
    assert!(
        latches.is_empty(),
        "latches left after shutdown: {latches:?}"
    );
}
