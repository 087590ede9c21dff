//! [`LockGroup`]: the group's handle, its aliases and its public methods.

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::any_lock::{server_of, AnyLock, Member};
use super::guard::GroupGuard;
use super::rules::{AllMembers, GroupRule, Majority};
use crate::error::{Error, Result};
use crate::lock::UnlockReply;
use crate::owner::LockOwner;

#[cfg(doc)]
use crate::lock::Lock;

/// Redisson's `RedissonMultiLock`: several locks held as one, all or none.
pub type MultiLock = LockGroup<AllMembers>;
/// Redisson's `RedissonRedLock`: one lock over independent Redis servers, held when a
/// majority of them grant it. See `docs/multi-and-redlock.md` for when (not) to use it.
pub type RedLock = LockGroup<Majority>;
/// The guard of a [`MultiLock`].
pub type MultiLockGuard = GroupGuard<AllMembers>;
/// The guard of a [`RedLock`].
pub type RedLockGuard = GroupGuard<Majority>;

/// Several locks, of any kinds and on any clients, taken and released as one by one owner.
/// Use it through its two rules: [`MultiLock`] (every member) and [`RedLock`] (a
/// majority).
///
/// The members are [`Lock`]s of any kind (reentrant, fair, read, write, fenced, spin,
/// non-reentrant), from one client or several on different servers. The group acts as one
/// owner (the calling task, or the one set with [`LockGroup::with_owner`]) in every
/// member; what a member's hash holds is exactly what that lock alone would hold, so Java
/// clients see ordinary locks.
///
/// # How an acquisition runs
/// 1. Every member is tried once, all at the same time (members on one client go out
///    back to back on its connection, in one round trip; members on other servers in
///    parallel). If enough are taken, done.
/// 2. Otherwise everything taken is released, and the members are taken one at a time in
///    one canonical order (name, then server), each waited for (on its unlock channel) up
///    to the rule's per-member wait; a member that cannot be had (waited out, or an
///    error) counts as failed. Too many failures release everything and start again at
///    step 1, while the wait lasts.
///
/// With a lease and a wait, members are taken with a temporary lease of twice the wait
/// (so none expires while the others are taken), then each hash gets the real lease with
/// `PEXPIRE`, as Redisson does.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// use redisson_lock::MultiLock;
/// // Transfer between two accounts: hold both, or neither.
/// let both = MultiLock::new([client.get_lock("account:1"), client.get_lock("account:2")])?;
/// if both.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10)).await? {
///     // ... move the money ...
///     both.unlock().await?;
/// }
/// # Ok(()) }
/// ```
pub struct LockGroup<R: GroupRule> {
    pub(super) members: Arc<[Arc<dyn Member>]>,
    /// Member indices in the canonical order of the waiting phase.
    pub(super) order: Arc<[usize]>,
    pub(super) owner: Option<LockOwner>,
    pub(super) rule: PhantomData<R>,
}

impl<R: GroupRule> Clone for LockGroup<R> {
    fn clone(&self) -> Self {
        LockGroup {
            members: self.members.clone(),
            order: self.order.clone(),
            owner: self.owner,
            rule: PhantomData,
        }
    }
}

impl<R: GroupRule> fmt::Debug for LockGroup<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGroup")
            .field("rule", &R::NAME)
            .field("members", &self.members)
            .field("owner", &self.owner)
            .finish()
    }
}

impl<R: GroupRule> LockGroup<R> {
    /// A group over `locks`; no I/O.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no locks (Redisson's text, "Lock objects are not
    /// defined"); [`Error::DuplicateMember`] if one lock (same name on the same server
    /// and database) is listed twice, whatever its kinds; [`Error::Shutdown`] if a
    /// member's client was shut down.
    ///
    /// # Redisson equivalent
    /// `new RedissonMultiLock(locks...)`, `new RedissonRedLock(locks...)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(a: redisson_lock::Client, b: redisson_lock::Client, c: redisson_lock::Client)
    /// # -> redisson_lock::Result<()> {
    /// use redisson_lock::RedLock;
    /// let lock = RedLock::new([a.get_lock("job"), b.get_lock("job"), c.get_lock("job")])?;
    /// # Ok(()) }
    /// ```
    pub fn new<I>(locks: I) -> Result<LockGroup<R>>
    where
        I: IntoIterator,
        I::Item: Into<AnyLock>,
    {
        let members: Vec<Arc<dyn Member>> = locks.into_iter().map(|l| l.into().member).collect();
        if members.is_empty() {
            return Err(Error::invalid("Lock objects are not defined"));
        }
        if members.iter().any(|m| m.context().is_closed()) {
            return Err(Error::Shutdown);
        }
        let servers: Vec<String> = members.iter().map(|m| server_of(m.context())).collect();
        let mut seen = HashSet::new();
        for (member, server) in members.iter().zip(&servers) {
            if !seen.insert((member.member_name(), server.as_str())) {
                return Err(Error::DuplicateMember {
                    name: member.member_name().to_owned(),
                });
            }
        }
        if R::UNLOCK_IGNORES_FAILURES
            && servers.iter().collect::<HashSet<_>>().len() < servers.len()
        {
            tracing::warn!("a RedLock has several members on one server: they are not independent");
        }
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by(|&a, &b| {
            (members[a].member_name(), &servers[a]).cmp(&(members[b].member_name(), &servers[b]))
        });
        Ok(LockGroup {
            members: members.into(),
            order: order.into(),
            owner: None,
            rule: PhantomData,
        })
    }

    /// A handle on the same group that acts as `owner` in every member, instead of the
    /// calling task (see [`Lock::with_owner`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::MultiLock) {
    /// use redisson_lock::LockOwner;
    /// let job = group.with_owner(LockOwner::from_raw(7));
    /// assert_eq!(job.owner(), LockOwner::from_raw(7));
    /// # }
    /// ```
    pub fn with_owner(&self, owner: LockOwner) -> LockGroup<R> {
        LockGroup {
            owner: Some(owner),
            ..self.clone()
        }
    }

    /// The owner this handle acts as right now.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::MultiLock) {
    /// println!("{}", group.owner());
    /// # }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.owner.unwrap_or_else(LockOwner::current)
    }

    /// The members' names, in the order they were given.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let group = redisson_lock::MultiLock::new([client.get_lock("a"), client.get_lock("b")])?;
    /// assert_eq!(group.names().collect::<Vec<_>>(), ["a", "b"]);
    /// # Ok(()) }
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.members.iter().map(|m| m.member_name())
    }

    /// How many members must be held: all of them for a [`MultiLock`], `n / 2 + 1` for
    /// a [`RedLock`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::RedLock) {
    /// println!("needs {} members", group.required());
    /// # }
    /// ```
    pub fn required(&self) -> usize {
        R::required(self.members.len())
    }

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
    /// [`MAX_LEASE`](crate::MAX_LEASE); [`Error::LeaseTooShort`] if taking the members
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
            let limit = m.context().config.response_timeout;
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

    pub(super) fn check(&self) -> Result<()> {
        if self.members.iter().any(|m| m.context().is_closed()) {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    /// Unlocks `indices` as `owner`, all at the same time.
    pub(super) async fn unlock_members(&self, owner: LockOwner, indices: &[usize]) -> Result<()> {
        let replies = futures::future::join_all(indices.iter().map(|&index| {
            let member = &self.members[index];
            async move {
                let unlock = member.unlock_as_member(owner);
                if R::UNLOCK_IGNORES_FAILURES {
                    // Bounded: a member on a dead server would take its retries' time. The
                    // unlock goes on in the background.
                    let limit = member.context().config.response_timeout;
                    match tokio::time::timeout(limit, unlock).await {
                        Ok(reply) => (member, reply),
                        Err(_) => (
                            member,
                            Err(Error::Timeout {
                                what: "unlocking a RedLock member",
                                after: limit,
                            }),
                        ),
                    }
                } else {
                    (member, unlock.await)
                }
            }
        }))
        .await;
        let mut first = None;
        let mut shut_down = false;
        for (member, reply) in replies {
            let error = match reply {
                Ok(UnlockReply::StillHeld | UnlockReply::Released | UnlockReply::Handed) => {
                    continue
                }
                Ok(UnlockReply::NotOwner) => Error::NotOwner {
                    client_id: member.context().id.clone(),
                    owner,
                },
                Err(error) => error,
            };
            shut_down |= matches!(error, Error::Shutdown);
            if R::UNLOCK_IGNORES_FAILURES {
                tracing::debug!(lock = member.member_name(), %error, "RedLock member not unlocked");
            } else {
                first = first.or(Some(error));
            }
        }
        // A shut-down client says more than the other members' answers.
        if shut_down {
            return Err(Error::Shutdown);
        }
        first.map_or(Ok(()), Err)
    }
}
