//! The blocking API (feature `blocking`): every lock kind for code that is not async, with
//! the OS thread as the owner, exactly as in Java Redisson.
//!
//! CLI tools, synchronous web frameworks and code run by `spawn_blocking` need locks too.
//! This module gives them the same locks, with the same method names and the same guards,
//! as plain functions that block the calling thread:
//!
//! * [`Client`]: a connection with its own small runtime; hands out locks.
//! * [`Lock<K>`]: every kind's handle ([`RLock`], [`FairLock`], [`ReadLock`],
//!   [`WriteLock`], [`FencedLock`], [`SpinLock`], [`NonReentrantLock`],
//!   [`NonReentrantFairLock`]), and [`ReadWriteLock`] for the read-write pair.
//! * [`LockGuard<K>`]: one hold, released when dropped (also while a panic unwinds).
//!
//! The locks are the async locks underneath: same scripts, same keys, same watchdog. A
//! blocking client, an async [`crate::Client`] and a Java Redisson client contend for one
//! lock name as equals.
//!
//! ```no_run
//! use std::time::Duration;
//! use redisson_lock::blocking::Client;
//! use redisson_lock::Config;
//!
//! # fn demo() -> redisson_lock::Result<()> {
//! let client = Client::connect(Config::from_url("redis://127.0.0.1:6379")?)?;
//! let lock = client.get_lock("stock:product_101");
//!
//! lock.lock()?;                             // held until unlock; the watchdog renews it
//! lock.lock()?;                             // same thread: re-entry, hold count 2
//! assert_eq!(lock.hold_count()?, 2);
//! lock.unlock()?;
//! lock.unlock()?;                           // released; one waiter is woken
//!
//! // Redisson's tryLock(1, 10, SECONDS): wait up to 1 s, then hold for 10 s at most.
//! if let Some(guard) = lock.try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10))? {
//!     // ... work; dropping the guard (or a panic) unlocks ...
//!     guard.unlock()?;
//! }
//! client.shutdown()?;
//! # Ok(()) }
//! ```
//!
//! # Owners: the calling thread
//!
//! Every call acts as [`LockOwner::current_thread`] of the thread that makes it, which is
//! Redisson's model: the same thread taking the lock again is a re-entry (the hold count
//! goes up), another thread waits, and only the holding thread can unlock.
//! [`Lock::with_owner`] fixes an explicit owner instead, like Redisson's `threadId`
//! overloads, to take a lock in one thread and release it in another. A [`LockGuard`]
//! remembers the owner that took it, so a guard may be moved to another thread and
//! unlocked or dropped there.
//!
//! Re-entry follows the thread, not the handle: two handles on one name from one client
//! are one lock on the same thread. Two clients (or a blocking and an async client) are
//! two Redisson "nodes" and exclude each other.
//!
//! # Threads and lifecycle
//!
//! [`Client::connect`] starts a tokio runtime owned by the client with
//! [`WORKER_THREADS`] (2) worker threads named [`THREAD_NAME`]
//! (`redisson-lock-blocking`), plus at most 2 helper threads of the same name that
//! exist only while a host name is being resolved (they end after 10 s idle). The async
//! client runs on it: its connections, the watchdog, the pub/sub listener and every
//! call's future. A calling thread hands its call to the runtime and sleeps until the
//! answer comes back; it never runs the runtime itself.
//!
//! The runtime stops, and its threads end, at [`Client::shutdown`] or when the last
//! handle (client, lock or guard) is dropped. Stopping first waits for dropped guards'
//! unlocks still in flight and closes the connections (at most [`SHUTDOWN_TIMEOUT`]),
//! then stops the threads (at most [`SHUTDOWN_TIMEOUT`] again): neither `shutdown` nor a
//! drop hangs on an unreachable Redis. As with the async client, locks still held are
//! not released by a shutdown (as in Redisson); they expire after their lease.
//!
//! After `shutdown`, every call returns [`Error::Shutdown`]; a call waiting at that
//! moment returns it too.
//!
//! # Calling from async code
//!
//! A blocking call made inside a tokio runtime (in a task, in `block_on`, in
//! `#[tokio::main]`) **works**: it neither panics nor deadlocks by itself, because the
//! call's future runs on this client's own runtime, never on the caller's, and the
//! caller waits on a plain channel (tokio's `block_on`, which panics there, is never
//! used). The cost is that it blocks the calling thread for the whole call: a
//! multi-thread runtime loses that worker meanwhile, and a **current-thread runtime
//! stops all its other tasks** until the call returns. So if the lock's holder is a task
//! on that same current-thread runtime, it cannot run to unlock, and the call waits until
//! the holder's lease ends (a watchdog lease included: the async client's watchdog also
//! runs on the stalled runtime). In async code use the async [`crate::Client`]; from
//! `spawn_blocking` or a plain thread, this module is the right tool. A drop of the last
//! handle inside a runtime stops this client's threads without waiting for them (tokio
//! forbids that wait there); they end on their own moments later.
//!
//! # Guards and panics
//!
//! Dropping a [`LockGuard`] without [`LockGuard::unlock`] (at the end of a scope, or
//! because a panic unwinds through it) hands its unlock to the client's runtime and
//! returns at once; the drop never blocks. The unlock runs even if the guard was the
//! last handle of the client: stopping the client waits for it first.
//!
//! [`LockOwner::current_thread`]: crate::LockOwner::current_thread

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::lock::{
    Backoff, Fair, Fenced, LockKind, NonReentrant, NonReentrantFair, Read, Reentrant, Spin, Write,
};
use crate::owner::LockOwner;

/// How many worker threads a blocking [`Client`]'s runtime has.
pub const WORKER_THREADS: usize = 2;

/// The name of a blocking [`Client`]'s runtime threads (Linux shows its first 15 bytes,
/// `redisson-lock-b`, in `/proc/<pid>/task/*/comm`).
pub const THREAD_NAME: &str = "redisson-lock-blocking";

/// How long each of the two steps of stopping a blocking [`Client`] may take: closing
/// (dropped guards' unlocks in flight, then the connections), then stopping the threads.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(1);

/// At most this many helper threads resolve host names.
const MAX_HELPER_THREADS: usize = 2;

/// Redisson's reentrant lock (`RLock`), blocking: `Lock` of the [`Reentrant`] kind.
pub type RLock = Lock<Reentrant>;
/// Redisson's fair lock (`RFairLock`), blocking: `Lock` of the [`Fair`] kind.
pub type FairLock = Lock<Fair>;
/// The read half of Redisson's `RReadWriteLock`, blocking: `Lock` of the [`Read`] kind.
pub type ReadLock = Lock<Read>;
/// The write half of Redisson's `RReadWriteLock`, blocking: `Lock` of the [`Write`] kind.
pub type WriteLock = Lock<Write>;
/// Redisson's fenced lock (`RFencedLock`), blocking: `Lock` of the [`Fenced`] kind.
pub type FencedLock = Lock<Fenced>;
/// Redisson's spin lock (`RSpinLock`), blocking: `Lock` of the [`Spin`] kind.
pub type SpinLock = Lock<Spin>;
/// Redisson 4.4's `RedissonNonReentrantLock`, blocking: `Lock` of the [`NonReentrant`]
/// kind.
pub type NonReentrantLock = Lock<NonReentrant>;
/// Redisson 4.4's `RedissonNonReentrantFairLock`, blocking: `Lock` of the
/// [`NonReentrantFair`] kind.
pub type NonReentrantFairLock = Lock<NonReentrantFair>;

// ---- the runtime ------------------------------------------------------------------------

/// What every handle of one blocking client shares: the async client and the runtime it
/// runs on. Never moved into a task of that runtime, so the runtime is never dropped by
/// one of its own threads.
struct Shared {
    client: crate::Client,
    handle: Handle,
    /// `None` once stopped.
    runtime: Mutex<Option<Runtime>>,
    /// Unlocks of dropped guards, still running (finished ones are pruned on each push).
    releases: Mutex<Vec<JoinHandle<()>>>,
}

/// A poisoned mutex here guards a plain `Option` or `Vec`, which is consistent anyway.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn build_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .max_blocking_threads(MAX_HELPER_THREADS)
        .thread_name(THREAD_NAME)
        .enable_all()
        .build()
        .map_err(|error| {
            Error::Redis(fred::error::Error::new(
                fred::error::ErrorKind::IO,
                format!("could not start the blocking client's runtime: {error}"),
            ))
        })
}

/// Runs `future` on `handle`'s runtime and blocks the calling thread until it is done.
/// `None` if the runtime stopped (or had stopped) before the future finished. A panic of
/// the future is resumed on the caller. Never uses tokio's `block_on`, so it works on any
/// thread, inside a runtime too.
fn run_on<T, F>(handle: &Handle, future: F) -> Option<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (done, outcome) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = done.send(AssertUnwindSafe(future).catch_unwind().await);
    });
    // A stopped runtime drops the task, and with it the sender: `recv` then fails.
    match outcome.recv() {
        Ok(Ok(value)) => Some(value),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => None,
    }
}

/// Stops the runtime: waits up to [`SHUTDOWN_TIMEOUT`] for its threads, unless the caller
/// is inside a runtime, where tokio forbids the wait.
fn stop_runtime(runtime: Runtime) {
    if Handle::try_current().is_ok() {
        runtime.shutdown_background();
    } else {
        runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
    }
}

impl Shared {
    /// Runs one lock operation; [`Error::Shutdown`] once the client is shut down.
    fn call<T, F>(&self, future: F) -> Result<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        if self.client.is_shutdown() {
            return Err(Error::Shutdown);
        }
        run_on(&self.handle, future).unwrap_or(Err(Error::Shutdown))
    }

    /// A dropped guard's unlock: started on the runtime at once, tracked so that
    /// stopping the client waits for it.
    fn release_in_background<K: LockKind>(&self, lock: crate::Lock<K>) {
        let task = self.handle.spawn(async move {
            let owner = lock.owner();
            match lock.unlock().await {
                Ok(()) => tracing::debug!(lock = lock.name(), %owner, "dropped guard: released"),
                Err(error) => tracing::debug!(
                    lock = lock.name(),
                    %owner,
                    %error,
                    "dropped guard: unlock failed; the lease will end the lock"
                ),
            }
        });
        let mut releases = locked(&self.releases);
        releases.retain(|task| !task.is_finished());
        releases.push(task);
    }

    /// Stops the client once: dropped guards' unlocks, then the async shutdown (both
    /// within [`SHUTDOWN_TIMEOUT`]), then the runtime. `Ok` if it was already stopped.
    fn stop(&self) -> Result<()> {
        let Some(runtime) = locked(&self.runtime).take() else {
            return Ok(());
        };
        let releases = std::mem::take(&mut *locked(&self.releases));
        let client = self.client.clone();
        let closed = run_on(&self.handle, async move {
            tokio::time::timeout(SHUTDOWN_TIMEOUT, async move {
                for release in releases {
                    let _ = release.await;
                }
                client.shutdown().await
            })
            .await
        });
        stop_runtime(runtime);
        match closed {
            Some(Ok(result)) => result,
            Some(Err(_elapsed)) => Err(Error::Timeout {
                what: "closing the blocking client's connections",
                after: SHUTDOWN_TIMEOUT,
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            tracing::debug!(%error, "dropping the blocking client");
        }
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("client_id", &self.client.id())
            .field("stopped", &locked(&self.runtime).is_none())
            .finish()
    }
}

// ---- the client -------------------------------------------------------------------------

/// A connection to Redis that hands out blocking locks, like a `RedissonClient`.
///
/// A cheap `Clone` handle: clones share the connections, the client id and the runtime.
/// See the [module docs](self) for its threads and how it stops.
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
    /// Starts the client's runtime (see the [module docs](self)) and connects to Redis
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
    pub fn get_lock(&self, name: impl Into<String>) -> RLock {
        self.handle(self.shared.client.get_lock(name))
    }

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
    pub fn get_fair_lock(&self, name: impl Into<String>) -> FairLock {
        self.handle(self.shared.client.get_fair_lock(name))
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
    pub fn get_fenced_lock(&self, name: impl Into<String>) -> FencedLock {
        self.handle(self.shared.client.get_fenced_lock(name))
    }

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
    pub fn get_spin_lock(&self, name: impl Into<String>) -> SpinLock {
        self.handle(self.shared.client.get_spin_lock(name))
    }

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
    pub fn get_spin_lock_with(&self, name: impl Into<String>, backoff: Backoff) -> SpinLock {
        self.handle(self.shared.client.get_spin_lock_with(name, backoff))
    }

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
    pub fn get_non_reentrant_lock(&self, name: impl Into<String>) -> NonReentrantLock {
        self.handle(self.shared.client.get_non_reentrant_lock(name))
    }

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
    pub fn get_non_reentrant_fair_lock(&self, name: impl Into<String>) -> NonReentrantFairLock {
        self.handle(self.shared.client.get_non_reentrant_fair_lock(name))
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

// ---- locks ------------------------------------------------------------------------------

/// A distributed lock of kind `K` with blocking methods: the async [`crate::Lock<K>`]
/// with the calling OS thread as the owner.
///
/// Every method has the async lock's name and meaning (see [`crate::Lock`] for the
/// details of each), except that it blocks the calling thread until done, and that the
/// owner is [`LockOwner::current_thread`] of the caller unless [`Lock::with_owner`] set
/// one. Redisson's `isHeldByCurrentThread` keeps its name here
/// ([`Lock::is_held_by_current_thread`]).
///
/// A cheap `Clone` handle, `Send` and `Sync`; no I/O until used.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// let lock = client.get_lock("stock:product_101");
/// if lock.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10))? {
///     assert!(lock.is_held_by_current_thread()?);
///     lock.unlock()?;
/// }
/// # Ok(()) }
/// ```
pub struct Lock<K: LockKind = Reentrant> {
    shared: Arc<Shared>,
    /// The async handle, without an owner of its own: each call binds one.
    inner: crate::Lock<K>,
    owner: Option<LockOwner>,
}

impl<K: LockKind> Clone for Lock<K> {
    fn clone(&self) -> Self {
        Lock {
            shared: self.shared.clone(),
            inner: self.inner.clone(),
            owner: self.owner,
        }
    }
}

impl<K: LockKind> fmt::Debug for Lock<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::Lock")
            .field("lock", &self.inner)
            .field("owner", &self.owner)
            .finish()
    }
}

impl<K: LockKind> Lock<K> {
    /// The async handle acting as this call's owner, to move onto the runtime.
    fn bound(&self) -> crate::Lock<K> {
        self.inner.with_owner(self.owner())
    }

    /// Runs `op` on the async handle bound to this call's owner.
    fn call<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnOnce(crate::Lock<K>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.shared.call(op(self.bound()))
    }

    /// Wraps an async guard taken as `owner`.
    fn guard(&self, owner: LockOwner, guard: crate::LockGuard<K>) -> LockGuard<K> {
        LockGuard {
            lock: self.with_owner(owner),
            guard: Some(guard),
        }
    }

    /// The kind-specific part of this handle, such as a spin lock's back-off.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// println!("{:?}", client.get_spin_lock("jobs").kind().backoff());
    /// # }
    /// ```
    pub fn kind(&self) -> &K {
        self.inner.kind()
    }

    /// The lock's name: the Redis key of its hash.
    ///
    /// # Redisson equivalent
    /// `RLock#getName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.get_lock("orders").name(), "orders");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// A handle on the same lock that acts as `owner` in every call, whichever thread
    /// makes it: to take a lock in one thread and release it in another, or to share an
    /// owner id with a Java thread.
    ///
    /// # Redisson equivalent
    /// `lock(threadId)`-style overloads: `lockAsync(threadId)`, `unlockAsync(threadId)`,
    /// `tryLockAsync(..., threadId)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::LockOwner;
    /// let job = client.get_lock("job:7").with_owner(LockOwner::from_raw(42));
    /// job.lock()?;
    /// let handle = job.clone();
    /// std::thread::spawn(move || handle.unlock()).join().unwrap()?;
    /// # Ok(()) }
    /// ```
    pub fn with_owner(&self, owner: LockOwner) -> Lock<K> {
        Lock {
            owner: Some(owner),
            ..self.clone()
        }
    }

    /// The owner this handle acts as right now: the one set by [`Lock::with_owner`], or
    /// the calling thread.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// use redisson_lock::LockOwner;
    /// assert_eq!(client.get_lock("x").owner(), LockOwner::current_thread());
    /// # }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.owner.unwrap_or_else(LockOwner::current_thread)
    }

    /// Takes the lock, waiting as long as it takes; the watchdog renews it until
    /// unlocked. The same thread taking it again adds a hold.
    ///
    /// # Errors
    /// As [`crate::Lock::lock`]; [`Error::Shutdown`] also if the client shuts down while
    /// this thread waits.
    ///
    /// # Redisson equivalent
    /// `RLock#lock()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// lock.lock()?;
    /// // ... work ...
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn lock(&self) -> Result<()> {
        self.call(|lock| async move { lock.lock().await })
    }

    /// Takes the lock, waiting as long as it takes; it is held for `lease` at most (no
    /// watchdog) or until unlocked.
    ///
    /// # Errors
    /// As [`crate::Lock::lock_with_lease`].
    ///
    /// # Redisson equivalent
    /// `RLock#lock(long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// lock.lock_with_lease(std::time::Duration::from_secs(10))?;
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_with_lease(&self, lease: Duration) -> Result<()> {
        self.call(|lock| async move { lock.lock_with_lease(lease).await })
    }

    /// Takes the lock if it is free (or already this thread's), without waiting;
    /// watchdog mode.
    ///
    /// # Errors
    /// As [`crate::Lock::try_lock`].
    ///
    /// # Redisson equivalent
    /// `RLock#tryLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// if lock.try_lock()? {
    ///     lock.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_lock(&self) -> Result<bool> {
        self.call(|lock| async move { lock.try_lock().await })
    }

    /// Tries to take the lock, waiting up to `wait`; watchdog mode once taken. Running
    /// out of time is `Ok(false)`.
    ///
    /// # Errors
    /// As [`crate::Lock::try_lock_for`].
    ///
    /// # Redisson equivalent
    /// `RLock#tryLock(long time, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// if lock.try_lock_for(std::time::Duration::from_millis(500))? {
    ///     lock.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_lock_for(&self, wait: Duration) -> Result<bool> {
        self.call(|lock| async move { lock.try_lock_for(wait).await })
    }

    /// Tries to take the lock, waiting up to `wait`; once taken it is held for `lease` at
    /// most. `Ok(true)` when taken (a re-entry counts), `Ok(false)` when `wait` ran out.
    ///
    /// # Errors
    /// As [`crate::Lock::try_lock_with_lease`].
    ///
    /// # Redisson equivalent
    /// `RLock#tryLock(long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if lock.try_lock_with_lease(Duration::from_secs(100), Duration::from_secs(10))? {
    ///     lock.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_lock_with_lease(&self, wait: Duration, lease: Duration) -> Result<bool> {
        self.call(|lock| async move { lock.try_lock_with_lease(wait, lease).await })
    }

    /// Takes the lock like [`Lock::lock`] and returns a guard that unlocks it when
    /// dropped.
    ///
    /// # Errors
    /// As [`Lock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// // ... work; a panic here still unlocks ...
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn acquire(&self) -> Result<LockGuard<K>> {
        let owner = self.owner();
        let guard = self.call(|lock| async move { lock.acquire().await })?;
        Ok(self.guard(owner, guard))
    }

    /// Takes the lock like [`Lock::lock_with_lease`] and returns a guard; the guard
    /// reports [`is_lost`](LockGuard::is_lost) once the lease ran out.
    ///
    /// # Errors
    /// As [`Lock::lock_with_lease`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire_with_lease(std::time::Duration::from_secs(5))?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn acquire_with_lease(&self, lease: Duration) -> Result<LockGuard<K>> {
        let owner = self.owner();
        let guard = self.call(|lock| async move { lock.acquire_with_lease(lease).await })?;
        Ok(self.guard(owner, guard))
    }

    /// Like [`Lock::try_lock_for`], returning a guard when the lock was taken.
    ///
    /// # Errors
    /// As [`Lock::try_lock_for`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// if let Some(guard) = lock.try_acquire_for(std::time::Duration::from_secs(1))? {
    ///     guard.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_for(&self, wait: Duration) -> Result<Option<LockGuard<K>>> {
        let owner = self.owner();
        let guard = self.call(|lock| async move { lock.try_acquire_for(wait).await })?;
        Ok(guard.map(|guard| self.guard(owner, guard)))
    }

    /// Like [`Lock::try_lock_with_lease`], returning a guard when the lock was taken.
    ///
    /// # Errors
    /// As [`Lock::try_lock_with_lease`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if let Some(guard) = lock.try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10))? {
    ///     guard.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<LockGuard<K>>> {
        let owner = self.owner();
        let guard =
            self.call(|lock| async move { lock.try_acquire_with_lease(wait, lease).await })?;
        Ok(guard.map(|guard| self.guard(owner, guard)))
    }

    /// Gives back one hold of this thread (or of the [`with_owner`](Lock::with_owner)
    /// owner). With the last hold the lock is released and a waiter is woken.
    ///
    /// # Errors
    /// [`Error::NotOwner`] (Redisson's exact text) if the caller does not hold the lock;
    /// the other errors of [`crate::Lock::unlock`].
    ///
    /// # Redisson equivalent
    /// `RLock#unlock()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// lock.lock()?;
    /// lock.unlock()?;
    /// assert!(matches!(lock.unlock(), Err(redisson_lock::Error::NotOwner { .. })));
    /// # Ok(()) }
    /// ```
    pub fn unlock(&self) -> Result<()> {
        self.call(|lock| async move { lock.unlock().await })
    }

    /// Deletes the lock whoever holds it, and wakes a waiter. Returns whether there was a
    /// lock to delete.
    ///
    /// # Errors
    /// As [`crate::Lock::force_unlock`].
    ///
    /// # Redisson equivalent
    /// `RLock#forceUnlock()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let deleted = lock.force_unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn force_unlock(&self) -> Result<bool> {
        self.call(|lock| async move { lock.force_unlock().await })
    }

    /// Whether anybody holds the lock.
    ///
    /// # Errors
    /// As [`crate::Lock::is_locked`].
    ///
    /// # Redisson equivalent
    /// `RLock#isLocked()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// println!("locked: {}", lock.is_locked()?);
    /// # Ok(()) }
    /// ```
    pub fn is_locked(&self) -> Result<bool> {
        self.call(|lock| async move { lock.is_locked().await })
    }

    /// Whether the calling thread (or the [`with_owner`](Lock::with_owner) owner) holds
    /// the lock. The async lock's `is_held_by_current_task`.
    ///
    /// # Errors
    /// As [`crate::Lock::is_held_by`].
    ///
    /// # Redisson equivalent
    /// `RLock#isHeldByCurrentThread()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// lock.lock()?;
    /// assert!(lock.is_held_by_current_thread()?);
    /// # Ok(()) }
    /// ```
    #[doc(alias = "is_held_by_current_task")]
    pub fn is_held_by_current_thread(&self) -> Result<bool> {
        self.call(|lock| async move { lock.is_held_by_current_task().await })
    }

    /// Whether `owner` of **this client** holds the lock.
    ///
    /// # Errors
    /// As [`crate::Lock::is_held_by`].
    ///
    /// # Redisson equivalent
    /// `RLock#isHeldByThread(long threadId)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let held = lock.is_held_by(redisson_lock::LockOwner::from_raw(42))?;
    /// # Ok(()) }
    /// ```
    pub fn is_held_by(&self, owner: LockOwner) -> Result<bool> {
        self.call(|lock| async move { lock.is_held_by(owner).await })
    }

    /// How many holds the calling thread (or the [`with_owner`](Lock::with_owner) owner)
    /// has; 0 when it holds none.
    ///
    /// # Errors
    /// As [`crate::Lock::hold_count`].
    ///
    /// # Redisson equivalent
    /// `RLock#getHoldCount()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// lock.lock()?;
    /// assert_eq!(lock.hold_count()?, 1);
    /// # Ok(()) }
    /// ```
    pub fn hold_count(&self) -> Result<u32> {
        self.call(|lock| async move { lock.hold_count().await })
    }

    /// The lock's remaining time to live: `None` when nobody holds it.
    ///
    /// # Errors
    /// As [`crate::Lock::remain_time_to_live`].
    ///
    /// # Redisson equivalent
    /// `RLock#remainTimeToLive()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// if let Some(ttl) = lock.remain_time_to_live()? {
    ///     println!("held for {ttl:?} more");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn remain_time_to_live(&self) -> Result<Option<Duration>> {
        self.call(|lock| async move { lock.remain_time_to_live().await })
    }
}

impl Lock<Fenced> {
    /// Takes the lock like [`Lock::lock`] and returns its fencing token.
    ///
    /// # Errors
    /// As [`crate::FencedLock::lock_and_get_token`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#lockAndGetToken()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// let token = lock.lock_and_get_token()?;
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_and_get_token(&self) -> Result<u64> {
        self.call(|lock| async move { lock.lock_and_get_token().await })
    }

    /// Takes the lock like [`Lock::lock_with_lease`] and returns its fencing token.
    ///
    /// # Errors
    /// As [`crate::FencedLock::lock_and_get_token_with_lease`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// let token = lock.lock_and_get_token_with_lease(std::time::Duration::from_secs(5))?;
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_and_get_token_with_lease(&self, lease: Duration) -> Result<u64> {
        self.call(|lock| async move { lock.lock_and_get_token_with_lease(lease).await })
    }

    /// Like [`Lock::try_lock_with_lease`]: `Some(token)` when taken within `wait`.
    ///
    /// # Errors
    /// As [`crate::FencedLock::try_lock_and_get_token`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let lock = client.get_fenced_lock("ledger");
    /// if let Some(token) = lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(10))? {
    ///     lock.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_lock_and_get_token(&self, wait: Duration, lease: Duration) -> Result<Option<u64>> {
        self.call(|lock| async move { lock.try_lock_and_get_token(wait, lease).await })
    }

    /// Like [`Lock::try_lock_for`] (watchdog mode): `Some(token)` when taken within
    /// `wait`.
    ///
    /// # Errors
    /// As [`crate::FencedLock::try_lock_and_get_token_for`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#tryLockAndGetToken(long waitTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// if let Some(token) = lock.try_lock_and_get_token_for(std::time::Duration::ZERO)? {
    ///     lock.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_lock_and_get_token_for(&self, wait: Duration) -> Result<Option<u64>> {
        self.call(|lock| async move { lock.try_lock_and_get_token_for(wait).await })
    }

    /// The last token handed out for this lock, whoever drew it; `None` before the first
    /// acquisition.
    ///
    /// # Errors
    /// As [`crate::FencedLock::token`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#getToken()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// println!("last token: {:?}", client.get_fenced_lock("ledger").token()?);
    /// # Ok(()) }
    /// ```
    pub fn token(&self) -> Result<Option<u64>> {
        self.call(|lock| async move { lock.token().await })
    }
}

/// Redisson's `RReadWriteLock`, blocking: many readers or one writer on one name.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// let rw = client.get_read_write_lock("catalog");
/// let read = rw.read_lock();
/// read.lock()?;                 // many readers at once, in any thread or process
/// read.unlock()?;
/// let write = rw.write_lock();
/// write.lock()?;                // waits for the last reader
/// write.unlock()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    read: ReadLock,
    write: WriteLock,
}

impl ReadWriteLock {
    /// The name: the Redis key of the hash both halves share.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.get_read_write_lock("catalog").name(), "catalog");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.read.name()
    }

    /// The read half: shared with other readers, excluded by a writer.
    ///
    /// # Redisson equivalent
    /// `RReadWriteLock#readLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let guard = client.get_read_write_lock("catalog").read_lock().acquire()?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn read_lock(&self) -> ReadLock {
        self.read.clone()
    }

    /// The write half: exclusive.
    ///
    /// # Redisson equivalent
    /// `RReadWriteLock#writeLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let guard = client.get_read_write_lock("catalog").write_lock().acquire()?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn write_lock(&self) -> WriteLock {
        self.write.clone()
    }
}

// ---- guards -----------------------------------------------------------------------------

/// One hold of a blocking [`Lock`], from [`Lock::acquire`] and its siblings.
///
/// The main way out is [`LockGuard::unlock`], which returns the result of the unlock.
/// [`LockGuard::is_lost`] tells whether the lock stopped protecting you (the watchdog
/// found it gone, its lease ran out, or the client was shut down); see
/// [`crate::LockGuard`] for the details.
///
/// A guard holds the lock as the owner that took it, so it may be sent to another thread
/// and unlocked or dropped there.
///
/// # Drop
/// Dropping a guard without `unlock`, at the end of a scope or while a panic unwinds,
/// starts its unlock on the client's runtime and returns at once (it never blocks). The
/// unlock is finished even if this guard was the client's last handle. If the client was
/// shut down, the lease ends the lock.
///
/// # Examples
/// ```no_run
/// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
/// {
///     let guard = lock.acquire()?;
///     assert!(!guard.is_lost());
///     // ... work ...
/// } // unlocked here
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the lock"]
#[clippy::has_significant_drop]
pub struct LockGuard<K: LockKind = Reentrant> {
    /// The lock, acting as the guard's owner.
    lock: Lock<K>,
    /// `None` once unlocked or handed over.
    guard: Option<crate::LockGuard<K>>,
}

impl<K: LockKind> LockGuard<K> {
    /// The fencing token of this acquisition: `Some` for a guard of a [`FencedLock`],
    /// `None` for other kinds.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let guard = client.get_fenced_lock("ledger").acquire()?;
    /// println!("writing with token {:?}", guard.token());
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn token(&self) -> Option<u64> {
        self.guard.as_ref().and_then(crate::LockGuard::token)
    }

    /// Gives back this hold (see [`Lock::unlock`]).
    ///
    /// # Errors
    /// [`Error::NotOwner`] if the lock was lost meanwhile; the other errors of
    /// [`Lock::unlock`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn unlock(mut self) -> Result<()> {
        match self.guard.take() {
            Some(guard) => self.lock.shared.call(async move { guard.unlock().await }),
            None => Ok(()),
        }
    }

    /// Whether the lock is known to be lost: the watchdog found it gone, its lease ran
    /// out, or the client was shut down.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire_with_lease(std::time::Duration::from_secs(5))?;
    /// assert!(!guard.is_lost());
    /// # Ok(()) }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.guard.as_ref().map_or(true, crate::LockGuard::is_lost)
    }

    /// The owner this guard holds the lock as.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// assert_eq!(guard.owner(), redisson_lock::LockOwner::current_thread());
    /// # Ok(()) }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.lock.owner()
    }

    /// The lock this guard holds, acting as the guard's owner (in any thread). An
    /// associated function, so that it never shadows a method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// let held = redisson_lock::blocking::LockGuard::lock(&guard);
    /// assert_eq!(held.hold_count()?, 1);
    /// # Ok(()) }
    /// ```
    pub fn lock(this: &Self) -> &Lock<K> {
        &this.lock
    }

    /// Ends the guard without unlocking: the hold (and its renewal, in watchdog mode)
    /// stays until the returned handle, which acts as the guard's owner, unlocks it.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// let handle = redisson_lock::blocking::LockGuard::into_lock(guard);
    /// std::thread::spawn(move || handle.unlock()).join().unwrap()?;
    /// # Ok(()) }
    /// ```
    pub fn into_lock(mut this: Self) -> Lock<K> {
        if let Some(guard) = this.guard.take() {
            let _ = crate::LockGuard::into_lock(guard);
        }
        this.lock.clone()
    }
}

impl<K: LockKind> fmt::Debug for LockGuard<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::LockGuard")
            .field("lock", &self.lock)
            .field("lost", &self.is_lost())
            .field("token", &self.token())
            .finish()
    }
}

impl<K: LockKind> Drop for LockGuard<K> {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            // Disarm the async guard (its own drop would release through the client's
            // chore task, which a stop of the client does not wait for) and unlock on the
            // runtime instead, tracked so that stopping waits for it.
            let lock = crate::LockGuard::into_lock(guard);
            self.lock.shared.release_in_background(lock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        send_sync::<Client>();
        send_sync::<RLock>();
        send_sync::<FairLock>();
        send_sync::<ReadWriteLock>();
        send_sync::<LockGuard>();
        send_sync::<LockGuard<Fenced>>();
    }

    #[test]
    fn a_stopped_runtime_answers_none_and_never_panics() {
        let runtime = build_runtime().unwrap();
        let handle = runtime.handle().clone();
        assert_eq!(run_on(&handle, async { 7 }), Some(7));
        stop_runtime(runtime);
        assert_eq!(run_on(&handle, async { 7 }), None);
    }

    #[test]
    fn a_panic_in_the_future_reaches_the_caller() {
        let runtime = build_runtime().unwrap();
        let handle = runtime.handle().clone();
        let caught = std::panic::catch_unwind(|| {
            run_on(&handle, async {
                panic!("boom");
            })
        });
        assert!(caught.is_err());
        assert_eq!(
            run_on(&handle, async { 1 }),
            Some(1),
            "the runtime survives"
        );
        stop_runtime(runtime);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn works_inside_a_current_thread_runtime() {
        let runtime = build_runtime().unwrap();
        let handle = runtime.handle().clone();
        let slept = run_on(&handle, async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            3
        });
        assert_eq!(slept, Some(3));
        stop_runtime(runtime); // inside a runtime: must not panic
    }
}
