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
//!   holds still have watchdog holds (`HoldRegistry::start_round`). So an unlock has
//!   either removed its watchdog hold before (and the round does not renew it) or finds
//!   the round here;
//! * a round leaves when its send is over: answered, failed or dropped ([`InFlight`]'s
//!   `Drop`);
//! * an unlock waits for a round at most the bound it is given, then goes ahead.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::hold::registry::HoldKey;

/// The rounds in flight (usually none or one).
#[derive(Debug, Default)]
pub(crate) struct RoundsInFlight {
    /// How many rounds are in flight: an unlock looks no further when there are none.
    count: AtomicUsize,
    rounds: Mutex<Vec<Arc<Round>>>,
}

/// One round: the holds it renews, and whether it is over.
#[derive(Debug)]
struct Round {
    holds: HashSet<HoldKey>,
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
    /// Registers a round renewing `holds` (nothing when it renews none).
    pub(crate) fn start(&self, holds: HashSet<HoldKey>) -> InFlight<'_> {
        if holds.is_empty() {
            return InFlight {
                rounds: self,
                round: None,
            };
        }
        let round = Arc::new(Round {
            holds,
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

    /// Completes once no round in flight renews `hold`, or after `limit`. Without rounds
    /// in flight: one atomic load.
    pub(crate) async fn renewal_over(&self, hold: &HoldKey, limit: Duration) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let renewing: Vec<Arc<Round>> = self
            .lock()
            .iter()
            .filter(|round| round.holds.contains(hold))
            .cloned()
            .collect();
        if renewing.is_empty() {
            return;
        }
        let all_over = futures::future::join_all(renewing.iter().map(|round| round.over()));
        if tokio::time::timeout(limit, all_over).await.is_err() {
            tracing::debug!(lock = %hold.0, owner = %hold.1, ?limit, "a renewal round of the hold is still in flight; unlocking anyway");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::owner::LockOwner;

    fn hold(name: &str) -> HoldKey {
        (Arc::from(name), LockOwner::from_raw(1), false)
    }

    #[tokio::test]
    async fn an_unlock_waits_for_the_round_renewing_its_hold_only() {
        let rounds = RoundsInFlight::default();
        let in_flight = rounds.start([hold("a")].into_iter().collect());
        let limit = Duration::from_secs(5);
        // Another hold: no wait.
        tokio::time::timeout(
            Duration::from_millis(100),
            rounds.renewal_over(&hold("b"), limit),
        )
        .await
        .expect("a hold the round does not renew waits for nothing");
        // The round's hold: waits until the round is over.
        let held = hold("a");
        let mut waiting = Box::pin(rounds.renewal_over(&held, limit));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(in_flight);
        tokio::time::timeout(Duration::from_millis(100), waiting)
            .await
            .expect("the round is over");
        assert_eq!(rounds.count.load(Ordering::Acquire), 0);
        assert!(rounds.lock().is_empty());
        // A round renewing nothing is not registered.
        let none = rounds.start(HashSet::new());
        assert_eq!(rounds.count.load(Ordering::Acquire), 0);
        drop(none);
        assert_eq!(rounds.count.load(Ordering::Acquire), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unlock_waits_no_longer_than_its_bound() {
        let rounds = RoundsInFlight::default();
        let _in_flight = rounds.start([hold("a")].into_iter().collect());
        let started = tokio::time::Instant::now();
        rounds
            .renewal_over(&hold("a"), Duration::from_millis(300))
            .await;
        assert_eq!(started.elapsed(), Duration::from_millis(300));
    }
}
