//! The blocking [`Lock<K>`] (what a handle holds), its aliases, and [`ReadWriteLock`].
//! The methods, the async lock's each run on the client's runtime as the calling thread
//! (or the `with_owner` owner), are in `lock_methods.rs`.

use std::fmt;
use std::sync::Arc;

use super::runtime::Shared;
use crate::lock::{
    Fair, FasterMulti, Fenced, LockKind, NonReentrant, NonReentrantFair, Read, Reentrant, Spin,
    Write,
};
use crate::names::owner::LockOwner;

#[cfg(doc)]
use crate::error::Error;

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
    pub(super) shared: Arc<Shared>,
    /// The async handle, without an owner of its own: each call binds one.
    pub(super) inner: crate::Lock<K>,
    pub(super) owner: Option<LockOwner>,
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
    pub(super) read: ReadLock,
    pub(super) write: WriteLock,
}

impl ReadWriteLock {
    /// The name, as given to the client; the Redis key of the hash both halves share is
    /// [`ReadWriteLock::raw_name`].
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

    /// The name as stored in Redis: the key of the hash both halves share, through the
    /// client's [name mapper](crate::ConfigBuilder::name_mapper).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// let rw = client.get_read_write_lock("catalog");
    /// assert_eq!(rw.raw_name(), rw.write_lock().raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        self.read.raw_name()
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

/// Redisson's reentrant lock (`RLock`), blocking: `Lock` of the [`Reentrant`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::RLock;
/// let lock: RLock = client.get_lock("orders");
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type RLock = Lock<Reentrant>;
/// Redisson's fair lock (`RFairLock`), blocking: `Lock` of the [`Fair`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::FairLock;
/// let lock: FairLock = client.get_fair_lock("orders");
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type FairLock = Lock<Fair>;
/// The read half of Redisson's `RReadWriteLock`, blocking: `Lock` of the [`Read`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::ReadLock;
/// let lock: ReadLock = client.get_read_write_lock("orders").read_lock();
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type ReadLock = Lock<Read>;
/// The write half of Redisson's `RReadWriteLock`, blocking: `Lock` of the [`Write`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::WriteLock;
/// let lock: WriteLock = client.get_read_write_lock("orders").write_lock();
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type WriteLock = Lock<Write>;
/// Redisson's fenced lock (`RFencedLock`), blocking: `Lock` of the [`Fenced`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::FencedLock;
/// let lock: FencedLock = client.get_fenced_lock("orders");
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type FencedLock = Lock<Fenced>;
/// Redisson 3.38's `RedissonFasterMultiLock`, blocking: `Lock` of the [`FasterMulti`]
/// kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::FasterMultiLock;
/// let lock: FasterMultiLock = client.get_multi_lock("orders", ["a", "b"])?;
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type FasterMultiLock = Lock<FasterMulti>;
/// Redisson's spin lock (`RSpinLock`), blocking: `Lock` of the [`Spin`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::SpinLock;
/// let lock: SpinLock = client.get_spin_lock("orders");
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type SpinLock = Lock<Spin>;
/// Redisson 4.4's `RedissonNonReentrantLock`, blocking: `Lock` of the [`NonReentrant`]
/// kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::NonReentrantLock;
/// let lock: NonReentrantLock = client.get_non_reentrant_lock("orders");
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type NonReentrantLock = Lock<NonReentrant>;
/// Redisson 4.4's `RedissonNonReentrantFairLock`, blocking: `Lock` of the
/// [`NonReentrantFair`] kind.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::NonReentrantFairLock;
/// let lock: NonReentrantFairLock = client.get_non_reentrant_fair_lock("orders");
/// let guard = lock.lock()?;
/// # Ok(()) }
/// ```
pub type NonReentrantFairLock = Lock<NonReentrantFair>;
