//! This client's local line of waiters for the kinds that hand off (reentrant and
//! non-reentrant; see [`crate::wait::local_queue`]): joining it (`acquire_in_line`), the head's
//! wait in Redis (`wait_as_head`), and the release that hands the lock to the next local
//! waiter (`release_or_hand_off`). [`InLine`] is a waiter's place in the line.
//!
//! Invariants: only the head of a line waits in Redis, subscribed; the others send
//! nothing. A waiter leaves the line on every way out, and a lock handed to a waiter that
//! went away is given back. An owner that holds the lock re-enters without queuing.

use std::time::Duration;

use tokio::time::Instant;

use super::acquiring::{Acquired, Attempt, Wait};
use super::base;
use super::kind::{AcquireMode, Waiting};
use super::releasing::{HandTo, UnlockReply};
use super::{Lock, LockKind};
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;
use crate::telemetry;
use crate::wait::local_queue::{patience, Left, Published, Stage, Ticket};

impl<K: LockKind> Lock<K> {
    /// `lock()` and the waiting `try_lock*` of a kind that hands off: one attempt unless
    /// this client already has waiters or another holder for the lock, then a place in the
    /// lock's local line (see [`crate::wait::local_queue`]).
    pub(super) async fn acquire_in_line(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        let context = &self.context;
        let deadline = match wait {
            Wait::Until(deadline, _) => Some(deadline),
            Wait::Once | Wait::Forever => None,
        };
        let mode = AcquireMode::Queue {
            wait_ms: context.config.settings.fair_lock_wait_timeout.as_millis() as u64,
        };
        // An owner that holds the lock already re-enters (never queues behind itself).
        let queue_at_once = context
            .lines
            .get(&self.name)
            .is_some_and(|line| line.should_queue(owner))
            && context
                .holds
                .known(&self.name, owner, K::CAPABILITIES.write_lock)
                == 0;
        let mut ttl = None;
        if !queue_at_once {
            match self.attempt(owner, lease_ms, mode, wait).await? {
                Attempt::Acquired(acquired) => return Ok(Some(acquired)),
                Attempt::Held(held) => ttl = Some(held),
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
        }
        let _waiting = telemetry::Waiting::start(K::NAME);
        let line = context.lines.get_or_make(&self.name);
        let mut place = InLine {
            lock: self,
            ticket: Some(line.join(owner, lease_ms)),
        };
        // Whether the head starts by trying: it slept in its slot past the local holder's
        // lease (see below).
        let mut overdue;
        loop {
            let Some(ticket) = place.ticket.as_ref() else {
                return Ok(None);
            };
            // A head promoted while a local holder has the lock sleeps here until that
            // holder's unlock wakes it, or its lease (the watchdog timeout for a renewed
            // hold, or for a waiter promoted later) would end: it may have lost the lock
            // silently, or its unlock may have failed without waking anyone.
            let holder_ends = match ticket.line().local_holder_other_than(owner) {
                Some(Some(until)) => until,
                _ => Instant::now() + Duration::from_millis(context.watchdog_ms),
            };
            let wake_by = deadline.map_or(holder_ends, |d| d.min(holder_ends));
            let stage = ticket.wait_turn(Some(wake_by)).await;
            overdue = Instant::now() >= holder_ends;
            match stage {
                Stage::Granted { at } => return Ok(Some(place.take_grant(owner, lease_ms, at))),
                Stage::Queued => {
                    if context.is_closed() {
                        return Err(Error::Shutdown);
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
                Stage::Head | Stage::Trying | Stage::Handing => break,
            }
        }
        // The head waits in Redis. Boxed: one task per line runs it at a time, so the
        // others do not carry its size while they wait.
        let head = Box::pin(self.wait_as_head(&place, lease_ms, mode, deadline, ttl, overdue));
        let head = head.await;
        match head? {
            Head::Taken(acquired) => {
                place.leave_taken(acquired.lease_deadline);
                Ok(Some(acquired))
            }
            Head::Granted(at) => Ok(Some(place.take_grant(owner, lease_ms, at))),
            Head::TimedOut => Ok(None),
        }
    }

    /// The head of a local line: Redisson's wait (subscribed; tries after a message, a
    /// nudge, or the holder's TTL; a spin lock's head subscribes to nothing and tries
    /// after its back-off step or a nudge), except that while another owner of this
    /// client holds the lock it does not try: that holder's unlock hands the lock over or
    /// publishes.
    pub(super) async fn wait_as_head(
        &self,
        place: &InLine<'_, K>,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        mut ttl: Option<i64>,
        overdue: bool,
    ) -> Result<Head> {
        let Some(ticket) = place.ticket.as_ref() else {
            return Ok(Head::TimedOut);
        };
        let owner = ticket.owner();
        let line = ticket.line();
        let context = &self.context;
        let wait = deadline.map_or(Wait::Forever, |d| Wait::Until(d, Duration::ZERO));
        let (subscription, mut backoff) = match line.subscription() {
            Some(subscription) => (Some(subscription), None),
            None => match self.kind.waiting(&self.target(owner)) {
                Waiting::Channel(channel) => {
                    // With the mark of local lines where the hand-off script counts
                    // listeners (see `crate::wait::local_queue`).
                    let marker = context
                        .handoff_limits
                        .mark_lines
                        .then(|| crate::names::line_marker(self.target(owner).name));
                    let subscribed =
                        self.subscribe_marked(owner, &channel, marker.as_deref(), deadline);
                    match subscribed.await? {
                        Some(subscription) => (Some(line.keep_subscription(subscription)), None),
                        None => return Ok(Head::TimedOut),
                    }
                }
                Waiting::Poll(backoff) => (None, Some(backoff.delays())),
            },
        };
        let pubsub = &self.context.pubsub;
        // Redisson subscribes, then tries again; a head behind a local holder waits for it.
        // (A polling head that has just tried waits a back-off step first.)
        // (A head that slept in its slot past a local holder's lease tries at once.)
        let mut try_now = overdue
            || (line.local_holder_other_than(owner).is_none()
                && (subscription.is_some() || ttl.is_none()));
        // A message came while a hand-off to us was in flight (we could not try then).
        let mut message_pending = false;
        // After a local holder's real release: not before other clients had a round trip;
        // after one that yielded to other clients' waiters, not before they had their
        // turn (see `crate::wait::local_queue`). (A head promoted while that holder had the
        // lock slept until its release woke it: that release's nudge is read here.)
        let mut hold = match line.take_published() {
            Some(published) if subscription.is_some() => {
                Some(HoldBack::after(published, line.pace()))
            }
            _ => None,
        };
        let mut tried_at_deadline = false;
        loop {
            let woken = subscription.as_ref().map(|s| s.notified());
            tokio::pin!(woken);
            if let Some(woken) = woken.as_mut().as_pin_mut() {
                woken.enable();
            }
            let woken = async {
                match woken.as_pin_mut() {
                    Some(woken) => woken.await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(woken);
            let nudged = ticket.notified();
            tokio::pin!(nudged);
            nudged.as_mut().enable();
            if pubsub.is_closed() || self.context.is_closed() {
                return Err(Error::Shutdown);
            }
            if let Stage::Granted { at } = ticket.stage() {
                return Ok(Head::Granted(at));
            }
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // Out of time. A polling head whose back-off step was cut at the deadline
            // tries once more first (as a spin waiter outside a line does).
            if remaining == Some(Duration::ZERO)
                && (backoff.is_none() || !try_now || tried_at_deadline)
            {
                return Ok(Head::TimedOut);
            }
            tried_at_deadline = remaining == Some(Duration::ZERO);
            let messages = subscription.as_ref().map_or(0, |s| s.messages());
            if let Some(held) = hold.filter(|h| try_now && !h.over(messages)) {
                // Never past the caller's deadline (checked above at each turn).
                let sleep =
                    tokio::time::sleep_until(deadline.map_or(held.until, |d| d.min(held.until)));
                match held.yielded {
                    // Every other client's release while they have their turn gives
                    // them another patience for the next; the time since the one before
                    // tells their pace.
                    Some(yielded) => tokio::select! {
                        _ = &mut woken => {
                            let now = subscription.as_ref().map_or(0, |s| s.messages());
                            if now > messages {
                                let at = Instant::now();
                                if now > yielded.own_message {
                                    line.observe_pace(at - yielded.last_message);
                                }
                                let span = patience(yielded.round_trip, line.pace());
                                hold = Some(HoldBack {
                                    until: at + span,
                                    yielded: Some(Yielded { last_message: at, ..yielded }),
                                });
                            }
                        }
                        _ = sleep => {}
                    },
                    None => sleep.await,
                }
                continue;
            }
            if try_now && ticket.start_trying() {
                message_pending = false;
                // A yield's hold-back outlives a try that fails (another client took the
                // lock: its turn goes on), from the try on.
                hold = hold.and_then(|held| held.yielded).map(|yielded| HoldBack {
                    until: Instant::now() + patience(yielded.round_trip, line.pace()),
                    yielded: Some(yielded),
                });
                let attempt = self.attempt(owner, lease_ms, mode, wait).await;
                ticket.stop_trying();
                match attempt? {
                    Attempt::Acquired(acquired) => return Ok(Head::Taken(acquired)),
                    Attempt::Held(held) => ttl = Some(held),
                }
            }
            let holder_ends = match line.local_holder_other_than(owner) {
                // A local holder's unlock wakes us; its lease, or the watchdog timeout
                // for a renewed hold, bounds the wait in case it lost the lock silently.
                // A polling head (spin lock) also tries after each back-off step: nothing
                // is published when another client frees the lock (a force unlock, the
                // lease running out), and Redisson's spin waiters poll all along.
                Some(until) => {
                    let holder = until
                        .map_or(Duration::from_millis(self.context.watchdog_ms), |until| {
                            until.saturating_duration_since(Instant::now())
                        });
                    Some(
                        backoff
                            .as_mut()
                            .map_or(holder, |d| holder.min(d.next_delay())),
                    )
                }
                // A polling head tries again after its next back-off step.
                None => match (backoff.as_mut(), ttl) {
                    (Some(delays), Some(_)) => Some(delays.next_delay()),
                    (_, Some(ttl)) if ttl >= 0 => Some(Duration::from_millis(ttl as u64)),
                    (_, Some(_)) => None,
                    (_, None) => Some(Duration::ZERO),
                },
            };
            let sleep_for = match (holder_ends, remaining) {
                (Some(h), Some(r)) => Some(h.min(r)),
                (h, r) => h.or(r),
            };
            tracing::trace!(?ttl, ?sleep_for, "head of the local line: waiting");
            let limit = sleep_for.unwrap_or(Duration::MAX);
            let sleep = async {
                match Instant::now().checked_add(limit) {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            try_now = tokio::select! {
                _ = &mut woken => {
                    message_pending = ticket.stage() == Stage::Handing;
                    true
                }
                // A real release by a local holder that published: try once its message
                // is here (it may have come already), a round trip later. A polling head
                // gets no message and tries at once: its attempt reaches Redis half a
                // round trip after the release's reply left it, so the lock is free there
                // for about a round trip, which other clients' pollers get (a timer for
                // that would round up to the timer's millisecond).
                _ = &mut nudged => match line.take_published() {
                    Some(_) if subscription.is_none() => true,
                    Some(published) => {
                        let held = HoldBack::after(published, line.pace());
                        hold = Some(held);
                        // A yield's hold-back watches the messages itself.
                        message_pending || held.yielded.is_some()
                    }
                    None => true,
                },
                _ = sleep => true,
            };
        }
    }

    /// The release of a kind that hands off (see [`crate::wait::local_queue`]): when this
    /// owner gives back its last hold and a local waiter is the head of the lock's line,
    /// the release script hands the lock to it; otherwise it is the kind's release.
    pub(super) async fn release_or_hand_off(
        &self,
        owner: LockOwner,
        lease_ms: u64,
    ) -> Result<UnlockReply> {
        let context = &self.context;
        let line = context.lines.get(&self.name);
        let handoff = line.as_ref().and_then(|line| {
            (context
                .holds
                .known(&self.name, owner, K::CAPABILITIES.write_lock)
                <= 1)
                .then(|| line.begin_handoff(owner, &context.handoff_limits))
                .flatten()
        });
        let Some(handoff) = handoff else {
            let started = Instant::now();
            let released = self.release_script(owner, lease_ms).await;
            // (A plain release never yields: its reply is 1 whoever listens.)
            match (&line, &released) {
                (Some(line), Ok(UnlockReply::Released | UnlockReply::NotOwner)) => line
                    .released_by(
                        Some(owner),
                        matches!(released, Ok(UnlockReply::Released)).then(|| started.elapsed()),
                    ),
                // The release may have run: the head (which sleeps while a local holder
                // has the lock) looks for itself.
                (Some(line), Err(_)) => line.wake_head(),
                _ => {}
            }
            return released;
        };
        let next = base::HandoffTo {
            field: self.kind.field(context, handoff.to),
            lease_ms: handoff.lease_ms.unwrap_or(context.watchdog_ms),
            listeners: handoff.listeners,
            marked: handoff.marked,
            turn_goes_on: handoff.turn_goes_on,
        };
        let released = self
            .release_script_with(owner, lease_ms, true, HandTo::Line(&next))
            .await;
        let line = &handoff.line;
        match &released {
            Ok(UnlockReply::Handed { .. }) => {
                tracing::trace!(lock = %self.name, from = %owner, to = %handoff.to, "handed to the next local waiter");
                if !line.handed(&handoff) {
                    tracing::debug!(lock = %self.name, owner = %handoff.to, "the waiter left during its hand-off: giving the lock back");
                    self.with_owner(handoff.to).release_in_background();
                }
            }
            Ok(UnlockReply::Released | UnlockReply::NotOwner) => {
                line.not_handed(&handoff, true, None)
            }
            Ok(UnlockReply::Yielded { others }) => {
                tracing::trace!(lock = %self.name, from = %owner, others, "released for other clients' waiters: the line had its turn");
                line.not_handed(&handoff, true, Some(*others))
            }
            Ok(UnlockReply::StillHeld) => line.not_handed(&handoff, false, None),
            Err(_) => {
                // The hand-off may have run: the head settles that before it tries.
                self.with_owner(handoff.to).leave_in_doubt(handoff.to, 0);
                line.not_handed(&handoff, false, None);
            }
        }
        context.lines.retire_if_idle(line);
        released
    }
}

/// How long the head of a line holds back after a real release of its line.
#[derive(Clone, Copy, Debug)]
struct HoldBack {
    /// Until then at the latest.
    until: Instant,
    /// After a yield: what ends it besides that time.
    yielded: Option<Yielded>,
}

/// A yield's hold-back: until the other clients had their turn (a count of unlock
/// messages), each of their releases within [`patience`] of the last.
#[derive(Clone, Copy, Debug)]
struct Yielded {
    /// The count of unlock messages that ends it.
    until: u64,
    /// The count once the yielding release's own message is in.
    own_message: u64,
    /// The yielding release's round trip.
    round_trip: Duration,
    /// When the last message (or the release) came.
    last_message: Instant,
}

impl HoldBack {
    /// The hold-back after `published`: a round trip, or for a yield, until other
    /// clients had their turn or stopped taking the lock (see `crate::wait::local_queue`),
    /// with the others' `pace` as the line learned it.
    fn after(published: Published, pace: Option<Duration>) -> HoldBack {
        let now = Instant::now();
        match published.yielded_until {
            Some(until) => HoldBack {
                until: now + patience(published.round_trip, pace),
                yielded: Some(Yielded {
                    until,
                    own_message: published.own_message,
                    round_trip: published.round_trip,
                    last_message: now,
                }),
            },
            None => HoldBack {
                until: now + published.round_trip,
                yielded: None,
            },
        }
    }

    /// Whether it is over, with the line's subscription at `messages` unlock messages.
    fn over(&self, messages: u64) -> bool {
        Instant::now() >= self.until || self.yielded.is_some_and(|y| messages >= y.until)
    }
}

/// How the head of a local line came to hold the lock, or not.
pub(super) enum Head {
    /// Its own acquire script took it.
    Taken(Acquired),
    /// A local holder handed it over; the hold started then.
    Granted(Instant),
    TimedOut,
}

/// A waiter's place in its lock's local line, held by the waiting future: leaving the
/// line on every way out (done, given up, failed, dropped), and giving back a lock that
/// was handed to a waiter that went away before taking it.
pub(super) struct InLine<'a, K: LockKind> {
    lock: &'a Lock<K>,
    ticket: Option<Ticket>,
}

impl<K: LockKind> InLine<'_, K> {
    /// Takes the hold a local holder handed over (at `at`) and leaves the line.
    fn take_grant(&mut self, owner: LockOwner, lease_ms: Option<u64>, at: Instant) -> Acquired {
        if let Some(ticket) = self.ticket.take() {
            let line = ticket.line().clone();
            ticket.take_grant();
            self.lock.context.lines.retire_if_idle(&line);
        }
        self.lock.register_acquired(owner, lease_ms, at, None)
    }

    /// Leaves the line as the new local holder (its own try took the lock).
    fn leave_taken(&mut self, until: Option<Instant>) {
        if let Some(ticket) = self.ticket.take() {
            let line = ticket.line().clone();
            ticket.leave(Some(until));
            self.lock.context.lines.retire_if_idle(&line);
        }
    }
}

impl<K: LockKind> Drop for InLine<'_, K> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let (owner, line) = (ticket.owner(), ticket.line().clone());
        if let Left::GiveBack { .. } = ticket.leave(None) {
            tracing::debug!(lock = %self.lock.name, %owner, "a waiter left after the lock was handed to it: giving it back");
            self.lock.with_owner(owner).release_in_background();
        }
        self.lock.context.lines.retire_if_idle(&line);
    }
}
