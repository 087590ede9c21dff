//! The two rules of a group: what differs between [`MultiLock`](crate::MultiLock) and
//! [`RedLock`](crate::RedLock). The algorithm (`taking.rs`) is written once and asks its
//! rule how many members must be held, how long one member may be waited for, how much
//! clock drift to take off a lease, and whether unlock ignores members that fail.

use std::time::Duration;

/// How many members a [`LockGroup`](crate::kinds::LockGroup) needs: [`AllMembers`] ([`MultiLock`](crate::MultiLock)) or [`Majority`]
/// ([`RedLock`](crate::RedLock)). Sealed.
///
/// # Examples
/// ```
/// use redisson_lock::kinds::{GroupRule, LockGroup};
///
/// // Code for a MultiLock and a RedLock alike.
/// fn members<R: GroupRule>(group: &LockGroup<R>) -> Vec<String> {
///     group.names().map(str::to_owned).collect()
/// }
/// ```
pub trait GroupRule: rule::Rule {}

impl<R: rule::Rule> GroupRule for R {}

// Sealed: nothing outside the crate can name `Rule`.
#[allow(unreachable_pub)]
mod rule {
    use std::time::Duration;

    /// What a rule tells the shared algorithm.
    pub trait Rule: Copy + Send + Sync + std::fmt::Debug + 'static {
        const NAME: &'static str;
        /// How many of `n` members must be held.
        fn required(n: usize) -> usize;
        /// How long one member may be waited for, out of `remaining` (Redisson's
        /// `calcLockWaitTime`).
        fn member_wait(remaining: Duration, n: usize) -> Duration;
        /// The clock drift taken off a lease's validity.
        fn drift(lease: Duration) -> Duration;
        /// Whether unlock ignores members that fail.
        const UNLOCK_IGNORES_FAILURES: bool;
    }
}

/// The multi-lock rule: every member must be held (Redisson's `RedissonMultiLock`).
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::kinds::{AllMembers, LockGroup};
/// let group: LockGroup<AllMembers> = LockGroup::new([client.get_lock("a"), client.get_lock("b")])?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct AllMembers;

impl rule::Rule for AllMembers {
    const NAME: &'static str = "multi";
    const UNLOCK_IGNORES_FAILURES: bool = false;

    fn required(n: usize) -> usize {
        n
    }

    fn member_wait(remaining: Duration, _n: usize) -> Duration {
        remaining
    }

    fn drift(_lease: Duration) -> Duration {
        Duration::ZERO
    }
}

/// The Redlock rule: a majority (`n / 2 + 1`) of members must be held (Redisson's
/// `RedissonRedLock`).
///
/// # Examples
/// ```no_run
/// # fn demo(a: redisson_lock::RLock, b: redisson_lock::RLock, c: redisson_lock::RLock)
/// # -> redisson_lock::Result<()> {
/// use redisson_lock::kinds::{LockGroup, Majority};
/// let group: LockGroup<Majority> = LockGroup::new([a, b, c])?;
/// assert_eq!(group.required(), 2);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Majority;

impl rule::Rule for Majority {
    const NAME: &'static str = "redlock";
    const UNLOCK_IGNORES_FAILURES: bool = true;

    fn required(n: usize) -> usize {
        n / 2 + 1
    }

    fn member_wait(remaining: Duration, n: usize) -> Duration {
        (remaining / n.max(1) as u32).max(Duration::from_millis(1))
    }

    /// The Redlock algorithm's allowance: 1 % of the lease plus 2 ms.
    fn drift(lease: Duration) -> Duration {
        lease / 100 + Duration::from_millis(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(<Majority as rule::Rule>::required(3), 2);
        assert_eq!(<Majority as rule::Rule>::required(4), 3);
        assert_eq!(<Majority as rule::Rule>::required(5), 3);
        assert_eq!(<AllMembers as rule::Rule>::required(5), 5);
        let ms = Duration::from_millis;
        assert_eq!(<Majority as rule::Rule>::member_wait(ms(300), 3), ms(100));
        assert_eq!(<Majority as rule::Rule>::member_wait(ms(2), 3), ms(1));
        assert_eq!(<AllMembers as rule::Rule>::member_wait(ms(300), 3), ms(300));
        assert_eq!(<Majority as rule::Rule>::drift(ms(10_000)), ms(102));
        assert_eq!(<AllMembers as rule::Rule>::drift(ms(10_000)), ms(0));
    }
}
