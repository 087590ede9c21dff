//! [`PermitExpirableSemaphore`], the handle: what it holds (the state its clones share).
//! Its methods are in `mod.rs` (acquire, release, the permits), `expiry.rs` (the keys'
//! expiry) and `acquiring.rs` (the wait).

use std::sync::Arc;

use super::ops::Shared;

/// A semaphore whose permits have ids and may expire: Redisson's
/// `RPermitExpirableSemaphore`, shared with Java apps on the same Redis.
///
/// Each permit taken gets a [`PermitId`](crate::synchronizers::PermitId) and, optionally, a lease: if the holder does not
/// give it back in time, the next operation of *any* client on the semaphore returns it
/// to the pool. A permit's expiry is the acquiring client's clock + the lease (as in
/// Java), so clock skew between clients moves it: see `docs/permits.md`.
///
/// Beyond Redisson, [`acquire_kept`](Self::acquire_kept) gives a [`Permit`](crate::synchronizers::Permit) kept alive by
/// the client's watchdog (it comes back within the watchdog timeout if this process
/// dies) that tells its holder when it is at risk, as a lock guard does.
///
/// A handle is cheap to clone and does no I/O when made.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// let sem = client.get_permit_expirable_semaphore("exports");
/// sem.try_set_permits(2).await?;
/// let id = sem.acquire(Some(Duration::from_secs(60))).await?;
/// // ... at most two exports at a time, each for at most a minute ...
/// sem.release(id).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore")
            .field("name", &self.shared.given)
            .field("raw_name", &&*self.shared.name)
            .finish()
    }
}
