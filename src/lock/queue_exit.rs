//! Leaving a fair lock's queue in Redis: `leave_queue` (the kind's `acquireFailed`, sent
//! with retries) and [`QueueExit`], which a waiter holds while it may sit in the queue.
//!
//! Invariant: a queued waiter that gives up, fails or is dropped leaves the queue exactly
//! once: inline, in the background on drop, or through the abandon path of an attempt in
//! flight.

use super::handle::Lock;
use super::kind::AcquireMode;
use super::kind::LockKind;
use crate::connection::detach::FinishOnDrop;
use crate::connection::retry;
use crate::connection::scripts::Resend;
use crate::names::owner::LockOwner;

impl<K: LockKind> Lock<K> {
    /// The kind's queue clean-up (the fair lock's `acquireFailed`), sent with retries: it
    /// is idempotent, and a waiter left in the queue blocks everyone behind it.
    pub(super) async fn leave_queue(&self, owner: LockOwner, wait_ms: u64) {
        let Some(call) = self.kind.acquire_failed(&self.target(owner), wait_ms) else {
            return;
        };
        let mut pauses = retry::QUEUE_LEFT.pauses();
        for retry in 0..3u64 {
            match self.run(&call, Resend::Allowed).await {
                Ok(_) => return,
                Err(error) if retry < 2 && !self.context.is_closed() => {
                    tracing::debug!(lock = %self.name, %owner, %error, "leaving the queue failed; retrying");
                    tokio::time::sleep(pauses.next()).await;
                }
                Err(error) => {
                    tracing::warn!(lock = %self.name, %owner, %error, "could not leave the queue; the stale-waiter purge will");
                    return;
                }
            }
        }
    }
}

/// A queued waiter's way out of the queue: armed while the waiter may sit in a fair
/// lock's queue. [`QueueExit::leave`] runs the clean-up inline; dropping it armed (an error
/// or a dropped future) runs it in the background, unless an attempt is in flight, whose
/// own abandon path then does it. So it runs exactly once.
pub(super) struct QueueExit<K: LockKind> {
    pending: Option<(Lock<K>, LockOwner, u64)>,
    pub(super) in_flight: bool,
}

impl<K: LockKind> QueueExit<K> {
    pub(super) fn new(lock: &Lock<K>, owner: LockOwner, mode: AcquireMode) -> Self {
        let pending = match mode {
            AcquireMode::Queue { wait_ms } if K::CAPABILITIES.queues_in_redis => {
                Some((lock.clone(), owner, wait_ms))
            }
            _ => None,
        };
        QueueExit {
            pending,
            in_flight: false,
        }
    }

    pub(super) fn disarm(&mut self) {
        self.pending = None;
    }

    pub(super) async fn leave(&mut self) {
        if let Some((lock, owner, wait_ms)) = self.pending.take() {
            // Once disarmed, only this call leaves the queue: finish it even if the caller
            // is dropped at this await.
            let work = async move { lock.leave_queue(owner, wait_ms).await };
            FinishOnDrop::new(work, |()| async {}).await;
        }
    }
}

impl<K: LockKind> Drop for QueueExit<K> {
    fn drop(&mut self) {
        if self.in_flight {
            return;
        }
        if let Some((lock, owner, wait_ms)) = self.pending.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move { lock.leave_queue(owner, wait_ms).await });
                }
                Err(_) => tracing::warn!(
                    lock = %lock.name,
                    "a queued waiter was dropped outside a tokio runtime; the stale-waiter purge will remove it"
                ),
            }
        }
    }
}
