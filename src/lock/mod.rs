//! The lock engine, and the lock kinds over it.
//!
//! [`Lock<K>`] is every kind's handle: one wait loop, one unlock path, one guard type.
//! What a kind changes (its scripts, keys, channel, messages and renewal) lives in one
//! file per kind and reaches the engine through [`kind::Kind`]:
//!
//! | kind | file | Redisson |
//! |---|---|---|
//! | [`Reentrant`] | `reentrant.rs` | `RLock` |
//! | [`Fair`] | `fair.rs` | `RFairLock` |
//! | [`Read`], [`Write`] | `read_write.rs` | `RReadWriteLock` |
//! | [`Fenced`] | `fenced.rs` | `RFencedLock` |
//! | [`Spin`] | `spin.rs` | `RSpinLock` |
//! | [`NonReentrant`], [`NonReentrantFair`] | `non_reentrant.rs`, `fair.rs` | `RedissonNonReentrantLock`, `RedissonNonReentrantFairLock` |
//!
//! Invariants the engine keeps for every kind: every lock operation is one script round
//! trip when the lock is free; a waiter subscribes before it retries and sleeps until a
//! message or the holder's TTL; acquire and unlock are written at most once and, once
//! written, always finished (see [`FinishOnDrop`]); a queued waiter that gives up (or is
//! dropped) leaves the queue exactly once; a watchdog acquisition registers with the
//! renewal registry before the caller sees it, and every unlock removes one registration.

mod backoff;
pub(crate) mod base;
mod call;
pub(crate) mod fair;
pub(crate) mod fenced;
mod guard;
mod kind;
pub(crate) mod multi;
pub(crate) mod non_reentrant;
pub(crate) mod read_write;
pub(crate) mod reentrant;
pub(crate) mod spin;

pub use backoff::Backoff;
pub use fair::{Fair, NonReentrantFair};
pub use fenced::Fenced;
pub use guard::LockGuard;
pub use kind::LockKind;
pub use multi::{
    AllMembers, AnyLock, GroupGuard, GroupRule, LockGroup, Majority, MultiLock, MultiLockGuard,
    RedLock, RedLockGuard,
};
pub use non_reentrant::NonReentrant;
pub use read_write::{Read, ReadWriteLock, Write};
pub use reentrant::Reentrant;
pub use spin::Spin;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::{HashesInterface, KeysInterface, Value};
use tokio::time::Instant;
use tracing::Instrument;

use crate::config::lease_millis;
use crate::context::LockContext;
use crate::detach::FinishOnDrop;
use crate::error::{Error, Result};
use crate::local_queue::{Left, Stage, Ticket};
use crate::names::unlock_latch;
use crate::owner::LockOwner;
use crate::renewal::LostSignal;
use crate::replicas::Synced;
use crate::scripts::{is_wrong_type, outcome_unknown, Resend};
use crate::telemetry;
use kind::{Acquire, AcquireMode, LockedProbe, ScriptCall, Target, Waiting};

/// Redisson's reentrant lock (`RLock`): `Lock` of the [`Reentrant`] kind.
pub type RLock = Lock<Reentrant>;
/// Redisson's fair lock (`RFairLock`): `Lock` of the [`Fair`] kind.
pub type FairLock = Lock<Fair>;
/// The read half of Redisson's `RReadWriteLock`: `Lock` of the [`Read`] kind.
pub type ReadLock = Lock<Read>;
/// The write half of Redisson's `RReadWriteLock`: `Lock` of the [`Write`] kind.
pub type WriteLock = Lock<Write>;
/// Redisson's fenced lock (`RFencedLock`): `Lock` of the [`Fenced`] kind.
pub type FencedLock = Lock<Fenced>;
/// Redisson's spin lock (`RSpinLock`): `Lock` of the [`Spin`] kind.
pub type SpinLock = Lock<Spin>;
/// Redisson 4.4's `RedissonNonReentrantLock`: `Lock` of the [`NonReentrant`] kind.
pub type NonReentrantLock = Lock<NonReentrant>;
/// Redisson 4.4's `RedissonNonReentrantFairLock`: `Lock` of the [`NonReentrantFair`] kind.
pub type NonReentrantFairLock = Lock<NonReentrantFair>;

/// A distributed lock of kind `K`, wire-compatible with the Redisson lock of that kind.
///
/// Every kind has the same methods, named as Redisson's `RLock` in Rust's casing; a kind
/// changes what is written to Redis, not how you call it. [`RLock`] (`Lock<Reentrant>`)
/// is the reentrant lock; the client hands out the other kinds.
///
/// The lock is the Redis hash `name`: field `<client-id>:<owner>` counts the holds of one
/// owner (see [`LockOwner`] for what an owner is), and the key's TTL is the lease. Taking
/// it again as the same owner is a re-entry: the count goes up, and as many unlocks are
/// needed to release it. Java Redisson clients on the same Redis see the same lock.
///
/// `Lock` is a cheap `Clone` handle and does no I/O until used. Methods come in two
/// styles: Redisson's (`lock` / `unlock`) and guards (`acquire` returns a
/// [`LockGuard`] that unlocks on drop and tells you when the lock is lost).
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// let lock = client.get_lock("stock:product_101");
///
/// lock.lock().await?;                       // held until unlock; the watchdog renews it
/// lock.lock().await?;                       // re-entry: hold count 2
/// assert_eq!(lock.hold_count().await?, 2);
/// lock.unlock().await?;
/// lock.unlock().await?;                     // released; one waiter is woken
///
/// if lock.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10)).await? {
///     lock.unlock().await?;
/// }
/// # Ok(()) }
/// ```
pub struct Lock<K: LockKind = Reentrant> {
    context: Arc<LockContext>,
    name: Arc<str>,
    kind: K,
    owner: Option<LockOwner>,
    /// Redisson's `internalLockLeaseTime`: the lease a partial unlock re-arms. The lease of
    /// the last lease-mode acquisition through this handle (and its clones), reset to the
    /// watchdog timeout by a full unlock.
    internal_lease_ms: Arc<AtomicU64>,
}

impl<K: LockKind> Clone for Lock<K> {
    fn clone(&self) -> Self {
        Lock {
            context: self.context.clone(),
            name: self.name.clone(),
            kind: self.kind.clone(),
            owner: self.owner,
            internal_lease_ms: self.internal_lease_ms.clone(),
        }
    }
}

impl<K: LockKind> std::fmt::Debug for Lock<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("kind", &K::NAME)
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("client_id", &self.context.id)
            .finish()
    }
}

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Once,
    /// Until the deadline; the whole budget (a fair lock reserves it per queue slot).
    Until(Instant, Duration),
    Forever,
}

impl Wait {
    fn up_to(wait: Duration) -> Wait {
        if wait.is_zero() {
            return Wait::Once;
        }
        match Instant::now().checked_add(wait) {
            Some(deadline) => Wait::Until(deadline, wait),
            None => Wait::Forever,
        }
    }
}

/// A successful acquisition: what a guard needs to know.
pub(crate) struct Acquired {
    pub(crate) lost: Arc<LostSignal>,
    pub(crate) lease_deadline: Option<Instant>,
    pub(crate) token: Option<u64>,
}

/// What reading the owner's count said about an acquire whose reply was lost.
enum Outcome {
    Ran,
    NotRun,
}

enum Attempt {
    Acquired(Acquired),
    /// Held by another owner; the time worth waiting in ms (negative: no expiry).
    Held(i64),
}

/// What the unlock script answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnlockReply {
    NotOwner,
    StillHeld,
    Released,
    /// Released by handing the lock to the next local waiter (see [`crate::local_queue`]).
    Handed,
}

impl<K: LockKind> Lock<K> {
    /// A handle on lock `name` of kind `kind`; no I/O.
    pub(crate) fn new(context: Arc<LockContext>, name: String, kind: K) -> Lock<K> {
        let watchdog_ms = context.watchdog_ms;
        Lock {
            context,
            name: name.into(),
            kind,
            owner: None,
            internal_lease_ms: Arc::new(AtomicU64::new(watchdog_ms)),
        }
    }

    /// The kind-specific part of this handle, such as a spin lock's back-off.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let lock = client.get_spin_lock("jobs");
    /// println!("{:?}", lock.kind().backoff());
    /// # }
    /// ```
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// The lock's name: the Redis key of its hash.
    ///
    /// # Redisson equivalent
    /// `RLock#getName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.get_lock("orders").name(), "orders");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A handle on the same lock that acts as `owner` in every call, instead of the
    /// calling task. Use it to take a lock in one task and release it in another, or to
    /// share an owner id with a Java thread (Redisson's `threadId` overloads).
    ///
    /// # Redisson equivalent
    /// `lockAsync(threadId)`, `unlockAsync(threadId)`, `tryLockAsync(..., threadId)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::LockOwner;
    /// let job = client.get_lock("job:7").with_owner(LockOwner::from_raw(42));
    /// job.lock().await?;
    /// let handle = job.clone();
    /// tokio::spawn(async move { handle.unlock().await }).await.unwrap()?;
    /// # Ok(()) }
    /// ```
    pub fn with_owner(&self, owner: LockOwner) -> Lock<K> {
        Lock {
            owner: Some(owner),
            ..self.clone()
        }
    }

    /// The owner this handle acts as right now: the one set by [`Lock::with_owner`], or
    /// [`LockOwner::current`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// use redisson_lock::LockOwner;
    /// let lock = client.get_lock("x").with_owner(LockOwner::from_raw(5));
    /// assert_eq!(lock.owner(), LockOwner::from_raw(5));
    /// # }
    /// ```
    pub fn owner(&self) -> LockOwner {
        self.owner.unwrap_or_else(LockOwner::current)
    }

    /// Takes the lock, waiting as long as it takes. Held until unlocked; while held, the
    /// watchdog renews it every `watchdog_timeout / 3`. A re-entry by the same owner adds
    /// a hold.
    ///
    /// Waiting does not poll: the caller subscribes to the lock's channel and wakes on the
    /// holder's unlock message, or when the holder's lease runs out.
    ///
    /// # Errors
    /// [`Error::Redis`] if Redis fails; [`Error::Timeout`] if the subscription is not
    /// confirmed within the subscription timeout; [`Error::WrongType`] if the key is not a
    /// lock; [`Error::Shutdown`] if the client shuts down; [`Error::InvalidArgument`] for
    /// an empty name.
    ///
    /// # Cancel safety
    /// Dropping the future leaves no subscription behind; if the acquire script may have
    /// run, the lock is released in the background.
    ///
    /// # Redisson equivalent
    /// `RLock#lock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// lock.lock().await?;
    /// // ... work ...
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self) -> Result<()> {
        self.acquire_as(self.owner(), None, Wait::Forever)
            .await
            .map(drop)
    }

    /// Takes the lock, waiting as long as it takes; it is held for `lease` at most (no
    /// watchdog) or until unlocked.
    ///
    /// # Errors
    /// As [`Lock::lock`], and [`Error::InvalidArgument`] for a lease under 1 ms or above
    /// [`MAX_LEASE`](crate::MAX_LEASE).
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Redisson equivalent
    /// `RLock#lock(long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// lock.lock_with_lease(std::time::Duration::from_secs(10)).await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<()> {
        self.acquire_as(self.owner(), Some(lease), Wait::Forever)
            .await
            .map(drop)
    }

    /// Takes the lock if it is free (or already the caller's), without waiting; watchdog
    /// mode. One script round trip, no subscription.
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::WrongType`], [`Error::Shutdown`],
    /// [`Error::InvalidArgument`] as for [`Lock::lock`].
    ///
    /// # Cancel safety
    /// If the future is dropped after the script was sent and the lock was taken, it is
    /// released in the background.
    ///
    /// # Redisson equivalent
    /// `RLock#tryLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// if lock.try_lock().await? {
    ///     lock.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self) -> Result<bool> {
        Ok(self
            .acquire_as(self.owner(), None, Wait::Once)
            .await?
            .is_some())
    }

    /// Tries to take the lock, waiting up to `wait`; watchdog mode once taken. A `wait` of
    /// zero is a single attempt.
    ///
    /// # Errors
    /// As [`Lock::try_lock`]. Running out of time is `Ok(false)`, not an error.
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Redisson equivalent
    /// `RLock#tryLock(long time, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// if lock.try_lock_for(std::time::Duration::from_millis(500)).await? {
    ///     lock.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_for(&self, wait: Duration) -> Result<bool> {
        Ok(self
            .acquire_as(self.owner(), None, Wait::up_to(wait))
            .await?
            .is_some())
    }

    /// Tries to take the lock, waiting up to `wait`; once taken it is held for `lease` at
    /// most. Returns `Ok(true)` when taken (a re-entry counts), `Ok(false)` when `wait`
    /// ran out. A `wait` of zero is a single attempt.
    ///
    /// # Errors
    /// As [`Lock::lock_with_lease`]. Running out of time is `Ok(false)`.
    ///
    /// # Cancel safety
    /// Dropping the future leaves no subscription behind; if the acquire script may have
    /// run, the lock is released in the background.
    ///
    /// # Redisson equivalent
    /// `RLock#tryLock(long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if lock.try_lock_with_lease(Duration::from_secs(100), Duration::from_secs(10)).await? {
    ///     lock.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_with_lease(&self, wait: Duration, lease: Duration) -> Result<bool> {
        Ok(self
            .acquire_as(self.owner(), Some(lease), Wait::up_to(wait))
            .await?
            .is_some())
    }

    /// Takes the lock like [`Lock::lock`] and returns a guard that unlocks it when
    /// dropped and can tell when the lock was lost.
    ///
    /// # Errors
    /// As [`Lock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// tokio::select! {
    ///     _ = guard.lost() => eprintln!("lock lost: stop writing"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<LockGuard<K>> {
        let owner = self.owner();
        match self.acquire_as(owner, None, Wait::Forever).await? {
            Some(acquired) => Ok(LockGuard::new(self.with_owner(owner), acquired)),
            None => Err(Error::Shutdown),
        }
    }

    /// Takes the lock like [`Lock::lock_with_lease`] and returns a guard; the guard's
    /// [`lost`](LockGuard::lost) fires when the lease runs out.
    ///
    /// # Errors
    /// As [`Lock::lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire_with_lease(std::time::Duration::from_secs(5)).await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_with_lease(&self, lease: Duration) -> Result<LockGuard<K>> {
        let owner = self.owner();
        match self.acquire_as(owner, Some(lease), Wait::Forever).await? {
            Some(acquired) => Ok(LockGuard::new(self.with_owner(owner), acquired)),
            None => Err(Error::Shutdown),
        }
    }

    /// Like [`Lock::try_lock_for`], returning a guard when the lock was taken.
    ///
    /// # Errors
    /// As [`Lock::try_lock_for`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// if let Some(guard) = lock.try_acquire_for(std::time::Duration::from_secs(1)).await? {
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<Option<LockGuard<K>>> {
        let owner = self.owner();
        let acquired = self.acquire_as(owner, None, Wait::up_to(wait)).await?;
        Ok(acquired.map(|a| LockGuard::new(self.with_owner(owner), a)))
    }

    /// Like [`Lock::try_lock_with_lease`], returning a guard when the lock was taken.
    ///
    /// # Errors
    /// As [`Lock::try_lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if let Some(guard) =
    ///     lock.try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10)).await?
    /// {
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<LockGuard<K>>> {
        let owner = self.owner();
        let acquired = self
            .acquire_as(owner, Some(lease), Wait::up_to(wait))
            .await?;
        Ok(acquired.map(|a| LockGuard::new(self.with_owner(owner), a)))
    }

    /// Gives back one hold. With the last hold the key is deleted and `0` is published on
    /// the kind's channel, which wakes a waiter (here or in Java).
    /// Every unlock also removes one watchdog registration, whatever Redis answered.
    ///
    /// A reply lost to a dropped connection is retried with the same request id; the
    /// unlock latch in Redis makes the retry return the first answer instead of unlocking
    /// twice.
    ///
    /// # Errors
    /// [`Error::NotOwner`] (Redisson's exact text) if the caller does not hold the lock;
    /// [`Error::Redis`], [`Error::WrongType`], [`Error::Shutdown`],
    /// [`Error::InvalidArgument`] as for [`Lock::lock`].
    ///
    /// # Cancel safety
    /// Once started, an unlock is finished in the background if its future is dropped.
    ///
    /// # Redisson equivalent
    /// `RLock#unlock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// assert!(matches!(lock.unlock().await, Err(redisson_lock::Error::NotOwner { .. })));
    /// # Ok(()) }
    /// ```
    pub async fn unlock(&self) -> Result<()> {
        let owner = self.owner();
        match self.unlock_as(owner).await? {
            UnlockReply::NotOwner => Err(Error::NotOwner {
                client_id: self.context.id.clone(),
                owner,
            }),
            UnlockReply::StillHeld | UnlockReply::Released | UnlockReply::Handed => Ok(()),
        }
    }

    /// Deletes the lock whoever holds it, and wakes a waiter. Returns whether there was a
    /// lock to delete. Stops this client's renewal of it.
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`], [`Error::InvalidArgument`].
    ///
    /// # Cancel safety
    /// The script is idempotent; dropping the future may or may not have deleted the lock.
    ///
    /// # Redisson equivalent
    /// `RLock#forceUnlock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let deleted = lock.force_unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn force_unlock(&self) -> Result<bool> {
        self.check()?;
        let context = &self.context;
        let target = self.target(self.owner());
        context
            .renewal
            .remove_lock(&self.name, &self.kind.renewable(&target));
        let call = self.kind.force_release(&target);
        let (reply, synced) = self
            .run_synced(&call, Resend::Allowed)
            .instrument(tracing::debug_span!("redisson_lock.force_unlock", lock = %self.name, kind = K::NAME))
            .await
            .map_err(|e| self.redis_error(e))?;
        self.log_unsynced("force unlock", &synced);
        self.internal_lease_ms
            .store(context.watchdog_ms, Ordering::Relaxed);
        match reply {
            Value::Integer(n) => {
                if n == 1 {
                    // The hash is gone: no owner of this client holds it any more.
                    context.holds.forget_lock(&self.name);
                    if let Some(line) = context.lines.get(&self.name) {
                        line.released_by(None, Some(Duration::ZERO));
                    }
                }
                Ok(n == 1)
            }
            other => Err(unexpected("force_unlock", other)),
        }
    }

    /// Whether anybody holds the lock (`EXISTS name`; for a read or write lock, whether
    /// that half is held, as Redisson answers).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`], [`Error::InvalidArgument`].
    ///
    /// # Redisson equivalent
    /// `RLock#isLocked()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// println!("locked: {}", lock.is_locked().await?);
    /// # Ok(()) }
    /// ```
    pub async fn is_locked(&self) -> Result<bool> {
        self.check()?;
        let redis = &self.context.redis;
        let locked = match self.kind.locked_probe(&self.name) {
            LockedProbe::Exists => redis.exists::<i64, _>(&*self.name).await.map(|n| n > 0),
            LockedProbe::ModeIs(mode) => redis
                .hget::<Option<String>, _, _>(&*self.name, "mode")
                .await
                .map(|m| m.as_deref() == Some(mode)),
            LockedProbe::Script(call) => self
                .run(&call, Resend::Allowed)
                .await
                .map(|v| v.as_i64() == Some(1)),
        };
        locked.map_err(|e| self.redis_error(e))
    }

    /// Whether the calling owner (this handle's owner) holds the lock.
    ///
    /// # Errors
    /// As [`Lock::is_held_by`].
    ///
    /// # Redisson equivalent
    /// `RLock#isHeldByCurrentThread()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// lock.lock().await?;
    /// assert!(lock.is_held_by_current_task().await?);
    /// # Ok(()) }
    /// ```
    pub async fn is_held_by_current_task(&self) -> Result<bool> {
        self.is_held_by(self.owner()).await
    }

    /// Whether `owner` of **this client** holds the lock (`HEXISTS name <client-id>:<owner>`).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::WrongType`], [`Error::Shutdown`],
    /// [`Error::InvalidArgument`].
    ///
    /// # Redisson equivalent
    /// `RLock#isHeldByThread(long threadId)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let held = lock.is_held_by(redisson_lock::LockOwner::from_raw(42)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn is_held_by(&self, owner: LockOwner) -> Result<bool> {
        self.check()?;
        self.context
            .redis
            .hexists(&*self.name, self.kind.field(&self.context, owner))
            .await
            .map_err(|e| self.redis_error(e))
    }

    /// How many holds this handle's owner has (`HGET`; 0 when it holds none).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::WrongType`], [`Error::Shutdown`],
    /// [`Error::InvalidArgument`].
    ///
    /// # Redisson equivalent
    /// `RLock#getHoldCount()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// lock.lock().await?;
    /// assert_eq!(lock.hold_count().await?, 1);
    /// # Ok(()) }
    /// ```
    pub async fn hold_count(&self) -> Result<u32> {
        self.check()?;
        let count: Option<i64> = self
            .context
            .redis
            .hget(&*self.name, self.kind.field(&self.context, self.owner()))
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(count.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32)
    }

    /// The lock's remaining time to live (`PTTL`): `None` when nobody holds it,
    /// `Some(Duration::MAX)` for a key without expiry (which only a foreign `PERSIST`
    /// makes).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`], [`Error::InvalidArgument`].
    ///
    /// # Redisson equivalent
    /// `RLock#remainTimeToLive()` (which answers `-2` and `-1` for the two special cases)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// if let Some(ttl) = lock.remain_time_to_live().await? {
    ///     println!("held for {ttl:?} more");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn remain_time_to_live(&self) -> Result<Option<Duration>> {
        self.check()?;
        let ms: i64 = self
            .context
            .redis
            .pttl(&*self.name)
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(match ms {
            -2 => None,
            ms if ms < 0 => Some(Duration::MAX),
            ms => Some(Duration::from_millis(ms as u64)),
        })
    }

    // ---- the engine ---------------------------------------------------------------------

    fn check(&self) -> Result<()> {
        if self.name.is_empty() {
            return Err(Error::invalid("lock name must not be empty"));
        }
        if self.context.is_closed() {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    fn target(&self, owner: LockOwner) -> Target<'_> {
        Target {
            context: &self.context,
            name: &self.name,
            owner,
        }
    }

    fn redis_error(&self, error: fred::error::Error) -> Error {
        self.redis_error_as(self.owner(), error)
    }

    fn redis_error_as(&self, owner: LockOwner, error: fred::error::Error) -> Error {
        if let Some(typed) = self.kind.script_error(&self.target(owner), &error) {
            typed
        } else if is_wrong_type(&error) {
            Error::WrongType {
                key: self.name.to_string(),
            }
        } else if self.context.is_closed() {
            Error::Shutdown
        } else {
            Error::Redis(error)
        }
    }

    /// Sends one script call.
    async fn run(&self, call: &ScriptCall, resend: Resend) -> Result<Value, fred::error::Error> {
        call.script
            .run(
                &self.context.redis,
                &call.keys,
                &call.args,
                resend,
                self.context.config.response_timeout,
            )
            .await
    }

    /// Sends one script call that changes the lock, followed by `WAIT` for the replicas
    /// in the same pipeline when the configuration asks for it (see
    /// [`ReplicaSync`](crate::replicas::ReplicaSync)).
    async fn run_synced(
        &self,
        call: &ScriptCall,
        resend: Resend,
    ) -> Result<(Value, Synced), fred::error::Error> {
        call.script
            .run_synced(
                &self.context.redis,
                &call.keys,
                &call.args,
                resend,
                self.context.config.response_timeout,
                &self.context.replicas,
            )
            .await
    }

    /// An unlock or force unlock that no replica acknowledged is logged, not failed: it
    /// did happen on the primary, and failing it would tell the caller it still holds a
    /// lock it gave back. (Redisson fails it with `NoSyncedSlavesException` after its
    /// retries; see `docs/reliability.md`.)
    fn log_unsynced(&self, operation: &str, synced: &Synced) {
        match synced {
            Synced::NoneAcked { replicas } => tracing::warn!(
                lock = %self.name,
                operation,
                replicas,
                "None of slaves were synced: the primary applied it, no replica acknowledged it"
            ),
            Synced::Failed(error) => tracing::warn!(
                lock = %self.name,
                operation,
                %error,
                "WAIT for the replicas failed: the primary applied it"
            ),
            Synced::Unchecked | Synced::Acked => {}
        }
    }

    /// Redisson's acquire loop (protocol §7): try; if held, subscribe; then retry, and
    /// sleep until a message or the holder's TTL (bounded by the wait budget). A spin
    /// lock sleeps its back-off instead of listening.
    async fn acquire_as(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        let started = Instant::now();
        let span = tracing::debug_span!(
            "redisson_lock.acquire",
            lock = %self.name,
            kind = K::NAME,
            %owner,
            lease_ms = lease.map(|l| l.as_millis() as u64),
            ?wait,
            outcome = tracing::field::Empty,
        );
        let result = match self
            .acquire_with_wait(owner, lease, wait)
            .instrument(span.clone())
            .await
        {
            // A non-reentrant lock the caller already holds: `try_lock*` answer false at
            // once (waiting would wait on itself); `lock()` returns the error.
            Err(Error::NonReentrant { .. }) if !matches!(wait, Wait::Forever) => Ok(None),
            other => other,
        };
        let outcome = match &result {
            Ok(Some(_)) => telemetry::AcquireOutcome::Acquired,
            Ok(None) => telemetry::AcquireOutcome::TimedOut,
            Err(_) => telemetry::AcquireOutcome::Error,
        };
        span.record("outcome", outcome.as_str());
        telemetry::acquire_finished(K::NAME, outcome, started.elapsed(), self.metric_name());
        result
    }

    /// The lock name as a metrics label, when the configuration opts in.
    fn metric_name(&self) -> Option<&str> {
        self.context
            .config
            .metrics_lock_names
            .then_some(&*self.name)
    }

    async fn acquire_with_wait(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        self.check()?;
        self.kind.check()?;
        let lease_ms = lease.map(lease_millis).transpose()?;
        if matches!(wait, Wait::Once) && !K::YIELDS_TO_WRITERS {
            // One attempt: nothing to wait for, no queue to leave.
            let mode = AcquireMode::Once;
            return match self.attempt(owner, lease_ms, mode, wait).await? {
                Attempt::Acquired(acquired) => Ok(Some(acquired)),
                Attempt::Held(_) => Ok(None),
            };
        }
        if K::HANDS_OFF {
            return self.acquire_in_line(owner, lease_ms, wait).await;
        }
        // Boxed: inline, a reentrant lock's `lock()` future (which never takes this path)
        // would carry this wait's size too, and every waiting task with it.
        Box::pin(self.acquire_redisson_wait(owner, lease_ms, wait)).await
    }

    /// Redisson's wait for the kinds without a local line (fair, read-write, fenced,
    /// spin): try, subscribe (or poll), retry until taken or out of time.
    async fn acquire_redisson_wait(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        let mode = match wait {
            Wait::Once => AcquireMode::Once,
            Wait::Until(_, budget) => AcquireMode::Queue {
                wait_ms: budget.as_millis().clamp(1, u128::from(u64::MAX)) as u64,
            },
            Wait::Forever => AcquireMode::Queue {
                wait_ms: self.context.config.fair_lock_wait_timeout.as_millis() as u64,
            },
        };
        // A queued waiter that leaves without the lock must leave the queue: on every
        // early return and on drop (unless an attempt in flight does it itself).
        let mut queued = QueueExit::new(self, owner, mode);
        let first_deadline = match wait {
            Wait::Once => Some(Instant::now()),
            Wait::Until(deadline, _) => Some(deadline),
            Wait::Forever => None,
        };
        if !self.yield_to_writers(owner, first_deadline).await {
            return Ok(None);
        }
        queued.in_flight = true;
        let first = self.attempt(owner, lease_ms, mode, wait).await;
        queued.in_flight = false;
        let ttl = match first? {
            Attempt::Acquired(acquired) => {
                queued.disarm();
                return Ok(Some(acquired));
            }
            Attempt::Held(ttl) => ttl,
        };
        let deadline = match wait {
            Wait::Once => return Ok(None),
            Wait::Until(deadline, _) if Instant::now() >= deadline => {
                queued.leave().await;
                return Ok(None);
            }
            Wait::Until(deadline, _) => Some(deadline),
            Wait::Forever => None,
        };
        let _waiting = telemetry::Waiting::start(K::NAME);
        let _announced = K::WRITER.then(|| self.context.writers.announce(&self.name));
        let waited = match self.kind.waiting(&self.target(owner)) {
            Waiting::Channel(channel) => {
                self.wait_on_channel(owner, lease_ms, mode, deadline, ttl, &channel, &mut queued)
                    .await
            }
            Waiting::Poll(backoff) => {
                self.wait_polling(owner, lease_ms, mode, deadline, backoff, &mut queued)
                    .await
            }
        };
        match waited {
            Ok(Some(acquired)) => {
                queued.disarm();
                Ok(Some(acquired))
            }
            Ok(None) => {
                queued.leave().await;
                Ok(None)
            }
            // The queue exit runs in the background when `queued` drops.
            Err(error) => Err(error),
        }
    }

    /// A reader that holds nothing on this lock lets this client's announced write
    /// waiters go first (see `writer_gates`); returns false when `deadline` passed
    /// first. Every other kind passes at once.
    async fn yield_to_writers(&self, owner: LockOwner, deadline: Option<Instant>) -> bool {
        if !K::YIELDS_TO_WRITERS {
            return true;
        }
        let Some(gate) = self.context.writers.waiting(&self.name) else {
            return true;
        };
        let holds = &self.context.holds;
        if holds.known(&self.name, owner, false) > 0 || holds.known(&self.name, owner, true) > 0 {
            return true; // re-entry or downgrade: never wait on a writer here
        }
        tracing::trace!(lock = %self.name, %owner, "a writer of this client waits: letting it go first");
        gate.cleared_by(deadline).await
    }

    /// The pub/sub wait: subscribe, then retry and sleep until a message or
    /// min(holder's TTL, remaining budget).
    #[allow(clippy::too_many_arguments)]
    async fn wait_on_channel(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        ttl: i64,
        channel: &str,
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        tracing::trace!(ttl, channel, "held by another owner; subscribing");
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        let pubsub = &self.context.pubsub;
        let Some(subscription) = self.subscribe(owner, channel, deadline).await? else {
            return Ok(None);
        };
        loop {
            // Before listening: a reader that lets a writer go first must not take the
            // writer's wake-up (a `0` wakes one listener).
            if !self.yield_to_writers(owner, deadline).await {
                return Ok(None);
            }
            let woken = subscription.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if pubsub.is_closed() {
                return Err(Error::Shutdown);
            }
            queued.in_flight = true;
            let attempt = self.attempt(owner, lease_ms, mode, wait).await;
            queued.in_flight = false;
            let ttl = match attempt? {
                Attempt::Acquired(acquired) => return Ok(Some(acquired)),
                Attempt::Held(ttl) => ttl,
            };
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if remaining == Some(Duration::ZERO) {
                return Ok(None);
            }
            let holder = (ttl >= 0).then(|| Duration::from_millis(ttl as u64));
            let sleep_for = match (holder, remaining) {
                (Some(h), Some(r)) => Some(h.min(r)),
                (h, r) => h.or(r),
            };
            tracing::trace!(ttl, ?sleep_for, "waiting for an unlock message");
            match sleep_for {
                Some(limit) => {
                    tokio::select! {
                        _ = &mut woken => {}
                        _ = tokio::time::sleep(limit) => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// The polling wait of a spin lock: sleep the back-off (never past the deadline, and
    /// not past a shutdown), retry.
    async fn wait_polling(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        backoff: Backoff,
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        let mut delays = backoff.delays();
        let mut shutdown = self.context.shutdown.subscribe();
        loop {
            let delay = delays.next_delay();
            let sleep_for = match deadline {
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return Ok(None);
                    }
                    delay.min(remaining)
                }
                None => delay,
            };
            // A shutdown ends the sleep: a back-off step may be long.
            tokio::select! {
                _ = tokio::time::sleep(sleep_for) => {}
                _ = shutdown.wait_for(|closed| *closed) => {}
            }
            if self.context.is_closed() {
                return Err(Error::Shutdown);
            }
            queued.in_flight = true;
            let attempt = self.attempt(owner, lease_ms, mode, wait).await;
            queued.in_flight = false;
            if let Attempt::Acquired(acquired) = attempt? {
                return Ok(Some(acquired));
            }
        }
    }

    /// One acquire script, finished in the background if the caller goes away (and then
    /// undone: released if it took the lock, the queue left if it queued). Registers a
    /// watchdog hold on success.
    async fn attempt(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        wait: Wait,
    ) -> Result<Attempt> {
        let lease = lease_ms.unwrap_or(self.context.watchdog_ms);
        let started = Instant::now();
        let settle_by = self.settle_by(wait, lease);
        let work = {
            let lock = self.clone();
            async move { lock.acquire_script(owner, lease, mode, settle_by).await }
        };
        let undo = {
            let lock = self.clone();
            move |reply: Result<Acquire>| async move {
                match reply {
                    Ok(Acquire::Taken { .. }) => {
                        tracing::debug!(lock = %lock.name, %owner, "acquired after the caller left: releasing");
                        if let Err(error) = lock.release_script(owner, lease).await {
                            tracing::warn!(lock = %lock.name, %error, "could not release an abandoned acquisition");
                        }
                    }
                    _ => {
                        if let AcquireMode::Queue { wait_ms } = mode {
                            lock.leave_queue(owner, wait_ms).await;
                        }
                    }
                }
            }
        };
        let token = match FinishOnDrop::new(work, undo).await? {
            Acquire::Held { ttl } => return Ok(Attempt::Held(ttl)),
            Acquire::Taken { token } => token,
        };
        let acquired = self.register_acquired(owner, lease_ms, started, token);
        if K::HANDS_OFF {
            if let Some(line) = self.context.lines.get(&self.name) {
                line.taken_by(owner, acquired.lease_deadline);
            }
        }
        Ok(Attempt::Acquired(acquired))
    }

    /// What every acquisition does once Redis said it is ours (by an acquire script, or by
    /// a hand-off that started at `started`): a watchdog hold registers with the renewal
    /// registry, a lease hold sets the re-arm lease; the hold ledger counts it.
    fn register_acquired(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        started: Instant,
        token: Option<u64>,
    ) -> Acquired {
        let target = self.target(owner);
        let acquired = match lease_ms {
            None => {
                let lost = self
                    .context
                    .renewal
                    .add_hold(&self.name, owner, K::WRITER, || {
                        self.kind.renewable(&target)
                    });
                Acquired {
                    lost,
                    lease_deadline: None,
                    token,
                }
            }
            Some(lease) => {
                self.internal_lease_ms.store(lease, Ordering::Relaxed);
                let lost = self
                    .context
                    .renewal
                    .signal(&self.name, owner, K::WRITER)
                    .unwrap_or_default();
                Acquired {
                    lost,
                    lease_deadline: Some(started + Duration::from_millis(lease)),
                    token,
                }
            }
        };
        self.context.holds.acquired(
            &self.name,
            owner,
            K::WRITER,
            acquired.lease_deadline,
            acquired.lost.clone(),
        );
        acquired
    }

    /// Until when an acquire whose reply was lost may spend learning its outcome: the
    /// caller's wait budget, but at least two response timeouts; for a caller that waits
    /// without a bound, until the hold it may have taken would have expired (its lease,
    /// plus a response timeout), after which nothing of it can remain.
    fn settle_by(&self, wait: Wait, lease_ms: u64) -> Instant {
        let now = Instant::now();
        let config = &self.context.config;
        let floor = now + config.response_timeout.saturating_mul(2);
        match wait {
            Wait::Once => floor,
            Wait::Until(deadline, _) => deadline.max(floor),
            Wait::Forever => {
                floor.max(now + Duration::from_millis(lease_ms) + config.response_timeout)
            }
        }
    }

    /// The kind's acquire script. Written at most once (see [`Resend::Never`]): when its
    /// reply is lost, the owner's count in Redis says whether it ran (see
    /// [`HoldLedger`](crate::hold_ledger::HoldLedger)); a script that surely did not run
    /// is sent again, one that ran is reported (or, for a fenced lock whose token was
    /// lost with the reply, undone and sent again).
    async fn acquire_script(
        &self,
        owner: LockOwner,
        lease_ms: u64,
        mode: AcquireMode,
        settle_by: Instant,
    ) -> Result<Acquire> {
        self.settle_doubt(owner).await?;
        let mut sends = 0u32;
        loop {
            sends += 1;
            let before = self.context.holds.known(&self.name, owner, K::WRITER);
            let call = self.kind.acquire(&self.target(owner), lease_ms, mode);
            // A hold this send takes is gone by then at the latest, unless something
            // else keeps the hash alive (see `learn_outcome`).
            let expires_by = Instant::now()
                + Duration::from_millis(lease_ms)
                + self.context.config.response_timeout;
            let error = match self.run_synced(&call, Resend::Never).await {
                Ok((reply, synced)) => {
                    let acquire = self
                        .kind
                        .acquire_reply(reply)
                        .map_err(|other| unexpected("acquire", other))?;
                    return match (acquire, synced) {
                        (Acquire::Taken { .. }, Synced::NoneAcked { replicas }) => {
                            self.undo_unsynced(owner, before, lease_ms).await;
                            Err(Error::NoSyncedReplicas {
                                name: self.name.to_string(),
                                replicas,
                            })
                        }
                        (Acquire::Taken { .. }, Synced::Failed(error)) => {
                            self.undo_unsynced(owner, before, lease_ms).await;
                            Err(self.redis_error_as(owner, error))
                        }
                        (acquire, _) => Ok(acquire),
                    };
                }
                Err(error) if outcome_unknown(&error) && !self.context.is_closed() => error,
                Err(error) => return Err(self.redis_error_as(owner, error)),
            };
            tracing::warn!(lock = %self.name, %owner, %error, "acquire outcome unknown; reading the owner's hold count");
            match self
                .learn_outcome(
                    owner,
                    &self.kind.field(&self.context, owner),
                    before,
                    (settle_by, expires_by),
                    &error,
                )
                .await?
            {
                Outcome::Ran if !K::TOKENS => return Ok(Acquire::Taken { token: None }),
                Outcome::Ran => {
                    // The token went with the lost reply: give the hold back, draw again.
                    self.release_script(owner, lease_ms).await?;
                }
                Outcome::NotRun => {}
            }
            if sends >= 3 {
                // Nothing is held: each unknown outcome was settled as "did not run" (or
                // undone), so the error is just an error.
                return Err(self.redis_error_as(owner, error));
            }
        }
    }

    /// Undoes an acquisition no replica acknowledged (Redisson's `handleNoSync`): one
    /// release of the kind, without a `WAIT` of its own (the replicas just failed to
    /// answer; waiting again would double the caller's wait). The acquisition was never
    /// reported, so the hold ledger has nothing to take back; if the release itself
    /// fails, the acquisition is left in doubt and the next call settles it.
    async fn undo_unsynced(&self, owner: LockOwner, before: u32, lease_ms: u64) {
        tracing::warn!(lock = %self.name, %owner, "no replica acknowledged the acquisition: undoing it");
        if let Err(error) = self.release_script_with(owner, lease_ms, false, None).await {
            tracing::warn!(lock = %self.name, %owner, %error, "could not undo an unsynced acquisition; the next call settles it");
            self.leave_in_doubt(owner, before);
        }
    }

    /// Reads the owner's count after an acquire whose reply was lost: `before + 1` means
    /// it ran, `before` that it did not. Retries the read until `settle_by`; past that,
    /// the hold is marked in doubt (settled by this client's next call on the lock and
    /// owner) and the caller gets [`Error::OutcomeUnknown`].
    async fn learn_outcome(
        &self,
        owner: LockOwner,
        field: &str,
        before: u32,
        (settle_by, expires_by): (Instant, Instant),
        lost_reply: &fred::error::Error,
    ) -> Result<Outcome> {
        let mut pause = Duration::from_millis(20);
        loop {
            match self.hold_count_in_redis(field).await {
                Ok(count) if count == u64::from(before) + 1 => return Ok(Outcome::Ran),
                Ok(count) if count == u64::from(before) => return Ok(Outcome::NotRun),
                // More than one send ran (a send thought not to have run was still pending
                // somewhere, as in a failover). A task's or thread's own owner id is used
                // by nobody else, so the extra holds are this call's: give them back.
                Ok(count) if count > u64::from(before) + 1 && owner.is_automatic() => {
                    let extra = count - u64::from(before) - 1;
                    tracing::warn!(lock = %self.name, %owner, extra, "an acquire ran more than once; giving back the extra holds");
                    let lease = self.internal_lease_ms.load(Ordering::Relaxed);
                    for _ in 0..extra {
                        self.release_script(owner, lease).await?;
                    }
                    return Ok(Outcome::Ran);
                }
                Ok(count) => {
                    return Err(Error::OutcomeUnknown {
                        operation: "acquire",
                        name: self.name.to_string(),
                        reason: format!(
                            "its reply was lost ({lost_reply}), and Redis counts {count} holds of \
                             owner {owner} where this client expected {before} or {}: another \
                             task or process acts as the same owner. Check `hold_count()` and \
                             unlock as your protocol requires.",
                            before + 1
                        ),
                    })
                }
                Err(error @ (Error::WrongType { .. } | Error::Shutdown)) => return Err(error),
                Err(error) if Instant::now() + pause >= settle_by => {
                    // With no earlier hold of this owner (whose renewal would keep the
                    // hash alive) and not a read lock (whose hash other readers keep
                    // alive), a hold the lost send took has expired by `expires_by`.
                    if before == 0
                        && !K::YIELDS_TO_WRITERS
                        && expires_by <= settle_by + Duration::from_millis(100)
                    {
                        tokio::time::sleep_until(expires_by).await;
                        tracing::debug!(lock = %self.name, %owner, "any hold the lost acquire took has expired");
                        return Ok(Outcome::NotRun);
                    }
                    self.leave_in_doubt(owner, before);
                    return Err(Error::OutcomeUnknown {
                        operation: "acquire",
                        name: self.name.to_string(),
                        reason: format!(
                            "its reply was lost ({lost_reply}) and Redis could not be asked \
                             whether it ran ({error}). Nothing is reported held: if it ran, \
                             this client undoes it at its next call on this lock as owner \
                             {owner}, and otherwise its lease ends it."
                        ),
                    });
                }
                Err(_) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// Settles an acquire left in doubt by an earlier call: if it ran, nobody was told,
    /// so its hold is given back before anything else happens.
    async fn settle_doubt(&self, owner: LockOwner) -> Result<()> {
        let Some(settling) = self.context.holds.settling(&self.name, owner, K::WRITER) else {
            return Ok(());
        };
        // One settler at a time (this call, another call, the background settler); the
        // doubt may be gone once it is our turn.
        let _turn = settling.lock().await;
        let Some(before) = self.context.holds.in_doubt(&self.name, owner, K::WRITER) else {
            return Ok(());
        };
        let field = self.kind.field(&self.context, owner);
        let field = field.as_str();
        let count = self.hold_count_in_redis(field).await?;
        let mut known = count.min(u64::from(before)) as u32;
        if count == u64::from(before) + 1 {
            tracing::warn!(lock = %self.name, %owner, "undoing an acquisition whose reply was lost");
            let lease = self.internal_lease_ms.load(Ordering::Relaxed);
            self.release_script(owner, lease).await?;
            known = before;
        }
        self.context
            .holds
            .settled(&self.name, owner, K::WRITER, known);
        Ok(())
    }

    /// Marks an acquire of `owner` in doubt (see [`Lock::settle_doubt`]) and settles it in
    /// the background as soon as Redis answers, so that a hold nobody was told about does
    /// not wait for this owner's next call; the next call waits for a settlement in
    /// progress. Gives up when the client shuts down or after ten minutes.
    fn leave_in_doubt(&self, owner: LockOwner, before: u32) {
        self.context
            .holds
            .mark_in_doubt(&self.name, owner, K::WRITER, before);
        let lock = self.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let give_up = Instant::now() + Duration::from_secs(600);
            let mut pause = Duration::from_millis(100);
            while !lock.context.is_closed() && Instant::now() < give_up {
                match lock.settle_doubt(owner).await {
                    Ok(()) => return,
                    Err(error) => {
                        tracing::debug!(lock = %lock.name, %owner, %error, "settling an acquire in doubt; retrying");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                    }
                }
            }
        });
    }

    /// `HGET name field` as a count (0 when absent).
    async fn hold_count_in_redis(&self, field: &str) -> Result<u64> {
        let count: Option<i64> = self
            .context
            .redis
            .hget(&*self.name, field)
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(count.unwrap_or(0).max(0) as u64)
    }

    /// The kind's queue clean-up (the fair lock's `acquireFailed`), sent with retries: it
    /// is idempotent, and a waiter left in the queue blocks everyone behind it.
    async fn leave_queue(&self, owner: LockOwner, wait_ms: u64) {
        let Some(call) = self.kind.acquire_failed(&self.target(owner), wait_ms) else {
            return;
        };
        for retry in 0..3u64 {
            match self.run(&call, Resend::Allowed).await {
                Ok(_) => return,
                Err(error) if retry < 2 && !self.context.is_closed() => {
                    tracing::debug!(lock = %self.name, %owner, %error, "leaving the queue failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50 * (retry + 1))).await;
                }
                Err(error) => {
                    tracing::warn!(lock = %self.name, %owner, %error, "could not leave the queue; the stale-waiter purge will");
                    return;
                }
            }
        }
    }

    /// An unlock as `owner`, finished even if dropped: one watchdog hold stops at once
    /// (whatever Redis will answer, as in Redisson), then the release runs.
    pub(crate) async fn unlock_as(&self, owner: LockOwner) -> Result<UnlockReply> {
        self.check()?;
        self.stop_renewal(owner);
        let lock = self.clone();
        let span = tracing::debug_span!(
            "redisson_lock.unlock",
            lock = %self.name,
            kind = K::NAME,
            %owner,
            outcome = tracing::field::Empty,
        );
        let work = async move { lock.release_settled(owner).await }.instrument(span);
        FinishOnDrop::new(work, |_| async {}).await
    }

    /// Removes one watchdog hold of `owner`: the first half of every unlock, done
    /// synchronously (a dropped guard calls it from `Drop`).
    pub(crate) fn stop_renewal(&self, owner: LockOwner) {
        self.context
            .renewal
            .remove_hold(&self.name, owner, K::WRITER);
    }

    /// The second half of every unlock: the release script, then the re-arm lease is
    /// reset after a full release (Redisson 3.27.2+: not after a partial one).
    pub(crate) async fn release_settled(&self, owner: LockOwner) -> Result<UnlockReply> {
        self.settle_doubt(owner).await?;
        let lease = self.internal_lease_ms.load(Ordering::Relaxed);
        let released = if K::HANDS_OFF {
            self.release_or_hand_off(owner, lease).await
        } else {
            self.release_script(owner, lease).await
        };
        let (outcome, held_for) = match released {
            Ok(UnlockReply::StillHeld) => (
                telemetry::UnlockOutcome::StillHeld,
                self.context
                    .holds
                    .released(&self.name, owner, K::WRITER, false),
            ),
            Ok(UnlockReply::Released | UnlockReply::Handed) => (
                telemetry::UnlockOutcome::Released,
                self.context
                    .holds
                    .released(&self.name, owner, K::WRITER, true),
            ),
            Ok(UnlockReply::NotOwner) => {
                self.context
                    .holds
                    .released(&self.name, owner, K::WRITER, true);
                (telemetry::UnlockOutcome::NotOwner, None)
            }
            Err(_) => (telemetry::UnlockOutcome::Error, None),
        };
        tracing::Span::current().record("outcome", outcome.as_str());
        telemetry::unlock_finished(K::NAME, outcome, held_for, self.metric_name());
        if matches!(
            released,
            Ok(UnlockReply::Released | UnlockReply::Handed | UnlockReply::NotOwner)
        ) {
            self.internal_lease_ms
                .store(self.context.watchdog_ms, Ordering::Relaxed);
        }
        released
    }

    /// The release of a kind that hands off (see [`crate::local_queue`]): when this
    /// owner gives back its last hold and a local waiter is the head of the lock's line,
    /// the release script hands the lock to it; otherwise it is the kind's release.
    async fn release_or_hand_off(&self, owner: LockOwner, lease_ms: u64) -> Result<UnlockReply> {
        let context = &self.context;
        let line = context.lines.get(&self.name);
        let handoff = line.as_ref().and_then(|line| {
            (context.holds.known(&self.name, owner, K::WRITER) <= 1)
                .then(|| line.begin_handoff(owner, &context.handoff_limits))
                .flatten()
        });
        let Some(handoff) = handoff else {
            let started = Instant::now();
            let released = self.release_script(owner, lease_ms).await;
            if let (Some(line), Ok(UnlockReply::Released | UnlockReply::NotOwner)) =
                (&line, &released)
            {
                line.released_by(
                    Some(owner),
                    matches!(released, Ok(UnlockReply::Released)).then(|| started.elapsed()),
                );
            }
            return released;
        };
        let next = base::HandoffTo {
            field: self.kind.field(context, handoff.to),
            lease_ms: handoff.lease_ms.unwrap_or(context.watchdog_ms),
            listeners: handoff.listeners,
        };
        let released = self
            .release_script_with(owner, lease_ms, true, Some(&next))
            .await;
        let line = &handoff.line;
        match &released {
            Ok(UnlockReply::Handed) => {
                tracing::trace!(lock = %self.name, from = %owner, to = %handoff.to, "handed to the next local waiter");
                if !line.handed(&handoff) {
                    tracing::debug!(lock = %self.name, owner = %handoff.to, "the waiter left during its hand-off: giving the lock back");
                    self.with_owner(handoff.to).release_in_background();
                }
            }
            Ok(UnlockReply::Released | UnlockReply::NotOwner) => line.not_handed(&handoff, true),
            Ok(UnlockReply::StillHeld) => line.not_handed(&handoff, false),
            Err(_) => {
                // The hand-off may have run: the head settles that before it tries.
                self.with_owner(handoff.to).leave_in_doubt(handoff.to, 0);
                line.not_handed(&handoff, false);
            }
        }
        context.lines.retire_if_idle(line);
        released
    }

    /// `lock()` and the waiting `try_lock*` of a kind that hands off: one attempt unless
    /// this client already has waiters or another holder for the lock, then a place in the
    /// lock's local line (see [`crate::local_queue`]).
    async fn acquire_in_line(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        let context = &self.context;
        let deadline = match wait {
            Wait::Until(deadline, _) => Some(deadline),
            Wait::Once | Wait::Forever => None,
        };
        let mode = AcquireMode::Queue {
            wait_ms: context.config.fair_lock_wait_timeout.as_millis() as u64,
        };
        // An owner that holds the lock already re-enters (never queues behind itself).
        let queue_at_once = context
            .lines
            .get(&self.name)
            .is_some_and(|line| line.should_queue(owner))
            && context.holds.known(&self.name, owner, K::WRITER) == 0;
        let mut ttl = None;
        if !queue_at_once {
            match self.attempt(owner, lease_ms, mode, wait).await? {
                Attempt::Acquired(acquired) => return Ok(Some(acquired)),
                Attempt::Held(held) => ttl = Some(held),
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
        }
        let _waiting = telemetry::Waiting::start(K::NAME);
        let line = context.lines.get_or_make(&self.name);
        let mut place = InLine {
            lock: self,
            ticket: Some(line.join(owner, lease_ms)),
        };
        loop {
            let Some(ticket) = place.ticket.as_ref() else {
                return Ok(None);
            };
            match ticket.wait_turn(deadline).await {
                Stage::Granted { at } => return Ok(Some(place.take_grant(owner, lease_ms, at))),
                Stage::Queued => {
                    if context.is_closed() {
                        return Err(Error::Shutdown);
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
                Stage::Head | Stage::Trying | Stage::Handing => break,
            }
        }
        // The head waits in Redis. Boxed: one task per line runs it at a time, so the
        // others do not carry its size while they wait.
        let head = Box::pin(self.wait_as_head(&place, lease_ms, mode, deadline, ttl)).await;
        match head? {
            Head::Taken(acquired) => {
                place.leave_taken(acquired.lease_deadline);
                Ok(Some(acquired))
            }
            Head::Granted(at) => Ok(Some(place.take_grant(owner, lease_ms, at))),
            Head::TimedOut => Ok(None),
        }
    }

    /// The head of a local line: Redisson's wait (subscribed; tries after a message, a
    /// nudge, or the holder's TTL), except that while another owner of this client holds
    /// the lock it does not try: that holder's unlock hands the lock over or publishes.
    async fn wait_as_head(
        &self,
        place: &InLine<'_, K>,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        mut ttl: Option<i64>,
    ) -> Result<Head> {
        let Some(ticket) = place.ticket.as_ref() else {
            return Ok(Head::TimedOut);
        };
        let owner = ticket.owner();
        let line = ticket.line();
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        let subscription = match line.subscription() {
            Some(subscription) => subscription,
            None => {
                let channel = match self.kind.waiting(&self.target(owner)) {
                    Waiting::Channel(channel) => channel,
                    Waiting::Poll(_) => crate::names::lock_channel(&self.name),
                };
                match self.subscribe(owner, &channel, deadline).await? {
                    Some(subscription) => line.keep_subscription(subscription),
                    None => return Ok(Head::TimedOut),
                }
            }
        };
        let pubsub = &self.context.pubsub;
        // Redisson subscribes, then tries again; a head behind a local holder waits for it.
        let mut try_now = line.local_holder_other_than(owner).is_none();
        // A message came while a hand-off to us was in flight (we could not try then).
        let mut message_pending = false;
        // After a local holder's real release: not before other clients had a round trip.
        let mut not_before: Option<Instant> = None;
        loop {
            let woken = subscription.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let nudged = ticket.notified();
            tokio::pin!(nudged);
            nudged.as_mut().enable();
            if pubsub.is_closed() || self.context.is_closed() {
                return Err(Error::Shutdown);
            }
            if let Stage::Granted { at } = ticket.stage() {
                return Ok(Head::Granted(at));
            }
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if remaining == Some(Duration::ZERO) {
                return Ok(Head::TimedOut);
            }
            if let Some(at) = not_before.filter(|at| try_now && *at > Instant::now()) {
                tokio::time::sleep_until(at).await;
                continue;
            }
            if try_now && ticket.start_trying() {
                message_pending = false;
                not_before = None;
                let attempt = self.attempt(owner, lease_ms, mode, wait).await;
                ticket.stop_trying();
                match attempt? {
                    Attempt::Acquired(acquired) => return Ok(Head::Taken(acquired)),
                    Attempt::Held(held) => ttl = Some(held),
                }
            }
            let holder_ends = match line.local_holder_other_than(owner) {
                // A local holder's unlock wakes us; its lease, or the watchdog timeout
                // for a renewed hold, bounds the wait in case it lost the lock silently.
                Some(until) => Some(
                    until.map_or(Duration::from_millis(self.context.watchdog_ms), |until| {
                        until.saturating_duration_since(Instant::now())
                    }),
                ),
                None => match ttl {
                    Some(ttl) if ttl >= 0 => Some(Duration::from_millis(ttl as u64)),
                    Some(_) => None,
                    None => Some(Duration::ZERO),
                },
            };
            let sleep_for = match (holder_ends, remaining) {
                (Some(h), Some(r)) => Some(h.min(r)),
                (h, r) => h.or(r),
            };
            tracing::trace!(?ttl, ?sleep_for, "head of the local line: waiting");
            let limit = sleep_for.unwrap_or(Duration::MAX);
            let sleep = async {
                match Instant::now().checked_add(limit) {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            try_now = tokio::select! {
                _ = &mut woken => {
                    message_pending = ticket.stage() == Stage::Handing;
                    true
                }
                // A real release by a local holder that published: try once its message
                // is here (it may have come already), a round trip later.
                _ = &mut nudged => match line.take_published() {
                    Some(round_trip) => {
                        not_before = Some(Instant::now() + round_trip);
                        message_pending
                    }
                    None => true,
                },
                _ = sleep => true,
            };
        }
    }

    /// Subscribes to `channel` for a waiter, within `deadline` (`Ok(None)`: it passed) or
    /// the subscription timeout.
    async fn subscribe(
        &self,
        owner: LockOwner,
        channel: &str,
        deadline: Option<Instant>,
    ) -> Result<Option<crate::pubsub::Subscription>> {
        let pubsub = &self.context.pubsub;
        // Boxed: subscribing is a large future (fred's subscribe and its confirmation)
        // that runs once per wait; inline, every waiting task would carry its size for
        // as long as it waits.
        let subscribe = Box::pin(pubsub.subscribe(channel));
        match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, subscribe).await {
                Ok(subscribed) => subscribed
                    .map(Some)
                    .map_err(|e| self.redis_error_as(owner, e)),
                Err(_) => Ok(None),
            },
            None => {
                let limit = self.context.config.subscription_timeout;
                tokio::time::timeout(limit, subscribe)
                    .await
                    .map_err(|_| Error::Timeout {
                        what: "subscribing to the lock channel",
                        after: limit,
                    })?
                    .map(Some)
                    .map_err(|e| self.redis_error_as(owner, e))
            }
        }
    }

    /// The unlock of a dropped guard (whose renewal hold `Drop` already removed).
    pub(crate) async fn release_dropped(self) {
        let owner = self.owner();
        match self.release_settled(owner).await {
            Ok(UnlockReply::NotOwner) => {
                tracing::debug!(lock = %self.name, %owner, "dropped guard: lock was already gone")
            }
            Ok(_) => tracing::debug!(lock = %self.name, %owner, "dropped guard: released"),
            Err(error) => {
                tracing::warn!(lock = %self.name, %owner, %error, "dropped guard: release failed; the lease will end it")
            }
        }
    }

    /// Hands this handle (acting as a dropped guard's owner) to the client's chore task,
    /// which releases one hold.
    pub(crate) fn release_in_background(&self) {
        let lock = self.clone();
        self.context.release_later(Box::pin(lock.release_dropped()));
    }

    /// The kind's release script, retried with the same latch while its outcome is
    /// unknown, and followed by `WAIT` for the replicas (logged, never failed).
    pub(crate) async fn release_script(
        &self,
        owner: LockOwner,
        lease_ms: u64,
    ) -> Result<UnlockReply> {
        self.release_script_with(owner, lease_ms, true, None).await
    }

    /// [`Lock::release_script`]; `sync`: whether to `WAIT` for the replicas; `next`: the
    /// local owner to hand the lock to (see [`crate::local_queue`]).
    async fn release_script_with(
        &self,
        owner: LockOwner,
        lease_ms: u64,
        sync: bool,
        next: Option<&base::HandoffTo>,
    ) -> Result<UnlockReply> {
        let context = &self.context;
        let latch = unlock_latch(&self.name, context.next_request_id());
        let latch_ttl = context.config.unlock_latch_ttl;
        let target = self.target(owner);
        let call = next
            .and_then(|next| self.kind.handoff(&target, lease_ms, &latch, next))
            .unwrap_or_else(|| self.kind.release(&target, lease_ms, &latch));
        let started = Instant::now();
        let mut retries = 0u32;
        loop {
            let reply = if sync {
                self.run_synced(&call, Resend::Never).await
            } else {
                self.run(&call, Resend::Never)
                    .await
                    .map(|reply| (reply, Synced::Unchecked))
            };
            match reply {
                Ok((reply, synced)) => {
                    self.log_unsynced("unlock", &synced);
                    context.delete_latch_later(latch);
                    return match reply {
                        Value::Null => Ok(UnlockReply::NotOwner),
                        Value::Integer(0) => Ok(UnlockReply::StillHeld),
                        Value::Integer(1) => Ok(UnlockReply::Released),
                        Value::Integer(2) if next.is_some() => Ok(UnlockReply::Handed),
                        other => Err(unexpected("unlock", other)),
                    };
                }
                // The first reply may have been lost after the script ran: ask again with
                // the same latch, which answers what the first call did. Only while the
                // latch surely still lives. (A call fred never wrote is re-sent by
                // `Script::run` itself.)
                Err(error)
                    if outcome_unknown(&error)
                        && retries < 5
                        && !context.is_closed()
                        && started.elapsed() < latch_ttl / 2 =>
                {
                    retries += 1;
                    tracing::warn!(lock = %self.name, %error, retries, "unlock outcome unknown; asking again");
                    tokio::time::sleep(Duration::from_millis(20 * u64::from(retries))).await;
                }
                Err(error) => return Err(self.redis_error_as(owner, error)),
            }
        }
    }
}

/// How the head of a local line came to hold the lock, or not.
enum Head {
    /// Its own acquire script took it.
    Taken(Acquired),
    /// A local holder handed it over; the hold started then.
    Granted(Instant),
    TimedOut,
}

/// A waiter's place in its lock's local line, held by the waiting future: leaving the
/// line on every way out (done, given up, failed, dropped), and giving back a lock that
/// was handed to a waiter that went away before taking it.
struct InLine<'a, K: LockKind> {
    lock: &'a Lock<K>,
    ticket: Option<Ticket>,
}

impl<K: LockKind> InLine<'_, K> {
    /// Takes the hold a local holder handed over (at `at`) and leaves the line.
    fn take_grant(&mut self, owner: LockOwner, lease_ms: Option<u64>, at: Instant) -> Acquired {
        if let Some(ticket) = self.ticket.take() {
            let line = ticket.line().clone();
            ticket.take_grant();
            self.lock.context.lines.retire_if_idle(&line);
        }
        self.lock.register_acquired(owner, lease_ms, at, None)
    }

    /// Leaves the line as the new local holder (its own try took the lock).
    fn leave_taken(&mut self, until: Option<Instant>) {
        if let Some(ticket) = self.ticket.take() {
            let line = ticket.line().clone();
            ticket.leave(Some(until));
            self.lock.context.lines.retire_if_idle(&line);
        }
    }
}

impl<K: LockKind> Drop for InLine<'_, K> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let (owner, line) = (ticket.owner(), ticket.line().clone());
        if let Left::GiveBack { .. } = ticket.leave(None) {
            tracing::debug!(lock = %self.lock.name, %owner, "a waiter left after the lock was handed to it: giving it back");
            self.lock.with_owner(owner).release_in_background();
        }
        self.lock.context.lines.retire_if_idle(&line);
    }
}

/// A queued waiter's way out of the queue: armed while the waiter may sit in a fair
/// lock's queue. [`QueueExit::leave`] runs the clean-up inline; dropping it armed (an error
/// or a dropped future) runs it in the background, unless an attempt is in flight, whose
/// own abandon path then does it. So it runs exactly once.
struct QueueExit<K: LockKind> {
    pending: Option<(Lock<K>, LockOwner, u64)>,
    in_flight: bool,
}

impl<K: LockKind> QueueExit<K> {
    fn new(lock: &Lock<K>, owner: LockOwner, mode: AcquireMode) -> Self {
        let pending = match mode {
            AcquireMode::Queue { wait_ms } if K::QUEUES => Some((lock.clone(), owner, wait_ms)),
            _ => None,
        };
        QueueExit {
            pending,
            in_flight: false,
        }
    }

    fn disarm(&mut self) {
        self.pending = None;
    }

    async fn leave(&mut self) {
        if let Some((lock, owner, wait_ms)) = self.pending.take() {
            // Once disarmed, only this call leaves the queue: finish it even if the caller
            // is dropped at this await.
            let work = async move { lock.leave_queue(owner, wait_ms).await };
            FinishOnDrop::new(work, |()| async {}).await;
        }
    }
}

impl<K: LockKind> Drop for QueueExit<K> {
    fn drop(&mut self) {
        if self.in_flight {
            return;
        }
        if let Some((lock, owner, wait_ms)) = self.pending.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move { lock.leave_queue(owner, wait_ms).await });
                }
                Err(_) => tracing::warn!(
                    lock = %lock.name,
                    "a queued waiter was dropped outside a tokio runtime; the stale-waiter purge will remove it"
                ),
            }
        }
    }
}

fn unexpected(operation: &'static str, reply: Value) -> Error {
    Error::UnexpectedReply {
        operation,
        reply: format!("{reply:?}"),
    }
}
