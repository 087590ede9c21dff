//! What a caller does with a [`LockGroup`]: take it (with or without a guard), give it
//! back, ask whether it is held. Each method is the shared algorithm (`taking.rs`,
//! `release.rs`) with the calling owner.

use std::time::Duration;

use super::group::LockGroup;
use super::guard::GroupGuard;
use super::rules::GroupRule;
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

#[cfg(doc)]
use super::group::{MultiLock, RedLock};
#[cfg(doc)]
use crate::lock::handle::Lock;

impl<R: GroupRule> LockGroup<R> {
    /// Takes the group, waiting as long as it takes; watchdog mode (each member is renewed
    /// by its client's watchdog).
    ///
    /// Redisson's loop: acquisitions ([`LockGroup::try_lock_for`]) of `members × 1.5 s`
    /// each, until one succeeds.
    ///
    /// # Errors
    /// [`Error::Shutdown`] if a member's client is shut down; [`Error::WrongType`],
    /// [`Error::NonReentrant`] (a non-reentrant member the owner already holds),
    /// [`Error::BadToken`] from a member; [`Error::Redis`] when members failed with
    /// errors so that the group cannot be had (for a [`RedLock`], more than
    /// `n - required` members). Nothing is held after an error.
    ///
    /// # Cancel safety
    /// Dropping the future releases, in the background, every member taken so far, and
    /// every member whose acquire was in flight if it took the lock.
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#lock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// group.lock().await?;
    /// group.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self) -> Result<()> {
        self.lock_forever(self.owner(), None).await.map(drop)
    }

    /// Takes the group, waiting as long as it takes; every member is held for `lease` at
    /// most (no watchdog).
    ///
    /// # Errors
    /// As [`LockGroup::lock`]; [`Error::InvalidArgument`] for a lease under 1 ms or above
    /// [`MAX_LEASE`](crate::config::MAX_LEASE); [`Error::LeaseTooShort`] if taking the members
    /// took longer than the lease (less the clock drift, for a [`RedLock`]).
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#lock(long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// group.lock_with_lease(std::time::Duration::from_secs(10)).await?;
    /// group.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<()> {
        self.lock_forever(self.owner(), Some(lease)).await.map(drop)
    }

    /// Tries every member once, at the same time, without waiting; watchdog mode.
    ///
    /// # Errors
    /// As [`LockGroup::lock`], except that members failing with Redis errors make it
    /// `Ok(false)`.
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#tryLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// if group.try_lock().await? {
    ///     group.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self) -> Result<bool> {
        self.try_take(self.owner(), Duration::ZERO, None)
            .await
            .map(|t| t.is_some())
    }

    /// Tries to take the group, waiting up to `wait`; watchdog mode once taken.
    ///
    /// # Errors
    /// As [`LockGroup::try_lock`]. Running out of time is `Ok(false)`.
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#tryLock(long waitTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// if group.try_lock_for(std::time::Duration::from_millis(500)).await? {
    ///     group.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_for(&self, wait: Duration) -> Result<bool> {
        self.try_take(self.owner(), wait, None)
            .await
            .map(|t| t.is_some())
    }

    /// Tries to take the group, waiting up to `wait`; once taken, every member is held
    /// for `lease` at most. `Ok(false)` when `wait` ran out, with nothing held.
    ///
    /// # Errors
    /// As [`LockGroup::lock_with_lease`], except that members failing with Redis errors
    /// make it `Ok(false)`.
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#tryLock(long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if group.try_lock_with_lease(Duration::from_millis(300), Duration::from_secs(10)).await? {
    ///     group.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_with_lease(&self, wait: Duration, lease: Duration) -> Result<bool> {
        self.try_take(self.owner(), wait, Some(lease))
            .await
            .map(|t| t.is_some())
    }

    /// Takes the group like [`LockGroup::lock`] and returns a guard that releases it when
    /// dropped and tells when it is lost.
    ///
    /// # Errors
    /// As [`LockGroup::lock`].
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<GroupGuard<R>> {
        let owner = self.owner();
        let taken = self.lock_forever(owner, None).await?;
        Ok(GroupGuard::new(self.with_owner(owner), taken))
    }

    /// Takes the group like [`LockGroup::lock_with_lease`] and returns a guard, whose
    /// [`lost`](GroupGuard::lost) fires when the lease ends.
    ///
    /// # Errors
    /// As [`LockGroup::lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire_with_lease(std::time::Duration::from_secs(5)).await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_with_lease(&self, lease: Duration) -> Result<GroupGuard<R>> {
        let owner = self.owner();
        let taken = self.lock_forever(owner, Some(lease)).await?;
        Ok(GroupGuard::new(self.with_owner(owner), taken))
    }

    /// Like [`LockGroup::try_lock_for`], returning a guard when the group was taken.
    ///
    /// # Errors
    /// As [`LockGroup::try_lock_for`].
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// if let Some(guard) = group.try_acquire_for(std::time::Duration::from_secs(1)).await? {
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<Option<GroupGuard<R>>> {
        let owner = self.owner();
        let taken = self.try_take(owner, wait, None).await?;
        Ok(taken.map(|t| GroupGuard::new(self.with_owner(owner), t)))
    }

    /// Like [`LockGroup::try_lock_with_lease`], returning a guard when the group was
    /// taken.
    ///
    /// # Errors
    /// As [`LockGroup::try_lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`LockGroup::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if let Some(guard) =
    ///     group.try_acquire_with_lease(Duration::from_millis(200), Duration::from_secs(10)).await?
    /// {
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<GroupGuard<R>>> {
        let owner = self.owner();
        let taken = self.try_take(owner, wait, Some(lease)).await?;
        Ok(taken.map(|t| GroupGuard::new(self.with_owner(owner), t)))
    }

    /// Gives back one hold of every member, all at the same time.
    ///
    /// A [`MultiLock`] tries every member, then reports the first failure; a [`RedLock`]
    /// ignores members that fail (their leases end them) and waits for each at most its
    /// client's response timeout (an unlock still running then is finished in the
    /// background).
    ///
    /// # Errors
    /// [`Error::Shutdown`] if a member's client is shut down (the other members are still
    /// unlocked). For a [`MultiLock`]:
    /// [`Error::NotOwner`] if the owner did not hold a member (expired, or never taken),
    /// and the other errors of [`Lock::unlock`].
    ///
    /// # Cancel safety
    /// Once started, every member's unlock is finished in the background if the future is
    /// dropped.
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#unlock()`, `RedissonRedLock#unlock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// group.lock().await?;
    /// group.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock(&self) -> Result<()> {
        let all: Vec<usize> = (0..self.members.len()).collect();
        self.unlock_members(self.owner(), &all).await
    }

    /// Whether the calling owner (this handle's owner) holds the group: every member for
    /// a [`MultiLock`], a majority for a [`RedLock`].
    ///
    /// # Errors
    /// As [`LockGroup::is_held_by`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#isHeldByCurrentThread()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// group.lock().await?;
    /// assert!(group.is_held_by_current_task().await?);
    /// # Ok(()) }
    /// ```
    pub async fn is_held_by_current_task(&self) -> Result<bool> {
        self.is_held_by(self.owner()).await
    }

    /// Whether `owner` of the members' clients holds the group: every member for a
    /// [`MultiLock`], a majority for a [`RedLock`] (members that fail to answer count as
    /// not held).
    ///
    /// # Errors
    /// [`Error::Shutdown`]; for a [`MultiLock`], the errors of [`Lock::is_held_by`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#isHeldByThread(long threadId)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let held = group.is_held_by(redisson_lock::LockOwner::from_raw(7)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn is_held_by(&self, owner: LockOwner) -> Result<bool> {
        self.check()?;
        let answers = futures::future::join_all(self.members.iter().map(|m| async move {
            let limit = m.context().config.settings.response_timeout;
            match tokio::time::timeout(limit, m.held_by(owner)).await {
                Ok(answer) => answer,
                Err(_) => Err(Error::Timeout {
                    what: "asking a member whether it is held",
                    after: limit,
                }),
            }
        }))
        .await;
        let mut held = 0;
        for answer in answers {
            match answer {
                Ok(true) => held += 1,
                Ok(false) => {}
                Err(error) if !R::UNLOCK_IGNORES_FAILURES => return Err(error),
                Err(error) => tracing::debug!(%error, "a RedLock member did not answer"),
            }
        }
        Ok(held >= self.required())
    }
}
