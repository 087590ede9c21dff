//! [`LockGuard`]: one hold of a lock, released when dropped, that knows when the lock is
//! at risk and when it was lost.

use super::acquiring::Acquired;
use super::handle::Lock;
use super::kind::LockKind;
use super::reentrant::Reentrant;
use crate::engine::hold::watch::HoldWatch;
use crate::error::Result;
use crate::names::owner::LockOwner;

#[cfg(doc)]
use crate::engine::hold::state::HoldState;

/// One hold of a [`Lock`] of any kind, from [`Lock::acquire`] and its siblings.
///
/// The main way out is [`LockGuard::unlock`], which returns the result of the unlock.
/// While held, the guard tells how far the lock still protects you, as a [`HoldState`]
/// ([`state`](LockGuard::state), [`state_changes`](LockGuard::state_changes); all of it
/// is its [`HoldWatch`], [`watch`](LockGuard::watch), which can be cloned and handed to
/// another task):
///
/// * [`at_risk`](LockGuard::at_risk) completes as soon as this client can no longer be
///   sure it holds the lock, and always before the lock can have expired in Redis: the
///   connection serving the lock's key dropped (a restart, a failover, a killed
///   connection), or no renewal (or re-entry) confirmed the lease for its whole length
///   less a margin ([`ConfigBuilder::validity_margin`](crate::ConfigBuilder::validity_margin)):
///   the server is paused or out of reach, or, with an explicit lease, the work is
///   outliving it. The client then checks the lock in Redis as soon as it can: still
///   held → `Held` again; gone → `Lost`.
/// * [`lost`](LockGuard::lost) completes when the lock is gone, or can no longer be
///   counted on: its owner field was found gone (the key expired during a long pause,
///   was deleted, or was lost in a restart or failover), the lease ran out without a
///   confirmed renewal, or the client was shut down.
///
/// Work that must not run without the lock should stop at `at_risk()`, and may go on if
/// the state comes back to `Held`:
///
/// ```no_run
/// # async fn write_batch() {}
/// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
/// let guard = lock.acquire().await?;
/// tokio::select! {
///     _ = guard.at_risk() => {
///         // Someone else may soon hold the lock: stop, do not commit.
///         return Ok(());
///     }
///     _ = write_batch() => {}
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
///
/// One hole remains, as in every lock service: a pause of *this* process (a long GC-like
/// stall, a suspended VM) past the lease is seen by nobody in time. Fence the writes
/// themselves for that ([`FencedWriter`](crate::client::fencing::FencedWriter)). The states, their
/// guarantees and the sequences of restart, failover, partition and pause are in
/// `docs/reliability.md`.
///
/// # Drop
/// Dropping a guard without `unlock` stops the renewal at once and releases the hold in
/// the background (a synchronous hand-off to the client's task; it never blocks). The
/// owner's next `lock`/`try_lock`/`unlock` on that lock waits for that release, as after
/// an `unlock`. If the client is gone by then, the lease ends the lock. A forgotten guard
/// therefore never keeps a lock alive forever.
#[must_use = "dropping the guard releases the lock"]
#[clippy::has_significant_drop]
pub struct LockGuard<K: LockKind = Reentrant> {
    lock: Lock<K>,
    /// The hold's signal, and the end of the guard's lease if it has one.
    watch: HoldWatch,
    token: Option<u64>,
    armed: bool,
}

impl<K: LockKind> LockGuard<K> {
    pub(crate) fn new(lock: Lock<K>, acquired: Acquired) -> LockGuard<K> {
        LockGuard {
            lock,
            watch: HoldWatch::one(acquired.signal, acquired.lease_deadline),
            token: acquired.token,
            armed: true,
        }
    }

    /// The fencing token of this acquisition: `Some` for a guard of a
    /// [`FencedLock`](crate::FencedLock), `None` for other kinds. Pass it to the
    /// protected resource with every write (see [`crate::client::fencing`]).
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

    crate::engine::hold::guard_methods::async_hold_methods!(
        "guard",
        "# async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {\n\
         let guard = lock.acquire().await?;"
    );

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
            .field("state", &self.state())
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
