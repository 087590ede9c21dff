//! The head of a local line (see [`crate::engine::wait::local_queue`]): the one waiter of this
//! client that waits for the lock in Redis, on [`crate::engine::wait::waiter`] like every waiter
//! (armed before each try, asleep until a message, a hint, the re-check or the deadline),
//! with what a line adds:
//! * it also wakes on a nudge of its line (a hand-off, a local holder's real release);
//! * while another owner of this client holds the lock, it does not try: that holder's
//!   unlock hands the lock over or publishes (the holder's lease bounds the sleep, in
//!   case it lost the lock silently);
//! * after a real release of its line it holds back (a round trip, or, after a yield, the
//!   other clients' turn: [`HoldBack`]) before it tries;
//! * a spin lock's head subscribes to nothing: it tries after its back-off step or a
//!   nudge.
//!
//! Invariants: a head tries only when no hand-off to it is in flight
//! ([`Ticket::start_trying`]); a message that came while a hand-off was in flight is
//! remembered (it could not be acted on); woken at the deadline, the head tries once
//! more, then gives up.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::futures::Notified;

use tokio::time::Instant;

use super::acquiring::{Attempt, Wait};
use super::backoff::Delays;
use super::handle::Lock;
use super::kind::LockKind;
use super::kind::{AcquireMode, Waiting};
use super::local_line::{Head, HoldBack, InLine};
use crate::engine::hold::tracking::waited::WaitedKey;
use crate::engine::wait::local_queue::{Line, Stage, Ticket};
use crate::engine::wait::pubsub::Subscription;
use crate::engine::wait::waiter::{self, Woke};
use crate::error::{Error, Result};

/// One head's wait: what it listens on and what it has learned so far.
struct HeadWait<'a, K: LockKind> {
    lock: &'a Lock<K>,
    ticket: &'a Ticket,
    lease_ms: Option<u64>,
    mode: AcquireMode,
    deadline: Option<Instant>,
    subscription: Option<Arc<Subscription>>,
    /// A spin lock's back-off (no subscription).
    backoff: Option<Delays>,
    /// The holder's TTL as the last try answered it (`None`: not tried yet).
    ttl: Option<i64>,
    /// Whether the next round tries (else it only sleeps).
    try_now: bool,
    /// A message came while a hand-off to this head was in flight.
    message_pending: bool,
    /// The hold-back after a real release of the line, if one runs.
    hold: Option<HoldBack>,
    /// The lock's key, for a deletion that sends no message (with key tracking on).
    waited: Option<WaitedKey>,
}

/// What one round of the head's loop came to.
enum Round {
    Done(Head),
    Again,
}

impl<K: LockKind> Lock<K> {
    /// The head's wait (see the module docs): subscribes (or polls), then rounds until
    /// the lock is taken or handed over, or the deadline passes.
    pub(super) async fn wait_as_head(
        &self,
        place: &InLine<'_, K>,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        ttl: Option<i64>,
        overdue: bool,
    ) -> Result<Head> {
        let Some(ticket) = place.ticket() else {
            return Ok(Head::TimedOut);
        };
        let Some(mut head) = self.head_listens(ticket, deadline).await? else {
            return Ok(Head::TimedOut);
        };
        head.lease_ms = lease_ms;
        head.mode = mode;
        head.ttl = ttl;
        let line = ticket.line();
        // Redisson subscribes, then tries again; a head behind a local holder waits for
        // it. (A polling head that has just tried waits a back-off step first; a head
        // that slept in its slot past a local holder's lease tries at once.)
        head.try_now = overdue
            || (line.local_holder_other_than(ticket.owner()).is_none()
                && (head.subscription.is_some() || ttl.is_none()));
        // After a local holder's real release: the hold-back (see `HoldBack`).
        head.hold = match line.take_published() {
            Some(published) if head.subscription.is_some() => {
                Some(HoldBack::after(published, line.pace()))
            }
            _ => None,
        };
        loop {
            if let Round::Done(done) = head.round().await? {
                return Ok(done);
            }
        }
    }

    /// What the head listens on: the line's subscription (made by an earlier head, or
    /// now, with the line's mark where the hand-off script counts listeners), or a spin
    /// lock's back-off. `None`: the deadline passed while subscribing.
    async fn head_listens<'a>(
        &'a self,
        ticket: &'a Ticket,
        deadline: Option<Instant>,
    ) -> Result<Option<HeadWait<'a, K>>> {
        let (owner, line) = (ticket.owner(), ticket.line());
        let mut head = HeadWait {
            lock: self,
            ticket,
            lease_ms: None,
            mode: AcquireMode::Once,
            deadline,
            subscription: line.subscription(),
            backoff: None,
            ttl: None,
            try_now: false,
            message_pending: false,
            hold: None,
            waited: None,
        };
        if head.subscription.is_some() {
            head.waited = self.watch_key();
            return Ok(Some(head));
        }
        match self.kind.waiting(&self.target(owner)) {
            Waiting::Channel(channel) => {
                let marker = self
                    .context
                    .handoff_limits
                    .mark_lines
                    .then(|| crate::names::line_marker(self.target(owner).name));
                let subscribed =
                    self.subscribe_marked(owner, &channel, marker.as_deref(), deadline);
                match subscribed.await? {
                    Some(subscription) => {
                        head.subscription = Some(line.keep_subscription(subscription));
                        head.waited = self.watch_key();
                    }
                    None => return Ok(None),
                }
            }
            Waiting::Poll(backoff) => head.backoff = Some(backoff.delays()),
        }
        Ok(Some(head))
    }
}

impl<K: LockKind> HeadWait<'_, K> {
    fn line(&self) -> &Arc<Line> {
        self.ticket.line()
    }

    fn messages(&self) -> u64 {
        self.subscription.as_ref().map_or(0, |s| s.messages())
    }

    /// One round: arm, then a hand-over, the deadline, the hold-back, a try or a sleep.
    async fn round(&mut self) -> Result<Round> {
        let pubsub = &self.lock.context.pubsub;
        // Held apart from `self`, which the round changes while they are armed.
        let (subscription, ticket) = (self.subscription.clone(), self.ticket);
        let armed = subscription.as_ref().map(|s| s.notified());
        tokio::pin!(armed);
        if let Some(armed) = armed.as_mut().as_pin_mut() {
            waiter::arm(pubsub, armed)?;
        }
        let nudged = ticket.notified();
        tokio::pin!(nudged);
        nudged.as_mut().enable();
        if pubsub.is_closed() || self.lock.context.is_closed() {
            return Err(Error::Shutdown);
        }
        if let Stage::Granted { at } = self.ticket.stage() {
            return Ok(Round::Done(Head::Granted(at)));
        }
        // Past the deadline: one last try if one is due (never a hold-back), then give up.
        let past = self.deadline.is_some_and(|d| Instant::now() >= d);
        let messages = self.messages();
        if let Some(held) = self
            .hold
            .filter(|h| !past && self.try_now && !h.over(messages))
        {
            self.hold_back(held, armed.as_pin_mut(), messages).await;
            return Ok(Round::Again);
        }
        if self.try_now
            && self.ticket.start_trying()
            && let Some(done) = self.try_once().await?
        {
            return Ok(Round::Done(done));
        }
        if past {
            return Ok(Round::Done(Head::TimedOut));
        }
        let (hint, behind_local_holder) = self.sleep_hint();
        tracing::trace!(ttl = ?self.ttl, ?hint, "head of the local line: waiting");
        let woke = if behind_local_holder {
            // Its unlock wakes us (no message is needed): the holder's lease alone bounds it.
            waiter::sleep_bounded(armed.as_pin_mut(), Some(nudged), hint, self.deadline).await
        } else {
            let slept = waiter::sleep(armed.as_pin_mut(), Some(nudged), hint, self.deadline);
            tokio::select! {
                woke = slept => woke,
                // The key changed without a message (deleted): try.
                () = self.lock.key_changed(self.waited.as_ref()) => Woke::Timer,
            }
        };
        self.try_now = match woke {
            Woke::Deadline | Woke::Timer => true,
            Woke::Message => {
                self.message_pending = self.ticket.stage() == Stage::Handing;
                true
            }
            Woke::Other => self.nudged(),
        };
        Ok(Round::Again)
    }

    /// The head's own try (no hand-off to it is in flight); `Some` when it took the lock.
    async fn try_once(&mut self) -> Result<Option<Head>> {
        self.message_pending = false;
        // A yield's hold-back outlives a try that fails (another client took the lock:
        // its turn goes on), from the try on.
        let line = self.line().clone();
        self.hold = self.hold.and_then(|held| held.restarted(line.pace()));
        let wait = self
            .deadline
            .map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        let owner = self.ticket.owner();
        let attempt = self
            .lock
            .attempt(owner, self.lease_ms, self.mode, wait)
            .await;
        self.ticket.stop_trying();
        match attempt? {
            Attempt::Acquired(acquired) => Ok(Some(Head::Taken(acquired))),
            Attempt::Held(ttl) => {
                self.ttl = Some(ttl);
                Ok(None)
            }
        }
    }

    /// Waits out (part of) a hold-back: until it ends, or, after a yield, until another
    /// client's release, which gives them another patience for the next and tells their
    /// pace. Never past the deadline.
    async fn hold_back(
        &mut self,
        held: HoldBack,
        armed: Option<Pin<&mut Notified<'_>>>,
        messages: u64,
    ) {
        let until = self.deadline.map_or(held.until, |d| d.min(held.until));
        let Some(armed) = armed.filter(|_| held.yielded.is_some()) else {
            tokio::time::sleep_until(until).await;
            return;
        };
        let released = waiter::sleep(
            Some(armed),
            None::<std::future::Pending<()>>,
            None,
            Some(until),
        );
        if released.await == Woke::Message && self.messages() > messages {
            let line = self.line().clone();
            self.hold = Some(held.released(self.messages(), &line));
        }
    }

    /// A nudge of the line: a real release by a local holder (which left a hold-back: the
    /// head tries once its message is here, a round trip later, or after the others'
    /// turn), or something else to look at. Whether to try at the next round.
    fn nudged(&mut self) -> bool {
        let line = self.line().clone();
        match line.take_published() {
            // A polling head gets no message and tries at once: its attempt reaches
            // Redis half a round trip after the release's reply left it, so the lock is
            // free there for about a round trip, which other clients' pollers get.
            Some(_) if self.subscription.is_none() => true,
            Some(published) => {
                let held = HoldBack::after(published, line.pace());
                self.hold = Some(held);
                // A yield's hold-back watches the messages itself.
                self.message_pending || held.yielded.is_some()
            }
            None => true,
        }
    }

    /// How long the head may sleep before it tries again, and whether another owner of
    /// this client holds the lock: that holder's lease (the watchdog timeout for a renewed
    /// hold), or the holder's TTL, or a spin lock's back-off step; `None`: only a wake-up
    /// (or the wait's re-check).
    fn sleep_hint(&mut self) -> (Option<Duration>, bool) {
        let watchdog = Duration::from_millis(self.lock.context.watchdog_ms);
        match self.line().local_holder_other_than(self.ticket.owner()) {
            // A local holder's unlock wakes us; its lease bounds the wait in case it
            // lost the lock silently. A polling head also tries after each back-off step:
            // nothing is published when another client frees the lock.
            Some(until) => {
                let holder = until.map_or(watchdog, |until| {
                    until.saturating_duration_since(Instant::now())
                });
                let bound = self
                    .backoff
                    .as_mut()
                    .map_or(holder, |d| holder.min(d.next_delay()));
                (Some(bound), true)
            }
            None => {
                let hint = match (self.backoff.as_mut(), self.ttl) {
                    (Some(delays), Some(_)) => Some(delays.next_delay()),
                    (_, Some(ttl)) if ttl >= 0 => Some(Duration::from_millis(ttl as u64)),
                    (_, Some(_)) => None,
                    (_, None) => Some(Duration::ZERO),
                };
                (hint, false)
            }
        }
    }
}
