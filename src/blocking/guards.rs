//! The blocking [`LockGuard<K>`]: one hold, unlocked on the client's runtime when dropped.

use std::fmt;

use super::forward::IntoBlocking;
use super::Lock;
use crate::error::Result;
use crate::hold::state::HoldState;
use crate::lock::{LockKind, Reentrant};
use crate::names::owner::LockOwner;

#[cfg(doc)]
use super::FencedLock;
#[cfg(doc)]
use crate::error::Error;

/// One hold of a blocking [`Lock`], from [`Lock::acquire`] and its siblings.
///
/// The main way out is [`LockGuard::unlock`], which returns the result of the unlock.
/// [`LockGuard::state`] tells whether the lock still protects you ([`HoldState::Held`]),
/// may no longer ([`HoldState::AtRisk`]: the connection to its server dropped, or no
/// renewal confirmed it in time; the client is checking) or stopped ([`HoldState::Lost`]);
/// [`LockGuard::wait_at_risk`] blocks until it is no longer held. See
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
            Some(guard) => self.lock.shared.run(async move { guard.unlock().await })?,
            None => Ok(()),
        }
    }

    /// The hold's state now (see [`crate::LockGuard::state`]); `Lost` once unlocked.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// assert_eq!(guard.state(), redisson_lock::HoldState::Held);
    /// # Ok(()) }
    /// ```
    pub fn state(&self) -> HoldState {
        self.guard
            .as_ref()
            .map_or(HoldState::Lost, crate::LockGuard::state)
    }

    /// A receiver of the hold's state changes (see [`crate::LockGuard::state_changes`]);
    /// from blocking code, poll it with `has_changed()` and `borrow()`. `None` once
    /// unlocked.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// let changes = guard.state_changes().expect("held");
    /// if changes.has_changed().unwrap_or(true) {
    ///     eprintln!("now {}", *changes.borrow());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn state_changes(&self) -> Option<tokio::sync::watch::Receiver<HoldState>> {
        self.guard.as_ref().map(crate::LockGuard::state_changes)
    }

    /// Blocks until the hold is no longer surely held (at risk or lost) or `timeout`
    /// passes; returns the state it reached, or `None` when still held at the timeout.
    ///
    /// # Errors
    /// [`Error::Shutdown`](crate::Error::Shutdown) if the client's runtime is gone.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// if let Some(state) = guard.wait_at_risk(std::time::Duration::from_millis(100))? {
    ///     eprintln!("stop: the lock is {state}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn wait_at_risk(&self, timeout: std::time::Duration) -> Result<Option<HoldState>> {
        let Some(guard) = self.guard.as_ref() else {
            return Ok(Some(HoldState::Lost));
        };
        let changes = guard.state_changes();
        let state = guard.state();
        if state != HoldState::Held {
            return Ok(Some(state));
        }
        self.lock.shared.run(async move {
            let mut changes = changes;
            let wait = async {
                match changes.wait_for(|s| *s != HoldState::Held).await {
                    Ok(state) => *state,
                    Err(_) => HoldState::Lost,
                }
            };
            tokio::time::timeout(timeout, wait).await.ok()
        })
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
        self.guard.as_ref().is_none_or(crate::LockGuard::is_lost)
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

impl<K: LockKind> Lock<K> {
    /// Wraps an async guard taken as `owner`.
    fn guard(&self, owner: LockOwner, guard: crate::LockGuard<K>) -> LockGuard<K> {
        LockGuard {
            lock: self.with_owner(owner),
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
