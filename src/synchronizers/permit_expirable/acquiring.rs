//! Taking permits: one attempt (ids chosen first, the script written once, a lost reply
//! settled by looking for the ids, an unsynced acquisition undone) and Redisson's wait
//! loop around it (docs/protocol.md §20.8): subscribe to `redisson_sc:{N}`, enable the
//! wake-up, try again, then sleep until a message, the earliest lease's end (the hint the
//! script answers: an expiring permit publishes nothing) or the caller's deadline.
//!
//! Invariants:
//! * Cancel safety: an attempt runs in a [`FinishOnDrop`]: dropped while its script may
//!   have run, it is finished in the background and the permits it took are given back.
//!   Between attempts nothing is held; after the last one the result is returned without
//!   another await. The subscription share is dropped with the future.
//! * It waits through [`crate::engine::wait::waiter`], as every primitive does: every sleep is
//!   bounded by the hint, by the deadline, and by the wait's re-check when nothing else
//!   bounds it (a permit given a lease by `update_lease_time` after the waiter slept ends
//!   silently, docs/protocol.md §20.8).
//! * A lost reply is never answered with a permit whose lease has already ended: a
//!   found permit whose score is past is given back and a new attempt (new ids, new
//!   expiry) is made (Redisson re-sends with the old expiry, docs/protocol.md §24.4).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::id::PermitId;
use super::ops::{NO_LEASE, Reply, Shared};
use crate::connection::detach::FinishOnDrop;
use crate::connection::replicas::Synced;
use crate::connection::retry;
use crate::connection::scripts::now_ms;
use crate::connection::scripts::outcome_unknown;
use crate::engine::wait::messages::semaphore_messages;
use crate::engine::wait::waiter::{self, Budget, Listen, Tried};
use crate::error::{Error, Result};

/// How long a background give-back keeps trying.
const GIVE_BACK_PATIENCE: Duration = Duration::from_secs(600);

/// What expiry new permits get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lease {
    /// None: Redisson's no-lease score; the permit never expires.
    Unlimited,
    /// This many ms from the client's now.
    For(u64),
    /// The watchdog timeout from the client's now, renewed by the watchdog.
    Watchdog,
}

impl Lease {
    pub(crate) fn from_option(lease: Option<Duration>) -> Result<Lease> {
        match lease {
            None => Ok(Lease::Unlimited),
            Some(lease) => Ok(Lease::For(crate::config::lease_millis(lease)?)),
        }
    }

    fn score(self, now: i64, watchdog_ms: u64) -> i64 {
        match self {
            Lease::Unlimited => NO_LEASE,
            Lease::For(ms) => now.saturating_add(ms as i64),
            Lease::Watchdog => now.saturating_add(watchdog_ms as i64),
        }
    }
}

/// Permits taken: their ids and the send time of the script that took them.
#[derive(Debug)]
pub(crate) struct Taken {
    pub(crate) ids: Vec<PermitId>,
    pub(crate) sent: Instant,
}

/// What one attempt came to.
#[derive(Debug)]
enum Attempt {
    Taken(Taken),
    /// Not now; the earliest lease ends at this client-clock epoch ms.
    Hint(i64),
    NoHint,
    /// A lost reply settled as "nothing held": try again at once.
    Again,
}

/// Takes `permits` permits, waiting at most `wait` (`None`: until taken); `Ok(None)`
/// when the wait ran out.
pub(crate) async fn acquire(
    shared: &Arc<Shared>,
    permits: u32,
    lease: Lease,
    wait: Option<Duration>,
) -> Result<Option<Taken>> {
    shared.check_usable()?;
    if permits == 0 {
        return Err(Error::InvalidArgument(
            "the number of permits must be at least 1".to_owned(),
        ));
    }
    let started = Instant::now();
    let deadline = wait.map(|w| started + w);
    let _waiting = crate::engine::telemetry::Waiting::start(KIND);
    let result = acquire_loop(shared, permits, lease, deadline).await;
    let outcome = match &result {
        Ok(Some(_)) => crate::engine::telemetry::AcquireOutcome::Acquired,
        Ok(None) => crate::engine::telemetry::AcquireOutcome::TimedOut,
        Err(_) => crate::engine::telemetry::AcquireOutcome::Error,
    };
    crate::engine::telemetry::acquire_finished(
        KIND,
        outcome,
        started.elapsed(),
        shared.metric_name(),
    );
    result
}

/// The metrics' `kind` label.
pub(crate) const KIND: &str = "permit_expirable_semaphore";

async fn acquire_loop(
    shared: &Arc<Shared>,
    permits: u32,
    lease: Lease,
    deadline: Option<Instant>,
) -> Result<Option<Taken>> {
    let pubsub = &shared.context.pubsub;
    let unknown = AtomicU32::new(0);
    // A channel a waiter of this client subscribed moments ago: share it before the
    // first attempt, which then needs no second one. Otherwise the first attempt comes
    // before subscribing (as Redisson's: most acquires never wait).
    if !pubsub.is_ready(&shared.channel) {
        loop {
            match attempt(shared, permits, lease, &unknown).await? {
                Attempt::Taken(taken) => return Ok(Some(taken)),
                Attempt::Again => continue,
                Attempt::Hint(_) | Attempt::NoHint => break,
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
    let listen = Listen {
        channel: &shared.channel,
        messages: semaphore_messages,
        marker: None,
        what: "subscribing to the semaphore channel",
    };
    let budget = Budget {
        deadline,
        subscription_timeout: shared.context.config.settings.subscription_timeout,
    };
    let Some(subscription) = waiter::subscribe(pubsub, listen, budget, |e| shared.error(e)).await?
    else {
        return Ok(None);
    };
    waiter::wait_for(pubsub, &subscription, deadline, || async {
        if shared.context.is_closed() {
            return Err(Error::Shutdown);
        }
        Ok(match attempt(shared, permits, lease, &unknown).await? {
            Attempt::Taken(taken) => Tried::Done(taken),
            // A lost reply settled as "nothing taken": at once.
            Attempt::Again => Tried::NotYet(Some(Duration::ZERO)),
            // Wake when our clock reaches the score: the next attempt reclaims it (an
            // expiring permit publishes nothing).
            Attempt::Hint(at) => {
                let left = at.saturating_sub(now_ms()).max(0) as u64 + 1;
                Tried::NotYet(Some(Duration::from_millis(left)))
            }
            Attempt::NoHint => Tried::NotYet(None),
        })
    })
    .await
}

/// One attempt with fresh ids, finished in the background (and its permits given back)
/// if the caller's future is dropped meanwhile.
async fn attempt(
    shared: &Arc<Shared>,
    permits: u32,
    lease: Lease,
    unknown: &AtomicU32,
) -> Result<Attempt> {
    let ids: Vec<PermitId> = (0..permits).map(|_| shared.fresh_id()).collect();
    let work = {
        let shared = shared.clone();
        let ids = ids.clone();
        async move { attempt_work(&shared, ids, lease).await }
    };
    let abandoned = {
        let shared = shared.clone();
        move |result: Result<(Attempt, bool)>| async move {
            match result {
                Ok((Attempt::Taken(taken), _)) => {
                    tracing::debug!(semaphore = %shared.name, permits = taken.ids.len(), "an acquire was dropped after it took permits; giving them back");
                    shared.release_quietly(taken.ids, GIVE_BACK_PATIENCE).await;
                }
                Ok(_) => {}
                // The outcome stayed unknown: give the ids back, whatever they are.
                Err(_) => shared.release_quietly(ids, GIVE_BACK_PATIENCE).await,
            }
        }
    };
    let (attempt, was_unknown) = FinishOnDrop::new(work, abandoned).await?;
    if was_unknown {
        let lost = unknown.fetch_add(1, Ordering::Relaxed) + 1;
        if lost >= 3 && matches!(attempt, Attempt::Again) {
            return Err(Error::OutcomeUnknown {
                operation: "acquire",
                name: shared.given.clone(),
                reason: "three replies in a row were lost; each was settled as \"no permit \
                         taken\" (nothing is held). Try again later."
                    .to_owned(),
            });
        }
    }
    Ok(attempt)
}

/// The attempt itself: the script, then the replica check or the settling of a lost
/// reply. Also says whether the reply was lost.
async fn attempt_work(
    shared: &Arc<Shared>,
    ids: Vec<PermitId>,
    lease: Lease,
) -> Result<(Attempt, bool)> {
    let now = now_ms();
    let score = lease.score(now, shared.context.watchdog_ms);
    let sent = Instant::now();
    let error = match shared.acquire_script(&ids, score, now).await {
        Ok((Reply::Taken, synced)) => {
            return match synced {
                Synced::NoneAcked { replicas } => {
                    undo_unsynced(shared, ids).await;
                    Err(Error::NoSyncedReplicas {
                        name: shared.given.clone(),
                        replicas,
                    })
                }
                Synced::Failed(error) => {
                    undo_unsynced(shared, ids).await;
                    Err(shared.error(error))
                }
                Synced::Unchecked | Synced::Acked => {
                    Ok((Attempt::Taken(Taken { ids, sent }), false))
                }
            };
        }
        Ok((Reply::Hint(at), _)) => return Ok((Attempt::Hint(at), false)),
        Ok((Reply::NoHint, _)) => return Ok((Attempt::NoHint, false)),
        Err(error) if outcome_unknown(&error) && !shared.context.is_closed() => error,
        Err(error) => return Err(shared.error(error)),
    };
    tracing::warn!(semaphore = %shared.name, %error, "acquire outcome unknown; looking for the permit ids it chose");
    let settle_by = Instant::now() + shared.context.config.settings.response_timeout * 2;
    let mut pauses = retry::OUTCOME_ASKED.pauses();
    loop {
        let first = ids
            .first()
            .copied()
            .unwrap_or(PermitId::from_bytes([0; 16]));
        match shared.find(&first).await {
            // It ran, and the permits are ours with their lease still running.
            Ok(Some(found)) if found > now_ms() => {
                tracing::info!(semaphore = %shared.name, permit = %first, "the acquire had run: its permits are held");
                return Ok((Attempt::Taken(Taken { ids, sent }), true));
            }
            // It ran too late: the permits' lease has ended. Never hand those out.
            Ok(Some(_)) => {
                tracing::warn!(semaphore = %shared.name, permit = %first, "the acquire ran after its permits' lease ended; giving them back and trying again");
                shared.release_quietly(ids, GIVE_BACK_PATIENCE).await;
                return Ok((Attempt::Again, true));
            }
            Ok(None) => return Ok((Attempt::Again, true)),
            Err(lookup) if Instant::now() + pauses.peek() < settle_by => {
                tracing::debug!(semaphore = %shared.name, %lookup, "could not look for the permit yet");
                tokio::time::sleep(pauses.next()).await;
            }
            Err(lookup) => {
                let name = shared.given.clone();
                let shared = shared.clone();
                tokio::spawn(async move {
                    shared.release_quietly(ids, GIVE_BACK_PATIENCE).await;
                });
                return Err(Error::OutcomeUnknown {
                    operation: "acquire",
                    name,
                    reason: format!(
                        "its reply was lost ({error}) and the permit ids it chose could not be \
                         looked up ({lookup}); they are given back in the background as soon \
                         as Redis answers. Nothing is held."
                    ),
                });
            }
        }
    }
}

/// Gives back permits no replica acknowledged (Redisson's rollback, docs/protocol.md §24.4),
/// by their ids: sending it twice gives back nothing twice. No new attempt follows with
/// the old expiry.
async fn undo_unsynced(shared: &Arc<Shared>, ids: Vec<PermitId>) {
    tracing::warn!(semaphore = %shared.name, permits = ids.len(), "no replica acknowledged the acquisition: giving the permits back");
    shared.release_quietly(ids, GIVE_BACK_PATIENCE).await;
}
