//! The shared harness of the model tests (issue 31, part 1): one `redis-server` for the
//! whole binary, two lock clients per case, the raw state read back and compared with
//! what the model of the kind predicts, and the proptest runner that shrinks a failing
//! sequence and prints it numbered.
//!
//! Each kind has its own file: the model (written from the wire contract,
//! `shared/redisson-protocol.md`, plus the crate's documented deliberate differences in
//! `docs/protocol.md`), its operations, and how each operation is run on the crate.
//!
//! Conventions used by every model:
//! * an *actor* is one owner id of one client (`c0/o1`: client 0, owner 1); its hash
//!   field is `@0:1` once the client ids are replaced by `@0` / `@1` and the lock's name
//!   by `N` in everything read back;
//! * TTLs are predicted as the milliseconds the last write set (`Ttl::Ms`); a read
//!   matches when it is at most that and not more than [`TTL_SLACK_MS`] below it (a case
//!   lasts a second or two). Watchdog 30 s, leases 10 s and 60 s, so the classes never
//!   overlap;
//! * a lease runs out by `PEXPIRE <key> 1` on the lock's keys (not by waiting), then the
//!   harness waits until they are gone, sending it again when a renewal re-armed a key
//!   in the millisecond before it expired (without that, the holder's watchdog kept the
//!   key for good and the step hung: the fair model's 11-minute run);
//! * a connection kill is `CLIENT KILL ID` of the client's command connection.

pub mod fair;
pub mod faster_multi;
pub mod fenced;
pub mod group;
pub mod non_reentrant;
pub mod read_write;
pub mod reentrant;
pub mod spin;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};
use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, LockOwner};

use crate::support::RedisServer;

/// The watchdog lease (the default `watchdog_timeout`).
pub const WATCHDOG_MS: u64 = 30_000;
/// How far below the predicted TTL a read may be.
pub const TTL_SLACK_MS: u64 = 4_000;
/// How long the raw state may take to settle after a step (background latch clean-up,
/// a dropped guard's release).
const SETTLE: Duration = Duration::from_millis(1_500);
/// The longest any one step may take (the longest wait a step asks for is seconds): a
/// step that takes longer is a hang, and fails with its sequence instead of stalling the
/// suite.
const STEP_LIMIT: Duration = Duration::from_secs(60);
/// How long a waiter may take to take the lock once the model says it can.
pub const WAITER_TAKES: Duration = Duration::from_secs(5);
/// A waiter's budget: far longer than any case.
pub const WAITER_BUDGET: Duration = Duration::from_secs(40);

/// Owners per client and clients: 3 × 2 actors.
pub const OWNERS: u8 = 3;

// ---------------------------------------------------------------------------------------
// Actors, leases, TTLs, replies

/// One owner id of one client.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Actor {
    pub c: u8,
    pub o: u8,
}

impl Actor {
    /// The owner id sent to Redis (1-based, the same ids on both clients).
    pub fn owner(self) -> LockOwner {
        LockOwner::from_raw(u64::from(self.o) + 1)
    }

    /// The hash field as normalized (`@<client>:<owner>`).
    pub fn ln(self) -> String {
        format!("@{}:{}", self.c, self.o + 1)
    }
}

impl fmt::Debug for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}/o{}", self.c, self.o + 1)
    }
}

pub fn actor() -> impl Strategy<Value = Actor> {
    (0u8..2, 0u8..OWNERS).prop_map(|(c, o)| Actor { c, o })
}

/// A lease given to an acquisition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lease {
    /// 10 s.
    S10,
    /// 60 s.
    S60,
}

impl Lease {
    pub fn ms(self) -> u64 {
        match self {
            Lease::S10 => 10_000,
            Lease::S60 => 60_000,
        }
    }
    pub fn duration(self) -> Duration {
        Duration::from_millis(self.ms())
    }
}

pub fn lease() -> impl Strategy<Value = Lease> {
    prop_oneof![Just(Lease::S10), Just(Lease::S60)]
}

pub fn lease_opt() -> impl Strategy<Value = Option<Lease>> {
    prop_oneof![Just(None), lease().prop_map(Some)]
}

/// How many TTLs one prediction may admit at once (see [`Ttl::OneOf`]).
pub const TTL_ALTERNATIVES: usize = 12;

/// A key's (or a hold's) remaining time as the model predicts it.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub enum Ttl {
    /// No key (`PTTL` -2; `remain_time_to_live` `None`).
    #[default]
    Gone,
    /// A key without expiry (`PTTL` -1).
    Persist,
    /// Set to this many ms by the last write.
    Ms(u64),
    /// Any of these ms (the first: what the writes set if no renewal ran; the slots past
    /// the last alternative repeat the first). The watchdog's 30 s when a renewal may have
    /// run since (a holder took the lock in watchdog mode: renewals come every 10 s, and
    /// at once after a reconnect, before or after the step's own write), and every result
    /// of the writes after it that build on the TTL (a write re-entry adds its lease to
    /// whatever a renewal reset, each re-entry to each earlier outcome; a read unlock
    /// re-arms `N` to a read hold's key a renewal may have reset). Built with
    /// [`Ttl::one_of`].
    OneOf([u64; TTL_ALTERNATIVES]),
}

impl fmt::Debug for Ttl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ttl::Gone => write!(f, "Gone"),
            Ttl::Persist => write!(f, "Persist"),
            Ttl::Ms(x) => write!(f, "Ms({x})"),
            Ttl::OneOf(_) => write!(f, "OneOf({:?})", self.values()),
        }
    }
}

impl Ttl {
    pub fn from_pttl(ms: i64) -> Ttl {
        match ms {
            -2 => Ttl::Gone,
            -1 => Ttl::Persist,
            ms => Ttl::Ms(ms.max(0) as u64),
        }
    }

    /// `first` (the outcome without renewals) or any of `others`: `Ms(first)` when they
    /// add nothing. Panics past [`TTL_ALTERNATIVES`] distinct values (a sequence the
    /// model cannot follow; raise the constant).
    pub fn one_of(first: u64, others: impl IntoIterator<Item = u64>) -> Ttl {
        let mut values = vec![first];
        for x in others {
            if !values.contains(&x) {
                values.push(x);
            }
        }
        if values.len() == 1 {
            return Ttl::Ms(first);
        }
        assert!(
            values.len() <= TTL_ALTERNATIVES,
            "the model predicts {} TTLs at once ({values:?}): raise TTL_ALTERNATIVES",
            values.len()
        );
        let mut set = [first; TTL_ALTERNATIVES];
        set[..values.len()].copy_from_slice(&values);
        Ttl::OneOf(set)
    }

    /// The predicted ms, the first first, each once (none for no key or no expiry).
    pub fn values(self) -> Vec<u64> {
        match self {
            Ttl::Ms(x) => vec![x],
            Ttl::OneOf(set) => {
                let mut values: Vec<u64> = Vec::new();
                for x in set {
                    if !values.contains(&x) {
                        values.push(x);
                    }
                }
                values
            }
            Ttl::Gone | Ttl::Persist => Vec::new(),
        }
    }

    /// Whether `actual` (read now) is what `self` (predicted) allows.
    pub fn admits(self, actual: Ttl) -> bool {
        match (self, actual) {
            (Ttl::Ms(want), Ttl::Ms(got)) => got <= want && got + TTL_SLACK_MS > want,
            (Ttl::OneOf(set), got) => set.iter().any(|x| Ttl::Ms(*x).admits(got)),
            (a, b) => a == b,
        }
    }

    /// `f` applied to the predicted ms (`max(PTTL, lease)` and the like).
    pub fn map(self, f: impl Fn(u64) -> u64) -> Ttl {
        match self {
            Ttl::Ms(x) => Ttl::Ms(f(x)),
            Ttl::OneOf(set) => Ttl::one_of(f(set[0]), set.map(f)),
            Ttl::Gone | Ttl::Persist => Ttl::Ms(f(0)),
        }
    }

    /// `f` applied to every pair of predicted ms of `self` and `other` (no key or no
    /// expiry counting as 0, as in [`Ttl::map`]).
    pub fn combine(self, other: Ttl, f: impl Fn(u64, u64) -> u64) -> Ttl {
        let values = |t: Ttl| match t.values() {
            v if v.is_empty() => vec![0],
            v => v,
        };
        let (a, b) = (values(self), values(other));
        let pairs = a.iter().flat_map(|x| b.iter().map(|y| (*x, *y)));
        Ttl::one_of(
            f(a[0], b[0]),
            pairs.map(|(x, y)| f(x, y)).collect::<Vec<_>>(),
        )
    }

    /// The (first) predicted ms; `PTTL`'s -2 / -1 for no key / no expiry.
    pub fn first_ms(self) -> i64 {
        match self {
            Ttl::Ms(x) => x as i64,
            Ttl::OneOf(set) => set[0] as i64,
            Ttl::Gone => -2,
            Ttl::Persist => -1,
        }
    }

    /// The 30 s of a renewal admitted too when `renewable`.
    pub fn renewable(self, renewable: bool) -> Ttl {
        match self {
            Ttl::Ms(x) if renewable => Ttl::one_of(x, [WATCHDOG_MS]),
            Ttl::OneOf(set) if renewable => {
                Ttl::one_of(set[0], set.into_iter().chain([WATCHDOG_MS]))
            }
            t => t,
        }
    }
}

/// What one operation answered, in the model's terms.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub enum Reply {
    /// Before the first step.
    #[default]
    Start,
    /// `Ok(())`.
    Done,
    Bool(bool),
    Count(u32),
    /// `remain_time_to_live`, as a class.
    Ttl(Ttl),
    /// A fencing token (model tokens count from 1; the crate's first token of a fresh
    /// counter is the server time in µs, a documented difference: the harness reads
    /// tokens relative to the counter's seed).
    Token(Option<u64>),
    /// An acquire that returns a guard: `None` when not taken, else the guard's token.
    Guard(Option<Option<u64>>),
    /// `Error::NotOwner`.
    NotOwner,
    /// `Error::NonReentrant`.
    NonReentrant,
    /// Any other error (never predicted).
    Error(String),
}

impl Reply {
    pub fn admits(&self, actual: &Reply) -> bool {
        match (self, actual) {
            (Reply::Ttl(want), Reply::Ttl(got)) => want.admits(*got),
            (a, b) => a == b,
        }
    }

    /// The crate's `Result` in the model's terms.
    pub fn of<T>(result: redisson_lock::Result<T>, ok: impl FnOnce(T) -> Reply) -> Reply {
        match result {
            Ok(v) => ok(v),
            Err(redisson_lock::Error::NotOwner { .. }) => Reply::NotOwner,
            Err(redisson_lock::Error::NonReentrant { .. }) => Reply::NonReentrant,
            Err(e) => Reply::Error(e.to_string()),
        }
    }

    pub fn ttl(result: redisson_lock::Result<Option<Duration>>) -> Reply {
        Reply::of(result, |t| {
            Reply::Ttl(match t {
                None => Ttl::Gone,
                Some(Duration::MAX) => Ttl::Persist,
                Some(d) => Ttl::Ms(d.as_millis() as u64),
            })
        })
    }
}

// ---------------------------------------------------------------------------------------
// Raw state

/// One key's content, normalized.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Content {
    Hash(BTreeMap<String, String>),
    List(Vec<String>),
    /// Members in score order.
    Zset(Vec<String>),
    Str(String),
}

/// Every key of one case (latches excluded), normalized name → content and TTL.
pub type Raw = BTreeMap<String, (Content, Ttl)>;

/// `Content::Hash` from pairs.
pub fn hash<I, K, V>(pairs: I) -> Content
where
    I: IntoIterator<Item = (K, V)>,
    K: ToString,
    V: ToString,
{
    Content::Hash(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn admits(want: &Raw, got: &Raw) -> bool {
    want.len() == got.len()
        && want
            .iter()
            .all(|(k, (c, t))| got.get(k).is_some_and(|(gc, gt)| gc == c && t.admits(*gt)))
}

// ---------------------------------------------------------------------------------------
// One server for the binary, one runtime

static SERVER: Mutex<Weak<RedisServer>> = Mutex::new(Weak::new());

/// The binary's server: started by the first kind that needs it, stopped when the last
/// running kind lets it go.
pub fn server() -> Arc<RedisServer> {
    let mut slot = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(server) = slot.upgrade() {
        return server;
    }
    let server = Arc::new(RedisServer::start());
    *slot = Arc::downgrade(&server);
    server
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

thread_local! {
    static URL: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// One case's connections and lock name.
pub struct Ctx {
    pub clients: [Client; 2],
    pub raw: redisson_lock::fred::prelude::Client,
    /// The lock's name (unique per case).
    pub name: String,
    ids: [String; 2],
}

impl Ctx {
    async fn open(url: &str, label: &str) -> Ctx {
        static CASE: AtomicU64 = AtomicU64::new(0);
        let n = CASE.fetch_add(1, Ordering::Relaxed);
        let connect = || async {
            let config = redisson_lock::Config::builder()
                .url(url)
                .build()
                .expect("config");
            Client::connect(config).await.expect("lock client connects")
        };
        let clients = [connect().await, connect().await];
        let raw =
            Builder::from_config(redisson_lock::fred::prelude::Config::from_url(url).unwrap())
                .build()
                .unwrap();
        raw.init().await.expect("raw client connects");
        let ids = [clients[0].id().to_owned(), clients[1].id().to_owned()];
        Ctx {
            clients,
            raw,
            name: format!("mdl-{label}-{n:07}-x"),
            ids,
        }
    }

    async fn close(self) {
        for client in &self.clients {
            let _ = client.shutdown().await;
        }
        let _ = self.raw.quit().await;
    }

    /// A raw command (the lists' and sorted sets' commands are not among fred's enabled
    /// interfaces).
    pub async fn cmd<T: FromValue>(&self, name: &'static str, args: &[&str]) -> T {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.raw
            .custom(
                redisson_lock::fred::types::CustomCommand::new_static(name, None, false),
                args,
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Replaces the client ids and the lock name in `s` by `@0`, `@1` and `N`.
    pub fn normalize(&self, s: &str) -> String {
        s.replace(&self.name, "N")
            .replace(&self.ids[0], "@0")
            .replace(&self.ids[1], "@1")
    }

    /// Every key whose name contains the lock's name (latches excluded), normalized.
    pub async fn raw_state(&self) -> Raw {
        let keys: Vec<String> = self
            .raw
            .custom(
                redisson_lock::fred::cmd!("KEYS"),
                vec![format!("*{}*", self.name)],
            )
            .await
            .unwrap();
        let mut raw = Raw::new();
        for key in keys {
            if key.starts_with("redisson_unlock_latch:") {
                continue; // cleaned up in the background (docs/protocol.md §9)
            }
            let kind: String = self
                .raw
                .custom(redisson_lock::fred::cmd!("TYPE"), vec![key.clone()])
                .await
                .unwrap();
            let content = match kind.as_str() {
                "hash" => {
                    let map: std::collections::HashMap<String, String> =
                        self.raw.hgetall(&key).await.unwrap();
                    Content::Hash(
                        map.into_iter()
                            .map(|(k, v)| (self.normalize(&k), self.normalize(&v)))
                            .collect(),
                    )
                }
                "list" => {
                    let items: Vec<String> = self.cmd("LRANGE", &[&key, "0", "-1"]).await;
                    Content::List(items.iter().map(|s| self.normalize(s)).collect())
                }
                "zset" => {
                    let items: Vec<String> = self.cmd("ZRANGE", &[&key, "0", "-1"]).await;
                    Content::Zset(items.iter().map(|s| self.normalize(s)).collect())
                }
                "string" => {
                    let v: Option<String> = self.raw.get(&key).await.unwrap();
                    Content::Str(self.normalize(&v.unwrap_or_default()))
                }
                "none" => continue, // expired between KEYS and TYPE
                other => Content::Str(format!("<{other}>")),
            };
            let pttl: i64 = self.raw.pttl(&key).await.unwrap();
            if pttl == -2 {
                continue;
            }
            raw.insert(self.normalize(&key), (content, Ttl::from_pttl(pttl)));
        }
        raw
    }

    /// `PEXPIRE 1` on every key of the case that has a TTL (the lease running out), then
    /// waits until they are gone. A renewal that runs in the millisecond before the key
    /// expires (the sentry's check after a reconnect, the watchdog's round) finds the
    /// holder's field and re-arms the key to 30 s, and the holder's watchdog then keeps it
    /// for good; so the `PEXPIRE 1` is sent again whenever the key is still there with
    /// more than 1 ms left.
    pub async fn expire_leased(&self) {
        let keys: Vec<String> = self
            .raw
            .custom(
                redisson_lock::fred::cmd!("KEYS"),
                vec![format!("*{}*", self.name)],
            )
            .await
            .unwrap();
        for key in &keys {
            let pttl: i64 = self.raw.pttl(key).await.unwrap();
            if pttl > 0 && !key.starts_with("redisson_unlock_latch:") {
                self.expire_now(key).await;
            }
        }
    }

    /// `PEXPIRE key 1`, again after a renewal re-armed it, until `key` is gone.
    async fn expire_now(&self, key: &str) {
        let started = Instant::now();
        let mut sent = 0;
        loop {
            let _: i64 = self.raw.pexpire(key, 1, None).await.unwrap();
            sent += 1;
            loop {
                tokio::time::sleep(Duration::from_millis(1)).await;
                match self.raw.pttl::<i64, _>(key).await.unwrap() {
                    -2 | -1 => return,     // gone (or made anew without expiry: not this lease)
                    ms if ms > 1 => break, // re-armed by a renewal
                    _ => {}
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{key} was re-armed after each of {sent} PEXPIRE 1 in 10 s"
            );
        }
    }

    /// `CLIENT KILL ID` of client `c`'s command connection.
    pub async fn kill(&self, c: u8) {
        let id: i64 = self.clients[usize::from(c)]
            .redis()
            .custom(redisson_lock::fred::cmd!("CLIENT"), vec!["ID"])
            .await
            .expect("CLIENT ID");
        let _: Value = self
            .raw
            .custom(
                redisson_lock::fred::cmd!("CLIENT"),
                vec!["KILL".to_string(), "ID".to_string(), id.to_string()],
            )
            .await
            .expect("CLIENT KILL");
    }

    /// `PUBSUB NUMSUB channel` (the channel's name normalized: `N` for the lock's name).
    pub async fn numsub(&self, channel: &str) -> i64 {
        let channel = channel.replace('N', &self.name);
        let reply: Vec<Value> = self
            .raw
            .custom(
                redisson_lock::fred::cmd!("PUBSUB"),
                vec!["NUMSUB".to_string(), channel],
            )
            .await
            .unwrap();
        reply.get(1).and_then(Value::as_i64).unwrap_or(0)
    }

    /// The real field of `actor` (`<client id>:<owner>`).
    pub fn field(&self, actor: Actor) -> String {
        format!(
            "{}:{}",
            self.ids[usize::from(actor.c)],
            u64::from(actor.o) + 1
        )
    }
}

/// Polls `check` every 5 ms for up to `limit`.
pub async fn until<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// ---------------------------------------------------------------------------------------
// A kind: its model and how to run its operations

/// What every kind's file provides.
pub trait Kind: 'static {
    /// The model's state.
    type State: Clone + fmt::Debug;
    type Op: Clone + fmt::Debug;
    /// The handles, guards and waiters of one case.
    type Sut;
    const LABEL: &'static str;
    /// Cases when `MODEL_CASES` is not set.
    const CASES: u32;

    fn init() -> Self::State;
    fn ops(state: &Self::State) -> BoxedStrategy<Self::Op>;
    fn pre(state: &Self::State, op: &Self::Op) -> bool;
    /// Applies `op` to the model: the new state, its `reply` and what it wrote.
    fn step(state: &mut Self::State, op: &Self::Op);
    fn reply(state: &Self::State) -> &Reply;
    /// The raw keys the model predicts, normalized.
    fn expected(state: &Self::State) -> Raw;

    fn open(ctx: &Ctx) -> Self::Sut;
    /// Runs `op` on the crate; `after` is the model after the same step (for the waiters
    /// the step let in).
    fn exec(
        sut: &mut Self::Sut,
        ctx: &Ctx,
        op: Self::Op,
        after: &Self::State,
    ) -> impl Future<Output = Reply>;
    /// Ends the case's waiters and guards.
    fn close(sut: Self::Sut) -> impl Future<Output = ()>;
    /// Applies `op` to the model as the crate reports it went (`sut` after `exec`), for
    /// what the model cannot choose alone: which members a RedLock acquisition took (its
    /// guard says, `GroupGuard::members`). The harness checks the reply and the raw keys
    /// against this state, and goes on from it; the generated `after` only chooses the
    /// operations. By default the model's own `step`.
    fn observe(state: &mut Self::State, op: &Self::Op, sut: &Self::Sut) {
        let _ = sut;
        Self::step(state, op);
    }
    /// Adjusts what was read back before the comparison (the fenced lock's token seed).
    fn fix_raw(sut: &Self::Sut, after: &Self::State, raw: &mut Raw) {
        let _ = (sut, after, raw);
    }
}

/// The model state plus the step counter, as proptest-state-machine sees it.
pub struct Machine<K>(PhantomData<K>);

impl<K: Kind> ReferenceStateMachine for Machine<K> {
    type State = K::State;
    type Transition = K::Op;

    fn init_state() -> BoxedStrategy<Self::State> {
        Just(K::init()).boxed()
    }

    fn transitions(state: &Self::State) -> BoxedStrategy<Self::Transition> {
        K::ops(state)
    }

    fn apply(mut state: Self::State, op: &Self::Transition) -> Self::State {
        K::step(&mut state, op);
        state
    }

    fn preconditions(state: &Self::State, op: &Self::Transition) -> bool {
        K::pre(state, op)
    }
}

/// One case on the crate.
pub struct Case<K: Kind> {
    ctx: Option<Ctx>,
    sut: Option<K::Sut>,
    step: usize,
    /// The model as the crate's reports made it ([`Kind::observe`]).
    model: K::State,
}

static CASES_RUN: Mutex<BTreeMap<&'static str, (u64, u64)>> = Mutex::new(BTreeMap::new());
/// Steps run per (kind, operation), printed with `MODEL_STATS=1`.
static OPS_RUN: Mutex<BTreeMap<(&'static str, String), u64>> = Mutex::new(BTreeMap::new());

impl<K: Kind> StateMachineTest for Machine<K> {
    type SystemUnderTest = Case<K>;
    type Reference = Machine<K>;

    fn init_test(init: &K::State) -> Case<K> {
        let url = URL.with(|u| u.borrow().clone());
        let ctx = runtime().block_on(Ctx::open(&url, K::LABEL));
        let sut = K::open(&ctx);
        CASES_RUN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(K::LABEL)
            .or_default()
            .0 += 1;
        Case {
            ctx: Some(ctx),
            sut: Some(sut),
            step: 0,
            model: init.clone(),
        }
    }

    fn apply(mut case: Case<K>, after: &K::State, op: K::Op) -> Case<K> {
        case.step += 1;
        CASES_RUN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(K::LABEL)
            .or_default()
            .1 += 1;
        let step = case.step;
        let ctx = case.ctx.as_ref().expect("ctx");
        let sut = case.sut.as_mut().expect("sut");
        let shown = format!("{op:?}");
        let name = shown.split('(').next().unwrap_or_default().to_owned();
        *OPS_RUN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((K::LABEL, name))
            .or_default() += 1;
        let model = &mut case.model;
        let (got, raw) = runtime().block_on(async {
            let got = match tokio::time::timeout(STEP_LIMIT, K::exec(sut, ctx, op.clone(), after))
                .await
            {
                Ok(got) => got,
                Err(_) => panic!("step {step} {shown}: no answer within {STEP_LIMIT:?} (a hang)"),
            };
            K::observe(model, &op, sut);
            let model = &*model;
            let want = K::expected(model);
            let read = || async {
                let mut raw = ctx.raw_state().await;
                K::fix_raw(sut, model, &mut raw);
                raw
            };
            let mut raw = read().await;
            let start = Instant::now();
            while !admits(&want, &raw) && start.elapsed() < SETTLE {
                tokio::time::sleep(Duration::from_millis(10)).await;
                raw = read().await;
            }
            (got, raw)
        });
        let want = K::reply(&case.model);
        assert!(
            want.admits(&got),
            "step {step} {shown}: the reply differs from the model's\n  model: {want:?}\n  crate: {got:?}"
        );
        let want_raw = K::expected(&case.model);
        assert!(
            admits(&want_raw, &raw),
            "step {step} {shown}: the raw keys differ from the model's\n  model: {}\n  redis: {}",
            show(&want_raw),
            show(&raw)
        );
        case
    }

    fn teardown(mut case: Case<K>) {
        let sut = case.sut.take();
        let ctx = case.ctx.take();
        runtime().block_on(async move {
            if let Some(sut) = sut {
                K::close(sut).await;
            }
            if let Some(ctx) = ctx {
                ctx.close().await;
            }
        });
    }
}

fn show(raw: &Raw) -> String {
    if raw.is_empty() {
        return "(no keys)".to_owned();
    }
    raw.iter()
        .map(|(k, (c, t))| {
            let c = match c {
                Content::Hash(m) => format!("{m:?}"),
                Content::List(l) => format!("list{l:?}"),
                Content::Zset(z) => format!("zset{z:?}"),
                Content::Str(s) => format!("{s:?}"),
            };
            format!("\n    {k} = {c}  ttl {t:?}")
        })
        .collect()
}

thread_local! {
    static IN_CASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keeps the panics of the cases proptest runs while shrinking off the output (the
/// shortest failing sequence is printed once at the end); other panics print as usual.
fn quiet_panics_in_cases() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CASE.with(|c| c.get()) {
                default(info);
            }
        }));
    });
}

/// `MODEL_CASES` (cases per kind) or the kind's CI default.
fn cases(default: u32) -> u32 {
    std::env::var("MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs kind `K`: `MODEL_CASES` (or `K::CASES`) sequences of 1 to 24 steps; a failure
/// is shrunk and printed as the shortest numbered sequence that still fails.
pub fn run<K: Kind>() {
    let server = server();
    URL.with(|u| *u.borrow_mut() = server.url());
    let config = PropConfig {
        cases: cases(K::CASES),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        max_shrink_time: 240_000,
        ..PropConfig::default()
    };
    quiet_panics_in_cases();
    let started = Instant::now();
    let mut runner = TestRunner::new(config.clone());
    let strategy = Machine::<K>::sequential_strategy(1..24);
    let result = runner.run(&strategy, |(init, transitions, seen)| {
        IN_CASE.with(|c| c.set(true));
        Machine::<K>::test_sequential(config.clone(), init, transitions, seen);
        IN_CASE.with(|c| c.set(false));
        Ok(())
    });
    IN_CASE.with(|c| c.set(false));
    let (cases_run, steps) = CASES_RUN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(K::LABEL)
        .copied()
        .unwrap_or_default();
    eprintln!(
        "model {}: {} sequences asked, {cases_run} run (shrinking included), {steps} steps, {:.1} s",
        K::LABEL,
        config.cases,
        started.elapsed().as_secs_f64()
    );
    if std::env::var_os("MODEL_STATS").is_some() {
        let ops = OPS_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let line: Vec<String> = ops
            .iter()
            .filter(|((kind, _), _)| *kind == K::LABEL)
            .map(|((_, op), n)| format!("{op} {n}"))
            .collect();
        eprintln!(
            "model {}: steps per operation: {}",
            K::LABEL,
            line.join(", ")
        );
    }
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, (_, transitions, _))) => {
            let steps: String = transitions
                .iter()
                .enumerate()
                .map(|(i, op)| format!("\n  {:>2}. {op:?}", i + 1))
                .collect();
            let text = format!(
                "model {}: the shortest failing sequence ({} steps):{steps}\n{why}",
                K::LABEL,
                transitions.len()
            );
            eprintln!("{text}");
            panic!("{text}");
        }
        Err(TestError::Abort(why)) => panic!("model {}: aborted: {why}", K::LABEL),
    }
}

/// Runs one given sequence (a shrunk failure kept as a regression, or a reproduction).
pub fn replay<K: Kind>(ops: Vec<K::Op>) {
    let server = server();
    URL.with(|u| *u.borrow_mut() = server.url());
    Machine::<K>::test_sequential(PropConfig::default(), K::init(), ops, None);
}

/// `Expire` against a renewal that lands in the key's last millisecond. The fair model
/// hung on this: after a `Kill`, the sentry's check re-armed `N` to 30 s just after the
/// `PEXPIRE 1`, and the holder's watchdog then kept `N` alive. Here a raw "renewer" on a
/// connection of its own re-arms the key to 30 s whenever it finds at most 1 ms left,
/// twice. The harness must still see the key gone.
#[test]
fn expire_outlasts_renewals_in_the_last_millisecond() {
    const RENEW: &str = "local t = redis.call('pttl', KEYS[1]) \
        if t >= 0 and t <= 1 then redis.call('pexpire', KEYS[1], 30000) return 1 end \
        return 0";
    let server = server();
    runtime().block_on(async {
        let ctx = Ctx::open(&server.url(), "expire").await;
        let key = ctx.name.clone();
        // The race needs the renewer's round trip inside the key's last millisecond: on a
        // loaded machine it may miss it, so the scenario runs again (at most 5 times)
        // until it raced once; every run must end with the key gone.
        let mut renewed = 0;
        for attempt in 1..=5 {
            let _: i64 = ctx.raw.hset(&key, ("field", 1)).await.unwrap();
            let _: i64 = ctx.raw.pexpire(&key, 30_000, None).await.unwrap();
            let renewer = {
                let redis = ctx.clients[0].redis().clone();
                let key = key.clone();
                tokio::spawn(async move {
                    let (mut renewed, started) = (0, Instant::now());
                    while renewed < 2 && started.elapsed() < Duration::from_secs(10) {
                        let args = vec![RENEW.to_string(), "1".to_string(), key.clone()];
                        let hit: i64 = redis
                            .custom(redisson_lock::fred::cmd!("EVAL"), args)
                            .await
                            .unwrap();
                        renewed += hit;
                    }
                    renewed
                })
            };
            let expired = tokio::time::timeout(Duration::from_secs(15), ctx.expire_leased()).await;
            renewed = renewer.await.unwrap();
            println!("attempt {attempt}: the renewer re-armed the key {renewed} times");
            assert!(
                expired.is_ok(),
                "the key outlived Expire: {:?}",
                ctx.raw_state().await
            );
            assert!(ctx.raw_state().await.is_empty());
            if renewed > 0 {
                break;
            }
        }
        assert!(
            renewed > 0,
            "the renewer never hit the key's last millisecond in 5 attempts"
        );
        ctx.close().await;
    });
}
