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

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::KeysInterface;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tracing::Instrument;

use super::{Acquired, Lock, LockKind, UnlockReply, Wait};
use crate::config::{lease_millis, MAX_LEASE};
use crate::context::LockContext;
use crate::error::{Error, Result};
use crate::owner::LockOwner;
use crate::renewal::LostSignal;

// ---- members --------------------------------------------------------------------------

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a group needs from one member, whatever its kind: the engine's operations with an
/// explicit owner. Implemented once, for every [`Lock<K>`].
pub(super) trait Member: Send + Sync + fmt::Debug + 'static {
    fn member_name(&self) -> &str;
    fn kind_name(&self) -> &'static str;
    fn context(&self) -> &Arc<LockContext>;
    /// The engine's acquisition as `owner` (`None`: the wait ran out).
    fn acquire_as_member(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> BoxFuture<'_, Result<Option<Acquired>>>;
    /// One unlock as `owner`, finished in the background if dropped.
    fn unlock_as_member(&self, owner: LockOwner) -> BoxFuture<'_, Result<UnlockReply>>;
    /// `PEXPIRE N lease_ms`; whether the key existed.
    fn set_lease(&self, lease_ms: u64) -> BoxFuture<'_, Result<bool>>;
    fn held_by(&self, owner: LockOwner) -> BoxFuture<'_, Result<bool>>;
    /// Stops `owner`'s renewal of one hold and releases it in the background.
    fn release_later(&self, owner: LockOwner);
}

impl<K: LockKind> Member for Lock<K> {
    fn member_name(&self) -> &str {
        &self.name
    }

    fn kind_name(&self) -> &'static str {
        K::NAME
    }

    fn context(&self) -> &Arc<LockContext> {
        &self.context
    }

    fn acquire_as_member(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> BoxFuture<'_, Result<Option<Acquired>>> {
        Box::pin(self.acquire_with_wait(owner, lease, wait))
    }

    fn unlock_as_member(&self, owner: LockOwner) -> BoxFuture<'_, Result<UnlockReply>> {
        Box::pin(self.unlock_as(owner))
    }

    fn set_lease(&self, lease_ms: u64) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            self.check()?;
            // Bounded by MAX_LEASE, so the cast cannot wrap.
            let set: i64 = self
                .context
                .redis
                .pexpire(&*self.name, lease_ms as i64, None)
                .await
                .map_err(|e| self.redis_error(e))?;
            Ok(set == 1)
        })
    }

    fn held_by(&self, owner: LockOwner) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.is_held_by(owner))
    }

    fn release_later(&self, owner: LockOwner) {
        self.stop_renewal(owner);
        self.with_owner(owner).release_in_background();
    }
}

/// A lock of any kind, as a member of a [`MultiLock`] or [`RedLock`].
///
/// Made from any [`Lock`] with `From`/`Into`, so one group can mix kinds:
///
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::{AnyLock, MultiLock};
/// let group = MultiLock::new([
///     AnyLock::from(client.get_lock("account:1")),
///     client.get_fair_lock("account:2").into(),
///     client.get_read_write_lock("rates").read_lock().into(),
/// ])?;
/// # Ok(()) }
/// ```
///
/// The member's own owner (set with [`Lock::with_owner`]) is not used: the group acts as
/// its own owner for every member.
#[derive(Clone)]
pub struct AnyLock {
    member: Arc<dyn Member>,
}

impl AnyLock {
    /// The member lock's name.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let member = redisson_lock::AnyLock::from(client.get_lock("a"));
    /// assert_eq!(member.name(), "a");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.member.member_name()
    }

    /// The member lock's kind, e.g. `"reentrant"` or `"fair"`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let member = redisson_lock::AnyLock::from(client.get_fair_lock("a"));
    /// assert_eq!(member.kind(), "fair");
    /// # }
    /// ```
    pub fn kind(&self) -> &'static str {
        self.member.kind_name()
    }
}

impl<K: LockKind> From<Lock<K>> for AnyLock {
    fn from(lock: Lock<K>) -> AnyLock {
        AnyLock {
            member: Arc::new(lock),
        }
    }
}

impl fmt::Debug for AnyLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.member.fmt(f)
    }
}

/// Which server a member lives on, as its client was configured (address and database).
fn server_of(context: &LockContext) -> String {
    format!(
        "{:?}/{:?}",
        context.config.redis.server, context.config.redis.database
    )
}

// ---- rules ----------------------------------------------------------------------------

/// How many members a [`LockGroup`] needs: [`AllMembers`] ([`MultiLock`]) or [`Majority`]
/// ([`RedLock`]). Sealed.
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
/// use redisson_lock::{AllMembers, LockGroup};
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
/// use redisson_lock::{LockGroup, Majority};
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

// ---- the group ------------------------------------------------------------------------

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
    members: Arc<[Arc<dyn Member>]>,
    /// Member indices in the canonical order of the waiting phase.
    order: Arc<[usize]>,
    owner: Option<LockOwner>,
    rule: PhantomData<R>,
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

/// One member taken by an acquisition.
struct HeldMember {
    index: usize,
    acquired: Acquired,
}

/// What a successful acquisition holds.
struct Taken {
    held: Vec<HeldMember>,
    /// Lease mode: when the lease (less the rule's drift) ends.
    valid_until: Option<Instant>,
}

/// How one acquisition ended without an error.
enum Outcome {
    Taken(Taken),
    /// Not taken; the error that made success impossible in the last round, if any.
    Failed(Option<Error>),
}

/// What happened to one member in a round.
enum Tried {
    Held(HeldMember),
    /// Held by another owner, or its wait ran out.
    Busy,
    /// An error, or no reply within the wait.
    Failed(Option<Error>),
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

    // ---- the algorithm ----------------------------------------------------------------

    fn check(&self) -> Result<()> {
        if self.members.iter().any(|m| m.context().is_closed()) {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    /// Redisson's `lock()` loop: acquisitions with a wait of `members × 1500 ms` (with a
    /// lease, a random wait below it), until one succeeds.
    async fn lock_forever(&self, owner: LockOwner, lease: Option<Duration>) -> Result<Taken> {
        let base = Duration::from_millis(1500) * self.members.len() as u32;
        loop {
            let wait = match lease {
                None => base,
                Some(lease) if lease <= base => random_between(lease / 2, lease),
                Some(lease) => random_between(base, lease),
            }
            .max(Duration::from_millis(1));
            match self.take(owner, wait, lease).await? {
                Outcome::Taken(taken) => return Ok(taken),
                Outcome::Failed(Some(error)) => return Err(error),
                Outcome::Failed(None) => continue,
            }
        }
    }

    /// A bounded acquisition (`try_lock*`): a non-reentrant member the owner already holds
    /// answers `None` at once, as it does for one lock.
    async fn try_take(
        &self,
        owner: LockOwner,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<Taken>> {
        match self.take(owner, wait, lease).await {
            Ok(Outcome::Taken(taken)) => Ok(Some(taken)),
            Ok(Outcome::Failed(_)) | Err(Error::NonReentrant { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// One acquisition with a wait budget (zero: a single round without waiting).
    async fn take(
        &self,
        owner: LockOwner,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Outcome> {
        self.check()?;
        let lease_ms = lease.map(lease_millis).transpose()?;
        let started = Instant::now();
        let deadline = (!wait.is_zero())
            .then(|| started.checked_add(wait))
            .flatten();
        // Redisson: with a lease and a wait, members get twice the wait (none may expire
        // while the others are taken); the lease is set at the end.
        let member_lease = match (lease, deadline) {
            (Some(_), Some(_)) => Some(wait.saturating_mul(2).min(MAX_LEASE)),
            (lease, _) => lease,
        };
        let span = tracing::debug_span!(
            "redisson_lock.group_acquire",
            rule = R::NAME,
            members = self.members.len(),
            %owner,
            ?wait,
            ?lease,
        );
        async move {
            let mut taking = Taking::new(self, owner);
            // The error that made the last round hopeless (too many members failed with
            // errors for the rule to be met), reported if the acquisition fails.
            let mut hopeless: Option<Error> = None;
            let mut first_round = true;
            loop {
                if !first_round && deadline.map_or(true, |d| Instant::now() >= d) {
                    return Ok(Outcome::Failed(hopeless));
                }
                first_round = false;
                // Step 1: every member once, at the same time.
                let (busy, errors) = self
                    .try_all(owner, member_lease, deadline, &mut taking)
                    .await?;
                if taking.held.len() >= self.required() {
                    match self.finish(&mut taking, lease, lease_ms, deadline).await? {
                        Some(taken) => return Ok(Outcome::Taken(taken)),
                        None => continue,
                    }
                }
                taking.release_all().await;
                let allowance = self.members.len() - self.required();
                hopeless = if errors.len() > allowance {
                    let first = errors.into_iter().flatten().next();
                    Some(first.unwrap_or(Error::Timeout {
                        what: "taking the group's members",
                        after: wait,
                    }))
                } else {
                    None
                };
                let Some(deadline) = deadline else {
                    return Ok(Outcome::Failed(hopeless));
                };
                if Instant::now() >= deadline {
                    return Ok(Outcome::Failed(hopeless));
                }
                if busy == 0 {
                    // Only errors (a server down?): waiting on a member would not help.
                    // Back off a little, then try again while the wait lasts.
                    let pause = random_between(BACK_OFF / 2, BACK_OFF);
                    tokio::time::sleep_until((Instant::now() + pause).min(deadline)).await;
                    continue;
                }
                // Step 2: one member at a time, in the canonical order.
                if self
                    .take_in_order(owner, member_lease, deadline, &mut taking)
                    .await?
                {
                    match self
                        .finish(&mut taking, lease, lease_ms, Some(deadline))
                        .await?
                    {
                        Some(taken) => return Ok(Outcome::Taken(taken)),
                        None => continue,
                    }
                }
                taking.release_all().await;
            }
        }
        .instrument(span)
        .await
    }

    /// Step 1: every member once, without waiting, at the same time. Returns how many
    /// were busy and the failures. Stops at the deadline, and soon after enough members
    /// are held: the others get as long again as that took (a member on a dead server
    /// must not hold the lock up; one that answers with the rest adds a spare). Members
    /// still in flight then are finished in the background, and released if taken.
    async fn try_all(
        &self,
        owner: LockOwner,
        member_lease: Option<Duration>,
        deadline: Option<Instant>,
        taking: &mut Taking<'_, R>,
    ) -> Result<(usize, Vec<Option<Error>>)> {
        let mut pending: FuturesUnordered<_> = (0..self.members.len())
            .map(|index| self.try_member(index, owner, member_lease, Wait::Once, deadline))
            .collect();
        let (mut busy, mut errors, mut fatal) = (0, Vec::new(), None);
        let started = Instant::now();
        // Once enough are held: how long the others still get.
        let mut grace: Option<Instant> = None;
        loop {
            let limit = match (deadline, grace) {
                (Some(d), Some(g)) => Some(d.min(g)),
                (d, g) => d.or(g),
            };
            let next = match limit {
                Some(limit) => match tokio::time::timeout_at(limit, pending.next()).await {
                    Ok(next) => next,
                    Err(_) if grace.is_some_and(|g| g <= limit) => break,
                    Err(_) => {
                        errors.extend((0..pending.len()).map(|_| None));
                        break;
                    }
                },
                None => pending.next().await,
            };
            let Some(tried) = next else { break };
            match tried {
                Ok(Tried::Held(held)) => taking.held.push(held),
                Ok(Tried::Busy) => busy += 1,
                Ok(Tried::Failed(error)) => errors.push(error),
                Err(error) => fatal = fatal.or(Some(error)),
            }
            if fatal.is_none() && grace.is_none() && taking.held.len() >= self.required() {
                let now = Instant::now();
                grace = Some(now + (now - started).max(Duration::from_millis(1)));
            }
        }
        if let Some(error) = fatal {
            // Members still in flight are finished in the background (and released if
            // they took the lock) when `pending` drops.
            drop(pending);
            taking.release_all().await;
            return Err(error);
        }
        Ok((busy, errors))
    }

    /// Step 2: the members one at a time in the canonical order, each waited for up to
    /// the rule's share of what is left. Whether enough were held.
    async fn take_in_order(
        &self,
        owner: LockOwner,
        member_lease: Option<Duration>,
        deadline: Instant,
        taking: &mut Taking<'_, R>,
    ) -> Result<bool> {
        let n = self.members.len();
        let mut allowance = n - self.required();
        for &index in self.order.iter() {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(false);
            }
            let member_wait = R::member_wait(remaining, n).min(remaining);
            let wait = match Instant::now().checked_add(member_wait) {
                Some(until) => Wait::Until(until, member_wait),
                None => Wait::Forever,
            };
            match self
                .try_member(index, owner, member_lease, wait, Some(deadline))
                .await
            {
                Ok(Tried::Held(held)) => taking.held.push(held),
                Ok(Tried::Busy | Tried::Failed(_)) => {
                    if taking.held.len() >= self.required() {
                        return Ok(true);
                    }
                    if allowance == 0 {
                        return Ok(false);
                    }
                    allowance -= 1;
                }
                Err(error) => {
                    taking.release_all().await;
                    return Err(error);
                }
            }
        }
        Ok(taking.held.len() >= self.required())
    }

    /// One member's attempt, bounded by the deadline. `Err` only for errors that make the
    /// whole acquisition fail (no waiting can help).
    fn try_member(
        &self,
        index: usize,
        owner: LockOwner,
        member_lease: Option<Duration>,
        wait: Wait,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<Tried>> + Send + '_ {
        let member = self.members[index].clone();
        async move {
            let attempt = member.acquire_as_member(owner, member_lease, wait);
            let reply = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, attempt).await {
                    Ok(reply) => reply,
                    // Dropped in flight: the engine finishes it and releases what it took.
                    Err(_) => return Ok(Tried::Failed(None)),
                },
                None => attempt.await,
            };
            match reply {
                Ok(Some(acquired)) => Ok(Tried::Held(HeldMember { index, acquired })),
                Ok(None) => Ok(Tried::Busy),
                Err(error) if is_fatal(&error) => Err(error),
                Err(error) => {
                    // A member whose acquire reply was lost (Redisson unlocks it) is
                    // settled by the engine: it reads the owner's hold count, and undoes
                    // a hold nobody was told of (Error::OutcomeUnknown: at its next call).
                    tracing::debug!(lock = member.member_name(), %error, "group member failed");
                    Ok(Tried::Failed(Some(error)))
                }
            }
        }
    }

    /// Sets the lease (when a temporary one was used) and checks that the lease, less the
    /// drift, still has time left. `None`: a member was lost on the way (released; try
    /// again while the wait lasts).
    async fn finish(
        &self,
        taking: &mut Taking<'_, R>,
        lease: Option<Duration>,
        lease_ms: Option<u64>,
        deadline: Option<Instant>,
    ) -> Result<Option<Taken>> {
        let (Some(lease), Some(lease_ms)) = (lease, lease_ms) else {
            return Ok(Some(taking.done(None)));
        };
        let lease_start = if deadline.is_some() {
            // Replace the temporary lease, as Redisson does: `PEXPIRE N lease`.
            let sent = Instant::now();
            let replies = futures::future::join_all(taking.held.iter().map(|h| {
                let member = &self.members[h.index];
                async move { (h.index, member.set_lease(lease_ms).await) }
            }))
            .await;
            for (index, reply) in replies {
                match reply {
                    Ok(true) => continue,
                    // The key is gone: nothing to release.
                    Ok(false) => {}
                    // Unknown: release it in the background.
                    Err(_) => self.members[index].release_later(taking.owner),
                }
                tracing::debug!(
                    lock = self.members[index].member_name(),
                    "group member lost before its lease was set"
                );
                taking.forget(index);
            }
            if taking.held.len() < self.required() {
                taking.release_all().await;
                return Ok(None);
            }
            sent
        } else {
            // Taken with the lease itself: it started with the earliest acquire.
            taking
                .held
                .iter()
                .filter_map(|h| h.acquired.lease_deadline)
                .min()
                .and_then(|end| end.checked_sub(lease))
                .unwrap_or_else(Instant::now)
        };
        let valid_until = lease_start + lease.saturating_sub(R::drift(lease));
        let now = Instant::now();
        if now >= valid_until || lease <= R::drift(lease) {
            taking.release_all().await;
            return Err(Error::LeaseTooShort {
                lease,
                elapsed: now.saturating_duration_since(lease_start),
            });
        }
        Ok(Some(taking.done(Some(valid_until))))
    }

    /// Unlocks `indices` as `owner`, all at the same time.
    async fn unlock_members(&self, owner: LockOwner, indices: &[usize]) -> Result<()> {
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

/// How long a group backs off before trying again when every failure was an error.
const BACK_OFF: Duration = Duration::from_millis(50);

/// Errors no waiting can cure: they end an acquisition at once.
fn is_fatal(error: &Error) -> bool {
    matches!(
        error,
        Error::Shutdown
            | Error::WrongType { .. }
            | Error::InvalidArgument(_)
            | Error::BadToken { .. }
            | Error::NonReentrant { .. }
    )
}

/// A random duration in `[low, high)` (`low` if the range is empty).
fn random_between(low: Duration, high: Duration) -> Duration {
    let span = high.saturating_sub(low).as_micros() as u64;
    if span == 0 {
        return low;
    }
    let random = uuid::Uuid::new_v4().as_u64_pair().0;
    low + Duration::from_micros(random % span)
}

/// The members one acquisition holds so far. Dropped while it still holds some (the
/// caller's future was dropped), it releases them in the background.
struct Taking<'a, R: GroupRule> {
    group: &'a LockGroup<R>,
    owner: LockOwner,
    held: Vec<HeldMember>,
}

impl<'a, R: GroupRule> Taking<'a, R> {
    fn new(group: &'a LockGroup<R>, owner: LockOwner) -> Self {
        Taking {
            group,
            owner,
            held: Vec::new(),
        }
    }

    /// Releases every member held, all at the same time, and waits for the answers
    /// (each unlock is finished in the background if this future is dropped).
    async fn release_all(&mut self) {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            return;
        }
        let owner = self.owner;
        let members = &self.group.members;
        let replies = futures::future::join_all(held.iter().map(|h| {
            let member = &members[h.index];
            async move { (member, member.unlock_as_member(owner).await) }
        }))
        .await;
        for (member, reply) in replies {
            if let Err(error) = reply {
                tracing::warn!(lock = member.member_name(), %error, "could not release a group member; its lease will end it");
            }
        }
    }

    /// Drops a member known to be gone (nothing to release).
    fn forget(&mut self, index: usize) {
        self.held.retain(|h| h.index != index);
    }

    fn done(&mut self, valid_until: Option<Instant>) -> Taken {
        Taken {
            held: std::mem::take(&mut self.held),
            valid_until,
        }
    }
}

impl<R: GroupRule> Drop for Taking<'_, R> {
    fn drop(&mut self) {
        for held in self.held.drain(..) {
            self.group.members[held.index].release_later(self.owner);
        }
    }
}

// ---- the guard ------------------------------------------------------------------------

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
    fn new(group: LockGroup<R>, taken: Taken) -> GroupGuard<R> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        send(&guard.unlock());
    }

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

    #[test]
    fn random_between_stays_in_range() {
        let (low, high) = (Duration::from_millis(5), Duration::from_millis(10));
        for _ in 0..1000 {
            let d = random_between(low, high);
            assert!(d >= low && d < high);
        }
        assert_eq!(random_between(high, low), high);
    }
}
