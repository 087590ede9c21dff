//! Waiting between the attempts of Redisson's wait loop, on [`crate::engine::wait::waiter`]: on
//! the lock's channel (`wait_on_channel`), by polling with a back-off (`wait_polling`,
//! the spin lock), a reader letting this client's write waiters go first
//! (`yield_to_writers`), and subscribing within the caller's deadline (`subscribe`).
//!
//! Invariants: a waiter subscribes before it retries, and sleeps until a message, the
//! holder's TTL, the wait's re-check or its deadline, whichever comes first; every retry
//! is an `attempt` marked in flight on the caller's [`QueueExit`].

use std::time::Duration;

use fred::interfaces::KeysInterface;

use tokio::time::Instant;

use super::acquiring::{Acquired, Attempt, Wait};
use super::backoff::Backoff;
use super::handle::Lock;
use super::kind::AcquireMode;
use super::kind::LockKind;
use super::queue_exit::QueueExit;
use super::queue_handoff::QueuedPlace;
use crate::engine::hold::tracking::waited::WaitedKey;
use crate::engine::wait::messages::lock_messages;
use crate::engine::wait::pubsub::Subscription;
use crate::engine::wait::queued_waiters::Turn;
use crate::engine::wait::waiter::{self, Budget, Listen, Woke};
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

impl<K: LockKind> Lock<K> {
    /// A reader that holds nothing on this lock lets this client's announced write
    /// waiters go first (see `writer_gates`); returns false when `deadline` passed
    /// first. Every other kind passes at once.
    pub(super) async fn yield_to_writers(
        &self,
        owner: LockOwner,
        deadline: Option<Instant>,
    ) -> bool {
        if !K::CAPABILITIES.yields_to_writers {
            return true;
        }
        let Some(gate) = self.context.writers.waiting(&self.name) else {
            return true;
        };
        let holds = &self.context.holds;
        if holds.known(&self.name, owner, false) > 0 || holds.known(&self.name, owner, true) > 0 {
            return true; // re-entry or downgrade: never wait on a writer here
        }
        tracing::trace!(lock = %self.name, %owner, "a writer of this client waits: letting it go first");
        gate.cleared_by(deadline).await
    }

    /// The pub/sub wait, [`crate::engine::wait::waiter`]'s: subscribe (unless the caller did:
    /// `channel`'s subscription), then arm, retry and sleep until a message, the holder's
    /// TTL, the re-check or the deadline. A fair waiter also wakes when a release of this
    /// client names it (see `queue_handoff.rs`), and does not try while named in one in
    /// flight; a reader lets this client's writers go first.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn wait_on_channel(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        ttl: i64,
        (channel, subscription): (&str, Option<Subscription>),
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        let pubsub = &self.context.pubsub;
        let subscription = match subscription {
            Some(subscription) => subscription,
            None => {
                tracing::trace!(ttl, channel, "held by another owner; subscribing");
                match self.subscribe(owner, channel, deadline).await? {
                    Some(subscription) => subscription,
                    None => return Ok(None),
                }
            }
        };
        let mut place = QueuedPlace::join(self, owner, lease_ms, mode);
        let slot = place.slot();
        let mut try_now = true;
        let mut ttl = ttl;
        // With key tracking on, a lock deleted rather than unlocked (no message) wakes
        // its waiters too (see `hold::tracking::waited`).
        let waited = self.watch_key();
        loop {
            // Before arming: a reader that lets a writer go first must not take the
            // writer's wake-up (a `0` wakes one listener).
            if !self.yield_to_writers(owner, deadline).await {
                return Ok(None);
            }
            let armed = subscription.notified();
            tokio::pin!(armed);
            waiter::arm(pubsub, armed.as_mut())?;
            // A message stored since the last sleep (it came after a release's answer
            // woke this waiter, with no try due) is a reason to try: spent here, it would
            // otherwise be lost until the re-check.
            if waiter::spend_stored(armed.as_mut(), &subscription) {
                try_now = true;
            }
            let answered = slot.as_ref().map(|slot| slot.answered());
            tokio::pin!(answered);
            if let Some(answered) = answered.as_mut().as_pin_mut() {
                answered.enable();
            }
            let turn = match &slot {
                Some(slot) if try_now => slot.start_trying(),
                Some(slot) => slot.granted().map_or(Turn::Offered, Turn::Granted),
                None => Turn::Try,
            };
            // Named in a release in flight: wait for its answer, then try.
            let offered = try_now && turn == Turn::Offered;
            match turn {
                Turn::Granted(at) => return Ok(Some(place.take_grant(owner, lease_ms, at))),
                Turn::Try if try_now => {
                    let attempt = self.attempt_queued(owner, lease_ms, mode, deadline, queued);
                    let attempt = attempt.await;
                    if let Some(slot) = &slot {
                        slot.stop_trying();
                    }
                    ttl = match attempt? {
                        Attempt::Acquired(acquired) => return Ok(Some(acquired)),
                        Attempt::Held(ttl) => ttl,
                    };
                }
                _ => {}
            }
            let hint = (ttl >= 0 && !offered).then(|| Duration::from_millis(ttl as u64));
            tracing::trace!(ttl, ?hint, offered, "waiting for an unlock message");
            let slept = waiter::sleep(Some(armed), answered.as_pin_mut(), hint, deadline);
            let woke = tokio::select! {
                woke = slept => woke,
                () = self.key_changed(waited.as_ref()) => Woke::Message,
            };
            try_now = match woke {
                Woke::Deadline => return Ok(None),
                Woke::Message | Woke::Timer => true,
                // Handed the lock (taken at the top), or not: try if a try was due, or
                // if the answer was lost (the try settles it).
                Woke::Other => offered || slot.as_ref().is_some_and(|s| s.take_try_again()),
            };
        }
    }

    /// The lock's key among the keys this client's waiters wait on, when key tracking is
    /// on (see `hold::tracking::waited`).
    pub(super) fn watch_key(&self) -> Option<WaitedKey> {
        let tracking = &self.context.registry.tracking;
        tracking
            .is_on()
            .then(|| tracking.waited.watch(self.name.as_bytes()))
    }

    /// Completes when the lock's key changes (`None`: never): after
    /// [`READ_AFTER`](crate::engine::hold::tracking::waited::READ_AFTER) without a message, one
    /// `EXISTS` makes Redis track the key; its next invalidation (or the read finding it
    /// gone) completes this. A read that fails waits for the other wake-ups.
    pub(super) async fn key_changed(&self, waited: Option<&WaitedKey>) {
        let Some(waited) = waited else {
            return std::future::pending().await;
        };
        tokio::time::sleep(crate::engine::hold::tracking::waited::READ_AFTER).await;
        let changed = waited.changed();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let key = waited.key();
        let exists: std::result::Result<i64, _> = self
            .context
            .redis
            .query(|redis| redis.exists(fred::types::Key::from(key)))
            .await;
        match exists {
            Ok(0) => {}
            Ok(_) => changed.await,
            Err(_) => std::future::pending().await,
        }
    }

    /// One attempt of a waiter that may be queued in Redis, marked in flight on `queued`
    /// (its abandon path leaves the queue then).
    pub(super) async fn attempt_queued(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        queued: &mut QueueExit<K>,
    ) -> Result<Attempt> {
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        queued.in_flight = true;
        let attempt = self.attempt(owner, lease_ms, mode, wait).await;
        queued.in_flight = false;
        attempt
    }

    /// The polling wait of a spin lock: sleep the back-off step (never past the
    /// deadline, the wait's re-check, nor a shutdown), retry.
    pub(super) async fn wait_polling(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        backoff: Backoff,
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        let mut delays = backoff.delays();
        let mut shutdown = self.context.shutdown.subscribe();
        loop {
            let step = Some(delays.next_delay());
            let closed = async {
                let _ = shutdown.wait_for(|closed| *closed).await;
            };
            if waiter::sleep(None, Some(closed), step, deadline).await == Woke::Deadline {
                return Ok(None);
            }
            if self.context.is_closed() {
                return Err(Error::Shutdown);
            }
            let attempt = self.attempt_queued(owner, lease_ms, mode, deadline, queued);
            if let Attempt::Acquired(acquired) = attempt.await? {
                return Ok(Some(acquired));
            }
        }
    }

    /// Subscribes to `channel` for a waiter, within `deadline` (`Ok(None)`: it passed) or
    /// the subscription timeout (see [`crate::engine::wait::waiter::subscribe`]).
    pub(super) async fn subscribe(
        &self,
        owner: LockOwner,
        channel: &str,
        deadline: Option<Instant>,
    ) -> Result<Option<Subscription>> {
        self.subscribe_marked(owner, channel, None, deadline).await
    }

    /// [`Lock::subscribe`], with `marker` subscribed in the same command when the channel
    /// is not subscribed yet (the head of a local line: see `crate::engine::wait::local_queue`).
    pub(super) async fn subscribe_marked(
        &self,
        owner: LockOwner,
        channel: &str,
        marker: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Option<Subscription>> {
        let listen = Listen {
            channel,
            messages: lock_messages,
            marker,
            what: "subscribing to the lock channel",
        };
        let budget = Budget {
            deadline,
            subscription_timeout: self.context.config.settings.subscription_timeout,
        };
        waiter::subscribe(&self.context.pubsub, listen, budget, |e| {
            self.redis_error_as(owner, e)
        })
        .await
    }
}
