//! [`TrackQueue`]: what the tracker has to do next, filled by whoever learns it: the
//! registry and the unlock path (this client wrote a held key, which `NOLOOP` silently
//! stops tracking), the listener (Redis invalidated keys,
//! or tracking was set up again). One lock and a wake-up per item; nothing is kept per
//! hold between two drains.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fred::bytes::Bytes;
use tokio::sync::Notify;

use super::waited::WaitedKeys;
use crate::names::owner::LockOwner;

/// A hold as the registry names it (`registry::HoldKey`, spelled out here so that the
/// registry, which owns a queue, is not imported back by it).
type HoldKey = (Arc<str>, LockOwner, bool);

/// What is waiting for the tracker (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Holds whose keys this client wrote (an acquisition, a re-entry, a partial unlock):
    /// read again so that Redis tracks them again.
    pub(crate) rewritten: Vec<HoldKey>,
    /// Names whose shared key this client wrote (one owner's unlock of a read-write or
    /// faster multi-lock, a kept permit's release): every hold of the name is read again.
    pub(crate) shared: Vec<Arc<str>>,
    /// Keys Redis invalidated: somebody else changed them, the server expired or evicted
    /// them, or its tracking table dropped them. Their holds are checked.
    pub(crate) invalidated: Vec<Bytes>,
    /// Every hold is checked (a `FLUSHALL` / `FLUSHDB`, tracking set up again after a
    /// reconnect or a failover).
    pub(crate) everything: bool,
}

impl Pending {
    /// Whether there is a check to make (not only keys to read again).
    pub(crate) fn has_checks(&self) -> bool {
        self.everything || !self.invalidated.is_empty()
    }

    fn is_empty(&self) -> bool {
        !self.has_checks() && self.rewritten.is_empty() && self.shared.is_empty()
    }
}

/// See the module docs. Off until the listener has set tracking up (and for good when the
/// server refuses it): then every call is one atomic load.
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

    /// This client wrote `hold`'s key and still holds it.
    pub(crate) fn rewritten(&self, hold: &HoldKey) {
        if self.is_on() {
            self.push(|p| p.rewritten.push(hold.clone()));
        }
    }

    /// This client wrote the key that every hold of `name` shares.
    pub(crate) fn shared_key_rewritten(&self, name: &Arc<str>) {
        if self.is_on() {
            self.push(|p| p.shared.push(name.clone()));
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
