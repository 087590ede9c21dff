//! [`Client`]: connects to Redis, builds the [`Engine`] its locks share, and hands
//! out lock handles of every kind.
//!
//! The client knows the lock kinds (it makes their handles); the lock engine and the
//! synchronizers know only the [`Engine`], never the client.
//!
//! What is built on a client lives beside it: `entries/`, the per-entry locks and
//! synchronizers of Redisson's maps and sets ([`EntryObjects`](crate::EntryObjects)),
//! and `fencing.rs`, the resource side of fencing tokens
//! ([`fencing::FencedWriter`](crate::fencing::FencedWriter)).

use std::sync::Arc;

use fred::prelude::{Builder, ClientLike, Value};
use fred::types::{ClusterHash, CustomCommand};
use tokio::sync::watch;
use uuid::Uuid;

use crate::config::{Config, PublishMode, lease_millis};
use crate::connection::connect_error::connect_error;
use crate::connection::primary_switch::PrimarySwitch;
use crate::connection::redis::Redis;
use crate::connection::replicas::ReplicaSync;
use crate::connection::routing_keeper::keep_routing;
use crate::engine::hold::registry::HoldRegistry;
use crate::engine::hold::renewal::RenewalSettings;
use crate::engine::wait::pubsub::PubSub;
use crate::engine::{Engine, EngineParts};
use crate::error::Result;
use crate::lock::{
    Backoff, Fair, FairLock, FasterMulti, FasterMultiLock, Fenced, FencedLock, Lock, NonReentrant,
    NonReentrantFair, NonReentrantFairLock, NonReentrantLock, RLock, ReadWriteLock, Reentrant,
    Spin, SpinLock,
};
use crate::synchronizers::latch::CountDownLatch;
use crate::synchronizers::permit_expirable::PermitExpirableSemaphore;
use crate::synchronizers::semaphore::Semaphore;

pub(crate) mod entries;
pub mod fencing;

/// A connection to Redis that hands out locks, like a `RedissonClient`.
///
/// `Client` is a cheap `Clone` handle: clones share the connections, the client id and
/// the registries. Locks from one client are held by that client's id; a second `Client`
/// (even in the same process) is a different Redisson "node".
///
/// # Drop
/// When the last handle (including every [`RLock`] and [`LockGuard`](crate::LockGuard)) is
/// dropped, renewal stops and the connections close in the background; locks it held
/// expire after their lease (the watchdog timeout for watchdog-held ones). Call
/// [`Client::shutdown`] to do the same deterministically.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> redisson_lock::Result<()> {
/// use redisson_lock::{Client, Config};
/// let client = Client::connect(Config::from_url("redis://127.0.0.1:6379")?).await?;
/// println!("this client writes {}:<owner> into lock hashes", client.id());
/// let lock = client.get_lock("orders:42");
/// lock.lock().await?;
/// lock.unlock().await?;
/// client.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Engine>,
}

impl Client {
    /// Connects to Redis and starts the client's background tasks.
    ///
    /// Opens two connections (per node on a cluster): one for lock scripts and queries,
    /// one for unlock notifications. Picks the publish command as
    /// [`PublishMode`] says.
    ///
    /// # Errors
    /// [`Error::Redis`](crate::Error::Redis) if Redis cannot be reached within fred's connection timeout (10 s
    /// by default) or refuses the connection; its text names the address(es) tried and
    /// the reason in one line, e.g. `Redis error: IO Error: cannot connect to Redis at
    /// 127.0.0.1:1: Connection refused (os error 111)`. [`Error::Tls`](crate::Error::Tls)
    /// if a TLS handshake fails.
    ///
    /// # Redisson equivalent
    /// `Redisson.create(config)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> redisson_lock::Result<()> {
    /// let client = redisson_lock::Client::connect(
    ///     redisson_lock::Config::from_url("redis://127.0.0.1:6379")?,
    /// ).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.connect", skip_all)]
    pub async fn connect(config: Config) -> Result<Client> {
        let id = config
            .client_id
            .unwrap_or_else(Uuid::new_v4)
            .hyphenated()
            .to_string();
        let ((redis, redis_task), (subscriber, subscriber_task)) =
            open_connections(&config).await?;
        let sharded = publishes_sharded(&config, &redis).await;
        let (shutdown, shutdown_rx) = watch::channel(false);
        keep_routing("commands", redis.clone(), redis_task, shutdown_rx.clone());
        keep_routing(
            "subscriptions",
            subscriber.clone(),
            subscriber_task,
            shutdown_rx.clone(),
        );
        let pubsub = PubSub::start(
            subscriber.clone(),
            redis.clone(),
            sharded,
            shutdown_rx.clone(),
        );
        let watchdog_ms = lease_millis(config.settings.watchdog_timeout)?;
        let registry = Arc::new(HoldRegistry::new(
            watchdog_ms,
            config.settings.validity_margin,
        ));
        let redis = start_hold_keeping(
            &id,
            &config,
            &registry,
            redis,
            subscriber.clone(),
            watchdog_ms,
            &shutdown,
        );
        let inner = Engine::start(EngineParts {
            id,
            redis,
            subscriber,
            pubsub,
            registry,
            publish_command: if sharded { "SPUBLISH" } else { "PUBLISH" },
            watchdog_ms,
            config,
            shutdown,
        });
        tracing::info!(client_id = %inner.id, sharded, "redisson-lock client connected");
        Ok(Client { inner })
    }

    /// The client id: a random v4 UUID, lowercase and hyphenated, fixed for this client's
    /// life. Lock hashes written by this client have fields `<id>:<owner>`.
    ///
    /// # Redisson equivalent
    /// `ServiceManager#getId()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.id().len(), 36);
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// A handle to the reentrant lock `name`. No I/O; the handle is cheap to clone.
    ///
    /// An empty name is accepted here and rejected with [`Error::InvalidArgument`](crate::Error::InvalidArgument) by the
    /// first operation.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_lock("stock:product_101");
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_lock(&self, name: impl Into<String>) -> RLock {
        Lock::new(self.inner.clone(), name.into(), Reentrant)
    }

    /// A handle to the fair lock `name`: waiters get it in the order they asked, across
    /// processes and Java clients. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getFairLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fair_lock("tickets");
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_fair_lock(&self, name: impl Into<String>) -> FairLock {
        Lock::new(self.inner.clone(), name.into(), Fair)
    }

    /// A handle to the read-write lock `name`; take its halves with
    /// [`ReadWriteLock::read_lock`] and [`ReadWriteLock::write_lock`]. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getReadWriteLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let rw = client.get_read_write_lock("catalog");
    /// rw.read_lock().lock().await?;
    /// rw.read_lock().unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        ReadWriteLock::new(self.inner.clone(), name.into())
    }

    /// A handle to the fenced lock `name`: every acquisition draws a fencing token. No
    /// I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getFencedLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// let token = lock.lock_and_get_token().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_fenced_lock(&self, name: impl Into<String>) -> FencedLock {
        Lock::new(self.inner.clone(), name.into(), Fenced)
    }

    /// A handle to the faster multi-lock on `values` in group `group`: one Redis hash per
    /// group, every value taken or released together in one script, whatever their
    /// number (Redisson 3.38+). No I/O.
    ///
    /// The group name goes through the client's [name mapper](crate::ConfigBuilder::name_mapper)
    /// like a lock name (it is the key `G`, no braces added); each value is its encoded
    /// bytes: a `&str` or `String` is its UTF-8, which is what a Java app using Redisson's
    /// `StringCodec` hashes. Under Redisson's default `Kryo5Codec` pass the Kryo bytes
    /// (see [`FasterMulti`](crate::kinds::FasterMulti#values-and-codecs)). Duplicate values are
    /// one value, as in Java. Pick the group as the smallest enclosing scope (Redisson's
    /// advice: `class_100`, not `class`): two objects conflict exactly on the values they
    /// share within one group.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `values` is empty.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getMultiLock(String group, Collection<Object> values)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let order_ids = ["order:1", "order:2", "order:3"];
    /// let lock = client.get_multi_lock("orders_100", order_ids)?;
    /// let guard = lock.acquire().await?;      // all three, or wait
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_multi_lock<I>(&self, group: impl Into<String>, values: I) -> Result<FasterMultiLock>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let kind = FasterMulti::new(values)?;
        Ok(Lock::new(self.inner.clone(), group.into(), kind))
    }

    /// A handle to the spin lock `name`, polling with Redisson's default exponential
    /// back-off (1 ms doubling up to 128 ms). No pub/sub. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSpinLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_spin_lock("jobs");
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_spin_lock(&self, name: impl Into<String>) -> SpinLock {
        self.get_spin_lock_with(name, Backoff::default())
    }

    /// A handle to the spin lock `name` with a back-off of your choice.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSpinLock(String name, LockOptions.BackOff backOff)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::Backoff;
    /// let lock = client.get_spin_lock_with("jobs", Backoff::constant(Backoff::DEFAULT_CONSTANT)?);
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_spin_lock_with(&self, name: impl Into<String>, backoff: Backoff) -> SpinLock {
        Lock::new(self.inner.clone(), name.into(), Spin::new(backoff))
    }

    /// A handle to the non-reentrant lock `name` (Redisson 4.4+): the holder asking again
    /// gets [`Error::NonReentrant`](crate::Error::NonReentrant) from `lock()` and `false`
    /// from `try_lock*`. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getNonReentrantLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_non_reentrant_lock("batch");
    /// lock.lock().await?;
    /// assert!(!lock.try_lock().await?);
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_non_reentrant_lock(&self, name: impl Into<String>) -> NonReentrantLock {
        Lock::new(self.inner.clone(), name.into(), NonReentrant)
    }

    /// A handle to the non-reentrant fair lock `name` (Redisson 4.4+). No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getNonReentrantFairLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_non_reentrant_fair_lock("tickets");
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_non_reentrant_fair_lock(&self, name: impl Into<String>) -> NonReentrantFairLock {
        Lock::new(self.inner.clone(), name.into(), NonReentrantFair)
    }

    /// A handle to the count-down latch `name` (Redisson's `RCountDownLatch`): a count in
    /// the string key `name` that tasks count down and waiters wait on, shared with Java
    /// apps. The name goes through the client's name mapper. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getCountDownLatch(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs:batch-7");
    /// latch.try_set_count(3).await?;
    /// latch.count_down().await?;
    /// assert_eq!(latch.get_count().await?, 2);
    /// # Ok(()) }
    /// ```
    pub fn get_count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch::new(self.inner.clone(), name.into())
    }

    /// A handle to the permit-expirable semaphore `name` (Redisson's
    /// `RPermitExpirableSemaphore`): permits with ids and optional leases, shared with
    /// Java apps. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getPermitExpirableSemaphore(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("exports");
    /// sem.try_set_permits(2).await?;
    /// let permit = sem.acquire_kept().await?;
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_permit_expirable_semaphore(
        &self,
        name: impl Into<String>,
    ) -> PermitExpirableSemaphore {
        PermitExpirableSemaphore::new(self.inner.clone(), name.into())
    }

    /// A handle to the semaphore `name`: permits without owners in the string key `name`,
    /// shared with Java apps' `RSemaphore` of that name. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSemaphore(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let semaphore = client.get_semaphore("partner-api");
    /// semaphore.try_set_permits(4).await?;
    /// let permit = semaphore.acquire(1).await?;
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_semaphore(&self, name: impl Into<String>) -> Semaphore {
        Semaphore::new(self.inner.clone(), name.into())
    }

    /// The configuration this client was connected with.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// println!("watchdog timeout: {:?}", client.config().watchdog_timeout());
    /// # }
    /// ```
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The fred client this crate sends its commands with, for commands of your own.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use redisson_lock::fred::prelude::*;
    /// let pong: String = client.redis().ping(None).await?;
    /// # Ok(()) }
    /// ```
    pub fn redis(&self) -> &fred::prelude::Client {
        self.inner.redis.client()
    }

    /// The one path to Redis of this client's primitives (the failover gate, the
    /// response timeout, the re-send policy, the replica `WAIT`).
    pub(crate) fn transport(&self) -> &crate::connection::redis::Redis {
        &self.inner.redis
    }

    /// Stops renewal, wakes every waiter with [`Error::Shutdown`](crate::Error::Shutdown), and closes the
    /// connections. Answered unlock latches still waiting for their batched delete are
    /// deleted first, so none outlives the client. Locks this client holds are **not**
    /// released (as in Redisson): they expire after their lease. Guards and permits
    /// dropped before the call are: their releases, begun by the drop, are waited for
    /// first (up to the response timeout), while the connections are open. Every
    /// [`LockGuard`](crate::LockGuard) of this client reports its lock lost. Calling it
    /// again does nothing.
    ///
    /// # Errors
    /// [`Error::Redis`](crate::Error::Redis) if closing a connection failed; the client is shut down anyway.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#shutdown()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// client.shutdown().await?;
    /// assert!(matches!(
    ///     client.get_lock("x").lock().await,
    ///     Err(redisson_lock::Error::Shutdown)
    /// ));
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) -> Result<()> {
        if self.inner.is_closed() {
            return Ok(());
        }
        // What dropped guards and permits began (their releases, queued by their `Drop`)
        // and abandoned acquisitions' undoing run to their end first, while the
        // connections are still open.
        let limit = self.inner.config.settings.response_timeout;
        let left = self.inner.background.finished_within(limit).await;
        if left > 0 {
            tracing::debug!(
                left,
                "background releases still running at shutdown; their leases end them"
            );
        }
        if self.inner.close() {
            return Ok(());
        }
        tracing::info!(client_id = %self.inner.id, "shutting down");
        let _ = self.inner.shutdown.send(true);
        self.inner.registry.clear();
        self.inner.pubsub.close();
        self.inner.lines.wake_all();
        self.inner.flush_latches().await;
        let limit = self.inner.config.settings.response_timeout;
        let (commands, subscriptions) = tokio::join!(
            quit_once_connected(self.inner.redis.client(), limit),
            quit_once_connected(&self.inner.subscriber, limit)
        );
        commands?;
        subscriptions?;
        Ok(())
    }

    /// Whether [`Client::shutdown`] was called.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert!(!client.is_shutdown());
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.inner.is_closed()
    }

    /// The number of channels (locks', semaphores' and latches') this client is subscribed
    /// to for local waiters. A channel stays subscribed half a second after its last waiter
    /// left (the next waiter of a lock contended moments ago finds it ready), so this is
    /// zero once nobody has waited for that long.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.subscribed_channels(), 0);
    /// # }
    /// ```
    pub fn subscribed_channels(&self) -> usize {
        self.inner.pubsub.channel_count()
    }

    /// The number of this client's tasks waiting in a lock's local line (see
    /// [`ConfigBuilder::local_handoffs`](crate::ConfigBuilder::local_handoffs)): every
    /// waiter of a reentrant or non-reentrant lock, the one waiting in Redis included.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.local_waiters(), 0);
    /// # }
    /// ```
    pub fn local_waiters(&self) -> usize {
        self.inner.lines.waiting()
    }

    /// The number of (lock, owner) pairs the watchdog renews.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.renewed_locks(), 0);
    /// # }
    /// ```
    pub fn renewed_locks(&self) -> usize {
        self.inner.registry.renewed_len()
    }
}

/// A fred client for `config`, not yet connected; `broadcast_capacity`: the buffer of its
/// event channels (messages, errors, reconnections).
fn fred_client(config: &Config, broadcast_capacity: usize) -> Result<fred::prelude::Client> {
    let mut builder = Builder::from_config(config.redis.clone());
    builder
        .set_policy(config.reconnect.clone())
        .with_performance_config(|p| {
            p.default_command_timeout = config.settings.response_timeout;
            p.broadcast_channel_capacity = broadcast_capacity;
        })
        // TCP_NODELAY, as Redisson (Netty) sets by default: fred pipelines concurrent
        // commands on one connection, and with Nagle a small write behind an
        // unacknowledged one waits for the server's reply (a round trip) before it leaves
        // this machine.
        .with_connection_config(|c| {
            c.tcp.nodelay = Some(true);
            c.max_redirections = crate::connection::scripts::MAX_REDIRECTIONS;
            // Redisson's `connectTimeout`: the TCP connect and TLS (fred's connection
            // timeout) and the handshake's commands, such as `AUTH` and `CLIENT ID`, and
            // the cluster's and sentinels' own queries (its internal commands' timeout).
            c.connection_timeout = config.settings.connect_timeout;
            c.internal_command_timeout = config.settings.connect_timeout;
        });
    Ok(builder.build()?)
}

/// The client's two connections, connected, each with its routing task: one for scripts
/// and queries, one for subscriptions. The first is closed again when the second cannot
/// connect.
async fn open_connections(config: &Config) -> Result<(Connected, Connected)> {
    let redis = fred_client(config, 32)?;
    let redis_task = redis.init().await.map_err(|e| connect_error(config, e))?;
    // A large broadcast buffer: a slow receive loop lags less often.
    let subscriber = fred_client(config, 4096)?;
    match subscriber.init().await {
        Ok(subscriber_task) => Ok(((redis, redis_task), (subscriber, subscriber_task))),
        Err(error) => {
            let _ = redis.quit().await;
            Err(connect_error(config, error))
        }
    }
}

/// A fred client and its routing task (see [`keep_routing`]).
type Connected = (fred::prelude::Client, fred::types::ConnectHandle);

/// Whether unlock messages go with `SPUBLISH` (sharded pub/sub), as
/// [`PublishMode`] says; `Auto` asks a cluster whether it has sharded pub/sub.
async fn publishes_sharded(config: &Config, redis: &fred::prelude::Client) -> bool {
    match config.settings.publish_mode {
        PublishMode::Publish => false,
        PublishMode::Sharded => true,
        PublishMode::Auto => {
            config.redis.server.is_clustered() && supports_sharded_pubsub(redis).await
        }
    }
}

/// Starts what keeps the client's holds and watches the topology under them: the replica
/// sync, the failover watch, the sentry and the watchdog's renewal. Returns the lock
/// engine's view of the connection, which follows the primary they see.
fn start_hold_keeping(
    id: &str,
    config: &Config,
    registry: &Arc<HoldRegistry>,
    redis: fred::prelude::Client,
    subscriber: fred::prelude::Client,
    watchdog_ms: u64,
    shutdown: &watch::Sender<bool>,
) -> Redis {
    let switch = Arc::new(PrimarySwitch::default());
    let replicas = Arc::new(ReplicaSync::new(config, switch.clone()));
    tokio::spawn(replicas.clone().watch(redis.clone(), shutdown.subscribe()));
    let settings = RenewalSettings {
        period: config.settings.watchdog_timeout / 3,
        lease_ms: watchdog_ms,
        batch_size: config.settings.renewal_batch_size,
        clustered: config.redis.server.is_clustered(),
    };
    crate::engine::hold::failover_watch::start(
        config,
        registry.clone(),
        crate::engine::hold::failover_watch::Connections {
            redis: redis.clone(),
            subscriber,
            switch: switch.clone(),
            client_id: Arc::from(id),
        },
        shutdown.subscribe(),
    );
    let redis = Redis::new(redis, switch, replicas, config.settings.response_timeout);
    tokio::spawn(crate::engine::hold::sentry::run(
        registry.clone(),
        redis.clone(),
        settings.clone(),
        shutdown.subscribe(),
    ));
    if config.settings.key_tracking {
        start_key_tracking(config, registry, &redis, &settings, shutdown);
    }
    tokio::spawn(crate::engine::hold::renewal::run(
        registry.clone(),
        redis.clone(),
        settings,
        shutdown.subscribe(),
    ));
    redis
}

/// Starts `CLIENT TRACKING` on the command connection (see [`crate::engine::hold::tracking`]):
/// its listener connects in the background, so connecting waits for nothing more.
fn start_key_tracking(
    config: &Config,
    registry: &Arc<HoldRegistry>,
    redis: &Redis,
    settings: &RenewalSettings,
    shutdown: &watch::Sender<bool>,
) {
    let listener = match fred_client(config, 1024) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(%error, "key tracking: cannot build the listener");
            return;
        }
    };
    tokio::spawn(crate::engine::hold::tracking::listener::run(
        listener,
        redis.clone(),
        registry.clone(),
        config.redis.server.is_clustered(),
        shutdown.subscribe(),
    ));
    tokio::spawn(crate::engine::hold::tracking::tracker::run(
        registry.clone(),
        redis.clone(),
        settings.clone(),
        shutdown.subscribe(),
    ));
}

/// Java Redisson's probe: a server that answers `PUBSUB SHARDNUMSUB` has sharded pub/sub.
async fn supports_sharded_pubsub(redis: &fred::prelude::Client) -> bool {
    let probe = CustomCommand::new_static("PUBSUB", ClusterHash::Random, false);
    redis
        .custom::<Value, _>(probe, vec!["SHARDNUMSUB", "0"])
        .await
        .is_ok()
}

/// `QUIT`, once a `PING` (waited for up to `limit`) showed the connection up: fred's
/// `QUIT` stops its reconnection, so one sent while a connection killed moments before is
/// being re-made would never be written, and would time out.
async fn quit_once_connected(
    client: &fred::prelude::Client,
    limit: std::time::Duration,
) -> Result<()> {
    let _ = tokio::time::timeout(limit, client.ping::<Value>(None)).await;
    Ok(client.quit().await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// Nothing listens on the port: one line with the address and the OS's reason.
    #[tokio::test]
    async fn a_refused_connection_names_its_address() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let config = Config::from_url(&format!("redis://:s3cret@127.0.0.1:{port}")).unwrap();
        let error = Client::connect(config).await.unwrap_err();
        assert!(matches!(error, Error::Redis(_)), "{error:?}");
        let text = error.to_string();
        assert!(
            text.starts_with(&format!(
                "Redis error: IO Error: cannot connect to Redis at 127.0.0.1:{port}: "
            )),
            "{text}"
        );
        assert!(text.contains("refused"), "{text}");
        assert!(!text.contains("Os {") && !text.contains("s3cret"), "{text}");
    }
}
