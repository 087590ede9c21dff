//! [`Client`]: one connection to Redis for commands and one for subscriptions, the client
//! id, the script cache, the subscription registry and the renewal registry.
//!
//! Invariants: the client id is fixed for the client's life; background tasks (the
//! pub/sub loops, the renewal timer, the chore task) end when the client is shut down or
//! its last handle is dropped, so a dropped client renews nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use fred::prelude::{Builder, ClientLike, KeysInterface, Value};
use fred::types::{ClusterHash, CustomCommand};
use tokio::sync::{mpsc, watch};
use uuid::Uuid;

use crate::config::{lease_millis, Config, PublishMode};
use crate::error::Result;
use crate::lock::RLock;
use crate::pubsub::PubSub;
use crate::renewal::{Renewal, RenewalSettings};
use crate::scripts::Scripts;

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
    inner: Arc<ClientInner>,
}

#[derive(Debug)]
pub(crate) struct ClientInner {
    pub(crate) id: String,
    pub(crate) redis: fred::prelude::Client,
    subscriber: fred::prelude::Client,
    pub(crate) pubsub: Arc<PubSub>,
    pub(crate) renewal: Arc<Renewal>,
    pub(crate) scripts: Arc<Scripts>,
    /// `"PUBLISH"` or `"SPUBLISH"`, passed into the scripts that notify waiters.
    pub(crate) publish_command: &'static str,
    pub(crate) watchdog_ms: u64,
    pub(crate) config: Config,
    /// Dropped guards' locks (each acting as its owner), released by the chore task.
    releases: mpsc::UnboundedSender<RLock>,
    /// Answered unlock latches waiting for the next batched `UNLINK`.
    latches: Arc<LatchQueue>,
    shutdown: watch::Sender<bool>,
    closed: AtomicBool,
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
    /// by default) or refuses the connection.
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
        let build = |broadcast_capacity: usize| -> Result<fred::prelude::Client> {
            let mut builder = Builder::from_config(config.redis.clone());
            builder
                .set_policy(config.reconnect.clone())
                .with_performance_config(|p| {
                    p.default_command_timeout = config.response_timeout;
                    p.broadcast_channel_capacity = broadcast_capacity;
                });
            Ok(builder.build()?)
        };
        let redis = build(32)?;
        redis.init().await?;
        // A large broadcast buffer: a slow receive loop lags less often.
        let subscriber = build(4096)?;
        if let Err(error) = subscriber.init().await {
            let _ = redis.quit().await;
            return Err(error.into());
        }
        let sharded = match config.publish_mode {
            PublishMode::Publish => false,
            PublishMode::Sharded => true,
            PublishMode::Auto => {
                config.redis.server.is_clustered() && supports_sharded_pubsub(&redis).await
            }
        };
        let (shutdown, shutdown_rx) = watch::channel(false);
        let pubsub = PubSub::start(subscriber.clone(), sharded, shutdown_rx.clone());
        let scripts = Arc::new(Scripts::new());
        let renewal = Arc::new(Renewal::default());
        let watchdog_ms = lease_millis(config.watchdog_timeout)?;
        tokio::spawn(renewal.clone().run(
            redis.clone(),
            scripts.clone(),
            RenewalSettings {
                period: config.watchdog_timeout / 3,
                lease_ms: watchdog_ms,
                batch_size: config.renewal_batch_size,
                clustered: config.redis.server.is_clustered(),
                response_timeout: config.response_timeout,
            },
            shutdown_rx,
        ));
        let (releases, releases_rx) = mpsc::unbounded_channel();
        let latches = Arc::new(LatchQueue::default());
        let inner = Arc::new(ClientInner {
            id,
            redis,
            subscriber,
            pubsub,
            renewal,
            scripts,
            publish_command: if sharded { "SPUBLISH" } else { "PUBLISH" },
            watchdog_ms,
            config,
            releases,
            latches: latches.clone(),
            shutdown,
            closed: AtomicBool::new(false),
        });
        tokio::spawn(chore_loop(Arc::downgrade(&inner), latches, releases_rx));
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
        RLock::new(self.inner.clone(), name.into())
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
        &self.inner.redis
    }

    /// Stops renewal, wakes every waiter with [`Error::Shutdown`](crate::Error::Shutdown), and closes the
    /// connections. Locks this client holds are **not** released (as in Redisson): they
    /// expire after their lease. Every [`LockGuard`](crate::LockGuard) of this client
    /// reports its lock lost. Calling it again does nothing.
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
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        tracing::info!(client_id = %self.inner.id, "shutting down");
        let _ = self.inner.shutdown.send(true);
        self.inner.renewal.clear();
        self.inner.pubsub.close();
        let commands = self.inner.redis.quit().await;
        let subscriptions = self.inner.subscriber.quit().await;
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

    /// The number of lock channels this client is subscribed to for local waiters.
    /// Zero when nobody waits.
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

    /// The number of (lock, owner) pairs the watchdog renews.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.renewed_locks(), 0);
    /// # }
    /// ```
    pub fn renewed_locks(&self) -> usize {
        self.inner.renewal.len()
    }
}

impl ClientInner {
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Queues an answered unlock latch for deletion. Wakes the chore task only for the
    /// first latch of a batch, so an unlock costs no task wake-up of its own.
    pub(crate) fn delete_latch_later(&self, latch: String) {
        self.latches.push(latch);
    }

    /// Queues the release of a dropped guard's hold (a synchronous hand-off).
    pub(crate) fn release_later(&self, lock: RLock) {
        // Fails only when the chore task is gone, i.e. the client is going away; the
        // lease then ends the lock.
        let _ = self.releases.send(lock);
    }
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let redis = self.redis.clone();
            let subscriber = self.subscriber.clone();
            runtime.spawn(async move {
                let _ = redis.quit().await;
                let _ = subscriber.quit().await;
            });
        }
    }
}

/// Java Redisson's probe: a server that answers `PUBSUB SHARDNUMSUB` has sharded pub/sub.
async fn supports_sharded_pubsub(redis: &fred::prelude::Client) -> bool {
    let probe = CustomCommand::new_static("PUBSUB", ClusterHash::Random, false);
    redis
        .custom::<Value, _>(probe, vec!["SHARDNUMSUB", "0"])
        .await
        .is_ok()
}

/// How long answered unlock latches wait to be deleted together: at most one `UNLINK`
/// per this period, instead of a command and a task wake-up per unlock; the latch's own
/// TTL is far longer.
const LATCH_FLUSH_DELAY: Duration = Duration::from_millis(50);

/// Answered unlock latches waiting to be deleted together.
#[derive(Debug, Default)]
pub(crate) struct LatchQueue {
    pending: std::sync::Mutex<Vec<String>>,
    /// Woken when `pending` goes from empty to non-empty.
    first: tokio::sync::Notify,
}

impl LatchQueue {
    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // Each critical section is one Vec operation: a poisoned lock is still consistent.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a latch; wakes the chore task only for the first latch of a batch.
    fn push(&self, latch: String) {
        let first = {
            let mut pending = self.pending();
            pending.push(latch);
            pending.len() == 1
        };
        if first {
            self.first.notify_one();
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.pending())
    }

    /// Completes once at least one latch is queued.
    async fn wait_for_first(&self) {
        let first = self.first.notified();
        tokio::pin!(first);
        first.as_mut().enable();
        if self.pending().is_empty() {
            first.await;
        }
    }
}

/// Releases dropped guards' locks at once, and deletes answered unlock latches in
/// batches (see [`LATCH_FLUSH_DELAY`]). Ends when the client is dropped (every chore
/// sender is gone) or shut down.
async fn chore_loop(
    client: Weak<ClientInner>,
    latches: Arc<LatchQueue>,
    mut releases: mpsc::UnboundedReceiver<RLock>,
) {
    // When the queued latches are due; `None` while the queue is (believed) empty.
    let mut flush_at: Option<tokio::time::Instant> = None;
    loop {
        let latch_timer = async {
            match flush_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => latches.wait_for_first().await,
            }
        };
        tokio::select! {
            lock = releases.recv() => {
                let Some(lock) = lock else {
                    return; // every sender is gone: the client was dropped
                };
                if client.upgrade().is_some_and(|c| !c.is_closed()) {
                    tokio::spawn(lock.release_dropped());
                }
            }
            () = latch_timer => {
                if flush_at.is_none() {
                    flush_at = Some(tokio::time::Instant::now() + LATCH_FLUSH_DELAY);
                    continue;
                }
                flush_at = None;
                let batch = latches.take();
                match client.upgrade() {
                    Some(client) if !client.is_closed() => delete_latches(&client, batch).await,
                    Some(_) => {}
                    None => return,
                }
            }
        }
    }
}

/// `UNLINK`s latches, one command per hash slot on a cluster.
async fn delete_latches(client: &ClientInner, latches: Vec<String>) {
    let groups: Vec<Vec<String>> = if client.config.redis.server.is_clustered() {
        let mut by_slot: std::collections::BTreeMap<u16, Vec<String>> = Default::default();
        for key in latches {
            by_slot
                .entry(fred::util::redis_keyslot(key.as_bytes()))
                .or_default()
                .push(key);
        }
        by_slot.into_values().collect()
    } else {
        vec![latches]
    };
    let deletes = groups
        .into_iter()
        .map(|keys| async move { client.redis.unlink::<i64, _>(keys).await });
    for result in futures::future::join_all(deletes).await {
        if let Err(error) = result {
            tracing::debug!(%error, "could not delete unlock latches; they expire on their own");
        }
    }
}
