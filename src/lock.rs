//! [`RLock`]: Redisson's reentrant lock, and its control flow (acquire, wait, unlock).
//!
//! Invariants: every lock operation is one script round trip when the lock is free; a
//! waiter subscribes before it retries and sleeps until a message or the holder's TTL;
//! acquire and unlock are written at most once and, once written, always finished (see
//! [`FinishOnDrop`]); a watchdog acquisition registers with the renewal registry before
//! the caller sees it, and every unlock removes one registration.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::{HashesInterface, KeysInterface, Value};
use tokio::time::Instant;
use tracing::Instrument;

use crate::client::ClientInner;
use crate::config::lease_millis;
use crate::detach::FinishOnDrop;
use crate::error::{Error, Result};
use crate::guard::LockGuard;
use crate::names::{lock_channel, owner_field, unlock_latch};
use crate::owner::LockOwner;
use crate::renewal::LostSignal;
use crate::scripts::{is_wrong_type, outcome_unknown, Resend};

/// A distributed reentrant lock, wire-compatible with Redisson's `RLock`.
///
/// The lock is the Redis hash `name`: field `<client-id>:<owner>` counts the holds of one
/// owner (see [`LockOwner`] for what an owner is), and the key's TTL is the lease. Taking
/// it again as the same owner is a re-entry: the count goes up, and as many unlocks are
/// needed to release it. Java Redisson clients on the same Redis see the same lock.
///
/// `RLock` is a cheap `Clone` handle and does no I/O until used. Methods come in two
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
#[derive(Clone)]
pub struct RLock {
    client: Arc<ClientInner>,
    name: Arc<str>,
    owner: Option<LockOwner>,
    /// Redisson's `internalLockLeaseTime`: the lease a partial unlock re-arms. The lease of
    /// the last lease-mode acquisition through this handle (and its clones), reset to the
    /// watchdog timeout by a full unlock.
    internal_lease_ms: Arc<AtomicU64>,
}

impl std::fmt::Debug for RLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RLock")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("client_id", &self.client.id)
            .finish()
    }
}

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Once,
    Until(Instant),
    Forever,
}

impl Wait {
    fn up_to(wait: Duration) -> Wait {
        if wait.is_zero() {
            return Wait::Once;
        }
        match Instant::now().checked_add(wait) {
            Some(deadline) => Wait::Until(deadline),
            None => Wait::Forever,
        }
    }
}

/// A successful acquisition: what a guard needs to know.
pub(crate) struct Acquired {
    pub(crate) lost: Arc<LostSignal>,
    pub(crate) lease_deadline: Option<Instant>,
}

enum Attempt {
    Acquired(Acquired),
    /// Held by another owner; its PTTL in ms (negative: no expiry).
    Held(i64),
}

/// What the unlock script answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnlockReply {
    NotOwner,
    StillHeld,
    Released,
}

impl RLock {
    pub(crate) fn new(client: Arc<ClientInner>, name: String) -> RLock {
        let watchdog_ms = client.watchdog_ms;
        RLock {
            client,
            name: name.into(),
            owner: None,
            internal_lease_ms: Arc::new(AtomicU64::new(watchdog_ms)),
        }
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
    pub fn with_owner(&self, owner: LockOwner) -> RLock {
        RLock {
            owner: Some(owner),
            ..self.clone()
        }
    }

    /// The owner this handle acts as right now: the one set by [`RLock::with_owner`], or
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
    /// As [`RLock::lock`], and [`Error::InvalidArgument`] for a lease under 1 ms or above
    /// [`MAX_LEASE`](crate::MAX_LEASE).
    ///
    /// # Cancel safety
    /// As [`RLock::lock`].
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
    /// [`Error::InvalidArgument`] as for [`RLock::lock`].
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
    /// As [`RLock::try_lock`]. Running out of time is `Ok(false)`, not an error.
    ///
    /// # Cancel safety
    /// As [`RLock::lock`].
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
    /// As [`RLock::lock_with_lease`]. Running out of time is `Ok(false)`.
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

    /// Takes the lock like [`RLock::lock`] and returns a guard that unlocks it when
    /// dropped and can tell when the lock was lost.
    ///
    /// # Errors
    /// As [`RLock::lock`].
    ///
    /// # Cancel safety
    /// As [`RLock::lock`].
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
    pub async fn acquire(&self) -> Result<LockGuard> {
        let owner = self.owner();
        match self.acquire_as(owner, None, Wait::Forever).await? {
            Some(acquired) => Ok(LockGuard::new(self.with_owner(owner), acquired)),
            None => Err(Error::Shutdown),
        }
    }

    /// Takes the lock like [`RLock::lock_with_lease`] and returns a guard; the guard's
    /// [`lost`](LockGuard::lost) fires when the lease runs out.
    ///
    /// # Errors
    /// As [`RLock::lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`RLock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire_with_lease(std::time::Duration::from_secs(5)).await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_with_lease(&self, lease: Duration) -> Result<LockGuard> {
        let owner = self.owner();
        match self.acquire_as(owner, Some(lease), Wait::Forever).await? {
            Some(acquired) => Ok(LockGuard::new(self.with_owner(owner), acquired)),
            None => Err(Error::Shutdown),
        }
    }

    /// Like [`RLock::try_lock_for`], returning a guard when the lock was taken.
    ///
    /// # Errors
    /// As [`RLock::try_lock_for`].
    ///
    /// # Cancel safety
    /// As [`RLock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// if let Some(guard) = lock.try_acquire_for(std::time::Duration::from_secs(1)).await? {
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<Option<LockGuard>> {
        let owner = self.owner();
        let acquired = self.acquire_as(owner, None, Wait::up_to(wait)).await?;
        Ok(acquired.map(|a| LockGuard::new(self.with_owner(owner), a)))
    }

    /// Like [`RLock::try_lock_with_lease`], returning a guard when the lock was taken.
    ///
    /// # Errors
    /// As [`RLock::try_lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`RLock::lock`].
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
    ) -> Result<Option<LockGuard>> {
        let owner = self.owner();
        let acquired = self
            .acquire_as(owner, Some(lease), Wait::up_to(wait))
            .await?;
        Ok(acquired.map(|a| LockGuard::new(self.with_owner(owner), a)))
    }

    /// Gives back one hold. With the last hold the key is deleted and `0` is published on
    /// `redisson_lock__channel:{name}`, which wakes one waiter (here or in Java).
    /// Every unlock also removes one watchdog registration, whatever Redis answered.
    ///
    /// A reply lost to a dropped connection is retried with the same request id; the
    /// unlock latch in Redis makes the retry return the first answer instead of unlocking
    /// twice.
    ///
    /// # Errors
    /// [`Error::NotOwner`] (Redisson's exact text) if the caller does not hold the lock;
    /// [`Error::Redis`], [`Error::WrongType`], [`Error::Shutdown`],
    /// [`Error::InvalidArgument`] as for [`RLock::lock`].
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
                client_id: self.client.id.clone(),
                owner,
            }),
            UnlockReply::StillHeld | UnlockReply::Released => Ok(()),
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
        let client = &self.client;
        client.renewal.remove_lock(&self.name);
        let channel = lock_channel(&self.name);
        let reply = client
            .scripts
            .force_release
            .run(
                &client.redis,
                &[&self.name, &channel],
                &[Value::from("0"), Value::from(client.publish_command)],
                Resend::Allowed,
                client.config.response_timeout,
            )
            .instrument(tracing::debug_span!("redisson_lock.force_unlock", lock = %self.name))
            .await
            .map_err(|e| self.redis_error(e))?;
        self.internal_lease_ms
            .store(client.watchdog_ms, Ordering::Relaxed);
        match reply {
            Value::Integer(n) => Ok(n == 1),
            other => Err(unexpected("force_unlock", other)),
        }
    }

    /// Whether anybody holds the lock (`EXISTS name`).
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
        let n: i64 = self
            .client
            .redis
            .exists(&*self.name)
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(n > 0)
    }

    /// Whether the calling owner (this handle's owner) holds the lock.
    ///
    /// # Errors
    /// As [`RLock::is_held_by`].
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
        self.client
            .redis
            .hexists(&*self.name, owner_field(&self.client.id, owner))
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
            .client
            .redis
            .hget(&*self.name, owner_field(&self.client.id, self.owner()))
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
            .client
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

    // ---- control flow ------------------------------------------------------------------

    fn check(&self) -> Result<()> {
        if self.name.is_empty() {
            return Err(Error::invalid("lock name must not be empty"));
        }
        if self.client.is_closed() {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    fn redis_error(&self, error: fred::error::Error) -> Error {
        if is_wrong_type(&error) {
            Error::WrongType {
                key: self.name.to_string(),
            }
        } else if self.client.is_closed() {
            Error::Shutdown
        } else {
            Error::Redis(error)
        }
    }

    /// Redisson's acquire loop (protocol §7): try; if held, subscribe; then retry, and
    /// sleep until a message or the holder's TTL (bounded by the wait budget).
    async fn acquire_as(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        self.check()?;
        let lease_ms = lease.map(lease_millis).transpose()?;
        let span = tracing::debug_span!(
            "redisson_lock.acquire",
            lock = %self.name,
            %owner,
            lease_ms,
            ?wait,
        );
        async move {
            let ttl = match self.attempt(owner, lease_ms).await? {
                Attempt::Acquired(acquired) => return Ok(Some(acquired)),
                Attempt::Held(ttl) => ttl,
            };
            let deadline = match wait {
                Wait::Once => return Ok(None),
                Wait::Until(deadline) if Instant::now() >= deadline => return Ok(None),
                Wait::Until(deadline) => Some(deadline),
                Wait::Forever => None,
            };
            tracing::trace!(ttl, "held by another owner; subscribing");
            let channel = lock_channel(&self.name);
            let pubsub = &self.client.pubsub;
            let subscription = match deadline {
                Some(deadline) => {
                    match tokio::time::timeout_at(deadline, pubsub.subscribe(&channel)).await {
                        Ok(subscribed) => subscribed.map_err(|e| self.redis_error(e))?,
                        Err(_) => return Ok(None),
                    }
                }
                None => {
                    let limit = self.client.config.subscription_timeout;
                    tokio::time::timeout(limit, pubsub.subscribe(&channel))
                        .await
                        .map_err(|_| Error::Timeout {
                            what: "subscribing to the lock channel",
                            after: limit,
                        })?
                        .map_err(|e| self.redis_error(e))?
                }
            };
            loop {
                let woken = subscription.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                if pubsub.is_closed() {
                    return Err(Error::Shutdown);
                }
                let ttl = match self.attempt(owner, lease_ms).await? {
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
        .instrument(span)
        .await
    }

    /// One acquire script, finished in the background if the caller goes away (and then
    /// undone if it took the lock). Registers a watchdog hold on success.
    async fn attempt(&self, owner: LockOwner, lease_ms: Option<u64>) -> Result<Attempt> {
        let watchdog = lease_ms.is_none();
        let lease = lease_ms.unwrap_or(self.client.watchdog_ms);
        let started = Instant::now();
        let work = {
            let lock = self.clone();
            async move { lock.acquire_script(owner, lease).await }
        };
        let undo = {
            let lock = self.clone();
            move |reply: Result<Option<i64>>| async move {
                if let Ok(None) = reply {
                    tracing::debug!(lock = %lock.name, %owner, "acquired after the caller left: releasing");
                    if let Err(error) = lock.release_script(owner, lease).await {
                        tracing::warn!(lock = %lock.name, %error, "could not release an abandoned acquisition");
                    }
                }
            }
        };
        match FinishOnDrop::new(work, undo).await? {
            None if watchdog => {
                let field = owner_field(&self.client.id, owner);
                let lost = self.client.renewal.add_hold(&self.name, owner, field);
                Ok(Attempt::Acquired(Acquired {
                    lost,
                    lease_deadline: None,
                }))
            }
            None => {
                self.internal_lease_ms.store(lease, Ordering::Relaxed);
                let lost = self
                    .client
                    .renewal
                    .signal(&self.name, owner)
                    .unwrap_or_default();
                Ok(Attempt::Acquired(Acquired {
                    lost,
                    lease_deadline: Some(started + Duration::from_millis(lease)),
                }))
            }
            Some(ttl) => Ok(Attempt::Held(ttl)),
        }
    }

    /// `lua/lock_acquire.lua`: `None` when taken, else the holder's PTTL. Written at most
    /// once (see [`Resend::Never`]).
    async fn acquire_script(&self, owner: LockOwner, lease_ms: u64) -> Result<Option<i64>> {
        let client = &self.client;
        let reply = client
            .scripts
            .acquire
            .run(
                &client.redis,
                &[&self.name],
                &[
                    Value::from(lease_ms as i64),
                    Value::from(owner_field(&client.id, owner)),
                ],
                Resend::Never,
                client.config.response_timeout,
            )
            .await
            .map_err(|e| self.redis_error(e))?;
        match reply {
            Value::Null => Ok(None),
            Value::Integer(ttl) => Ok(Some(ttl)),
            other => Err(unexpected("acquire", other)),
        }
    }

    /// An unlock as `owner`, finished even if dropped: one watchdog hold stops at once
    /// (whatever Redis will answer, as in Redisson), then the release runs.
    pub(crate) async fn unlock_as(&self, owner: LockOwner) -> Result<UnlockReply> {
        self.check()?;
        self.stop_renewal(owner);
        let lock = self.clone();
        let span = tracing::debug_span!("redisson_lock.unlock", lock = %self.name, %owner);
        let work = async move { lock.release_settled(owner).await }.instrument(span);
        FinishOnDrop::new(work, |_| async {}).await
    }

    /// Removes one watchdog hold of `owner`: the first half of every unlock, done
    /// synchronously (a dropped guard calls it from `Drop`).
    pub(crate) fn stop_renewal(&self, owner: LockOwner) {
        self.client.renewal.remove_hold(&self.name, owner);
    }

    /// The second half of every unlock: the release script, then the re-arm lease is
    /// reset after a full release (Redisson 3.27.2+: not after a partial one).
    pub(crate) async fn release_settled(&self, owner: LockOwner) -> Result<UnlockReply> {
        let lease = self.internal_lease_ms.load(Ordering::Relaxed);
        let released = self.release_script(owner, lease).await;
        if matches!(released, Ok(UnlockReply::Released | UnlockReply::NotOwner)) {
            self.internal_lease_ms
                .store(self.client.watchdog_ms, Ordering::Relaxed);
        }
        released
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

    /// `lua/lock_release.lua`, retried with the same latch while its outcome is unknown.
    pub(crate) async fn release_script(
        &self,
        owner: LockOwner,
        lease_ms: u64,
    ) -> Result<UnlockReply> {
        let client = &self.client;
        let request_id = uuid::Uuid::new_v4().simple().to_string();
        let latch = unlock_latch(&self.name, &request_id);
        let channel = lock_channel(&self.name);
        let latch_ttl = client.config.unlock_latch_ttl;
        let args = vec![
            Value::from("0"),
            Value::from(lease_ms as i64),
            Value::from(owner_field(&client.id, owner)),
            Value::from(client.publish_command),
            Value::from(latch_ttl.as_millis().max(1) as i64),
        ];
        let started = Instant::now();
        let mut retries = 0u32;
        loop {
            let reply = client
                .scripts
                .release
                .run(
                    &client.redis,
                    &[&self.name, &channel, &latch],
                    &args,
                    Resend::Never,
                    client.config.response_timeout,
                )
                .await;
            match reply {
                Ok(reply) => {
                    client.delete_latch_later(latch);
                    return match reply {
                        Value::Null => Ok(UnlockReply::NotOwner),
                        Value::Integer(0) => Ok(UnlockReply::StillHeld),
                        Value::Integer(1) => Ok(UnlockReply::Released),
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
                        && !client.is_closed()
                        && started.elapsed() < latch_ttl / 2 =>
                {
                    retries += 1;
                    tracing::warn!(lock = %self.name, %error, retries, "unlock outcome unknown; asking again");
                    tokio::time::sleep(Duration::from_millis(20 * u64::from(retries))).await;
                }
                Err(error) => return Err(self.redis_error(error)),
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

impl RLock {
    /// Hands this handle (acting as a dropped guard's owner) to the client's background
    /// task, which releases one hold.
    pub(crate) fn release_in_background(&self) {
        self.client.release_later(self.clone());
    }
}
