//! [`LockContext`]: what every lock handle shares with the client that made it: the
//! connections, the client id, the subscription and renewal registries, and the client's
//! background chores (releasing dropped guards' holds, deleting answered unlock latches).
//!
//! The client builds one context and hands an `Arc` of it to every lock handle; the lock
//! engine needs nothing else from the client, so `lock` never imports `client`.
//!
//! Invariants: the client id is fixed for the context's life; background tasks (the pub/sub
//! loops, the renewal timer, the chore task) end when the client is shut down or the last
//! handle (client, lock or guard) is dropped, so a dropped client renews nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use fred::prelude::{ClientLike, KeysInterface};
use tokio::sync::{mpsc, watch};

use crate::connection::config::Config;
use crate::connection::primary_switch::PrimarySwitch;
use crate::connection::replicas::ReplicaSync;
use crate::hold::ledger::HoldLedger;
use crate::hold::registry::HoldRegistry;
use crate::wait::local_queue::{HandoffLimits, LocalQueues};
use crate::wait::pubsub::PubSub;
use crate::wait::queued_waiters::QueuedWaiters;
use crate::wait::writer_gates::WriterGates;

/// A release of a dropped guard's hold, run by the chore task.
pub(crate) type BackgroundRelease = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct LockContext {
    pub(crate) id: String,
    pub(crate) redis: fred::prelude::Client,
    pub(crate) subscriber: fred::prelude::Client,
    pub(crate) pubsub: Arc<PubSub>,
    /// Every hold of this client, with its state; what the watchdog renews.
    pub(crate) registry: Arc<HoldRegistry>,
    /// The `WAIT` behind lock scripts (Redisson's `checkLockSyncedSlaves`).
    pub(crate) replicas: Arc<ReplicaSync>,
    /// The gate that keeps lock commands off a primary the sentinels replaced.
    pub(crate) switch: Arc<PrimarySwitch>,
    /// What this client knows of its holds, to settle acquires whose reply was lost.
    pub(crate) holds: HoldLedger,
    /// Write waiters of this client, which its readers let go first.
    pub(crate) writers: Arc<WriterGates>,
    /// This client's local lines of waiters, and how far hand-offs in them go.
    pub(crate) lines: LocalQueues,
    pub(crate) handoff_limits: HandoffLimits,
    /// This client's waiters in fair locks' queues, which a release may hand the lock to.
    pub(crate) queued: QueuedWaiters,
    /// `"PUBLISH"` or `"SPUBLISH"`, passed into the scripts that notify waiters.
    pub(crate) publish_command: &'static str,
    pub(crate) watchdog_ms: u64,
    pub(crate) config: Config,
    /// Dropped guards' releases, run by the chore task.
    releases: mpsc::UnboundedSender<BackgroundRelease>,
    /// Unlock request ids: a random prefix of this client and a counter (32 hex digits,
    /// as Redisson's `generateId()`), made without a random draw per unlock.
    request_prefix: u64,
    requests: std::sync::atomic::AtomicU64,
    /// Answered unlock latches waiting for the next batched `UNLINK`.
    latches: Arc<LatchQueue>,
    pub(crate) shutdown: watch::Sender<bool>,
    closed: AtomicBool,
}

/// The parts of a context that [`LockContext::start`] does not make itself.
/// An unlock request id, written as 32 hex digits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestId(u64, u64);

impl RequestId {
    /// The id as 16 bytes (big-endian halves): a permit id of a permit-expirable
    /// semaphore (see [`crate::PermitId`]).
    pub(crate) fn to_bytes(self) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.0.to_be_bytes());
        bytes[8..].copy_from_slice(&self.1.to_be_bytes());
        bytes
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}{:016x}", self.0, self.1)
    }
}

pub(crate) struct ContextParts {
    pub(crate) id: String,
    pub(crate) redis: fred::prelude::Client,
    pub(crate) subscriber: fred::prelude::Client,
    pub(crate) pubsub: Arc<PubSub>,
    pub(crate) registry: Arc<HoldRegistry>,
    pub(crate) replicas: Arc<ReplicaSync>,
    pub(crate) switch: Arc<PrimarySwitch>,
    pub(crate) publish_command: &'static str,
    pub(crate) watchdog_ms: u64,
    pub(crate) config: Config,
    pub(crate) shutdown: watch::Sender<bool>,
}

impl LockContext {
    /// Builds the context and starts its chore task.
    pub(crate) fn start(parts: ContextParts) -> Arc<LockContext> {
        let (releases, releases_rx) = mpsc::unbounded_channel();
        let latches = Arc::new(LatchQueue::default());
        let context = Arc::new(LockContext {
            id: parts.id,
            redis: parts.redis,
            subscriber: parts.subscriber,
            pubsub: parts.pubsub,
            holds: HoldLedger::new(parts.registry.clone()),
            registry: parts.registry,
            replicas: parts.replicas,
            switch: parts.switch,
            writers: Arc::default(),
            lines: LocalQueues::default(),
            handoff_limits: HandoffLimits {
                in_a_row: parts.config.settings.local_handoffs,
                time: parts.config.settings.local_handoff_time,
                count_listeners: parts.config.is_single_server(),
                // Every listener of a lock's channel is on the node the scripts run on:
                // a single server, a Sentinel set's primary (Redisson's default
                // `subscriptionMode` is MASTER), a cluster slot's primary with sharded
                // pub/sub. Not with classic pub/sub on a cluster (a subscription lives
                // on whichever node the subscriber connected to).
                mark_lines: !parts.config.redis.server.is_clustered()
                    || parts.publish_command == "SPUBLISH",
            },
            queued: QueuedWaiters::default(),
            publish_command: parts.publish_command,
            watchdog_ms: parts.watchdog_ms,
            config: parts.config,
            releases,
            request_prefix: uuid::Uuid::new_v4().as_u64_pair().0,
            requests: std::sync::atomic::AtomicU64::new(0),
            latches: latches.clone(),
            shutdown: parts.shutdown,
            closed: AtomicBool::new(false),
        });
        tokio::spawn(chore_loop(Arc::downgrade(&context), latches, releases_rx));
        context
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the context closed; returns whether it already was.
    pub(crate) fn close(&self) -> bool {
        self.closed.swap(true, Ordering::AcqRel)
    }

    /// Queues an answered unlock latch for deletion. Wakes the chore task only for the
    /// first latch of a batch, so an unlock costs no task wake-up of its own.
    /// A fresh unlock request id (unique to this client's life and across clients).
    pub(crate) fn next_request_id(&self) -> RequestId {
        RequestId(
            self.request_prefix,
            self.requests.fetch_add(1, Ordering::Relaxed),
        )
    }

    pub(crate) fn delete_latch_later(&self, latch: String) {
        self.latches.push(latch, Instant::now());
    }

    /// Deletes the latches still queued (on shutdown, after which the chore task no
    /// longer does): answered latches do not outlive the client that wrote them.
    /// It waits for a batch the chore task is deleting at that moment, and tries again
    /// the latches whose delete failed.
    pub(crate) async fn flush_latches(&self) {
        let _deleting = self.latches.deleting.lock().await;
        let batch = self.latches.take();
        if !batch.is_empty() {
            let failed = delete_latches(self, batch).await;
            if !failed.is_empty() {
                tracing::debug!(
                    left = failed.len(),
                    "could not delete unlock latches at shutdown; they expire on their own"
                );
            }
        }
    }

    /// Queues the release of a dropped guard's hold (a synchronous hand-off).
    pub(crate) fn release_later(&self, release: BackgroundRelease) {
        // Fails only when the chore task is gone, i.e. the client is going away; the
        // lease then ends the lock.
        let _ = self.releases.send(release);
    }
}

impl Drop for LockContext {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let redis = self.redis.clone();
            let subscriber = self.subscriber.clone();
            runtime.spawn(async move {
                let _ = redis.quit().await;
                let _ = subscriber.quit().await;
            });
        }
    }
}

/// How long answered unlock latches wait to be deleted together: at most one `UNLINK`
/// per this period, instead of a command and a task wake-up per unlock; the latch's own
/// TTL is far longer.
const LATCH_FLUSH_DELAY: Duration = Duration::from_millis(50);

/// Answered unlock latches waiting to be deleted together, each with when it was first
/// queued: a failed `UNLINK` (a dropped connection, a restarting or failing-over Redis)
/// is tried again with the next batch while the latch may still live.
#[derive(Debug, Default)]
struct LatchQueue {
    pending: std::sync::Mutex<Vec<(String, Instant)>>,
    /// Woken when `pending` goes from empty to non-empty.
    first: tokio::sync::Notify,
    /// Held while a batch is taken and deleted: shutdown's last flush waits for a batch
    /// the chore task is deleting, so none is dropped between the two.
    deleting: tokio::sync::Mutex<()>,
}

impl LatchQueue {
    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<(String, Instant)>> {
        // Each critical section is one Vec operation: a poisoned lock is still consistent.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a latch; wakes the chore task only for the first latch of a batch.
    fn push(&self, latch: String, queued: Instant) {
        let first = {
            let mut pending = self.pending();
            pending.push((latch, queued));
            pending.len() == 1
        };
        if first {
            self.first.notify_one();
        }
    }

    fn take(&self) -> Vec<(String, Instant)> {
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
async fn chore_loop(
    context: Weak<LockContext>,
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
async fn delete_latches(
    context: &LockContext,
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
            .switch
            .guarded(context.config.settings.response_timeout, || {
                context.redis.unlink::<i64, _>(keys)
            })
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
