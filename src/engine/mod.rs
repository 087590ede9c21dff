//! [`Engine`]: what every handle (every lock kind, semaphore and latch) shares with the
//! client that made it: the one path to Redis ([`Redis`]), the client id, the pub/sub,
//! hold and waiter registries, and the client's background chores (releasing dropped
//! guards' holds, deleting answered unlock latches: `chores.rs`).
//!
//! The client builds one engine and hands an `Arc` of it to every handle; the primitives
//! need nothing else from the client, so none of them imports `client`. The engine is
//! state and the machinery every kind shares: the holds (`hold/`: the registry, the
//! watchdog's renewal rounds, the hold signals, key tracking) and the waiting (`wait/`:
//! pub/sub, local lines, queued waiters); the lock kinds' own behaviour is in `lock/`.
//!
//! Invariants: the client id is fixed for the context's life; background tasks (the pub/sub
//! loops, the renewal timer, the chore task) end when the client is shut down or the last
//! handle (client, lock or guard) is dropped, so a dropped client renews nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fred::prelude::ClientLike;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::config::Config;
use crate::connection::redis::Redis;
use crate::engine::background::BackgroundWork;
use crate::engine::hold::ledger::HoldLedger;
use crate::engine::hold::registry::HoldRegistry;
use crate::engine::wait::local_queue::{HandoffLimits, LocalQueues};
use crate::engine::wait::pubsub::PubSub;
use crate::engine::wait::queued_waiters::QueuedWaiters;
use crate::engine::wait::writer_gates::WriterGates;

pub(crate) mod background;
mod chores;
pub(crate) mod hold;
pub(crate) mod telemetry;
pub(crate) mod wait;

pub(crate) use chores::BackgroundRelease;
use chores::{LatchQueue, chore_loop, delete_latches};

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) id: String,
    /// The one path to Redis: every script and query of every primitive.
    pub(crate) redis: Redis,
    pub(crate) subscriber: fred::prelude::Client,
    pub(crate) pubsub: Arc<PubSub>,
    /// Every hold of this client, with its state; what the watchdog renews.
    pub(crate) registry: Arc<HoldRegistry>,
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
    /// The background work running for calls that returned: a stop waits for it.
    pub(crate) background: Arc<BackgroundWork>,
    /// Unlock request ids: a random prefix of this client and a counter (32 hex digits,
    /// as Redisson's `generateId()`), made without a random draw per unlock.
    request_prefix: u64,
    requests: std::sync::atomic::AtomicU64,
    /// Answered unlock latches waiting for the next batched `UNLINK`.
    latches: Arc<LatchQueue>,
    pub(crate) shutdown: watch::Sender<bool>,
    closed: AtomicBool,
}

/// An unlock request id, written as 32 hex digits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestId(u64, u64);

impl RequestId {
    /// The id as 16 bytes (big-endian halves): a permit id of a permit-expirable
    /// semaphore (see [`crate::synchronizers::PermitId`]).
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

/// The parts of an engine that [`Engine::start`] does not make itself.
pub(crate) struct EngineParts {
    pub(crate) id: String,
    pub(crate) redis: Redis,
    pub(crate) subscriber: fred::prelude::Client,
    pub(crate) pubsub: Arc<PubSub>,
    pub(crate) registry: Arc<HoldRegistry>,
    pub(crate) publish_command: &'static str,
    pub(crate) watchdog_ms: u64,
    pub(crate) config: Config,
    pub(crate) shutdown: watch::Sender<bool>,
}

impl Engine {
    /// Builds the engine and starts its chore task.
    pub(crate) fn start(parts: EngineParts) -> Arc<Engine> {
        let (releases, releases_rx) = mpsc::unbounded_channel();
        let latches = Arc::new(LatchQueue::default());
        let background = Arc::new(BackgroundWork::default());
        let context = Arc::new(Engine {
            id: parts.id,
            redis: parts.redis,
            subscriber: parts.subscriber,
            pubsub: parts.pubsub,
            holds: HoldLedger::new(parts.registry.clone(), background.clone()),
            registry: parts.registry,
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
            background,
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
    /// Counted from now until it ends (or is dropped unrun): `shutdown()` waits for it.
    pub(crate) fn release_later(&self, release: BackgroundRelease) {
        let counted = self.background.start();
        let release: BackgroundRelease = Box::pin(async move {
            release.await;
            drop(counted);
        });
        // Fails only when the chore task is gone, i.e. the client is going away; the
        // lease then ends the lock.
        let _ = self.releases.send(release);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let redis = self.redis.client().clone();
            let subscriber = self.subscriber.clone();
            runtime.spawn(async move {
                let _ = redis.quit().await;
                let _ = subscriber.quit().await;
            });
        }
    }
}
