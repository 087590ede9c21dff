//! This client's local line of waiters for the kinds that hand off (reentrant and
//! non-reentrant; see [`crate::engine::wait::local_queue`]): joining it (`acquire_in_line`), the head's
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
use super::handle::Lock;
use super::kind::AcquireMode;
use super::kind::LockKind;
use super::releasing::{HandTo, UnlockReply};
use crate::engine::telemetry;
use crate::engine::wait::local_queue::{Left, Line, Published, Stage, Ticket, patience};
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

impl<K: LockKind> Lock<K> {
    /// `lock()` and the waiting `try_lock*` of a kind that hands off: one attempt unless
    /// this client already has waiters or another holder for the lock, then a place in the
    /// lock's local line (see [`crate::engine::wait::local_queue`]).
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
        let mut ttl = None;
        if !self.queues_at_once(owner) {
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
        let overdue = match self.wait_in_slot(&mut place, lease_ms, deadline).await? {
            InSlot::Head { overdue } => overdue,
            InSlot::Done(done) => return Ok(done),
        };
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

    /// Whether a new arrival of `owner` queues in the line without trying first: somebody
    /// waits already, or another owner of this client holds the lock (an owner that holds
    /// it already re-enters: it never queues behind itself).
    fn queues_at_once(&self, owner: LockOwner) -> bool {
        let context = &self.context;
        context
            .lines
            .get(&self.name)
            .is_some_and(|line| line.should_queue(owner))
            && context
                .holds
                .known(&self.name, owner, K::CAPABILITIES.write_lock)
                == 0
    }

    /// Waits in the line's slot (sending nothing) until this waiter is the head, is
    /// handed the lock, or the deadline passes.
    async fn wait_in_slot(
        &self,
        place: &mut InLine<'_, K>,
        lease_ms: Option<u64>,
        deadline: Option<Instant>,
    ) -> Result<InSlot> {
        let context = &self.context;
        loop {
            let Some(ticket) = place.ticket.as_ref() else {
                return Ok(InSlot::Done(None));
            };
            let owner = ticket.owner();
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
            // Whether the head starts by trying: it slept here past the holder's lease.
            let overdue = Instant::now() >= holder_ends;
            match stage {
                Stage::Granted { at } => {
                    return Ok(InSlot::Done(Some(place.take_grant(owner, lease_ms, at))));
                }
                Stage::Queued if context.is_closed() => return Err(Error::Shutdown),
                Stage::Queued if deadline.is_some_and(|d| Instant::now() >= d) => {
                    return Ok(InSlot::Done(None));
                }
                Stage::Queued => {}
                Stage::Head | Stage::Trying | Stage::Handing => {
                    return Ok(InSlot::Head { overdue });
                }
            }
        }
    }

    /// The release of a kind that hands off (see [`crate::engine::wait::local_queue`]): when this
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
pub(super) struct HoldBack {
    /// Until then at the latest.
    pub(super) until: Instant,
    /// After a yield: what ends it besides that time.
    pub(super) yielded: Option<Yielded>,
}

/// A yield's hold-back: until the other clients had their turn (a count of unlock
/// messages), each of their releases within [`patience`] of the last.
#[derive(Clone, Copy, Debug)]
pub(super) struct Yielded {
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
    /// clients had their turn or stopped taking the lock (see `crate::engine::wait::local_queue`),
    /// with the others' `pace` as the line learned it.
    pub(super) fn after(published: Published, pace: Option<Duration>) -> HoldBack {
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
    pub(super) fn over(&self, messages: u64) -> bool {
        Instant::now() >= self.until || self.yielded.is_some_and(|y| messages >= y.until)
    }

    /// After the head's try failed (another client has the lock: its turn goes on): a
    /// yield's hold-back goes on from now, another patience long; any other ends.
    pub(super) fn restarted(self, pace: Option<Duration>) -> Option<HoldBack> {
        self.yielded.map(|yielded| HoldBack {
            until: Instant::now() + patience(yielded.round_trip, pace),
            yielded: Some(yielded),
        })
    }

    /// Another client released while it has its turn (the line's subscription is at
    /// `messages`): the time since the last release tells their pace (learned by `line`),
    /// and they get another patience for their next.
    pub(super) fn released(self, messages: u64, line: &Line) -> HoldBack {
        let Some(yielded) = self.yielded else {
            return self;
        };
        let at = Instant::now();
        if messages > yielded.own_message {
            line.observe_pace(at - yielded.last_message);
        }
        HoldBack {
            until: at + patience(yielded.round_trip, line.pace()),
            yielded: Some(Yielded {
                last_message: at,
                ..yielded
            }),
        }
    }
}

/// How a waiter's time in its line's slot ended.
enum InSlot {
    /// It is the head; `overdue`: it slept past a local holder's lease.
    Head { overdue: bool },
    /// Handed the lock (`Some`), or out of time (`None`).
    Done(Option<Acquired>),
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
    /// The waiter's ticket, while it is in the line.
    pub(super) fn ticket(&self) -> Option<&Ticket> {
        self.ticket.as_ref()
    }

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
