//! The blocking [`LockGuard<K>`]: one hold, unlocked on the client's runtime when dropped.

use std::fmt;

use super::forward::IntoBlocking;
use super::lock::Lock;
use crate::engine::hold::watch::HoldWatch;
use crate::error::Result;
use crate::lock::{LockKind, Reentrant};
use crate::names::owner::LockOwner;

#[cfg(doc)]
use super::lock::FencedLock;
#[cfg(doc)]
use crate::engine::hold::state::HoldState;
#[cfg(doc)]
use crate::error::Error;

/// One hold of a blocking [`Lock`], from [`Lock::acquire`] and its siblings.
///
/// The main way out is [`LockGuard::unlock`], which returns the result of the unlock.
/// [`LockGuard::state`] tells whether the lock still protects you ([`HoldState::Held`]),
/// may no longer ([`HoldState::AtRisk`]: the connection to its server dropped, or no
/// renewal confirmed it in time; the client is checking) or stopped ([`HoldState::Lost`]);
/// [`LockGuard::wait_at_risk`], [`LockGuard::wait_held_again`] and
/// [`LockGuard::wait_lost`] block until it changes; all of it is the guard's
/// [`HoldWatch`] ([`LockGuard::watch`]), the async guard's. See [`crate::LockGuard`] for
/// the details.
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
    /// The async guard's.
    watch: HoldWatch,
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
            Some(guard) => self.lock.shared.run(async move { guard.unlock().await })?,
            None => Ok(()),
        }
    }

    crate::engine::hold::guard_methods::blocking_hold_methods!(
        "guard",
        "# fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {\n\
         let guard = lock.acquire()?;"
    );

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
            .field("state", &self.state())
            .field("token", &self.token())
            .finish()
    }
}

impl<K: LockKind> Drop for LockGuard<K> {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            // Disarm the async guard (its own drop would release through the client's
            // chore task, which a stop of the client does not wait for) and release on the
            // runtime instead, tracked so that stopping waits for it.
            let lock = crate::LockGuard::into_lock(guard);
            lock.stop_renewal(lock.owner());
            self.lock.shared.track_in_background(lock.release_to_run());
        }
    }
}

impl<K: LockKind> Lock<K> {
    /// Wraps an async guard taken as `owner`.
    fn guard(&self, owner: LockOwner, guard: crate::LockGuard<K>) -> LockGuard<K> {
        LockGuard {
            lock: self.with_owner(owner),
            watch: guard.watch().clone(),
            guard: Some(guard),
        }
    }
}

/// An async guard is answered as a blocking guard of the handle and owner that took it.
impl<K: LockKind> IntoBlocking<K> for crate::LockGuard<K> {
    type Blocking = LockGuard<K>;

    fn into_blocking(self, lock: &Lock<K>, owner: LockOwner) -> LockGuard<K> {
        lock.guard(owner, self)
    }
}

impl<K: LockKind> IntoBlocking<K> for Option<crate::LockGuard<K>> {
    type Blocking = Option<LockGuard<K>>;

    fn into_blocking(self, lock: &Lock<K>, owner: LockOwner) -> Option<LockGuard<K>> {
        self.map(|guard| lock.guard(owner, guard))
    }
}
