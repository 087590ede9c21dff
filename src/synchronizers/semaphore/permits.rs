//! [`SemaphorePermits`]: permits taken from a [`Semaphore`], given back when dropped.

use super::Semaphore;
use crate::error::Result;

/// Permits taken from a [`Semaphore`] by [`Semaphore::acquire`] and its siblings, given
/// back when the guard is dropped, like tokio's `SemaphorePermit`.
///
/// The way out that reports errors is [`release`](SemaphorePermits::release);
/// [`forget`](SemaphorePermits::forget) keeps the permits taken (Redisson's style: give
/// them back later with [`Semaphore::release`], from any process).
///
/// # Drop
/// Dropping the guard gives its permits back in the background (a synchronous hand-off
/// to the client's task; it never blocks), publishing the new count. If the client is
/// gone by then, the permits stay taken: a plain semaphore has no lease (see the
/// [`Semaphore`] docs on the permit-expirable semaphore).
///
/// # Examples
/// ```no_run
/// # async fn call_partner_api() {}
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let semaphore = client.get_semaphore("partner-api");
/// {
///     let _permit = semaphore.acquire(1).await?;
///     call_partner_api().await;
/// } // given back here
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard gives the permits back at once"]
#[clippy::has_significant_drop]
#[derive(Debug)]
pub struct SemaphorePermits {
    semaphore: Semaphore,
    permits: u32,
    armed: bool,
}

impl SemaphorePermits {
    pub(super) fn new(semaphore: Semaphore, permits: u32) -> SemaphorePermits {
        SemaphorePermits {
            semaphore,
            permits,
            // A guard of no permits (`acquire(0)`) has nothing to give back.
            armed: permits > 0,
        }
    }

    /// How many permits this guard holds.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let permits = semaphore.acquire(3).await?;
    /// assert_eq!(permits.permits(), 3);
    /// # Ok(()) }
    /// ```
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The semaphore the permits were taken from.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let permits = semaphore.acquire(1).await?;
    /// println!("holding a permit of {}", permits.semaphore().name());
    /// # Ok(()) }
    /// ```
    pub fn semaphore(&self) -> &Semaphore {
        &self.semaphore
    }

    /// Gives the permits back now and reports how that went (see [`Semaphore::release`]).
    ///
    /// # Errors
    /// Those of [`Semaphore::release`]; after an error nothing is given back again.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let permits = semaphore.acquire(2).await?;
    /// permits.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        self.semaphore.release(self.permits).await
    }

    /// Keeps the permits taken: nothing is given back when the guard goes. Returns how
    /// many there were (give them back with [`Semaphore::release`], from any process).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let n = semaphore.acquire(1).await?.forget();
    /// // ... later, perhaps in another process:
    /// semaphore.release(n).await?;
    /// # Ok(()) }
    /// ```
    pub fn forget(mut self) -> u32 {
        self.armed = false;
        self.permits
    }
}

impl Drop for SemaphorePermits {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let semaphore = self.semaphore.clone();
        let permits = self.permits;
        self.semaphore
            .context
            .release_later(Box::pin(async move {
                if let Err(error) = semaphore.release(permits).await {
                    tracing::warn!(semaphore = %semaphore.name, permits, %error, "could not give back the permits of a dropped guard");
                }
            }));
    }
}
