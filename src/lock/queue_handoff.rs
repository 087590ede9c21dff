//! The fair lock's hand-off within its queue in Redis (see [`crate::engine::wait::queued_waiters`]):
//! the release that names this client's waiters (`release_or_offer`), and a waiter's
//! [`QueuedPlace`], through which it is named, told the answer, and handed the lock.
//!
//! Invariants: a waiter named in a release in flight does not try; a lock handed to a
//! waiter is either taken by it (its hold dates from the release's send) or given back,
//! by the releasing side when the waiter had left, by the waiter's side when it leaves
//! before taking it; a release whose answer was lost leaves every named waiter in doubt,
//! settled before it tries again (and in the background).

use std::sync::Arc;

use tokio::time::Instant;

use super::acquiring::Acquired;
use super::handle::Lock;
use super::kind::AcquireMode;
use super::kind::LockKind;
use super::releasing::{HandTo, UnlockReply};
use crate::engine::wait::queued_waiters::{Leaving, QueuedTo, Slot};
use crate::error::Result;
use crate::names::owner::LockOwner;

impl<K: LockKind> Lock<K> {
    /// The release of a kind that queues in Redis: when this owner gives back its last
    /// hold and this client has waiters of the lock that are not trying, the release
    /// names them, and hands the lock to the head of the queue if it is one of them;
    /// otherwise it is the kind's release.
    pub(super) async fn release_or_offer(
        &self,
        owner: LockOwner,
        lease_ms: u64,
    ) -> Result<UnlockReply> {
        let context = &self.context;
        let last_hold = context
            .holds
            .known(&self.name, owner, K::CAPABILITIES.write_lock)
            <= 1;
        let offer = (last_hold && context.handoff_limits.in_a_row > 0)
            .then(|| context.queued.offer(&self.name))
            .flatten();
        let Some(offer) = offer else {
            return self.release_script(owner, lease_ms).await;
        };
        let sent = Instant::now();
        let released = self
            .release_script_with(owner, lease_ms, true, HandTo::Queue(offer.named()))
            .await;
        match &released {
            Ok(UnlockReply::Handed { to }) => {
                let receiver = offer.named().get(*to).map(|slot| slot.owner);
                tracing::trace!(lock = %self.name, from = %owner, to = ?receiver, "handed to the head of the queue, a waiter of this client");
                if let Some(gone) = offer.answer(Some(*to), sent) {
                    tracing::debug!(lock = %self.name, owner = %gone, "the waiter left during its hand-off: giving the lock back");
                    self.with_owner(gone).release_in_background();
                }
            }
            Ok(_) => {
                offer.answer(None, sent);
            }
            Err(_) => {
                // The hand-off may have run, to any of them: each settles that before it
                // tries again (and in the background, if it left).
                for slot in offer.named() {
                    self.with_owner(slot.owner).leave_in_doubt(slot.owner, 0);
                }
                offer.unknown();
            }
        }
        released
    }
}

/// A fair waiter's place among this client's waiters of the lock, held by the waiting
/// future: it leaves on every way out, and gives back a lock handed to it and not taken.
pub(super) struct QueuedPlace<'a, K: LockKind> {
    lock: &'a Lock<K>,
    slot: Option<Arc<Slot>>,
}

impl<'a, K: LockKind> QueuedPlace<'a, K> {
    /// Lists `owner` as a waiter of `lock` that a release may hand the lock to (only for
    /// the kinds that queue in Redis, and waiters that queue).
    pub(super) fn join(
        lock: &'a Lock<K>,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
    ) -> Self {
        let context = &lock.context;
        let slot = match mode {
            AcquireMode::Queue { wait_ms } if K::CAPABILITIES.queues_in_redis => {
                let to = QueuedTo {
                    field: lock.target(owner).owner_value(),
                    lease_ms: lease_ms.unwrap_or(context.watchdog_ms),
                    wait_ms,
                };
                Some(context.queued.join(&lock.name, owner, to))
            }
            _ => None,
        };
        QueuedPlace { lock, slot }
    }

    /// The waiter's slot (`None`: not a waiter a release may hand the lock to).
    pub(super) fn slot(&self) -> Option<Arc<Slot>> {
        self.slot.clone()
    }

    /// Takes the hold a release handed over (sent at `at`) and leaves.
    pub(super) fn take_grant(
        &mut self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        at: Instant,
    ) -> Acquired {
        if let Some(slot) = self.slot.take() {
            self.lock.context.queued.leave(&self.lock.name, &slot);
        }
        self.lock.register_acquired(owner, lease_ms, at, None)
    }
}

impl<K: LockKind> Drop for QueuedPlace<'_, K> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let lock = self.lock;
        if lock.context.queued.leave(&lock.name, &slot) == Leaving::GiveBack {
            tracing::debug!(lock = %lock.name, owner = %slot.owner, "a waiter left after the lock was handed to it: giving it back");
            lock.with_owner(slot.owner).release_in_background();
        }
    }
}
