//! The crate beside real Redisson (`real_java.rs`) on one kind of lock or synchronizer:
//! what the per-kind tests of the `java` binary (`tests/java/locks.rs`,
//! `tests/java/synchronizers.rs`, `tests/java/name_mapper.rs`) share.
//!
//! * [`Snapshot`]: every key of one object in Redis (type, content, TTL) with the client
//!   ids, thread ids and the name replaced by roles ([`Norm`]), so that the crate's write
//!   and Java's write of the same operation compare equal ([`assert_same_state`]);
//! * [`LockCase`] and [`Interop::check_lock_kind`]: the four properties of one lock kind against
//!   each Redisson version that has it: mutual exclusion with a witness, wake-ups both
//!   ways, the watchdog on both sides, the raw state of the same operations;
//! * small helpers: a background verb's answer by polling ([`answer`]), "someone waits on
//!   this name" ([`until_listening`]), the clock in ms.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use redisson_lock::Client as LockClient;
use redisson_lock::fred::prelude::*;

use super::RedisServer;
use super::real_java::{JavaClient, Pending, Version};

mod locks;
mod read_write;
mod state;
mod synchronizers;

#[allow(unused_imports)] // not every test binary uses them all
pub use {locks::*, read_write::*, state::*, synchronizers::*};

type RawClient = redisson_lock::fred::prelude::Client;

/// The watchdog timeout of both sides in these tests: short, so that a hold outlives
/// several of them within seconds (Redisson renews every third of it).
pub const WATCHDOG: Duration = Duration::from_millis(3_000);

/// How long a waiter may take to be woken by the other side's release: far below the
/// holder's lease ([`WAKE_LEASE`]), which is what it would wait without the message.
pub const WAKE_BOUND: Duration = Duration::from_secs(10);

/// The lease of a hold whose release must wake a waiter.
pub const WAKE_LEASE: Duration = Duration::from_secs(60);

/// Wall clock in ms since the epoch (the machine runs Redis and both clients).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// Real Redisson of each of `versions` on `url`, with [`WATCHDOG`], started at once.
pub async fn start_javas(versions: &[Version], url: &str) -> Vec<JavaClient> {
    futures::future::join_all(
        versions
            .iter()
            .map(|&v| JavaClient::start_with_watchdog(v, url, WATCHDOG.as_millis() as u64)),
    )
    .await
}

/// A crate client on `server` with [`WATCHDOG`].
pub async fn crate_client(server: &RedisServer) -> LockClient {
    server
        .client_with(server.config().watchdog_timeout(WATCHDOG))
        .await
}

/// The answer of a background verb, polled every 5 ms (other verbs of the same driver
/// go on meanwhile); panics after `limit`.
pub async fn answer(pending: &Pending<'_>, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Some(answer) = pending.poll().await {
            return answer;
        }
        assert!(
            start.elapsed() < limit,
            "{pending:?} did not answer within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `PUBSUB CHANNELS pattern`: the channels matching it that someone listens to.
pub async fn listened(raw: &RawClient, pattern: &str) -> Vec<String> {
    raw.custom(
        redisson_lock::fred::cmd!("PUBSUB"),
        vec!["CHANNELS", pattern],
    )
    .await
    .expect("PUBSUB CHANNELS")
}

/// Waits until some connection listens to a channel that names one of `names` (server,
/// name) (a waiter of any kind but the spin lock subscribes before it sleeps), then 200
/// ms more: a waiter tries once more right after subscribing, and a release before that
/// try would be found by it, not by the message the test means to check. For a kind that
/// never subscribes (`listens == false`), gives the waiter 300 ms to make its first
/// attempts. Either way `still` (the waiter not done) must hold then.
pub async fn until_listening<F, Fut>(
    raws: &[RawClient],
    names: &[(usize, String)],
    listens: bool,
    still: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    if listens {
        let start = Instant::now();
        'wait: loop {
            for (server, name) in names {
                if !listened(&raws[*server], &format!("*{}*", glob_escape(name)))
                    .await
                    .is_empty()
                {
                    break 'wait;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "nobody subscribed to a channel of {names:?} within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    } else {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(still().await, "the waiter on {names:?} finished too early");
}

pub(crate) fn glob_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One Java client of the check, with the fields of its threads on each server.
pub(crate) struct Side<'a> {
    pub(crate) java: &'a JavaClient,
    /// (server, thread) → field
    pub(crate) fields: BTreeMap<(usize, String), String>,
}

impl Side<'_> {
    pub(crate) fn tag(&self) -> &'static str {
        match self.java.version() {
            Version::V3_23_3 => "j3",
            Version::V4_7_0 => "j4",
        }
    }
}

pub(crate) fn alias(server: usize) -> String {
    if server == 0 {
        String::new()
    } else {
        format!(" s{server}")
    }
}

/// Whether to run one property of [`Interop::check_lock_kind`]: all of them, unless
/// `INTEROP_PHASES` lists some (`state`, `wake`, `exclusion`, `watchdog`, comma
/// separated): to look at one checker alone, e.g. with the crate broken on purpose.
pub fn phase(name: &str) -> bool {
    match std::env::var("INTEROP_PHASES") {
        Ok(list) => list.split(',').any(|p| p.trim() == name),
        Err(_) => true,
    }
}

/// The servers, crate clients (one per server, [`WATCHDOG`]) and Java clients (one per
/// version, [`WATCHDOG`]) of one test; Java has the extra servers as aliases `s1`, `s2`.
pub struct Interop {
    pub servers: Vec<RedisServer>,
    pub clients: Vec<LockClient>,
    pub raws: Vec<RawClient>,
    pub javas: Vec<JavaClient>,
    /// Per Java client: (server, thread) → its hash field there, for threads `A`, `B`.
    fields: Vec<BTreeMap<(usize, String), String>>,
    started: Instant,
}

impl Interop {
    /// `servers` servers; Redisson `versions` started at once on the first one.
    pub async fn start(versions: &[Version], servers: usize) -> Interop {
        Interop::start_with(versions, servers, None).await
    }

    /// One server, a crate client with `PrefixNameMapper::new(prefix)`, and in each Java
    /// client an extra client `jp` with a mapper that prepends `prefix` (the driver's
    /// `client jp <url> prefix=<prefix>`, Redisson 4.x): the fields of threads `A`, `B`
    /// are `jp`'s.
    pub async fn start_mapped(versions: &[Version], prefix: &str) -> Interop {
        Interop::start_with(versions, 1, Some(prefix)).await
    }

    async fn start_with(versions: &[Version], servers: usize, prefix: Option<&str>) -> Interop {
        super::init_tracing();
        let started = Instant::now();
        let servers: Vec<RedisServer> = (0..servers).map(|_| RedisServer::start()).collect();
        let mut clients = Vec::new();
        let mut raws = Vec::new();
        for server in &servers {
            let mut config = server.config().watchdog_timeout(WATCHDOG);
            if let Some(prefix) = prefix {
                config = config.name_mapper(redisson_lock::PrefixNameMapper::new(prefix));
            }
            clients.push(server.client_with(config).await);
            raws.push(server.raw().await);
        }
        let javas = start_javas(versions, &servers[0].url()).await;
        let mut all_fields = Vec::new();
        for java in &javas {
            let mut fields = BTreeMap::new();
            for (i, server) in servers.iter().enumerate().skip(1) {
                let answer = java.call(&format!("client s{i} {}", server.url())).await;
                assert!(answer.starts_with("OK "), "{answer}");
            }
            if let Some(prefix) = prefix {
                let line = format!("client jp {} prefix={prefix}", servers[0].url());
                let answer = java.call(&line).await;
                assert!(answer.starts_with("OK "), "`{line}`: {answer}");
            }
            for i in 0..servers.len() {
                for thread in ["A", "B"] {
                    let alias = match (i, prefix) {
                        (0, Some(_)) => " jp".to_string(),
                        _ => alias(i),
                    };
                    let field = java.call(&format!("lockfield {thread}{alias}")).await;
                    fields.insert((i, thread.to_string()), field);
                }
            }
            all_fields.push(fields);
        }
        eprintln!(
            "Redisson {versions:?} ready after {:.1?}",
            started.elapsed()
        );
        Interop {
            servers,
            clients,
            raws,
            javas,
            fields: all_fields,
            started,
        }
    }

    /// The first server's URL.
    pub fn url(&self) -> String {
        self.servers[0].url()
    }

    /// The Java client of `version`.
    pub fn java(&self, version: Version) -> &JavaClient {
        self.javas
            .iter()
            .find(|j| j.version() == version)
            .expect("that version was started")
    }

    pub(crate) fn sides(&self) -> Vec<Side<'_>> {
        self.javas
            .iter()
            .zip(&self.fields)
            .map(|(java, fields)| Side {
                java,
                fields: fields.clone(),
            })
            .collect()
    }

    /// The four properties of one lock kind (see the module's doc); the watchdog holds
    /// run beside the other steps.
    pub async fn check_lock_kind<L: CrateLock>(&self, case: &LockCase<L>) {
        let sides = self.sides();
        let (clients, raws) = (&self.clients[..], &self.raws[..]);
        let at = || self.started.elapsed();
        let watchdog = if phase("watchdog") {
            Some(Watchdog::start(case, clients, &sides, raws).await)
        } else {
            None
        };
        if phase("state") {
            raw_state(case, clients, &sides, raws).await;
            eprintln!("{}: raw state done at {:.1?}", case.label, at());
        }
        if phase("wake") {
            wake_ups(case, clients, &sides, raws).await;
            eprintln!("{}: wake-ups done at {:.1?}", case.label, at());
        }
        if phase("exclusion") {
            mutual_exclusion(case, clients, &sides, &self.url(), &raws[0]).await;
            eprintln!("{}: mutual exclusion done at {:.1?}", case.label, at());
        }
        if let Some(watchdog) = watchdog {
            watchdog.finish(case, clients, &sides).await;
            eprintln!("{}: watchdog done at {:.1?}", case.label, at());
        }
    }

    /// Raw state and wake-ups only (a kind whose other properties another test shows).
    pub async fn check_lock_state_and_wake_ups<L: CrateLock>(&self, case: &LockCase<L>) {
        let sides = self.sides();
        let (clients, raws) = (&self.clients[..], &self.raws[..]);
        raw_state(case, clients, &sides, raws).await;
        wake_ups(case, clients, &sides, raws).await;
    }

    /// Shuts the crate's clients down (the drivers and servers stop when dropped).
    pub async fn shutdown(self) {
        eprintln!("test done after {:.1?}", self.started.elapsed());
        for client in &self.clients {
            client.shutdown().await.unwrap();
        }
    }
}
