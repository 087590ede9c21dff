//! The blocking [`Semaphore`] and its [`SemaphorePermits`]: the async semaphore's methods,
//! each run on the client's runtime while the calling thread waits.

use std::sync::Arc;
use std::time::Duration;

use super::runtime::Shared;
use crate::error::Result;

#[cfg(doc)]
use crate::error::Error;

/// Redisson's `RSemaphore`, blocking: the async [`crate::Semaphore`] for code that is not
/// async. Same keys, scripts, channel and waiting; see [`crate::Semaphore`] for what each
/// method does and what a lost reply means.
///
/// A cheap `Clone` handle; no I/O until used.
///
/// # Examples
/// ```no_run
/// # fn call_partner_api() {}
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// let semaphore = client.get_semaphore("partner-api");
/// semaphore.try_set_permits(4)?;
/// {
///     let _permit = semaphore.acquire(1)?;
///     call_partner_api();
/// } // given back here
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    pub(super) shared: Arc<Shared>,
    pub(super) inner: crate::Semaphore,
}

impl Semaphore {
    fn run<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnOnce(crate::Semaphore) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.shared.run(op(self.inner.clone()))?
    }

    fn guard(
        &self,
        permits: Option<crate::synchronizers::SemaphorePermits>,
    ) -> Option<SemaphorePermits> {
        permits.map(|inner| SemaphorePermits {
            shared: self.shared.clone(),
            inner: Some(inner),
        })
    }

    /// The semaphore's name as given to the client (see [`crate::Semaphore::name`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.get_semaphore("partner-api").name(), "partner-api");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// See [`crate::Semaphore::try_set_permits`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.try_set_permits(4)?;
    /// # Ok(()) }
    /// ```
    pub fn try_set_permits(&self, permits: i64) -> Result<bool> {
        self.run(|s| async move { s.try_set_permits(permits).await })
    }

    /// See [`crate::Semaphore::try_set_permits_with_ttl`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.try_set_permits_with_ttl(4, std::time::Duration::from_secs(60))?;
    /// # Ok(()) }
    /// ```
    pub fn try_set_permits_with_ttl(&self, permits: i64, ttl: Duration) -> Result<bool> {
        self.run(|s| async move { s.try_set_permits_with_ttl(permits, ttl).await })
    }

    /// Takes `permits` permits, blocking as long as it takes (see
    /// [`crate::Semaphore::acquire`]).
    ///
    /// # Errors
    /// Those of [`crate::Semaphore::acquire`]; [`Error::Shutdown`] once the client is shut
    /// down.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// let permits = semaphore.acquire(2)?;
    /// permits.release()?;
    /// # Ok(()) }
    /// ```
    pub fn acquire(&self, permits: u32) -> Result<SemaphorePermits> {
        let taken = self.run(|s| async move { s.acquire(permits).await })?;
        self.guard(Some(taken)).ok_or(crate::Error::Shutdown)
    }

    /// See [`crate::Semaphore::try_acquire`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// if let Some(permit) = semaphore.try_acquire(1)? {
    ///     permit.release()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire(&self, permits: u32) -> Result<Option<SemaphorePermits>> {
        let taken = self.run(|s| async move { s.try_acquire(permits).await })?;
        Ok(self.guard(taken))
    }

    /// See [`crate::Semaphore::try_acquire_for`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if let Some(permit) = semaphore.try_acquire_for(1, Duration::from_millis(500))? {
    ///     permit.release()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_for(
        &self,
        permits: u32,
        wait: Duration,
    ) -> Result<Option<SemaphorePermits>> {
        let taken = self.run(|s| async move { s.try_acquire_for(permits, wait).await })?;
        Ok(self.guard(taken))
    }

    /// See [`crate::Semaphore::release`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.release(1)?;
    /// # Ok(()) }
    /// ```
    pub fn release(&self, permits: u32) -> Result<()> {
        self.run(|s| async move { s.release(permits).await })
    }

    /// See [`crate::Semaphore::release_if_exists`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.release_if_exists(1)?;
    /// # Ok(()) }
    /// ```
    pub fn release_if_exists(&self, permits: u32) -> Result<bool> {
        self.run(|s| async move { s.release_if_exists(permits).await })
    }

    /// See [`crate::Semaphore::add_permits`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.add_permits(-1)?;
    /// # Ok(()) }
    /// ```
    pub fn add_permits(&self, permits: i64) -> Result<i64> {
        self.run(|s| async move { s.add_permits(permits).await })
    }

    /// See [`crate::Semaphore::drain_permits`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// let taken = semaphore.drain_permits()?;
    /// # Ok(()) }
    /// ```
    pub fn drain_permits(&self) -> Result<i64> {
        self.run(|s| async move { s.drain_permits().await })
    }

    /// See [`crate::Semaphore::available_permits`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// println!("{} free", semaphore.available_permits()?);
    /// # Ok(()) }
    /// ```
    pub fn available_permits(&self) -> Result<i64> {
        self.run(|s| async move { s.available_permits().await })
    }

    /// See [`crate::Semaphore::delete`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.delete()?;
    /// # Ok(()) }
    /// ```
    pub fn delete(&self) -> Result<bool> {
        self.run(|s| async move { s.delete().await })
    }

    /// See [`crate::Semaphore::expire`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.expire(std::time::Duration::from_secs(3600))?;
    /// # Ok(()) }
    /// ```
    pub fn expire(&self, ttl: Duration) -> Result<bool> {
        self.run(|s| async move { s.expire(ttl).await })
    }

    /// See [`crate::Semaphore::expire_at`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::{Duration, SystemTime};
    /// semaphore.expire_at(SystemTime::now() + Duration::from_secs(60))?;
    /// # Ok(()) }
    /// ```
    pub fn expire_at(&self, at: std::time::SystemTime) -> Result<bool> {
        self.run(|s| async move { s.expire_at(at).await })
    }

    /// See [`crate::Semaphore::expire_if_set`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.expire_if_set(std::time::Duration::from_secs(60))?;
    /// # Ok(()) }
    /// ```
    pub fn expire_if_set(&self, when: impl Into<crate::synchronizers::Expiration>) -> Result<bool> {
        let when = when.into();
        self.run(|s| async move { s.expire_if_set(when).await })
    }

    /// See [`crate::Semaphore::expire_if_not_set`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.expire_if_not_set(std::time::Duration::from_secs(3600))?;
    /// # Ok(()) }
    /// ```
    pub fn expire_if_not_set(
        &self,
        when: impl Into<crate::synchronizers::Expiration>,
    ) -> Result<bool> {
        let when = when.into();
        self.run(|s| async move { s.expire_if_not_set(when).await })
    }

    /// See [`crate::Semaphore::expire_if_greater`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.expire_if_greater(std::time::Duration::from_secs(600))?;
    /// # Ok(()) }
    /// ```
    pub fn expire_if_greater(
        &self,
        when: impl Into<crate::synchronizers::Expiration>,
    ) -> Result<bool> {
        let when = when.into();
        self.run(|s| async move { s.expire_if_greater(when).await })
    }

    /// See [`crate::Semaphore::expire_if_less`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.expire_if_less(std::time::Duration::from_secs(60))?;
    /// # Ok(()) }
    /// ```
    pub fn expire_if_less(
        &self,
        when: impl Into<crate::synchronizers::Expiration>,
    ) -> Result<bool> {
        let when = when.into();
        self.run(|s| async move { s.expire_if_less(when).await })
    }

    /// See [`crate::Semaphore::expire_time`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// println!("{:?}", semaphore.expire_time()?);
    /// # Ok(()) }
    /// ```
    pub fn expire_time(&self) -> Result<crate::synchronizers::ExpireTime> {
        self.run(|s| async move { s.expire_time().await })
    }

    /// See [`crate::Semaphore::clear_expire`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.clear_expire()?;
    /// # Ok(()) }
    /// ```
    pub fn clear_expire(&self) -> Result<bool> {
        self.run(|s| async move { s.clear_expire().await })
    }

    /// See [`crate::Semaphore::remain_time_to_live`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// println!("{:?}", semaphore.remain_time_to_live()?);
    /// # Ok(()) }
    /// ```
    pub fn remain_time_to_live(&self) -> Result<Option<Duration>> {
        self.run(|s| async move { s.remain_time_to_live().await })
    }

    /// See [`crate::Semaphore::is_exists`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// println!("{}", semaphore.is_exists()?);
    /// # Ok(()) }
    /// ```
    pub fn is_exists(&self) -> Result<bool> {
        self.run(|s| async move { s.is_exists().await })
    }
}

/// Permits taken from a blocking [`Semaphore`], given back when dropped (also while a
/// panic unwinds); see [`crate::synchronizers::SemaphorePermits`].
///
/// # Drop
/// Dropping the guard starts the release on the client's runtime and returns at once;
/// stopping the client waits for it.
///
/// # Examples
/// ```no_run
/// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
/// let permits = semaphore.acquire(1)?;
/// assert_eq!(permits.permits(), 1);
/// permits.release()?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard gives the permits back at once"]
#[clippy::has_significant_drop]
#[derive(Debug)]
pub struct SemaphorePermits {
    shared: Arc<Shared>,
    /// `None` once released or forgotten.
    inner: Option<crate::synchronizers::SemaphorePermits>,
}

impl SemaphorePermits {
    /// How many permits this guard holds.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// assert_eq!(semaphore.acquire(2)?.permits(), 2);
    /// # Ok(()) }
    /// ```
    pub fn permits(&self) -> u32 {
        self.inner
            .as_ref()
            .map_or(0, crate::synchronizers::SemaphorePermits::permits)
    }

    /// Gives the permits back now (see [`crate::synchronizers::SemaphorePermits::release`]).
    ///
    /// # Errors
    /// Those of [`crate::Semaphore::release`].
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.acquire(1)?.release()?;
    /// # Ok(()) }
    /// ```
    pub fn release(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.shared.run(inner.release())?,
            None => Ok(()),
        }
    }

    /// Keeps the permits taken (see [`crate::synchronizers::SemaphorePermits::forget`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(semaphore: redisson_lock::blocking::Semaphore) -> redisson_lock::Result<()> {
    /// let n = semaphore.acquire(1)?.forget();
    /// semaphore.release(n)?;
    /// # Ok(()) }
    /// ```
    pub fn forget(mut self) -> u32 {
        self.inner
            .take()
            .map_or(0, crate::synchronizers::SemaphorePermits::forget)
    }
}

impl Drop for SemaphorePermits {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let semaphore = inner.semaphore().clone();
            let permits = inner.forget();
            self.shared.track_in_background(async move {
                if let Err(error) = semaphore.release(permits).await {
                    tracing::warn!(semaphore = semaphore.name(), permits, %error, "dropped guard: could not give the permits back");
                }
            });
        }
    }
}
