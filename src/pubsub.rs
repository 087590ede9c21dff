//! Unlock notifications: one Redis subscription per lock channel, shared by every local
//! waiter of that lock.
//!
//! Invariants:
//! * A channel is subscribed while at least one [`Subscription`] for it lives, and
//!   unsubscribed (in the background) [`LINGER`] after the last one is dropped, whatever
//!   await point its owner was dropped at, unless a new waiter took it meanwhile.
//!   Subscribing and unsubscribing one channel are serialised.
//! * A lock contended in this client moments ago is usually contended again: its next
//!   waiter finds the channel still subscribed ([`PubSub::is_ready`]), takes it before its
//!   first attempt (no `SUBSCRIBE`, `PING`, `UNSUBSCRIBE`) and needs no retry after
//!   subscribing.
//! * A `0` message wakes one local waiter, a `1` wakes them all; any other payload is
//!   ignored, as Redisson's decoder does.
//! * A wake-up is never lost between "the acquire failed" and "the waiter sleeps". The
//!   waiter follows this order, the same as tokio's `Notify::enable` pattern:
//!   1. subscribe (the subscription is confirmed by Redis before this returns);
//!   2. create a [`Notified`] and `enable()` it: from now on a wake-up is recorded;
//!   3. run the acquire script;
//!   4. if it failed, sleep on the `Notified` (bounded by the holder's TTL).
//!
//!   An unlock that the acquire in step 3 did not see happened after it ran, so its
//!   message arrives after step 2 and is recorded. A `0` that arrives while nobody waits
//!   is kept as one stored permit, so the next waiter retries at once.
//! * A channel may be subscribed with a *mark* (`subscribe_marked`): a second channel that
//!   nobody publishes on, subscribed and unsubscribed with it in the same commands, which
//!   lets a script count this crate's local lines among the channel's listeners (see
//!   [`crate::names::line_marker`]). Each channel counts the messages it delivered
//!   ([`Subscription::messages`]).
//! * When the message stream lagged (fred's broadcast buffer overflowed) or the
//!   subscriber reconnected, every waiter of every channel is woken to retry, and after a
//!   reconnect the registry subscribes its live channels again itself, never sending an
//!   empty `SUBSCRIBE`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use fred::prelude::{ClientLike, EventInterface, PubsubInterface, Value};
use fred::types::{ClusterHash, CustomCommand};
use tokio::sync::futures::Notified;
use tokio::sync::{broadcast::error::RecvError, watch, Mutex, Notify};

/// Subscribe/unsubscribe of one channel are serialised by one of these, chosen by hash.
const STRIPES: usize = 64;

/// How long a channel stays subscribed after its last waiter left (see the module docs):
/// a waiter that comes back within it subscribes for free and before its first attempt.
/// Short enough that a client does not keep many idle channels.
pub(crate) const LINGER: Duration = Duration::from_millis(500);

/// The per-client registry of lock channels.
#[derive(Debug)]
pub(crate) struct PubSub {
    subscriber: fred::prelude::Client,
    sharded: bool,
    channels: DashMap<String, Arc<Channel>>,
    stripes: Box<[Mutex<()>]>,
    runtime: tokio::runtime::Handle,
    closed: AtomicBool,
}

/// Local state of one subscribed channel.
#[derive(Debug, Default)]
pub(crate) struct Channel {
    notify: Notify,
    /// Live [`Subscription`]s. Incremented under the channel's stripe lock.
    refs: AtomicUsize,
    /// Whether Redis may have us subscribed. Changed only under the stripe lock.
    subscribed: AtomicBool,
    /// How many times the channel's last share was given back: a lingering release
    /// unsubscribes only if this count is still the one it was scheduled at (no waiter
    /// took the channel and left it again meanwhile).
    last_shares_returned: AtomicUsize,
    /// The mark subscribed with the channel, if any (set when it was subscribed).
    marker: std::sync::OnceLock<String>,
    /// Messages delivered (`0` or `1`) since the channel was made.
    messages: AtomicU64,
}

/// One waiter's share of a channel subscription; dropping it gives the share back.
#[derive(Debug)]
pub(crate) struct Subscription {
    registry: Arc<PubSub>,
    name: String,
    channel: Arc<Channel>,
}

impl Subscription {
    /// A future that completes at the next wake-up of this channel. `enable()` it before
    /// the acquire attempt (see the module docs).
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.channel.notify.notified()
    }

    /// How many unlock messages (`0` or `1`) the channel has delivered so far: each is a
    /// real release by some client.
    pub(crate) fn messages(&self) -> u64 {
        self.channel.messages.load(Ordering::Acquire)
    }

    /// Whether the channel is subscribed with a mark (see the module docs).
    pub(crate) fn is_marked(&self) -> bool {
        self.channel.marker.get().is_some()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.channel.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            let idle = self
                .channel
                .last_shares_returned
                .fetch_add(1, Ordering::AcqRel)
                + 1;
            let registry = self.registry.clone();
            let name = std::mem::take(&mut self.name);
            let channel = self.channel.clone();
            self.registry.runtime.spawn(async move {
                if !registry.is_closed() {
                    tokio::time::sleep(LINGER).await;
                }
                registry.release_channel(name, channel, idle).await
            });
        }
    }
}

impl PubSub {
    /// Starts the registry on a connected subscriber client, with its receive loop and
    /// its reconnect loop; both end when `shutdown` changes or its sender is dropped.
    pub(crate) fn start(
        subscriber: fred::prelude::Client,
        sharded: bool,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<PubSub> {
        let registry = Arc::new(PubSub {
            subscriber,
            sharded,
            channels: DashMap::new(),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            runtime: tokio::runtime::Handle::current(),
            closed: AtomicBool::new(false),
        });
        let messages = registry.subscriber.message_rx();
        let reconnects = registry.subscriber.reconnect_rx();
        let changes = registry.subscriber.cluster_change_rx();
        tokio::spawn(receive_loop(
            Arc::downgrade(&registry),
            messages,
            shutdown.clone(),
        ));
        tokio::spawn(reconnect_loop(
            Arc::downgrade(&registry),
            reconnects,
            changes,
            shutdown,
        ));
        registry
    }

    /// Whether the registry was closed by a client shutdown.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Takes a share of `name`'s subscription, subscribing in Redis when it is the first;
    /// `marker`: a channel to subscribe in the same command then (a channel subscribed
    /// already keeps what it has; never on a sharded client).
    ///
    /// # Cancel safety
    /// Dropping the future gives the share back; the channel is unsubscribed in the
    /// background if nobody else uses it.
    pub(crate) async fn subscribe_marked(
        self: &Arc<Self>,
        name: &str,
        marker: Option<&str>,
    ) -> Result<Subscription, fred::error::Error> {
        let _serial = self.stripe(name).lock().await;
        let channel = self
            .channels
            .entry(name.to_owned())
            .or_default()
            .value()
            .clone();
        channel.refs.fetch_add(1, Ordering::AcqRel);
        let share = Subscription {
            registry: self.clone(),
            name: name.to_owned(),
            channel: channel.clone(),
        };
        if !channel.subscribed.load(Ordering::Acquire) {
            // Set before the command: if this future is dropped while SUBSCRIBE is in
            // flight, the release of `share` still sends UNSUBSCRIBE.
            channel.subscribed.store(true, Ordering::Release);
            let marker = marker
                .filter(|_| !self.sharded)
                .map(|marker| channel.marker.get_or_init(|| marker.to_owned()));
            let sent = if self.sharded {
                self.subscriber.ssubscribe(name).await
            } else {
                match marker {
                    Some(marker) => self.subscriber.subscribe(vec![name, marker]).await,
                    None => self.subscriber.subscribe(name).await,
                }
            };
            if let Err(error) = sent {
                channel.subscribed.store(false, Ordering::Release);
                return Err(error);
            }
            if !self.sharded {
                // On failure `subscribed` stays set: the SUBSCRIBE may have taken effect,
                // so the release of `share` still sends UNSUBSCRIBE.
                self.confirm_subscribed().await?;
            }
            tracing::debug!(channel = name, "subscribed");
            crate::telemetry::subscription(true);
        }
        Ok(share)
    }

    /// Whether `name` is subscribed (or being subscribed) already, for a waiter that
    /// arrives while an earlier one waits or within [`LINGER`] after it left:
    /// [`PubSub::subscribe_marked`] then sends nothing.
    pub(crate) fn is_ready(&self, name: &str) -> bool {
        !self.is_closed()
            && self
                .channels
                .get(name)
                .is_some_and(|channel| channel.subscribed.load(Ordering::Acquire))
    }

    /// Called [`LINGER`] after the last share of a channel was given back (the `idle`-th
    /// time it was).
    async fn release_channel(&self, name: String, channel: Arc<Channel>, idle: usize) {
        let _serial = self.stripe(&name).lock().await;
        if channel.refs.load(Ordering::Acquire) != 0
            || channel.last_shares_returned.load(Ordering::Acquire) != idle
        {
            return; // somebody subscribed again meanwhile (and may have left again)
        }
        let was_subscribed = channel.subscribed.swap(false, Ordering::AcqRel);
        if was_subscribed {
            crate::telemetry::subscription(false);
        }
        if was_subscribed && !self.is_closed() {
            let sent = if self.sharded {
                self.subscriber.sunsubscribe(name.as_str()).await
            } else {
                match channel.marker.get() {
                    Some(marker) => {
                        let both = vec![name.as_str(), marker.as_str()];
                        self.subscriber.unsubscribe(both).await
                    }
                    None => self.subscriber.unsubscribe(name.as_str()).await,
                }
            };
            match sent {
                Ok(()) => tracing::debug!(channel = %name, "unsubscribed"),
                Err(error) => tracing::warn!(channel = %name, %error, "unsubscribe failed"),
            }
        }
        self.channels.remove_if(&name, |_, current| {
            Arc::ptr_eq(current, &channel) && current.refs.load(Ordering::Acquire) == 0
        });
    }

    /// Wakes every waiter of every channel, so that each retries its acquire.
    pub(crate) fn wake_all(&self) {
        for entry in self.channels.iter() {
            entry.notify.notify_waiters();
        }
    }

    /// Marks the registry closed and wakes every waiter (who then sees the shutdown).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake_all();
    }

    /// The number of channels with live local waiters (for tests and metrics).
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.len()
    }

    fn deliver(&self, channel: &str, payload: Option<&[u8]>) {
        let Some(entry) = self.channels.get(channel) else {
            return;
        };
        if matches!(payload, Some(b"0" | b"1")) {
            entry.messages.fetch_add(1, Ordering::AcqRel);
        }
        match payload {
            Some(b"0") => entry.notify.notify_one(),
            Some(b"1") => {
                entry.notify.notify_waiters();
                // Also leave a permit for a waiter that is between two attempts.
                entry.notify.notify_one();
            }
            _ => tracing::debug!(channel, "ignoring a message that is neither 0 nor 1"),
        }
    }

    /// Subscribes again, after a reconnect, every channel that has local waiters.
    async fn resubscribe(&self) {
        let live: Vec<String> = self
            .channels
            .iter()
            .filter(|e| e.value().subscribed.load(Ordering::Acquire))
            .flat_map(|e| [Some(e.key().clone()), e.value().marker.get().cloned()])
            .flatten()
            .collect();
        if live.is_empty() {
            return;
        }
        tracing::info!(channels = live.len(), "resubscribing lock channels");
        if self.sharded {
            // One SSUBSCRIBE per hash slot: a sharded subscription cannot span slots.
            let mut by_slot: std::collections::BTreeMap<u16, Vec<String>> = Default::default();
            for name in live {
                by_slot
                    .entry(fred::util::redis_keyslot(name.as_bytes()))
                    .or_default()
                    .push(name);
            }
            for (_, names) in by_slot {
                if let Err(error) = self.subscriber.ssubscribe(names).await {
                    tracing::warn!(%error, "resubscribe failed");
                }
            }
        } else {
            let sent = match self.subscriber.subscribe(live).await {
                Ok(()) => self.confirm_subscribed().await,
                Err(error) => Err(error),
            };
            if let Err(error) = sent {
                tracing::warn!(%error, "resubscribe failed");
            }
        }
    }

    /// Waits until Redis has processed the `SUBSCRIBE`s sent before it on the subscriber
    /// connection. fred completes `SUBSCRIBE` as soon as it is handed to the connection,
    /// not when Redis confirms it (unlike `SSUBSCRIBE`), so without this a waiter's retry
    /// on the command connection could run before the subscription exists and miss the
    /// holder's unlock message. A `PING` on the same connection (and, on a cluster, the
    /// same node fred routes classic subscriptions to) is answered only after everything
    /// written before it.
    async fn confirm_subscribed(&self) -> Result<(), fred::error::Error> {
        let slot = fred::util::redis_keyslot(self.subscriber.id().as_bytes());
        let ping = CustomCommand::new_static("PING", ClusterHash::Custom(slot), false);
        self.subscriber
            .custom::<Value, Value>(ping, Vec::new())
            .await
            .map(drop)
    }

    fn stripe(&self, name: &str) -> &Mutex<()> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(name);
        &self.stripes[(hash % STRIPES as u64) as usize]
    }
}

async fn receive_loop(
    registry: std::sync::Weak<PubSub>,
    mut messages: tokio::sync::broadcast::Receiver<fred::types::Message>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let received = tokio::select! {
            received = messages.recv() => received,
            _ = shutdown.changed() => return,
        };
        let Some(registry) = registry.upgrade() else {
            return;
        };
        match received {
            Ok(message) => registry.deliver(&message.channel, message.value.as_bytes()),
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "pub/sub stream lagged: waking every waiter");
                registry.wake_all();
            }
            Err(RecvError::Closed) => return,
        }
    }
}

async fn reconnect_loop(
    registry: std::sync::Weak<PubSub>,
    mut reconnects: tokio::sync::broadcast::Receiver<fred::types::config::Server>,
    mut changes: tokio::sync::broadcast::Receiver<Vec<fred::types::ClusterStateChange>>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let event = tokio::select! {
            r = reconnects.recv() => r.map(|_| ()),
            c = changes.recv() => c.map(|_| ()),
            _ = shutdown.changed() => return,
        };
        if let Err(RecvError::Closed) = event {
            return;
        }
        let Some(registry) = registry.upgrade() else {
            return;
        };
        registry.resubscribe().await;
        // Unlocks published while we were away are lost: everybody retries.
        registry.wake_all();
    }
}
