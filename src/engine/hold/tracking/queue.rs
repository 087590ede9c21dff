//! [`TrackQueue`]: what the tracker has to do next, filled by the listener (Redis
//! invalidated keys, or tracking was set up again). One lock and a wake-up per item;
//! nothing is kept per hold between two drains. (This client's own writes need no entry:
//! every script that writes a key holds remain in reads it again, and a read inside a
//! script tracks the key for the calling connection.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fred::bytes::Bytes;
use tokio::sync::Notify;

use super::waited::WaitedKeys;

/// What is waiting for the tracker (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Keys Redis invalidated: somebody else changed them, the server expired or evicted
    /// them, or its tracking table dropped them. Their holds are checked.
    pub(crate) invalidated: Vec<Bytes>,
    /// Every hold is checked (a `FLUSHALL` / `FLUSHDB`, tracking set up again after a
    /// reconnect or a failover).
    pub(crate) everything: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        !self.everything && self.invalidated.is_empty()
    }
}

/// See the module docs. Whether tracking is on is one atomic load: off until the listener
/// has set it up, and for good when the server refuses it.
#[derive(Debug, Default)]
pub(crate) struct TrackQueue {
    on: AtomicBool,
    pending: Mutex<Pending>,
    wake: Notify,
    /// The keys this client's waiters wait on (see [`super::waited`]).
    pub(crate) waited: Arc<WaitedKeys>,
}

impl TrackQueue {
    /// Whether Redis tracks this client's held keys now.
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// Tracking was set up (`true`) or is gone (`false`: a reconnect, a refusal).
    pub(crate) fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Release);
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        // Each critical section is one push or one take: a poisoned lock is consistent.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, add: impl FnOnce(&mut Pending)) {
        let mut pending = self.pending();
        let was_empty = pending.is_empty();
        add(&mut pending);
        drop(pending);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Redis invalidated `keys`; `None`: every key (a flush).
    pub(crate) fn invalidated(&self, keys: Option<Vec<Bytes>>) {
        self.push(|p| match keys {
            Some(keys) => p.invalidated.extend(keys),
            None => p.everything = true,
        });
    }

    /// Every hold is to be checked (and read again).
    pub(crate) fn check_everything(&self) {
        self.push(|p| p.everything = true);
    }

    /// What is waiting, taken.
    pub(crate) fn take(&self) -> Pending {
        std::mem::take(&mut *self.pending())
    }

    /// Completes once something is waiting (at once if something is).
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.pending().is_empty() {
                return;
            }
            notified.await;
        }
    }
}
