//! The permit-expirable semaphore's expiry and existence (Redisson's `RExpirable` on
//! `RPermitExpirableSemaphore`): `expire*` and `clear_expire` change its count `N` and its
//! leases `{N}:timeout` together, in one script (docs/protocol.md §22); the reads look at
//! `N` only, as Redisson's.

use std::time::{Duration, SystemTime};

use super::PermitExpirableSemaphore;
use crate::error::Result;
use crate::synchronizers::expiry::{self, Expiry};

#[cfg(doc)]
use crate::error::Error;

impl PermitExpirableSemaphore {
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
        self.change_expiry(Expiry::After(ttl)).await
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
        self.change_expiry(Expiry::At(at)).await
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
}
