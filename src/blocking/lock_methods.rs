//! The blocking [`Lock<K>`](super::Lock)'s methods: the async lock's, each run on the
//! client's runtime as the calling thread (or the `with_owner` owner). The methods that
//! talk to Redis are written by [`forward!`](super::forward): only their signatures and
//! documentation are here.

use std::future::Future;
use std::time::Duration;

use super::forward::{IntoBlocking, forward};
use super::guards::LockGuard;
use crate::error::Result;
use crate::lock::{Fenced, LockKind};
use crate::names::owner::LockOwner;

use super::lock::Lock;
#[cfg(doc)]
use crate::error::Error;

impl<K: LockKind> Lock<K> {
    /// Runs `op` on the async handle bound to this call's owner, on the client's runtime,
    /// and turns its answer into the blocking one (an async guard becomes a blocking
    /// guard of that owner).
    fn run<T, F, Fut>(&self, op: F) -> Result<T::Blocking>
    where
        F: FnOnce(crate::Lock<K>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: IntoBlocking<K> + Send + 'static,
    {
        let owner = self.owner();
        let answer = self.shared.run(op(self.inner.with_owner(owner)))??;
        Ok(answer.into_blocking(self, owner))
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

    /// The lock's name, as given to the client (see [`crate::Lock::name`]); the Redis key
    /// of its hash is [`Lock::raw_name`].
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

    /// The lock's name as stored in Redis, through the client's
    /// [name mapper](crate::ConfigBuilder::name_mapper) (see [`crate::Lock::raw_name`]).
    ///
    /// # Redisson equivalent
    /// `RedissonObject#getRawName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// let lock = client.get_lock("orders");
    /// println!("{} is stored as {}", lock.name(), lock.raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        self.inner.raw_name()
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

    forward! {
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
        pub fn lock(&self) -> Result<()>;

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
        pub fn lock_with_lease(&self, lease: Duration) -> Result<()>;

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
        pub fn try_lock(&self) -> Result<bool>;

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
        pub fn try_lock_for(&self, wait: Duration) -> Result<bool>;

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
        pub fn try_lock_with_lease(&self, wait: Duration, lease: Duration) -> Result<bool>;

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
        pub fn acquire(&self) -> Result<LockGuard<K>>;

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
        pub fn acquire_with_lease(&self, lease: Duration) -> Result<LockGuard<K>>;

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
        pub fn try_acquire_for(&self, wait: Duration) -> Result<Option<LockGuard<K>>>;

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
        ) -> Result<Option<LockGuard<K>>>;

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
        pub fn unlock(&self) -> Result<()>;

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
        pub fn force_unlock(&self) -> Result<bool>;

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
        pub fn is_locked(&self) -> Result<bool>;

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
        pub fn is_held_by_current_thread(&self) -> Result<bool> => is_held_by_current_task;

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
        pub fn is_held_by(&self, owner: LockOwner) -> Result<bool>;

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
        pub fn hold_count(&self) -> Result<u32>;

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
        pub fn remain_time_to_live(&self) -> Result<Option<Duration>>;
    }
}

impl Lock<Fenced> {
    forward! {
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
        pub fn lock_and_get_token(&self) -> Result<u64>;

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
        pub fn lock_and_get_token_with_lease(&self, lease: Duration) -> Result<u64>;

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
        pub fn try_lock_and_get_token(&self, wait: Duration, lease: Duration) -> Result<Option<u64>>;

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
        pub fn try_lock_and_get_token_for(&self, wait: Duration) -> Result<Option<u64>>;

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
        pub fn token(&self) -> Result<Option<u64>>;
    }
}
