//! Waiting between the attempts of Redisson's wait loop: on the lock's channel
//! (`wait_on_channel`), by polling with a back-off (`wait_polling`, the spin lock), a
//! reader letting this client's write waiters go first (`yield_to_writers`), and
//! subscribing within the caller's deadline (`subscribe`).
//!
//! Invariants: a waiter subscribes before it retries, and sleeps until a message, the
//! holder's TTL or its deadline, whichever comes first; every retry is an `attempt`
//! marked in flight on the caller's [`QueueExit`].

use std::time::Duration;

use tokio::time::Instant;

use super::acquiring::{Acquired, Attempt, Wait};
use super::kind::AcquireMode;
use super::queue_exit::QueueExit;
use super::queue_handoff::QueuedPlace;
use super::{Backoff, Lock, LockKind};
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;
use crate::wait::queued_waiters::Turn;

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

    /// The pub/sub wait: subscribe (unless the caller did: `channel`'s subscription),
    /// then retry and sleep until a message or min(holder's TTL, remaining budget).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn wait_on_channel(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        ttl: i64,
        (channel, subscription): (&str, Option<crate::wait::pubsub::Subscription>),
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
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
        // A fair waiter: a release of this client may hand it the lock (see
        // `queue_handoff.rs`); while named in one, it does not try.
        let mut place = QueuedPlace::join(self, owner, lease_ms, mode);
        let slot = place.slot();
        let mut try_now = true;
        let mut ttl = ttl;
        loop {
            // Before listening: a reader that lets a writer go first must not take the
            // writer's wake-up (a `0` wakes one listener).
            if !self.yield_to_writers(owner, deadline).await {
                return Ok(None);
            }
            let woken = subscription.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let answered = slot.as_ref().map(|slot| slot.answered());
            tokio::pin!(answered);
            if let Some(answered) = answered.as_mut().as_pin_mut() {
                answered.enable();
            }
            if pubsub.is_closed() {
                return Err(Error::Shutdown);
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
                    queued.in_flight = true;
                    let attempt = self.attempt(owner, lease_ms, mode, wait).await;
                    queued.in_flight = false;
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
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if remaining == Some(Duration::ZERO) {
                return Ok(None);
            }
            let holder = (ttl >= 0 && !offered).then(|| Duration::from_millis(ttl as u64));
            let sleep_for = match (holder, remaining) {
                (Some(h), Some(r)) => Some(h.min(r)),
                (h, r) => h.or(r),
            };
            tracing::trace!(ttl, ?sleep_for, offered, "waiting for an unlock message");
            let answered = async {
                match answered.as_pin_mut() {
                    Some(answered) => answered.await,
                    None => std::future::pending().await,
                }
            };
            let sleep = async {
                match sleep_for.and_then(|limit| Instant::now().checked_add(limit)) {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            try_now = tokio::select! {
                _ = &mut woken => true,
                // Handed the lock (taken at the top), or not: try if a try was due, or
                // if the answer was lost (the try settles it).
                _ = answered => offered || slot.as_ref().is_some_and(|s| s.take_try_again()),
                _ = sleep => true,
            };
        }
    }

    /// The polling wait of a spin lock: sleep the back-off (never past the deadline, and
    /// not past a shutdown), retry.
    pub(super) async fn wait_polling(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        backoff: Backoff,
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        let mut delays = backoff.delays();
        let mut shutdown = self.context.shutdown.subscribe();
        loop {
            let delay = delays.next_delay();
            let sleep_for = match deadline {
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return Ok(None);
                    }
                    delay.min(remaining)
                }
                None => delay,
            };
            // A shutdown ends the sleep: a back-off step may be long.
            tokio::select! {
                _ = tokio::time::sleep(sleep_for) => {}
                _ = shutdown.wait_for(|closed| *closed) => {}
            }
            if self.context.is_closed() {
                return Err(Error::Shutdown);
            }
            queued.in_flight = true;
            let attempt = self.attempt(owner, lease_ms, mode, wait).await;
            queued.in_flight = false;
            if let Attempt::Acquired(acquired) = attempt? {
                return Ok(Some(acquired));
            }
        }
    }

    /// Subscribes to `channel` for a waiter, within `deadline` (`Ok(None)`: it passed) or
    /// the subscription timeout.
    pub(super) async fn subscribe(
        &self,
        owner: LockOwner,
        channel: &str,
        deadline: Option<Instant>,
    ) -> Result<Option<crate::wait::pubsub::Subscription>> {
        self.subscribe_marked(owner, channel, None, deadline).await
    }

    /// [`Lock::subscribe`], with `marker` subscribed in the same command when the channel
    /// is not subscribed yet (the head of a local line: see `crate::wait::local_queue`).
    pub(super) async fn subscribe_marked(
        &self,
        owner: LockOwner,
        channel: &str,
        marker: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Option<crate::wait::pubsub::Subscription>> {
        let pubsub = &self.context.pubsub;
        // Boxed: subscribing is a large future (fred's subscribe and its confirmation)
        // that runs once per wait; inline, every waiting task would carry its size for
        // as long as it waits.
        let subscribe = Box::pin(pubsub.subscribe_marked(channel, marker));
        match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, subscribe).await {
                Ok(subscribed) => subscribed
                    .map(Some)
                    .map_err(|e| self.redis_error_as(owner, e)),
                Err(_) => Ok(None),
            },
            None => {
                let limit = self.context.config.settings.subscription_timeout;
                tokio::time::timeout(limit, subscribe)
                    .await
                    .map_err(|_| Error::Timeout {
                        what: "subscribing to the lock channel",
                        after: limit,
                    })?
                    .map(Some)
                    .map_err(|e| self.redis_error_as(owner, e))
            }
        }
    }
}
