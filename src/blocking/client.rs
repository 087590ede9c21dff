//! The blocking [`Client`]: connects on its own runtime and hands out blocking locks.

use std::sync::{Arc, Mutex};

use super::forward::forward_handles;
use super::lock::{
    FairLock, FasterMultiLock, FencedLock, Lock, NonReentrantFairLock, NonReentrantLock, RLock,
    ReadWriteLock, SpinLock,
};
use super::runtime::{Shared, build_runtime, run_on, stop_runtime};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::lock::{Backoff, LockKind};

#[cfg(doc)]
use super::guards::LockGuard;
#[cfg(doc)]
use super::runtime::SHUTDOWN_TIMEOUT;

/// A connection to Redis that hands out blocking locks, like a `RedissonClient`.
///
/// A cheap `Clone` handle: clones share the connections, the client id and the runtime.
/// See the [module docs](super) for its threads and how it stops.
///
/// # Drop
/// When the last handle (including every [`Lock`] and [`LockGuard`]) is dropped, the
/// client shuts down as [`Client::shutdown`] does, and its threads end before the drop
/// returns (within about 2 × [`SHUTDOWN_TIMEOUT`]).
///
/// # Examples
/// ```no_run
/// # fn demo() -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::Client;
/// let client = Client::connect(redisson_lock::Config::from_url("redis://127.0.0.1:6379")?)?;
/// let lock = client.get_lock("orders:42");
/// lock.lock()?;
/// lock.unlock()?;
/// client.shutdown()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    shared: Arc<Shared>,
}

impl Client {
    /// Starts the client's runtime (see the [module docs](super)) and connects to Redis
    /// on it, as [`crate::Client::connect`] does. Blocks until connected.
    ///
    /// # Errors
    /// [`Error::Redis`] if Redis cannot be reached or refuses the connection (the
    /// runtime's threads are stopped again), or if the runtime's threads cannot be
    /// started.
    ///
    /// # Redisson equivalent
    /// `Redisson.create(config)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo() -> redisson_lock::Result<()> {
    /// let client = redisson_lock::blocking::Client::connect(
    ///     redisson_lock::Config::from_url("redis://127.0.0.1:6379")?,
    /// )?;
    /// # Ok(()) }
    /// ```
    pub fn connect(config: Config) -> Result<Client> {
        let runtime = build_runtime()?;
        let handle = runtime.handle().clone();
        let client = match run_on(&handle, crate::Client::connect(config)) {
            Some(Ok(client)) => client,
            Some(Err(error)) => {
                stop_runtime(runtime);
                return Err(error);
            }
            None => {
                stop_runtime(runtime);
                return Err(Error::Shutdown);
            }
        };
        Ok(Client {
            shared: Arc::new(Shared {
                client,
                handle,
                runtime: Mutex::new(Some(runtime)),
                releases: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The client id: a random v4 UUID fixed for this client's life (see
    /// [`crate::Client::id`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.id().len(), 36);
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        self.shared.client.id()
    }

    /// A handle to the count-down latch `name` (Redisson's `RCountDownLatch`). No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getCountDownLatch(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs");
    /// latch.try_set_count(1)?;
    /// latch.count_down()?;
    /// # Ok(()) }
    /// ```
    pub fn get_count_down_latch(&self, name: impl Into<String>) -> super::CountDownLatch {
        super::CountDownLatch {
            shared: self.shared.clone(),
            inner: self.shared.client.get_count_down_latch(name),
        }
    }

    /// The configuration this client was connected with.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// println!("watchdog timeout: {:?}", client.config().watchdog_timeout());
    /// # }
    /// ```
    pub fn config(&self) -> &Config {
        self.shared.client.config()
    }

    fn handle<K: LockKind>(&self, inner: crate::Lock<K>) -> Lock<K> {
        Lock {
            shared: self.shared.clone(),
            inner,
            owner: None,
        }
    }

    forward_handles! {
        /// A handle to the reentrant lock `name`. No I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getLock(String name)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let lock = client.get_lock("stock:product_101");
        /// lock.lock()?;
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_lock(&self, name: impl Into<String>) -> RLock;

        /// A handle to the fair lock `name`: waiters get it in the order they asked. No I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getFairLock(String name)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let lock = client.get_fair_lock("tickets");
        /// lock.lock()?;
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_fair_lock(&self, name: impl Into<String>) -> FairLock;
    }

    /// A handle to the faster multi-lock on `values` in group `group` (Redisson 3.38+):
    /// every value taken or released together in one script. No I/O. As the async
    /// [`Client::get_multi_lock`](crate::Client::get_multi_lock), which says how values
    /// are encoded.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `values` is empty.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getMultiLock(String group, Collection<Object> values)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_multi_lock("orders_100", ["order:1", "order:2"])?;
    /// lock.lock()?;
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn get_multi_lock<I>(&self, group: impl Into<String>, values: I) -> Result<FasterMultiLock>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        Ok(self.handle(self.shared.client.get_multi_lock(group, values)?))
    }

    /// A handle to the read-write lock `name`. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getReadWriteLock(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let rw = client.get_read_write_lock("catalog");
    /// let guard = rw.read_lock().acquire()?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn get_read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        let rw = self.shared.client.get_read_write_lock(name);
        ReadWriteLock {
            read: self.handle(rw.read_lock()),
            write: self.handle(rw.write_lock()),
        }
    }

    forward_handles! {
        /// A handle to the fenced lock `name`: every acquisition draws a fencing token. No
        /// I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getFencedLock(String name)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let lock = client.get_fenced_lock("ledger");
        /// let token = lock.lock_and_get_token()?;
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_fenced_lock(&self, name: impl Into<String>) -> FencedLock;

        /// A handle to the spin lock `name`, with Redisson's default back-off. No I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getSpinLock(String name)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let lock = client.get_spin_lock("jobs");
        /// lock.lock()?;
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_spin_lock(&self, name: impl Into<String>) -> SpinLock;

        /// A handle to the spin lock `name` with a back-off of your choice. No I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getSpinLock(String name, LockOptions.BackOff backOff)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// use redisson_lock::Backoff;
        /// let lock = client.get_spin_lock_with("jobs", Backoff::constant(Backoff::DEFAULT_CONSTANT)?);
        /// lock.lock()?;
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_spin_lock_with(&self, name: impl Into<String>, backoff: Backoff) -> SpinLock;

        /// A handle to the non-reentrant lock `name` (Redisson 4.4+): the holder asking
        /// again gets [`Error::NonReentrant`] from `lock()` and `false` from `try_lock*`. No
        /// I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getNonReentrantLock(String name)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let lock = client.get_non_reentrant_lock("batch");
        /// lock.lock()?;
        /// assert!(!lock.try_lock()?);
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_non_reentrant_lock(&self, name: impl Into<String>) -> NonReentrantLock;

        /// A handle to the non-reentrant fair lock `name` (Redisson 4.4+). No I/O.
        ///
        /// # Redisson equivalent
        /// `RedissonClient#getNonReentrantFairLock(String name)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let lock = client.get_non_reentrant_fair_lock("tickets");
        /// lock.lock()?;
        /// lock.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn get_non_reentrant_fair_lock(&self, name: impl Into<String>) -> NonReentrantFairLock;
    }

    /// A handle to the permit-expirable semaphore `name` (Redisson's
    /// `RPermitExpirableSemaphore`), blocking. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getPermitExpirableSemaphore(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("exports");
    /// sem.try_set_permits(2)?;
    /// # Ok(()) }
    /// ```
    pub fn get_permit_expirable_semaphore(
        &self,
        name: impl Into<String>,
    ) -> super::PermitExpirableSemaphore {
        super::PermitExpirableSemaphore {
            shared: self.shared.clone(),
            inner: self.shared.client.get_permit_expirable_semaphore(name),
        }
    }

    /// A handle to the semaphore `name` (Redisson's `RSemaphore`; see
    /// [`crate::Client::get_semaphore`]). No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSemaphore(String name)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let semaphore = client.get_semaphore("partner-api");
    /// semaphore.acquire(1)?.release()?;
    /// # Ok(()) }
    /// ```
    pub fn get_semaphore(&self, name: impl Into<String>) -> super::Semaphore {
        super::Semaphore {
            shared: self.shared.clone(),
            inner: self.shared.client.get_semaphore(name),
        }
    }

    /// The per-key locks, semaphores and latches of the Java map `name`, keys encoded with
    /// the client's codec (its configuration's [`codec`](crate::Config::codec): Redisson's
    /// default `Kryo5Codec` unless it names another; see [`crate::Client::map`]). No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getMap(String name)`, then `getLock(key)` and its siblings
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.map("orders").get_lock("o-1")?;
    /// lock.lock()?;
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn map(&self, name: impl Into<String>) -> super::EntryObjects {
        self.entries(self.shared.client.map(name))
    }

    /// [`Client::map`] for a map whose keys Java encodes with `codec`. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getMap(String name, Codec codec)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::codec::JavaCodec;
    /// let lock = client.map_with_codec("orders", JavaCodec::String).get_lock("o-1")?;
    /// # Ok(()) }
    /// ```
    pub fn map_with_codec(
        &self,
        name: impl Into<String>,
        codec: crate::codec::JavaCodec,
    ) -> super::EntryObjects {
        self.entries(self.shared.client.map_with_codec(name, codec))
    }

    /// The per-value objects of the Java set `name` (the client's codec; see
    /// [`crate::Client::set`]). No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSet(String name)`, then `getLock(value)` and its siblings
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.set("tags").get_lock("rust")?;
    /// # Ok(()) }
    /// ```
    pub fn set(&self, name: impl Into<String>) -> super::EntryObjects {
        self.entries(self.shared.client.set(name))
    }

    /// [`Client::set`] for a set whose values Java encodes with `codec`. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSet(String name, Codec codec)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::codec::JavaCodec;
    /// let lock = client.set_with_codec("tags", JavaCodec::String).get_lock("rust")?;
    /// # Ok(()) }
    /// ```
    pub fn set_with_codec(
        &self,
        name: impl Into<String>,
        codec: crate::codec::JavaCodec,
    ) -> super::EntryObjects {
        self.entries(self.shared.client.set_with_codec(name, codec))
    }

    fn entries(&self, inner: crate::EntryObjects) -> super::EntryObjects {
        super::EntryObjects {
            shared: self.shared.clone(),
            inner,
        }
    }

    /// Shuts the client down and stops its runtime: dropped guards' unlocks still in
    /// flight are finished, waiters in other threads get [`Error::Shutdown`], the
    /// connections close, and the runtime's threads end before this returns (each step
    /// bounded by [`SHUTDOWN_TIMEOUT`]; inside a tokio runtime the threads are told to
    /// stop but not waited for). Locks still held are **not** released (as in Redisson):
    /// they expire after their lease. Every later call of any handle of this client
    /// returns [`Error::Shutdown`]. Calling it again does nothing.
    ///
    /// # Errors
    /// [`Error::Redis`] if closing a connection failed, [`Error::Timeout`] if closing
    /// took longer than [`SHUTDOWN_TIMEOUT`]; the client is shut down anyway.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#shutdown()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// client.shutdown()?;
    /// assert!(matches!(client.get_lock("x").lock(), Err(redisson_lock::Error::Shutdown)));
    /// # Ok(()) }
    /// ```
    pub fn shutdown(&self) -> Result<()> {
        self.shared.stop()
    }

    /// Whether the client was shut down.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert!(!client.is_shutdown());
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.shared.client.is_shutdown()
    }

    /// The number of lock channels this client is subscribed to for waiting threads.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.subscribed_channels(), 0);
    /// # }
    /// ```
    pub fn subscribed_channels(&self) -> usize {
        self.shared.client.subscribed_channels()
    }

    /// The number of (lock, owner) pairs the watchdog renews.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.renewed_locks(), 0);
    /// # }
    /// ```
    pub fn renewed_locks(&self) -> usize {
        self.shared.client.renewed_locks()
    }
}
