//! Renewal rounds in flight: which watchdog holds a round is re-arming right now, so that
//! an unlock of one of them is sent only once that round is over.
//!
//! Why: a round's script can reach Redis after an unlock that was called after the round
//! took its snapshot. Two tasks race to the connection, and fred sends a call again after
//! a reconnect when the connection it was written to dropped. A renewal that lands after
//! a partial unlock re-arms the watchdog's lease on what is left. If the holds left were
//! taken with a lease (10 s, say), the lock then lives 30 s. The same happens after a full
//! release followed by an acquisition with a lease. When the unlock waits until the round
//! is over, its own `PEXPIRE` is the last one.
//!
//! Invariants:
//! * a round is registered in the same critical section of the registry that checks its
//!   holds still have watchdog holds (`HoldRegistry::start_round`), which marks each hold
//!   it renews with the round's id (on the hold's slot, which outlives the registration
//!   while an unlock is in flight). So an unlock has either removed its watchdog hold
//!   before (and the round does not renew it) or finds its slot marked with a round that
//!   is still listed here;
//! * round ids only grow, so a mark of a round that is over names no listed round;
//! * a round leaves when its send is over: answered, failed or dropped ([`InFlight`]'s
//!   `Drop`);
//! * an unlock waits for a round at most the bound it is given, then goes ahead.
//!
//! Cost: a round stores one id per hold it renews (no allocation); an unlock with no
//! round in flight makes one atomic load.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// A round's id; [`NO_ROUND`] marks a hold no round has renewed.
pub(crate) type RoundId = u32;

/// The mark of a hold that no round has renewed yet.
pub(crate) const NO_ROUND: RoundId = 0;

/// The rounds in flight (usually none or one).
#[derive(Debug, Default)]
pub(crate) struct RoundsInFlight {
    /// How many rounds are in flight: an unlock looks no further when there are none.
    count: AtomicUsize,
    /// The last id given out.
    last_id: AtomicU32,
    rounds: Mutex<Vec<Arc<Round>>>,
}

/// One round: its id, and whether it is over.
#[derive(Debug)]
struct Round {
    id: RoundId,
    over: AtomicBool,
    ended: Notify,
}

impl Round {
    async fn over(&self) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.over.load(Ordering::Acquire) {
                return;
            }
            ended.await;
        }
    }
}

/// A round registered in flight; it leaves when this drops.
#[derive(Debug)]
pub(crate) struct InFlight<'r> {
    rounds: &'r RoundsInFlight,
    round: Option<Arc<Round>>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(round) = self.round.take() {
            self.rounds.end(&round);
        }
    }
}

impl RoundsInFlight {
    /// The id of the next round (never [`NO_ROUND`]; ids only grow).
    pub(crate) fn next_id(&self) -> RoundId {
        // 2^32 rounds are 1,361 years of the default 10 s period.
        self.last_id
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1)
            .max(1)
    }

    /// Registers round `id` in flight when it renews anything (`renews`).
    pub(crate) fn start(&self, id: RoundId, renews: bool) -> InFlight<'_> {
        if !renews {
            return InFlight {
                rounds: self,
                round: None,
            };
        }
        let round = Arc::new(Round {
            id,
            over: AtomicBool::new(false),
            ended: Notify::new(),
        });
        self.lock().push(round.clone());
        self.count.fetch_add(1, Ordering::Release);
        InFlight {
            rounds: self,
            round: Some(round),
        }
    }

    fn end(&self, round: &Arc<Round>) {
        self.lock().retain(|r| !Arc::ptr_eq(r, round));
        self.count.fetch_sub(1, Ordering::Release);
        round.over.store(true, Ordering::Release);
        round.ended.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Round>>> {
        // Each critical section is one push, scan or retain: a poisoned lock is consistent.
        self.rounds.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether any round is in flight (one atomic load).
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// Completes once round `mark` is over (when it is still in flight), or after
    /// `limit`. `None`: the hold's mark is unknown (its slot is gone): every round in
    /// flight is waited for.
    pub(crate) async fn renewal_over(&self, mark: Option<RoundId>, limit: Duration) {
        if !self.any() || mark == Some(NO_ROUND) {
            return;
        }
        let renewing: Vec<Arc<Round>> = self
            .lock()
            .iter()
            .filter(|round| mark.is_none_or(|id| round.id == id))
            .cloned()
            .collect();
        if renewing.is_empty() {
            return;
        }
        let all_over = futures::future::join_all(renewing.iter().map(|round| round.over()));
        if tokio::time::timeout(limit, all_over).await.is_err() {
            tracing::debug!(
                ?limit,
                "a renewal round of the hold is still in flight; unlocking anyway"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unlock_waits_for_the_round_that_marked_its_hold_only() {
        let rounds = RoundsInFlight::default();
        let id = rounds.next_id();
        assert_ne!(id, NO_ROUND);
        let in_flight = rounds.start(id, true);
        let limit = Duration::from_secs(5);
        // A hold no round renewed, or one an earlier round renewed: no wait.
        for mark in [Some(NO_ROUND), Some(id - 1)] {
            tokio::time::timeout(Duration::from_millis(100), rounds.renewal_over(mark, limit))
                .await
                .expect("a hold the round does not renew waits for nothing");
        }
        // The round's hold, and a hold whose mark is unknown: wait until the round is over.
        let mut waiting = Box::pin(rounds.renewal_over(Some(id), limit));
        let mut unknown = Box::pin(rounds.renewal_over(None, limit));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        assert!(futures::poll!(unknown.as_mut()).is_pending());
        drop(in_flight);
        tokio::time::timeout(Duration::from_millis(100), async {
            waiting.await;
            unknown.await;
        })
        .await
        .expect("the round is over");
        assert!(!rounds.any());
        assert!(rounds.lock().is_empty());
        // A round renewing nothing is not registered; ids only grow.
        let next = rounds.next_id();
        assert!(next > id);
        let none = rounds.start(next, false);
        assert!(!rounds.any());
        drop(none);
        assert!(!rounds.any());
    }

    #[tokio::test(start_paused = true)]
    async fn an_unlock_waits_no_longer_than_its_bound() {
        let rounds = RoundsInFlight::default();
        let id = rounds.next_id();
        let _in_flight = rounds.start(id, true);
        let started = tokio::time::Instant::now();
        rounds
            .renewal_over(Some(id), Duration::from_millis(300))
            .await;
        assert_eq!(started.elapsed(), Duration::from_millis(300));
    }
}
