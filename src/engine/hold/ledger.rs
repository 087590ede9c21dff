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
//! The counts are kept in the registry's slot of each (lock, owner) (a [`Book`]), beside
//! what the watchdog renews: one key and one map entry per pair, as a client may hold
//! many locks.
//!
//! Invariants: every acquisition the caller was told about adds one hold; every unlock
//! reply takes one (`Released` / `NotOwner` clear the entry); `force_unlock` clears the
//! lock's entries but for the acquisitions reported while it ran (a [`ForceWindow`]: a
//! waiter of this client woken by the force unlock's own message takes the lock before
//! the force unlock's reply is read, and keeps its count). A count whose lease has run out, or whose watchdog hold was found lost,
//! counts as zero: Redis no longer has it either.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::engine::background::{BackgroundWork, WorkToken};
use crate::engine::hold::book::Book;
use crate::engine::hold::registry::{HoldKey, HoldRegistry};
use crate::engine::hold::state::HoldSignal;
use crate::names::owner::LockOwner;

/// See the module docs. The counts live in the registry's slots ([`HoldRegistry::book`]).
#[derive(Debug)]
pub(crate) struct HoldLedger {
    registry: Arc<HoldRegistry>,
    /// Calls of an owner finished in the background (acquires whose caller went away,
    /// dropped guards' releases), by (lock, owner). How many run in all is the client's
    /// background work (`work`), which counts each of them (0 on the happy path: nothing
    /// to look up).
    abandoned: Mutex<HashMap<HoldKey, Arc<Abandoned>>>,
    /// The force unlocks running, by lock name, with the acquisitions reported meanwhile;
    /// and how many run in all (0 on the happy path: nothing to record).
    forcing: Arc<Mutex<HashMap<Arc<str>, Forcing>>>,
    forcing_now: Arc<AtomicUsize>,
    /// The client's background work, which every background call is counted in (and
    /// a stop waits for).
    work: Arc<BackgroundWork>,
}

/// The force unlocks of one lock name running, and the acquisitions of this client on
/// it reported since the first of them began, by (owner, write).
#[derive(Debug, Default)]
struct Forcing {
    running: u32,
    taken: HashMap<(LockOwner, bool), u32>,
}

/// A force unlock of one lock name running: opened before its script is sent, so that
/// [`ForceWindow::forget`] keeps what this client's owners took while it ran.
#[derive(Debug)]
pub(crate) struct ForceWindow {
    name: Arc<str>,
    forcing: Arc<Mutex<HashMap<Arc<str>, Forcing>>>,
    now: Arc<AtomicUsize>,
    registry: Arc<HoldRegistry>,
}

impl ForceWindow {
    /// The force unlock wiped the lock's hash: every count of the lock ends, but those
    /// of the acquisitions reported while it ran, which are set to how many there were.
    ///
    /// The window's lock is held across the reading and the forgetting, as
    /// [`HoldLedger::acquired`] holds it across its book and its record: an acquisition
    /// reported meanwhile is either both counted and kept, or counted after the forget.
    pub(crate) fn forget(self) {
        let forcing = self.forcing.lock().unwrap_or_else(|p| p.into_inner());
        let taken = forcing.get(&self.name).map(|f| &f.taken);
        self.registry.forget_books(&self.name, |owner, write| {
            taken.and_then(|t| t.get(&(owner, write)).copied())
        });
    }
}

impl Drop for ForceWindow {
    fn drop(&mut self) {
        let mut forcing = self.forcing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = forcing.get_mut(&self.name) {
            f.running = f.running.saturating_sub(1);
            if f.running == 0 {
                forcing.remove(&self.name);
            }
        }
        self.now.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The background calls of one (lock, owner) still running.
#[derive(Debug, Default)]
struct Abandoned {
    running: AtomicU32,
    done: Notify,
}

/// One call of an owner finished in the background: an acquire its caller abandoned (its
/// script, then giving back the hold it took), or a dropped guard's release. Until this
/// is dropped, the owner's next call on the lock waits (see
/// [`HoldLedger::background_over`]), so that the owner's calls keep the order it made
/// them in: neither an `unlock()` nor a new acquisition runs between an abandoned hold and
/// its undoing (redisson#7272's race), and no acquisition runs before the release of a
/// guard dropped earlier (which would otherwise take one count of the new hold, or the
/// whole of it when the old one had expired).
#[derive(Debug)]
pub(crate) struct BackgroundCall {
    of: Arc<Abandoned>,
    /// Counted in the client's background work until dropped (after `of` is told).
    _work: WorkToken,
}

impl Drop for BackgroundCall {
    fn drop(&mut self) {
        self.of.running.fetch_sub(1, Ordering::AcqRel);
        self.of.done.notify_waiters();
    }
}

impl HoldLedger {
    /// The ledger of the holds `registry` registers; its background calls are counted in
    /// `work`.
    pub(crate) fn new(registry: Arc<HoldRegistry>, work: Arc<BackgroundWork>) -> HoldLedger {
        HoldLedger {
            registry,
            abandoned: Mutex::default(),
            forcing: Arc::default(),
            forcing_now: Arc::default(),
            work,
        }
    }

    /// Runs `f` on the book of (name, owner, write), if there is one.
    fn read<R>(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        f: impl FnOnce(&Book) -> R,
    ) -> Option<R> {
        let key: HoldKey = (name.clone(), owner, write);
        self.registry.book(&key, false, |book| book.as_ref().map(f))
    }

    /// Runs `f` on the book of (name, owner, write) (`None` in it: there is none; `f` may
    /// make or end one).
    fn write<R>(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        f: impl FnOnce(&mut Option<Book>) -> R,
    ) -> R {
        let key: HoldKey = (name.clone(), owner, write);
        self.registry.book(&key, true, f)
    }

    /// The holds `owner` has on `name` (its write holds when `write`) as far as this
    /// client knows (0 once their lease ran out or the watchdog found them lost).
    pub(crate) fn known(&self, name: &Arc<str>, owner: LockOwner, write: bool) -> u32 {
        self.read(name, owner, write, Book::live_count).unwrap_or(0)
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
        if self.forcing_now.load(Ordering::SeqCst) == 0 {
            self.write(name, owner, write, |book| {
                Book::acquired(book, lease_end, lost)
            });
            return;
        }
        // A force unlock runs: its window's lock is held across the book and the record
        // (lock order: the windows, then the registry), so that its forget never falls
        // between the two.
        let mut forcing = self.forcing.lock().unwrap_or_else(|p| p.into_inner());
        self.write(name, owner, write, |book| {
            Book::acquired(book, lease_end, lost)
        });
        if let Some(f) = forcing.get_mut(name) {
            *f.taken.entry((owner, write)).or_default() += 1;
        }
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
        self.write(name, owner, write, |book| Book::released(book, released))
    }

    /// A force unlock of `name` begins (before its script is sent): see [`ForceWindow`].
    pub(crate) fn force_window(&self, name: &Arc<str>) -> ForceWindow {
        let mut forcing = self.forcing.lock().unwrap_or_else(|p| p.into_inner());
        forcing.entry(name.clone()).or_default().running += 1;
        self.forcing_now.fetch_add(1, Ordering::SeqCst);
        ForceWindow {
            name: name.clone(),
            forcing: self.forcing.clone(),
            now: self.forcing_now.clone(),
            registry: self.registry.clone(),
        }
    }

    /// An acquire whose outcome is unknown: `before` is the count before it.
    pub(crate) fn mark_in_doubt(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        before: u32,
    ) {
        self.write(name, owner, write, |book| Book::mark_in_doubt(book, before));
    }

    /// The count before an acquire in doubt, if one is.
    pub(crate) fn in_doubt(&self, name: &Arc<str>, owner: LockOwner, write: bool) -> Option<u32> {
        self.read(name, owner, write, Book::in_doubt).flatten()
    }

    /// The lock that serialises settling the doubt on this entry, if it is in doubt.
    pub(crate) fn settling(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
    ) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.read(name, owner, write, Book::settling).flatten()
    }

    /// A call of `owner` on `name` (an acquire its caller abandoned, a dropped guard's
    /// release) is being finished in the background: the owner's next call waits for the
    /// returned value's drop.
    pub(crate) fn background_call(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
    ) -> BackgroundCall {
        let mut abandoned = self.abandoned.lock().unwrap_or_else(|p| p.into_inner());
        abandoned.retain(|_, a| a.running.load(Ordering::Acquire) > 0);
        let of = abandoned
            .entry((name.clone(), owner, write))
            .or_default()
            .clone();
        of.running.fetch_add(1, Ordering::AcqRel);
        BackgroundCall {
            of,
            _work: self.work.start(),
        }
    }

    /// Whether any background work of this client is running (an abandoned acquire, a
    /// dropped guard's release, a dropped permit's give-back): one atomic load.
    pub(crate) fn any_in_background(&self) -> bool {
        self.work.running() != 0
    }

    /// Completes once no background call of `owner` on `name` is running (at once on the
    /// happy path: one atomic load).
    pub(crate) async fn background_over(&self, name: &Arc<str>, owner: LockOwner, write: bool) {
        if !self.any_in_background() {
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
        self.write(name, owner, write, |book| Book::settled(book, count));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ledger() -> HoldLedger {
        HoldLedger::new(Arc::new(HoldRegistry::new(30_000, None)), Arc::default())
    }

    const OF: LockOwner = LockOwner::from_raw(1);
    const OA: LockOwner = LockOwner::from_raw(2);
    const OB: LockOwner = LockOwner::from_raw(3);

    #[tokio::test]
    async fn counts_follow_acquisitions_and_releases() {
        let ledger = ledger();
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
        let ledger = ledger();
        let name: Arc<str> = Arc::from("n");
        let signal = || Arc::new(HoldSignal::new(Instant::now(), 60_000, 10));
        ledger.acquired(&name, OA, false, Some(Instant::now()), signal());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(ledger.known(&name, OA, false), 0);
        let lost = signal();
        ledger.acquired(&name, OB, false, None, lost.clone());
        assert_eq!(ledger.known(&name, OB, false), 1);
        lost.lose(crate::engine::hold::state::Cause::FieldGone);
        assert_eq!(ledger.known(&name, OB, false), 0);
    }

    #[tokio::test]
    async fn doubt_is_recorded_and_settled() {
        let ledger = ledger();
        let name: Arc<str> = Arc::from("n");
        ledger.mark_in_doubt(&name, OF, false, 0);
        assert_eq!(ledger.in_doubt(&name, OF, false), Some(0));
        ledger.settled(&name, OF, false, 0);
        assert_eq!(ledger.in_doubt(&name, OF, false), None);
        ledger.force_window(&name).forget();
        assert_eq!(ledger.known(&name, OF, false), 0);
    }

    #[tokio::test]
    async fn a_force_unlock_keeps_what_was_taken_while_it_ran() {
        let ledger = ledger();
        let name: Arc<str> = Arc::from("n");
        let other: Arc<str> = Arc::from("m");
        let signal = || Arc::new(HoldSignal::new(Instant::now(), 60_000, 10));
        // Before the force unlock: OF twice (write), OA once; OF on another lock.
        ledger.acquired(&name, OF, true, None, signal());
        ledger.acquired(&name, OF, true, None, signal());
        ledger.acquired(&name, OA, false, None, signal());
        ledger.acquired(&other, OF, false, None, signal());
        let window = ledger.force_window(&name);
        // While it runs: a waiter OB takes the write lock its message freed; OF re-enters.
        ledger.acquired(&name, OB, true, None, signal());
        ledger.acquired(&name, OF, true, None, signal());
        ledger.acquired(&other, OA, false, None, signal());
        window.forget();
        assert_eq!(ledger.known(&name, OB, true), 1, "the woken waiter's hold");
        assert_eq!(
            ledger.known(&name, OF, true),
            1,
            "only the re-entry after the wipe"
        );
        assert_eq!(ledger.known(&name, OA, false), 0);
        assert_eq!(
            ledger.known(&other, OF, false),
            1,
            "another lock keeps its counts"
        );
        assert_eq!(ledger.known(&other, OA, false), 1);
        // Closed, the window records nothing more, and a later force forgets them all.
        assert_eq!(ledger.forcing_now.load(Ordering::Acquire), 0);
        assert!(ledger.forcing.lock().unwrap().is_empty());
        ledger.force_window(&name).forget();
        assert_eq!(ledger.known(&name, OB, true), 0);
    }

    #[tokio::test]
    async fn a_force_unlock_never_forgets_between_a_book_and_its_record() {
        // Every acquisition below is reported while a window is open, so every one is
        // kept. Each round, one forget falls somewhere among a burst of acquisitions;
        // the count is checked after each round (a later forget would mend a wrong one).
        const ROUNDS: u32 = 2_000;
        const BURST: u32 = 50;
        let ledger = Arc::new(ledger());
        let name: Arc<str> = Arc::from("n");
        let _outer = ledger.force_window(&name);
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let taker = {
            let (ledger, name, barrier) = (ledger.clone(), name.clone(), barrier.clone());
            std::thread::spawn(move || {
                let signal = Arc::new(HoldSignal::new(Instant::now(), 60_000, 10));
                for _ in 0..ROUNDS {
                    barrier.wait();
                    for _ in 0..BURST {
                        ledger.acquired(&name, OB, true, None, signal.clone());
                    }
                    barrier.wait();
                }
            })
        };
        let mut wrong = 0;
        for round in 1..=ROUNDS {
            barrier.wait();
            for _ in 0..round % 7 {
                std::hint::spin_loop();
            }
            ledger.force_window(&name).forget();
            barrier.wait();
            if ledger.known(&name, OB, true) != round * BURST {
                wrong += 1;
                ledger.force_window(&name).forget();
            }
        }
        taker.join().unwrap();
        assert_eq!(wrong, 0, "rounds whose count a forget took one from");
    }
}
