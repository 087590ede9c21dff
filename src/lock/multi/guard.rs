//! [`GroupGuard`]: one hold of a group, and the watchdog's view of it (when the group
//! counts as lost).

use std::fmt;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::group::LockGroup;
use super::rules::{AllMembers, GroupRule, Majority};
use super::taking::Taken;
use crate::error::Result;
use crate::owner::LockOwner;
use crate::renewal::LostSignal;

#[cfg(doc)]
use super::group::{MultiLock, RedLock};
#[cfg(doc)]
use crate::error::Error;

/// The guard of a [`MultiLock`].
pub type MultiLockGuard = GroupGuard<AllMembers>;
/// The guard of a [`RedLock`].
pub type RedLockGuard = GroupGuard<Majority>;

/// A hold of a [`MultiLock`] or [`RedLock`], from [`LockGroup::acquire`] and its siblings.
///
/// [`GroupGuard::lost`] completes when the group stops protecting you: for a
/// [`MultiLock`], when any member is lost; for a [`RedLock`], when so many members are
/// lost that fewer than a majority remain; in lease mode also when the lease (less the
/// clock drift, for a RedLock) ends. A member counts as lost as a single lock's guard
/// would (see [`LockGuard`](crate::LockGuard)): its watchdog found it gone, or could not
/// renew it for a whole lease (its server is down or out of reach), or its client was
/// shut down.
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
///     _ = guard.lost() => return Ok(()), // a member is gone: do not commit
///     _ = transfer() => {}
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the locks"]
#[clippy::has_significant_drop]
pub struct GroupGuard<R: GroupRule> {
    group: LockGroup<R>,
    /// The members held, with their loss signals and fencing tokens.
    held: Vec<(usize, Arc<LostSignal>, Option<u64>)>,
    valid_until: Option<Instant>,
    /// How many held members may be lost before the group is.
    tolerance: usize,
    armed: bool,
}

impl<R: GroupRule> GroupGuard<R> {
    pub(super) fn new(group: LockGroup<R>, taken: Taken) -> GroupGuard<R> {
        let mut held: Vec<_> = taken
            .held
            .into_iter()
            .map(|h| (h.index, h.acquired.lost, h.acquired.token))
            .collect();
        held.sort_by_key(|h| h.0);
        let tolerance = held.len().saturating_sub(group.required());
        GroupGuard {
            group,
            held,
            valid_until: taken.valid_until,
            tolerance,
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

    /// Whether the group is known to be lost (see the type's documentation).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// assert!(!guard.is_lost());
    /// # Ok(()) }
    /// ```
    pub fn is_lost(&self) -> bool {
        let lost = self.held.iter().filter(|h| h.1.is_fired()).count();
        lost > self.tolerance || self.valid_until.is_some_and(|d| Instant::now() >= d)
    }

    /// Completes when the group is lost; never, while it is held. Cancel safe, and cheap
    /// to call again.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// tokio::select! {
    ///     _ = guard.lost() => eprintln!("fewer than a majority of servers hold it"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        let members = async {
            let mut fired: FuturesUnordered<_> = self.held.iter().map(|h| h.1.fired()).collect();
            let mut count = 0;
            while fired.next().await.is_some() {
                count += 1;
                if count > self.tolerance {
                    return;
                }
            }
            std::future::pending::<()>().await
        };
        match self.valid_until {
            Some(deadline) => {
                tokio::select! {
                    _ = members => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                }
            }
            None => members.await,
        }
    }

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
        for &(index, _, token) in &self.held {
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
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl<R: GroupRule> Drop for GroupGuard<R> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let owner = self.group.owner();
        for &(index, _, _) in &self.held {
            self.group.members[index].release_later(owner);
        }
    }
}
