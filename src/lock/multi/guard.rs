//! [`GroupGuard`]: one hold of a group, and its state from its members' (when the group
//! counts as at risk, and as lost).

use std::fmt;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::group::LockGroup;
use super::rules::{AllMembers, GroupRule, Majority};
use super::taking::Taken;
use crate::error::Result;
use crate::hold::state::{HoldSignal, HoldState};
use crate::names::owner::LockOwner;

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
/// The group's [`HoldState`] follows its members' (each as a single lock's guard would
/// see it, see [`LockGuard`](crate::LockGuard)):
///
/// * **at risk** ([`GroupGuard::at_risk`]) as soon as the group may stop protecting you:
///   for a [`MultiLock`], when any member is at risk; for a [`RedLock`], when so many
///   members are at risk or lost that a majority is no longer sure;
/// * **lost** ([`GroupGuard::lost`]) when it has: for a [`MultiLock`], any member lost;
///   for a [`RedLock`], fewer than a majority left; in lease mode also when the lease
///   (less the clock drift, for a RedLock) ends;
/// * **held** again when the members that were at risk are confirmed.
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
    /// The members held, with their state signals and fencing tokens.
    held: Vec<(usize, Arc<HoldSignal>, Option<u64>)>,
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
            .map(|h| (h.index, h.acquired.signal, h.acquired.token))
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

    fn view(&self) -> GroupView {
        GroupView {
            members: self.held.iter().map(|h| h.1.clone()).collect(),
            tolerance: self.tolerance,
            valid_until: self.valid_until,
        }
    }

    /// The group's state now (see the type's documentation).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// assert_eq!(guard.state(), redisson_lock::HoldState::Held);
    /// # Ok(()) }
    /// ```
    pub fn state(&self) -> HoldState {
        self.view().state()
    }

    /// A receiver of the group's state changes (a `tokio::sync::watch`), fed by a small
    /// task that ends when every receiver is dropped or the group is lost.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// let mut changes = guard.state_changes();
    /// changes.changed().await.ok();
    /// eprintln!("the group is now {}", *changes.borrow());
    /// # Ok(()) }
    /// ```
    pub fn state_changes(&self) -> tokio::sync::watch::Receiver<HoldState> {
        let view = self.view();
        let (sender, receiver) = tokio::sync::watch::channel(view.state());
        tokio::spawn(async move {
            loop {
                let current = *sender.borrow();
                if current == HoldState::Lost {
                    return;
                }
                tokio::select! {
                    state = view.until(|s| s != current) => {
                        sender.send_replace(state);
                    }
                    _ = sender.closed() => return,
                }
            }
        });
        receiver
    }

    /// Completes as soon as the group is no longer surely held (at risk, or lost), with
    /// that state. Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(group: redisson_lock::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire().await?;
    /// tokio::select! {
    ///     state = guard.at_risk() => eprintln!("stopping: the group is {state}"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn at_risk(&self) -> HoldState {
        self.view().until(|s| s != HoldState::Held).await
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
        self.state() == HoldState::Lost
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
        self.view().until(|s| s == HoldState::Lost).await;
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
        for &(index, _, _) in &self.held {
            self.group.members[index].release_later(owner);
        }
    }
}

/// The members' signals and the group's rule, apart from the guard (for a task).
struct GroupView {
    members: Vec<Arc<HoldSignal>>,
    /// How many members may be lost (or at risk) before the group is.
    tolerance: usize,
    valid_until: Option<Instant>,
}

impl GroupView {
    fn state(&self) -> HoldState {
        if self.valid_until.is_some_and(|d| Instant::now() >= d) {
            return HoldState::Lost;
        }
        let (mut lost, mut at_risk) = (0, 0);
        for member in &self.members {
            match member.state() {
                HoldState::Lost => lost += 1,
                HoldState::AtRisk => at_risk += 1,
                _ => {}
            }
        }
        if lost > self.tolerance {
            HoldState::Lost
        } else if lost + at_risk > self.tolerance {
            HoldState::AtRisk
        } else {
            HoldState::Held
        }
    }

    /// Completes once the group's state satisfies `done`, with that state.
    async fn until(&self, done: impl Fn(HoldState) -> bool) -> HoldState {
        loop {
            let state = self.state();
            if done(state) {
                return state;
            }
            // Wait for any member to change, or for the group's lease to end.
            let mut changes: FuturesUnordered<_> = self
                .members
                .iter()
                .map(|m| {
                    let now = m.state();
                    async move { m.until(|s| s != now).await }
                })
                .collect();
            match self.valid_until {
                Some(deadline) => {
                    tokio::select! {
                        _ = changes.next() => {}
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => {
                    if changes.next().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }
}
