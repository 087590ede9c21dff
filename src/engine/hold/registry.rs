//! [`HoldRegistry`]: every hold this client has, by (lock, owner), each with its
//! [`HoldSignal`]; what the watchdog renews and what the sentry watches.
//!
//! Invariants:
//! * A watchdog hold (taken without a lease) is registered with its count: each watchdog
//!   acquisition adds one, each unlock removes one, and the entry leaves with its last
//!   hold (unless a lease hold keeps it), with `force_unlock`, or when found lost. Only
//!   entries with watchdog holds are renewed.
//! * A lease hold marks its entry leased until the owner's full release (or `NotOwner`),
//!   a force unlock, or its loss; it is never renewed, only watched (at risk on a fault
//!   or near its lease's end, verified after a reconnect).
//! * A renewal round renews only holds that still have watchdog holds when it starts
//!   ([`HoldRegistry::start_round`]), and is registered in flight in the same critical
//!   section, so that an unlock sent later waits for it (see [`crate::engine::hold::rounds`]).
//! * Every critical section is one map operation, and no `.await` happens under the
//!   map's lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fred::prelude::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::engine::hold::book::Book;
use crate::engine::hold::held::{Forced, Held};
use crate::engine::hold::rounds::{InFlight, NO_ROUND, RoundsInFlight};
use crate::engine::hold::state::{Cause, HoldSignal, Transition, millis};
use crate::engine::hold::tracking::queue::TrackQueue;
use crate::names::owner::LockOwner;

/// A lock name, the owner that holds it, and whether the hold is a write lock's (whose
/// field is `<id>:<owner>:write`, beside the same owner's read holds on the same name).
pub(crate) type HoldKey = (Arc<str>, LockOwner, bool);

/// An entry lives as long as its hold, and a client may hold many: it is kept small
/// (what is held is shared with the handle that took it; script arguments are built per
/// round).
#[derive(Debug)]
struct Entry {
    /// What is held, as the watchdog and the sentry send it.
    held: Arc<dyn Held>,
    watchdog_holds: u32,
    leased: bool,
    signal: Arc<HoldSignal>,
}

/// One registered hold, as a renewal round or a verification sends it.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) hold: HoldKey,
    pub(crate) key: Value,
    pub(crate) held: Arc<dyn Held>,
    pub(crate) slot: u16,
    /// Renewed by the watchdog (else a lease hold: checked, never re-armed).
    pub(crate) renewed: bool,
    pub(crate) signal: Arc<HoldSignal>,
    /// The expiry this client had set when the snapshot was taken (ms since the clock's
    /// origin): what a verification sent after it is compared with. A write of this
    /// client sent later (a re-entry, a renewal) can only lengthen the lease, and the
    /// check may have run before it.
    pub(crate) expires_ms: u64,
    /// The signal's writes when the snapshot was taken ([`HoldSignal::wrote_since`]).
    pub(crate) writes: u32,
}

impl Snapshot {
    /// Registered hold `hold` as it is now.
    fn of(hold: &HoldKey, entry: &Entry) -> Snapshot {
        Snapshot {
            hold: hold.clone(),
            key: Value::from(&*hold.0),
            held: entry.held.clone(),
            slot: fred::util::redis_keyslot(hold.0.as_bytes()),
            renewed: entry.watchdog_holds > 0,
            signal: entry.signal.clone(),
            expires_ms: entry.signal.expires_ms(),
            writes: entry.signal.writes(),
        }
    }
}

/// Writes in flight of one owner to one key ([`HoldRegistry::writing`]): counted as
/// finished when dropped.
#[derive(Debug, Default)]
pub(crate) struct Writing([Option<Arc<HoldSignal>>; 2]);

impl Drop for Writing {
    fn drop(&mut self) {
        for signal in self.0.iter().flatten() {
            signal.write_finished();
        }
    }
}

/// One (lock, owner)'s slot: its registered hold ([`Entry`]: what the watchdog renews
/// and the sentry watches) and its [`Book`] (the ledger's count, see
/// [`crate::engine::hold::ledger`]). They come and go on their own terms (a count outlives its
/// registration while an unlock is in flight, a doubt needs no hold); the slot leaves
/// with the later, and one key serves both.
#[derive(Debug, Default)]
struct Slot {
    entry: Option<Entry>,
    book: Option<Book>,
}

impl Slot {
    fn is_empty(&self) -> bool {
        self.entry.is_none() && self.book.is_none()
    }
}

/// The slots, and how many of them have watchdog holds.
#[derive(Debug, Default)]
struct Entries {
    map: HashMap<HoldKey, Slot>,
    renewed: usize,
}

impl Entries {
    fn get(&self, hold: &HoldKey) -> Option<&Entry> {
        self.map.get(hold).and_then(|slot| slot.entry.as_ref())
    }

    fn get_mut(&mut self, hold: &HoldKey) -> Option<&mut Entry> {
        self.map.get_mut(hold).and_then(|slot| slot.entry.as_mut())
    }

    /// The registered holds.
    fn iter(&self) -> impl Iterator<Item = (&HoldKey, &Entry)> {
        self.map
            .iter()
            .filter_map(|(k, slot)| slot.entry.as_ref().map(|e| (k, e)))
    }

    fn remove(&mut self, hold: &HoldKey) {
        let Some(slot) = self.map.get_mut(hold) else {
            return;
        };
        if let Some(entry) = slot.entry.take()
            && entry.watchdog_holds > 0
        {
            self.renewed -= 1;
        }
        if slot.is_empty() {
            self.map.remove(hold);
        }
    }

    /// Keeps the registered holds that `keep` keeps (it may change them).
    fn retain(&mut self, mut keep: impl FnMut(&HoldKey, &mut Entry) -> bool) {
        let mut dropped_renewed = 0;
        self.map.retain(|k, slot| {
            if let Some(e) = slot.entry.as_mut() {
                let renewed = e.watchdog_holds > 0;
                if !keep(k, e) {
                    if renewed {
                        dropped_renewed += 1;
                    }
                    slot.entry = None;
                }
            }
            !slot.is_empty()
        });
        self.renewed -= dropped_renewed;
    }
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct HoldRegistry {
    held: Mutex<Entries>,
    /// Woken when the first watchdog hold arrives (the renewal task idles before).
    first_hold: Notify,
    /// When the sentry next scans (ms since the signals' epoch), and its wake-up for a
    /// lease hold whose deadline comes sooner.
    next_scan_ms: AtomicU64,
    sooner: Notify,
    /// A sentinel announced a failover and the data connection has not been re-made
    /// since: checks would still reach the old primary.
    failover_pending: AtomicBool,
    /// The new primary's `host:port` a sentinel announced.
    failover_to: Mutex<Option<String>>,
    /// The renewal rounds in flight and the holds they renew.
    rounds: RoundsInFlight,
    /// The watchdog lease and the margins.
    pub(crate) watchdog_ms: u64,
    margin: Option<Duration>,
    /// What the tracker (`CLIENT TRACKING`) has to read or check next.
    pub(crate) tracking: TrackQueue,
}

impl HoldRegistry {
    pub(crate) fn new(watchdog_ms: u64, margin: Option<Duration>) -> HoldRegistry {
        HoldRegistry {
            held: Mutex::default(),
            first_hold: Notify::new(),
            next_scan_ms: AtomicU64::new(0),
            sooner: Notify::new(),
            failover_pending: AtomicBool::new(false),
            failover_to: Mutex::new(None),
            rounds: RoundsInFlight::default(),
            watchdog_ms,
            margin,
            tracking: TrackQueue::default(),
        }
    }

    fn held(&self) -> MutexGuard<'_, Entries> {
        // Every critical section is a single map operation: a poisoned lock is consistent.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that a failover to `to` (`host:port`) was announced.
    pub(crate) fn failover_announced(&self, to: String) {
        *self.failover_to.lock().unwrap_or_else(|p| p.into_inner()) = Some(to);
        self.failover_pending.store(true, Ordering::Release);
    }

    /// The client reconnected to `server` (`host:port`; `None`: unknown): ends a pending
    /// failover when it is the announced primary (or none was named). Returns whether
    /// checks may run.
    pub(crate) fn reconnected_to(&self, server: Option<&str>) -> bool {
        if !self.failover_pending() {
            return true;
        }
        let to = self.failover_to.lock().unwrap_or_else(|p| p.into_inner());
        let arrived = match (to.as_deref(), server) {
            (Some(to), Some(server)) if to != "?" => to == server,
            _ => true,
        };
        if arrived {
            self.failover_pending.store(false, Ordering::Release);
        }
        arrived
    }

    /// Whether checks must wait for a reconnection (see `set_failover_pending`).
    pub(crate) fn failover_pending(&self) -> bool {
        self.failover_pending.load(Ordering::Acquire)
    }

    /// The margin before a lease of `lease_ms` ends (see [`crate::engine::hold::state`]).
    pub(crate) fn margin_ms(&self, lease_ms: u64) -> u64 {
        crate::engine::hold::state::validity_margin(lease_ms, self.margin)
    }

    /// Registers one acquisition whose command was sent at `sent`: a watchdog hold
    /// (`lease_ms` `None`: renewed from now on) or a lease hold of what `held` describes
    /// (called only when the entry is new or its holds are not all alike). Returns the
    /// hold's signal (shared with the owner's other holds of the lock).
    pub(crate) fn add_hold(
        &self,
        hold: HoldKey,
        lease_ms: Option<u64>,
        sent: Instant,
        held_now: impl FnOnce() -> Arc<dyn Held>,
    ) -> Arc<HoldSignal> {
        let lease = lease_ms.unwrap_or(self.watchdog_ms);
        let margin = self.margin_ms(lease);
        let mut held = self.held();
        let had_watchdog_holds = held.renewed > 0;
        let mut recovered = None;
        let entry = match &mut held.map.entry(hold).or_default().entry {
            Some(entry) => {
                // The acquire script set the lease (re-entry re-arms the whole hash).
                recovered =
                    entry
                        .signal
                        .confirm(sent, lease, margin, true, !self.failover_pending());
                if entry.held.joins() {
                    // Holds that differ (a faster multi-lock's value sets): this one joins.
                    if let Some(joined) = entry.held.join(&*held_now()) {
                        entry.held = joined;
                    }
                }
                entry
            }
            vacant @ None => vacant.insert(Entry {
                held: held_now(),
                watchdog_holds: 0,
                leased: false,
                signal: Arc::new(HoldSignal::new(sent, lease, margin)),
            }),
        };
        let first_of_entry = match lease_ms {
            None => {
                entry.watchdog_holds += 1;
                entry.watchdog_holds == 1
            }
            Some(_) => {
                entry.leased = true;
                false
            }
        };
        let signal = entry.signal.clone();
        if first_of_entry {
            held.renewed += 1;
        }
        drop(held);
        if let Some(transition) = recovered {
            crate::engine::hold::state::report(&signal, transition, None);
        }
        if self.failover_pending() {
            // Taken while a failover is announced: possibly on the old primary, whose
            // writes the new one never sees.
            if let Some(transition) = signal.suspend(Cause::Failover, sent) {
                crate::engine::hold::state::report(&signal, transition, None);
            }
        }
        if lease_ms.is_none() && !had_watchdog_holds {
            self.first_hold.notify_one();
        }
        let deadline = signal.deadline_ms();
        if deadline < self.next_scan_ms.load(Ordering::Relaxed) {
            self.next_scan_ms.fetch_min(deadline, Ordering::Relaxed);
            self.sooner.notify_one();
        }
        signal
    }

    /// Removes one watchdog hold (the first half of every unlock, done synchronously);
    /// the entry leaves with its last one unless a lease hold keeps it.
    pub(crate) fn remove_hold(&self, hold: &HoldKey) {
        let mut held = self.held();
        let Some(entry) = held.get_mut(hold) else {
            return;
        };
        if entry.watchdog_holds == 0 {
            return;
        }
        entry.watchdog_holds -= 1;
        if entry.watchdog_holds == 0 {
            let leased = entry.leased;
            // Counted out here, so that `remove` does not count it again.
            held.renewed -= 1;
            if !leased {
                held.remove(hold);
            }
        }
    }

    /// Removes one hold whose part differs from the others' (a faster multi-lock's
    /// value set, see [`Held::leave`]): `part` stops being renewed unless another hold of
    /// the same (name, owner) has it too.
    pub(crate) fn remove_part(&self, hold: &HoldKey, part: &dyn Held) {
        let mut held = self.held();
        let Some(entry) = held.get_mut(hold) else {
            return;
        };
        let empty = match entry.held.leave(part) {
            Some(Some(rest)) => {
                entry.held = rest;
                false
            }
            Some(None) => true,
            None => false,
        };
        let was_renewed = entry.watchdog_holds > 0;
        entry.watchdog_holds = entry.watchdog_holds.saturating_sub(1);
        let (renewed_now, leased) = (entry.watchdog_holds > 0, entry.leased);
        if was_renewed && !renewed_now {
            held.renewed -= 1;
        }
        if (!renewed_now || empty) && !leased {
            held.remove(hold);
        }
    }

    /// The owner has no hold left on the lock (its release answered `Released`, or
    /// `NotOwner`: `gone`, and its guards learn the hold is lost): the entry leaves,
    /// lease holds included; after `Released`, unless a watchdog hold came back meanwhile.
    pub(crate) fn released(&self, hold: &HoldKey, gone: bool) {
        let mut held = self.held();
        let Some(entry) = held.get(hold) else {
            return;
        };
        if entry.watchdog_holds > 0 && !gone {
            return;
        }
        let signal = entry.signal.clone();
        held.remove(hold);
        drop(held);
        if gone && let Some(t) = signal.lose(Cause::FieldGone) {
            crate::engine::hold::state::report(&signal, t, Some(hold));
        }
    }

    /// Forgets `name` for every owner (force unlock), as far as a force release of what
    /// `forced` describes ends each hold ([`Held::forced`]): a read lock's force unlock
    /// ends its read holds, any other kind's (the write half's too) its owner fields (the
    /// two halves of a read-write lock share the name, and one half's force unlock must
    /// not stop the other half's renewal); a faster multi-lock's ends the holds (of any
    /// owner of this client) that share one of its values, the group's others go on.
    pub(crate) fn remove_lock(&self, name: &str, forced: &dyn Held) {
        let mut held = self.held();
        let mut stopped = 0;
        held.map.retain(|(n, _, _), slot| {
            let Some(e) = slot.entry.as_mut().filter(|_| &**n == name) else {
                return true;
            };
            let keep = match e.held.forced(forced) {
                Forced::Kept => true,
                Forced::Ended => {
                    if e.watchdog_holds > 0 {
                        stopped += 1;
                    }
                    false
                }
                Forced::Shrunk { rest, ended } => {
                    let was_renewed = e.watchdog_holds > 0;
                    e.watchdog_holds = e.watchdog_holds.saturating_sub(ended);
                    let keep = rest.is_some() && e.watchdog_holds > 0;
                    if let Some(rest) = rest {
                        e.held = rest;
                    }
                    if was_renewed && (!keep || e.watchdog_holds == 0) {
                        stopped += 1;
                    }
                    keep
                }
            };
            if !keep {
                slot.entry = None;
            }
            !slot.is_empty()
        });
        held.renewed -= stopped;
    }

    /// Forgets every hold and says each is lost (client shutdown).
    pub(crate) fn clear(&self) {
        let drained: Vec<Entry> = {
            let mut held = self.held();
            held.renewed = 0;
            let drained = held
                .map
                .values_mut()
                .filter_map(|s| s.entry.take())
                .collect();
            held.map.retain(|_, slot| !slot.is_empty());
            drained
        };
        for entry in drained {
            if let Some(t) = entry.signal.lose(Cause::Shutdown) {
                crate::engine::hold::state::report(&entry.signal, t, None);
            }
        }
    }

    /// How many (lock, owner) pairs the watchdog renews.
    pub(crate) fn renewed_len(&self) -> usize {
        self.held().renewed
    }

    /// Whether anything is renewed.
    pub(crate) fn has_renewed(&self) -> bool {
        self.held().renewed > 0
    }

    /// Completes once a watchdog hold is registered (at once if one is).
    pub(crate) async fn first_renewed_hold(&self) {
        loop {
            let first = self.first_hold.notified();
            tokio::pin!(first);
            first.as_mut().enable();
            if self.has_renewed() {
                return;
            }
            first.await;
        }
    }

    /// A renewal or verification found the owner field gone: the hold is lost, and
    /// leaves the registry if the entry is still the one checked (an unlock and a new
    /// acquisition in between make a new entry with a new signal).
    pub(crate) fn found_gone(&self, hold: &HoldKey, signal: &Arc<HoldSignal>) {
        let mut held = self.held();
        if held
            .get(hold)
            .is_some_and(|e| Arc::ptr_eq(&e.signal, signal))
        {
            held.remove(hold);
        }
        drop(held);
        if let Some(t) = signal.lose(Cause::FieldGone) {
            crate::engine::hold::state::report(signal, t, Some(hold));
        }
    }

    /// A write of `hold`'s owner to its key is about to be sent (an acquisition or
    /// re-entry, an unlock): the owner's registered holds of the key (`hold`, and the
    /// other half of a read-write lock when `both_halves`) count it as in flight until the
    /// returned guard is dropped, so that a check which may have run beside it is asked
    /// again rather than judged.
    pub(crate) fn writing(&self, hold: &HoldKey, both_halves: bool) -> Writing {
        let held = self.held();
        let mut writing = Writing::default();
        let started = |entry: &Entry| {
            entry.signal.write_started();
            entry.signal.clone()
        };
        writing.0[0] = held.get(hold).map(started);
        if both_halves {
            let other = (hold.0.clone(), hold.1, !hold.2);
            writing.0[1] = held.get(&other).map(started);
        }
        writing
    }

    /// The holds `pick` picks by their (name, owner) and what is held (one pass).
    pub(crate) fn snapshot_where(
        &self,
        pick: impl Fn(&HoldKey, &dyn Held) -> bool,
    ) -> Vec<Snapshot> {
        self.held()
            .iter()
            .filter(|(k, e)| pick(k, &*e.held))
            .map(|(k, e)| Snapshot::of(k, e))
            .collect()
    }

    /// The holds to send in one round: `filter` picks them.
    pub(crate) fn snapshot(&self, filter: impl Fn(bool, &HoldSignal) -> bool) -> Vec<Snapshot> {
        self.held()
            .iter()
            .filter(|(_, e)| filter(e.watchdog_holds > 0, &e.signal))
            .map(|(k, e)| Snapshot::of(k, e))
            .collect()
    }

    /// The watchdog's round, taken when it is about to send: every hold that has
    /// watchdog holds, each marked with the round's id, and the round registered in
    /// flight, all in one pass under the map's lock (as [`HoldRegistry::start_round`]
    /// does for a snapshot taken earlier).
    pub(crate) fn renewal_round(&self) -> (Vec<Snapshot>, InFlight<'_>) {
        let mut held = self.held();
        let id = self.rounds.next_id();
        let mut holds = Vec::with_capacity(held.renewed);
        for (k, slot) in held.map.iter_mut() {
            let Slot { entry, book } = slot;
            let Some(e) = entry.as_ref().filter(|e| e.watchdog_holds > 0) else {
                continue;
            };
            if let Some(book) = book {
                book.renewed_in(id);
            }
            holds.push(Snapshot::of(k, e));
        }
        let in_flight = self.rounds.start(id, !holds.is_empty());
        drop(held);
        (holds, in_flight)
    }

    /// Starts a renewal round of `holds`, a snapshot taken earlier (before a wait for
    /// the connection, say). A hold that has no watchdog hold left is no longer renewed:
    /// a lease hold that is left is checked instead, and a hold that is gone or was
    /// replaced is left out. Each hold sent takes what is held now, not what the snapshot
    /// saw. The holds renewed stay registered in flight until the returned guard drops,
    /// and an unlock of one of them waits until then ([`HoldRegistry::renewal_over`]).
    pub(crate) fn start_round(&self, holds: Vec<Snapshot>) -> (Vec<Snapshot>, InFlight<'_>) {
        let mut held = self.held();
        let id = self.rounds.next_id();
        let mut renews = false;
        let holds: Vec<Snapshot> = holds
            .into_iter()
            .filter_map(|mut item| {
                let Slot { entry, book } = held.map.get_mut(&item.hold)?;
                let entry = entry
                    .as_ref()
                    .filter(|e| Arc::ptr_eq(&e.signal, &item.signal))?;
                item.held = entry.held.clone();
                if item.renewed {
                    if entry.watchdog_holds > 0 {
                        // On the book, which outlives the registration while an unlock
                        // is in flight (a hold without one is waited for by every round).
                        if let Some(book) = book {
                            book.renewed_in(id);
                        }
                        renews = true;
                    } else {
                        item.renewed = false;
                    }
                }
                Some(item)
            })
            .collect();
        // Registered before the map's lock is let go: an unlock removes its watchdog hold
        // under that lock, so it either came before (not renewed) or sees the round.
        let in_flight = self.rounds.start(id, renews);
        drop(held);
        (holds, in_flight)
    }

    /// Whether a renewal round is in flight (one atomic load): when not, an unlock need
    /// not ask [`HoldRegistry::renewal_over`].
    pub(crate) fn renewing(&self) -> bool {
        self.rounds.any()
    }

    /// Completes once no renewal round in flight renews `hold` (an unlock waits for this
    /// after removing its watchdog hold, before its script), or after `limit`.
    pub(crate) async fn renewal_over(&self, hold: &HoldKey, limit: Duration) {
        if !self.rounds.any() {
            return;
        }
        let mark = self
            .held()
            .map
            .get(hold)
            .and_then(|slot| slot.book.as_ref())
            .map(Book::last_round);
        if mark == Some(NO_ROUND) {
            return;
        }
        self.rounds.renewal_over(mark, limit).await;
    }

    /// Makes every hold that `pick` selects (by its lock's hash slot) at risk from `at`.
    pub(crate) fn suspend(&self, cause: Cause, at: Instant, pick: impl Fn(u16) -> bool) {
        self.suspend_where(cause, at, |slot, _| pick(slot));
    }

    /// [`HoldRegistry::suspend`], choosing by slot and signal.
    pub(crate) fn suspend_where(
        &self,
        cause: Cause,
        at: Instant,
        pick: impl Fn(u16, &HoldSignal) -> bool,
    ) {
        let picked: Vec<(HoldKey, Arc<HoldSignal>)> = self
            .held()
            .iter()
            .filter(|(k, e)| pick(fred::util::redis_keyslot(k.0.as_bytes()), &e.signal))
            .map(|(k, e)| (k.clone(), e.signal.clone()))
            .collect();
        for (hold, signal) in picked {
            if let Some(t) = signal.suspend(cause, at) {
                report_with(&signal, t, &hold);
            }
        }
    }

    /// Publishes the deadlines due at `now`; forgets lease-only holds that are lost.
    /// Returns the earliest deadline still ahead (ms since the signals' epoch).
    pub(crate) fn check_deadlines(&self, now: Instant) -> Option<u64> {
        let now_ms = millis(now);
        let mut due = Vec::new();
        let mut next: Option<u64> = None;
        {
            let mut held = self.held();
            held.retain(|k, e| {
                let deadline = e.signal.deadline_ms();
                if deadline <= now_ms {
                    due.push((k.clone(), e.signal.clone()));
                }
                if deadline > now_ms {
                    next = Some(next.map_or(deadline, |n| n.min(deadline)));
                }
                // A lease hold nobody renews is gone from Redis once lost.
                !(e.watchdog_holds == 0 && e.signal.is_lost())
            });
        }
        for (hold, signal) in due {
            if let Some(t) = signal.check_deadline(now) {
                report_with(&signal, t, &hold);
            }
            // An at-risk hold's next change is its expiry.
            if let (crate::engine::hold::state::HoldState::AtRisk, Some(at)) = signal.state_at(now)
            {
                let at = millis(at);
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next
    }

    /// Runs `f` on the ledger's book of `hold` (see [`crate::engine::hold::ledger`]); `f` sees
    /// `None` when there is none, and may make one (kept only when `make`) or end one.
    /// The slot leaves once it has neither a book nor a registered hold.
    pub(crate) fn book<R>(
        &self,
        hold: &HoldKey,
        make: bool,
        f: impl FnOnce(&mut Option<Book>) -> R,
    ) -> R {
        let mut held = self.held();
        match held.map.get_mut(hold) {
            Some(slot) => {
                let r = f(&mut slot.book);
                if slot.is_empty() {
                    held.map.remove(hold);
                }
                r
            }
            None if make => {
                let mut book = None;
                let r = f(&mut book);
                if book.is_some() {
                    held.map.insert(
                        hold.clone(),
                        Slot {
                            book,
                            ..Slot::default()
                        },
                    );
                }
                r
            }
            None => f(&mut None),
        }
    }

    /// Ends every book of `name` but those `kept` gives a count for, which it sets to
    /// that count (a force unlock; see [`crate::engine::hold::ledger`]).
    pub(crate) fn forget_books(&self, name: &str, kept: impl Fn(LockOwner, bool) -> Option<u32>) {
        self.held().map.retain(|(n, owner, write), slot| {
            if &**n == name {
                match kept(*owner, *write) {
                    Some(count) => Book::recount(&mut slot.book, count),
                    None => slot.book = None,
                }
            }
            !slot.is_empty()
        });
    }

    /// Records when the sentry next scans; returns the notifier of sooner deadlines.
    pub(crate) fn scan_at(&self, at_ms: u64) -> &Notify {
        self.next_scan_ms.store(at_ms, Ordering::Relaxed);
        &self.sooner
    }

    /// Wakes the sentry now: a hold went at risk outside its own events (a check after an
    /// invalidation found it shortened), and waits for its verification.
    pub(crate) fn wake_sentry(&self) {
        self.sooner.notify_one();
    }
}

fn report_with(signal: &Arc<HoldSignal>, transition: Transition, hold: &HoldKey) {
    crate::engine::hold::state::report(signal, transition, Some(hold));
}
