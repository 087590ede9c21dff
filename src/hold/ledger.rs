//! [`HoldLedger`]: how many holds each (lock, owner field) of this client has, as far as
//! this client knows, so that an acquire whose reply was lost can be settled.
//!
//! An acquire script is never re-sent blind (a second `HINCRBY` would count twice). When
//! its reply is lost (a timeout, a dropped connection), the engine reads the owner's count
//! in Redis and compares it with the count the ledger had before the call: one more means
//! the script ran, the same means it did not. Where Redis cannot be reached in time, the
//! entry is marked *in doubt* with the count before the call, and the next call of this
//! client on that lock and owner settles it first (undoing a hold that ran but was never
//! reported).
//!
//! Invariants: every acquisition the caller was told about adds one hold; every unlock
//! reply takes one (`Released` / `NotOwner` clear the entry); `force_unlock` clears the
//! lock's entries. A count whose lease has run out, or whose watchdog hold was found lost,
//! counts as zero: Redis no longer has it either.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::hold::state::{instant, millis, HoldSignal};
use crate::names::owner::LockOwner;

/// A lock name, the owner, and whether the holds are a write lock's (field
/// `<id>:<owner>:write`, beside the same owner's read holds on the same name).
type HoldKey = (Arc<str>, LockOwner, bool);

/// An entry lives as long as its holds, and a client may hold many: its start is kept as
/// ms since the signals' epoch ([`millis`]) and what only a doubt needs is boxed.
#[derive(Debug, Default)]
struct Entry {
    count: u32,
    /// When the owner took its first hold (for the hold-time metric).
    since_ms: u64,
    /// When the last lease-mode acquisition's lease ends; `None` for watchdog holds.
    lease_end: Option<Instant>,
    /// The hold's signal, for watchdog holds.
    lost: Option<Arc<HoldSignal>>,
    /// An acquire whose outcome could not be learned.
    doubt: Option<Box<Doubt>>,
}

#[derive(Debug, Default)]
struct Doubt {
    /// The count before that acquire; `None` once settled.
    before: Option<u32>,
    /// Serialises settling the doubt (the caller's next call and the background settler).
    settling: Arc<tokio::sync::Mutex<()>>,
}

impl Entry {
    fn in_doubt(&self) -> Option<u32> {
        self.doubt.as_ref().and_then(|d| d.before)
    }

    fn live_count(&self) -> u32 {
        let expired = self.lease_end.is_some_and(|end| Instant::now() >= end);
        let lost = self.lost.as_ref().is_some_and(|l| l.is_lost());
        if expired || lost {
            0
        } else {
            self.count
        }
    }
}

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct HoldLedger {
    holds: Mutex<HashMap<HoldKey, Entry>>,
    /// Acquires whose caller went away, finished in the background, by (lock, owner);
    /// and how many there are in all (0 on the happy path: nothing to look up).
    abandoned: Mutex<HashMap<HoldKey, Arc<Abandoned>>>,
    abandoned_now: Arc<AtomicUsize>,
}

/// The abandoned acquires of one (lock, owner) still running.
#[derive(Debug, Default)]
struct Abandoned {
    running: AtomicU32,
    done: Notify,
}

/// One abandoned acquire, finished in the background (its script, then giving back the
/// hold it took): until this is dropped, the owner's next call on the lock waits (see
/// [`HoldLedger::abandoned_finished`]), so that neither an `unlock()` nor a new acquisition
/// of the owner runs between the abandoned hold and its undoing (redisson#7272's race).
#[derive(Debug)]
pub(crate) struct AbandonedAcquire {
    of: Arc<Abandoned>,
    now: Arc<AtomicUsize>,
}

impl Drop for AbandonedAcquire {
    fn drop(&mut self) {
        self.of.running.fetch_sub(1, Ordering::AcqRel);
        self.now.fetch_sub(1, Ordering::AcqRel);
        self.of.done.notify_waiters();
    }
}

impl HoldLedger {
    fn holds(&self) -> MutexGuard<'_, HashMap<HoldKey, Entry>> {
        // Every critical section is one map operation: a poisoned lock is consistent.
        self.holds.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The holds `owner` has on `name` (its write holds when `write`) as far as this client knows (0 once their lease
    /// ran out or the watchdog found them lost).
    pub(crate) fn known(&self, name: &Arc<str>, owner: LockOwner, write: bool) -> u32 {
        self.holds()
            .get(&(name.clone(), owner, write))
            .map_or(0, Entry::live_count)
    }

    /// One acquisition reported to the caller.
    pub(crate) fn acquired(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        lease_end: Option<Instant>,
        lost: Arc<HoldSignal>,
    ) {
        let mut holds = self.holds();
        let entry = holds.entry((name.clone(), owner, write)).or_default();
        let live = entry.live_count();
        if live == 0 {
            entry.since_ms = millis(Instant::now());
        }
        entry.count = live + 1;
        entry.lease_end = lease_end;
        entry.lost = lease_end.is_none().then_some(lost);
    }

    /// One hold given back (`released`: the last one, or the lock was not held at all).
    /// Returns how long the owner held the lock when this gave back its last hold.
    pub(crate) fn released(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        released: bool,
    ) -> Option<std::time::Duration> {
        let mut holds = self.holds();
        let key = (name.clone(), owner, write);
        if released {
            holds.remove(&key).map(|e| instant(e.since_ms).elapsed())
        } else {
            if let Some(entry) = holds.get_mut(&key) {
                entry.count = entry.count.saturating_sub(1);
            }
            None
        }
    }

    /// Every hold on `name` is gone (force unlock).
    pub(crate) fn forget_lock(&self, name: &str) {
        self.holds().retain(|(n, _, _), _| &**n != name);
    }

    /// An acquire whose outcome is unknown: `before` is the count before it.
    pub(crate) fn mark_in_doubt(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        before: u32,
    ) {
        let mut holds = self.holds();
        let entry = holds.entry((name.clone(), owner, write)).or_default();
        entry.count = before;
        entry.doubt.get_or_insert_with(Default::default).before = Some(before);
    }

    /// The count before an acquire in doubt, if one is.
    pub(crate) fn in_doubt(&self, name: &Arc<str>, owner: LockOwner, write: bool) -> Option<u32> {
        self.holds()
            .get(&(name.clone(), owner, write))
            .and_then(Entry::in_doubt)
    }

    /// The lock that serialises settling the doubt on this entry, if it is in doubt.
    pub(crate) fn settling(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
    ) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.holds()
            .get(&(name.clone(), owner, write))
            .filter(|e| e.in_doubt().is_some())
            .and_then(|e| e.doubt.as_ref().map(|d| d.settling.clone()))
    }

    /// An acquire of `owner` on `name` was abandoned by its caller and is being finished
    /// in the background: the owner's next call waits for the returned value's drop.
    pub(crate) fn abandon(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
    ) -> AbandonedAcquire {
        let mut abandoned = self.abandoned.lock().unwrap_or_else(|p| p.into_inner());
        abandoned.retain(|_, a| a.running.load(Ordering::Acquire) > 0);
        let of = abandoned
            .entry((name.clone(), owner, write))
            .or_default()
            .clone();
        of.running.fetch_add(1, Ordering::AcqRel);
        self.abandoned_now.fetch_add(1, Ordering::AcqRel);
        AbandonedAcquire {
            of,
            now: self.abandoned_now.clone(),
        }
    }

    /// Completes once no abandoned acquire of `owner` on `name` is running (at once on
    /// the happy path: one atomic load).
    pub(crate) async fn abandoned_finished(&self, name: &Arc<str>, owner: LockOwner, write: bool) {
        if self.abandoned_now.load(Ordering::Acquire) == 0 {
            return;
        }
        let of = {
            let abandoned = self.abandoned.lock().unwrap_or_else(|p| p.into_inner());
            abandoned.get(&(name.clone(), owner, write)).cloned()
        };
        let Some(of) = of else {
            return;
        };
        loop {
            let done = of.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if of.running.load(Ordering::Acquire) == 0 {
                return;
            }
            done.await;
        }
    }

    /// The doubt is settled; the owner has `count` holds known to the caller.
    pub(crate) fn settled(&self, name: &Arc<str>, owner: LockOwner, write: bool, count: u32) {
        let mut holds = self.holds();
        let key = (name.clone(), owner, write);
        if count == 0 {
            holds.remove(&key);
        } else if let Some(entry) = holds.get_mut(&key) {
            if let Some(doubt) = entry.doubt.as_mut() {
                doubt.before = None;
            }
            entry.count = count;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const OF: LockOwner = LockOwner::from_raw(1);
    const OA: LockOwner = LockOwner::from_raw(2);
    const OB: LockOwner = LockOwner::from_raw(3);

    #[tokio::test]
    async fn counts_follow_acquisitions_and_releases() {
        let ledger = HoldLedger::default();
        let name: Arc<str> = Arc::from("n");
        assert_eq!(ledger.known(&name, OF, false), 0);
        let signal = Arc::new(HoldSignal::new(Instant::now(), 60_000, 10));
        ledger.acquired(&name, OF, false, None, signal.clone());
        ledger.acquired(&name, OF, false, None, signal);
        assert_eq!(ledger.known(&name, OF, false), 2);
        ledger.released(&name, OF, false, false);
        assert_eq!(ledger.known(&name, OF, false), 1);
        ledger.released(&name, OF, false, true);
        assert_eq!(ledger.known(&name, OF, false), 0);
    }

    #[tokio::test]
    async fn expired_leases_and_lost_holds_count_zero() {
        let ledger = HoldLedger::default();
        let name: Arc<str> = Arc::from("n");
        let signal = || Arc::new(HoldSignal::new(Instant::now(), 60_000, 10));
        ledger.acquired(&name, OA, false, Some(Instant::now()), signal());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(ledger.known(&name, OA, false), 0);
        let lost = signal();
        ledger.acquired(&name, OB, false, None, lost.clone());
        assert_eq!(ledger.known(&name, OB, false), 1);
        lost.lose(crate::hold::state::Cause::FieldGone);
        assert_eq!(ledger.known(&name, OB, false), 0);
    }

    #[tokio::test]
    async fn doubt_is_recorded_and_settled() {
        let ledger = HoldLedger::default();
        let name: Arc<str> = Arc::from("n");
        ledger.mark_in_doubt(&name, OF, false, 0);
        assert_eq!(ledger.in_doubt(&name, OF, false), Some(0));
        ledger.settled(&name, OF, false, 0);
        assert_eq!(ledger.in_doubt(&name, OF, false), None);
        ledger.forget_lock("n");
        assert_eq!(ledger.known(&name, OF, false), 0);
    }
}
