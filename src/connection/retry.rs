//! How long a call to Redis that failed waits before it is tried again: one [`Schedule`]
//! per kind of retry, named here, so that every retry loop of the crate takes its pauses
//! from one place.
//!
//! A loop keeps its own rule of *whether* to try again (how many times, until when, on
//! which errors: those are the call's, e.g. an unlock asked again only while its latch
//! surely lives); the schedule says only *how long* to pause. [`Pauses::next`] gives the
//! pause before the next try, [`Pauses::peek`] the one it would give (for a loop that must
//! not sleep past its deadline).
//!
//! The user's spin-lock back-off (`Backoff`) is not a retry: it paces the
//! tries of a lock that is held, and the user sets it.

use std::time::Duration;

/// How the pauses of a [`Schedule`] grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Growth {
    /// The n-th pause is n times the first.
    Linear,
    /// Each pause is twice the one before.
    Doubling,
}

/// The pauses between the tries of one kind of call: the first, how they grow, and the
/// longest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Schedule {
    first: Duration,
    growth: Growth,
    cap: Duration,
}

impl Schedule {
    /// Pauses of `first`, `2 × first`, `3 × first`, … up to `cap`.
    const fn linear(first: Duration, cap: Duration) -> Schedule {
        Schedule {
            first,
            growth: Growth::Linear,
            cap,
        }
    }

    /// Pauses of `pause` each.
    const fn every(pause: Duration) -> Schedule {
        Schedule::linear(pause, pause)
    }

    /// Pauses of `first`, `2 × first`, `4 × first`, … up to `cap`.
    const fn doubling(first: Duration, cap: Duration) -> Schedule {
        Schedule {
            first,
            growth: Growth::Doubling,
            cap,
        }
    }

    /// The pauses of one call's retries, from the first.
    pub(crate) fn pauses(self) -> Pauses {
        Pauses {
            schedule: self,
            tries: 0,
        }
    }
}

/// A script fred did not write (no connection right after a drop, a redirection it did
/// not follow): 20, 40, 60, 80, 100 ms, then 100 ms.
pub(crate) const NOT_SENT: Schedule = Schedule::linear(ms(20), ms(100));

/// An unlock whose reply was lost, asked again with the same latch: 20, 40, … 100 ms.
pub(crate) const UNLOCK_ASKED_AGAIN: Schedule = Schedule::linear(ms(20), ms(100));

/// A fair waiter leaving the queue after a failed send: 50, then 100 ms.
pub(crate) const QUEUE_LEFT: Schedule = Schedule::linear(ms(50), ms(100));

/// Permits given back because no replica acknowledged their acquire: 50, 100, 150 ms.
pub(crate) const UNSYNCED_UNDONE: Schedule = Schedule::linear(ms(50), ms(150));

/// Redis asked whether an acquire whose reply was lost ran (a lock's hold count, a
/// permit's id), within the call's settling time: 20, 40, … 500 ms.
pub(crate) const OUTCOME_ASKED: Schedule = Schedule::doubling(ms(20), ms(500));

/// An acquire left in doubt, settled in the background: 100, 200, … 2,000 ms.
pub(crate) const DOUBT_SETTLED_LATER: Schedule = Schedule::doubling(ms(100), ms(2_000));

/// Permits given back whatever their state (a dropped acquire's, a settled lost
/// reply's): 20, 40, … 1,000 ms.
pub(crate) const PERMITS_GIVEN_BACK: Schedule = Schedule::doubling(ms(20), ms(1_000));

/// A connection following a Sentinel switch, asking the sentinels again until it is on
/// the new primary: 20, 40, … 250 ms.
pub(crate) const NEW_PRIMARY_SOUGHT: Schedule = Schedule::doubling(ms(20), ms(250));

/// A multi-lock or Redlock round whose members all failed with errors (none was busy):
/// at most 50 ms each, the pause drawn between half of that and that (members of other
/// clients do the same: they do not all come back at once).
pub(crate) const MEMBERS_FAILED: Schedule = Schedule::every(ms(50));

/// A fred client's routing task started again after fred ended it on an error (see
/// `routing_keeper.rs`), while starting it fails: 100, 200, … 2,000 ms.
pub(crate) const ROUTING_RESTARTED: Schedule = Schedule::doubling(ms(100), ms(2_000));

/// Key tracking's set-up on a connection, after a connection error: every 500 ms (a
/// reconnect of the listener or of the command connection tries at once).
pub(crate) const TRACKING_SET_UP_AGAIN: Schedule = Schedule::every(ms(500));

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The pauses of one call's retries (see [`Schedule::pauses`]).
#[derive(Clone, Debug)]
pub(crate) struct Pauses {
    schedule: Schedule,
    /// How many pauses were given.
    tries: u32,
}

impl Pauses {
    /// The pause before the next try (and the schedule moves on).
    pub(crate) fn next(&mut self) -> Duration {
        let pause = self.peek();
        self.tries = self.tries.saturating_add(1);
        pause
    }

    /// The pause [`Pauses::next`] would give now.
    pub(crate) fn peek(&self) -> Duration {
        let Schedule { first, growth, cap } = self.schedule;
        let pause = match growth {
            Growth::Linear => first.saturating_mul(self.tries.saturating_add(1)),
            Growth::Doubling => first.saturating_mul(2u32.saturating_pow(self.tries.min(31))),
        };
        pause.min(cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(schedule: Schedule, n: usize) -> Vec<u64> {
        let mut pauses = schedule.pauses();
        (0..n).map(|_| pauses.next().as_millis() as u64).collect()
    }

    #[test]
    fn each_schedule_gives_the_pauses_its_doc_names() {
        assert_eq!(first(NOT_SENT, 7), [20, 40, 60, 80, 100, 100, 100]);
        assert_eq!(first(UNLOCK_ASKED_AGAIN, 5), [20, 40, 60, 80, 100]);
        assert_eq!(first(QUEUE_LEFT, 2), [50, 100]);
        assert_eq!(first(UNSYNCED_UNDONE, 3), [50, 100, 150]);
        assert_eq!(first(OUTCOME_ASKED, 7), [20, 40, 80, 160, 320, 500, 500]);
        assert_eq!(
            first(DOUBT_SETTLED_LATER, 6),
            [100, 200, 400, 800, 1_600, 2_000]
        );
        assert_eq!(
            first(PERMITS_GIVEN_BACK, 7),
            [20, 40, 80, 160, 320, 640, 1_000]
        );
        assert_eq!(first(NEW_PRIMARY_SOUGHT, 6), [20, 40, 80, 160, 250, 250]);
        assert_eq!(first(TRACKING_SET_UP_AGAIN, 3), [500, 500, 500]);
        assert_eq!(first(MEMBERS_FAILED, 3), [50, 50, 50]);
        assert_eq!(
            first(ROUTING_RESTARTED, 6),
            [100, 200, 400, 800, 1_600, 2_000]
        );
    }

    #[test]
    fn peek_is_what_next_gives_and_long_runs_stay_at_the_cap() {
        let mut pauses = OUTCOME_ASKED.pauses();
        for _ in 0..100 {
            let peeked = pauses.peek();
            assert_eq!(pauses.next(), peeked);
            assert!(peeked <= ms(500));
        }
        assert_eq!(pauses.peek(), ms(500));
    }
}
