//! The engine's background chores, on one task per client: releasing dropped guards'
//! holds at once, and deleting answered unlock latches in batches.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use fred::prelude::KeysInterface;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Engine;

/// A release of a dropped guard's hold, run by the chore task.
pub(crate) type BackgroundRelease = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// How long answered unlock latches wait to be deleted together: at most one `UNLINK`
/// per this period, instead of a command and a task wake-up per unlock; the latch's own
/// TTL is far longer.
const LATCH_FLUSH_DELAY: Duration = Duration::from_millis(50);

/// Answered unlock latches waiting to be deleted together, each with when it was first
/// queued: a failed `UNLINK` (a dropped connection, a restarting or failing-over Redis)
/// is tried again with the next batch while the latch may still live.
#[derive(Debug, Default)]
pub(super) struct LatchQueue {
    pending: std::sync::Mutex<Vec<(String, Instant)>>,
    /// Woken when `pending` goes from empty to non-empty.
    first: tokio::sync::Notify,
    /// Held while a batch is taken and deleted: shutdown's last flush waits for a batch
    /// the chore task is deleting, so none is dropped between the two.
    pub(super) deleting: tokio::sync::Mutex<()>,
}

impl LatchQueue {
    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<(String, Instant)>> {
        // Each critical section is one Vec operation: a poisoned lock is still consistent.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a latch; wakes the chore task only for the first latch of a batch.
    pub(super) fn push(&self, latch: String, queued: Instant) {
        let first = {
            let mut pending = self.pending();
            pending.push((latch, queued));
            pending.len() == 1
        };
        if first {
            self.first.notify_one();
        }
    }

    pub(super) fn take(&self) -> Vec<(String, Instant)> {
        std::mem::take(&mut *self.pending())
    }

    /// Completes once at least one latch is queued.
    async fn wait_for_first(&self) {
        let first = self.first.notified();
        tokio::pin!(first);
        first.as_mut().enable();
        if self.pending().is_empty() {
            first.await;
        }
    }
}

/// Releases dropped guards' holds at once, and deletes answered unlock latches in
/// batches (see [`LATCH_FLUSH_DELAY`]). Ends when the context is dropped (every release
/// sender is gone) or shut down.
pub(super) async fn chore_loop(
    context: Weak<Engine>,
    latches: Arc<LatchQueue>,
    mut releases: mpsc::UnboundedReceiver<BackgroundRelease>,
) {
    // When the queued latches are due; `None` while the queue is (believed) empty.
    let mut flush_at: Option<tokio::time::Instant> = None;
    loop {
        let latch_timer = async {
            match flush_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => latches.wait_for_first().await,
            }
        };
        tokio::select! {
            release = releases.recv() => {
                let Some(release) = release else {
                    return; // every sender is gone: the context was dropped
                };
                if context.upgrade().is_some_and(|c| !c.is_closed()) {
                    tokio::spawn(release);
                }
            }
            () = latch_timer => {
                if flush_at.is_none() {
                    flush_at = Some(tokio::time::Instant::now() + LATCH_FLUSH_DELAY);
                    continue;
                }
                flush_at = None;
                let _deleting = latches.deleting.lock().await;
                match context.upgrade() {
                    Some(context) if !context.is_closed() => {
                        let ttl = context.config.settings.unlock_latch_ttl;
                        let batch = latches.take();
                        // Failed ones go back in the queue, for the next batch or for
                        // shutdown's flush, which waits for this one.
                        for (latch, queued) in delete_latches(&context, batch).await {
                            if queued.elapsed() < ttl {
                                latches.push(latch, queued);
                            }
                        }
                    }
                    // Shutting down: `flush_latches` deletes what is queued.
                    Some(_) => {}
                    None => return,
                }
            }
        }
    }
}

/// `UNLINK`s latches, one command per hash slot on a cluster; returns the latches whose
/// `UNLINK` failed.
pub(super) async fn delete_latches(
    context: &Engine,
    latches: Vec<(String, Instant)>,
) -> Vec<(String, Instant)> {
    let groups: Vec<Vec<(String, Instant)>> = if context.config.redis.server.is_clustered() {
        let mut by_slot: std::collections::BTreeMap<u16, Vec<(String, Instant)>> =
            Default::default();
        for latch in latches {
            by_slot
                .entry(fred::util::redis_keyslot(latch.0.as_bytes()))
                .or_default()
                .push(latch);
        }
        by_slot.into_values().collect()
    } else {
        vec![latches]
    };
    let deletes = groups.into_iter().map(|group| async move {
        let keys: Vec<&str> = group.iter().map(|(key, _)| key.as_str()).collect();
        // Not to a primary the sentinels replaced: a delete there is lost, and one in
        // flight across the switch is tried again on the new primary.
        let result = context
            .redis
            .query(|redis| redis.unlink::<i64, _>(keys.clone()))
            .await;
        (group, result)
    });
    let mut failed = Vec::new();
    for (group, result) in futures::future::join_all(deletes).await {
        if let Err(error) = result {
            tracing::debug!(%error, "could not delete unlock latches; trying again with the next batch");
            failed.extend(group);
        }
    }
    failed
}
