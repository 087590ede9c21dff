//! [`GroupGuard`]: one hold of a group, and its state from its members' (when the group
//! counts as at risk, and as lost).

use std::fmt;

use super::group::LockGroup;
use super::rules::{AllMembers, GroupRule, Majority};
use super::taking::Taken;
use crate::engine::hold::watch::HoldWatch;
use crate::error::Result;
use crate::names::owner::LockOwner;

#[cfg(doc)]
use super::group::{MultiLock, RedLock};
#[cfg(doc)]
use crate::engine::hold::state::HoldState;
#[cfg(doc)]
use crate::error::Error;

/// The guard of a [`MultiLock`].
///
/// # Examples
/// ```no_run
/// # async fn demo(a: redisson_lock::Client, b: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::kinds::MultiLockGuard;
/// use redisson_lock::MultiLock;
/// let both = MultiLock::new([a.get_lock("stock:1"), b.get_lock("stock:2")])?;
/// let guard: MultiLockGuard = both.acquire().await?;
/// # Ok(()) }
/// ```
pub type MultiLockGuard = GroupGuard<AllMembers>;
/// The guard of a [`RedLock`].
///
/// # Examples
/// ```no_run
/// # async fn demo(a: redisson_lock::Client, b: redisson_lock::Client, c: redisson_lock::Client)
/// # -> redisson_lock::Result<()> {
/// use redisson_lock::kinds::RedLockGuard;
/// use redisson_lock::RedLock;
/// let lock = RedLock::new([a.get_lock("job"), b.get_lock("job"), c.get_lock("job")])?;
/// let guard: RedLockGuard = lock.acquire().await?;
/// # Ok(()) }
/// ```
pub type RedLockGuard = GroupGuard<Majority>;

/// A hold of a [`MultiLock`] or [`RedLock`], from [`LockGroup::acquire`] and its siblings.
///
/// The group's [`HoldState`] follows its members' (each as a single lock's guard would
/// see it, see [`LockGuard`](crate::LockGuard)):
///
/// * **at risk** ([`GroupGuard::at_risk`]) as soon as the group may stop protecting you:
///   for a [`MultiLock`], when any member is at risk; for a [`RedLock`], when so many
///   members are at risk or lost that a majority is no longer sure;
/// * **lost** ([`GroupGuard::lost`]) when it has: for a [`MultiLock`], any member lost;
///   for a [`RedLock`], fewer than a majority left; in lease mode also when the lease
///   (less the clock drift, for a RedLock) ends;
/// * **held** again ([`GroupGuard::held_again`]) when the members that were at risk are
///   confirmed.
///
/// All of it is the guard's [`HoldWatch`] ([`GroupGuard::watch`]), which can be cloned and
/// handed to another task or thread.
///
/// # Drop
/// Dropping the guard without [`GroupGuard::unlock`] stops every member's renewal at once
/// and releases the members in the background (see [`LockGuard`](crate::LockGuard)).
///
/// # Examples
/// ```no_run
/// # async fn transfer() {}
/// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
/// let guard = group.acquire().await?;
/// tokio::select! {
///     _ = guard.at_risk() => return Ok(()), // a member may be gone: do not commit
///     _ = transfer() => {}
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the locks"]
#[clippy::has_significant_drop]
pub struct GroupGuard<R: GroupRule> {
    group: LockGroup<R>,
    /// The members held (their indices), with their fencing tokens.
    held: Vec<(usize, Option<u64>)>,
    /// The held members' signals under the group's rule.
    watch: HoldWatch,
    armed: bool,
}

impl<R: GroupRule> GroupGuard<R> {
    pub(super) fn new(group: LockGroup<R>, taken: Taken) -> GroupGuard<R> {
        let mut taken_members = taken.held;
        taken_members.sort_by_key(|h| h.index);
        let tolerance = taken_members.len().saturating_sub(group.required());
        let (held, signals): (Vec<_>, Vec<_>) = taken_members
            .into_iter()
            .map(|h| ((h.index, h.acquired.token), h.acquired.signal))
            .unzip();
        GroupGuard {
            group,
            held,
            watch: HoldWatch::group(signals, tolerance, taken.valid_until),
            armed: true,
        }
    }

    /// Gives back one hold of every member this guard holds (see [`LockGroup::unlock`]).
    ///
    /// # Errors
    /// As [`LockGroup::unlock`]: for a [`MultiLock`], [`Error::NotOwner`] if a member was
    /// lost meanwhile; a [`RedLock`] ignores members that fail.
    ///
    /// # Cancel safety
    /// Once started, every member's unlock is finished in the background if the future is
    /// dropped.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock(mut self) -> Result<()> {
        self.armed = false;
        let indices: Vec<usize> = self.held.iter().map(|h| h.0).collect();
        self.group
            .unlock_members(self.group.owner(), &indices)
            .await
    }

    crate::engine::hold::guard_methods::async_hold_methods!(
        "guard",
        "# async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {\n\
         let guard = group.acquire().await?;"
    );

    /// The owner this guard holds the members as.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// println!("held as {}", guard.owner());
    /// # Ok(()) }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.group.owner()
    }

    /// How many members this guard holds (all of them for a [`MultiLock`]; at least a
    /// majority for a [`RedLock`]).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// assert!(guard.held_count() >= group.required());
    /// # Ok(()) }
    /// ```
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// The members this guard holds: their indices in the order the members were given
    /// to the group (see [`LockGroup::names`]), ascending. Every member for a
    /// [`MultiLock`]; for a [`RedLock`], the majority (or more) that granted the lock:
    /// a member that was busy, failed, or answered too late is not among them (one that
    /// answered too late was released again).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// let names: Vec<&str> = group.names().collect();
    /// for index in guard.members() {
    ///     println!("holding {} (member {index})", names[index]);
    /// }
    /// assert!(guard.members().len() >= group.required());
    /// # Ok(()) }
    /// ```
    pub fn members(&self) -> Vec<usize> {
        self.held.iter().map(|&(index, _)| index).collect()
    }

    /// The fencing token of each member, in the order the members were given: `Some` for
    /// a held [`FencedLock`](crate::FencedLock) member, `None` otherwise.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// println!("tokens {:?}", guard.tokens());
    /// # Ok(()) }
    /// ```
    pub fn tokens(&self) -> Vec<Option<u64>> {
        let mut tokens = vec![None; self.group.members.len()];
        for &(index, token) in &self.held {
            tokens[index] = token;
        }
        tokens
    }
}

impl<R: GroupRule> fmt::Debug for GroupGuard<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupGuard")
            .field("group", &self.group)
            .field("held", &self.held.len())
            .field("state", &self.state())
            .finish()
    }
}

impl<R: GroupRule> Drop for GroupGuard<R> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let owner = self.group.owner();
        for &(index, _) in &self.held {
            self.group.members[index].release_later(owner);
        }
    }
}
