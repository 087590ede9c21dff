//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`):
//! the application installs the recorder and exporter it likes; without the feature every
//! function here compiles to nothing.
//!
//! Every name and label is listed in `docs/operations.md`. Labels are low-cardinality:
//! the lock kind and an outcome; the lock name only when
//! [`ConfigBuilder::metrics_lock_names`](crate::ConfigBuilder::metrics_lock_names) opts
//! in.

use std::time::Duration;

/// How an acquisition call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AcquireOutcome {
    Acquired,
    TimedOut,
    Error,
}

impl AcquireOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AcquireOutcome::Acquired => "acquired",
            AcquireOutcome::TimedOut => "timed_out",
            AcquireOutcome::Error => "error",
        }
    }
}

/// How an unlock call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnlockOutcome {
    Released,
    StillHeld,
    NotOwner,
    Error,
}

impl UnlockOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            UnlockOutcome::Released => "released",
            UnlockOutcome::StillHeld => "still_held",
            UnlockOutcome::NotOwner => "not_owner",
            UnlockOutcome::Error => "error",
        }
    }
}

/// Names of every metric this crate records.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) mod names {
    /// Counter: acquisition calls, by `kind` and `outcome`.
    pub(crate) const ACQUIRE_TOTAL: &str = "redisson_lock_acquire_total";
    /// Histogram (seconds): from the call to its outcome, by `kind` and `outcome`.
    pub(crate) const ACQUIRE_WAIT: &str = "redisson_lock_acquire_wait_seconds";
    /// Histogram (seconds): from the first hold to the release of the last, by `kind`.
    pub(crate) const HOLD: &str = "redisson_lock_hold_seconds";
    /// Counter: unlock calls, by `kind` and `outcome`.
    pub(crate) const UNLOCK_TOTAL: &str = "redisson_lock_unlock_total";
    /// Counter: watchdog renewal rounds.
    pub(crate) const RENEWAL_ROUNDS: &str = "redisson_lock_renewal_rounds_total";
    /// Counter: locks renewed, by `outcome` (`renewed`, `lost`, `failed`).
    pub(crate) const RENEWALS: &str = "redisson_lock_renewals_total";
    /// Counter: holds lost (their guards' state became `Lost`), by `cause`.
    pub(crate) const LOST: &str = "redisson_lock_lost_total";
    /// Counter: holds that became at risk, by `cause`.
    pub(crate) const AT_RISK: &str = "redisson_lock_at_risk_total";
    /// Counter: at-risk holds confirmed held again.
    pub(crate) const RECOVERED: &str = "redisson_lock_recovered_total";
    /// Histogram (seconds): how long a hold was at risk, by `outcome` (`recovered`,
    /// `lost`).
    pub(crate) const AT_RISK_TIME: &str = "redisson_lock_at_risk_seconds";
    /// Gauge: tasks waiting to acquire, by `kind`.
    pub(crate) const WAITERS: &str = "redisson_lock_waiters";
    /// Gauge: channels (locks', semaphores', latches') this process is subscribed to.
    pub(crate) const SUBSCRIPTIONS: &str = "redisson_lock_subscriptions";
    /// Counter: count-down latch waits, by `outcome` (`opened`, `timed_out`, `error`).
    pub(crate) const LATCH_WAIT_TOTAL: &str = "redisson_lock_latch_wait_total";
    /// Histogram (seconds): from a latch wait's call to its outcome, by `outcome`.
    pub(crate) const LATCH_WAIT: &str = "redisson_lock_latch_wait_seconds";
    /// Counter: count-down latch `count_down` calls applied, by `opened` (`true` when it
    /// left a count of 0 or less).
    pub(crate) const LATCH_COUNT_DOWN: &str = "redisson_lock_latch_count_down_total";
    /// Counter: key-tracking set-ups, by `outcome` (`on`; `refused`: the server or the
    /// user refused `CLIENT TRACKING` or `EVALSHA_RO`, and holders hear of other
    /// clients' changes at the next renewal only).
    pub(crate) const KEY_TRACKING: &str = "redisson_lock_key_tracking_total";
    /// Counter: holds checked because Redis invalidated their keys, by `outcome`
    /// (`held`, `shortened`, `gone`).
    pub(crate) const TRACKING_CHECKS: &str = "redisson_lock_tracking_checks_total";
}

#[cfg(feature = "metrics")]
fn labels(kind: &'static str, outcome: &'static str, lock: Option<&str>) -> Vec<metrics::Label> {
    let mut labels = vec![
        metrics::Label::new("kind", kind),
        metrics::Label::new("outcome", outcome),
    ];
    if let Some(lock) = lock {
        labels.push(metrics::Label::new("lock", lock.to_owned()));
    }
    labels
}

/// An acquisition call ended after `waited`.
#[allow(unused_variables)]
pub(crate) fn acquire_finished(
    kind: &'static str,
    outcome: AcquireOutcome,
    waited: Duration,
    lock: Option<&str>,
) {
    #[cfg(feature = "metrics")]
    {
        let labels = labels(kind, outcome.as_str(), lock);
        metrics::counter!(names::ACQUIRE_TOTAL, labels.clone()).increment(1);
        metrics::histogram!(names::ACQUIRE_WAIT, labels).record(waited.as_secs_f64());
    }
}

/// An unlock call ended; `held_for` is set when it gave back the last hold.
#[allow(unused_variables)]
pub(crate) fn unlock_finished(
    kind: &'static str,
    outcome: UnlockOutcome,
    held_for: Option<Duration>,
    lock: Option<&str>,
) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(names::UNLOCK_TOTAL, labels(kind, outcome.as_str(), lock)).increment(1);
        if let Some(held_for) = held_for {
            let mut labels = vec![metrics::Label::new("kind", kind)];
            if let Some(lock) = lock {
                labels.push(metrics::Label::new("lock", lock.to_owned()));
            }
            metrics::histogram!(names::HOLD, labels).record(held_for.as_secs_f64());
        }
    }
}

/// One renewal round: locks renewed, found lost, and not renewed because of an error.
#[allow(unused_variables)]
pub(crate) fn renewal_round(renewed: u64, lost: u64, failed: u64) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(names::RENEWAL_ROUNDS).increment(1);
        for (outcome, n) in [("renewed", renewed), ("lost", lost), ("failed", failed)] {
            if n > 0 {
                metrics::counter!(names::RENEWALS, "outcome" => outcome).increment(n);
            }
        }
    }
}

/// Key tracking was set up (`true`) or refused (`false`).
#[allow(unused_variables)]
pub(crate) fn key_tracking(on: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(names::KEY_TRACKING, "outcome" => if on { "on" } else { "refused" })
        .increment(1);
}

/// Holds checked after invalidations: still as set, shortened, gone.
#[allow(unused_variables)]
pub(crate) fn tracking_checks(held: u64, shortened: u64, gone: u64) {
    #[cfg(feature = "metrics")]
    for (outcome, n) in [("held", held), ("shortened", shortened), ("gone", gone)] {
        if n > 0 {
            metrics::counter!(names::TRACKING_CHECKS, "outcome" => outcome).increment(n);
        }
    }
}

/// A hold went at risk (see `crate::engine::hold::state`), for `cause`.
#[allow(unused_variables)]
pub(crate) fn hold_at_risk(cause: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(names::AT_RISK, "cause" => cause).increment(1);
}

/// A hold at risk was confirmed held again, `after` it went at risk.
#[allow(unused_variables)]
pub(crate) fn hold_recovered(after: Duration) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(names::RECOVERED).increment(1);
        metrics::histogram!(names::AT_RISK_TIME, "outcome" => "recovered")
            .record(after.as_secs_f64());
    }
}

/// A hold was lost for `cause`; `at_risk_for`: how long it had been at risk by then.
#[allow(unused_variables)]
pub(crate) fn hold_lost(cause: &'static str, at_risk_for: Option<Duration>) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(names::LOST, "cause" => cause).increment(1);
        if let Some(after) = at_risk_for {
            metrics::histogram!(names::AT_RISK_TIME, "outcome" => "lost")
                .record(after.as_secs_f64());
        }
    }
}

/// A channel was subscribed (`true`) or unsubscribed (`false`). A gauge moved up
/// and down, not set, so that several clients in one process add up.
#[allow(unused_variables)]
pub(crate) fn subscription(subscribed: bool) {
    #[cfg(feature = "metrics")]
    {
        let gauge = metrics::gauge!(names::SUBSCRIPTIONS);
        if subscribed {
            gauge.increment(1.0);
        } else {
            gauge.decrement(1.0);
        }
    }
}

/// One task waiting to acquire, counted in the waiters gauge while it lives.
#[derive(Debug)]
pub(crate) struct Waiting {
    #[cfg(feature = "metrics")]
    kind: &'static str,
}

impl Waiting {
    #[allow(unused_variables)]
    pub(crate) fn start(kind: &'static str) -> Waiting {
        #[cfg(feature = "metrics")]
        {
            metrics::gauge!(names::WAITERS, "kind" => kind).increment(1.0);
            Waiting { kind }
        }
        #[cfg(not(feature = "metrics"))]
        Waiting {}
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        metrics::gauge!(names::WAITERS, "kind" => self.kind).decrement(1.0);
    }
}

/// How a count-down latch wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LatchWaitOutcome {
    Opened,
    TimedOut,
    Error,
}

impl LatchWaitOutcome {
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LatchWaitOutcome::Opened => "opened",
            LatchWaitOutcome::TimedOut => "timed_out",
            LatchWaitOutcome::Error => "error",
        }
    }
}

/// A count-down latch wait ended after `waited`.
#[allow(unused_variables)]
pub(crate) fn latch_wait_finished(outcome: LatchWaitOutcome, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        let outcome = outcome.as_str();
        metrics::counter!(names::LATCH_WAIT_TOTAL, "outcome" => outcome).increment(1);
        metrics::histogram!(names::LATCH_WAIT, "outcome" => outcome).record(waited.as_secs_f64());
    }
}

/// A latch's `count_down` was applied; `opened`: it left 0 or less.
#[allow(unused_variables)]
pub(crate) fn latch_count_down(opened: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(names::LATCH_COUNT_DOWN, "opened" => if opened { "true" } else { "false" })
        .increment(1);
}
