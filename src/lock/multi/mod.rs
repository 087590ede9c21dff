//! [`LockGroup`]: several locks taken and released as one, by one owner: the multi-lock
//! ([`MultiLock`], every member) and Redlock ([`RedLock`], a majority of members on
//! independent servers).
//!
//! A group has no keys of its own: on the wire it is its members' own acquire and release
//! scripts, all as one owner, plus a final `PEXPIRE` of each member's hash when a lease
//! replaces the temporary one (Redisson's `RedissonMultiLock`, protocol §14.1). A Java
//! `RedissonMultiLock` or `RedissonRedLock` over the same names contends with it.
//!
//! Invariants:
//! * All or nothing: an acquisition that fails (or returns an error) has released every
//!   member it took before it returns; one whose future is dropped releases them in the
//!   background, each exactly once. A member whose reply is still outstanding when the
//!   outcome is decided is finished in the background, and released if it took the lock.
//! * Never a deadlock between groups: an acquisition first tries every member once, at the
//!   same time and without waiting; only if that fails does it release everything and then
//!   wait for members one at a time, in one canonical order (name, then server), holding
//!   only members earlier in that order. No waiter ever waits for a member while holding
//!   one that comes later, so no cycle of waiters can form, whatever order the members
//!   were listed in.
//! * The algorithm is written once; [`AllMembers`] and [`Majority`] change only how many
//!   members must be held, how long one member may be waited for, and the clock drift.
//!
//! The module's files, one job each:
//! * `rules.rs`: what differs between [`MultiLock`] and [`RedLock`] ([`AllMembers`],
//!   [`Majority`]): quorum, per-member wait, clock drift, unlock failures.
//! * `any_lock.rs`: [`AnyLock`], a member of any kind behind the `Member` trait.
//! * `group.rs`: the [`LockGroup`] type and its aliases, how a group is made (duplicate
//!   members, the canonical order), its accessors.
//! * `taking.rs`: one acquisition: every member at once, then one at a time in the
//!   canonical order; temporary leases; all or nothing.
//! * `release.rs`: giving the members back, all at once, with the rule's failure counting.
//! * `guard.rs`: [`GroupGuard`], a hold of the group, and when the group counts as lost.
//! * `handle.rs`: the public methods that take and give back the group (`lock`,
//!   `try_lock*`, `acquire*`, `unlock`, `is_held_by*`).
//!
//! Each file's code uses only the files listed before it (doc links aside).

mod any_lock;
mod group;
mod guard;
mod handle;
mod release;
mod rules;
mod taking;

pub use any_lock::AnyLock;
pub use group::{LockGroup, MultiLock, RedLock};
pub use guard::{GroupGuard, MultiLockGuard, RedLockGuard};
pub use rules::{AllMembers, GroupRule, Majority};

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>() {}

    #[allow(dead_code, clippy::let_underscore_future)]
    fn futures_are_send(group: MultiLock, red: RedLock, guard: MultiLockGuard) {
        sync::<MultiLock>();
        sync::<RedLock>();
        sync::<AnyLock>();
        sync::<MultiLockGuard>();
        sync::<RedLockGuard>();
        let d = Duration::from_secs(1);
        send(&group.lock());
        send(&group.lock_with_lease(d));
        send(&group.try_lock());
        send(&group.try_lock_for(d));
        send(&group.try_lock_with_lease(d, d));
        send(&group.unlock());
        send(&group.is_held_by_current_task());
        send(&group.acquire());
        send(&red.try_acquire_with_lease(d, d));
        send(&red.acquire_with_lease(d));
        send(&red.try_acquire_for(d));
        send(&guard.lost());
        send(&guard.held_again());
        send(&guard.unlock());
    }
}
