//! [`HoldState`]: whether a hold still protects its holder, and [`HoldSignal`], the
//! per-hold state machine that a guard's [`HoldWatch`](super::watch::HoldWatch) reads
//! (and waits on) for its `state()`, `at_risk()` and `lost()`.
//!
//! Modelled on ZooKeeper Curator's connection states (SUSPENDED, RECONNECTED, LOST):
//!
//! ```text
//!            connection to the lock's server drops,           verified in Redis after
//!            or the validity deadline passes                  reconnecting, or renewed
//!   Held  ───────────────────────────────────────▶  AtRisk  ─────────────────────────▶ Held
//!     │                                               │
//!     │ owner field gone at a renewal                 │ owner field gone, or the lease
//!     ▼                                               ▼ ran out unconfirmed
//!   Lost (final)  ◀───────────────────────────────────┘
//! ```
//!
//! Invariants:
//! * A signal's timings are the *earliest* moment Redis may expire the hold: the send
//!   time of the last command that set its lease, plus that lease. A command's reply may
//!   come late, never early, so the key lives at least that long in Redis (its clock runs
//!   at the rate of ours).
//! * The validity deadline is that moment less a margin ([`validity_margin`]); past it the
//!   hold is at risk, past the expiry itself it is lost. Both are read from the clock by
//!   [`HoldSignal::state_at`], so a state read is exact even when the sentry that
//!   publishes transitions is late.
//! * A hold made at risk by a dropped connection is safe again only through a command
//!   *sent after* the drop was seen (a reply to an older one may describe a server that
//!   has since restarted empty). A hold at risk by its deadline alone is safe again as
//!   soon as a confirmation moves the deadline into the future.
//! * `Lost` is final.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// Whether a hold still protects its holder, as its guard sees it.
///
/// The states and what each guarantees (see `docs/reliability.md` for the sequences):
///
/// | state | guarantee | entered when |
/// |---|---|---|
/// | `Held` | no other client can hold the lock before the guard says `AtRisk` | acquired; verified again after a fault |
/// | `AtRisk` | none: the hold may be gone or kept, the client is finding out | the connection serving the lock's key dropped; the validity deadline passed (last confirmed lease − margin); the server restarted |
/// | `Lost` | none, for good: another client may hold the lock | the owner field was found gone; the lease ran out unconfirmed; the client shut down |
///
/// `AtRisk` is always raised before the hold can have expired in Redis, so work that
/// stops at `AtRisk` never runs beside another holder, short of a pause of this process
/// itself (which no lock can detect: fence the writes for that, see
/// [`FencedWriter`](crate::client::fencing::FencedWriter)).
///
/// # Examples
/// ```no_run
/// # async fn demo(lock: redisson_lock::RLock) -> redisson_lock::Result<()> {
/// use redisson_lock::HoldState;
/// let guard = lock.acquire().await?;
/// match guard.state() {
///     HoldState::Held => println!("safe to write"),
///     HoldState::AtRisk => println!("pause: checking whether the lock is still ours"),
///     HoldState::Lost => println!("stop: the lock is gone"),
///     _ => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HoldState {
    /// The hold is confirmed and its validity deadline is ahead.
    Held,
    /// The client can no longer be sure it holds the lock (Curator's SUSPENDED); it is
    /// finding out. Turns back into `Held` (RECONNECTED) or into `Lost`.
    AtRisk,
    /// The hold is gone, or can no longer be counted on (Curator's LOST). Final.
    Lost,
}

impl HoldState {
    /// The state as a lowercase word (`held`, `at_risk`, `lost`), as in metrics labels.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::HoldState::AtRisk.as_str(), "at_risk");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            HoldState::Held => "held",
            HoldState::AtRisk => "at_risk",
            HoldState::Lost => "lost",
        }
    }
}

impl std::fmt::Display for HoldState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a hold became at risk or lost (for tracing and metrics labels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The connection to the server that has the lock's key dropped (or failed).
    ConnectionLost,
    /// The last confirmed lease, less the margin, ran out.
    ValidityDeadline,
    /// The server answered with another `run_id` after reconnecting.
    ServerRestarted,
    /// A sentinel announced a failover of the client's primary (`+switch-master`).
    Failover,
    /// The owner field was found gone (at a renewal or a verification).
    FieldGone,
    /// The lease ran out without a confirmation.
    LeaseEnded,
    /// The client was shut down.
    Shutdown,
    /// Another client, an operator or the server changed the hold's key: its check
    /// found the lease shorter than this client set (`CLIENT TRACKING`).
    ForeignChange,
}

impl Cause {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Cause::ConnectionLost => "connection_lost",
            Cause::ValidityDeadline => "validity_deadline",
            Cause::ServerRestarted => "server_restarted",
            Cause::Failover => "failover",
            Cause::FieldGone => "field_gone",
            Cause::LeaseEnded => "lease_ended",
            Cause::Shutdown => "shutdown",
            Cause::ForeignChange => "foreign_change",
        }
    }
}

/// The margin kept before a lease's end: the validity deadline is the earliest expiry
/// less this. `configured` (from
/// [`ConfigBuilder::validity_margin`](crate::ConfigBuilder::validity_margin)) or, by
/// default, 2 % of the lease plus 10 ms (Redlock's clock drift allowance, with room for
/// a late timer on a busy machine); never more than half the lease.
pub(crate) fn validity_margin(lease_ms: u64, configured: Option<Duration>) -> u64 {
    let margin = match configured {
        Some(margin) => margin.as_millis().min(u128::from(u64::MAX)) as u64,
        None => lease_ms / 50 + 10,
    };
    margin.min(lease_ms / 2)
}

/// The origin of the signals' millisecond timestamps.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

pub(crate) fn millis(at: Instant) -> u64 {
    at.saturating_duration_since(*EPOCH).as_millis() as u64
}

pub(crate) fn instant(ms: u64) -> Instant {
    *EPOCH + Duration::from_millis(ms)
}

/// `Timings::confirm_after_ms` when no fault is pending.
const NOT_SET: u64 = u64::MAX;

#[derive(Debug)]
struct Timings {
    /// The earliest moment Redis may expire the hold (ms since [`EPOCH`]).
    expires_ms: u64,
    /// Set while at risk through a fault: only a command sent at or after it confirms
    /// ([`NOT_SET`] otherwise: a hold lives as long as its lock, so the timings stay
    /// small).
    confirm_after_ms: u64,
    /// When the current at-risk period began (ms since [`EPOCH`], for the recovery time;
    /// [`NOT_SET`] while held).
    at_risk_since_ms: u64,
    /// The send time of the last command that confirmed the hold (ms since [`EPOCH`]).
    confirmed_ms: u64,
}

/// The bits of [`HoldSignal`]'s state word that hold the `HoldState`.
const STATE_BITS: u32 = 0b11;
/// Where the risk count starts in that word.
const RISK_SHIFT: u32 = 2;

/// One generation of [`HoldSignal`]'s writes (below it: the writes in flight).
const WRITE_GENERATION: u32 = 1 << 16;

/// The state of one hold (one lock, one owner), shared by its guards' watches, the
/// renewal registry and the sentry. See the module docs.
#[derive(Debug)]
pub(crate) struct HoldSignal {
    /// The state as published (a `HoldState` in the low two bits) and, above them, how
    /// many times it went from `Held` to `AtRisk`, changed together: a risk that ended
    /// before a waiter read the state (the channel keeps the last state only) still
    /// counts, so `at_risk()` never misses one however short.
    state: AtomicU32,
    /// This client's writes to the hold's key: how many are in flight (low 16 bits) and a
    /// generation moved by every one finished and every confirmation (high 16 bits). A
    /// check whose reply may have run beside one of them is not judged (a re-entry or a
    /// partial unlock can re-arm the key to a shorter lease than the one the check is
    /// compared with: `Round::superseded`).
    writes: AtomicU32,
    /// Made by the first subscriber (a watch's `state_changes()`, `at_risk()`, ...): a
    /// hold nobody watches costs no channel.
    watchers: OnceLock<watch::Sender<HoldState>>,
    timings: Mutex<Timings>,
    /// The validity deadline (ms since [`EPOCH`]): the expiry less the margin. Written
    /// under the timings' mutex; read without it by the sentry's scans.
    deadline_ms: AtomicU64,
}

/// A transition that the caller reports (tracing and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    AtRisk(Cause),
    /// Back to `Held` after this long at risk.
    Recovered(Duration),
    Lost(Cause),
}

impl HoldSignal {
    /// A held signal whose lease (`lease_ms`, margin `margin_ms`) was set by a command
    /// sent at `sent`.
    ///
    /// A late reply (a server paused with the command queued, an acquisition settled
    /// after a lost reply) does not make the hold lost by the clock: Redis ran the script
    /// somewhere between `sent` and now, so the hold may have expired, or may have a whole
    /// lease ahead. When the validity left is less than a renewal period (a third of the
    /// lease: the watchdog's next round could come after the deadline), the hold starts
    /// at risk, waiting for a check sent from now on (the sentry's, which re-arms a
    /// watchdog hold), and is lost only once even a script run just now would have
    /// expired (now + lease) without a confirmation.
    pub(crate) fn new(sent: Instant, lease_ms: u64, margin_ms: u64) -> HoldSignal {
        let expires_ms = millis(sent).saturating_add(lease_ms);
        let deadline_ms = expires_ms.saturating_sub(margin_ms);
        let now = Instant::now();
        let now_ms = millis(now);
        let (state, timings) = if now_ms.saturating_add(lease_ms / 3) >= deadline_ms {
            (
                HoldState::AtRisk,
                Timings {
                    expires_ms: now_ms.saturating_add(lease_ms),
                    confirm_after_ms: now_ms,
                    at_risk_since_ms: now_ms,
                    confirmed_ms: millis(sent),
                },
            )
        } else {
            (
                HoldState::Held,
                Timings {
                    expires_ms,
                    confirm_after_ms: NOT_SET,
                    at_risk_since_ms: NOT_SET,
                    confirmed_ms: millis(sent),
                },
            )
        };
        HoldSignal {
            state: AtomicU32::new(state as u32),
            writes: AtomicU32::new(0),
            watchers: OnceLock::new(),
            timings: Mutex::new(timings),
            deadline_ms: AtomicU64::new(deadline_ms),
        }
    }

    /// A write of this client to the hold's key is about to be sent.
    pub(crate) fn write_started(&self) {
        self.writes.fetch_add(1, Ordering::AcqRel);
    }

    /// A write [`HoldSignal::write_started`] counted is over (answered or not).
    pub(crate) fn write_finished(&self) {
        // One more generation, one fewer in flight, in one step.
        self.writes
            .fetch_add(WRITE_GENERATION - 1, Ordering::AcqRel);
    }

    /// The writes' state (see the field): compare two readings with
    /// [`HoldSignal::wrote_since`].
    pub(crate) fn writes(&self) -> u32 {
        self.writes.load(Ordering::Acquire)
    }

    /// Whether a write of this client was in flight at `earlier` (a [`HoldSignal::writes`]
    /// reading), is now, or finished (or a confirmation came) in between.
    pub(crate) fn wrote_since(&self, earlier: u32) -> bool {
        let now = self.writes();
        now != earlier || now & (WRITE_GENERATION - 1) != 0
    }

    fn timings(&self) -> MutexGuard<'_, Timings> {
        // Each critical section leaves the timings consistent: poison is harmless.
        self.timings.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state at `now`, with the time-driven transitions applied even if the sentry
    /// has not published them yet; and when the next time-driven change is due.
    pub(crate) fn state_at(&self, now: Instant) -> (HoldState, Option<Instant>) {
        let published = self.published();
        if published == HoldState::Lost {
            return (HoldState::Lost, None);
        }
        let timings = self.timings();
        let deadline_ms = self.deadline_ms();
        let now_ms = millis(now);
        // Timestamps are whole milliseconds, the send time rounded down: the expiry is
        // taken as passed one millisecond after it, so that `Lost` never comes before
        // the lease really ran out (the warning, `AtRisk`, came long before).
        if now_ms > timings.expires_ms {
            (HoldState::Lost, None)
        } else if now_ms >= deadline_ms {
            (HoldState::AtRisk, Some(instant(timings.expires_ms + 1)))
        } else {
            (published, Some(instant(deadline_ms)))
        }
    }

    pub(crate) fn state(&self) -> HoldState {
        self.state_at(Instant::now()).0
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.state() == HoldState::Lost
    }

    /// Whether a command sent at or after `at` confirmed the hold.
    pub(crate) fn confirmed_since(&self, at: Instant) -> bool {
        self.timings().confirmed_ms >= millis(at)
    }

    /// Whether the hold is at risk through a fault and waits for a check in Redis.
    pub(crate) fn needs_verification(&self) -> bool {
        self.published() == HoldState::AtRisk && self.timings().confirm_after_ms != NOT_SET
    }

    /// How long the hold has been at risk at `now` (`None`: it is not).
    pub(crate) fn at_risk_for(&self, now: Instant) -> Option<Duration> {
        let since_ms = self.timings().at_risk_since_ms;
        (since_ms != NOT_SET).then(|| now.saturating_duration_since(instant(since_ms)))
    }

    /// The earliest moment Redis may expire the hold as this client last set it (ms
    /// since the epoch of [`millis`]): what a check that finds it shorter compares with.
    pub(crate) fn expires_ms(&self) -> u64 {
        self.timings().expires_ms
    }

    /// The validity deadline, for the sentry's scans.
    pub(crate) fn deadline_ms(&self) -> u64 {
        self.deadline_ms.load(Ordering::Relaxed)
    }

    /// A receiver of the published state.
    pub(crate) fn subscribe(&self) -> watch::Receiver<HoldState> {
        let sender = self
            .watchers
            .get_or_init(|| watch::Sender::new(self.published()));
        // A transition between reading the state and the channel's birth is sent here.
        self.publish();
        sender.subscribe()
    }

    fn published(&self) -> HoldState {
        match self.state.load(Ordering::Acquire) & STATE_BITS {
            0 => HoldState::Held,
            1 => HoldState::AtRisk,
            _ => HoldState::Lost,
        }
    }

    /// Sends the published state to the watchers, if any.
    fn publish(&self) {
        if let Some(sender) = self.watchers.get() {
            let now = self.published();
            sender.send_if_modified(|state| {
                let changed = *state != now;
                *state = now;
                changed
            });
        }
    }

    /// How many times the hold has gone from `Held` to `AtRisk` so far (wrapping).
    pub(crate) fn risks(&self) -> u32 {
        self.state.load(Ordering::Acquire) >> RISK_SHIFT
    }

    /// Moves the state from `from` (any but `Lost` when `None`) to `to`; whether it did.
    /// A move from `Held` to `AtRisk` counts one more risk, in the same step.
    fn transition(&self, from: Option<HoldState>, to: HoldState) -> bool {
        let moved = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let current = word & STATE_BITS;
                let ok = match from {
                    Some(from) => current == from as u32,
                    None => current != HoldState::Lost as u32,
                };
                let mut risks = word >> RISK_SHIFT;
                if current == HoldState::Held as u32 && to == HoldState::AtRisk {
                    risks = risks.wrapping_add(1) & (u32::MAX >> RISK_SHIFT);
                }
                ok.then_some(risks << RISK_SHIFT | to as u32)
            })
            .is_ok();
        if moved {
            self.publish();
        }
        moved
    }

    /// A command sent at `sent` set the lease to `lease_ms`. `reset`: the lease is what
    /// this command says even if shorter than before (an acquisition with a lease);
    /// otherwise it only moves later (a renewal). Recovers an at-risk hold where the
    /// confirmation counts (see the module docs) and `may_recover` (not while a failover
    /// is announced and the command may have reached the old primary).
    pub(crate) fn confirm(
        &self,
        sent: Instant,
        lease_ms: u64,
        margin_ms: u64,
        reset: bool,
        may_recover: bool,
    ) -> Option<Transition> {
        if !may_recover {
            // It may have renewed the key on a server that is no longer the primary: it
            // tells nothing about the hold on the new one.
            return None;
        }
        let sent_ms = millis(sent);
        let expires_ms = sent_ms.saturating_add(lease_ms);
        self.writes.fetch_add(WRITE_GENERATION, Ordering::AcqRel);
        let mut timings = self.timings();
        timings.confirmed_ms = timings.confirmed_ms.max(sent_ms);
        if reset || expires_ms > timings.expires_ms {
            timings.expires_ms = expires_ms;
            self.deadline_ms
                .store(expires_ms.saturating_sub(margin_ms), Ordering::Relaxed);
        }
        if self.published() != HoldState::AtRisk {
            return None;
        }
        if timings.confirm_after_ms != NOT_SET && sent_ms < timings.confirm_after_ms {
            return None;
        }
        let now = Instant::now();
        if millis(now) >= self.deadline_ms() {
            return None;
        }
        timings.confirm_after_ms = NOT_SET;
        let since_ms = std::mem::replace(&mut timings.at_risk_since_ms, NOT_SET);
        drop(timings);
        let changed = self.transition(Some(HoldState::AtRisk), HoldState::Held);
        changed.then(|| {
            Transition::Recovered(if since_ms == NOT_SET {
                Duration::ZERO
            } else {
                now.saturating_duration_since(instant(since_ms))
            })
        })
    }

    /// The hold can no longer be trusted without a check: a fault at `at`.
    pub(crate) fn suspend(&self, cause: Cause, at: Instant) -> Option<Transition> {
        let mut timings = self.timings();
        if self.published() == HoldState::Lost {
            return None;
        }
        // Even if already at risk (by the deadline), a fault means older replies no
        // longer count.
        let at_ms = millis(at);
        timings.confirm_after_ms = match timings.confirm_after_ms {
            NOT_SET => at_ms,
            after => after.max(at_ms),
        };
        if timings.at_risk_since_ms == NOT_SET {
            timings.at_risk_since_ms = at_ms;
        }
        drop(timings);
        self.raise_at_risk(cause)
    }

    fn raise_at_risk(&self, cause: Cause) -> Option<Transition> {
        self.transition(Some(HoldState::Held), HoldState::AtRisk)
            .then_some(Transition::AtRisk(cause))
    }

    /// Publishes the time-driven transitions due at `now` (the sentry's job).
    pub(crate) fn check_deadline(&self, now: Instant) -> Option<Transition> {
        match self.state_at(now).0 {
            HoldState::Lost => self.lose(Cause::LeaseEnded),
            HoldState::AtRisk => {
                let mut timings = self.timings();
                if timings.at_risk_since_ms == NOT_SET {
                    timings.at_risk_since_ms = millis(now);
                }
                drop(timings);
                self.raise_at_risk(Cause::ValidityDeadline)
            }
            _ => None,
        }
    }

    /// The hold is gone, for good.
    pub(crate) fn lose(&self, cause: Cause) -> Option<Transition> {
        self.transition(None, HoldState::Lost)
            .then_some(Transition::Lost(cause))
    }
}

/// Reports a transition of a hold: tracing, and metrics with the feature on.
pub(crate) fn report(
    signal: &HoldSignal,
    transition: Transition,
    hold: Option<&(std::sync::Arc<str>, crate::names::owner::LockOwner, bool)>,
) {
    let lock = hold.map(|h| &*h.0);
    let owner = hold.map(|h| h.1.to_string());
    match transition {
        Transition::AtRisk(cause) => {
            tracing::warn!(
                lock,
                owner,
                cause = cause.as_str(),
                "lock at risk: the holder can no longer be sure it holds it"
            );
        }
        Transition::Recovered(after) => {
            tracing::info!(
                lock,
                owner,
                at_risk_ms = after.as_millis() as u64,
                "lock confirmed held again"
            );
        }
        Transition::Lost(cause) => {
            tracing::warn!(lock, owner, cause = cause.as_str(), "lock lost");
        }
    }
    match transition {
        Transition::AtRisk(cause) => crate::engine::telemetry::hold_at_risk(cause.as_str()),
        Transition::Recovered(after) => crate::engine::telemetry::hold_recovered(after),
        Transition::Lost(cause) => {
            crate::engine::telemetry::hold_lost(cause.as_str(), signal.at_risk_for(Instant::now()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_small() {
        // A held lock keeps one for as long as it is held, and a client may hold many:
        // 72 B, plus the `Arc`'s counts, is a 96 B allocation.
        assert!(std::mem::size_of::<HoldSignal>() <= 72);
    }

    #[tokio::test(start_paused = true)]
    async fn deadline_then_expiry() {
        let signal = HoldSignal::new(Instant::now(), 1_000, 30);
        assert_eq!(signal.state(), HoldState::Held);
        tokio::time::advance(Duration::from_millis(971)).await;
        assert_eq!(signal.state(), HoldState::AtRisk);
        assert_eq!(
            signal.check_deadline(Instant::now()),
            Some(Transition::AtRisk(Cause::ValidityDeadline))
        );
        tokio::time::advance(Duration::from_millis(31)).await;
        assert_eq!(signal.state(), HoldState::Lost);
        assert_eq!(
            signal.check_deadline(Instant::now()),
            Some(Transition::Lost(Cause::LeaseEnded))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_fault_needs_a_newer_confirmation() {
        let start = Instant::now();
        let signal = HoldSignal::new(start, 1_000, 30);
        tokio::time::advance(Duration::from_millis(10)).await;
        let fault = Instant::now();
        assert!(signal.suspend(Cause::ConnectionLost, fault).is_some());
        assert_eq!(signal.state(), HoldState::AtRisk);
        // A reply to a renewal sent before the fault does not recover it.
        assert_eq!(signal.confirm(start, 1_000, 30, false, true), None);
        assert_eq!(signal.state(), HoldState::AtRisk);
        tokio::time::advance(Duration::from_millis(5)).await;
        assert!(matches!(
            signal.confirm(Instant::now(), 1_000, 30, false, true),
            Some(Transition::Recovered(_))
        ));
        assert_eq!(signal.state(), HoldState::Held);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_past_the_deadline_starts_at_risk_not_lost() {
        let sent = Instant::now();
        tokio::time::advance(Duration::from_millis(1_500)).await;
        let signal = HoldSignal::new(sent, 1_000, 30);
        assert_eq!(signal.state(), HoldState::AtRisk);
        assert!(signal.needs_verification());
        // A renewal sent before the reply does not count; one sent after it does.
        assert_eq!(signal.confirm(sent, 1_000, 30, false, true), None);
        tokio::time::advance(Duration::from_millis(5)).await;
        assert!(matches!(
            signal.confirm(Instant::now(), 1_000, 30, false, true),
            Some(Transition::Recovered(_))
        ));
        assert_eq!(signal.state(), HoldState::Held);
        // Unconfirmed, it is lost once even a script run at the reply would have expired.
        let late = HoldSignal::new(sent, 1_000, 30);
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(late.state(), HoldState::AtRisk);
        tokio::time::advance(Duration::from_millis(2)).await;
        assert_eq!(late.state(), HoldState::Lost);
        // A reply with less than a renewal period of validity left starts at risk too;
        // a prompt one does not.
        let start = Instant::now();
        tokio::time::advance(Duration::from_millis(700)).await;
        assert_eq!(HoldSignal::new(start, 1_000, 30).state(), HoldState::AtRisk);
        let start = Instant::now();
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(HoldSignal::new(start, 1_000, 30).state(), HoldState::Held);
    }

    #[tokio::test(start_paused = true)]
    async fn lost_is_final() {
        let signal = HoldSignal::new(Instant::now(), 1_000, 30);
        assert!(signal.lose(Cause::FieldGone).is_some());
        assert_eq!(signal.confirm(Instant::now(), 1_000, 30, true, true), None);
        assert_eq!(signal.state(), HoldState::Lost);
        assert!(signal.check_deadline(Instant::now()).is_none());
    }

    #[test]
    fn margins() {
        assert_eq!(validity_margin(30_000, None), 610);
        assert_eq!(validity_margin(10, None), 5);
        assert_eq!(validity_margin(1_000, Some(Duration::from_secs(5))), 500);
    }
}
