//! The semaphore's expiry and existence (Redisson's `RExpirable` on `RSemaphore`): its one
//! key `N`, through [`crate::synchronizers::expiry`].

use std::time::{Duration, SystemTime};

use super::Semaphore;
use crate::error::Result;
use crate::synchronizers::expiry::{self, Expiry};

#[cfg(doc)]
use crate::error::Error;

impl Semaphore {
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
        expiry::change(&self.context, &[&self.name], Expiry::After(ttl)).await
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
        expiry::change(&self.context, &[&self.name], Expiry::At(at)).await
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
}
