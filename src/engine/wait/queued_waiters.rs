//! This client's waiters in fair locks' queues in Redis, to which a release may hand the
//! lock (the fair lock's hand-off, `lua/fair_handoff.lua`).
//!
//! Every waiter of a fair lock queues in Redis (`redisson_lock_queue:{N}`), as Redisson's
//! do: the order across clients is the queue's. When a task of this client gives back its
//! last hold, its release names this client's waiters of the lock that are not trying
//! themselves ([`QueuedWaiters::offer`]); if the head of the queue in Redis is one of them,
//! the release script does the head's acquire in the same step (no message, no second
//! script), and otherwise releases as Redisson's does. Nothing else changes: only the head
//! of the queue is ever handed the lock.
//!
//! Invariants: a waiter named in a release in flight (*offered*) does not try, and a
//! waiter trying is never named, so a task never takes a lock twice; a waiter leaves its
//! lock's list on every way out; a lock handed to a waiter that left is given back by the
//! releasing side, and one granted but never taken by the waiter's side.
//!
//! This module keeps the bookkeeping only; it sends nothing. The engine
//! ([`Lock`](crate::lock::Lock)) runs the scripts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fred::prelude::Value;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::time::Instant;

use crate::names::owner::LockOwner;

/// At most this many waiters are named in one release (the first in arrival order that
/// are not trying): enough for the head of the queue to be among them in all but deep
/// queues, where a release that names none of them simply releases.
pub(crate) const MAX_NAMED: usize = 16;

/// The waiters of every fair lock of this client that may be handed the lock.
#[derive(Debug, Default)]
pub(crate) struct QueuedWaiters {
    locks: Mutex<HashMap<Arc<str>, Vec<Arc<Slot>>>>,
    /// How many waiters are listed: a release looks no further when it is 0.
    count: AtomicUsize,
}

/// A waiter that a release may hand the lock to: what its own acquire would write.
#[derive(Clone, Debug)]
pub(crate) struct QueuedTo {
    /// Its owner field.
    pub(crate) field: Value,
    /// The lease its hold gets, in ms (the watchdog timeout in watchdog mode).
    pub(crate) lease_ms: u64,
    /// The wait it queued with, in ms, which its acquire takes off the deadlines of the
    /// waiters behind it.
    pub(crate) wait_ms: u64,
}

/// One waiter: who it is, what its own acquire would write, and where it stands.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) owner: LockOwner,
    pub(crate) to: QueuedTo,
    stage: Mutex<Stage>,
    changed: Notify,
    /// Set when a release that named it lost its answer: try at once.
    try_again: AtomicBool,
}

/// Where a waiter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Waiting for a message or its holder's TTL; may be named.
    Waiting,
    /// Its own acquire script is in flight; never named.
    Trying,
    /// Named in a release in flight; does not try.
    Offered,
    /// Handed the lock by a release sent at `at`.
    Granted { at: Instant },
    /// Gone (took the lock itself, gave up, failed or was dropped).
    Left,
}

/// What [`Slot::start_trying`] allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Try: nothing is in flight for this waiter.
    Try,
    /// A release that names it is in flight: wait for its answer.
    Offered,
    /// A release handed it the lock, sent at this instant.
    Granted(Instant),
}

/// What leaving said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leaving {
    Clean,
    /// The lock was handed to this waiter and it never took it: give it back.
    GiveBack,
}

impl QueuedWaiters {
    fn locks(&self) -> MutexGuard<'_, HashMap<Arc<str>, Vec<Arc<Slot>>>> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lists a waiter of `name` (after the ones already listed).
    pub(crate) fn join(&self, name: &Arc<str>, owner: LockOwner, to: QueuedTo) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            owner,
            to,
            stage: Mutex::new(Stage::Waiting),
            changed: Notify::new(),
            try_again: AtomicBool::new(false),
        });
        self.locks()
            .entry(name.clone())
            .or_default()
            .push(slot.clone());
        self.count.fetch_add(1, Ordering::AcqRel);
        slot
    }

    /// Takes `slot` off `name`'s list: it is gone for good. Answers whether a lock was
    /// handed to it and not taken.
    pub(crate) fn leave(&self, name: &str, slot: &Arc<Slot>) -> Leaving {
        let was = std::mem::replace(&mut *slot.stage(), Stage::Left);
        let mut locks = self.locks();
        if let Some(slots) = locks.get_mut(name) {
            if let Some(at) = slots.iter().position(|s| Arc::ptr_eq(s, slot)) {
                slots.remove(at);
                self.count.fetch_sub(1, Ordering::AcqRel);
            }
            if slots.is_empty() {
                locks.remove(name);
            }
        }
        match was {
            Stage::Granted { .. } => Leaving::GiveBack,
            _ => Leaving::Clean,
        }
    }

    /// Names the waiters of `name` that are not trying (at most [`MAX_NAMED`], in
    /// arrival order) in a release about to be sent; `None` when there are none. Until
    /// [`Offer::answer`], none of them tries.
    pub(crate) fn offer(&self, name: &str) -> Option<Offer> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let locks = self.locks();
        let named: Vec<Arc<Slot>> = locks
            .get(name)?
            .iter()
            .filter(|slot| {
                let mut stage = slot.stage();
                let free = *stage == Stage::Waiting;
                if free {
                    *stage = Stage::Offered;
                }
                free
            })
            .take(MAX_NAMED)
            .cloned()
            .collect();
        (!named.is_empty()).then_some(Offer { named })
    }
}

impl Slot {
    fn stage(&self) -> MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before its own attempt: whether the waiter may try now.
    pub(crate) fn start_trying(&self) -> Turn {
        let mut stage = self.stage();
        match *stage {
            Stage::Offered => Turn::Offered,
            Stage::Granted { at } => Turn::Granted(at),
            Stage::Waiting | Stage::Trying => {
                *stage = Stage::Trying;
                Turn::Try
            }
            Stage::Left => Turn::Try,
        }
    }

    /// After its own attempt.
    pub(crate) fn stop_trying(&self) {
        let mut stage = self.stage();
        if *stage == Stage::Trying {
            *stage = Stage::Waiting;
        }
    }

    /// When a release handed this waiter the lock (sent at that instant).
    pub(crate) fn granted(&self) -> Option<Instant> {
        match *self.stage() {
            Stage::Granted { at } => Some(at),
            _ => None,
        }
    }

    /// Whether a release that named this waiter lost its answer since the last call.
    pub(crate) fn take_try_again(&self) -> bool {
        self.try_again.swap(false, Ordering::AcqRel)
    }

    /// Completes when a release that named this waiter has its answer (enable it before
    /// reading the stage).
    pub(crate) fn answered(&self) -> Notified<'_> {
        self.changed.notified()
    }
}

/// The waiters a release names, until its answer is known.
#[derive(Debug)]
pub(crate) struct Offer {
    named: Vec<Arc<Slot>>,
}

impl Offer {
    /// The named waiters, in the order the release names them.
    pub(crate) fn named(&self) -> &[Arc<Slot>] {
        &self.named
    }

    /// The release's answer: handed to the `handed`-th named waiter (at `at`, when the
    /// release was sent), or to none. Every other named waiter may try again. Answers the
    /// owner of a handed lock whose waiter has left, which the caller gives back.
    pub(crate) fn answer(mut self, handed: Option<usize>, at: Instant) -> Option<LockOwner> {
        self.settle(handed.map(|i| (i, at)), false)
    }

    /// The release's answer was lost: it may have handed the lock to any of the named
    /// waiters (which the caller leaves in doubt). Each may try again, and should at once:
    /// its next attempt settles the doubt first, and one that was handed the lock is no
    /// longer in the queue, so no message would come for it.
    pub(crate) fn unknown(mut self) {
        self.settle(None, true);
    }

    /// Ends the offer for every named waiter still offered: granted (the `handed` one),
    /// or back to waiting (marked to try at once when `try_again`); each is woken.
    fn settle(&mut self, handed: Option<(usize, Instant)>, try_again: bool) -> Option<LockOwner> {
        let mut give_back = None;
        for (i, slot) in std::mem::take(&mut self.named).iter().enumerate() {
            let mut stage = slot.stage();
            match handed {
                Some((to, at)) if to == i => match *stage {
                    Stage::Offered => *stage = Stage::Granted { at },
                    _ => give_back = Some(slot.owner),
                },
                _ if *stage == Stage::Offered => {
                    *stage = Stage::Waiting;
                    if try_again {
                        slot.try_again.store(true, Ordering::Release);
                    }
                }
                _ => {}
            }
            drop(stage);
            slot.changed.notify_waiters();
        }
        give_back
    }
}

impl Drop for Offer {
    /// A release dropped before its answer (the client shut down): its waiters may try.
    fn drop(&mut self) {
        self.settle(None, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> Arc<str> {
        Arc::from("tickets")
    }

    fn to(field: &'static str) -> QueuedTo {
        QueuedTo {
            field: Value::from_static_str(field),
            lease_ms: 30_000,
            wait_ms: 5_000,
        }
    }

    #[test]
    fn an_offered_waiter_does_not_try_and_a_granted_one_takes_the_grant() {
        let waiters = QueuedWaiters::default();
        let a = waiters.join(&name(), LockOwner::from_raw(1), to("c:1"));
        let b = waiters.join(&name(), LockOwner::from_raw(2), to("c:2"));
        assert_eq!(b.start_trying(), Turn::Try);
        let offer = waiters.offer("tickets").expect("a is waiting");
        assert_eq!(offer.named().len(), 1, "b is trying: not named");
        assert_eq!(a.start_trying(), Turn::Offered);
        let at = Instant::now();
        assert_eq!(offer.answer(Some(0), at), None);
        assert_eq!(a.start_trying(), Turn::Granted(at));
        b.stop_trying();
        assert_eq!(waiters.leave("tickets", &a), Leaving::GiveBack);
        assert_eq!(waiters.leave("tickets", &b), Leaving::Clean);
        assert!(waiters.offer("tickets").is_none());
        assert!(waiters.locks().is_empty());
    }

    #[test]
    fn a_lock_handed_to_a_waiter_that_left_is_given_back_by_the_releaser() {
        let waiters = QueuedWaiters::default();
        let a = waiters.join(&name(), LockOwner::from_raw(1), to("c:1"));
        let b = waiters.join(&name(), LockOwner::from_raw(2), to("c:2"));
        let offer = waiters.offer("tickets").expect("both wait");
        assert_eq!(offer.named().len(), 2);
        assert_eq!(waiters.leave("tickets", &a), Leaving::Clean);
        assert_eq!(
            offer.answer(Some(0), Instant::now()),
            Some(LockOwner::from_raw(1))
        );
        assert_eq!(b.start_trying(), Turn::Try, "not handed: b may try again");
        b.stop_trying();
        assert!(!b.take_try_again(), "a known answer asks for no extra try");
        // An answer lost: the named waiter is told to try at once (its try settles it).
        waiters.offer("tickets").expect("b waits").unknown();
        assert!(b.take_try_again());
        assert_eq!(b.start_trying(), Turn::Try);
    }
}
