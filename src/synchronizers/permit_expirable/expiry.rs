//! The permit-expirable semaphore's expiry and existence (Redisson's `RExpirable` on
//! `RPermitExpirableSemaphore`): `expire*` and `clear_expire` change its count `N` and its
//! leases `{N}:timeout` together, in one script (docs/protocol.md §22); the reads look at
//! `N` only, as Redisson's.

use std::time::{Duration, SystemTime};

use super::handle::PermitExpirableSemaphore;
use crate::error::Result;
use crate::synchronizers::expiry::{self, Expiration, ExpireTime, Expiry, If};

#[cfg(doc)]
use crate::error::Error;

impl PermitExpirableSemaphore {
    /// A conditional expiry of both keys.
    async fn change_if(&self, when: Expiration, only: If) -> Result<bool> {
        self.change_expiry(Expiry::Set(when, Some(only))).await
    }

    /// Applies `expiry` to both keys.
    async fn change_expiry(&self, expiry: Expiry) -> Result<bool> {
        self.shared.check_usable()?;
        let name = &*self.shared.name;
        let timeouts = crate::names::formats::permit_timeouts(name);
        expiry::change(&self.shared.context, &[name, &timeouts], expiry).await
    }

    /// Makes the semaphore expire after `ttl`: its count and its leases (`{N}:timeout`)
    /// both get the TTL, in one step; whether either exists (`false` for a semaphore that
    /// does not exist, as Redisson). The keys of a semaphore nobody uses any more then go
    /// away by themselves (redisson#2444, #4100, #6302).
    ///
    /// An acquire copies the count's TTL onto the leases again, and
    /// [`add_permits`](Self::add_permits) drops the count's (Redisson's scripts): set the
    /// expiry again after `add_permits` if it must stay.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `ttl` under 1 ms; [`Error::Redis`],
    /// [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#expire(Duration)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let sem = client.get_permit_expirable_semaphore("tenant:42:jobs");
    /// sem.try_set_permits(2).await?;
    /// sem.expire(Duration::from_secs(24 * 3600)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn expire(&self, ttl: Duration) -> Result<bool> {
        self.change_expiry(Expiry::after(ttl)).await
    }

    /// Makes both keys expire at `at` (`PEXPIREAT`, the server's clock); whether either
    /// exists. A time in the past deletes them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time before 1970; [`Error::Redis`],
    /// [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#expire(Instant)` / `expireAt(long)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// use std::time::{Duration, SystemTime};
    /// sem.expire_at(SystemTime::now() + Duration::from_secs(600)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn expire_at(&self, at: SystemTime) -> Result<bool> {
        self.change_expiry(Expiry::at(at)).await
    }

    /// Removes both keys' expiry (`PERSIST`); whether either had one.
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#clearExpire()` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// sem.clear_expire().await?;
    /// # Ok(()) }
    /// ```
    pub async fn clear_expire(&self) -> Result<bool> {
        self.change_expiry(Expiry::Clear).await
    }

    /// The count key's time to live (`PTTL N`, as Redisson reads it): `None` when it does
    /// not exist (Redisson's `-2`), `Some(Duration::MAX)` when it has no expiry (`-1`).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#remainTimeToLive()` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// println!("{:?}", sem.remain_time_to_live().await?);
    /// # Ok(()) }
    /// ```
    pub async fn remain_time_to_live(&self) -> Result<Option<Duration>> {
        self.shared.check_usable()?;
        expiry::remaining(&self.shared.context, &self.shared.name).await
    }

    /// Whether the count key exists (`EXISTS N`, as Redisson reads it).
    ///
    /// # Errors
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#isExists()` (`RObject`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// if !sem.is_exists().await? {
    ///     sem.try_set_permits(2).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn is_exists(&self) -> Result<bool> {
        self.shared.check_usable()?;
        expiry::exists(&self.shared.context, &self.shared.name).await
    }

    /// `PEXPIRE ... XX`: sets the expiry of each of the semaphore's two keys (its count `N` and its leases `{N}:timeout`) only where one is set already; whether either changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#expireIfSet(Duration)` / `expireIfSet(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// // Shorten (or lengthen) a TTL that exists; leave a semaphore without one alone.
    /// sem.expire_if_set(Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn expire_if_set(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::Set).await
    }

    /// `PEXPIRE ... NX`: sets the expiry of each of the semaphore's two keys (its count `N` and its leases `{N}:timeout`) only where none is set; whether either changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#expireIfNotSet(Duration)` / `expireIfNotSet(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// // Give it a TTL unless someone already did.
    /// sem.expire_if_not_set(Duration::from_secs(3600)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn expire_if_not_set(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::NotSet).await
    }

    /// `PEXPIRE ... GT`: sets the expiry of each of the semaphore's two keys (its count `N` and its leases `{N}:timeout`) only where the new one is later than the one it has (a key without an expiry never expires, so it is left alone); whether either changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#expireIfGreater(Duration)` / `expireIfGreater(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// use std::time::{Duration, SystemTime};
    /// // Extend, never shorten: an `Instant` as Java's expireIfGreater(Instant).
    /// sem.expire_if_greater(SystemTime::now() + Duration::from_secs(600)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn expire_if_greater(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::Greater).await
    }

    /// `PEXPIRE ... LT`: sets the expiry of each of the semaphore's two keys (its count `N` and its leases `{N}:timeout`) only where the new one is earlier than the one it has, or where it has none; whether either changed (Redisson's boolean: `false` also for a semaphore that does not
    /// exist). `when` is a time to live ([`Duration`], Java's `Duration`) or a wall-clock
    /// time ([`SystemTime`], Java's `Instant`). Needs Redis 7.0 or later (Valkey 7.2+), as
    /// Redisson's method does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time to live under 1 ms or a time before 1970;
    /// [`Error::Redis`] (a server before 7.0 refuses the option), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#expireIfLess(Duration)` / `expireIfLess(Instant)` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// // Make sure it is gone within a minute at the latest.
    /// sem.expire_if_less(Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn expire_if_less(&self, when: impl Into<Expiration>) -> Result<bool> {
        self.change_if(when.into(), If::Less).await
    }

    /// When the count key `N` expires (`PEXPIRETIME`, as Redisson reads it):
    /// [`ExpireTime::Missing`] when the semaphore does not exist (Redisson's `-2`),
    /// [`ExpireTime::Never`] without an expiry (`-1`), else the time by the server's clock.
    /// Needs Redis 7.0 or later.
    ///
    /// # Errors
    /// [`Error::Redis`] (a server before 7.0 has no `PEXPIRETIME`), [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#getExpireTime()` (`RExpirable`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(sem: redisson_lock::PermitExpirableSemaphore) -> redisson_lock::Result<()> {
    /// use redisson_lock::synchronizers::ExpireTime;
    /// if let ExpireTime::At(at) = sem.expire_time().await? {
    ///     println!("gone at {at:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn expire_time(&self) -> Result<ExpireTime> {
        self.shared.check_usable()?;
        expiry::expire_time(&self.shared.context, &self.shared.name).await
    }
}
