//! [`LockGuard`]: one hold of a lock, released when dropped, that knows when it was lost.

use std::sync::Arc;

use tokio::time::Instant;

use super::{Acquired, Lock, LockKind, Reentrant};
use crate::error::Result;
use crate::owner::LockOwner;
use crate::renewal::LostSignal;

/// One hold of a [`Lock`] of any kind, from [`Lock::acquire`] and its siblings.
///
/// The main way out is [`LockGuard::unlock`], which returns the result of the unlock.
/// While held, [`LockGuard::lost`] completes if the lock stops protecting you:
///
/// * **watchdog mode** (taken without a lease): the watchdog found the lock's owner field
///   gone at a renewal (the key expired during a long pause, was deleted, or was lost in
///   a failover), or the client was shut down;
/// * **lease mode**: the lease ran out (as measured on this machine from just before the
///   acquire was sent, so it fires no later than Redis expires the key), or the client
///   was shut down.
///
/// Work that must not run without the lock should race against `lost()`:
///
/// ```no_run
/// # async fn write_batch() {}
/// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
/// let guard = lock.acquire().await?;
/// tokio::select! {
///     _ = guard.lost() => {
///         // Someone else may hold the lock now: stop, do not commit.
///         return Ok(());
///     }
///     _ = write_batch() => {}
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
///
/// Loss is detected at the next renewal, so there is a window of up to
/// `watchdog_timeout / 3` in which work runs unprotected without knowing it; where that
/// matters, fence the writes themselves.
///
/// # Drop
/// Dropping a guard without `unlock` stops the renewal at once and releases the hold in
/// the background (a synchronous hand-off to the client's task; it never blocks). If the
/// client is gone by then, the lease ends the lock. A forgotten guard therefore never
/// keeps a lock alive forever.
#[must_use = "dropping the guard releases the lock"]
#[clippy::has_significant_drop]
pub struct LockGuard<K: LockKind = Reentrant> {
    lock: Lock<K>,
    lost: Arc<LostSignal>,
    lease_deadline: Option<Instant>,
    token: Option<u64>,
    armed: bool,
}

impl<K: LockKind> LockGuard<K> {
    pub(crate) fn new(lock: Lock<K>, acquired: Acquired) -> LockGuard<K> {
        LockGuard {
            lock,
            lost: acquired.lost,
            lease_deadline: acquired.lease_deadline,
            token: acquired.token,
            armed: true,
        }
    }

    /// The fencing token of this acquisition: `Some` for a guard of a
    /// [`FencedLock`](crate::FencedLock), `None` for other kinds. Pass it to the
    /// protected resource with every write (see [`crate::fencing`]).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let guard = client.get_fenced_lock("ledger").acquire().await?;
    /// println!("writing with token {:?}", guard.token());
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn token(&self) -> Option<u64> {
        self.token
    }

    /// Gives back this hold (see [`Lock::unlock`]).
    ///
    /// # Errors
    /// [`Error::NotOwner`](crate::Error::NotOwner) if the lock was lost meanwhile; the
    /// other errors of [`Lock::unlock`].
    ///
    /// # Cancel safety
    /// Once started, the unlock is finished in the background if the future is dropped.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock(mut self) -> Result<()> {
        self.armed = false;
        self.lock.unlock().await
    }

    /// Whether the lock is known to be lost (see the type's documentation).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// assert!(!guard.is_lost());
    /// # Ok(()) }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.lost.is_fired() || self.lease_deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Completes when the lock is lost; never, while it is held. Cancel safe, and cheap
    /// to call again, so it fits a `tokio::select!` loop.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// tokio::select! {
    ///     _ = guard.lost() => eprintln!("lost"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        match self.lease_deadline {
            Some(deadline) => {
                tokio::select! {
                    _ = self.lost.fired() => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                }
            }
            None => self.lost.fired().await,
        }
    }

    /// The owner this guard holds the lock as.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// println!("held as {}", guard.owner());
    /// # Ok(()) }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.lock.owner()
    }

    /// The lock this guard holds, acting as the guard's owner. An associated function, so
    /// that it never shadows a method.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// let held = redisson_lock::LockGuard::lock(&guard);
    /// assert_eq!(held.hold_count().await?, 1);
    /// # Ok(()) }
    /// ```
    pub fn lock(this: &Self) -> &Lock<K> {
        &this.lock
    }

    /// Ends the guard without unlocking: the hold (and its renewal, in watchdog mode)
    /// stays until the returned handle, which acts as the guard's owner, unlocks it. For
    /// handing a lock over to code that does not use guards.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// let handle = redisson_lock::LockGuard::into_lock(guard);
    /// tokio::spawn(async move { handle.unlock().await }).await.unwrap()?;
    /// # Ok(()) }
    /// ```
    pub fn into_lock(mut this: Self) -> Lock<K> {
        this.armed = false;
        this.lock.clone()
    }
}

impl<K: LockKind> std::fmt::Debug for LockGuard<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("lock", &self.lock)
            .field("lost", &self.is_lost())
            .field("token", &self.token)
            .finish()
    }
}

impl<K: LockKind> Drop for LockGuard<K> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.lock.stop_renewal(self.lock.owner());
        self.lock.release_in_background();
    }
}
