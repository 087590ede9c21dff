//! The semaphore's expiry and existence (Redisson's `RExpirable` on `RSemaphore`): its one
//! key `N`, through [`crate::synchronizers::expiry`].

use std::time::{Duration, SystemTime};

use super::Semaphore;
use crate::error::Result;
use crate::synchronizers::expiry::{self, Expiration, ExpireTime, Expiry, If};

#[cfg(doc)]
use crate::error::Error;

impl Semaphore {
    /// A conditional expiry of the one key.
    async fn change_if(&self, when: Expiration, only: If) -> Result<bool> {
        self.check()?;
        expiry::change(&self.context, &[&self.name], Expiry::Set(when, Some(only))).await
    }

    /// Makes the semaphore's key expire after `ttl` (`PEXPIRE`); whether it exists (a
    /// missing semaphore gets no TTL: `false`, as Redisson). The permits are gone with the
    /// key, which reads as 0 permits. [`add_permits`](Semaphore::add_permits) and
    /// [`drain_permits`](Semaphore::drain_permits) drop the TTL again (Redisson's `SET`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `ttl` under 1 ms (Redisson's `expire(0)` would
    /// delete the key); [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#expire(Duration)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let semaphore = client.get_semaphore("tenant:42:exports");
    /// semaphore.try_set_permits(3).await?;
    /// assert!(semaphore.expire(Duration::from_secs(3600)).await?);
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire", skip(self), fields(semaphore = %self.name))]
    pub async fn expire(&self, ttl: Duration) -> Result<bool> {
        self.check()?;
        expiry::change(&self.context, &[&self.name], Expiry::after(ttl)).await
    }

    /// Makes the semaphore's key expire at `at` (`PEXPIREAT`, the server's clock); whether
    /// it exists. A time in the past deletes the key, as in Redisson.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time before 1970; [`Error::Redis`],
    /// [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#expire(Instant)` / `expireAt(long)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::{Duration, SystemTime};
    /// semaphore.expire_at(SystemTime::now() + Duration::from_secs(600)).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire_at", skip(self), fields(semaphore = %self.name))]
    pub async fn expire_at(&self, at: SystemTime) -> Result<bool> {
        self.check()?;
        expiry::change(&self.context, &[&self.name], Expiry::at(at)).await
    }

    /// Removes the key's expiry (`PERSIST`); whether it had one (`false` also when the
    /// semaphore does not exist), as Redisson.
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#clearExpire()` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.clear_expire().await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.clear_expire", skip(self), fields(semaphore = %self.name))]
    pub async fn clear_expire(&self) -> Result<bool> {
        self.check()?;
        expiry::change(&self.context, &[&self.name], Expiry::Clear).await
    }

    /// The key's time to live (`PTTL`): `None` when the semaphore does not exist
    /// (Redisson's `-2`), `Some(Duration::MAX)` when it has no expiry (`-1`).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#remainTimeToLive()` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// match semaphore.remain_time_to_live().await? {
    ///     None => println!("no such semaphore"),
    ///     Some(std::time::Duration::MAX) => println!("never expires"),
    ///     Some(ttl) => println!("gone in {ttl:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.remain_time_to_live", skip(self), fields(semaphore = %self.name))]
    pub async fn remain_time_to_live(&self) -> Result<Option<Duration>> {
        self.check()?;
        expiry::remaining(&self.context, &self.name).await
    }

    /// Whether the semaphore's key exists (`EXISTS`). A missing semaphore has 0 permits.
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#isExists()` (`RObject`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// if !semaphore.is_exists().await? {
    ///     semaphore.try_set_permits(4).await?;
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.is_exists", skip(self), fields(semaphore = %self.name))]
    pub async fn is_exists(&self) -> Result<bool> {
        self.check()?;
        expiry::exists(&self.context, &self.name).await
    }

    /// `PEXPIRE ... XX`: sets the expiry of the semaphore's key only where one is set already; whether it changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#expireIfSet(Duration)` / `expireIfSet(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// // Shorten (or lengthen) a TTL that exists; leave a semaphore without one alone.
    /// semaphore.expire_if_set(Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire_if_set", skip(self, when), fields(semaphore = %self.name))]
    pub async fn expire_if_set(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::Set).await
    }

    /// `PEXPIRE ... NX`: sets the expiry of the semaphore's key only where none is set; whether it changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#expireIfNotSet(Duration)` / `expireIfNotSet(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// // Give it a TTL unless someone already did.
    /// semaphore.expire_if_not_set(Duration::from_secs(3600)).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire_if_not_set", skip(self, when), fields(semaphore = %self.name))]
    pub async fn expire_if_not_set(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::NotSet).await
    }

    /// `PEXPIRE ... GT`: sets the expiry of the semaphore's key only where the new one is later than the one it has (a key without an expiry never expires, so it is left alone); whether it changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#expireIfGreater(Duration)` / `expireIfGreater(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::{Duration, SystemTime};
    /// // Extend, never shorten: an `Instant` as Java's expireIfGreater(Instant).
    /// semaphore.expire_if_greater(SystemTime::now() + Duration::from_secs(600)).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire_if_greater", skip(self, when), fields(semaphore = %self.name))]
    pub async fn expire_if_greater(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::Greater).await
    }

    /// `PEXPIRE ... LT`: sets the expiry of the semaphore's key only where the new one is earlier than the one it has, or where it has none; whether it changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#expireIfLess(Duration)` / `expireIfLess(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// // Make sure it is gone within a minute at the latest.
    /// semaphore.expire_if_less(Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire_if_less", skip(self, when), fields(semaphore = %self.name))]
    pub async fn expire_if_less(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::Less).await
    }

    /// When the key expires (`PEXPIRETIME`, as Redisson reads it):
    /// [`ExpireTime::Missing`] when the semaphore does not exist (Redisson's `-2`),
    /// [`ExpireTime::Never`] without an expiry (`-1`), else the time by the server's clock.
    /// Needs Redis 7.0 or later.
    ///
    /// # Errors
    /// [`Error::Redis`] (a server before 7.0 has no `PEXPIRETIME`), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#getExpireTime()` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use redisson_lock::synchronizers::ExpireTime;
    /// if let ExpireTime::At(at) = semaphore.expire_time().await? {
    ///     println!("gone at {at:?}");
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.expire_time", skip(self), fields(semaphore = %self.name))]
    pub async fn expire_time(&self) -> Result<ExpireTime> {
        self.check()?;
        expiry::expire_time(&self.context, &self.name).await
    }
}
