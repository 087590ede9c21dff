//! [`WaitedKeys`]: the lock keys this client's waiters wait on, so that Redis's
//! invalidation of one wakes them. A lock that is deleted rather than unlocked (`DEL`,
//! `FLUSHALL`, eviction, its lease running out) publishes no unlock message; without this
//! its waiters would try again only at their re-check (up to 2 s later).
//!
//! A waiter that has slept [`READ_AFTER`] without a message reads its lock's key once
//! (`EXISTS`, a read, so Redis tracks the key for this client) and then also wakes at the
//! key's next invalidation. A waiter woken sooner (the usual unlock message) sends
//! nothing more. One map entry per waited key, shared by its waiters and removed with the
//! last of them.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use fred::bytes::Bytes;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// How long a waiter sleeps without a message before it has its key tracked: waits that
/// an unlock message ends sooner (nearly all of them under contention) cost no read.
pub(crate) const READ_AFTER: Duration = Duration::from_millis(100);

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct WaitedKeys {
    keys: DashMap<Bytes, (usize, Arc<Notify>)>,
}

impl WaitedKeys {
    /// A waiter's share of `key`'s entry; dropping it gives the share back.
    pub(crate) fn watch(self: &Arc<Self>, key: &[u8]) -> WaitedKey {
        let key = Bytes::copy_from_slice(key);
        let notify = {
            let mut entry = self
                .keys
                .entry(key.clone())
                .or_insert_with(|| (0, Arc::new(Notify::new())));
            entry.0 += 1;
            entry.1.clone()
        };
        WaitedKey {
            keys: self.clone(),
            key,
            notify,
        }
    }

    /// Redis invalidated `keys` (`None`: every key, a flush): their waiters wake.
    pub(crate) fn changed(&self, keys: Option<&[Bytes]>) {
        match keys {
            Some(keys) => {
                for key in keys {
                    if let Some(entry) = self.keys.get(key) {
                        entry.1.notify_waiters();
                    }
                }
            }
            None => {
                for entry in self.keys.iter() {
                    entry.1.notify_waiters();
                }
            }
        }
    }

    /// How many keys have waiters (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

/// One waiter's share of a waited key (see [`WaitedKeys::watch`]).
#[derive(Debug)]
pub(crate) struct WaitedKey {
    keys: Arc<WaitedKeys>,
    key: Bytes,
    notify: Arc<Notify>,
}

impl WaitedKey {
    /// The key's bytes.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Completes at the key's next invalidation after this call; `enable()` it before
    /// the read that makes Redis track the key.
    pub(crate) fn changed(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

impl Drop for WaitedKey {
    fn drop(&mut self) {
        self.keys.keys.remove_if_mut(&self.key, |_, entry| {
            entry.0 -= 1;
            entry.0 == 0
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_invalidation_wakes_the_keys_waiters_and_the_last_share_removes_the_entry() {
        let keys = Arc::new(WaitedKeys::default());
        let (a, b) = (keys.watch(b"lock"), keys.watch(b"lock"));
        let other = keys.watch(b"other");
        assert_eq!(keys.len(), 2);
        {
            let (woken_a, woken_b, not_woken) = (a.changed(), b.changed(), other.changed());
            tokio::pin!(woken_a, woken_b, not_woken);
            for notified in [woken_a.as_mut(), woken_b.as_mut(), not_woken.as_mut()] {
                notified.enable();
            }
            keys.changed(Some(&[Bytes::from_static(b"lock")]));
            woken_a.await;
            woken_b.await;
            assert!(futures::FutureExt::now_or_never(not_woken.as_mut()).is_none());
            keys.changed(None);
            not_woken.await;
        }
        drop(a);
        assert_eq!(keys.len(), 2, "b still waits on lock");
        drop((b, other));
        assert_eq!(keys.len(), 0);
    }
}
