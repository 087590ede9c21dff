//! [`HoldWatch`]: what a guard says about the hold(s) it has; the one type behind every
//! guard's `state()`, `state_changes()`, `at_risk()`, `held_again()`, `lost()` and their
//! blocking twins, async and blocking guards alike.
//!
//! A watch is one hold's [`HoldSignal`] (a lock guard's, a kept permit's), or a group's
//! members' signals under the group's rule: the group is lost once more than `tolerance`
//! of its held members are lost, and at risk once more than `tolerance` are at risk or
//! lost (a multi-lock tolerates none; a RedLock as many as it holds beyond its majority).
//! Either may also end at a moment of its own (`valid_until`: a lock guard's lease, a
//! group's lease less the clock drift), from which it is lost.
//!
//! Invariants:
//! * Every state is computed from the signals and the clock when asked
//!   ([`HoldWatch::state_at`]), so a wait never trusts a state the sentry has not
//!   published yet: it wakes at any member's published change and at the next
//!   time-driven one, and decides from the clock.
//! * The async waits take a tokio timer; the blocking waits take no runtime at all (they
//!   park the calling thread), so they work on any thread, inside a runtime or not.
//! * One hold's watch is its signal's `Arc` (no allocation of its own, nothing added to
//!   the per-hold signal); a group's is one allocation, which also keeps the group's
//!   `state_changes()` channel and its one feeder task.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::time::Instant;

use super::state::{HoldSignal, HoldState};

/// What a guard knows about the hold(s) it has, and how to wait for that to change: one
/// lock's or permit's hold, or a [`MultiLock`](crate::MultiLock)'s or
/// [`RedLock`](crate::RedLock)'s members under the group's rule. Every guard gives one
/// by `watch()` ([`LockGuard::watch`](crate::LockGuard::watch),
/// [`GroupGuard::watch`](crate::GroupGuard::watch), [`Permit::watch`](crate::synchronizers::Permit::watch),
/// and the blocking guards'), and every guard's hold methods are this type's.
///
/// The states and their guarantees are [`HoldState`]'s: `AtRisk` always comes before the
/// hold can have expired in Redis, `Lost` is final. For a group:
///
/// * a [`MultiLock`](crate::MultiLock)'s watch is at risk as soon as any member is, and
///   lost as soon as any member is;
/// * a [`RedLock`](crate::RedLock)'s is at risk once so many members are at risk or lost
///   that a majority is no longer sure, and lost once fewer than a majority are left;
/// * either is lost when its lease (less the clock drift, for a RedLock) ends, and held
///   again once the members at risk are confirmed.
///
/// It is cheap to clone (an `Arc`), `Send`, `Sync` and `'static`: hand a clone to a task
/// or a thread that must stop when the hold is at risk, while the guard stays the way to
/// unlock. Async waits ([`at_risk`](HoldWatch::at_risk), [`held_again`](HoldWatch::held_again),
/// [`lost`](HoldWatch::lost)) are cancel safe; their blocking twins
/// ([`wait_at_risk`](HoldWatch::wait_at_risk), [`wait_held_again`](HoldWatch::wait_held_again),
/// [`wait_lost`](HoldWatch::wait_lost)) take a timeout and work on any thread, inside a
/// tokio runtime or not.
///
/// A watch outliving its guard's unlock (or drop) is no longer kept up to date: nothing
/// renews or checks that hold any more, so it turns at risk, then lost, by the clock, at
/// the hold's last known validity deadline and lease end.
///
/// # Examples
/// ```no_run
/// # async fn write_batch() {}
/// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
/// let guard = lock.acquire().await?;
/// let watch = guard.watch().clone();
/// let writer = tokio::spawn(async move {
///     tokio::select! {
///         state = watch.at_risk() => eprintln!("stopping: the lock is {state}"),
///         _ = write_batch() => {}
///     }
/// });
/// writer.await.ok();
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HoldWatch(Watched);

#[derive(Clone)]
enum Watched {
    /// One hold (of the guard's owner on one lock, or one permit).
    One {
        signal: Arc<HoldSignal>,
        /// The end of the guard's lease, if it has one.
        valid_until: Option<Instant>,
    },
    Group(Arc<Group>),
}

/// A group's members and rule, and its `state_changes()` channel.
struct Group {
    members: Box<[Arc<HoldSignal>]>,
    /// How many members may be lost (or at risk) before the group is.
    tolerance: usize,
    valid_until: Option<Instant>,
    /// Made by the first `state_changes()`; fed by one task while anyone listens.
    changes: OnceLock<watch::Sender<HoldState>>,
    /// Whether a feeder task runs (or the group is lost and needs none).
    feeding: AtomicBool,
    /// The runtime the group was acquired on, for the feeder.
    runtime: Option<Handle>,
}

/// Receivers of the signals a watch reads.
enum Changes {
    One(watch::Receiver<HoldState>),
    Many(Vec<watch::Receiver<HoldState>>),
}

impl Changes {
    /// Marks the published states as seen.
    fn mark_seen(&mut self) {
        match self {
            Changes::One(changes) => {
                changes.borrow_and_update();
            }
            Changes::Many(all) => {
                for changes in all {
                    changes.borrow_and_update();
                }
            }
        }
    }

    /// Completes when a signal publishes a change (never, if none can any more).
    async fn next(&mut self) {
        let changed = match self {
            Changes::One(changes) => changes.changed().await.is_ok(),
            Changes::Many(all) => {
                let mut any: FuturesUnordered<_> = all.iter_mut().map(|c| c.changed()).collect();
                let mut changed = false;
                while let Some(result) = any.next().await {
                    if result.is_ok() {
                        changed = true;
                        break;
                    }
                }
                changed
            }
        };
        if !changed {
            std::future::pending::<()>().await;
        }
    }
}

impl HoldWatch {
    /// One hold's watch: its signal, and the guard's lease end if it has one.
    pub(crate) fn one(signal: Arc<HoldSignal>, valid_until: Option<Instant>) -> HoldWatch {
        HoldWatch(Watched::One {
            signal,
            valid_until,
        })
    }

    /// A group's watch: its held members' signals, how many of them it may lose, and its
    /// lease's end (less the drift) if it has one. Made on the runtime the group was
    /// acquired on, which then feeds its `state_changes()`.
    pub(crate) fn group(
        members: Vec<Arc<HoldSignal>>,
        tolerance: usize,
        valid_until: Option<Instant>,
    ) -> HoldWatch {
        HoldWatch(Watched::Group(Arc::new(Group {
            members: members.into_boxed_slice(),
            tolerance,
            valid_until,
            changes: OnceLock::new(),
            feeding: AtomicBool::new(false),
            runtime: Handle::try_current().ok(),
        })))
    }

    /// The signals, the tolerance and the end.
    fn parts(&self) -> (&[Arc<HoldSignal>], usize, Option<Instant>) {
        match &self.0 {
            Watched::One {
                signal,
                valid_until,
            } => (std::slice::from_ref(signal), 0, *valid_until),
            Watched::Group(group) => (&group.members, group.tolerance, group.valid_until),
        }
    }

    /// The state at `now` by the rule, with every member's time-driven transitions
    /// applied; and when the next time-driven change is due (`None` once lost).
    pub(crate) fn state_at(&self, now: Instant) -> (HoldState, Option<Instant>) {
        let (signals, tolerance, valid_until) = self.parts();
        if valid_until.is_some_and(|end| now >= end) {
            return (HoldState::Lost, None);
        }
        let (mut lost, mut at_risk, mut next) = (0, 0, valid_until);
        for signal in signals {
            let (state, change) = signal.state_at(now);
            match state {
                HoldState::Lost => lost += 1,
                HoldState::AtRisk => at_risk += 1,
                _ => {}
            }
            next = earliest(next, change);
        }
        if lost > tolerance {
            (HoldState::Lost, None)
        } else if lost + at_risk > tolerance {
            (HoldState::AtRisk, next)
        } else {
            (HoldState::Held, next)
        }
    }

    /// How many risks the watched holds have had (`HoldSignal::risks`, summed), where
    /// one member's risk is the watch's: a single hold, or a group that tolerates none.
    /// `None` for a Redlock, where a member's risk may not be the group's.
    fn risks(&self) -> Option<u64> {
        let (signals, tolerance, _) = self.parts();
        (tolerance == 0).then(|| signals.iter().map(|s| u64::from(s.risks())).sum())
    }

    /// Whether a risk came (and may already have passed) since the watch had `seen`.
    fn risk_since(&self, seen: Option<u64>) -> bool {
        seen.is_some_and(|seen| self.risks() != Some(seen))
    }

    fn subscribe_all(&self) -> Changes {
        match self.parts().0 {
            [one] => Changes::One(one.subscribe()),
            all => Changes::Many(all.iter().map(|s| s.subscribe()).collect()),
        }
    }

    /// Completes once the state satisfies `done`, with that state, or with `AtRisk` once
    /// a risk came after the watch had seen `risks` (see [`HoldWatch::risks`]), even if it
    /// has passed by the time this task reads the state. Cancel safe.
    async fn until(&self, done: impl Fn(HoldState) -> bool, risks: Option<u64>) -> HoldState {
        let mut changes = self.subscribe_all();
        loop {
            changes.mark_seen();
            let (state, next) = self.state_at(Instant::now());
            if done(state) {
                return state;
            }
            if self.risk_since(risks) {
                return HoldState::AtRisk;
            }
            match next {
                Some(at) => {
                    tokio::select! {
                        () = changes.next() => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => changes.next().await,
            }
        }
    }

    /// Blocks the calling thread until the state satisfies `done` (that state) or
    /// `timeout` passes (`None`). Needs no runtime.
    fn wait_until(
        &self,
        done: impl Fn(HoldState) -> bool,
        risks: Option<u64>,
        timeout: Duration,
    ) -> Option<HoldState> {
        let end = std::time::Instant::now().checked_add(timeout);
        let mut changes = self.subscribe_all();
        loop {
            changes.mark_seen();
            let (state, next) = self.state_at(Instant::now());
            if done(state) {
                return Some(state);
            }
            if self.risk_since(risks) {
                return Some(HoldState::AtRisk);
            }
            if end.is_some_and(|end| std::time::Instant::now() >= end) {
                return None;
            }
            let wake = match (end, next.map(Instant::into_std)) {
                (Some(end), Some(next)) => Some(end.min(next)),
                (end, next) => end.or(next),
            };
            // Unconstrained: inside a task whose budget is spent, a receiver would answer
            // `Pending` (and wake at once) until the task yields, which it cannot here.
            block_until(tokio::task::unconstrained(changes.next()), wake);
        }
    }
}

/// The public face: states, changes, waits.
impl HoldWatch {
    /// The state now, exact at the moment of the call (deadlines and lease end read from
    /// the clock, even before the client's sentry publishes them).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// assert_eq!(guard.watch().state(), redisson_lock::HoldState::Held);
    /// # Ok(()) }
    /// ```
    pub fn state(&self) -> HoldState {
        self.state_at(Instant::now()).0
    }

    /// Whether the hold is known to be lost (final).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// assert!(!guard.watch().is_lost());
    /// # Ok(()) }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.state() == HoldState::Lost
    }

    /// A receiver of the state's changes (a `tokio::sync::watch`), for `tokio::select!`
    /// loops, other tasks, or polling from blocking code (`has_changed()`, `borrow()`).
    ///
    /// One hold's receiver sees what the client's sentry publishes, a few milliseconds at
    /// most after [`state`](HoldWatch::state) would show it. A group's is fed by one small
    /// task per group (on the runtime the group was acquired on), shared by every
    /// receiver of that group, that ends when the group is lost or its last receiver is
    /// dropped; it sees the group's lease end too.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// use redisson_lock::HoldState;
    /// let guard = lock.acquire().await?;
    /// let mut changes = guard.watch().state_changes();
    /// tokio::spawn(async move {
    ///     while changes.changed().await.is_ok() {
    ///         let state = *changes.borrow_and_update();
    ///         eprintln!("lock is now {state}");
    ///         if state == HoldState::Lost {
    ///             break;
    ///         }
    ///     }
    /// });
    /// # Ok(()) }
    /// ```
    pub fn state_changes(&self) -> watch::Receiver<HoldState> {
        match &self.0 {
            Watched::One { signal, .. } => signal.subscribe(),
            Watched::Group(group) => self.group_changes(group),
        }
    }

    /// Completes as soon as the hold is no longer surely held (at risk, or lost), with
    /// that state; at once if it already is. Always before the hold can have expired in
    /// Redis. Cancel safe, and cheap to call again, so it fits a `tokio::select!` loop.
    ///
    /// A risk that begins after the call completes it however short it is: with
    /// `AtRisk` even when the hold was confirmed again (`Held`) before this task ran, so
    /// read [`state`](HoldWatch::state) to tell (a risk is never lost to the order of
    /// the wake-up and the read). For a Redlock's guard, which tolerates a minority of
    /// members at risk, the group's state decides.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// tokio::select! {
    ///     state = guard.watch().at_risk() => eprintln!("stopping: the lock is {state}"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// # Ok(()) }
    /// ```
    pub fn at_risk(&self) -> impl std::future::Future<Output = HoldState> + Send + '_ {
        // The risks seen when called, not when first polled: one in between counts.
        let risks = self.risks();
        self.until(|s| s != HoldState::Held, risks)
    }

    /// Completes when the hold is confirmed safe again (`Held`) after being at risk; at
    /// once if it is held. Never completes once lost. Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// let watch = guard.watch();
    /// watch.at_risk().await;
    /// tokio::select! {
    ///     _ = watch.held_again() => eprintln!("still ours: go on"),
    ///     _ = watch.lost() => eprintln!("gone"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn held_again(&self) {
        if self.until(|s| s != HoldState::AtRisk, None).await == HoldState::Lost {
            std::future::pending::<()>().await;
        }
    }

    /// Completes when the hold is lost; never, while it is held. Comes after
    /// [`at_risk`](HoldWatch::at_risk), the earlier warning. Cancel safe, and cheap to
    /// call again.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire().await?;
    /// tokio::select! {
    ///     _ = guard.watch().lost() => eprintln!("lost"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        self.until(|s| s == HoldState::Lost, None).await;
    }

    /// [`at_risk`](HoldWatch::at_risk) for blocking code: blocks the calling thread until
    /// the hold is no longer surely held (returns that state; at once if it already is),
    /// or until `timeout` passes (`None`: still held). A risk that begins after the call
    /// returns `Some(AtRisk)` however short it is, as [`at_risk`](HoldWatch::at_risk).
    /// Needs no runtime, and never panics inside or outside one (inside an async task it
    /// blocks that task's thread).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// if let Some(state) = guard.watch().wait_at_risk(std::time::Duration::from_millis(100)) {
    ///     eprintln!("stop: the lock is {state}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn wait_at_risk(&self, timeout: Duration) -> Option<HoldState> {
        self.wait_until(|s| s != HoldState::Held, self.risks(), timeout)
    }

    /// [`held_again`](HoldWatch::held_again) for blocking code: blocks the calling thread
    /// until the hold is `Held` (`true`; at once if it is), or is lost or `timeout`
    /// passes (`false`; [`state`](HoldWatch::state) tells which). Needs no runtime.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// let watch = guard.watch();
    /// if watch.wait_at_risk(std::time::Duration::from_secs(1)).is_some()
    ///     && !watch.wait_held_again(std::time::Duration::from_secs(5))
    /// {
    ///     eprintln!("not confirmed: the lock is {}", watch.state());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn wait_held_again(&self, timeout: Duration) -> bool {
        self.wait_until(|s| s != HoldState::AtRisk, None, timeout) == Some(HoldState::Held)
    }

    /// [`lost`](HoldWatch::lost) for blocking code: blocks the calling thread until the
    /// hold is lost (`true`) or `timeout` passes (`false`). Needs no runtime.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(lock: redisson_lock::blocking::RLock) -> redisson_lock::Result<()> {
    /// let guard = lock.acquire()?;
    /// if guard.watch().wait_lost(std::time::Duration::from_millis(100)) {
    ///     eprintln!("lost");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn wait_lost(&self, timeout: Duration) -> bool {
        self.wait_until(|s| s == HoldState::Lost, None, timeout)
            .is_some()
    }
}

/// A group's `state_changes()`: one channel per group, fed by one task while anyone
/// listens.
impl HoldWatch {
    fn group_changes(&self, group: &Group) -> watch::Receiver<HoldState> {
        let sender = group
            .changes
            .get_or_init(|| watch::Sender::new(HoldState::Held));
        let state = self.publish(sender);
        let receiver = sender.subscribe();
        if state != HoldState::Lost && !group.feeding.swap(true, Ordering::SeqCst) {
            match group.runtime.clone().or_else(|| Handle::try_current().ok()) {
                Some(runtime) => drop(runtime.spawn(self.clone().feed())),
                // No runtime to feed it: the receiver has the state of the moment.
                None => group.feeding.store(false, Ordering::SeqCst),
            }
        }
        receiver
    }

    /// Sets the channel to the state now (read under the channel's lock, so that of two
    /// writers the later state wins) and returns it.
    fn publish(&self, sender: &watch::Sender<HoldState>) -> HoldState {
        let mut now = HoldState::Held;
        sender.send_if_modified(|published| {
            now = self.state();
            let changed = *published != now;
            *published = now;
            changed
        });
        now
    }

    /// The feeder: publishes the group's changes until it is lost (then the flag stays
    /// set: nothing more to feed) or its last receiver is dropped.
    async fn feed(self) {
        let Watched::Group(group) = &self.0 else {
            return;
        };
        let Some(sender) = group.changes.get() else {
            return;
        };
        loop {
            let state = self.publish(sender);
            if state == HoldState::Lost {
                return;
            }
            tokio::select! {
                _ = self.until(|s| s != state, None) => {}
                () = sender.closed() => {
                    group.feeding.store(false, Ordering::SeqCst);
                    // A receiver made meanwhile, whose call found this feeder running,
                    // keeps it going (unless its call started another).
                    if sender.receiver_count() == 0 || group.feeding.swap(true, Ordering::SeqCst) {
                        return;
                    }
                }
            }
        }
    }
}

impl fmt::Debug for HoldWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (signals, tolerance, valid_until) = self.parts();
        f.debug_struct("HoldWatch")
            .field("state", &self.state())
            .field("holds", &signals.len())
            .field("tolerance", &tolerance)
            .field("valid_until", &valid_until)
            .finish()
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Wakes a thread parked in [`block_until`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on the calling thread, parked in between, until it completes or
/// `deadline` passes. Uses no runtime (tokio's sync primitives need none).
fn block_until<F: Future>(future: F, deadline: Option<std::time::Instant>) {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    while future.as_mut().poll(&mut cx).is_pending() {
        match deadline {
            None => std::thread::park(),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return;
                }
                std::thread::park_timeout(left);
            }
        }
    }
}

#[cfg(test)]
mod tests;
