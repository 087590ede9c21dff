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
//! * What a message wakes is the channel's own: each channel is subscribed with a
//!   [`Messages`] decoder. On a lock's channel ([`lock_messages`]) a `0` wakes one local
//!   waiter, a `1` wakes them all, and any other payload is ignored, as Redisson's
//!   decoder does; a decoder may also say "wake up to n" ([`Wake::Count`], the budget a
//!   Redisson semaphore channel's number carries).
//! * A wake-up is never lost between "the acquire failed" and "the waiter sleeps". The
//!   waiter follows this order, the same as tokio's `Notify::enable` pattern:
//!   1. subscribe (the subscription is confirmed by Redis before this returns);
//!   2. create a [`Notified`] and `enable()` it: from now on a wake-up is recorded;
//!   3. run the acquire script;
//!   4. if it failed, sleep on the `Notified` (bounded by the try's hint, such as the
//!      holder's TTL, by the re-check and by the deadline: [`crate::engine::wait::waiter`]).
//!
//!   An unlock that the acquire in step 3 did not see happened after it ran, so its
//!   message arrives after step 2 and is recorded. A `0` that arrives while nobody waits
//!   is kept as one stored permit, so the next waiter retries at once.
//! * A channel may be subscribed with a *mark*: a second channel that
//!   nobody publishes on, subscribed and unsubscribed with it in the same commands, which
//!   lets a script count this crate's local lines among the channel's listeners (see
//!   [`crate::names::line_marker`]). Each channel counts the messages that woke someone
//!   ([`Subscription::messages`]).
//! * When the message stream lagged (fred's broadcast buffer overflowed) or the
//!   subscriber reconnected, every waiter of every channel is woken to retry, and after a
//!   reconnect the registry subscribes its live channels again itself, never sending an
//!   empty `SUBSCRIBE`.
//! * On a cluster a subscription follows its slot. Redis ends the sharded subscriptions
//!   of a slot on a node the slot leaves (a failover, a migration) by pushing an
//!   `sunsubscribe`, which fred drops without telling anyone; a node that leaves closes
//!   the connection instead. So the registry remembers, per channel, the node it
//!   subscribed on, and whenever its view of the cluster may be stale (the subscriber's
//!   own cluster changes, a `MOVED` the command client followed, and every
//!   [`TOPOLOGY_SCAN`] while any channel is subscribed, one `CLUSTER SLOTS`) it
//!   refreshes fred's slot map and subscribes every channel whose slot has another owner
//!   again there, then wakes that channel's waiters once: an unlock published between
//!   the end of the old subscription and the new one is not lost. That following is
//!   `slots.rs`; this file is the registry, its shares and its message and reconnect
//!   loops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use fred::prelude::{ClientLike, ClusterInterface, EventInterface, PubsubInterface, Value};
use fred::types::{ClusterHash, CustomCommand};
use tokio::sync::futures::Notified;
use tokio::sync::{Mutex, Notify, broadcast::error::RecvError, watch};

use super::messages::{Messages, Wake};

mod slots;
use slots::owner_id;

/// Subscribe/unsubscribe of one channel are serialised by one of these, chosen by hash.
const STRIPES: usize = 64;

/// How long a channel stays subscribed after its last waiter left (see the module docs):
/// a waiter that comes back within it subscribes for free and before its first attempt.
/// Short enough that a client does not keep many idle channels.
pub(crate) const LINGER: Duration = Duration::from_millis(500);

/// How often a client with subscribed lock channels on a cluster asks the cluster (one
/// `CLUSTER SLOTS` on its command connection) whether a channel's slot has moved: the
/// longest a subscription the server ended stays unsubscribed when no other event told
/// the client (see the module docs). Never on a single server, nor with no channel.
pub(crate) const TOPOLOGY_SCAN: Duration = Duration::from_secs(1);

/// The per-client registry of lock channels.
#[derive(Debug)]
pub(crate) struct PubSub {
    subscriber: fred::prelude::Client,
    /// The client's command connection: the topology scan asks the cluster through it.
    commands: fred::prelude::Client,
    sharded: bool,
    clustered: bool,
    channels: DashMap<String, Arc<Channel>>,
    stripes: Box<[Mutex<()>]>,
    runtime: tokio::runtime::Handle,
    closed: AtomicBool,
}

/// Local state of one subscribed channel.
#[derive(Debug)]
pub(crate) struct Channel {
    notify: Notify,
    /// How this channel's messages wake its waiters (set by its first subscriber).
    messages: Messages,
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
    /// Messages that woke someone (a lock channel's `0` or `1`) since the channel was
    /// made.
    delivered: AtomicU64,
    /// On a cluster, the id of the node the subscription was placed on (as fred's slot
    /// map had it then); `None` before, or when not clustered. Written under the stripe
    /// lock.
    home: std::sync::Mutex<Option<String>>,
}

impl Channel {
    fn new(messages: Messages) -> Channel {
        Channel {
            notify: Notify::new(),
            messages,
            refs: AtomicUsize::new(0),
            subscribed: AtomicBool::new(false),
            last_shares_returned: AtomicUsize::new(0),
            marker: std::sync::OnceLock::new(),
            delivered: AtomicU64::new(0),
            home: std::sync::Mutex::new(None),
        }
    }

    /// Wakes what `payload` says (see [`Messages`]); returns what that was.
    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        let wake = (self.messages)(payload)?;
        self.delivered.fetch_add(1, Ordering::AcqRel);
        match wake {
            Wake::One => self.notify.notify_one(),
            Wake::All => {
                self.notify.notify_waiters();
                // Also leave a permit for a waiter that is between two attempts.
                self.notify.notify_one();
            }
            Wake::Count(n) => {
                // Each call wakes a distinct waiter while some wait; past them, one permit
                // is kept: more calls than shares (each waiter holds one) + 1 do nothing.
                let useful = self.refs.load(Ordering::Acquire).saturating_add(1);
                for _ in 0..usize::try_from(n).unwrap_or(usize::MAX).clamp(1, useful) {
                    self.notify.notify_one();
                }
            }
        }
        Some(wake)
    }

    fn home(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // One assignment or read per critical section: a poisoned lock is consistent.
        self.home.lock().unwrap_or_else(|p| p.into_inner())
    }
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

    /// How many messages that wake someone (a lock channel's `0` or `1`) the channel has
    /// delivered so far: each is a real release by some client.
    pub(crate) fn messages(&self) -> u64 {
        self.channel.delivered.load(Ordering::Acquire)
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
    /// its reconnect loop (which also follows slots on a cluster, asking through the
    /// `commands` client); both end when `shutdown` changes or its sender is dropped.
    pub(crate) fn start(
        subscriber: fred::prelude::Client,
        commands: fred::prelude::Client,
        sharded: bool,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<PubSub> {
        let clustered = subscriber.is_clustered();
        let registry = Arc::new(PubSub {
            subscriber,
            commands,
            sharded,
            clustered,
            channels: DashMap::new(),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            runtime: tokio::runtime::Handle::current(),
            closed: AtomicBool::new(false),
        });
        let messages = registry.subscriber.message_rx();
        let events = TopologyEvents {
            reconnects: registry.subscriber.reconnect_rx(),
            changes: registry.subscriber.cluster_change_rx(),
            redirects: registry.commands.cluster_change_rx(),
        };
        tokio::spawn(receive_loop(
            Arc::downgrade(&registry),
            messages,
            shutdown.clone(),
        ));
        tokio::spawn(reconnect_loop(Arc::downgrade(&registry), events, shutdown));
        registry
    }

    /// Whether the registry was closed by a client shutdown.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Takes a share of channel `name`'s subscription, subscribing in Redis when it is the
    /// first share; `messages`: how the channel's messages wake its waiters (the first
    /// subscriber of a channel chooses; a channel's name says what it carries);
    /// `marker`: a channel to subscribe in the same command then (a channel subscribed
    /// already keeps what it has). Waiters subscribe through
    /// [`crate::engine::wait::waiter::subscribe`].
    ///
    /// # Cancel safety
    /// Dropping the future gives the share back; the channel is unsubscribed in the
    /// background if nobody else uses it.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        name: &str,
        messages: Messages,
        marker: Option<&str>,
    ) -> Result<Subscription, fred::error::Error> {
        let _serial = self.stripe(name).lock().await;
        let channel = self
            .channels
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(Channel::new(messages)))
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
            let marker = marker.map(|marker| channel.marker.get_or_init(|| marker.to_owned()));
            // A mark is in its channel's slot (the same hash tag): one sharded command.
            let names = match marker {
                Some(marker) => vec![name, marker.as_str()],
                None => vec![name],
            };
            let sent = if self.sharded {
                self.subscriber.ssubscribe(names).await
            } else {
                self.subscriber.subscribe(names).await
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
            if self.clustered {
                let routing = self.subscriber.cached_cluster_state();
                *channel.home() = routing.and_then(|r| owner_id(&r, self.home_slot(name)));
            }
            tracing::debug!(channel = name, "subscribed");
            crate::engine::telemetry::subscription(true);
        }
        Ok(share)
    }

    /// Whether `name` is subscribed (or being subscribed) already, for a waiter that
    /// arrives while an earlier one waits or within [`LINGER`] after it left:
    /// [`PubSub::subscribe`] then sends nothing.
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
            crate::engine::telemetry::subscription(false);
        }
        if was_subscribed && !self.is_closed() {
            let names = match channel.marker.get() {
                Some(marker) => vec![name.as_str(), marker.as_str()],
                None => vec![name.as_str()],
            };
            let sent = if self.sharded {
                self.subscriber.sunsubscribe(names).await
            } else {
                self.subscriber.unsubscribe(names).await
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
        if payload.and_then(|p| entry.wake(p)).is_none() {
            tracing::debug!(channel, "ignoring a message that wakes nobody");
        }
    }

    /// Subscribes again, after a reconnect, every channel that has local waiters.
    async fn resubscribe(&self) {
        let live = self.subscribed_channels(|_, _| true);
        if live.is_empty() {
            return;
        }
        tracing::info!(channels = live.len(), "resubscribing lock channels");
        self.subscribe_again(live).await;
    }

    /// The slot whose owner serves `name`'s subscription: the channel's own for sharded
    /// pub/sub; for classic pub/sub on a cluster, the one fred sends every (UN)SUBSCRIBE
    /// of this subscriber to (the slot of its id).
    fn home_slot(&self, name: &str) -> u16 {
        if self.sharded {
            fred::util::redis_keyslot(name.as_bytes())
        } else {
            fred::util::redis_keyslot(self.subscriber.id().as_bytes())
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
        &self.stripes[self.stripe_of(name)]
    }

    fn stripe_of(&self, name: &str) -> usize {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(name);
        (hash % STRIPES as u64) as usize
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

/// What the reconnect loop listens to.
struct TopologyEvents {
    /// The subscriber reconnected to a node: its subscriptions there are gone.
    reconnects: tokio::sync::broadcast::Receiver<fred::types::config::Server>,
    /// The subscriber's slot map changed (or was refreshed).
    changes: tokio::sync::broadcast::Receiver<Vec<fred::types::ClusterStateChange>>,
    /// The command client's slot map changed: it followed a `MOVED`, so the
    /// subscriber's may be stale too.
    redirects: tokio::sync::broadcast::Receiver<Vec<fred::types::ClusterStateChange>>,
}

async fn reconnect_loop(
    registry: std::sync::Weak<PubSub>,
    mut events: TopologyEvents,
    mut shutdown: watch::Receiver<bool>,
) {
    let clustered = registry.upgrade().is_some_and(|r| r.clustered);
    let mut scan = tokio::time::interval(TOPOLOGY_SCAN);
    scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    enum Event {
        Reconnected,
        Changed,
        Redirected,
        Scan,
    }
    loop {
        let event = tokio::select! {
            r = events.reconnects.recv() => r.map(|_| Event::Reconnected),
            c = events.changes.recv() => c.map(|_| Event::Changed),
            c = events.redirects.recv() => c.map(|_| Event::Redirected),
            _ = scan.tick(), if clustered => Ok(Event::Scan),
            _ = shutdown.changed() => return,
        };
        let event = match event {
            Ok(event) => event,
            Err(RecvError::Closed) => return,
            // Some events were dropped: act as after a reconnect.
            Err(RecvError::Lagged(_)) => Event::Reconnected,
        };
        let Some(registry) = registry.upgrade() else {
            return;
        };
        match event {
            Event::Reconnected => {
                registry.resubscribe().await;
                // Unlocks published while we were away are lost: everybody retries.
                registry.wake_all();
            }
            Event::Changed => registry.follow_slots().await,
            Event::Redirected => registry.refresh().await,
            Event::Scan => registry.scan_topology().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::messages::lock_messages;
    use super::*;

    /// A channel whose messages carry a count (as a Redisson semaphore's do): a private
    /// decoder, as a synchronizer would give `subscribe`.
    fn counts(payload: &[u8]) -> Option<Wake> {
        let n: u32 = std::str::from_utf8(payload).ok()?.parse().ok()?;
        (n > 0).then_some(Wake::Count(n))
    }

    /// How many of `waiters` a wake-up has completed (they leave the list).
    fn woken(waiters: &mut Vec<std::pin::Pin<Box<Notified<'_>>>>) -> usize {
        use futures::FutureExt;
        let before = waiters.len();
        waiters.retain_mut(|w| w.as_mut().now_or_never().is_none());
        before - waiters.len()
    }

    #[test]
    fn a_count_message_wakes_that_many_waiters_and_lock_messages_are_unchanged() {
        let channel = Channel::new(counts);
        channel.refs.store(5, Ordering::Release); // each waiter holds a share
        let mut waiters: Vec<_> = (0..5)
            .map(|_| Box::pin(channel.notify.notified()))
            .collect();
        for waiter in &mut waiters {
            waiter.as_mut().enable();
        }
        assert_eq!(channel.wake(b"3"), Some(Wake::Count(3)));
        assert_eq!(woken(&mut waiters), 3);
        assert_eq!(
            channel.wake(b"0"),
            None,
            "0 wakes nobody on a count channel"
        );
        assert_eq!(channel.wake(b"-2"), None);
        assert_eq!(woken(&mut waiters), 0);

        let lock = Channel::new(lock_messages);
        let mut waiters: Vec<_> = (0..5).map(|_| Box::pin(lock.notify.notified())).collect();
        for waiter in &mut waiters {
            waiter.as_mut().enable();
        }
        assert_eq!(lock.wake(b"0"), Some(Wake::One));
        assert_eq!(woken(&mut waiters), 1);
        assert_eq!(
            lock.wake(b"3"),
            None,
            "a lock channel ignores other payloads"
        );
        assert_eq!(woken(&mut waiters), 0);
        assert_eq!(lock.wake(b"1"), Some(Wake::All));
        assert_eq!(woken(&mut waiters), 4);
    }
}
