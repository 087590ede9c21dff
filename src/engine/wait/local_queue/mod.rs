//! The local queue: this client's tasks that wait for the same lock, in order.
//!
//! When several tasks of one client wait for the same lock, only the first of them (the
//! *head*) waits in Redis the way Redisson does (subscribed, trying after a message or the
//! holder's TTL); the others wait here, in arrival order, and send nothing. When a task of
//! this client unlocks its last hold while a local waiter is queued, its release can hand
//! the lock straight to the head in the same script round trip (the hash's field moves
//! from the releasing owner to the head's: no message, no second script). See
//! `docs/lock-engine.md` ("Local queue and hand-off") and `lua/lock_handoff.lua`.
//!
//! Hand-offs are bounded so that waiters elsewhere (other processes, Java clients) still
//! get the lock: after [`HandoffLimits::in_a_row`] hand-offs in a row, or once the lock
//! has stayed in this client for [`HandoffLimits::time`], a release hands off only when
//! nobody else listens on the lock's channel (a single server) or not at all (Sentinel,
//! Cluster, where listeners may sit on replicas): it releases for real and publishes.
//!
//! Turns with clients that wait the Redisson way (single server): such a waiter needs the
//! unlock message, a thread wake-up and a script round trip to try, so a line that hands
//! off up to the bounds and then races it takes nearly every acquisition. The line's head
//! subscribes to the lock channel and to a mark ([`crate::names::line_marker`]), so that
//! the hand-off script can count the channel's listeners that are not local lines. While
//! there are any, the line hands off only for its *turn*: as many acquisitions in a row
//! as each other client made while the lock was away from it (the unlock messages the
//! line's subscription got meanwhile, one per real release, divided by the clients it
//! yielded to; at most the bounds; the first turn, and one after a yield that nobody
//! took, is the bounds). Past its turn the release is a real one that *yields* (the
//! script answers 2 + n for n other clients), and the head holds back while each of them
//! has a turn as long (one unlock message per acquisition after the release's own), each
//! of their releases within [`yield_time`] of the last, then tries as any waiter does.
//! Where nobody but local lines listens, nothing changes: the script reads the counts
//! only past the turn or the bounds.
//!
//! Invariants: a line exists only while it has waiters (or a hand-off in flight); at most
//! one waiter is the head; a hand-off is only started to a head that is not trying in
//! Redis itself, and a head only tries when no hand-off to it is in flight, so a task
//! never takes a lock twice; a waiter that leaves (gives up, fails, is dropped) leaves the
//! line exactly once and passes the head on; a hand-off whose receiver left is given back
//! by the releasing side.
//!
//! This module keeps the bookkeeping only; it sends nothing. The engine
//! ([`Lock`](crate::lock::Lock)) runs the scripts.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::engine::wait::pubsub::Subscription;
use crate::names::owner::LockOwner;

/// How far local hand-offs go before the lock is released for real (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HandoffLimits {
    /// Hand-offs in a row; 0 turns hand-off off (every release is a real one).
    pub(crate) in_a_row: u32,
    /// How long the lock may stay in this client through hand-offs.
    pub(crate) time: Duration,
    /// Whether, past the bounds, a release may still hand off while nobody but this
    /// client listens on the channel: only on a single server, where every listener is
    /// (on Sentinel a Java client may listen on a replica, and past the bounds every
    /// release is a real one).
    pub(crate) count_listeners: bool,
    /// Whether lines subscribe with the mark, so that a release can count the other
    /// clients' waiters among the channel's listeners and take turns with them (see the
    /// module docs): wherever Redisson's waiters listen on the node the script runs on
    /// (a single server, a Sentinel set's primary, a cluster with sharded pub/sub).
    pub(crate) mark_lines: bool,
}

/// What a release should do about the head of the line.
#[derive(Debug)]
pub(crate) struct Handoff {
    pub(crate) line: Arc<Line>,
    pub(crate) ticket: u64,
    /// The head's owner and lease (`None`: watchdog mode).
    pub(crate) to: LockOwner,
    pub(crate) lease_ms: Option<u64>,
    /// `-1`: hand off; `n >= 0`: hand off only while at most `n` connections listen on
    /// the channel (this client's own subscription), else release for real; `-2`:
    /// release for real (saying whether other clients' waiters listen, when `marked`).
    pub(crate) listeners: i64,
    /// Whether the script tells other clients' waiters from local lines (by the mark),
    /// and whether the line's turn goes on while such waiters listen.
    pub(crate) marked: bool,
    pub(crate) turn_goes_on: bool,
    /// The unlock messages the line's subscription had got when the hand-off started.
    pub(crate) messages: u64,
    /// The acquisitions the line made in a row up to this release.
    pub(crate) chain: u32,
    pub(crate) started: Instant,
}

/// What a real release by a local holder left for the head (see [`Line::take_published`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Published {
    /// The release script's round trip.
    pub(crate) round_trip: Duration,
    /// The release yielded to other clients' waiters (its reply said they listen and the
    /// line had its turn): the head holds back until the line's subscription has got this
    /// many unlock messages (the release's own, then one per acquisition the line made in
    /// its turn: the others' turn as long), or [`yield_time`] passed without one.
    pub(crate) yielded_until: Option<u64>,
    /// After a yield: the subscription's count of unlock messages once the release's own
    /// is in (the later ones are the other clients' releases).
    pub(crate) own_message: u64,
}

/// How long a head holds back at most after its line yielded (see [`Published`]): twice
/// the release's round trip, at least [`MIN_YIELD`], enough for a waiter of another
/// client to get the message, wake its thread and try.
pub(crate) fn yield_time(round_trip: Duration) -> Duration {
    round_trip.saturating_mul(2).max(MIN_YIELD)
}

/// The least hold-back of [`yield_time`]: a JVM thread's wake-up on a busy machine.
pub(crate) const MIN_YIELD: Duration = Duration::from_millis(1);

/// The most a head waits for the next release of the clients its line yielded to: past
/// it, they are taken to have stopped (see [`patience`]).
pub(crate) const MAX_PATIENCE: Duration = Duration::from_millis(20);

/// How long a head waits, while its line yields, for the next release of the other
/// clients before it tries: [`yield_time`] of the release's `round_trip`, or twice their
/// `pace` (the mean time between two of their releases seen in earlier yields) when that
/// is longer, at most [`MAX_PATIENCE`]. Their pace is their hold plus a thread's wake-up,
/// which on a busy machine is many round trips: a fixed wait would end in the middle of
/// their turn, and the head would take the lock in the gap between two of their
/// acquisitions. A listener that never takes the lock releases nothing, so it costs the
/// round-trip bound only.
pub(crate) fn patience(round_trip: Duration, pace: Option<Duration>) -> Duration {
    let pace = pace.map_or(Duration::ZERO, |p| p.saturating_mul(2));
    yield_time(round_trip).max(pace.min(MAX_PATIENCE))
}

/// Every line of this client, by lock name.
#[derive(Debug, Default)]
pub(crate) struct LocalQueues {
    lines: Mutex<HashMap<Arc<str>, Arc<Line>>>,
    /// How many lines exist: the uncontended path looks no further when it is 0.
    count: AtomicUsize,
}

impl LocalQueues {
    fn lines(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Line>>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The line of `name`, if one exists.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Line>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.lines().get(name).cloned()
    }

    /// The line of `name`, made if needed.
    pub(crate) fn get_or_make(&self, name: &Arc<str>) -> Arc<Line> {
        let mut lines = self.lines();
        if let Some(line) = lines.get(name) {
            return line.clone();
        }
        let line = Arc::new(Line {
            name: name.clone(),
            state: Mutex::default(),
        });
        lines.insert(name.clone(), line.clone());
        self.count.store(lines.len(), Ordering::Release);
        line
    }

    /// Removes `line` if nobody waits in it and no hand-off is in flight.
    pub(crate) fn retire_if_idle(&self, line: &Arc<Line>) {
        let mut lines = self.lines();
        let idle = {
            let state = line.state();
            state.waiters.is_empty() && state.handing.is_none()
        };
        if idle
            && lines
                .get(&line.name)
                .is_some_and(|current| Arc::ptr_eq(current, line))
        {
            lines.remove(&line.name);
            self.count.store(lines.len(), Ordering::Release);
            // The line's subscription (if any) is dropped with the last reference.
            line.state().subscription = None;
        }
    }

    /// How many tasks wait in lines, over every lock (for tests and metrics).
    pub(crate) fn waiting(&self) -> usize {
        self.lines().values().map(|l| l.state().waiters.len()).sum()
    }

    /// Wakes every waiter (at shutdown): each then sees the client closed.
    pub(crate) fn wake_all(&self) {
        for line in self.lines().values() {
            for slot in line.state().waiters.values() {
                slot.notify.notify_one();
            }
        }
    }
}

/// The waiters of one lock in this client.
#[derive(Debug)]
pub(crate) struct Line {
    name: Arc<str>,
    state: Mutex<LineState>,
}

#[derive(Debug, Default)]
struct LineState {
    /// The local owner that holds the lock, as far as this client knows (set by an
    /// acquisition or a hand-off while the line exists; cleared by a full release).
    holder: Option<LockOwner>,
    /// Until when the holder's lease runs (`None`: watchdog mode, renewed).
    holder_until: Option<Instant>,
    /// When the lock came into this client (the start of the hand-off chain).
    held_since: Option<Instant>,
    /// Hand-offs since then.
    handoffs: u32,
    /// The line's turn while other clients' waiters listen: acquisitions in a row
    /// (`None`: not counted, the bounds alone).
    turn: Option<u32>,
    /// The subscription's unlock messages when the line last yielded the lock (see
    /// [`Published::yielded_until`]), and to how many other clients: the lock has been
    /// away since.
    yielded_at: Option<(u64, u32)>,
    /// The waiters, by ticket number: arrival order. The first is the head.
    waiters: BTreeMap<u64, Arc<Slot>>,
    next_ticket: u64,
    /// The ticket a hand-off is in flight to.
    handing: Option<u64>,
    /// The last real release by a local holder published its message, and took this
    /// long (its script's round trip): the head, nudged, tries only once that message
    /// reached it, and one such round trip later, so that the releasing client's head is
    /// not ahead of other clients' waiters, which learn of the release from the message
    /// and need a round trip to try.
    published: Option<Published>,
    /// The head's subscription to the lock's channel, kept while the line lives so that
    /// a new head does not subscribe again.
    subscription: Option<Arc<Subscription>>,
    /// The other clients' pace while the line yields to them: the mean time between two
    /// of their releases (see [`patience`]).
    pace: Option<Duration>,
}

/// One waiter's place in a line.
#[derive(Debug)]
struct Slot {
    owner: LockOwner,
    lease_ms: Option<u64>,
    stage: Mutex<Stage>,
    notify: Notify,
}

/// Where a waiter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Behind the head: waits here, sends nothing.
    Queued,
    /// The head: waits in Redis (subscribed), tries when woken.
    Head,
    /// The head, with an acquire script in flight (no hand-off may start).
    Trying,
    /// A hand-off to this waiter is in flight (it must not try itself).
    Handing,
    /// The lock was handed to this waiter; the hold started at `at` (for a lease).
    Granted { at: Instant },
}

impl Slot {
    fn stage(&self) -> MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Line {
    fn state(&self) -> MutexGuard<'_, LineState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a new arrival of `owner` should queue here without trying first: somebody
    /// waits already, or another owner of this client holds the lock.
    pub(crate) fn should_queue(&self, owner: LockOwner) -> bool {
        let state = self.state();
        state.holder != Some(owner) && (!state.waiters.is_empty() || state.holder.is_some())
    }

    /// Records that `owner` took the lock itself (an acquire script succeeded), with a
    /// lease until `until` (`None`: watchdog mode).
    pub(crate) fn taken_by(&self, owner: LockOwner, until: Option<Instant>) {
        let mut state = self.state();
        if state.holder != Some(owner) {
            chain_starts(&mut state, owner);
        }
        state.holder_until = until;
    }

    /// Records that `owner` (`None`: whoever) released the lock for real, or lost it, and
    /// wakes the head; `published`: the release published its message, with that
    /// release's round trip (see [`Line::take_published`]).
    pub(crate) fn released_by(&self, owner: Option<LockOwner>, published: Option<Duration>) {
        let mut state = self.state();
        state.published = published.map(|round_trip| Published {
            round_trip,
            yielded_until: None,
            own_message: 0,
        });
        if owner.is_none() || state.holder == owner {
            state.holder = None;
            state.holder_until = None;
            state.held_since = None;
            state.handoffs = 0;
        }
        wake_head(&state);
    }

    /// Whether the nudge the head got was for a real release that published its message,
    /// and that release's round trip (the head then tries once it has that message, and
    /// that long after); clears it.
    pub(crate) fn take_published(&self) -> Option<Published> {
        self.state().published.take()
    }

    /// The other clients' pace, as [`Line::observe_pace`] learned it.
    pub(crate) fn pace(&self) -> Option<Duration> {
        self.state().pace
    }

    /// One more time between two releases of the clients the line yielded to (a moving
    /// mean, the newest a quarter of it).
    pub(crate) fn observe_pace(&self, gap: Duration) {
        let mut state = self.state();
        state.pace = Some(match state.pace {
            Some(pace) => (pace.saturating_mul(3) + gap) / 4,
            None => gap,
        });
    }

    /// Whether this client holds a subscription to the lock's channel through the line.
    fn subscribed(state: &LineState) -> bool {
        state.subscription.is_some()
    }

    /// The line's subscription, if the head made one.
    pub(crate) fn subscription(&self) -> Option<Arc<Subscription>> {
        self.state().subscription.clone()
    }

    /// Keeps `subscription` for the line's later heads (the first one kept wins).
    pub(crate) fn keep_subscription(&self, subscription: Subscription) -> Arc<Subscription> {
        let mut state = self.state();
        state
            .subscription
            .get_or_insert_with(|| Arc::new(subscription))
            .clone()
    }

    /// Whether another owner of this client holds the lock, and until when its lease
    /// runs (`Some(None)`: watchdog mode). The head then waits for its unlock (which
    /// hands off, or publishes) instead of trying, until that lease ends at the latest.
    pub(crate) fn local_holder_other_than(&self, owner: LockOwner) -> Option<Option<Instant>> {
        let state = self.state();
        match state.holder {
            Some(holder) if holder != owner => Some(state.holder_until),
            _ => None,
        }
    }

    /// Starts a hand-off from `from` (which is about to give back its last hold) to the
    /// head, if there is one that may take it.
    pub(crate) fn begin_handoff(
        self: &Arc<Self>,
        from: LockOwner,
        limits: &HandoffLimits,
    ) -> Option<Handoff> {
        if limits.in_a_row == 0 {
            return None;
        }
        let mut state = self.state();
        if state.handing.is_some() {
            return None;
        }
        let (&ticket, slot) = state.waiters.first_key_value()?;
        if slot.owner == from {
            return None;
        }
        let within_bounds = state.handoffs < limits.in_a_row
            && state
                .held_since
                .is_none_or(|since| since.elapsed() < limits.time);
        // Whether the script can tell other clients' waiters from local lines: the line's
        // own subscription carries the mark (or there is none yet).
        let markable =
            limits.mark_lines && state.subscription.as_ref().is_none_or(|s| s.is_marked());
        let listeners = if within_bounds {
            -1
        } else if limits.count_listeners {
            i64::from(Self::subscribed(&state))
        } else if markable {
            // Past the bounds: a real release, which says whether it yielded.
            -2
        } else {
            return None;
        };
        let turn_goes_on = state
            .turn
            .is_none_or(|turn| state.handoffs.saturating_add(1) < turn);
        // The script counts other clients' waiters when it may have to choose: past the
        // turn or the bounds.
        let marked = markable && (listeners != -1 || !turn_goes_on);
        let messages = state.subscription.as_ref().map_or(0, |s| s.messages());
        {
            let mut stage = slot.stage();
            if *stage != Stage::Head {
                return None; // queued behind a head that left, or trying on its own
            }
            *stage = Stage::Handing;
        }
        let to = slot.owner;
        let lease_ms = slot.lease_ms;
        state.handing = Some(ticket);
        Some(Handoff {
            line: self.clone(),
            ticket,
            to,
            lease_ms,
            listeners,
            marked,
            turn_goes_on,
            messages,
            chain: state.handoffs.saturating_add(1),
            started: Instant::now(),
        })
    }

    /// The hand-off went through: the head holds the lock. Returns false when the head
    /// left meanwhile (its hold must then be given back by the caller).
    pub(crate) fn handed(&self, handoff: &Handoff) -> bool {
        let mut state = self.state();
        state.handing = None;
        state.holder = Some(handoff.to);
        state.holder_until = handoff
            .lease_ms
            .map(|ms| handoff.started + Duration::from_millis(ms));
        state.handoffs = state.handoffs.saturating_add(1);
        let Some(slot) = state.waiters.remove(&handoff.ticket) else {
            return false;
        };
        *slot.stage() = Stage::Granted {
            at: handoff.started,
        };
        slot.notify.notify_one();
        promote(&mut state);
        true
    }

    /// The hand-off did not happen (the lock was released for real, `yielded` to other
    /// clients' waiters or not, or still held, or the script failed): the head goes back
    /// to waiting in Redis, and is woken to look again (a message that came while the
    /// hand-off was in flight found it unable to try, and would otherwise be lost on it).
    pub(crate) fn not_handed(&self, handoff: &Handoff, released: bool, yielded: Option<u32>) {
        let mut state = self.state();
        state.handing = None;
        let others = yielded.filter(|_| released).map(|others| others.max(1));
        state.yielded_at = others.map(|others| (handoff.messages, others));
        state.published = released.then(|| Published {
            round_trip: handoff.started.elapsed(),
            // The release's own message, then one per acquisition of the line's turn for
            // each other client.
            yielded_until: others
                .map(|others| handoff.messages + 1 + u64::from(handoff.chain) * u64::from(others)),
            own_message: handoff.messages + 1,
        });
        if released && state.holder.is_some() {
            state.holder = None;
            state.holder_until = None;
            state.held_since = None;
            state.handoffs = 0;
        }
        if let Some(slot) = state.waiters.get(&handoff.ticket) {
            let mut stage = slot.stage();
            if *stage == Stage::Handing {
                *stage = Stage::Head;
            }
        }
        wake_head(&state);
    }

    /// Wakes the head (an unlock of a local holder failed: it may have released).
    pub(crate) fn wake_head(&self) {
        wake_head(&self.state());
    }

    /// Joins the line as `owner`; the first waiter is the head at once.
    pub(crate) fn join(self: &Arc<Self>, owner: LockOwner, lease_ms: Option<u64>) -> Ticket {
        let mut state = self.state();
        let number = state.next_ticket;
        state.next_ticket += 1;
        let stage = if state.waiters.is_empty() {
            Stage::Head
        } else {
            Stage::Queued
        };
        let slot = Arc::new(Slot {
            owner,
            lease_ms,
            stage: Mutex::new(stage),
            notify: Notify::new(),
        });
        state.waiters.insert(number, slot.clone());
        Ticket {
            line: self.clone(),
            number,
            slot,
            done: false,
        }
    }
}

/// The lock came into this client by `owner`'s own acquire: a new chain of hand-offs.
/// Its turn (see the module docs) is the unlock messages the line's subscription got
/// since the line yielded the lock, less the yielding release's own: the acquisitions
/// other clients made meanwhile, shared by the number of clients it yielded to (at
/// least one). When nobody took it after the yield, twice the last turn: the listeners
/// may be slow to take it (a JVM's thread wake-up on a busy machine) or not wait for it
/// at all (a monitoring `SUBSCRIBE`), and the turn grows back to the bounds in a few
/// yields if they never take it. Not counted (the bounds alone) when the line did not
/// yield it.
fn chain_starts(state: &mut LineState, owner: LockOwner) {
    state.holder = Some(owner);
    state.held_since = Some(Instant::now());
    state.handoffs = 0;
    let messages = state.subscription.as_ref().map(|s| s.messages());
    state.turn = match (state.yielded_at.take(), messages) {
        (Some((at, others)), Some(now)) => match now.saturating_sub(at).saturating_sub(1) {
            0 => state.turn.map(|turn| turn.saturating_mul(2)),
            made => {
                let share = (made / u64::from(others.max(1))).max(1);
                Some(u32::try_from(share).unwrap_or(u32::MAX))
            }
        },
        _ => None,
    };
}

/// Makes the first queued waiter the head (after the head left, or was handed the
/// lock). It is woken only when there is something for it to do: while an owner of this
/// client holds the lock, that holder's unlock hands the lock to it or wakes it (and it
/// wakes by itself when the holder's lease would end: see `acquire_in_line`), so it
/// sleeps on. Waking it at every hand-off would wake two tasks per hand-off, and the
/// runtime would pull its second worker out of sleep for one of them.
fn promote(state: &mut LineState) {
    if let Some(slot) = state.waiters.values().next() {
        let mut stage = slot.stage();
        if *stage == Stage::Queued {
            *stage = Stage::Head;
            drop(stage);
            if !quiet(state, slot.owner) {
                slot.notify.notify_one();
            }
        }
    }
}

/// Whether a head of `owner` has nothing to do: another owner of this client holds the
/// lock, whose unlock hands it over or wakes the head.
fn quiet(state: &LineState, owner: LockOwner) -> bool {
    state.holder.is_some_and(|holder| holder != owner)
}

fn wake_head(state: &LineState) {
    if let Some(slot) = state.waiters.values().next() {
        slot.notify.notify_one();
    }
}

/// What leaving a line left to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// Nothing.
    Nothing,
    /// The lock had been handed to this waiter, which is gone: give that hold back.
    GiveBack { at: Instant },
}

/// A waiter's place in a line; leaving (or dropping it) takes it out, exactly once.
#[derive(Debug)]
pub(crate) struct Ticket {
    line: Arc<Line>,
    number: u64,
    slot: Arc<Slot>,
    done: bool,
}

impl Ticket {
    /// The line this ticket is in.
    pub(crate) fn line(&self) -> &Arc<Line> {
        &self.line
    }

    /// The waiter's stage now.
    pub(crate) fn stage(&self) -> Stage {
        *self.slot.stage()
    }

    /// Waits, while [`Stage::Queued`] (or a head promoted while a local holder has the
    /// lock, until `deadline` at the latest), for one nudge (a promotion, a hand-off, a
    /// shutdown) or until `deadline`; returns the stage then. The caller loops.
    pub(crate) async fn wait_turn(&self, deadline: Option<Instant>) -> Stage {
        let woken = self.slot.notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let stage = self.stage();
        if stage != Stage::Queued && !(stage == Stage::Head && self.quiet_head()) {
            return stage;
        }
        match deadline {
            Some(deadline) => {
                let _ = tokio::time::timeout_at(deadline, woken).await;
            }
            None => woken.await,
        }
        self.stage()
    }

    /// A head that has nothing to do yet (see [`quiet`]).
    fn quiet_head(&self) -> bool {
        quiet(&self.line.state(), self.slot.owner)
    }

    /// A future that completes when something changes for this waiter (a hand-off, a
    /// promotion, a nudge to try); enable it before checking the stage.
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.slot.notify.notified()
    }

    /// Moves the head to [`Stage::Trying`]; false when a hand-off to it is in flight or
    /// done (it must wait for that instead of trying).
    pub(crate) fn start_trying(&self) -> bool {
        let mut stage = self.slot.stage();
        match *stage {
            Stage::Head => {
                *stage = Stage::Trying;
                true
            }
            _ => false,
        }
    }

    /// The head's try failed (held by another owner): back to waiting as the head.
    pub(crate) fn stop_trying(&self) {
        let mut stage = self.slot.stage();
        if *stage == Stage::Trying {
            *stage = Stage::Head;
        }
    }

    /// Leaves the line: after taking the lock (`taken`: the waiter's own try succeeded,
    /// so it becomes the local holder, with a lease until then, `None` for the watchdog),
    /// giving up, or failing. Passes the head on.
    pub(crate) fn leave(mut self, taken: Option<Option<Instant>>) -> Left {
        self.leave_inner(taken)
    }

    fn leave_inner(&mut self, taken: Option<Option<Instant>>) -> Left {
        if self.done {
            return Left::Nothing;
        }
        self.done = true;
        let mut state = self.line.state();
        let removed = state.waiters.remove(&self.number);
        if let Some(until) = taken {
            if state.holder != Some(self.slot.owner) {
                chain_starts(&mut state, self.slot.owner);
            }
            state.holder_until = until;
        }
        if state.handing == Some(self.number) {
            // The releasing side finishes the hand-off and, seeing us gone, gives it back.
            promote(&mut state);
            return Left::Nothing;
        }
        let left = match removed.map(|slot| *slot.stage()) {
            None => match *self.slot.stage() {
                // Handed to us and already out of the line: ours unless consumed.
                Stage::Granted { at } if taken.is_none() => Left::GiveBack { at },
                _ => Left::Nothing,
            },
            Some(_) => Left::Nothing,
        };
        promote(&mut state);
        left
    }

    /// Takes the hold handed to this waiter: the ticket is spent.
    pub(crate) fn take_grant(mut self) {
        self.done = true;
    }

    /// The waiter's owner.
    pub(crate) fn owner(&self) -> LockOwner {
        self.slot.owner
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // The engine leaves explicitly (and gives back a hold handed to a waiter that went
        // away); this only keeps the line right if a ticket is dropped without that.
        if !self.done
            && let Left::GiveBack { .. } = self.leave_inner(None)
        {
            tracing::warn!(lock = %self.line.name, owner = %self.slot.owner, "a hold handed to a waiter that left was not given back; its lease ends it");
        }
    }
}

#[cfg(test)]
mod tests;
