//! Taking the lock: `acquire_as` (the entry of every `lock`, `try_lock*` and `acquire*`,
//! with its span and metrics), the choice of wait (one attempt, the local line of the
//! kinds that hand off, or Redisson's wait loop), one `attempt` (the acquire script,
//! written at most once and finished in the background if the caller goes away), and
//! `register_acquired` (watchdog, re-arm lease, hold ledger).
//!
//! Invariants: once written, an acquire script is finished (an abandoned acquisition is
//! released, an abandoned queue slot left; see [`FinishOnDrop`]); a watchdog hold
//! registers with the renewal registry before the caller sees it; a queued waiter that
//! gives up leaves the queue exactly once ([`QueueExit`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::handle::Lock;
use super::kind::LockKind;
use super::kind::{Acquire, AcquireMode, Waiting};
use super::queue_exit::QueueExit;
use super::running::unexpected;
use super::settling::Outcome;
use crate::config::lease_millis;
use crate::connection::detach::{FinishOnDrop, Kept};
use crate::connection::replicas::Synced;
use crate::connection::scripts::{Resend, outcome_unknown};
use crate::engine::hold::state::HoldSignal;
use crate::engine::telemetry;
use crate::engine::wait::pubsub::Subscription;
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
pub(super) enum Wait {
    Once,
    /// Until the deadline; the whole budget (a fair lock reserves it per queue slot).
    Until(Instant, Duration),
    Forever,
}

impl Wait {
    pub(super) fn up_to(wait: Duration) -> Wait {
        if wait.is_zero() {
            return Wait::Once;
        }
        match Instant::now().checked_add(wait) {
            Some(deadline) => Wait::Until(deadline, wait),
            None => Wait::Forever,
        }
    }
}

/// A successful acquisition: what a guard needs to know.
pub(crate) struct Acquired {
    /// The hold's state, shared with the owner's other holds of the lock.
    pub(crate) signal: Arc<HoldSignal>,
    pub(crate) lease_deadline: Option<Instant>,
    pub(crate) token: Option<u64>,
}

pub(super) enum Attempt {
    Acquired(Acquired),
    /// Held by another owner; the time worth waiting in ms (negative: no expiry).
    Held(i64),
}

impl<K: LockKind> Lock<K> {
    /// Redisson's acquire loop (protocol §7): try; if held, subscribe; then retry, and
    /// sleep until a message or the holder's TTL (bounded by the wait budget). A spin
    /// lock sleeps its back-off instead of listening.
    pub(super) async fn acquire_as(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        let started = Instant::now();
        let span = tracing::debug_span!(
            "redisson_lock.acquire",
            lock = %self.name,
            kind = K::NAME,
            %owner,
            lease_ms = lease.map(|l| l.as_millis() as u64),
            ?wait,
            outcome = tracing::field::Empty,
        );
        let result = match self
            .acquire_with_wait(owner, lease, wait)
            .instrument(span.clone())
            .await
        {
            // A non-reentrant lock the caller already holds: `try_lock*` answer false at
            // once (waiting would wait on itself); `lock()` returns the error.
            Err(Error::NonReentrant { .. }) if !matches!(wait, Wait::Forever) => Ok(None),
            other => other,
        };
        let outcome = match &result {
            Ok(Some(_)) => telemetry::AcquireOutcome::Acquired,
            Ok(None) => telemetry::AcquireOutcome::TimedOut,
            Err(_) => telemetry::AcquireOutcome::Error,
        };
        span.record("outcome", outcome.as_str());
        telemetry::acquire_finished(K::NAME, outcome, started.elapsed(), self.metric_name());
        result
    }

    pub(super) async fn acquire_with_wait(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        self.check()?;
        self.kind.check()?;
        let lease_ms = lease.map(lease_millis).transpose()?;
        if matches!(wait, Wait::Once) && !K::CAPABILITIES.yields_to_writers {
            // One attempt: nothing to wait for, no queue to leave.
            let mode = AcquireMode::Once;
            return match self.attempt(owner, lease_ms, mode, wait).await? {
                Attempt::Acquired(acquired) => Ok(Some(acquired)),
                Attempt::Held(_) => Ok(None),
            };
        }
        if K::CAPABILITIES.hands_off_locally {
            return self.acquire_in_line(owner, lease_ms, wait).await;
        }
        // Boxed: inline, a reentrant lock's `lock()` future (which never takes this path)
        // would carry this wait's size too, and every waiting task with it.
        Box::pin(self.acquire_redisson_wait(owner, lease_ms, wait)).await
    }

    /// Redisson's wait for the kinds without a local line (fair, read-write, fenced,
    /// spin): try, subscribe (or poll), retry until taken or out of time.
    pub(super) async fn acquire_redisson_wait(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        wait: Wait,
    ) -> Result<Option<Acquired>> {
        let mode = self.queue_mode(wait);
        // A queued waiter that leaves without the lock must leave the queue: on every
        // early return and on drop (unless an attempt in flight does it itself).
        let mut queued = QueueExit::new(self, owner, mode);
        let first_deadline = match wait {
            Wait::Once => Some(Instant::now()),
            Wait::Until(deadline, _) => Some(deadline),
            Wait::Forever => None,
        };
        if !self.yield_to_writers(owner, first_deadline).await {
            return Ok(None);
        }
        let waiting = match wait {
            Wait::Once => None,
            _ => Some(self.kind.waiting(&self.target(owner))),
        };
        // The lock was contended in this client moments ago and its channel is still
        // subscribed: take the channel first, so that the first attempt is the channel
        // wait's own and needs no retry after subscribing.
        let early = match &waiting {
            Some(Waiting::Channel(channel)) if self.context.pubsub.is_ready(channel) => {
                self.subscribe(owner, channel, first_deadline).await?
            }
            _ => None,
        };
        let mut ttl = -1;
        if early.is_none() {
            let first = self.attempt_queued(owner, lease_ms, mode, first_deadline, &mut queued);
            ttl = match first.await? {
                Attempt::Acquired(acquired) => {
                    queued.disarm();
                    return Ok(Some(acquired));
                }
                Attempt::Held(ttl) => ttl,
            };
        }
        let Some(waiting) = waiting else {
            return Ok(None); // one attempt only
        };
        let deadline = match wait {
            // Out of time after the first attempt (an early channel's wait makes its own).
            Wait::Until(deadline, _) if early.is_none() && Instant::now() >= deadline => {
                queued.leave().await;
                return Ok(None);
            }
            Wait::Until(deadline, _) => Some(deadline),
            Wait::Once | Wait::Forever => None,
        };
        let waited = self
            .wait_between_attempts(
                owner,
                lease_ms,
                mode,
                deadline,
                (waiting, early, ttl),
                &mut queued,
            )
            .await;
        match waited {
            Ok(Some(acquired)) => {
                queued.disarm();
                Ok(Some(acquired))
            }
            Ok(None) => {
                queued.leave().await;
                Ok(None)
            }
            // The queue exit runs in the background when `queued` drops.
            Err(error) => Err(error),
        }
    }

    /// The acquire mode of a wait: one attempt, or a place in a fair queue reserved for
    /// the wait's budget (Redisson's `fairLockWaitTimeout` without one).
    fn queue_mode(&self, wait: Wait) -> AcquireMode {
        match wait {
            Wait::Once => AcquireMode::Once,
            Wait::Until(_, budget) => AcquireMode::Queue {
                wait_ms: budget.as_millis().clamp(1, u128::from(u64::MAX)) as u64,
            },
            Wait::Forever => AcquireMode::Queue {
                wait_ms: self
                    .context
                    .config
                    .settings
                    .fair_lock_wait_timeout
                    .as_millis() as u64,
            },
        }
    }

    /// Between the attempts of a waiter that did not get the lock at once: on its channel
    /// (subscribed `early` or now), or by polling; the holder's `ttl` from the last try.
    async fn wait_between_attempts(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        deadline: Option<Instant>,
        (waiting, early, ttl): (Waiting, Option<Subscription>, i64),
        queued: &mut QueueExit<K>,
    ) -> Result<Option<Acquired>> {
        let _waiting = telemetry::Waiting::start(K::NAME);
        let _announced = K::CAPABILITIES
            .write_lock
            .then(|| self.context.writers.announce(&self.name));
        match waiting {
            Waiting::Channel(channel) => {
                let subscribed = (channel.as_str(), early);
                self.wait_on_channel(owner, lease_ms, mode, deadline, ttl, subscribed, queued)
                    .await
            }
            Waiting::Poll(backoff) => {
                self.wait_polling(owner, lease_ms, mode, deadline, backoff, queued)
                    .await
            }
        }
    }

    /// One acquire script, finished in the background if the caller goes away (and then
    /// undone: released if it took the lock, the queue left if it queued). Registers a
    /// watchdog hold on success.
    pub(super) async fn attempt(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        mode: AcquireMode,
        wait: Wait,
    ) -> Result<Attempt> {
        let lease = lease_ms.unwrap_or(self.context.watchdog_ms);
        // Before the script, not in it: an abandoned attempt's work never waits for
        // itself (see `HoldLedger::background_call`). Boxed, and only when there is
        // something to settle: inline, its Redis call would make every `lock()` future
        // (and every waiting task) several KB larger.
        if self.may_need_settling(owner) {
            Box::pin(self.settle_doubt(owner)).await?;
        }
        let started = Instant::now();
        let settle_by = self.settle_by(wait, lease);
        let work = {
            let lock = self.clone();
            async move { lock.acquire_script(owner, lease, mode, settle_by).await }
        };
        let undo = {
            let lock = self.clone();
            move |reply: Result<Acquire>| async move {
                match reply {
                    Ok(Acquire::Taken { .. }) => {
                        tracing::debug!(lock = %lock.name, %owner, "acquired after the caller left: releasing");
                        if let Err(error) = lock.release_script(owner, lease).await {
                            tracing::warn!(lock = %lock.name, %error, "could not release an abandoned acquisition");
                        }
                    }
                    _ => {
                        if let AcquireMode::Queue { wait_ms } = mode {
                            lock.leave_queue(owner, wait_ms).await;
                        }
                    }
                }
            }
        };
        // Dropped before it answered: the owner's next call on the lock waits until the
        // work and its undoing are over (redisson#7272).
        let write = K::CAPABILITIES.write_lock;
        let mark = move || -> Kept {
            Some(Box::new(
                self.context.holds.background_call(&self.name, owner, write),
            ))
        };
        let token = match FinishOnDrop::new(work, undo).keeping(mark).await? {
            Acquire::Held { ttl } => return Ok(Attempt::Held(ttl)),
            Acquire::Taken { token } => token,
        };
        let acquired = self.register_acquired(owner, lease_ms, started, token);
        if K::CAPABILITIES.hands_off_locally
            && let Some(line) = self.context.lines.get(&self.name)
        {
            line.taken_by(owner, acquired.lease_deadline);
        }
        Ok(Attempt::Acquired(acquired))
    }

    /// What every acquisition does once Redis said it is ours (by an acquire script, or by
    /// a hand-off that started at `started`): a watchdog hold registers with the renewal
    /// registry, a lease hold sets the re-arm lease; the hold ledger counts it.
    pub(super) fn register_acquired(
        &self,
        owner: LockOwner,
        lease_ms: Option<u64>,
        started: Instant,
        token: Option<u64>,
    ) -> Acquired {
        let target = self.target(owner);
        if let Some(lease) = lease_ms {
            self.shared
                .internal_lease_ms
                .store(lease, Ordering::Relaxed);
        }
        let signal = self.context.registry.add_hold(
            (self.name.clone(), owner, K::CAPABILITIES.write_lock),
            lease_ms,
            started,
            || self.kind.held(&target),
        );
        let acquired = Acquired {
            signal,
            lease_deadline: lease_ms.map(|lease| started + Duration::from_millis(lease)),
            token,
        };
        self.context.holds.acquired(
            &self.name,
            owner,
            K::CAPABILITIES.write_lock,
            acquired.lease_deadline,
            acquired.signal.clone(),
        );
        acquired
    }

    /// Until when an acquire whose reply was lost may spend learning its outcome: the
    /// caller's wait budget, but at least two response timeouts; for a caller that waits
    /// without a bound, until the hold it may have taken would have expired (its lease,
    /// plus a response timeout), after which nothing of it can remain.
    pub(super) fn settle_by(&self, wait: Wait, lease_ms: u64) -> Instant {
        let now = Instant::now();
        let config = &self.context.config;
        let floor = now + config.settings.response_timeout.saturating_mul(2);
        match wait {
            Wait::Once => floor,
            Wait::Until(deadline, _) => deadline.max(floor),
            Wait::Forever => {
                floor.max(now + Duration::from_millis(lease_ms) + config.settings.response_timeout)
            }
        }
    }

    /// The kind's acquire script. Written at most once (see [`Resend::Never`]): when its
    /// reply is lost, the owner's count in Redis says whether it ran (see
    /// [`HoldLedger`](crate::engine::hold::ledger::HoldLedger)); a script that surely did not run
    /// is sent again, one that ran is reported (or, for a fenced lock whose token was
    /// lost with the reply, undone and sent again).
    pub(super) async fn acquire_script(
        &self,
        owner: LockOwner,
        lease_ms: u64,
        mode: AcquireMode,
        settle_by: Instant,
    ) -> Result<Acquire> {
        let mut sends = 0u32;
        loop {
            sends += 1;
            let before = self
                .context
                .holds
                .known(&self.name, owner, K::CAPABILITIES.write_lock);
            let call = self.kind.acquire(&self.target(owner), lease_ms, mode);
            // A re-entry can re-arm the key to a shorter lease than the hold's (an RLock's
            // `PEXPIRE`): a check beside it is asked again. A first hold has no entry to
            // mark, and a read-write half's acquisition only lengthens the key, so the
            // free lock's path looks nothing up.
            let _writing = (before > 0).then(|| {
                self.context.registry.writing(
                    &(self.name.clone(), owner, K::CAPABILITIES.write_lock),
                    false,
                )
            });
            // A hold this send takes is gone by then at the latest, unless something
            // else keeps the hash alive (see `learn_outcome`).
            let expires_by = Instant::now()
                + Duration::from_millis(lease_ms)
                + self.context.config.settings.response_timeout;
            let error = match self.run_synced(&call, Resend::Never).await {
                Ok((reply, synced)) => {
                    let acquire = self
                        .kind
                        .acquire_reply(reply)
                        .map_err(|other| unexpected("acquire", other))?;
                    return match (acquire, synced) {
                        (Acquire::Taken { .. }, Synced::NoneAcked { replicas }) => {
                            self.undo_unsynced(owner, before, lease_ms).await;
                            Err(Error::NoSyncedReplicas {
                                name: self.name().to_owned(),
                                replicas,
                            })
                        }
                        (Acquire::Taken { .. }, Synced::Failed(error)) => {
                            self.undo_unsynced(owner, before, lease_ms).await;
                            Err(self.redis_error_as(owner, error))
                        }
                        (acquire, _) => Ok(acquire),
                    };
                }
                Err(error) if outcome_unknown(&error) && !self.context.is_closed() => error,
                Err(error) => return Err(self.redis_error_as(owner, error)),
            };
            tracing::warn!(lock = %self.name, %owner, %error, "acquire outcome unknown; reading the owner's hold count");
            match self
                .learn_outcome(
                    owner,
                    &self.kind.field(&self.context, owner),
                    before,
                    (settle_by, expires_by),
                    &error,
                )
                .await?
            {
                Outcome::Ran if !K::CAPABILITIES.hands_out_tokens => {
                    return Ok(Acquire::Taken { token: None });
                }
                Outcome::Ran => {
                    // The token went with the lost reply: give the hold back, draw again.
                    self.release_script(owner, lease_ms).await?;
                }
                Outcome::NotRun => {}
            }
            if sends >= 3 {
                // Nothing is held: each unknown outcome was settled as "did not run" (or
                // undone), so the error is just an error.
                return Err(self.redis_error_as(owner, error));
            }
        }
    }
}
