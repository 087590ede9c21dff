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

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use redisson_lock::fred::prelude::*;
use redisson_lock::{Client as LockClient, GroupRule, Lock, LockGroup, LockKind, LockOwner};

use super::real_java::{JavaClient, Pending, Version};
use super::RedisServer;

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
    futures::future::join_all(versions.iter().map(|&v| {
        JavaClient::start_with_watchdog(v, url, WATCHDOG.as_millis() as u64)
    }))
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
    raw.custom(redisson_lock::fred::cmd!("PUBSUB"), vec!["CHANNELS", pattern])
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

fn glob_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

// ---- raw state -----------------------------------------------------------------------

/// Replacements that make two writers' states comparable: each client's hash field (or
/// any other text) by its role, each name by `N`. A text is replaced only where it ends
/// at the end of the string or before a `:`, `}` or `,` (so `<id>:4` is not found in
/// `<id>:45`).
#[derive(Clone, Debug, Default)]
pub struct Norm(Vec<(String, String)>);

impl Norm {
    pub fn new() -> Norm {
        Norm::default()
    }

    /// Replace `from` by `to`.
    pub fn with(mut self, from: impl Into<String>, to: impl Into<String>) -> Norm {
        self.0.push((from.into(), to.into()));
        // Longest first: a name that holds another one is replaced whole.
        self.0.sort_by(|a, b| b.0.len().cmp(&a.0.len()));
        self
    }

    pub fn apply(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (from, to) in &self.0 {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(from.as_str()) {
                let after = &rest[at + from.len()..];
                let bounded = after.is_empty()
                    || after.starts_with(':')
                    || after.starts_with('}')
                    || after.starts_with(',');
                out.push_str(&rest[..at]);
                out.push_str(if bounded { to } else { from });
                rest = after;
            }
            out.push_str(rest);
            text = out;
        }
        text
    }
}

/// One key: its type, its content as (field or member or index, value) pairs, sorted,
/// and its PTTL (-1: none).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub kind: String,
    pub content: Vec<(String, String)>,
    pub pttl: i64,
}

/// Every key of one object, by normalised key name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot(pub BTreeMap<String, Entry>);

/// Bytes as text: UTF-8 printable as is, 16 raw bytes (a permit id) as `<16 bytes>`,
/// anything else as hex.
fn show(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
        _ if bytes.len() == 16 => "<16 bytes>".to_string(),
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn bytes_of(v: &Value) -> Vec<u8> {
    match v {
        Value::Bytes(b) => b.to_vec(),
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Integer(i) => i.to_string().into_bytes(),
        Value::Double(d) => d.to_string().into_bytes(),
        other => format!("{other:?}").into_bytes(),
    }
}

/// A number that reads as an epoch-ms deadline (2001..2286) becomes `~<ms from now>`
/// (compared with a tolerance by [`assert_same_state`]).
fn relative(value: String, now: i64) -> String {
    match value.parse::<f64>() {
        Ok(v) if (1e12..1e13).contains(&v) => format!("~{}", v as i64 - now),
        _ => value,
    }
}

/// The keys matching `*<name>*` on `raw` (never the unlock latches, which each side
/// removes right after its reply), normalised by `norm`.
pub async fn snapshot(raw: &RawClient, name: &str, norm: &Norm) -> Snapshot {
    let keys: Vec<Value> = raw
        .custom(redisson_lock::fred::cmd!("KEYS"), vec![format!("*{}*", glob_escape(name))])
        .await
        .expect("KEYS");
    let now = now_ms();
    let mut out = BTreeMap::new();
    for key in keys {
        let key = String::from_utf8(bytes_of(&key)).expect("utf-8 key");
        if key.starts_with("redisson_unlock_latch:") {
            continue;
        }
        let kind: String = raw.custom(redisson_lock::fred::cmd!("TYPE"), vec![key.clone()]).await.unwrap();
        let mut content: Vec<(String, String)> = match kind.as_str() {
            "hash" => {
                let flat: Vec<Value> = raw.custom(redisson_lock::fred::cmd!("HGETALL"), vec![key.clone()]).await.unwrap();
                flat.chunks(2)
                    .map(|p| {
                        (
                            norm.apply(&show(&bytes_of(&p[0]))),
                            relative(norm.apply(&show(&bytes_of(&p[1]))), now),
                        )
                    })
                    .collect()
            }
            "zset" => {
                let flat: Vec<Value> = raw
                    .custom(
                        redisson_lock::fred::cmd!("ZRANGE"),
                        vec![key.clone(), "0".into(), "-1".into(), "WITHSCORES".into()],
                    )
                    .await
                    .unwrap();
                flat.chunks(2)
                    .map(|p| {
                        (
                            norm.apply(&show(&bytes_of(&p[0]))),
                            relative(show(&bytes_of(&p[1])), now),
                        )
                    })
                    .collect()
            }
            "list" => {
                let items: Vec<Value> = raw
                    .custom(redisson_lock::fred::cmd!("LRANGE"), vec![key.clone(), "0".into(), "-1".into()])
                    .await
                    .unwrap();
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i.to_string(), norm.apply(&show(&bytes_of(v)))))
                    .collect()
            }
            "string" => {
                let v: Value = raw.custom(redisson_lock::fred::cmd!("GET"), vec![key.clone()]).await.unwrap();
                vec![(String::new(), relative(norm.apply(&show(&bytes_of(&v))), now))]
            }
            "none" => continue, // gone since KEYS
            other => panic!("{key}: unexpected type {other}"),
        };
        content.sort();
        let pttl: i64 = raw.pttl(&key).await.unwrap();
        if pttl == -2 {
            continue;
        }
        out.insert(
            norm.apply(&key),
            Entry {
                kind,
                content,
                pttl,
            },
        );
    }
    Snapshot(out)
}

fn close(a: &str, b: &str, tolerance: i64) -> bool {
    match (a.strip_prefix('~'), b.strip_prefix('~')) {
        (Some(x), Some(y)) => match (x.parse::<i64>(), y.parse::<i64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= tolerance,
            _ => false,
        },
        _ => a == b,
    }
}

/// The crate's state and Java's after the same operation: the same keys, types, fields
/// and values (deadlines within `tolerance` ms of each other), and TTLs both absent or
/// both within `tolerance` ms.
pub fn assert_same_state(what: &str, ours: &Snapshot, java: &Snapshot, tolerance: Duration) {
    let tol = tolerance.as_millis() as i64;
    let mismatch = || {
        format!(
            "{what}: the crate's state and Redisson's differ\n  crate: {:#?}\n  java:  {:#?}",
            ours.0, java.0
        )
    };
    assert_eq!(
        ours.0.keys().collect::<Vec<_>>(),
        java.0.keys().collect::<Vec<_>>(),
        "{}",
        mismatch()
    );
    for (key, a) in &ours.0 {
        let b = &java.0[key];
        assert_eq!(a.kind, b.kind, "{key}: {}", mismatch());
        assert_eq!(a.content.len(), b.content.len(), "{key}: {}", mismatch());
        for (x, y) in a.content.iter().zip(&b.content) {
            assert!(
                x.0 == y.0 && close(&x.1, &y.1, tol),
                "{key}: {x:?} vs {y:?}: {}",
                mismatch()
            );
        }
        let ttls_match = (a.pttl == -1 && b.pttl == -1)
            || (a.pttl > 0 && b.pttl > 0 && (a.pttl - b.pttl).abs() <= tol);
        assert!(ttls_match, "{key}: PTTL {} vs {}: {}", a.pttl, b.pttl, mismatch());
    }
}

/// A snapshot of every server, by server index (for objects spread over servers).
pub async fn snapshot_all(raws: &[RawClient], name: &str, norm: &Norm) -> Snapshot {
    let mut out = BTreeMap::new();
    for (i, raw) in raws.iter().enumerate() {
        for (key, entry) in snapshot(raw, name, norm).await.0 {
            out.insert(format!("s{i}/{key}"), entry);
        }
    }
    Snapshot(out)
}

// ---- lock kinds ----------------------------------------------------------------------

/// What the per-kind checks do with one of the crate's locks (a [`Lock`] of any kind, a
/// `MultiLock`, a `RedLock`).
pub trait CrateLock: Clone + Send + Sync + 'static {
    fn lock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send;
    fn lock_with_lease(
        &self,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<()>> + Send;
    fn try_lock(&self) -> impl Future<Output = redisson_lock::Result<bool>> + Send;
    fn try_lock_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<bool>> + Send;
    fn unlock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send;
    fn owned_by(&self, owner: u64) -> Self;
}

impl<K: LockKind> CrateLock for Lock<K> {
    fn lock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        Lock::lock(self)
    }
    fn lock_with_lease(
        &self,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        Lock::lock_with_lease(self, lease)
    }
    fn try_lock(&self) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        Lock::try_lock(self)
    }
    fn try_lock_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        Lock::try_lock_with_lease(self, wait, lease)
    }
    fn unlock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        Lock::unlock(self)
    }
    fn owned_by(&self, owner: u64) -> Self {
        self.with_owner(LockOwner::from_raw(owner))
    }
}

impl<R: GroupRule> CrateLock for LockGroup<R> {
    fn lock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        LockGroup::lock(self)
    }
    fn lock_with_lease(
        &self,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        LockGroup::lock_with_lease(self, lease)
    }
    fn try_lock(&self) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        LockGroup::try_lock(self)
    }
    fn try_lock_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> impl Future<Output = redisson_lock::Result<bool>> + Send {
        LockGroup::try_lock_with_lease(self, wait, lease)
    }
    fn unlock(&self) -> impl Future<Output = redisson_lock::Result<()>> + Send {
        LockGroup::unlock(self)
    }
    fn owned_by(&self, owner: u64) -> Self {
        self.with_owner(LockOwner::from_raw(owner))
    }
}

/// How Java names one lock object in the driver's verbs.
#[derive(Clone, Debug)]
pub enum JavaLock {
    /// One lock: `[alias/][kind:]name` for `lock`, `trylock`, `unlock`, `stress`.
    One(String),
    /// `RedissonMultiLock` (`multi`) or `RedissonRedLock` (`red`) over member names.
    Group(&'static str, Vec<String>),
}

impl JavaLock {
    fn verb(&self, verb: &str) -> String {
        match self {
            JavaLock::One(name) => format!("{verb} {name}"),
            JavaLock::Group(group, members) => {
                let verb = match (*group, verb) {
                    ("multi", v) => format!("multi{v}"),
                    ("red", "lock") => "redlock".to_string(),
                    ("red", v) => format!("red{v}"),
                    (g, _) => panic!("unknown group {g}"),
                };
                format!("{verb} {}", members.join(","))
            }
        }
    }

    /// `lock` with a lease in ms, or the watchdog (`None`).
    pub fn lock(&self, lease: Option<Duration>, thread: &str) -> String {
        format!("{} {} {thread}", self.verb("lock"), ms_or_minus(lease))
    }

    pub fn try_lock(&self, wait: Duration, lease: Option<Duration>, thread: &str) -> String {
        format!(
            "{} {} {} {thread}",
            self.verb("trylock"),
            wait.as_millis(),
            ms_or_minus(lease)
        )
    }

    pub fn unlock(&self, thread: &str) -> String {
        format!("{} {thread}", self.verb("unlock"))
    }
}

fn ms_or_minus(lease: Option<Duration>) -> String {
    lease.map_or("-1".to_string(), |l| l.as_millis().to_string())
}

/// One lock kind as both sides name it, and what it writes.
pub struct LockCase<L: CrateLock> {
    pub label: &'static str,
    /// The crate's lock of base name `name`, on the clients of the servers in order.
    pub ours: fn(&[LockClient], &str) -> L,
    /// Java's lock of base name `name` (server `i` > 0 is the driver's alias `s<i>`).
    pub java: fn(&str) -> JavaLock,
    /// The Redis names where the object of base name `name` lives, as (server, name):
    /// what the watchdog must keep and what the snapshots read (`*<name>*`).
    pub keys: fn(&str) -> Vec<(usize, String)>,
    /// Whether a holder may take it again.
    pub reentrant: bool,
    /// How soon a waiter must be woken by the other side's release. Groups (MultiLock,
    /// RedLock) wait on a member for at most 1.5 s before they try all members again
    /// (both sides), so a lost message costs them at most that: their bound is below it.
    pub wake_bound: Duration,
    /// Whether a majority of members is enough (a RedLock): the crate may give back a
    /// member that answered late.
    pub quorum: bool,
    /// Whether a waiter subscribes (all kinds but the spin lock).
    pub listens: bool,
    /// Whether a queued waiter leaves state in Redis (the fair kinds).
    pub queues: bool,
    /// Whether the driver's `stress` verb can hold it (single-name kinds); otherwise
    /// mutual exclusion is driven verb by verb.
    pub stress: bool,
    /// The crate's name of the lock that Java's `stress` on `(case.java)(base)` holds
    /// (it appends the index `0`): `<base>0` for most kinds.
    pub stress_name: fn(&str) -> String,
    /// Prepared before each side's first acquisition of a state snapshot (the fenced
    /// lock's counter: the same start on both sides).
    pub before_state: Option<fn(&str) -> Vec<(String, String)>>,
}

/// One Java client of the check, with the fields of its threads on each server.
struct Side<'a> {
    java: &'a JavaClient,
    /// (server, thread) → field
    fields: BTreeMap<(usize, String), String>,
}

impl Side<'_> {
    fn tag(&self) -> &'static str {
        match self.java.version() {
            Version::V3_23_3 => "j3",
            Version::V4_7_0 => "j4",
        }
    }
}

fn alias(server: usize) -> String {
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

    fn sides(&self) -> Vec<Side<'_>> {
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

// ---- raw state of the same operations -------------------------------------------------

fn norm_for_crate<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    name: &str,
) -> Norm {
    let mut norm = names_norm(case, name);
    for client in clients {
        norm = norm
            .with(format!("{}:1", client.id()), "HOLDER")
            .with(format!("{}:2", client.id()), "WAITER");
    }
    norm
}

fn norm_for_java<L: CrateLock>(case: &LockCase<L>, side: &Side<'_>, name: &str) -> Norm {
    let mut norm = names_norm(case, name);
    for ((_, thread), field) in &side.fields {
        let role = if thread == "A" { "HOLDER" } else { "WAITER" };
        norm = norm.with(field.clone(), role);
    }
    norm
}

/// Each Redis name of the object by its place (`N0`, `N1`, ...; on several servers the
/// first place wins: the snapshot tells the servers apart).
fn names_norm<L: CrateLock>(case: &LockCase<L>, name: &str) -> Norm {
    let mut norm = Norm::new();
    let mut seen = Vec::new();
    for (_, key) in (case.keys)(name) {
        if !seen.contains(&key) {
            norm = norm.with(key.clone(), format!("N{}", seen.len()));
            seen.push(key);
        }
    }
    norm
}

async fn prepare<L: CrateLock>(case: &LockCase<L>, raws: &[RawClient], name: &str) {
    if let Some(before) = case.before_state {
        for (key, value) in before(name) {
            let _: () = raws[0].set(key, value, None, None, false).await.unwrap();
        }
    }
}

/// What every Redis name of the object of base name `name` contains (the snapshot's
/// pattern).
fn pattern_name<L: CrateLock>(_case: &LockCase<L>, name: &str) -> String {
    name.to_string()
}

/// Runs `take` (the crate's acquisitions of the step, `times` holds by `HOLDER`) until
/// every member holds them. A group with a quorum (a RedLock) may have given back a
/// member whose answer came in after the majority's and a grace as long again (a
/// member on a slow server must not hold the lock up): then the step is released and
/// taken again, up to 10 times.
async fn whole<L, F, Fut>(
    case: &LockCase<L>,
    raws: &[RawClient],
    pattern: &str,
    norm: &Norm,
    (ours, times): (&L, usize),
    take: F,
) where
    L: CrateLock,
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let members = (case.keys)(pattern).len();
    for attempt in 1..=10 {
        take().await;
        if !case.quorum {
            return;
        }
        // Late members are given back in the background: let that happen first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let snap = snapshot_all(raws, pattern, norm).await;
        let whole = snap
            .0
            .values()
            .filter(|e| e.content.iter().any(|(f, v)| f == "HOLDER" && *v == times.to_string()))
            .count();
        if whole == members {
            return;
        }
        eprintln!(
            "{}: {whole} of {members} members held after attempt {attempt}: taking it again",
            case.label
        );
        for _ in 0..times {
            ours.unlock().await.unwrap();
        }
    }
    panic!("{}: never held on every member", case.label);
}

/// Each step is done by the crate on one name and by each Java version on names of
/// their own; after each, the normalised states must match.
async fn raw_state<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    raws: &[RawClient],
) {
    let lease = Duration::from_secs(20);
    let tolerance = Duration::from_millis(1_500);
    let ours_name = format!("{}-state-rs", case.label);
    let ours = (case.ours)(clients, &ours_name).owned_by(1);
    let crate_norm = norm_for_crate(case, clients, &ours_name);
    let pattern = pattern_name(case, &ours_name);
    prepare(case, raws, &ours_name).await;

    struct JavaState<'s, 'a> {
        side: &'s Side<'a>,
        lock: JavaLock,
        norm: Norm,
        pattern: String,
    }
    let mut theirs = Vec::new();
    for side in sides {
        let name = format!("{}-state-{}", case.label, side.tag());
        prepare(case, raws, &name).await;
        theirs.push(JavaState {
            side,
            lock: (case.java)(&name),
            norm: norm_for_java(case, side, &name),
            pattern: pattern_name(case, &name),
        });
    }
    let compare = |what: String, ours: Snapshot, theirs: Vec<(Version, Snapshot)>| {
        eprintln!("{}, {what}: {:?}", case.label, ours.0);
        for (version, snap) in theirs {
            assert_same_state(
                &format!("{}, {what}, Redisson {version}", case.label),
                &ours,
                &snap,
                tolerance,
            );
        }
    };
    async fn all(raws: &[RawClient], pattern: &str, norm: &Norm) -> Snapshot {
        snapshot_all(raws, pattern, norm).await
    }

    // 1. A hold with a lease (twice, where the kind re-enters), taken without a wait:
    // a group's lock(lease) takes its members with a random temporary lease (Redisson's
    // and the crate's alike) that a partial release would re-arm.
    let times = if case.reentrant { 2 } else { 1 };
    whole(case, raws, &pattern, &crate_norm, (&ours, times), || async {
        for _ in 0..times {
            assert!(ours.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
        }
    })
    .await;
    for _ in 0..times {
        for t in &theirs {
            assert!(
                t.side
                    .java
                    .bool(&t.lock.try_lock(Duration::ZERO, Some(lease), "A"))
                    .await
            );
        }
    }
    let mut snaps = Vec::new();
    for t in &theirs {
        snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
    }
    let first = all(raws, &pattern, &crate_norm).await;
    assert!(!first.0.is_empty(), "{}: the crate wrote nothing", case.label);
    compare(format!("held with a lease x{times}"), first, snaps);

    // 2. A queued waiter (fair kinds): the queue, the deadline set.
    if case.queues {
        let waiter = ours.owned_by(2);
        let task = tokio::spawn(async move { waiter.lock_with_lease(lease).await });
        let mut pendings = Vec::new();
        for t in &theirs {
            pendings.push(t.side.java.spawn(&t.lock.lock(Some(lease), "B")).await);
        }
        for name in std::iter::once(&pattern).chain(theirs.iter().map(|t| &t.pattern)) {
            let n = 1;
            let queue = format!("redisson_lock_queue:{{{}}}", (case.keys)(name)[0].1);
            let ok = super::eventually(Duration::from_secs(20), || async {
                let len: i64 = raws[0]
                    .custom(redisson_lock::fred::cmd!("LLEN"), vec![queue.clone()])
                    .await
                    .unwrap();
                len as usize == n
            })
            .await;
            assert!(ok, "{}: nobody queued in {queue}", case.label);
        }
        let mut snaps = Vec::new();
        for t in &theirs {
            snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
        }
        compare(
            "held, one waiter queued".into(),
            all(raws, &pattern, &crate_norm).await,
            snaps,
        );
        // The holder lets go (fully), the waiter gets it; then the waiter lets go.
        for _ in 0..times {
            ours.unlock().await.unwrap();
            for t in &theirs {
                t.side.java.ok(&t.lock.unlock("A")).await;
            }
        }
        tokio::time::timeout(WAKE_BOUND, task)
            .await
            .expect("the queued crate waiter took the lock")
            .unwrap()
            .unwrap();
        for p in &pendings {
            assert_eq!(answer(p, WAKE_BOUND).await, "OK");
        }
        let mut snaps = Vec::new();
        for t in &theirs {
            snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
        }
        compare(
            "the waiter took it".into(),
            all(raws, &pattern, &crate_norm).await,
            snaps,
        );
        ours.owned_by(2).unlock().await.unwrap();
        for t in &theirs {
            t.side.java.ok(&t.lock.unlock("B")).await;
        }
    } else {
        // 2'. One release of a re-entered hold; then the last one.
        if case.reentrant {
            ours.unlock().await.unwrap();
            for t in &theirs {
                t.side.java.ok(&t.lock.unlock("A")).await;
            }
            let mut snaps = Vec::new();
            for t in &theirs {
                snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
            }
            compare(
                "one of two holds released".into(),
                all(raws, &pattern, &crate_norm).await,
                snaps,
            );
        }
        ours.unlock().await.unwrap();
        for t in &theirs {
            t.side.java.ok(&t.lock.unlock("A")).await;
        }
    }
    let mut snaps = Vec::new();
    for t in &theirs {
        snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
    }
    compare(
        "released".into(),
        all(raws, &pattern, &crate_norm).await,
        snaps,
    );

    // 3. A hold with the watchdog (lease -1): the TTL is the watchdog timeout. On names of
    // their own: Redisson's faster multi-lock object would still use the lease of its
    // earlier lease-mode hold (4.7.0: `lock(20 s)`, `unlock()`, `lock()` writes a 20 s
    // lease; its other kinds go back to the watchdog timeout, as the crate does).
    let ours_name = format!("{}-state2-rs", case.label);
    let ours = (case.ours)(clients, &ours_name).owned_by(1);
    let crate_norm = norm_for_crate(case, clients, &ours_name);
    let pattern = pattern_name(case, &ours_name);
    prepare(case, raws, &ours_name).await;
    let mut theirs = Vec::new();
    for side in sides {
        let name = format!("{}-state2-{}", case.label, side.tag());
        prepare(case, raws, &name).await;
        theirs.push(JavaState {
            side,
            lock: (case.java)(&name),
            norm: norm_for_java(case, side, &name),
            pattern: pattern_name(case, &name),
        });
    }
    whole(case, raws, &pattern, &crate_norm, (&ours, 1), || async {
        ours.lock().await.unwrap();
    })
    .await;
    for t in &theirs {
        t.side.java.ok(&t.lock.lock(None, "A")).await;
    }
    let mut snaps = Vec::new();
    for t in &theirs {
        snaps.push((t.side.java.version(), all(raws, &t.pattern, &t.norm).await));
    }
    let held = all(raws, &pattern, &crate_norm).await;
    for entry in held.0.values().filter(|e| e.kind == "hash") {
        assert!(
            entry.pttl > 0 && entry.pttl <= WATCHDOG.as_millis() as i64,
            "{}: watchdog hold PTTL {}",
            case.label,
            entry.pttl
        );
    }
    compare("held with the watchdog".into(), held, snaps);
    ours.unlock().await.unwrap();
    for t in &theirs {
        t.side.java.ok(&t.lock.unlock("A")).await;
    }
}

// ---- wake-ups both ways ---------------------------------------------------------------

async fn wake_ups<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    raws: &[RawClient],
) {
    for side in sides {
        let java = side.java;
        let version = java.version();
        // (a) The crate holds with a long lease; a Java waiter is woken by its unlock.
        let name = format!("{}-wake-rs-{}", case.label, side.tag());
        let names = (case.keys)(&name);
        let ours = (case.ours)(clients, &name).owned_by(1);
        ours.lock_with_lease(WAKE_LEASE).await.unwrap();
        let target = (case.java)(&name);
        let waiter = java.spawn(&target.lock(None, "B")).await;
        until_listening(raws, &names, case.listens, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let released = Instant::now();
        ours.unlock().await.unwrap();
        assert_eq!(answer(&waiter, case.wake_bound).await, "OK");
        let took = released.elapsed();
        eprintln!(
            "{}: a Redisson {version} waiter took the lock {took:?} after the crate's unlock",
            case.label
        );
        assert!(took < case.wake_bound, "{took:?}");
        assert!(!ours.try_lock().await.unwrap(), "Java holds it now");
        java.ok(&target.unlock("B")).await;

        // (b) Java holds with a long lease; the crate's waiter is woken by Java's unlock.
        let name = format!("{}-wake-java-{}", case.label, side.tag());
        let names = (case.keys)(&name);
        let target = (case.java)(&name);
        java.ok(&target.lock(Some(WAKE_LEASE), "A")).await;
        let ours = (case.ours)(clients, &name).owned_by(2);
        let task = tokio::spawn({
            let ours = ours.clone();
            async move { ours.lock().await }
        });
        until_listening(raws, &names, case.listens, || async {
            !task.is_finished()
        })
        .await;
        let released = Instant::now();
        java.ok(&target.unlock("A")).await;
        tokio::time::timeout(case.wake_bound, task)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{}: the crate's waiter was not woken by Redisson {version}'s unlock",
                    case.label
                )
            })
            .unwrap()
            .unwrap();
        let took = released.elapsed();
        eprintln!(
            "{}: the crate's waiter took the lock {took:?} after Redisson {version}'s unlock",
            case.label
        );
        assert!(
            !java.bool(&target.try_lock(Duration::ZERO, None, "A")).await,
            "the crate holds it now"
        );
        ours.unlock().await.unwrap();
    }
}

// ---- mutual exclusion -----------------------------------------------------------------

/// Java threads per version and crate tasks, and their rounds.
const JAVA_THREADS: usize = 3;
const CRATE_TASKS: usize = 3;
const ROUNDS: usize = 15;
const HOLD_MAX_MS: u64 = 3;

async fn mutual_exclusion<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    url: &str,
    raw: &RawClient,
) {
    if case.stress {
        stress_exclusion(case, clients, sides, url, raw).await
    } else {
        driven_exclusion(case, clients, sides).await
    }
}

/// Every Java version runs `stress` (its threads lock, GET the counter, hold 0–3 ms,
/// SET it + 1, unlock) while the crate's tasks do the same on the same lock and counter:
/// an update lost by two holders at once shows as a count short of the acquisitions.
async fn stress_exclusion<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
    url: &str,
    raw: &RawClient,
) {
    let base = format!("{}-mx", case.label);
    let JavaLock::One(java_prefix) = (case.java)(&base) else {
        panic!("stress needs a single lock")
    };
    // `stress` locks prefix + index: index 0.
    let java_name = format!("{java_prefix}0");
    let counter_prefix = format!("ck-{}", case.label);
    let counter = format!("{counter_prefix}:{java_name}");
    let ours = (case.ours)(clients, &(case.stress_name)(&base));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let mut pendings = Vec::new();
    for side in sides {
        pendings.push(
            side.java
                .spawn(&format!(
                    "stress {java_prefix} 1 {JAVA_THREADS} {ROUNDS} {HOLD_MAX_MS} {counter_prefix} {url}"
                ))
                .await,
        );
    }
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CRATE_TASKS {
        let (ours, raw, counter) = (ours.clone(), raw.clone(), counter.clone());
        let (inside, overlaps, refused) = (inside.clone(), overlaps.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                ours.lock().await.unwrap();
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                let seen: Option<i64> = raw.get(&counter).await.unwrap();
                let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                tokio::time::sleep(Duration::from_millis(hold)).await;
                let _: () = raw
                    .set(&counter, seen.unwrap_or(0) + 1, None, None, false)
                    .await
                    .unwrap();
                inside.fetch_sub(1, Ordering::SeqCst);
                // Counted, not unwrapped: a release refused because someone else
                // released our hold is a symptom; the counter below tells the cause.
                if ours.unlock().await.is_err() {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let mut java_total = 0;
    let mut replies = Vec::new();
    for (side, pending) in sides.iter().zip(&pendings) {
        let reply = answer(pending, Duration::from_secs(120)).await;
        // `OK <done> <errors>`: every round is an acquisition, failed or not.
        java_total += JAVA_THREADS * ROUNDS;
        replies.push((side.java.version(), reply));
    }
    let count: i64 = raw.get(&counter).await.unwrap();
    let expected = (java_total + CRATE_TASKS * ROUNDS) as i64;
    eprintln!(
        "{}: {expected} acquisitions ({java_total} by Java: {replies:?}), counter {count}",
        case.label
    );
    assert_eq!(
        count, expected,
        "{}: the counter lost {} updates: two holders at once",
        case.label,
        expected - count
    );
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two crate holders");
    for (version, reply) in replies {
        assert_eq!(
            reply,
            format!("OK {} 0", JAVA_THREADS * ROUNDS),
            "{}: Redisson {version} stress",
            case.label,
        );
    }
    assert_eq!(refused.load(Ordering::SeqCst), 0, "the crate's releases refused");
}

/// For groups (no `stress` verb): each Java version's threads lock, are marked inside by
/// the test once their `lock` answered, hold 0–3 ms, are marked out, unlock; the
/// crate's tasks do the same. The mark (inside the real holds on both sides) must never
/// count two.
async fn driven_exclusion<L: CrateLock>(
    case: &LockCase<L>,
    clients: &[LockClient],
    sides: &[Side<'_>],
) {
    const THREADS: usize = 2;
    const DRIVEN_ROUNDS: usize = 6;
    let base = format!("{}-mx", case.label);
    let target = (case.java)(&base);
    let ours = (case.ours)(clients, &base);
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let rounds = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..THREADS {
        let ours = ours.clone();
        let (inside, overlaps, rounds) = (inside.clone(), overlaps.clone(), rounds.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..DRIVEN_ROUNDS {
                ours.lock().await.unwrap();
                hold_marked(&inside, &overlaps).await;
                rounds.fetch_add(1, Ordering::SeqCst);
                // A refused release is a symptom of a second holder: the mark tells.
                let _ = ours.unlock().await;
            }
        }));
    }
    let mut java_loops = Vec::new();
    for side in sides {
        for t in 0..THREADS {
            let (target, inside, overlaps, rounds) = (&target, &inside, &overlaps, &rounds);
            java_loops.push(async move {
                let thread = format!("M{t}");
                for _ in 0..DRIVEN_ROUNDS {
                    let pending = side.java.spawn(&target.lock(None, &thread)).await;
                    assert_eq!(answer(&pending, Duration::from_secs(60)).await, "OK");
                    hold_marked(inside, overlaps).await;
                    rounds.fetch_add(1, Ordering::SeqCst);
                    side.java.ok(&target.unlock(&thread)).await;
                }
            });
        }
    }
    futures::future::join_all(java_loops).await;
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let total = rounds.load(Ordering::SeqCst);
    eprintln!("{}: {total} acquisitions, driven", case.label);
    assert_eq!(
        total as usize,
        (sides.len() + 1) * THREADS * DRIVEN_ROUNDS
    );
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "{}: two holders at once",
        case.label
    );
}

/// Marks a holder inside for 0–3 ms; counts an overlap when another one already is.
pub async fn hold_marked(inside: &AtomicUsize, overlaps: &AtomicUsize) {
    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
        overlaps.fetch_add(1, Ordering::SeqCst);
    }
    let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
    tokio::time::sleep(Duration::from_millis(hold)).await;
    inside.fetch_sub(1, Ordering::SeqCst);
}

// ---- the watchdog on both sides -------------------------------------------------------

/// How long the watchdog holds must last: several watchdog timeouts.
pub const WATCHDOG_SPAN: Duration = Duration::from_millis(WATCHDOG.as_millis() as u64 * 5 / 2);

/// Java (each version) and the crate each hold a lock of their own with the watchdog
/// (lease -1) while the other steps run; a sampler reads every key's PTTL meanwhile.
struct Watchdog<L: CrateLock> {
    started: Instant,
    ours: L,
    /// (who, crate name, the Java lock)
    held: Vec<(String, String, JavaLock)>,
    sampler: tokio::task::JoinHandle<Vec<(String, i64, i64, i64)>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl<L: CrateLock> Watchdog<L> {
    async fn start(
        case: &LockCase<L>,
        clients: &[LockClient],
        sides: &[Side<'_>],
        raws: &[RawClient],
    ) -> Watchdog<L> {
        let mut held = Vec::new();
        let ours_name = format!("{}-wd-rs", case.label);
        let ours = (case.ours)(clients, &ours_name).owned_by(1);
        ours.lock().await.unwrap();
        held.push((
            "crate".to_string(),
            ours_name.clone(),
            (case.java)(&ours_name),
        ));
        for side in sides {
            let name = format!("{}-wd-{}", case.label, side.tag());
            let target = (case.java)(&name);
            side.java.ok(&target.lock(None, "A")).await;
            held.push((format!("Redisson {}", side.java.version()), name, target));
        }
        let started = Instant::now();
        let mut watched = Vec::new();
        for (who, name, _) in &held {
            let members = (case.keys)(name);
            let mut kept = Vec::new();
            for (server, key) in &members {
                let pttl: i64 = raws[*server].pttl(key).await.unwrap();
                // A RedLock may have given back a member that answered late.
                if pttl > 0 || !case.quorum {
                    kept.push((format!("{who}: s{server}/{key}"), raws[*server].clone(), key.clone()));
                }
            }
            assert!(
                kept.len() > members.len() / 2,
                "{}: {who} holds {} of {} members",
                case.label,
                kept.len(),
                members.len()
            );
            watched.extend(kept);
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = tokio::spawn({
            let stop = stop.clone();
            async move {
                // (key, lowest PTTL seen, highest, samples)
                let mut seen: Vec<(String, i64, i64, i64)> =
                    watched.iter().map(|w| (w.0.clone(), i64::MAX, i64::MIN, 0)).collect();
                while !stop.load(Ordering::SeqCst) {
                    for (i, (_, raw, key)) in watched.iter().enumerate() {
                        let pttl: i64 = raw.pttl(key).await.unwrap();
                        seen[i].1 = seen[i].1.min(pttl);
                        seen[i].2 = seen[i].2.max(pttl);
                        seen[i].3 += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                seen
            }
        });
        Watchdog {
            started,
            ours,
            held,
            sampler,
            stop,
        }
    }

    async fn finish(self, case: &LockCase<L>, clients: &[LockClient], sides: &[Side<'_>]) {
        let left = WATCHDOG_SPAN.saturating_sub(self.started.elapsed());
        tokio::time::sleep(left).await;
        self.stop.store(true, Ordering::SeqCst);
        let seen = self.sampler.await.unwrap();
        eprintln!(
            "{}: watchdog holds after {:.1?} (timeout {WATCHDOG:?}): (key, lowest PTTL, highest, samples) {:?}",
            case.label,
            self.started.elapsed(),
            seen
        );
        for (key, lowest, highest, samples) in &seen {
            assert!(*samples >= 5, "{key}: only {samples} samples");
            assert!(
                *lowest > 0,
                "{}: {key} expired (PTTL {lowest}) while its holder's watchdog should renew it",
                case.label
            );
            assert!(
                *highest <= WATCHDOG.as_millis() as i64,
                "{}: {key} renewed to {highest} ms, more than the watchdog timeout",
                case.label
            );
        }
        // Still held, and the other side stays out.
        for (who, name, target) in &self.held {
            if who == "crate" {
                for side in sides {
                    assert!(
                        !side
                            .java
                            .bool(&target.try_lock(Duration::ZERO, None, "B"))
                            .await,
                        "{}: Redisson {} took the crate's watchdog-held lock",
                        case.label,
                        side.java.version()
                    );
                }
            } else {
                let theirs = (case.ours)(clients, name).owned_by(2);
                assert!(
                    !theirs.try_lock().await.unwrap(),
                    "{}: the crate took {who}'s watchdog-held lock",
                    case.label
                );
            }
        }
        self.ours.unlock().await.unwrap();
        for side in sides {
            let (_, _, target) = self
                .held
                .iter()
                .find(|(who, _, _)| *who == format!("Redisson {}", side.java.version()))
                .unwrap();
            side.java.ok(&target.unlock("A")).await;
        }
    }
}

// ---- the read-write lock's two halves together ----------------------------------------

fn rw_norm(name: &str, fields: &[(String, &str)]) -> Norm {
    let mut norm = Norm::new().with(name, "N0");
    for (field, role) in fields {
        norm = norm.with(field.clone(), *role);
    }
    norm
}

/// What the write half's [`Interop::check_lock_kind`] cannot show: read holds (theirs and
/// ours at once), a writer that also reads, wake-ups between the halves both ways, and
/// exclusion between one side's writers and the other's readers.
pub async fn check_read_write_halves(bed: &Interop) {
    let sides = bed.sides();
    if phase("state") {
        read_write_state(bed, &sides).await;
    }
    if phase("exclusion") {
        readers_together(bed, &sides).await;
    }
    if phase("wake") {
        read_write_wake_ups(bed, &sides).await;
    }
    if phase("exclusion") {
        read_write_exclusion(bed, &sides).await;
    }
}

/// Read holds, and a writer that also reads: the same state on both sides.
async fn read_write_state(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let lease = Duration::from_secs(20);
    let tolerance = Duration::from_millis(1_500);
    let rw = |n: &str| client.get_read_write_lock(n);
    let ours_fields = |n: u64| format!("{}:{n}", client.id());
    let crate_norm = |name: &str| rw_norm(name, &[(ours_fields(1), "R1"), (ours_fields(2), "R2")]);
    let java_norm = |side: &Side<'_>, name: &str| {
        rw_norm(
            name,
            &[
                (side.fields[&(0, "A".to_string())].clone(), "R1"),
                (side.fields[&(0, "B".to_string())].clone(), "R2"),
            ],
        )
    };
    let compare = |what: &str, ours: &Snapshot, java: &Snapshot, version: Version| {
        assert_same_state(&format!("rw, {what}, Redisson {version}"), ours, java, tolerance)
    };
    // 1. Read holds: R1 twice, R2 once; then R1 gives one back.
    let name = "rw-read-state-rs";
    let (r1, r2) = (
        rw(name).read_lock().owned_by(1),
        rw(name).read_lock().owned_by(2),
    );
    for r in [&r1, &r1, &r2] {
        assert!(r.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
    }
    let held = snapshot(raw, name, &crate_norm(name)).await;
    eprintln!("rw, read holds: {:?}", held.0);
    r1.unlock().await.unwrap();
    let one_back = snapshot(raw, name, &crate_norm(name)).await;
    r1.unlock().await.unwrap();
    r2.unlock().await.unwrap();
    assert!(snapshot(raw, name, &crate_norm(name)).await.0.is_empty());
    for side in sides {
        let name = format!("rw-read-state-{}", side.tag());
        let norm = java_norm(side, &name);
        for thread in ["A", "A", "B"] {
            assert!(
                side.java
                    .bool(&format!("trylock read:{name} 0 {} {thread}", lease.as_millis()))
                    .await
            );
        }
        compare("read holds", &held, &snapshot(raw, &name, &norm).await, side.java.version());
        side.java.ok(&format!("unlock read:{name} A")).await;
        compare(
            "one read hold given back",
            &one_back,
            &snapshot(raw, &name, &norm).await,
            side.java.version(),
        );
        side.java.ok(&format!("unlock read:{name} A")).await;
        side.java.ok(&format!("unlock read:{name} B")).await;
        assert!(snapshot(raw, &name, &norm).await.0.is_empty());
    }

    // 2. A writer that also reads; then gives the read back.
    let name = "rw-write-state-rs";
    let (w, r) = (
        rw(name).write_lock().owned_by(1),
        rw(name).read_lock().owned_by(1),
    );
    assert!(w.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
    assert!(r.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
    let both = snapshot(raw, name, &crate_norm(name)).await;
    eprintln!("rw, a writer that reads: {:?}", both.0);
    r.unlock().await.unwrap();
    let write_only = snapshot(raw, name, &crate_norm(name)).await;
    w.unlock().await.unwrap();
    for side in sides {
        let name = format!("rw-write-state-{}", side.tag());
        let norm = java_norm(side, &name);
        let ms = lease.as_millis();
        assert!(side.java.bool(&format!("trylock write:{name} 0 {ms} A")).await);
        assert!(side.java.bool(&format!("trylock read:{name} 0 {ms} A")).await);
        compare("a writer that reads", &both, &snapshot(raw, &name, &norm).await, side.java.version());
        side.java.ok(&format!("unlock read:{name} A")).await;
        compare(
            "the writer's read given back",
            &write_only,
            &snapshot(raw, &name, &norm).await,
            side.java.version(),
        );
        side.java.ok(&format!("unlock write:{name} A")).await;
    }

}

/// Readers together: the crate's and each version's at once; no writer gets in.
async fn readers_together(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let rw = |n: &str| client.get_read_write_lock(n);
    let name = "rw-share";
    let ours = rw(name).read_lock().owned_by(1);
    ours.lock_with_lease(WAKE_LEASE).await.unwrap();
    for side in sides {
        assert!(
            side.java.bool(&format!("trylock read:{name} 0 -1 A")).await,
            "Redisson {} reads beside the crate's reader",
            side.java.version()
        );
    }
    let readers: i64 = raw.hlen(name).await.unwrap();
    assert_eq!(readers as usize, 1 + sides.len() + 1, "mode and one field per reader");
    assert!(!rw(name).write_lock().owned_by(2).try_lock().await.unwrap());
    for side in sides {
        assert!(!side.java.bool(&format!("trylock write:{name} 0 -1 B")).await);
    }
    ours.unlock().await.unwrap();
    for side in sides {
        side.java.ok(&format!("unlock read:{name} A")).await;
    }
}

/// Wake-ups between the halves, both ways, for each version.
async fn read_write_wake_ups(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    let rw = |n: &str| client.get_read_write_lock(n);
    for side in sides {
        let java = side.java;
        let version = java.version();
        for (held_half, waiting_half) in [("write", "read"), ("read", "write")] {
            // (a) The crate holds one half; Java waits for the other.
            let name = format!("rw-wake-rs-{held_half}-{}", side.tag());
            let holder_read = rw(&name).read_lock().owned_by(1);
            let holder_write = rw(&name).write_lock().owned_by(1);
            if held_half == "write" {
                holder_write.lock_with_lease(WAKE_LEASE).await.unwrap();
            } else {
                holder_read.lock_with_lease(WAKE_LEASE).await.unwrap();
            }
            let waiter = java.spawn(&format!("lock {waiting_half}:{name} -1 B")).await;
            until_listening(raws, &[(0, name.clone())], true, || async {
                waiter.poll().await.is_none()
            })
            .await;
            let released = Instant::now();
            if held_half == "write" {
                holder_write.unlock().await.unwrap();
            } else {
                holder_read.unlock().await.unwrap();
            }
            assert_eq!(answer(&waiter, WAKE_BOUND).await, "OK");
            eprintln!(
                "rw: a Redisson {version} {waiting_half} waiter took it {:?} after the crate's {held_half} unlock",
                released.elapsed()
            );
            java.ok(&format!("unlock {waiting_half}:{name} B")).await;

            // (b) Java holds one half; the crate waits for the other.
            let name = format!("rw-wake-java-{held_half}-{}", side.tag());
            java.ok(&format!(
                "lock {held_half}:{name} {} A",
                WAKE_LEASE.as_millis()
            ))
            .await;
            let task = if waiting_half == "read" {
                let l = rw(&name).read_lock().owned_by(2);
                tokio::spawn(async move {
                    l.lock().await.unwrap();
                    l.unlock().await.unwrap();
                })
            } else {
                let l = rw(&name).write_lock().owned_by(2);
                tokio::spawn(async move {
                    l.lock().await.unwrap();
                    l.unlock().await.unwrap();
                })
            };
            until_listening(raws, &[(0, name.clone())], true, || async {
                !task.is_finished()
            })
            .await;
            let released = Instant::now();
            java.ok(&format!("unlock {held_half}:{name} A")).await;
            tokio::time::timeout(WAKE_BOUND, task)
                .await
                .unwrap_or_else(|_| {
                    panic!("the crate's {waiting_half}er was not woken by Redisson {version}'s {held_half} unlock")
                })
                .unwrap();
            eprintln!(
                "rw: the crate's {waiting_half} waiter took it {:?} after Redisson {version}'s {held_half} unlock",
                released.elapsed()
            );
        }
    }

}

/// One side's writers against the other's readers.
async fn read_write_exclusion(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let rw = |n: &str| client.get_read_write_lock(n);
    //    Java's writers and readers
    //    stress the lock (each GETs and SETs a counter of its half); the crate's writers
    //    count on the writers' counter and watch the readers' one, its readers watch the
    //    writers' one: a counter of the other half that moves during a hold is a reader
    //    and a writer inside at once.
    let base = "rw-mx";
    let ck = "ck-rw";
    let write_counter = format!("{ck}:write:{base}0");
    let read_counter = format!("{ck}:read:{base}0");
    let mut pendings = Vec::new();
    for side in sides {
        for half in ["write", "read"] {
            pendings.push((
                side.java.version(),
                side.java
                    .spawn(&format!(
                        "stress {half}:{base} 1 {JAVA_THREADS} {ROUNDS} {HOLD_MAX_MS} {ck} {}",
                        bed.url()
                    ))
                    .await,
            ));
        }
    }
    let overlaps = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for writer in [true, false, true, false] {
        let rwl = rw(&format!("{base}0"));
        let (raw, overlaps) = (raw.clone(), overlaps.clone());
        let (mine, theirs) = if writer {
            (write_counter.clone(), read_counter.clone())
        } else {
            (read_counter.clone(), write_counter.clone())
        };
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                if writer {
                    rwl.write_lock().lock().await.unwrap();
                } else {
                    rwl.read_lock().lock().await.unwrap();
                }
                let seen: Option<i64> = raw.get(&mine).await.unwrap();
                let before: Option<i64> = raw.get(&theirs).await.unwrap();
                let hold = rand::thread_rng().gen_range(1..=HOLD_MAX_MS + 2);
                tokio::time::sleep(Duration::from_millis(hold)).await;
                let after: Option<i64> = raw.get(&theirs).await.unwrap();
                if before != after {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                if writer {
                    let _: () = raw
                        .set(&mine, seen.unwrap_or(0) + 1, None, None, false)
                        .await
                        .unwrap();
                    rwl.write_lock().unlock().await.unwrap();
                } else {
                    rwl.read_lock().unlock().await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let mut java_writes = 0;
    for (i, (version, pending)) in pendings.iter().enumerate() {
        let reply = answer(pending, Duration::from_secs(120)).await;
        assert_eq!(reply, format!("OK {} 0", JAVA_THREADS * ROUNDS), "Redisson {version}");
        if i % 2 == 0 {
            java_writes += JAVA_THREADS * ROUNDS;
        }
    }
    let writes: i64 = raw.get(&write_counter).await.unwrap();
    let expected = (java_writes + 2 * ROUNDS) as i64;
    eprintln!("rw: {expected} write holds, counter {writes}; {} overlaps seen", overlaps.load(Ordering::SeqCst));
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "a reader and a writer held the lock at once"
    );
    assert_eq!(writes, expected, "two writers held the lock at once");
}

// ---- synchronizers ---------------------------------------------------------------------

/// How the two sides name one synchronizer of base name `name`: the driver's name
/// (`name`, or `jp/name` on a client with a name mapper) and the key in Redis.
#[derive(Clone, Copy)]
pub struct Naming {
    pub java: fn(&str) -> String,
    pub redis: fn(&str) -> String,
}

/// The same name on both sides, no mapper.
pub const PLAIN: Naming = Naming {
    java: plain_name,
    redis: plain_name,
};

fn plain_name(name: &str) -> String {
    name.to_string()
}

/// Runs `ours` (the crate's steps on its name) and, for each Java client, `theirs` (the
/// same steps on its own name): after step `i` of each, the normalised states must
/// match. Steps are (what, crate future, Java verb lines with `{n}` for the name).
pub struct StepCompare<'a> {
    bed: &'a Interop,
    naming: Naming,
    label: String,
}

impl<'a> StepCompare<'a> {
    pub fn new(bed: &'a Interop, naming: Naming, label: &str) -> StepCompare<'a> {
        StepCompare {
            bed,
            naming,
            label: label.to_string(),
        }
    }

    /// The crate's name for this comparison, and its Redis key.
    pub fn ours(&self) -> (String, String) {
        let name = format!("{}-state-rs", self.label);
        let key = (self.naming.redis)(&name);
        (name, key)
    }

    /// The snapshot of the crate's object now.
    pub async fn snap_ours(&self) -> Snapshot {
        let (_, key) = self.ours();
        snapshot(&self.bed.raws[0], &key, &Norm::new().with(key.clone(), "N0")).await
    }

    /// Each Java client runs `lines` (with `{n}` for its driver name; a line starting
    /// with `=` must answer what follows the `=`, e.g. `=true semset {n} 5`; `$` in a
    /// line is the previous answer) on its own name, then its state must be `expected`.
    pub async fn java_matches(
        &self,
        what: &str,
        expected: &Snapshot,
        lines: &[&str],
        last: &mut HashMap<Version, String>,
    ) {
        for java in &self.bed.javas {
            let name = format!("{}-state-{}", self.label, side_tag(java.version()));
            let driver_name = (self.naming.java)(&name);
            let key = (self.naming.redis)(&name);
            for line in lines {
                let (want, line) = match line.strip_prefix('=') {
                    Some(rest) => {
                        let (want, line) = rest.split_once(' ').expect("=<answer> <verb>");
                        (Some(want), line)
                    }
                    None => (None, *line),
                };
                let previous = last.get(&java.version()).cloned().unwrap_or_default();
                let line = line.replace("{n}", &driver_name).replace('$', &previous);
                let answer = java.call(&line).await;
                if let Some(want) = want {
                    assert_eq!(answer, want, "Redisson {}: `{line}`", java.version());
                }
                assert!(
                    !answer.starts_with("ERR"),
                    "Redisson {}: `{line}`: {answer}",
                    java.version()
                );
                last.insert(java.version(), answer);
            }
            let theirs = snapshot(&self.bed.raws[0], &key, &Norm::new().with(key.clone(), "N0")).await;
            assert_same_state(
                &format!("{}, {what}, Redisson {}", self.label, java.version()),
                expected,
                &theirs,
                Duration::from_millis(1_500),
            );
        }
        eprintln!("{}, {what}: {:?}", self.label, expected.0);
    }
}

fn side_tag(version: Version) -> &'static str {
    match version {
        Version::V3_23_3 => "j3",
        Version::V4_7_0 => "j4",
    }
}

/// `RSemaphore`: raw state of the same operations, permits released on one side waking
/// a waiter on the other, and at most `permits` holders at once across both.
pub async fn check_semaphore(bed: &Interop, naming: Naming, label: &str) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    // 1. Raw state.
    let steps = StepCompare::new(bed, naming, label);
    let (name, _) = steps.ours();
    let sem = client.get_semaphore(&name);
    let mut last = HashMap::new();
    assert!(sem.try_set_permits(5).await.unwrap());
    steps
        .java_matches("5 permits set", &steps.snap_ours().await, &["=true semset {n} 5"], &mut last)
        .await;
    sem.acquire(2).await.unwrap().forget();
    steps
        .java_matches("2 acquired", &steps.snap_ours().await, &["=OK semacquire {n} 2 A"], &mut last)
        .await;
    sem.release(1).await.unwrap();
    steps
        .java_matches("1 released", &steps.snap_ours().await, &["=OK semrelease {n} 1"], &mut last)
        .await;
    assert_eq!(sem.drain_permits().await.unwrap(), 4);
    steps
        .java_matches("drained", &steps.snap_ours().await, &["=4 semdrain {n}"], &mut last)
        .await;
    sem.add_permits(-2).await.unwrap();
    steps
        .java_matches("-2 added", &steps.snap_ours().await, &["=OK semadd {n} -2"], &mut last)
        .await;
    // trySetPermits with a TTL: Redisson 3.29+.
    if bed.javas.iter().all(|j| j.version() == Version::V4_7_0) || bed.javas.len() > 1 {
        let ttl_steps = StepCompare {
            bed,
            naming,
            label: format!("{label}-ttl"),
        };
        let (ttl_name, _) = ttl_steps.ours();
        let with_ttl = client.get_semaphore(&ttl_name);
        assert!(with_ttl
            .try_set_permits_with_ttl(3, Duration::from_secs(20))
            .await
            .unwrap());
        let expected = ttl_steps.snap_ours().await;
        for java in &bed.javas {
            let name = (naming.java)(&format!("{label}-ttl-state-{}", side_tag(java.version())));
            let answer = java.call(&format!("semset {name} 3 20000")).await;
            match java.version() {
                Version::V3_23_3 => assert!(answer.starts_with("ERR unsupported"), "{answer}"),
                Version::V4_7_0 => {
                    assert_eq!(answer, "true");
                    let key = (naming.redis)(&format!("{label}-ttl-state-j4"));
                    let theirs =
                        snapshot(&raws[0], &key, &Norm::new().with(key.clone(), "N0")).await;
                    assert_same_state(
                        &format!("{label}, 3 permits with a 20 s TTL, Redisson 4.7.0"),
                        &expected,
                        &theirs,
                        Duration::from_millis(1_500),
                    );
                }
            }
        }
    }

    // 2. Wake-ups both ways, for each version.
    for java in &bed.javas {
        let version = java.version();
        let tag = side_tag(version);
        let name = format!("{label}-wake-rs-{tag}");
        let sem = client.get_semaphore(&name);
        let driver = (naming.java)(&name);
        let waiter = java.spawn(&format!("semacquire {driver} 1 B")).await;
        let key = (naming.redis)(&name);
        until_listening(raws, &[(0, key.clone())], true, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let released = Instant::now();
        sem.release(1).await.unwrap();
        assert_eq!(answer(&waiter, WAKE_BOUND).await, "OK");
        eprintln!(
            "{label}: a Redisson {version} waiter got the permit {:?} after the crate's release",
            released.elapsed()
        );

        let name = format!("{label}-wake-java-{tag}");
        let sem = client.get_semaphore(&name);
        let driver = (naming.java)(&name);
        let task = tokio::spawn(async move { sem.acquire(1).await.unwrap().forget() });
        let key = (naming.redis)(&name);
        until_listening(raws, &[(0, key)], true, || async { !task.is_finished() }).await;
        let released = Instant::now();
        java.ok(&format!("semrelease {driver} 1")).await;
        tokio::time::timeout(WAKE_BOUND, task)
            .await
            .unwrap_or_else(|_| {
                panic!("{label}: the crate's waiter was not woken by Redisson {version}'s release")
            })
            .unwrap();
        eprintln!(
            "{label}: the crate's waiter got the permit {:?} after Redisson {version}'s release",
            released.elapsed()
        );
    }

    // 3. At most 2 holders of 2 permits, across both sides.
    let name = format!("{label}-mx");
    let driver = (naming.java)(&name);
    let sem = client.get_semaphore(&name);
    assert!(sem.try_set_permits(2).await.unwrap());
    let acquire = |t: &str| format!("semacquire {driver} 1 {t}");
    let release = |_t: &str, _answer: &str| format!("semrelease {driver} 1");
    let most = bounded_holders(bed, 2, &acquire, &release, {
        let sem = sem.clone();
        move || {
            let sem = sem.clone();
            async move {
                let permits = sem.acquire(1).await.unwrap();
                move || async move { permits.release().await.unwrap() }
            }
        }
    })
    .await;
    assert_eq!(sem.available_permits().await.unwrap(), 2);
    eprintln!("{label}: at most {most} of 2 permits held at once");
}

/// Each Java version's threads (2 per version) and 2 of the crate's tasks, 6 rounds
/// each: acquire (Java: the `acquire` line for its thread; the crate: `ours()`), marked
/// inside by the test once acquired, hold 0–3 ms, marked out, release (Java: the
/// `release` line with the acquire's answer). The mark must never count more than
/// `bound`. Answers the most seen at once.
pub async fn bounded_holders<A, R, O, OFut, Rel, RelFut>(
    bed: &Interop,
    bound: usize,
    acquire: &A,
    release: &R,
    ours: O,
) -> usize
where
    A: Fn(&str) -> String,
    R: Fn(&str, &str) -> String,
    O: Fn() -> OFut + Clone + Send + 'static,
    OFut: Future<Output = Rel> + Send,
    Rel: FnOnce() -> RelFut + Send,
    RelFut: Future<Output = ()> + Send,
{
    const THREADS: usize = 2;
    const BOUNDED_ROUNDS: usize = 6;
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let enter = {
        let (inside, most) = (inside.clone(), most.clone());
        move || {
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
        }
    };
    let mut tasks = Vec::new();
    for _ in 0..THREADS {
        let (ours, inside, enter) = (ours.clone(), inside.clone(), enter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..BOUNDED_ROUNDS {
                let release = ours().await;
                enter();
                let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                tokio::time::sleep(Duration::from_millis(hold)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                release().await;
            }
        }));
    }
    let mut java_loops = Vec::new();
    for java in &bed.javas {
        for t in 0..THREADS {
            let (inside, enter) = (&inside, &enter);
            java_loops.push(async move {
                let thread = format!("M{t}");
                for _ in 0..BOUNDED_ROUNDS {
                    let pending = java.spawn(&acquire(&thread)).await;
                    let got = answer(&pending, Duration::from_secs(60)).await;
                    assert!(!got.starts_with("ERR") && got != "null", "{got}");
                    enter();
                    let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                    tokio::time::sleep(Duration::from_millis(hold)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    java.ok(&release(&thread, &got)).await;
                }
            });
        }
    }
    futures::future::join_all(java_loops).await;
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= bound, "{most} holders at once, more than {bound}");
    most
}

/// `RPermitExpirableSemaphore`: raw state of the same operations (ids as 16 raw bytes,
/// lease deadlines, the no-lease score), releases waking waiters on the other side, a
/// lease running out on one side giving the permit to a waiter on the other, one
/// holder at a time of 1 permit, and a crate permit kept by its watchdog that Java
/// never gets.
/// With `kept == false`, the kept permit is left out (it takes [`WATCHDOG_SPAN`]).
pub async fn check_permit_expirable(bed: &Interop, naming: Naming, label: &str, kept: bool) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    // The crate's kept permit, beside the other steps.
    let kept_name = format!("{label}-kept");
    let kept_pes = client.get_permit_expirable_semaphore(&kept_name);
    let kept = if kept {
        assert!(kept_pes.try_set_permits(1).await.unwrap());
        Some(kept_pes.acquire_kept().await.unwrap())
    } else {
        None
    };
    let kept_since = Instant::now();

    // 1. Raw state.
    let steps = StepCompare::new(bed, naming, label);
    let (name, _) = steps.ours();
    let pes = client.get_permit_expirable_semaphore(&name);
    let mut last = HashMap::new();
    assert!(pes.try_set_permits(3).await.unwrap());
    steps
        .java_matches("3 permits set", &steps.snap_ours().await, &["=true pesset {n} 3"], &mut last)
        .await;
    let leased = pes.acquire(Some(Duration::from_secs(20))).await.unwrap();
    let mut leased_ids = HashMap::new();
    steps
        .java_matches(
            "one with a 20 s lease",
            &steps.snap_ours().await,
            &["pesacquire {n} 20000 A"],
            &mut last,
        )
        .await;
    for (v, id) in &last {
        assert_eq!(id.len(), 32, "a permit id: {id}");
        leased_ids.insert(*v, id.clone());
    }
    let _unleased = pes.acquire(None).await.unwrap();
    steps
        .java_matches(
            "one without a lease",
            &steps.snap_ours().await,
            &["pesacquire {n} -1 A"],
            &mut last,
        )
        .await;
    pes.release(leased).await.unwrap();
    let mut by_leased = leased_ids.clone();
    steps
        .java_matches(
            "the leased one released",
            &steps.snap_ours().await,
            &["=OK pesrelease {n} $"],
            &mut by_leased,
        )
        .await;

    // 2. Wake-ups both ways (a release; a lease running out), for each version.
    for java in &bed.javas {
        let version = java.version();
        let tag = side_tag(version);
        for by_lease in [false, true] {
            let how = if by_lease { "lease" } else { "release" };
            // (a) The crate holds the only permit; a Java waiter gets it.
            let name = format!("{label}-wake-{how}-rs-{tag}");
            let driver = (naming.java)(&name);
            let key = (naming.redis)(&name);
            let pes = client.get_permit_expirable_semaphore(&name);
            assert!(pes.try_set_permits(1).await.unwrap());
            let lease = by_lease.then_some(Duration::from_millis(1_500));
            // No earlier than this can the lease have ended (ms rounding aside).
            let deadline = Instant::now() + Duration::from_millis(1_500 - 5);
            let id = pes.acquire(lease).await.unwrap();
            let waiter = java.spawn(&format!("pesacquire {driver} -1 B")).await;
            until_listening(raws, &[(0, key)], true, || async {
                waiter.poll().await.is_none()
            })
            .await;
            let released = if by_lease {
                deadline
            } else {
                pes.release(id).await.unwrap();
                Instant::now()
            };
            let theirs = answer(&waiter, WAKE_BOUND + Duration::from_secs(2)).await;
            assert_eq!(theirs.len(), 32, "{theirs}");
            assert!(
                Instant::now() >= released,
                "{label}: Redisson {version} got the permit before the crate's {how} ended"
            );
            let took = Instant::now().saturating_duration_since(released);
            eprintln!(
                "{label}: a Redisson {version} waiter got the permit {took:?} after the crate's {how} ended"
            );
            assert!(took < WAKE_BOUND, "{took:?}");
            java.ok(&format!("pesrelease {driver} {theirs}")).await;

            // (b) Java holds the only permit; the crate's waiter gets it.
            let name = format!("{label}-wake-{how}-java-{tag}");
            let driver = (naming.java)(&name);
            let key = (naming.redis)(&name);
            assert!(java.bool(&format!("pesset {driver} 1")).await);
            let lease_ms = if by_lease { "1500" } else { "-1" };
            let deadline = Instant::now() + Duration::from_millis(1_500 - 5);
            let theirs = java.call(&format!("pesacquire {driver} {lease_ms} A")).await;
            let pes = client.get_permit_expirable_semaphore(&name);
            let task = tokio::spawn({
                let pes = pes.clone();
                async move { pes.acquire(None).await.unwrap() }
            });
            until_listening(raws, &[(0, key)], true, || async { !task.is_finished() }).await;
            let released = if by_lease {
                deadline
            } else {
                java.ok(&format!("pesrelease {driver} {theirs}")).await;
                Instant::now()
            };
            let ours = tokio::time::timeout(WAKE_BOUND + Duration::from_secs(2), task)
                .await
                .unwrap_or_else(|_| {
                    panic!("{label}: the crate's waiter did not get Redisson {version}'s permit ({how})")
                })
                .unwrap();
            assert!(
                Instant::now() >= released,
                "{label}: the crate got Redisson {version}'s permit before its {how} ended"
            );
            let took = Instant::now().saturating_duration_since(released);
            eprintln!(
                "{label}: the crate's waiter got the permit {took:?} after Redisson {version}'s {how} ended"
            );
            assert!(took < WAKE_BOUND, "{took:?}");
            pes.release(ours).await.unwrap();
        }
    }

    // 3. One holder at a time of 1 permit.
    let name = format!("{label}-mx");
    let driver = (naming.java)(&name);
    let pes = client.get_permit_expirable_semaphore(&name);
    assert!(pes.try_set_permits(1).await.unwrap());
    let acquire = |t: &str| format!("pesacquire {driver} -1 {t}");
    let release = |_t: &str, id: &str| format!("pesrelease {driver} {id}");
    bounded_holders(bed, 1, &acquire, &release, {
        let pes = pes.clone();
        move || {
            let pes = pes.clone();
            async move {
                let id = pes.acquire(None).await.unwrap();
                move || async move { pes.release(id).await.unwrap() }
            }
        }
    })
    .await;
    assert_eq!(pes.available_permits().await.unwrap(), 1);

    // 4. The kept permit outlived several watchdog timeouts; Java never got it.
    let Some(kept) = kept else { return };
    tokio::time::sleep(WATCHDOG_SPAN.saturating_sub(kept_since.elapsed())).await;
    assert!(!kept.is_lost());
    let kept_driver = (naming.java)(&kept_name);
    for java in &bed.javas {
        assert_eq!(java.int(&format!("pesavail {kept_driver}")).await, 0);
        assert_eq!(
            java.call(&format!("pestryacquire {kept_driver} 0 -1 B")).await,
            "null",
            "Redisson {} got the crate's kept permit",
            java.version()
        );
    }
    let timeout_key = format!("{{{}}}:timeout", (naming.redis)(&kept_name));
    let flat: Vec<Value> = raws[0]
        .custom(
            redisson_lock::fred::cmd!("ZRANGE"),
            vec![timeout_key.clone(), "0".into(), "-1".into(), "WITHSCORES".into()],
        )
        .await
        .unwrap();
    let score: i64 = show(&bytes_of(&flat[1])).parse::<f64>().unwrap() as i64;
    let ahead = score - now_ms();
    eprintln!(
        "{label}: the kept permit after {:.1?}: its deadline {ahead} ms ahead",
        kept_since.elapsed()
    );
    assert!(
        ahead > 0 && ahead <= WATCHDOG.as_millis() as i64,
        "renewed to the watchdog timeout: {ahead}"
    );
    kept.release().await.unwrap();
}

/// `RCountDownLatch`: raw state of the same operations, a count-down on one side opening
/// waiters on the other, both sides' count-downs opening both sides' waiters.
pub async fn check_latch(bed: &Interop, naming: Naming, label: &str) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    let steps = StepCompare::new(bed, naming, label);
    let (name, _) = steps.ours();
    let latch = client.get_count_down_latch(&name);
    let mut last = HashMap::new();
    assert!(latch.try_set_count(3).await.unwrap());
    steps
        .java_matches("count 3", &steps.snap_ours().await, &["=true latchset {n} 3"], &mut last)
        .await;
    assert!(!latch.try_set_count(9).await.unwrap());
    latch.count_down().await.unwrap();
    steps
        .java_matches(
            "counted down",
            &steps.snap_ours().await,
            &["=false latchset {n} 9", "=OK latchdown {n}"],
            &mut last,
        )
        .await;
    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    let open = steps.snap_ours().await;
    assert!(open.0.is_empty(), "an open latch has no key");
    steps
        .java_matches("open", &open, &["=OK latchdown {n}", "=OK latchdown {n}"], &mut last)
        .await;

    for java in &bed.javas {
        let version = java.version();
        let tag = side_tag(version);
        let key_of = |n: &str| (naming.redis)(n);
        // (a) A Java waiter opened by the crate's count-down.
        let name = format!("{label}-wake-rs-{tag}");
        let driver = (naming.java)(&name);
        let latch = client.get_count_down_latch(&name);
        assert!(latch.try_set_count(1).await.unwrap());
        let waiter = java.spawn(&format!("latchawait {driver} -1 B")).await;
        until_listening(raws, &[(0, key_of(&name))], true, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let opened = Instant::now();
        latch.count_down().await.unwrap();
        assert_eq!(answer(&waiter, WAKE_BOUND).await, "true");
        eprintln!(
            "{label}: a Redisson {version} waiter went on {:?} after the crate's count-down",
            opened.elapsed()
        );

        // (b) The crate's waiter opened by Java's count-down.
        let name = format!("{label}-wake-java-{tag}");
        let driver = (naming.java)(&name);
        assert!(java.bool(&format!("latchset {driver} 1")).await);
        let latch = client.get_count_down_latch(&name);
        let task = tokio::spawn({
            let latch = latch.clone();
            async move { latch.wait().await.unwrap() }
        });
        until_listening(raws, &[(0, key_of(&name))], true, || async {
            !task.is_finished()
        })
        .await;
        let opened = Instant::now();
        java.ok(&format!("latchdown {driver}")).await;
        tokio::time::timeout(WAKE_BOUND, task)
            .await
            .unwrap_or_else(|_| panic!("{label}: Redisson {version}'s count-down did not open the crate's waiter"))
            .unwrap();
        eprintln!(
            "{label}: the crate's waiter went on {:?} after Redisson {version}'s count-down",
            opened.elapsed()
        );

        // (c) Count 2, a waiter on each side; one count-down from each side opens both.
        let name = format!("{label}-both-{tag}");
        let driver = (naming.java)(&name);
        let latch = client.get_count_down_latch(&name);
        assert!(latch.try_set_count(2).await.unwrap());
        let theirs = java.spawn(&format!("latchawait {driver} 20000 B")).await;
        let ours = tokio::spawn({
            let latch = latch.clone();
            async move { latch.wait_for(Duration::from_secs(20)).await.unwrap() }
        });
        java.ok(&format!("latchdown {driver}")).await;
        assert_eq!(latch.get_count().await.unwrap(), 1);
        assert_eq!(java.int(&format!("latchcount {driver}")).await, 1);
        latch.count_down().await.unwrap();
        assert_eq!(answer(&theirs, WAKE_BOUND).await, "true");
        assert!(tokio::time::timeout(WAKE_BOUND, ours).await.unwrap().unwrap());
    }
}
