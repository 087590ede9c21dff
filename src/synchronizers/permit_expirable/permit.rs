//! [`Permit`]: one permit kept alive by the client's watchdog, that knows when it is at
//! risk and when it was lost, and is given back when dropped.

use std::sync::Arc;
use std::time::Duration;

use super::acquiring::Taken;
use super::hold::PermitHold;
use super::id::PermitId;
use super::ops::Shared;
use crate::connection::detach::FinishOnDrop;
use crate::engine::hold::registry::HoldKey;
use crate::engine::hold::watch::HoldWatch;
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

/// One permit of a [`PermitExpirableSemaphore`](crate::PermitExpirableSemaphore) taken
/// without a lease of its own, from
/// [`acquire_kept`](crate::PermitExpirableSemaphore::acquire_kept) or
/// [`try_acquire_kept`](crate::PermitExpirableSemaphore::try_acquire_kept). Redisson has
/// no such thing (its users asked for it: redisson#4462, #2045, #2213, #1395).
///
/// In Redis it is an ordinary permit with a lease of the client's watchdog timeout
/// (30 s by default): Java clients see it as one of theirs. The client's watchdog moves
/// its expiry to now + the watchdog timeout every third of that timeout, in the same
/// batched rounds as the locks' renewals, the way
/// [`update_lease_time`](crate::PermitExpirableSemaphore::update_lease_time) would. If
/// this process dies, the permit comes back to the semaphore within one watchdog timeout.
///
/// Like a [`LockGuard`](crate::LockGuard), the permit tells how far it can be counted on
/// ([`state`](Permit::state), [`at_risk`](Permit::at_risk), [`lost`](Permit::lost), all
/// of them its [`HoldWatch`](crate::HoldWatch), [`watch`](Permit::watch)):
/// it is at risk as soon as the connection serving the semaphore drops or no renewal
/// confirmed it for a whole lease less a margin, always before its lease can have ended,
/// and lost once it is found gone (another client reclaimed it after its lease ended, the
/// keys were deleted) or its lease ran out unconfirmed. The lease's end is read by other
/// clients with *their* clocks: see `docs/permits.md` on clock skew.
///
/// # Drop
/// Dropping the permit stops its renewal and gives it back in the background (a
/// synchronous hand-off, it never blocks).
///
/// # Examples
/// ```no_run
/// # async fn call_partner_api() {}
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let slots = client.get_permit_expirable_semaphore("partner-api");
/// slots.try_set_permits(4).await?;
/// let permit = slots.acquire_kept().await?;
/// tokio::select! {
///     _ = permit.at_risk() => eprintln!("the permit may be gone: stopping"),
///     _ = call_partner_api() => {}
/// }
/// permit.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the permit gives it back"]
#[clippy::has_significant_drop]
pub struct Permit {
    shared: Arc<Shared>,
    id: PermitId,
    watch: HoldWatch,
    hold: HoldKey,
    armed: bool,
}

impl Permit {
    /// Registers a permit just taken with the watchdog.
    pub(crate) fn kept(shared: Arc<Shared>, taken: Taken) -> Result<Permit> {
        let Some(id) = taken.ids.first().copied() else {
            return Err(Error::UnexpectedReply {
                operation: "acquire",
                reply: "no permit id".to_owned(),
            });
        };
        let hold: HoldKey = (shared.name.clone(), LockOwner::from_raw(id.digest()), false);
        let timeouts = shared.timeouts.clone();
        let signal = shared
            .context
            .registry
            .add_hold(hold.clone(), None, taken.sent, || {
                Arc::new(PermitHold {
                    timeouts,
                    id: id.value(),
                })
            });
        Ok(Permit {
            shared,
            id,
            watch: HoldWatch::one(signal, None),
            hold,
            armed: true,
        })
    }

    /// The permit's id (what Java's `RPermitExpirableSemaphore` calls it too).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let permit = client.get_permit_expirable_semaphore("jobs").acquire_kept().await?;
    /// println!("holding permit {}", permit.id());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> PermitId {
        self.id
    }

    crate::engine::hold::guard_methods::async_hold_methods!(
        "permit",
        "# async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {\n\
         let permit = client.get_permit_expirable_semaphore(\"jobs\").acquire_kept().await?;"
    );

    /// Gives the permit back now, and says how that went.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] with Redisson's text when the permit was no longer
    /// held (it was lost: see [`lost`](Permit::lost)); Redis errors.
    ///
    /// # Cancel safety
    /// Once started, the release is finished in the background if the future is dropped.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let permit = client.get_permit_expirable_semaphore("jobs").acquire_kept().await?;
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        self.shared.context.registry.remove_hold(&self.hold);
        let shared = self.shared.clone();
        let id = self.id;
        let released = FinishOnDrop::new(
            async move {
                let released = shared.release_one(&id).await;
                super::released_metric(&shared, &released);
                released
            },
            |_| async {},
        )
        .await?;
        if released {
            Ok(())
        } else {
            Err(super::not_held(&self.id))
        }
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("semaphore", &self.shared.given)
            .field("id", &self.id)
            .field("state", &self.state())
            .finish()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.shared.context.registry.remove_hold(&self.hold);
        let shared = self.shared.clone();
        let id = self.id;
        self.shared.context.release_later(Box::pin(async move {
            shared
                .release_quietly(vec![id], Duration::from_secs(60))
                .await;
        }));
    }
}
