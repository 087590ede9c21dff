//! [`PermitExpirableSemaphore`]: Redisson's `RPermitExpirableSemaphore` (docs/protocol.md §20),
//! wire-compatible: the same keys (`N`, a string of available permits, and `{N}:timeout`,
//! a sorted set of held permits: 16-byte id → expiry in the acquiring client's epoch ms),
//! the same channel (`redisson_sc:{N}`, shared with a `Semaphore` of that name), the same
//! script effects and published numbers, except that nothing publishes a count of 0 or
//! less (docs/protocol.md §23.3).
//!
//! * [`id`]: [`PermitId`], 16 bytes in Redis, 32 hex digits to people;
//! * [`ops`]: the scripts (`lua/pes_*.lua`) and how each call is sent and read;
//! * [`acquiring`]: one acquire attempt (cancel safe, lost replies settled by the ids it
//!   chose) and the wait loop (channel, earliest-expiry hint, deadline);
//! * [`hold`]: a watchdog-kept permit for the hold machinery ([`crate::engine::hold::held::Held`]);
//! * [`permit`]: [`Permit`], the guard of a watchdog-kept permit;
//! * [`expiry`]: the expiry of both keys together, and existence (`RExpirable`).

pub(crate) mod acquiring;
pub(crate) mod expiry;
mod handle;
pub(crate) mod hold;
pub(crate) mod id;
pub(crate) mod ops;
pub(crate) mod permit;

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::connection::scripts::now_ms;
use crate::engine::Engine;
use crate::error::{Error, Result};
use acquiring::Lease;
pub use handle::PermitExpirableSemaphore;
pub use id::{PermitId, PermitIdError};
use ops::{NO_LEASE, Shared};
pub use permit::Permit;

/// A release call ended: the unlock metrics, kind `permit_expirable_semaphore`.
pub(crate) fn released_metric(shared: &Shared, released: &Result<bool>) {
    use crate::engine::telemetry::UnlockOutcome;
    let outcome = match released {
        Ok(true) => UnlockOutcome::Released,
        Ok(false) => UnlockOutcome::NotOwner,
        Err(_) => UnlockOutcome::Error,
    };
    crate::engine::telemetry::unlock_finished(acquiring::KIND, outcome, None, shared.metric_name());
}

/// Redisson's `IllegalArgumentException` for a permit that is not held.
pub(crate) fn not_held(id: &PermitId) -> Error {
    Error::InvalidArgument(format!(
        "Permit with id {id} has already been released or doesn't exist"
    ))
}

impl PermitExpirableSemaphore {
    pub(crate) fn new(context: Arc<Engine>, name: String) -> PermitExpirableSemaphore {
        PermitExpirableSemaphore {
            shared: Arc::new(Shared::new(context, name)),
        }
    }

    /// The name as given to the client.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.get_permit_expirable_semaphore("jobs").name(), "jobs");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.shared.given
    }

    /// The name in Redis (`N`: the data key), after the client's name mapper.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// println!("{}", client.get_permit_expirable_semaphore("jobs").raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        &self.shared.name
    }

    /// Takes one permit, waiting as long as it takes. `lease`: how long the permit lives
    /// unless given back (`None`: until given back, Java's `-1`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a lease below 1 ms; [`Error::Shutdown`];
    /// [`Error::Timeout`] when the channel's subscription is not confirmed within the
    /// subscription timeout; Redis errors.
    ///
    /// # Cancel safety
    /// Dropping the future never leaves a permit taken: an attempt in flight is finished
    /// in the background and what it took is given back.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#acquire(long leaseTime, TimeUnit unit)`, `acquire()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let id = sem.acquire(Some(std::time::Duration::from_secs(10))).await?;
    /// sem.release(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<PermitId> {
        let mut ids = self.acquire_many(1, lease).await?;
        ids.pop().ok_or_else(|| Error::UnexpectedReply {
            operation: "acquire",
            reply: "no permit id".to_owned(),
        })
    }

    /// Takes `permits` permits at once (all or none), waiting as long as it takes. 0
    /// permits: an empty list at once, no I/O (Redisson 4.7.0's `acquire(0, ...)` waits
    /// forever instead; not copied).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#acquire(int permits, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let ids = sem.acquire_many(2, None).await?;
    /// sem.try_release_many(&ids).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_many(
        &self,
        permits: u32,
        lease: Option<Duration>,
    ) -> Result<Vec<PermitId>> {
        let lease = Lease::from_option(lease)?;
        if self.no_permits(permits)? {
            return Ok(Vec::new());
        }
        let taken = acquiring::acquire(&self.shared, permits, lease, None)
            .instrument(self.span("acquire", permits))
            .await?;
        Ok(taken.map(|t| t.ids).unwrap_or_default())
    }

    /// Takes one permit if one comes free within `wait` (`Duration::ZERO`: one attempt);
    /// `None` if not.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire), except that a subscription not confirmed in time
    /// is `Ok(None)`.
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#tryAcquire(long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// if let Some(id) = sem.try_acquire(Duration::from_secs(1), Some(Duration::from_secs(5))).await? {
    ///     sem.release(id).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<PermitId>> {
        Ok(self.try_acquire_many(1, wait, lease).await?.pop())
    }

    /// Takes `permits` permits at once if they come free within `wait`; an empty list if
    /// not (as Redisson). 0 permits: an empty list at once, no I/O (as Redisson answers).
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#tryAcquire(int permits, long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let ids = sem.try_acquire_many(3, Duration::ZERO, None).await?;
    /// if !ids.is_empty() {
    ///     sem.try_release_many(&ids).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_many(
        &self,
        permits: u32,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Vec<PermitId>> {
        let lease = Lease::from_option(lease)?;
        if self.no_permits(permits)? {
            return Ok(Vec::new());
        }
        let taken = acquiring::acquire(&self.shared, permits, lease, Some(wait))
            .instrument(self.span("try_acquire", permits))
            .await?;
        Ok(taken.map(|t| t.ids).unwrap_or_default())
    }

    /// Takes one permit kept alive by the client's watchdog, waiting as long as it takes:
    /// a [`Permit`] that tells when it is at risk and is given back when dropped. Not in
    /// Redisson (see [`Permit`]).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let permit = client.get_permit_expirable_semaphore("jobs").acquire_kept().await?;
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_kept(&self) -> Result<Permit> {
        let taken = acquiring::acquire(&self.shared, 1, Lease::Watchdog, None)
            .instrument(self.span("acquire_kept", 1))
            .await?;
        match taken {
            Some(taken) => Permit::kept(self.shared.clone(), taken),
            None => Err(Error::UnexpectedReply {
                operation: "acquire",
                reply: "no permit".to_owned(),
            }),
        }
    }

    /// [`acquire_kept`](Self::acquire_kept) waiting at most `wait`; `None` if no permit
    /// came free in time.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// if let Some(permit) = sem.try_acquire_kept(std::time::Duration::from_secs(1)).await? {
    ///     permit.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_kept(&self, wait: Duration) -> Result<Option<Permit>> {
        let taken = acquiring::acquire(&self.shared, 1, Lease::Watchdog, Some(wait))
            .instrument(self.span("try_acquire_kept", 1))
            .await?;
        taken
            .map(|taken| Permit::kept(self.shared.clone(), taken))
            .transpose()
    }

    /// Gives permit `id` back.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] with Redisson's text ("Permit with id … has already been
    /// released or doesn't exist") when it was not held, or its lease had ended (it is
    /// given back anyway, as Redisson does); Redis errors. A lost reply is settled by
    /// looking for the permit, so a release that ran is never reported as failed.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#release(String permitId)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let id = sem.acquire(None).await?;
    /// sem.release(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(&self, id: PermitId) -> Result<()> {
        if self.try_release(id).await? {
            Ok(())
        } else {
            Err(not_held(&id))
        }
    }

    /// Gives permit `id` back; `false` when it was not held, or its lease had ended (it
    /// is given back anyway, as Redisson does).
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#tryRelease(String permitId)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let id = sem.acquire(None).await?;
    /// assert!(sem.try_release(id).await?);
    /// assert!(!sem.try_release(id).await?);
    /// # Ok(()) }
    /// ```
    pub async fn try_release(&self, id: PermitId) -> Result<bool> {
        self.shared.check_usable()?;
        let released = self
            .shared
            .release_one(&id)
            .instrument(self.span("release", 1))
            .await;
        released_metric(&self.shared, &released);
        released
    }

    /// Gives `ids` back, all or none: the number given back (`ids.len()`), or 0 when any
    /// of them was not held or its lease had ended (then nothing changed).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty list; Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#tryRelease(List<String> permitsIds)` (3.41+)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let ids = sem.acquire_many(2, None).await?;
    /// assert_eq!(sem.try_release_many(&ids).await?, 2);
    /// # Ok(()) }
    /// ```
    pub async fn try_release_many(&self, ids: &[PermitId]) -> Result<u32> {
        self.shared.check_usable()?;
        if ids.is_empty() {
            return Err(Error::InvalidArgument(
                "permitIds can't be null or empty".to_owned(),
            ));
        }
        self.shared
            .release_many(ids)
            .instrument(self.span("release", ids.len() as u32))
            .await
    }

    /// Sets permit `id`'s lease to `lease` from now (`None`: no lease); `false` when it is
    /// not held (or its lease had ended).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a lease below 1 ms; Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#updateLeaseTime(String permitId, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let id = sem.acquire(Some(Duration::from_secs(5))).await?;
    /// assert!(sem.update_lease_time(id, Some(Duration::from_secs(30))).await?);
    /// # Ok(()) }
    /// ```
    pub async fn update_lease_time(&self, id: PermitId, lease: Option<Duration>) -> Result<bool> {
        self.shared.check_usable()?;
        let lease = Lease::from_option(lease)?;
        let now = now_ms();
        let score = match lease {
            Lease::For(ms) => now.saturating_add(ms as i64),
            Lease::Unlimited | Lease::Watchdog => NO_LEASE,
        };
        self.shared
            .update_lease(&id, score, now)
            .instrument(self.span("update_lease_time", 1))
            .await
    }

    /// The time left on permit `id`'s lease by this client's clock; `None` for a permit
    /// without a lease.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] with Redisson's text when it is not held; Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#getLeaseTime(String permitId)` (3.41+)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.get_permit_expirable_semaphore("jobs");
    /// let id = sem.acquire(Some(std::time::Duration::from_secs(5))).await?;
    /// println!("{:?} left", sem.get_lease_time(id).await?);
    /// # Ok(()) }
    /// ```
    pub async fn get_lease_time(&self, id: PermitId) -> Result<Option<Duration>> {
        self.shared.check_usable()?;
        match self.shared.lease_time(&id).await? {
            -1 => Ok(None),
            left if left > 0 => Ok(Some(Duration::from_millis(left as u64))),
            _ => Err(not_held(&id)),
        }
    }

    /// The permits free now (expired ones given back first, which publishes).
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#availablePermits()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// println!("{} free", client.get_permit_expirable_semaphore("jobs").available_permits().await?);
    /// # Ok(()) }
    /// ```
    pub async fn available_permits(&self) -> Result<i64> {
        self.shared.check_usable()?;
        Ok(self.shared.counts().await?.available)
    }

    /// The permits held now (expired ones given back first).
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#acquiredPermits()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// println!("{} held", client.get_permit_expirable_semaphore("jobs").acquired_permits().await?);
    /// # Ok(()) }
    /// ```
    pub async fn acquired_permits(&self) -> Result<i64> {
        self.shared.check_usable()?;
        Ok(self.shared.counts().await?.held)
    }

    /// The permits in all: free + held (0 when the semaphore was never set).
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#getPermits()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// println!("{} in all", client.get_permit_expirable_semaphore("jobs").get_permits().await?);
    /// # Ok(()) }
    /// ```
    pub async fn get_permits(&self) -> Result<i64> {
        self.shared.check_usable()?;
        let counts = self.shared.counts().await?;
        Ok(if counts.exists {
            counts.available + counts.held
        } else {
            0
        })
    }

    /// Makes the total (free + held, expired ones included) `permits`, by changing the
    /// free count; publishes the total when it changed (as Redisson).
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#setPermits(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// client.get_permit_expirable_semaphore("jobs").set_permits(8).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_permits(&self, permits: i64) -> Result<()> {
        self.shared.check_usable()?;
        self.shared.set_permits(permits).await.map(|_| ())
    }

    /// Sets the free count to `permits` unless the semaphore exists; whether it was set.
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#trySetPermits(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let set = client.get_permit_expirable_semaphore("jobs").try_set_permits(4).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_set_permits(&self, permits: i64) -> Result<bool> {
        self.shared.check_usable()?;
        self.shared.try_set_permits(permits).await
    }

    /// Adds `delta` free permits (negative: removes); publishes `delta` when positive (as
    /// Redisson). Like Redisson's, it drops the data key's TTL. Never sent twice: a lost
    /// reply is [`Error::OutcomeUnknown`].
    ///
    /// # Errors
    /// Redis errors; [`Error::OutcomeUnknown`].
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#addPermits(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// client.get_permit_expirable_semaphore("jobs").add_permits(2).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        self.shared.check_usable()?;
        self.shared.add_permits(delta).await.map(|_| ())
    }

    /// Deletes the semaphore (`DEL N {N}:timeout`); whether anything was there. Held
    /// permits are gone with it: their guards learn it at their next renewal.
    ///
    /// # Errors
    /// Redis errors.
    ///
    /// # Redisson equivalent
    /// `RPermitExpirableSemaphore#delete()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// client.get_permit_expirable_semaphore("jobs").delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<bool> {
        self.shared.check_usable()?;
        self.shared.delete().await
    }

    /// The usual checks; then whether `permits` is 0, which takes nothing and needs no
    /// I/O.
    fn no_permits(&self, permits: u32) -> Result<bool> {
        self.shared.check_usable()?;
        Ok(permits == 0)
    }

    fn span(&self, operation: &'static str, permits: u32) -> tracing::Span {
        tracing::debug_span!(
            "redisson_lock.permit_expirable_semaphore",
            semaphore = %self.shared.given,
            operation,
            permits
        )
    }
}
