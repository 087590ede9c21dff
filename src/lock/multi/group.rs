//! [`LockGroup`] itself: the type, its two aliases, how a group is made (member checks,
//! the canonical order) and its plain accessors. What a group does is in the files above
//! it: `taking.rs`, `release.rs`, `handle.rs`.

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::any_lock::{AnyLock, Member, server_of};
use super::rules::{AllMembers, GroupRule, Majority};
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

#[cfg(doc)]
use crate::lock::handle::Lock;

/// Redisson's `RedissonMultiLock`: several locks held as one, all or none.
///
/// # Examples
/// ```no_run
/// # async fn demo(a: redisson_lock::Client, b: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::MultiLock;
/// let both = MultiLock::new([a.get_lock("stock:1"), b.get_lock("stock:2")])?;
/// let guard = both.acquire().await?;
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
pub type MultiLock = LockGroup<AllMembers>;
/// Redisson's `RedissonRedLock`: one lock over independent Redis servers, held when a
/// majority of them grant it. See `docs/multi-and-redlock.md` for when (not) to use it.
///
/// # Examples
/// ```no_run
/// # async fn demo(a: redisson_lock::Client, b: redisson_lock::Client, c: redisson_lock::Client)
/// # -> redisson_lock::Result<()> {
/// use redisson_lock::RedLock;
/// let lock = RedLock::new([a.get_lock("job"), b.get_lock("job"), c.get_lock("job")])?;
/// let guard = lock.acquire().await?;
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
pub type RedLock = LockGroup<Majority>;

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
            if !seen.insert((member.member_key(), server.as_str())) {
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
            (members[a].member_key(), &servers[a]).cmp(&(members[b].member_key(), &servers[b]))
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

    /// The members' names (as given to their clients, see [`Lock::name`](crate::Lock::name)), in
    /// the order they were given.
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

    pub(super) fn check(&self) -> Result<()> {
        if self.members.iter().any(|m| m.context().is_closed()) {
            return Err(Error::Shutdown);
        }
        Ok(())
    }
}
