//! The blocking [`LockGroup`] ([`MultiLock`], [`RedLock`]) and its [`GroupGuard`]: the
//! async [`crate::kinds::LockGroup`] over blocking locks, run on a member's client runtime as the
//! calling thread (or the [`LockGroup::with_owner`] owner).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::lock::Lock;
use super::runtime::Shared;
use crate::engine::hold::watch::HoldWatch;
use crate::error::{Error, Result};
use crate::lock::{AllMembers, GroupRule, LockKind, Majority};
use crate::names::owner::LockOwner;

/// Redisson's `RedissonMultiLock`, blocking: several locks held as one, all or none.
///
/// # Examples
/// ```no_run
/// # fn demo(a: redisson_lock::blocking::Client, b: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::MultiLock;
/// let both = MultiLock::new([a.get_lock("stock:1"), b.get_lock("stock:2")])?;
/// let guard = both.acquire()?;
/// guard.unlock()?;
/// # Ok(()) }
/// ```
pub type MultiLock = LockGroup<AllMembers>;
/// Redisson's `RedissonRedLock`, blocking: one lock over independent servers, held while a
/// majority grant it (read `docs/multi-and-redlock.md` first).
///
/// # Examples
/// ```no_run
/// # fn demo(a: redisson_lock::blocking::Client, b: redisson_lock::blocking::Client,
/// #     c: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::RedLock;
/// let lock = RedLock::new([a.get_lock("job"), b.get_lock("job"), c.get_lock("job")])?;
/// let guard = lock.acquire()?;
/// guard.unlock()?;
/// # Ok(()) }
/// ```
pub type RedLock = LockGroup<Majority>;
/// A hold of a blocking [`MultiLock`].
///
/// # Examples
/// ```no_run
/// # fn demo(a: redisson_lock::blocking::Client, b: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::{MultiLock, MultiLockGuard};
/// let both = MultiLock::new([a.get_lock("stock:1"), b.get_lock("stock:2")])?;
/// let guard: MultiLockGuard = both.acquire()?;
/// # Ok(()) }
/// ```
pub type MultiLockGuard = GroupGuard<AllMembers>;
/// A hold of a blocking [`RedLock`].
///
/// # Examples
/// ```no_run
/// # fn demo(a: redisson_lock::blocking::Client, b: redisson_lock::blocking::Client,
/// #     c: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::{RedLock, RedLockGuard};
/// let lock = RedLock::new([a.get_lock("job"), b.get_lock("job"), c.get_lock("job")])?;
/// let guard: RedLockGuard = lock.acquire()?;
/// # Ok(()) }
/// ```
pub type RedLockGuard = GroupGuard<Majority>;

/// A member of a blocking [`LockGroup`]: a blocking [`Lock`] of any kind, from any
/// blocking client. Made with `From` (the group's `new` takes the locks themselves).
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) {
/// use redisson_lock::blocking::AnyLock;
/// let member = AnyLock::from(client.get_fair_lock("tickets"));
/// assert_eq!(member.name(), "tickets");
/// # }
/// ```
pub struct AnyLock {
    shared: Arc<Shared>,
    lock: crate::kinds::AnyLock,
}

impl AnyLock {
    /// The member's name, as given to its client.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// let member = redisson_lock::blocking::AnyLock::from(client.get_lock("a"));
    /// assert_eq!(member.name(), "a");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.lock.name()
    }
}

impl<K: LockKind> From<Lock<K>> for AnyLock {
    fn from(lock: Lock<K>) -> AnyLock {
        AnyLock {
            shared: lock.shared,
            lock: lock.inner.into(),
        }
    }
}

impl fmt::Debug for AnyLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.lock.fmt(f)
    }
}

/// Several blocking locks, of any kinds and clients, taken and released as one by one
/// owner (the calling thread, as in Redisson): the async [`crate::kinds::LockGroup`], whose docs
/// describe the algorithm, with blocking methods. Use it as [`MultiLock`] or [`RedLock`].
///
/// Calls run on the runtime of the first member's client; a member of another client
/// talks to its own server as usual.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// use redisson_lock::blocking::MultiLock;
/// // Java: redisson.getMultiLock(lock1, lock2).tryLock(1, 10, SECONDS)
/// let both = MultiLock::new([client.get_lock("account:1"), client.get_lock("account:2")])?;
/// if both.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10))? {
///     both.unlock()?;
/// }
/// # Ok(()) }
/// ```
pub struct LockGroup<R: GroupRule> {
    shared: Arc<Shared>,
    inner: crate::kinds::LockGroup<R>,
    owner: Option<LockOwner>,
}

impl<R: GroupRule> Clone for LockGroup<R> {
    fn clone(&self) -> Self {
        LockGroup {
            shared: self.shared.clone(),
            inner: self.inner.clone(),
            owner: self.owner,
        }
    }
}

impl<R: GroupRule> fmt::Debug for LockGroup<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::LockGroup")
            .field("group", &self.inner)
            .field("owner", &self.owner)
            .finish()
    }
}

impl<R: GroupRule> LockGroup<R> {
    /// A group over `locks` (blocking locks of any kinds and clients); no I/O.
    ///
    /// # Errors
    /// As [`crate::kinds::LockGroup::new`]: [`Error::InvalidArgument`] for no locks,
    /// [`Error::DuplicateMember`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `new RedissonMultiLock(locks...)` / `redisson.getMultiLock(locks...)`,
    /// `new RedissonRedLock(locks...)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(a: redisson_lock::blocking::Client, b: redisson_lock::blocking::Client,
    /// #         c: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::blocking::RedLock;
    /// let lock = RedLock::new([a.get_lock("job"), b.get_lock("job"), c.get_lock("job")])?;
    /// lock.lock()?;
    /// lock.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn new<I>(locks: I) -> Result<LockGroup<R>>
    where
        I: IntoIterator,
        I::Item: Into<AnyLock>,
    {
        let members: Vec<AnyLock> = locks.into_iter().map(Into::into).collect();
        let shared = match members.first() {
            Some(first) => first.shared.clone(),
            None => return Err(Error::invalid("Lock objects are not defined")),
        };
        let inner = crate::kinds::LockGroup::new(members.into_iter().map(|m| m.lock))?;
        Ok(LockGroup {
            shared,
            inner,
            owner: None,
        })
    }

    /// A handle on the same group that acts as `owner` in every call, whichever thread
    /// makes it (see [`Lock::with_owner`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) {
    /// use redisson_lock::LockOwner;
    /// assert_eq!(group.with_owner(LockOwner::from_raw(7)).owner(), LockOwner::from_raw(7));
    /// # }
    /// ```
    pub fn with_owner(&self, owner: LockOwner) -> LockGroup<R> {
        LockGroup {
            owner: Some(owner),
            ..self.clone()
        }
    }

    /// The owner this handle acts as now: the one set by [`LockGroup::with_owner`], or
    /// the calling thread.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) {
    /// assert_eq!(group.owner(), redisson_lock::LockOwner::current_thread());
    /// # }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.owner.unwrap_or_else(LockOwner::current_thread)
    }

    /// The members' names, in the order given.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) {
    /// println!("{:?}", group.names().collect::<Vec<_>>());
    /// # }
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.inner.names()
    }

    /// How many members must be held: all for a [`MultiLock`], `n / 2 + 1` for a
    /// [`RedLock`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::RedLock) {
    /// println!("needs {}", group.required());
    /// # }
    /// ```
    pub fn required(&self) -> usize {
        self.inner.required()
    }

    /// Runs `op` on the async group bound to this call's owner, on the runtime.
    fn run<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnOnce(crate::kinds::LockGroup<R>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.shared.run(op(self.inner.with_owner(self.owner())))?
    }

    /// Wraps an async guard taken by this handle's owner now.
    fn guard(&self, guard: crate::GroupGuard<R>) -> GroupGuard<R> {
        GroupGuard {
            group: self.with_owner(guard.owner()),
            watch: guard.watch().clone(),
            guard: Some(guard),
        }
    }
}

/// One blocking method of the group from the async one of the same name.
macro_rules! group_calls {
    ($(
        $(#[$doc:meta])*
        pub fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> Result<$out:ty>;
    )*) => {$(
        $(#[$doc])*
        pub fn $name(&self $(, $arg: $ty)*) -> Result<$out> {
            self.run(|group| async move { group.$name($($arg),*).await })
        }
    )*};
}

impl<R: GroupRule> LockGroup<R> {
    group_calls! {
        /// Takes the group, blocking as long as it takes; watchdog mode. See
        /// [`crate::kinds::LockGroup::lock`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#lock()`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// group.lock()?;
        /// group.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn lock(&self) -> Result<()>;

        /// Takes the group, blocking as long as it takes; every member held for `lease` at
        /// most. See [`crate::kinds::LockGroup::lock_with_lease`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#lock(long leaseTime, TimeUnit unit)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// group.lock_with_lease(std::time::Duration::from_secs(10))?;
        /// group.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn lock_with_lease(&self, lease: Duration) -> Result<()>;

        /// One attempt at every member; watchdog mode. See [`crate::kinds::LockGroup::try_lock`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#tryLock()`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// if group.try_lock()? {
        ///     group.unlock()?;
        /// }
        /// # Ok(()) }
        /// ```
        pub fn try_lock(&self) -> Result<bool>;

        /// Tries for up to `wait`; watchdog mode. See [`crate::kinds::LockGroup::try_lock_for`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#tryLock(long waitTime, TimeUnit unit)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// if group.try_lock_for(std::time::Duration::from_secs(1))? {
        ///     group.unlock()?;
        /// }
        /// # Ok(()) }
        /// ```
        pub fn try_lock_for(&self, wait: Duration) -> Result<bool>;

        /// Tries for up to `wait`; every member held for `lease` at most. See
        /// [`crate::kinds::LockGroup::try_lock_with_lease`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#tryLock(long waitTime, long leaseTime, TimeUnit unit)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// use std::time::Duration;
        /// if group.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10))? {
        ///     group.unlock()?;
        /// }
        /// # Ok(()) }
        /// ```
        pub fn try_lock_with_lease(&self, wait: Duration, lease: Duration) -> Result<bool>;

        /// Gives back one hold of every member. See [`crate::kinds::LockGroup::unlock`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#unlock()`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// group.lock()?;
        /// group.unlock()?;
        /// # Ok(()) }
        /// ```
        pub fn unlock(&self) -> Result<()>;

        /// Whether `owner` holds the group. See [`crate::kinds::LockGroup::is_held_by`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Redisson equivalent
        /// `RedissonMultiLock#isHeldByThread(long threadId)`
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
        /// let held = group.is_held_by(redisson_lock::LockOwner::from_raw(7))?;
        /// # Ok(()) }
        /// ```
        pub fn is_held_by(&self, owner: LockOwner) -> Result<bool>;
    }

    /// Whether the calling thread (or the [`with_owner`](LockGroup::with_owner) owner)
    /// holds the group.
    ///
    /// # Errors
    /// As [`crate::kinds::LockGroup::is_held_by`].
    ///
    /// # Redisson equivalent
    /// `RedissonMultiLock#isHeldByCurrentThread()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// group.lock()?;
    /// assert!(group.is_held_by_current_thread()?);
    /// # Ok(()) }
    /// ```
    pub fn is_held_by_current_thread(&self) -> Result<bool> {
        self.is_held_by(self.owner())
    }

    /// Takes the group like [`LockGroup::lock`] and returns a guard that releases it when
    /// dropped.
    ///
    /// # Errors
    /// As [`LockGroup::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire()?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn acquire(&self) -> Result<GroupGuard<R>> {
        let guard = self.run(|group| async move { group.acquire().await })?;
        Ok(self.guard(guard))
    }

    /// Takes the group like [`LockGroup::lock_with_lease`], with a guard.
    ///
    /// # Errors
    /// As [`LockGroup::lock_with_lease`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire_with_lease(std::time::Duration::from_secs(10))?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn acquire_with_lease(&self, lease: Duration) -> Result<GroupGuard<R>> {
        let guard = self.run(|group| async move { group.acquire_with_lease(lease).await })?;
        Ok(self.guard(guard))
    }

    /// Like [`LockGroup::try_lock_for`], with a guard when the group was taken.
    ///
    /// # Errors
    /// As [`LockGroup::try_lock_for`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// if let Some(guard) = group.try_acquire_for(std::time::Duration::from_secs(1))? {
    ///     guard.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_for(&self, wait: Duration) -> Result<Option<GroupGuard<R>>> {
        let guard = self.run(|group| async move { group.try_acquire_for(wait).await })?;
        Ok(guard.map(|g| self.guard(g)))
    }

    /// Like [`LockGroup::try_lock_with_lease`], with a guard when the group was taken.
    ///
    /// # Errors
    /// As [`LockGroup::try_lock_with_lease`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if let Some(guard) = group.try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(5))? {
    ///     guard.unlock()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<GroupGuard<R>>> {
        let guard =
            self.run(|group| async move { group.try_acquire_with_lease(wait, lease).await })?;
        Ok(guard.map(|g| self.guard(g)))
    }
}

/// A hold of a blocking [`MultiLock`] or [`RedLock`]: the async [`crate::GroupGuard`]
/// (whose docs say when the group counts as at risk or lost), with a blocking
/// [`unlock`](GroupGuard::unlock).
///
/// # Drop
/// Dropping the guard without `unlock` stops every member's renewal and releases the
/// members in the background, through each member's client (never blocks).
///
/// # Examples
/// ```no_run
/// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
/// {
///     let guard = group.acquire()?;
///     assert!(!guard.is_lost());
/// } // released here
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the locks"]
pub struct GroupGuard<R: GroupRule> {
    /// The group, acting as the guard's owner.
    group: LockGroup<R>,
    /// `None` once unlocked.
    guard: Option<crate::GroupGuard<R>>,
    /// The async guard's.
    watch: HoldWatch,
}

impl<R: GroupRule> GroupGuard<R> {
    /// Gives back one hold of every member this guard holds (see
    /// [`crate::GroupGuard::unlock`]).
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// group.acquire()?.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn unlock(mut self) -> Result<()> {
        match self.guard.take() {
            Some(guard) => self.group.shared.run(guard.unlock())?,
            None => Ok(()),
        }
    }

    crate::engine::hold::guard_methods::blocking_hold_methods!(
        "guard",
        "# fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {\n\
         let guard = group.acquire()?;"
    );

    /// The owner this guard holds the group as.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire()?;
    /// assert_eq!(guard.owner(), redisson_lock::LockOwner::current_thread());
    /// # Ok(()) }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.group.owner()
    }

    /// The members this guard holds: their indices in the order the members were given,
    /// ascending (see [`crate::GroupGuard::members`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire()?;
    /// println!("holding members {:?}", guard.members());
    /// # Ok(()) }
    /// ```
    pub fn members(&self) -> Vec<usize> {
        self.guard
            .as_ref()
            .map_or_else(Vec::new, crate::GroupGuard::members)
    }

    /// How many members this guard holds (all of them for a [`MultiLock`]; at least a
    /// majority for a [`RedLock`]; see [`crate::GroupGuard::held_count`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::RedLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire()?;
    /// assert!(guard.held_count() >= group.required());
    /// # Ok(()) }
    /// ```
    pub fn held_count(&self) -> usize {
        self.guard.as_ref().map_or(0, crate::GroupGuard::held_count)
    }

    /// The fencing token of each member, in the order the members were given: `Some` for
    /// a held [`FencedLock`](crate::blocking::FencedLock) member, `None` otherwise (see
    /// [`crate::GroupGuard::tokens`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(group: redisson_lock::blocking::MultiLock) -> redisson_lock::Result<()> {
    /// let guard = group.acquire()?;
    /// println!("tokens {:?}", guard.tokens());
    /// # Ok(()) }
    /// ```
    pub fn tokens(&self) -> Vec<Option<u64>> {
        self.guard
            .as_ref()
            .map_or_else(Vec::new, crate::GroupGuard::tokens)
    }
}

impl<R: GroupRule> fmt::Debug for GroupGuard<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::GroupGuard")
            .field("group", &self.group)
            .field("state", &self.state())
            .finish()
    }
}
