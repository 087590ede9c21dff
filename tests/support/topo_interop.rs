//! The crate beside real Redisson 3.23.3 and 4.7.0 on a Sentinel set or a Redis Cluster
//! (`tests/java/sentinel.rs`, `tests/java/cluster.rs`): the checks both topologies run
//! for every lock kind, the synchronizers and the name mapper.
//!
//! A [`Topo`] reads raw state where it lives (the Sentinel set's primary, the primary of
//! a key's cluster slot) and counts a channel's listeners the way the servers see them
//! (`PUBSUB NUMSUB`, or `PUBSUB SHARDNUMSUB` on the slot's primary under sharded pub/sub),
//! so that a wake-up is only timed once the waiter is known to listen.
//!
//! Every cross check holds with a 60 s lease and gives the waiter [`WAKE_LIMIT`]: a
//! waiter that missed the unlock message would only try again when the lease ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rand::Rng;
use redisson_lock::fred::prelude::*;
use redisson_lock::{HoldState, Lock, LockGuard, LockKind, LockOwner, PrefixNameMapper};

use super::RedisServer;
use super::cluster::Cluster;
use super::real_java::{JavaClient, Version};
use super::sentinel_set::SentinelSet;

/// A plain fred connection, to read raw state.
pub type Raw = redisson_lock::fred::prelude::Client;
/// The crate's client.
pub type LockClient = redisson_lock::Client;

/// The prefix of the name mapper both sides use (Redisson 4.7.0's `client ... prefix=`).
pub const PREFIX: &str = "app1:";
/// The Java driver's alias of its client with that name mapper.
pub const ALIAS: &str = "jp";
/// The watchdog timeout of every client in these tests (Java and crate): short, so that
/// a hold outlives it several times within a test; long enough that a renewal delayed
/// by a busy machine does not lose it.
pub const WATCHDOG_MS: u64 = 5_000;
/// The lease of the holds a waiter waits for: long, so that only a message wakes it.
pub const LEASE: Duration = Duration::from_secs(60);
/// How soon after the unlock a waiter must hold the lock (the lease is 60 s).
pub const WAKE_LIMIT: Duration = Duration::from_secs(5);
/// How long a waiter seen subscribing is given for its attempt after the subscription
/// (one script round trip), before the release whose message must wake it.
pub const SETTLE: Duration = Duration::from_millis(250);
/// The faster multi-lock's values (`fastermulti:<group>=a|b`).
pub const MULTI_VALUES: [&str; 2] = ["a", "b"];

/// Where the raw state of a topology lives.
pub struct Topo {
    /// The URL both the crate and the Java driver take.
    pub url: String,
    /// The URL Java's `stress` verb writes its counters through: the primary itself on
    /// Sentinel (Redisson's readMode SLAVE would read them from the replica).
    pub counter_url: String,
    /// Sharded pub/sub (a Redis 7 cluster): listeners are `SHARDNUMSUB` on the slot's
    /// primary.
    pub sharded: bool,
    nodes: Vec<(u16, Raw)>,
    slots: Vec<(u16, u16, usize)>,
}

impl Topo {
    /// The Sentinel set's primary.
    pub async fn sentinel(set: &SentinelSet) -> Topo {
        Self::sentinel_primary(set.url(), set.primary.port).await
    }

    /// A Sentinel set whose primary is on `port` now (after a failover).
    pub async fn sentinel_primary(url: String, port: u16) -> Topo {
        Topo {
            url,
            counter_url: format!("redis://127.0.0.1:{port}"),
            sharded: false,
            nodes: vec![(port, RedisServer::raw_at(port).await)],
            slots: vec![(0, 16_383, 0)],
        }
    }

    /// The cluster's primaries, as its first node sees them now.
    pub async fn cluster(cluster: &Cluster) -> Topo {
        let mut nodes = Vec::new();
        let mut slots = Vec::new();
        let topology = cluster.topology(cluster.nodes[0].port);
        for node in topology
            .into_iter()
            .filter(|n| n.primary && !n.slots.is_empty())
        {
            for &(lo, hi) in &node.slots {
                slots.push((lo, hi, nodes.len()));
            }
            nodes.push((node.port, RedisServer::raw_at(node.port).await));
        }
        Topo {
            url: cluster.url(),
            counter_url: cluster.url(),
            sharded: true,
            nodes,
            slots,
        }
    }

    /// The port of the primary that holds `key`.
    pub fn port_of(&self, key: &str) -> u16 {
        self.nodes[self.index_of(key)].0
    }

    fn index_of(&self, key: &str) -> usize {
        let slot = redisson_lock::fred::util::redis_keyslot(key.as_bytes());
        self.slots
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            .map(|s| s.2)
            .expect("a primary serves every slot")
    }

    /// A connection to the primary that holds `key`.
    pub fn node(&self, key: &str) -> &Raw {
        &self.nodes[self.index_of(key)].1
    }

    /// How many connections listen on `channel` where its messages are published.
    pub async fn listeners(&self, channel: &str) -> i64 {
        let which = if self.sharded {
            "SHARDNUMSUB"
        } else {
            "NUMSUB"
        };
        let reply: Vec<Value> = self
            .node(channel)
            .custom(redisson_lock::fred::cmd!("PUBSUB"), vec![which, channel])
            .await
            .unwrap();
        reply[1].as_i64().unwrap()
    }

    /// Waits (5 s at most) until nobody listens on `channel` (a subscription of an
    /// earlier step may still be going away), and returns how many still do.
    pub async fn quiet(&self, channel: &str) -> i64 {
        super::eventually(Duration::from_secs(5), || async {
            self.listeners(channel).await == 0
        })
        .await;
        self.listeners(channel).await
    }

    /// Waits until more than `before` connections listen on `channel` (panics after
    /// 10 s), then [`SETTLE`]: Redisson and the crate try once more right after
    /// subscribing, and a release before that try would be seen by it, not by the
    /// message this wait is meant to prove.
    pub async fn await_listener(&self, channel: &str, before: i64, what: &str) {
        let heard = super::eventually(Duration::from_secs(10), || async {
            self.listeners(channel).await > before
        })
        .await;
        assert!(
            heard,
            "{what}: the waiter never listened on {channel} (listeners: {})",
            self.listeners(channel).await
        );
        tokio::time::sleep(SETTLE).await;
    }

    /// `GET key` on its primary.
    pub async fn get(&self, key: &str) -> Option<String> {
        self.node(key).get(key).await.unwrap()
    }

    /// `SET key value` on its primary.
    pub async fn set(&self, key: &str, value: &str) {
        let _: () = self
            .node(key)
            .set(key, value, None, None, false)
            .await
            .unwrap();
    }

    /// Every key whose name contains `name`, but the unlock latches and fencing tokens
    /// (whose values say who wrote them when, not what), one line each: key, type, TTL
    /// (`ttl:none`, or rounded up to 10 s) and content, with each of `owners` written
    /// `<owner>`, epoch-ms times `<time>` and binary members `<id>`. Two writers that
    /// leave the same state give the same lines.
    pub async fn snapshot(&self, name: &str, owners: &[&str]) -> Vec<String> {
        let pattern = format!("*{name}*");
        let mut keys = Vec::new();
        for (_, raw) in &self.nodes {
            keys.extend(super::strings(raw, ["KEYS", pattern.as_str()]).await);
        }
        keys.retain(|k| {
            !k.starts_with("redisson_unlock_latch:") && !k.starts_with("redisson_lock_token:")
        });
        let normal = |text: &str| {
            let mut text = text.to_owned();
            for owner in owners {
                text = text.replace(owner, "<owner>");
            }
            match text.parse::<i64>() {
                Ok(n) if n > 1_000_000_000_000 && n != 922_337_203_685_477 => "<time>".into(),
                _ => text,
            }
        };
        let mut lines = Vec::new();
        for key in keys {
            let raw = self.node(&key);
            let kind: String = raw
                .custom(redisson_lock::fred::cmd!("TYPE"), vec![key.as_str()])
                .await
                .unwrap();
            let ttl: i64 = raw.pttl(&key).await.unwrap();
            let ttl = if ttl < 0 {
                "ttl:none".to_owned()
            } else {
                format!("ttl:~{}s", (ttl + 9_999) / 10_000 * 10)
            };
            let content: Vec<String> = match kind.as_str() {
                "hash" => {
                    let mut pairs: Vec<String> = raw
                        .hgetall::<Vec<(String, String)>, _>(&key)
                        .await
                        .unwrap()
                        .into_iter()
                        .map(|(f, v)| format!("{}={}", normal(&f), normal(&v)))
                        .collect();
                    pairs.sort();
                    pairs
                }
                "string" => vec![normal(&raw.get::<String, _>(&key).await.unwrap())],
                "list" => elements(raw, &["LRANGE", &key, "0", "-1"])
                    .await
                    .iter()
                    .map(|e| normal(e))
                    .collect(),
                "zset" => elements(raw, &["ZRANGE", &key, "0", "-1", "WITHSCORES"])
                    .await
                    .iter()
                    .map(|e| normal(e))
                    .collect(),
                other => vec![format!("<{other}>")],
            };
            lines.push(format!(
                "{} {kind} {ttl} [{}]",
                normal(&key),
                content.join(", ")
            ));
        }
        lines.sort();
        lines
    }
}

/// A reply's elements as text; a member that is not UTF-8 (a permit id's 16 bytes) is
/// `<id>`.
async fn elements(raw: &Raw, args: &[&str]) -> Vec<String> {
    let rest: Vec<Value> = args[1..].iter().map(|a| Value::from(*a)).collect();
    let reply: Value = raw
        .custom(
            redisson_lock::fred::types::CustomCommand::new(args[0].to_owned(), None, false),
            rest,
        )
        .await
        .unwrap();
    let Value::Array(items) = reply else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| match item.as_bytes() {
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) if bytes.len() != 16 => text.to_owned(),
                _ => "<id>".to_owned(),
            },
            None => format!("{item:?}"),
        })
        .collect()
}

/// The crate's client on `topo`, with the tests' watchdog, and the name mapper when
/// `mapped`.
pub async fn crate_client(topo: &Topo, mapped: bool) -> LockClient {
    let mut config = redisson_lock::Config::builder()
        .url(topo.url.clone())
        .watchdog_timeout(Duration::from_millis(WATCHDOG_MS));
    if mapped {
        config = config.name_mapper(PrefixNameMapper::new(PREFIX));
    }
    LockClient::connect(config.build().unwrap()).await.unwrap()
}

/// Redisson 3.23.3 and 4.7.0 on `url`, started together, with the tests' watchdog; the
/// 4.7.0 one also gets the client [`ALIAS`] with the name mapper (3.23.3's driver has no
/// `prefix=`).
pub async fn java_pair(url: &str) -> [JavaClient; 2] {
    let (old, new) = tokio::join!(
        JavaClient::start_with_watchdog(Version::V3_23_3, url, WATCHDOG_MS),
        JavaClient::start_with_watchdog(Version::V4_7_0, url, WATCHDOG_MS)
    );
    let answer = new
        .call(&format!("client {ALIAS} {url} prefix={PREFIX}"))
        .await;
    assert!(answer.starts_with("OK "), "client {ALIAS}: {answer}");
    [old, new]
}

/// `version`'s short tag in key names.
pub fn tag(version: Version) -> &'static str {
    match version {
        Version::V3_23_3 => "3",
        Version::V4_7_0 => "4",
    }
}

// ---- the lock kinds ------------------------------------------------------------------

/// A lock kind, as the crate and the Java driver name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Reentrant,
    Fair,
    /// A read hold; its contender is a writer.
    Read,
    /// A write hold; its contender is a reader.
    Write,
    Fenced,
    Spin,
    NonReentrant,
    NonReentrantFair,
    FasterMulti,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 9] = [
        Kind::Reentrant,
        Kind::Fair,
        Kind::Read,
        Kind::Write,
        Kind::Fenced,
        Kind::Spin,
        Kind::NonReentrant,
        Kind::NonReentrantFair,
        Kind::FasterMulti,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Reentrant => "rlock",
            Kind::Fair => "fair",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Fenced => "fenced",
            Kind::Spin => "spin",
            Kind::NonReentrant => "nonreentrant",
            Kind::NonReentrantFair => "nonreentrantfair",
            Kind::FasterMulti => "fastermulti",
        }
    }

    /// Whether Redisson `version` has the kind: the non-reentrant ones are 4.4+, the
    /// faster multi-lock 3.38+ (the 3.23.3 driver takes `fastermulti:g=a|b` for a plain
    /// lock of that name).
    pub fn in_version(self, version: Version) -> bool {
        !matches!(
            self,
            Kind::NonReentrant | Kind::NonReentrantFair | Kind::FasterMulti
        ) || version == Version::V4_7_0
    }

    /// Whether contenders of the kind exclude each other (not readers).
    pub fn exclusive(self) -> bool {
        self != Kind::Read
    }

    /// What waits for a hold of this kind in the cross checks.
    pub fn contender(self) -> Kind {
        match self {
            Kind::Read => Kind::Write,
            Kind::Write => Kind::Read,
            other => other,
        }
    }

    /// The driver's name of the lock `base` (of client `alias`).
    pub fn java_name(self, alias: Option<&str>, base: &str) -> String {
        let alias = alias.map(|a| format!("{a}/")).unwrap_or_default();
        let kind = match self {
            Kind::Reentrant => "",
            Kind::Fair => "fair:",
            Kind::Read => "read:",
            Kind::Write => "write:",
            Kind::Fenced => "fenced:",
            Kind::Spin => "spin:",
            Kind::NonReentrant => "nonreentrant:",
            Kind::NonReentrantFair => "nonreentrantfair:",
            Kind::FasterMulti => {
                return format!("{alias}fastermulti:{base}={}", MULTI_VALUES.join("|"));
            }
        };
        format!("{alias}{kind}{base}")
    }

    /// The channel a waiter of this kind with hash field `field` listens on, for the
    /// lock whose raw name is `raw` (`None`: a spin lock polls).
    pub fn channel(self, raw: &str, field: &str) -> Option<String> {
        match self {
            Kind::Reentrant | Kind::Fenced | Kind::NonReentrant | Kind::FasterMulti => {
                Some(format!("redisson_lock__channel:{}", tagged(raw)))
            }
            Kind::Fair | Kind::NonReentrantFair => {
                Some(format!("redisson_lock__channel:{}:{field}", tagged(raw)))
            }
            Kind::Read | Kind::Write => Some(format!("redisson_rwlock:{}", tagged(raw))),
            Kind::Spin => None,
        }
    }

    /// The crate's lock of this kind named `base` (a faster multi-lock: the group
    /// `base` over `values`), owned by the calling task.
    pub fn crate_lock(self, client: &LockClient, base: &str, values: &[&str]) -> Arc<dyn DynLock> {
        match self {
            Kind::Reentrant => Arc::new(client.get_lock(base)),
            Kind::Fair => Arc::new(client.get_fair_lock(base)),
            Kind::Read => Arc::new(client.get_read_write_lock(base).read_lock()),
            Kind::Write => Arc::new(client.get_read_write_lock(base).write_lock()),
            Kind::Fenced => Arc::new(client.get_fenced_lock(base)),
            Kind::Spin => Arc::new(client.get_spin_lock(base)),
            Kind::NonReentrant => Arc::new(client.get_non_reentrant_lock(base)),
            Kind::NonReentrantFair => Arc::new(client.get_non_reentrant_fair_lock(base)),
            Kind::FasterMulti => Arc::new(client.get_multi_lock(base, values.to_vec()).unwrap()),
        }
    }
}

/// `tag(N)` of the protocol (§2): `N` itself when it holds a `{`, else `{N}`.
pub fn tagged(raw: &str) -> String {
    if raw.contains('{') {
        raw.to_owned()
    } else {
        format!("{{{raw}}}")
    }
}

/// One of the crate's lock kinds behind one type.
pub trait DynLock: Send + Sync {
    fn lock(&self) -> BoxFuture<'_, redisson_lock::Result<()>>;
    fn lock_with_lease(&self, lease: Duration) -> BoxFuture<'_, redisson_lock::Result<()>>;
    fn try_lock(&self) -> BoxFuture<'_, redisson_lock::Result<bool>>;
    fn unlock(&self) -> BoxFuture<'_, redisson_lock::Result<()>>;
    fn acquire(&self) -> BoxFuture<'_, redisson_lock::Result<Box<dyn DynGuard>>>;
    fn with_owner(&self, owner: u64) -> Arc<dyn DynLock>;
}

impl<K: LockKind> DynLock for Lock<K> {
    fn lock(&self) -> BoxFuture<'_, redisson_lock::Result<()>> {
        Box::pin(Lock::lock(self))
    }
    fn lock_with_lease(&self, lease: Duration) -> BoxFuture<'_, redisson_lock::Result<()>> {
        Box::pin(Lock::lock_with_lease(self, lease))
    }
    fn try_lock(&self) -> BoxFuture<'_, redisson_lock::Result<bool>> {
        Box::pin(Lock::try_lock(self))
    }
    fn unlock(&self) -> BoxFuture<'_, redisson_lock::Result<()>> {
        Box::pin(Lock::unlock(self))
    }
    fn acquire(&self) -> BoxFuture<'_, redisson_lock::Result<Box<dyn DynGuard>>> {
        Box::pin(async move {
            let guard = Lock::acquire(self).await?;
            Ok(Box::new(guard) as Box<dyn DynGuard>)
        })
    }
    fn with_owner(&self, owner: u64) -> Arc<dyn DynLock> {
        Arc::new(Lock::with_owner(self, LockOwner::from_raw(owner)))
    }
}

/// A [`LockGuard`] of any kind.
pub trait DynGuard: Send + Sync {
    fn state(&self) -> HoldState;
    fn unlock(self: Box<Self>) -> BoxFuture<'static, redisson_lock::Result<()>>;
}

impl<K: LockKind> DynGuard for LockGuard<K> {
    fn state(&self) -> HoldState {
        LockGuard::state(self)
    }
    fn unlock(self: Box<Self>) -> BoxFuture<'static, redisson_lock::Result<()>> {
        Box::pin(LockGuard::unlock(*self))
    }
}

/// `lockfield <thread> [alias]`.
pub async fn java_field(java: &JavaClient, thread: &str, alias: Option<&str>) -> String {
    let alias = alias.map(|a| format!(" {a}")).unwrap_or_default();
    java.call(&format!("lockfield {thread}{alias}")).await
}

/// The raw name of `base` on a client with the name mapper (`alias` set) or without.
pub fn raw_name(alias: Option<&str>, base: &str) -> String {
    match alias {
        Some(_) => format!("{PREFIX}{base}"),
        None => base.to_owned(),
    }
}

/// Waits for a waiter to be waiting: listening on `channel`, or, for a spin lock (no
/// channel), long enough for its first attempts.
async fn await_waiting(topo: &Topo, channel: &Option<String>, before: i64, what: &str) {
    match channel {
        Some(channel) => topo.await_listener(channel, before, what).await,
        None => tokio::time::sleep(Duration::from_millis(300)).await,
    }
}

/// The wake-up times of one cross check: Java's unlock to the crate's waiter, and the
/// crate's unlock to Java's waiter.
#[derive(Debug, Clone, Copy)]
pub struct Wakes {
    pub java_to_crate: Duration,
    pub crate_to_java: Duration,
}

/// One lock kind between `java` (its client `alias`, if any) and the crate's `client`
/// (with the same name mapper as `alias`): Java holds and the crate can't take it; a
/// crate waiter is woken by Java's unlock; the crate holds and leaves the same raw state
/// as Java did; Java can't take it; a Java waiter is woken by the crate's unlock; nothing
/// is left. Holds use a 60 s lease, so every wake-up is the message's.
pub async fn lock_cross_check(
    topo: &Topo,
    java: &JavaClient,
    alias: Option<&str>,
    client: &LockClient,
    kind: Kind,
    base: &str,
) -> Wakes {
    let what = format!(
        "Redisson {} {}{}",
        java.version(),
        kind.label(),
        alias.map_or("", |_| " (name mapper)")
    );
    let raw = raw_name(alias, base);
    let contender_kind = kind.contender();
    let java_holder = kind.java_name(alias, base);
    let java_contender = contender_kind.java_name(alias, base);
    let java_a = java_field(java, "A", alias).await;
    let java_b = java_field(java, "B", alias).await;
    let holder = kind.crate_lock(client, base, &MULTI_VALUES).with_owner(1);
    let contender = contender_kind
        .crate_lock(client, base, &MULTI_VALUES)
        .with_owner(2);
    let crate_holder = format!("{}:1", client.id());
    let crate_contender = format!("{}:2", client.id());
    let token_key = format!("redisson_lock_token:{}", tagged(&raw));
    let token = || async {
        topo.get(&token_key)
            .await
            .map(|t| t.parse::<u64>().unwrap())
    };

    // Java holds: the crate's contender can't take it.
    java.ok(&format!("lock {java_holder} {} A", LEASE.as_millis()))
        .await;
    let first_token = token().await;
    let java_state = topo.snapshot(&raw, &[&java_a]).await;
    assert!(
        java_state.iter().any(|l| l.contains("<owner>")),
        "{what}: Java's hold is not in Redis: {java_state:?}"
    );
    assert!(
        !contender.try_lock().await.unwrap(),
        "{what}: the crate took a lock Java holds"
    );

    // A crate waiter is woken by Java's unlock.
    let channel = contender_kind.channel(&raw, &crate_contender);
    let before = match &channel {
        Some(channel) => topo.quiet(channel).await,
        None => 0,
    };
    let waiting = {
        let contender = contender.clone();
        tokio::spawn(async move {
            contender.lock_with_lease(LEASE).await.unwrap();
            Instant::now()
        })
    };
    await_waiting(topo, &channel, before, &what).await;
    assert!(
        !waiting.is_finished(),
        "{what}: the crate took a lock Java holds"
    );
    let released = Instant::now();
    java.ok(&format!("unlock {java_holder} A")).await;
    let acquired = tokio::time::timeout(WAKE_LIMIT, waiting)
        .await
        .unwrap_or_else(|_| panic!("{what}: the crate's waiter never got the lock within {WAKE_LIMIT:?} (a lost message: the lease is 60 s)"))
        .unwrap();
    let java_to_crate = acquired.saturating_duration_since(released);
    assert!(
        java_to_crate < WAKE_LIMIT,
        "{what}: the crate's waiter got the lock {java_to_crate:?} after Java's unlock"
    );
    contender.unlock().await.unwrap();

    // The crate holds: the same raw state as Java's hold; Java can't take it.
    holder.lock_with_lease(LEASE).await.unwrap();
    let crate_state = topo.snapshot(&raw, &[&crate_holder]).await;
    assert_eq!(
        crate_state, java_state,
        "{what}: the raw state of a hold differs by writer (left: the crate's, right: Java's)"
    );
    assert!(
        !java.bool(&format!("trylock {java_contender} 0 -1 B")).await,
        "{what}: Java took a lock the crate holds"
    );

    // A Java waiter is woken by the crate's unlock.
    let channel = contender_kind.channel(&raw, &java_b);
    let before = match &channel {
        Some(channel) => topo.quiet(channel).await,
        None => 0,
    };
    let pending = java
        .spawn(&format!("lock {java_contender} {} B", LEASE.as_millis()))
        .await;
    await_waiting(topo, &channel, before, &what).await;
    assert_eq!(
        pending.poll().await,
        None,
        "{what}: Java took a lock the crate holds"
    );
    let released = Instant::now();
    holder.unlock().await.unwrap();
    let answer = pending.wait(WAKE_LIMIT).await.unwrap_or_else(|| {
        panic!("{what}: Java's waiter got nothing within {WAKE_LIMIT:?} (a lost message: the lease is 60 s)")
    });
    let crate_to_java = released.elapsed();
    assert_eq!(answer, "OK", "{what}: Java's waiter");
    assert!(
        crate_to_java < WAKE_LIMIT,
        "{what}: Java's waiter got the lock {crate_to_java:?} after the crate's unlock"
    );
    let java_b_state = topo.snapshot(&raw, &[&java_b]).await;
    assert!(
        java_b_state.iter().any(|l| l.contains("<owner>")),
        "{what}: Java's waiter holds nothing in Redis: {java_b_state:?}"
    );
    java.ok(&format!("unlock {java_contender} B")).await;
    let left = topo.snapshot(&raw, &[]).await;
    assert!(left.is_empty(), "{what}: left behind: {left:?}");

    // A fenced lock's token counts every acquisition, whichever side made it.
    if kind == Kind::Fenced {
        let first = first_token.expect("Java's fenced lock wrote a token");
        assert_eq!(
            token().await,
            Some(first + 3),
            "{what}: four acquisitions (Java, crate, crate, Java) from token {first}"
        );
    }
    Wakes {
        java_to_crate,
        crate_to_java,
    }
}

/// Holds taken in watchdog mode by Java (thread `W` of each client) and by the crate,
/// on names of their own, to be checked once several watchdog timeouts passed.
pub struct WatchdogHolds {
    started: Instant,
    java: Vec<(usize, String, String, String)>,
    crate_side: Vec<(String, String, Box<dyn DynGuard>)>,
    crate_field: String,
}

/// Takes a watchdog hold of every kind in each of `javas` and in the crate's `client`.
pub async fn watchdog_holds(javas: &[JavaClient], client: &LockClient) -> WatchdogHolds {
    let started = Instant::now();
    let mut java = Vec::new();
    for (i, j) in javas.iter().enumerate() {
        let field = j.field("W").await;
        for kind in Kind::ALL.into_iter().filter(|k| k.in_version(j.version())) {
            let base = format!("wd:{}:{}#", tag(j.version()), kind.label());
            let name = kind.java_name(None, &base);
            j.ok(&format!("lock {name} -1 W")).await;
            java.push((i, name, base, field.clone()));
        }
    }
    let mut crate_side = Vec::new();
    for kind in Kind::ALL {
        let base = format!("wd:c:{}#", kind.label());
        let lock = kind.crate_lock(client, &base, &MULTI_VALUES).with_owner(9);
        let guard = lock.acquire().await.unwrap();
        crate_side.push((kind.label().to_owned(), base, guard));
    }
    WatchdogHolds {
        started,
        java,
        crate_side,
        crate_field: format!("{}:9", client.id()),
    }
}

impl WatchdogHolds {
    /// Once 2.5 watchdog timeouts passed since the holds were taken (waiting for the
    /// rest, if any): every hold is still in Redis with its holder, its TTL was renewed
    /// (at most one timeout, more than nothing), the crate's guards say held; then all
    /// are given back.
    pub async fn check_and_release(self, topo: &Topo, javas: &[JavaClient]) {
        let due = Duration::from_millis(WATCHDOG_MS * 5 / 2);
        if let Some(rest) = due.checked_sub(self.started.elapsed()) {
            tokio::time::sleep(rest).await;
        }
        let held_for = self.started.elapsed();
        let check = |who: String, base: String, owner: String| async move {
            let state = topo.snapshot(&base, &[&owner]).await;
            assert!(
                state.iter().any(|l| l.contains("<owner>")),
                "{who}: the watchdog hold of {base} is gone after {held_for:?}: {state:?}"
            );
            let ttl: i64 = topo.node(&base).pttl(&base).await.unwrap();
            assert!(
                ttl > 0 && ttl <= WATCHDOG_MS as i64,
                "{who}: {base} has TTL {ttl} ms after {held_for:?} (watchdog {WATCHDOG_MS} ms)"
            );
        };
        for (i, name, base, field) in &self.java {
            let who = format!("Redisson {}", javas[*i].version());
            check(who, base.clone(), field.clone()).await;
            javas[*i].ok(&format!("unlock {name} W")).await;
        }
        for (label, base, guard) in self.crate_side {
            check(
                format!("crate {label}"),
                base.clone(),
                self.crate_field.clone(),
            )
            .await;
            assert_eq!(
                guard.state(),
                HoldState::Held,
                "crate {label}: the guard of {base}"
            );
            guard.unlock().await.unwrap();
        }
    }
}

/// What [`stress_witness`] saw.
#[derive(Debug)]
pub struct Witness {
    /// The shared counter at the end, and what it must be (one increment per hold).
    pub counter: u64,
    pub expected: u64,
    /// Each Java process's `stress` answer (`OK <holds> <errors>`).
    pub java: Vec<String>,
    /// The crate's unlocks that found the lock no longer its own.
    pub crate_lost: u64,
    pub took: Duration,
}

impl Witness {
    /// Whether every hold was alone: no lost increment, no failed unlock on any side.
    pub fn exclusive(&self, rounds: u64) -> bool {
        self.counter == self.expected
            && self.crate_lost == 0
            && self
                .java
                .iter()
                .all(|a| *a == format!("OK {} 0", 2 * rounds))
    }
}

/// Java's `stress` (2 threads x `rounds`, each `javas` process) and 2 crate tasks x
/// `rounds` on one lock of `kind`, every hold a GET and a SET of one counter with a
/// random 0-2 ms pause between: the witness of mutual exclusion (two holders at once
/// lose an increment, or find the lock gone at unlock).
pub async fn stress_witness(
    topo: &Topo,
    javas: &[&JavaClient],
    client: &LockClient,
    kind: Kind,
    base: &str,
    rounds: u64,
) -> Witness {
    // The driver names its locks prefix + index: `<name>0`; its counter is
    // `<counterKey>:<that name>`.
    let java_name = kind.java_name(None, base);
    let counter = format!("cnt:{java_name}0");
    let (crate_base, values) = match kind {
        Kind::FasterMulti => (base.to_owned(), vec!["a".to_owned(), "b0".to_owned()]),
        _ => (format!("{base}0"), Vec::new()),
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let lock = kind.crate_lock(client, &crate_base, &values);
        let raw = topo.node(&counter).clone();
        let counter = counter.clone();
        tasks.push(tokio::spawn(async move {
            let mut lost = 0;
            for _ in 0..rounds {
                lock.lock().await.unwrap();
                let seen: Option<u64> = raw.get(&counter).await.unwrap();
                let pause = rand::thread_rng().gen_range(0..=2);
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let _: () = raw
                    .set(&counter, seen.unwrap_or(0) + 1, None, None, false)
                    .await
                    .unwrap();
                if lock.unlock().await.is_err() {
                    lost += 1;
                }
            }
            lost
        }));
    }
    let line = format!("stress {java_name} 1 2 {rounds} 2 cnt {}", topo.counter_url);
    let java = futures::future::join_all(javas.iter().map(|java| java.call(&line))).await;
    let mut crate_lost = 0;
    for task in tasks {
        crate_lost += task.await.unwrap();
    }
    let took = started.elapsed();
    let counter = topo
        .get(&counter)
        .await
        .map_or(0, |c| c.parse::<u64>().unwrap());
    Witness {
        counter,
        expected: 2 * rounds * (javas.len() as u64 + 1),
        java,
        crate_lost,
        took,
    }
}

// ---- the synchronizers ---------------------------------------------------------------

/// The semaphore between `java` (client `alias`) and the crate's `client`: Java's
/// `trySetPermits` and the crate's leave the same key; Java holds the only permit and
/// the crate can't take one; a crate waiter is woken by Java's release; a Java waiter by
/// the crate's; the permits add up at the end.
pub async fn semaphore_cross_check(
    topo: &Topo,
    java: &JavaClient,
    alias: Option<&str>,
    client: &LockClient,
    base: &str,
) -> Wakes {
    let what = format!(
        "Redisson {} semaphore{}",
        java.version(),
        alias.map_or("", |_| " (name mapper)")
    );
    let raw = raw_name(alias, base);
    let name = format!(
        "{}{base}",
        alias.map(|a| format!("{a}/")).unwrap_or_default()
    );
    let channel = format!("redisson_sc:{}", tagged(&raw));
    let sem = client.get_semaphore(base);

    assert!(sem.try_set_permits(1).await.unwrap());
    let crate_set = topo.snapshot(&raw, &[]).await;
    assert_eq!(
        crate_set.len(),
        1,
        "{what}: the crate's semaphore: {crate_set:?}"
    );
    assert!(sem.delete().await.unwrap());
    assert!(java.bool(&format!("semset {name} 1")).await);
    assert_eq!(
        topo.snapshot(&raw, &[]).await,
        crate_set,
        "{what}: the set semaphore differs by writer"
    );
    assert!(!sem.try_set_permits(1).await.unwrap(), "{what}: set twice");

    java.ok(&format!("semacquire {name} 1 A")).await;
    assert!(
        sem.try_acquire(1).await.unwrap().is_none(),
        "{what}: the crate took a permit Java holds"
    );
    let before = topo.quiet(&channel).await;
    let waiting = {
        let sem = sem.clone();
        tokio::spawn(async move {
            let permits = sem.acquire(1).await.unwrap();
            (Instant::now(), permits)
        })
    };
    topo.await_listener(&channel, before, &what).await;
    let released = Instant::now();
    java.ok(&format!("semrelease {name} 1")).await;
    let (acquired, permits) = tokio::time::timeout(WAKE_LIMIT, waiting)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{what}: the crate's waiter got no permit within {WAKE_LIMIT:?} (a lost message)"
            )
        })
        .unwrap();
    let java_to_crate = acquired.saturating_duration_since(released);
    assert!(
        java_to_crate < WAKE_LIMIT,
        "{what}: the crate's waiter got a permit {java_to_crate:?} after Java's release"
    );
    assert_eq!(java.int(&format!("semavail {name}")).await, 0);

    let before = topo.quiet(&channel).await;
    let pending = java.spawn(&format!("semacquire {name} 1 B")).await;
    topo.await_listener(&channel, before, &what).await;
    assert_eq!(
        pending.poll().await,
        None,
        "{what}: Java took a held permit"
    );
    let released = Instant::now();
    permits.release().await.unwrap();
    let answer = pending.wait(WAKE_LIMIT).await.unwrap_or_else(|| {
        panic!("{what}: Java's waiter got nothing within {WAKE_LIMIT:?} (a lost message)")
    });
    let crate_to_java = released.elapsed();
    assert_eq!(answer, "OK", "{what}: Java's waiter");
    assert!(
        crate_to_java < WAKE_LIMIT,
        "{what}: Java's waiter got a permit {crate_to_java:?} after the crate's release"
    );
    java.ok(&format!("semrelease {name} 1")).await;
    assert_eq!(sem.available_permits().await.unwrap(), 1, "{what}");
    assert!(java.bool(&format!("semdelete {name}")).await);
    Wakes {
        java_to_crate,
        crate_to_java,
    }
}

/// The permit-expirable semaphore: Java's `trySetPermits` and the crate's leave the same
/// key; a permit Java holds (no lease) and one the crate holds leave the same state (the
/// id a 16-byte member with the no-lease score); a crate waiter is woken by Java's
/// release, a Java waiter by the crate's.
pub async fn pes_cross_check(
    topo: &Topo,
    java: &JavaClient,
    alias: Option<&str>,
    client: &LockClient,
    base: &str,
) -> Wakes {
    let what = format!(
        "Redisson {} permit-expirable semaphore{}",
        java.version(),
        alias.map_or("", |_| " (name mapper)")
    );
    let raw = raw_name(alias, base);
    let name = format!(
        "{}{base}",
        alias.map(|a| format!("{a}/")).unwrap_or_default()
    );
    let channel = format!("redisson_sc:{}", tagged(&raw));
    let pes = client.get_permit_expirable_semaphore(base);

    assert!(pes.try_set_permits(1).await.unwrap());
    let crate_set = topo.snapshot(&raw, &[]).await;
    assert_eq!(
        crate_set.len(),
        1,
        "{what}: the crate's semaphore: {crate_set:?}"
    );
    assert!(pes.delete().await.unwrap());
    assert!(java.bool(&format!("pesset {name} 1")).await);
    assert_eq!(
        topo.snapshot(&raw, &[]).await,
        crate_set,
        "{what}: the set semaphore differs by writer"
    );

    let java_id = java.call(&format!("pesacquire {name} -1 A")).await;
    assert_eq!(java_id.len(), 32, "{what}: a permit id: {java_id}");
    let java_state = topo.snapshot(&raw, &[]).await;
    assert_eq!(
        java_state.len(),
        2,
        "{what}: Java's held permit: {java_state:?}"
    );
    assert!(
        pes.try_acquire(Duration::ZERO, None)
            .await
            .unwrap()
            .is_none(),
        "{what}: the crate took a permit Java holds"
    );
    let before = topo.quiet(&channel).await;
    let waiting = {
        let pes = pes.clone();
        tokio::spawn(async move {
            let id = pes.acquire(None).await.unwrap();
            (Instant::now(), id)
        })
    };
    topo.await_listener(&channel, before, &what).await;
    let released = Instant::now();
    java.ok(&format!("pesrelease {name} {java_id}")).await;
    let (acquired, crate_id) = tokio::time::timeout(WAKE_LIMIT, waiting)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{what}: the crate's waiter got no permit within {WAKE_LIMIT:?} (a lost message)"
            )
        })
        .unwrap();
    let java_to_crate = acquired.saturating_duration_since(released);
    assert!(
        java_to_crate < WAKE_LIMIT,
        "{what}: the crate's waiter got a permit {java_to_crate:?} after Java's release"
    );
    assert_eq!(
        topo.snapshot(&raw, &[]).await,
        java_state,
        "{what}: a held permit's state differs by writer"
    );

    let before = topo.quiet(&channel).await;
    let pending = java.spawn(&format!("pesacquire {name} -1 B")).await;
    topo.await_listener(&channel, before, &what).await;
    assert_eq!(
        pending.poll().await,
        None,
        "{what}: Java took a held permit"
    );
    let released = Instant::now();
    pes.release(crate_id).await.unwrap();
    let java_id = pending.wait(WAKE_LIMIT).await.unwrap_or_else(|| {
        panic!("{what}: Java's waiter got nothing within {WAKE_LIMIT:?} (a lost message)")
    });
    let crate_to_java = released.elapsed();
    assert_eq!(java_id.len(), 32, "{what}: Java's waiter: {java_id}");
    assert!(
        crate_to_java < WAKE_LIMIT,
        "{what}: Java's waiter got a permit {crate_to_java:?} after the crate's release"
    );
    // The crate releases the permit Java took, by its id.
    pes.release(java_id.parse().unwrap()).await.unwrap();
    assert_eq!(java.int(&format!("pesavail {name}")).await, 1, "{what}");
    assert!(java.bool(&format!("pesdelete {name}")).await);
    Wakes {
        java_to_crate,
        crate_to_java,
    }
}

/// The count-down latch: Java's `trySetCount` and the crate's leave the same key; a
/// crate waiter is opened by Java's count-down, a Java waiter by the crate's.
pub async fn latch_cross_check(
    topo: &Topo,
    java: &JavaClient,
    alias: Option<&str>,
    client: &LockClient,
    base: &str,
) -> Wakes {
    let what = format!(
        "Redisson {} latch{}",
        java.version(),
        alias.map_or("", |_| " (name mapper)")
    );
    let raw = raw_name(alias, base);
    let name = format!(
        "{}{base}",
        alias.map(|a| format!("{a}/")).unwrap_or_default()
    );
    let channel = format!("redisson_countdownlatch__channel__{{{raw}}}");
    let latch = client.get_count_down_latch(base);

    assert!(java.bool(&format!("latchset {name} 1")).await);
    let java_state = topo.snapshot(&raw, &[]).await;
    assert_eq!(java_state.len(), 1, "{what}: Java's latch: {java_state:?}");
    let before = topo.quiet(&channel).await;
    let waiting = {
        let latch = latch.clone();
        tokio::spawn(async move {
            let opened = latch.wait_for(LEASE).await.unwrap();
            (Instant::now(), opened)
        })
    };
    topo.await_listener(&channel, before, &what).await;
    let released = Instant::now();
    java.ok(&format!("latchdown {name}")).await;
    let (opened_at, opened) = tokio::time::timeout(WAKE_LIMIT, waiting)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{what}: the crate's waiter was not opened within {WAKE_LIMIT:?} (a lost message)"
            )
        })
        .unwrap();
    assert!(opened, "{what}: the crate's waiter timed out");
    let java_to_crate = opened_at.saturating_duration_since(released);
    assert!(
        java_to_crate < WAKE_LIMIT,
        "{what}: the crate's waiter opened {java_to_crate:?} after Java's count-down"
    );

    assert!(latch.try_set_count(1).await.unwrap());
    assert_eq!(
        topo.snapshot(&raw, &[]).await,
        java_state,
        "{what}: the set latch differs by writer"
    );
    assert_eq!(java.int(&format!("latchcount {name}")).await, 1);
    let before = topo.quiet(&channel).await;
    let pending = java
        .spawn(&format!("latchawait {name} {} A", LEASE.as_millis()))
        .await;
    topo.await_listener(&channel, before, &what).await;
    assert_eq!(
        pending.poll().await,
        None,
        "{what}: Java's waiter opened early"
    );
    let released = Instant::now();
    latch.count_down().await.unwrap();
    let answer = pending.wait(WAKE_LIMIT).await.unwrap_or_else(|| {
        panic!("{what}: Java's waiter got nothing within {WAKE_LIMIT:?} (a lost message)")
    });
    let crate_to_java = released.elapsed();
    assert_eq!(answer, "true", "{what}: Java's waiter");
    assert!(
        crate_to_java < WAKE_LIMIT,
        "{what}: Java's waiter opened {crate_to_java:?} after the crate's count-down"
    );
    assert!(topo.snapshot(&raw, &[]).await.is_empty(), "{what}");
    Wakes {
        java_to_crate,
        crate_to_java,
    }
}

// ---- the families, as one test per topology runs them ---------------------------------

/// Every lock kind on `topo` with both Redisson versions: the watchdog holds (taken
/// first, checked last), the cross check of every kind with each version and, on
/// Redisson 4.7.0, through the name mapper; then the exclusion witness of every
/// exclusive kind with both versions and the crate contending at once.
pub async fn lock_family(topo: &Topo, label: &str) {
    let started = Instant::now();
    let (javas, client, mapped) = tokio::join!(
        java_pair(&topo.url),
        crate_client(topo, false),
        crate_client(topo, true)
    );
    eprintln!("{label}: Java and the crate up in {:?}", started.elapsed());
    let holds = watchdog_holds(&javas, &client).await;
    let mut lines = Vec::new();
    let mut checked = 0;
    for java in &javas {
        for kind in Kind::ALL
            .into_iter()
            .filter(|k| k.in_version(java.version()))
        {
            let base = format!("x:{}:{}#", tag(java.version()), kind.label());
            let wakes = lock_cross_check(topo, java, None, &client, kind, &base).await;
            lines.push(format!("{} {}: {wakes:?}", java.version(), kind.label()));
            checked += 1;
        }
    }
    let newer = &javas[1];
    for kind in Kind::ALL {
        let base = format!("m:{}#", kind.label());
        let wakes = lock_cross_check(topo, newer, Some(ALIAS), &mapped, kind, &base).await;
        lines.push(format!(
            "{} {} mapped: {wakes:?}",
            newer.version(),
            kind.label()
        ));
        checked += 1;
    }
    let mut witnessed = 0;
    for kind in Kind::ALL.into_iter().filter(|k| k.exclusive()) {
        let fleet: Vec<&JavaClient> = javas
            .iter()
            .filter(|j| kind.in_version(j.version()))
            .collect();
        let base = format!("st:{}#", kind.label());
        let witness = stress_witness(topo, &fleet, &client, kind, &base, 15).await;
        assert!(
            witness.exclusive(15),
            "{}: holds overlapped with Redisson {:?} and the crate: {witness:?}",
            kind.label(),
            fleet.iter().map(|j| j.version()).collect::<Vec<_>>()
        );
        lines.push(format!(
            "witness {}: {} holds in {:?} ({} Java + crate)",
            kind.label(),
            witness.counter,
            witness.took,
            fleet.len()
        ));
        witnessed += 1;
    }
    holds.check_and_release(topo, &javas).await;
    eprintln!(
        "{label}: {checked} cross checks, {witnessed} witnesses, watchdog holds kept, in {:?}\n  {}",
        started.elapsed(),
        lines.join("\n  ")
    );
    mapped.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

/// The semaphore, the permit-expirable semaphore and the latch on `topo` with both
/// Redisson versions, and through the name mapper with 4.7.0.
pub async fn synchronizer_family(topo: &Topo, label: &str) {
    let started = Instant::now();
    let (javas, client, mapped) = tokio::join!(
        java_pair(&topo.url),
        crate_client(topo, false),
        crate_client(topo, true)
    );
    let mut lines = Vec::new();
    let cases =
        javas
            .iter()
            .map(|java| (java, None, &client))
            .chain([(&javas[1], Some(ALIAS), &mapped)]);
    for (java, alias, client) in cases {
        let tag = format!("{}{}", tag(java.version()), alias.map_or("", |_| "m"));
        let sem = semaphore_cross_check(topo, java, alias, client, &format!("sem:{tag}#")).await;
        let pes = pes_cross_check(topo, java, alias, client, &format!("pes:{tag}#")).await;
        let latch = latch_cross_check(topo, java, alias, client, &format!("latch:{tag}#")).await;
        lines.push(format!(
            "{}{}: semaphore {sem:?}, pes {pes:?}, latch {latch:?}",
            java.version(),
            alias.map_or("", |_| " mapped")
        ));
    }
    eprintln!(
        "{label}: synchronizers in {:?}\n  {}",
        started.elapsed(),
        lines.join("\n  ")
    );
    mapped.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}
