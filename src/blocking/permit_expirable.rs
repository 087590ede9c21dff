//! The blocking [`PermitExpirableSemaphore`] and its [`Permit`]: the async ones run on the
//! client's runtime, the calling thread blocked until each call is done.

use std::sync::Arc;
use std::time::Duration;

use super::runtime::Shared;
use crate::engine::hold::watch::HoldWatch;
use crate::error::Result;
use crate::synchronizers::PermitId;

/// Redisson's `RPermitExpirableSemaphore`, blocking: every method of the async
/// [`crate::PermitExpirableSemaphore`] as a plain call.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// let sem = client.get_permit_expirable_semaphore("exports");
/// sem.try_set_permits(2)?;
/// let permit = sem.acquire_kept()?;
/// permit.release()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct PermitExpirableSemaphore {
    pub(super) shared: Arc<Shared>,
    pub(super) inner: crate::PermitExpirableSemaphore,
}

/// Writes each blocking method from the async one of the same name.
macro_rules! blocking_calls {
    ($(
        $(#[$doc:meta])*
        pub fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> Result<$out:ty>;
    )*) => {$(
        $(#[$doc])*
        pub fn $name(&self $(, $arg: $ty)*) -> Result<$out> {
            let inner = self.inner.clone();
            self.shared.run(async move { inner.$name($($arg),*).await })?
        }
    )*};
}

impl PermitExpirableSemaphore {
    blocking_calls! {
        /// See [`crate::PermitExpirableSemaphore::acquire`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// let id = sem.acquire(None)?;
        /// sem.release(id)?;
        /// # Ok(()) }
        /// ```
        pub fn acquire(&self, lease: Option<Duration>) -> Result<PermitId>;

        /// See [`crate::PermitExpirableSemaphore::acquire_many`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let ids = client.get_permit_expirable_semaphore("jobs").acquire_many(2, None)?;
        /// # Ok(()) }
        /// ```
        pub fn acquire_many(&self, permits: u32, lease: Option<Duration>) -> Result<Vec<PermitId>>;

        /// See [`crate::PermitExpirableSemaphore::try_acquire`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// let id = sem.try_acquire(std::time::Duration::from_secs(1), None)?;
        /// # Ok(()) }
        /// ```
        pub fn try_acquire(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<PermitId>>;

        /// See [`crate::PermitExpirableSemaphore::try_acquire_many`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// let ids = sem.try_acquire_many(2, std::time::Duration::ZERO, None)?;
        /// # Ok(()) }
        /// ```
        pub fn try_acquire_many(&self, permits: u32, wait: Duration, lease: Option<Duration>) -> Result<Vec<PermitId>>;

        /// See [`crate::PermitExpirableSemaphore::release`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.release(sem.acquire(None)?)?;
        /// # Ok(()) }
        /// ```
        pub fn release(&self, id: PermitId) -> Result<()>;

        /// See [`crate::PermitExpirableSemaphore::try_release`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// assert!(sem.try_release(sem.acquire(None)?)?);
        /// # Ok(()) }
        /// ```
        pub fn try_release(&self, id: PermitId) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::update_lease_time`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// let id = sem.acquire(None)?;
        /// sem.update_lease_time(id, Some(std::time::Duration::from_secs(5)))?;
        /// # Ok(()) }
        /// ```
        pub fn update_lease_time(&self, id: PermitId, lease: Option<Duration>) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::get_lease_time`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// let id = sem.acquire(None)?;
        /// assert_eq!(sem.get_lease_time(id)?, None);
        /// # Ok(()) }
        /// ```
        pub fn get_lease_time(&self, id: PermitId) -> Result<Option<Duration>>;

        /// See [`crate::PermitExpirableSemaphore::available_permits`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// println!("{}", client.get_permit_expirable_semaphore("jobs").available_permits()?);
        /// # Ok(()) }
        /// ```
        pub fn available_permits(&self) -> Result<i64>;

        /// See [`crate::PermitExpirableSemaphore::acquired_permits`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// println!("{}", client.get_permit_expirable_semaphore("jobs").acquired_permits()?);
        /// # Ok(()) }
        /// ```
        pub fn acquired_permits(&self) -> Result<i64>;

        /// See [`crate::PermitExpirableSemaphore::get_permits`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// println!("{}", client.get_permit_expirable_semaphore("jobs").get_permits()?);
        /// # Ok(()) }
        /// ```
        pub fn get_permits(&self) -> Result<i64>;

        /// See [`crate::PermitExpirableSemaphore::set_permits`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// client.get_permit_expirable_semaphore("jobs").set_permits(4)?;
        /// # Ok(()) }
        /// ```
        pub fn set_permits(&self, permits: i64) -> Result<()>;

        /// See [`crate::PermitExpirableSemaphore::try_set_permits`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// client.get_permit_expirable_semaphore("jobs").try_set_permits(4)?;
        /// # Ok(()) }
        /// ```
        pub fn try_set_permits(&self, permits: i64) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::add_permits`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// client.get_permit_expirable_semaphore("jobs").add_permits(-1)?;
        /// # Ok(()) }
        /// ```
        pub fn add_permits(&self, delta: i64) -> Result<()>;

        /// See [`crate::PermitExpirableSemaphore::delete`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// client.get_permit_expirable_semaphore("jobs").delete()?;
        /// # Ok(()) }
        /// ```
        pub fn delete(&self) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire`]: both keys together.
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.expire(std::time::Duration::from_secs(3600))?;
        /// # Ok(()) }
        /// ```
        pub fn expire(&self, ttl: Duration) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire_at`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// use std::time::{Duration, SystemTime};
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.expire_at(SystemTime::now() + Duration::from_secs(60))?;
        /// # Ok(()) }
        /// ```
        pub fn expire_at(&self, at: std::time::SystemTime) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire_if_set`]: both keys together.
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.expire_if_set(std::time::Duration::from_secs(60))?;
        /// # Ok(()) }
        /// ```
        pub fn expire_if_set(&self, when: impl Into<crate::synchronizers::Expiration> + Send + 'static) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire_if_not_set`]: both keys together.
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.expire_if_not_set(std::time::Duration::from_secs(3600))?;
        /// # Ok(()) }
        /// ```
        pub fn expire_if_not_set(&self, when: impl Into<crate::synchronizers::Expiration> + Send + 'static) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire_if_greater`]: both keys together.
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.expire_if_greater(std::time::Duration::from_secs(600))?;
        /// # Ok(()) }
        /// ```
        pub fn expire_if_greater(&self, when: impl Into<crate::synchronizers::Expiration> + Send + 'static) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire_if_less`]: both keys together.
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let sem = client.get_permit_expirable_semaphore("jobs");
        /// sem.expire_if_less(std::time::Duration::from_secs(60))?;
        /// # Ok(()) }
        /// ```
        pub fn expire_if_less(&self, when: impl Into<crate::synchronizers::Expiration> + Send + 'static) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::expire_time`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// println!("{:?}", client.get_permit_expirable_semaphore("jobs").expire_time()?);
        /// # Ok(()) }
        /// ```
        pub fn expire_time(&self) -> Result<crate::synchronizers::ExpireTime>;

        /// See [`crate::PermitExpirableSemaphore::clear_expire`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// client.get_permit_expirable_semaphore("jobs").clear_expire()?;
        /// # Ok(()) }
        /// ```
        pub fn clear_expire(&self) -> Result<bool>;

        /// See [`crate::PermitExpirableSemaphore::remain_time_to_live`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let ttl = client.get_permit_expirable_semaphore("jobs").remain_time_to_live()?;
        /// # Ok(()) }
        /// ```
        pub fn remain_time_to_live(&self) -> Result<Option<Duration>>;

        /// See [`crate::PermitExpirableSemaphore::is_exists`].
        ///
        /// # Errors
        /// As the async method.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
        /// let there = client.get_permit_expirable_semaphore("jobs").is_exists()?;
        /// # Ok(()) }
        /// ```
        pub fn is_exists(&self) -> Result<bool>;
    }

    /// See [`crate::PermitExpirableSemaphore::try_release_many`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let ids = sem.acquire_many(2, None)?;
    /// assert_eq!(sem.try_release_many(&ids)?, 2);
    /// # Ok(()) }
    /// ```
    pub fn try_release_many(&self, ids: &[PermitId]) -> Result<u32> {
        let inner = self.inner.clone();
        let ids = ids.to_vec();
        self.shared
            .run(async move { inner.try_release_many(&ids).await })?
    }

    /// See [`crate::PermitExpirableSemaphore::acquire_kept`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let permit = client.get_permit_expirable_semaphore("jobs").acquire_kept()?;
    /// permit.release()?;
    /// # Ok(()) }
    /// ```
    pub fn acquire_kept(&self) -> Result<Permit> {
        let inner = self.inner.clone();
        let permit = self
            .shared
            .run(async move { inner.acquire_kept().await })??;
        Ok(self.wrap(permit))
    }

    /// See [`crate::PermitExpirableSemaphore::try_acquire_kept`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// if let Some(permit) = sem.try_acquire_kept(std::time::Duration::from_secs(1))? {
    ///     permit.release()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_kept(&self, wait: Duration) -> Result<Option<Permit>> {
        let inner = self.inner.clone();
        let permit = self
            .shared
            .run(async move { inner.try_acquire_kept(wait).await })??;
        Ok(permit.map(|p| self.wrap(p)))
    }

    fn wrap(&self, permit: crate::synchronizers::Permit) -> Permit {
        Permit {
            shared: self.shared.clone(),
            watch: permit.watch().clone(),
            inner: Some(permit),
        }
    }
}

/// A watchdog-kept permit, blocking: see [`crate::synchronizers::Permit`]. It tells how far it can be
/// counted on as a blocking lock guard does ([`Permit::state`], [`Permit::wait_at_risk`],
/// [`Permit::wait_held_again`], [`Permit::wait_lost`]: its [`HoldWatch`],
/// [`Permit::watch`]). Dropping it gives the permit back in the background.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// let permit = client.get_permit_expirable_semaphore("jobs").acquire_kept()?;
/// assert!(!permit.is_lost());
/// permit.release()?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the permit gives it back"]
#[derive(Debug)]
pub struct Permit {
    shared: Arc<Shared>,
    inner: Option<crate::synchronizers::Permit>,
    /// The async permit's.
    watch: HoldWatch,
}

impl Permit {
    /// The permit's id.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let permit = client.get_permit_expirable_semaphore("jobs").acquire_kept()?;
    /// println!("{}", permit.id());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> PermitId {
        self.inner.as_ref().map_or(
            PermitId::from_bytes([0; 16]),
            crate::synchronizers::Permit::id,
        )
    }

    crate::engine::hold::guard_methods::blocking_hold_methods!(
        "permit",
        "# fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {\n\
         let permit = client.get_permit_expirable_semaphore(\"jobs\").acquire_kept()?;"
    );

    /// Gives the permit back now (see [`crate::synchronizers::Permit::release`]).
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// client.get_permit_expirable_semaphore("jobs").acquire_kept()?.release()?;
    /// # Ok(()) }
    /// ```
    pub fn release(mut self) -> Result<()> {
        match self.inner.take() {
            Some(permit) => self.shared.run(permit.release())?,
            None => Ok(()),
        }
    }
}
