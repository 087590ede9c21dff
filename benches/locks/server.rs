//! The Redis server the bench runs against, and what it reads from it: a raw fred client,
//! `CONFIG RESETSTAT` and `INFO commandstats`.
//!
//! The `redis-server` process itself is the tests' (`tests/support/mod.rs`, included by
//! `main.rs` as `support`), so the bench and the tests start it the same way.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use redisson_lock::fred::interfaces::ClientLike;
use redisson_lock::fred::types::InfoKind;

use crate::Raw;
use crate::support::RedisServer;

/// Our own `redis-server` (killed on drop), or the one `REDIS_URL` names.
pub struct Server {
    own: Option<RedisServer>,
    pub url: String,
}

impl Server {
    pub fn start() -> Server {
        if let Ok(url) = std::env::var("REDIS_URL") {
            eprintln!("using REDIS_URL={url}");
            return Server { own: None, url };
        }
        let own = RedisServer::start();
        let url = own.url();
        eprintln!("started redis-server on 127.0.0.1:{}", own.port);
        Server {
            own: Some(own),
            url,
        }
    }

    /// Whether the bench started the server itself (and may flush it).
    pub fn owned(&self) -> bool {
        self.own.is_some()
    }
}

/// A lock client of `url` as the bench's are (key tracking unless `BENCH_NO_TRACKING`),
/// with `configure` applied (a shorter watchdog, say).
pub async fn lock_client(
    url: &str,
    configure: impl FnOnce(redisson_lock::ConfigBuilder) -> redisson_lock::ConfigBuilder,
) -> redisson_lock::Client {
    let builder = redisson_lock::Config::builder()
        .url(url)
        .key_tracking(std::env::var_os("BENCH_NO_TRACKING").is_none());
    redisson_lock::Client::connect(configure(builder).build().expect("config"))
        .await
        .expect("connect")
}

pub async fn raw_client(url: &str) -> Raw {
    let config = redisson_lock::fred::prelude::Config::from_url(url).expect("REDIS_URL");
    let client = redisson_lock::fred::prelude::Builder::from_config(config)
        .build()
        .expect("fred client");
    client.init().await.expect("connect to redis");
    client
}

/// The redis-server's process id, when it runs on this machine (0: unknown).
static SERVER_PID: AtomicU32 = AtomicU32::new(0);

/// Records the server's process id (`INFO server`) when that process is a Redis or
/// Valkey server on this machine (a remote server's pid may name a local process).
pub async fn learn_server_pid(raw: &Raw) {
    let Ok(info) = raw.info::<String>(Some(InfoKind::Server)).await else {
        return;
    };
    let pid = info
        .lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse::<u32>().ok());
    let local = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.contains("redis") || comm.contains("valkey"))
    };
    if let Some(pid) = pid.filter(local) {
        SERVER_PID.store(pid, Ordering::Relaxed);
    }
}

/// The server's process id, if it is a local process (see [`learn_server_pid`]).
pub fn server_pid() -> Option<u32> {
    Some(SERVER_PID.load(Ordering::Relaxed)).filter(|pid| *pid != 0)
}

pub async fn reset_stats(raw: &Raw) {
    let _: () = raw
        .custom(redisson_lock::fred::cmd!("CONFIG"), vec!["RESETSTAT"])
        .await
        .expect("CONFIG RESETSTAT");
}

/// `INFO commandstats` as command → calls.
pub async fn command_stats(raw: &Raw) -> BTreeMap<String, u64> {
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

pub fn script_calls(stats: &BTreeMap<String, u64>) -> u64 {
    stats.get("evalsha").copied().unwrap_or(0) + stats.get("eval").copied().unwrap_or(0)
}

/// Commands the scripts run inside Redis (counted by commandstats too), and the bench's
/// own bookkeeping commands: what is left was sent by the lock client. The first line is
/// what RLock's scripts run; the others only the other kinds' scripts (fair, read-write,
/// fenced), so adding them changed no RLock figure.
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
    // fair
    "hset",
    "lindex",
    "lpop",
    "rpush",
    "lrange",
    "lrem",
    "zadd",
    "zincrby",
    "zrange",
    "zrem",
    "zscore",
    // read-write
    "hget",
    "hdel",
    "hkeys",
    "hlen",
    // fenced
    "incr",
    // the local hand-off's check for other clients' listeners (`lua/lock_handoff.lua`)
    "pubsub|numsub",
];

pub fn client_commands(stats: &BTreeMap<String, u64>) -> u64 {
    stats
        .iter()
        .filter(|(name, _)| !NOT_SENT_BY_CLIENT.contains(&name.as_str()))
        .map(|(_, calls)| calls)
        .sum()
}
