//! Redisson's `RLock` API on every [`Lock<K>`](super::Lock) (`lock`, `try_lock*`,
//! `acquire*`, `unlock`, `force_unlock`, `is_locked`, `is_held_by*`, `hold_count`,
//! `remain_time_to_live`). Each is a thin entry: acquisitions go to `acquire_as`
//! (`acquiring.rs`), `unlock` to `unlock_as` (`releasing.rs`); the queries and
//! `force_unlock` send one call each.

use std::sync::atomic::Ordering;
use std::time::Duration;

use fred::prelude::{HashesInterface, KeysInterface, Value};
use tracing::Instrument;

use super::acquiring::Wait;
use super::guard::LockGuard;
use super::kind::LockKind;
use super::kind::LockedProbe;
use super::releasing::UnlockReply;
use super::running::unexpected;
use crate::connection::scripts::Resend;
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

use super::handle::Lock;

impl<K: LockKind> Lock<K> {
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

    /// The lock's name, as given to the client. Without a
    /// [name mapper](crate::ConfigBuilder::name_mapper) it is also the Redis key of its
    /// hash; with one, that key is [`Lock::raw_name`].
    ///
    /// # Redisson equivalent
    /// `RLock#getName()` (which answers `nameMapper.unmap(rawName)`: the same name, for a
    /// mapper whose `unmap` undoes `map`)
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.get_lock("orders").name(), "orders");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.shared.keys.given().map_or(&self.name, |given| given)
    }

    /// The lock's name as stored in Redis, the key of its hash: [`Lock::name`] through the
    /// client's [name mapper](crate::ConfigBuilder::name_mapper), or the name itself
    /// without one. Its channels and other keys are built from it (see
    /// [`LockKeys`](crate::names::LockKeys)).
    ///
    /// # Redisson equivalent
    /// `RedissonObject#getRawName()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> redisson_lock::Result<()> {
    /// use redisson_lock::{Client, Config, PrefixNameMapper};
    /// let config = Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .build()?;
    /// let client = Client::connect(config).await?;
    /// let lock = client.get_lock("orders");
    /// assert_eq!(lock.name(), "orders");
    /// assert_eq!(lock.raw_name(), "app1:orders");
    /// # Ok(()) }
    /// ```
    pub fn raw_name(&self) -> &str {
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
    /// [`MAX_LEASE`](crate::config::MAX_LEASE).
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
            UnlockReply::StillHeld
            | UnlockReply::Released
            | UnlockReply::Yielded { .. }
            | UnlockReply::Handed { .. } => Ok(()),
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
            .registry
            .remove_lock(&self.name, &*self.kind.held(&target));
        let window = context.holds.force_window(&self.name);
        let call = self.kind.force_release(&target);
        let (reply, synced) = self
            .run_synced(&call, Resend::Allowed)
            .instrument(tracing::debug_span!("redisson_lock.force_unlock", lock = %self.name, kind = K::NAME))
            .await
            .map_err(|e| self.redis_error(e))?;
        self.log_unsynced("force unlock", &synced);
        self.shared
            .internal_lease_ms
            .store(context.watchdog_ms, Ordering::Relaxed);
        match reply {
            Value::Integer(n) => {
                if n == 1 {
                    // The hash is gone: no owner of this client holds it any more but
                    // those that took it since (a waiter its message woke).
                    window.forget();
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
            LockedProbe::Exists => redis
                .query(|r| r.exists::<i64, _>(&*self.name))
                .await
                .map(|n| n > 0),
            LockedProbe::ModeIs(mode) => redis
                .query(|r| r.hget::<Option<String>, _, _>(&*self.name, "mode"))
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
        if let Some(holds) = self.probe_holds(owner).await? {
            return Ok(holds.held);
        }
        let field = self.kind.field(&self.context, owner);
        self.context
            .redis
            .query(|r| r.hexists(&*self.name, field.as_str()))
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
        if let Some(holds) = self.probe_holds(self.owner()).await? {
            return Ok(holds.count);
        }
        let field = self.kind.field(&self.context, self.owner());
        let count: Option<i64> = self
            .context
            .redis
            .query(|r| r.hget(&*self.name, field.as_str()))
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
        if let Some(holds) = self.probe_holds(self.owner()).await? {
            return Ok(holds.remaining);
        }
        let ms: i64 = self
            .context
            .redis
            .query(|r| r.pttl(&*self.name))
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(match ms {
            -2 => None,
            ms if ms < 0 => Some(Duration::MAX),
            ms => Some(Duration::from_millis(ms as u64)),
        })
    }

    /// The kind's holds probe for `owner`, when it has one (see `Kind::holds_probe`).
    async fn probe_holds(&self, owner: LockOwner) -> Result<Option<Holds>> {
        let Some(call) = self.kind.holds_probe(&self.target(owner)) else {
            return Ok(None);
        };
        let reply = self
            .run(&call, Resend::Allowed)
            .await
            .map_err(|e| self.redis_error_as(owner, e))?;
        let numbers = match &reply {
            Value::Array(items) if items.len() == 3 => {
                (items[0].as_i64(), items[1].as_i64(), items[2].as_i64())
            }
            _ => (None, None, None),
        };
        match numbers {
            (Some(held), Some(count), Some(remaining)) => Ok(Some(Holds {
                held: held == 1,
                count: count.clamp(0, i64::from(u32::MAX)) as u32,
                remaining: (remaining >= 0).then(|| Duration::from_millis(remaining as u64)),
            })),
            _ => Err(unexpected("holds", reply)),
        }
    }
}

/// What a holds probe answered: whether the owner holds every value, its smallest count,
/// and the longest time any value stays held.
struct Holds {
    held: bool,
    count: u32,
    remaining: Option<Duration>,
}
