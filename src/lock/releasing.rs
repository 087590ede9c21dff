//! Giving the lock back: `unlock_as` (every unlock: the watchdog hold stops at once, the
//! release is finished even if dropped), `release_settled` (the release, the hold ledger,
//! telemetry, the re-arm lease), the release script with its unlock latch
//! (`release_script`), and the releases of dropped guards.
//!
//! Invariants: an unlock is sent again only with the same latch, and only while the latch
//! surely lives; every unlock removes one renewal registration, and its script is sent
//! only once no renewal round of the hold is in flight (so no renewal lands after it); a
//! full release resets the re-arm lease to the watchdog timeout. The kinds that hand off release through
//! `release_or_hand_off` (`local_line.rs`).

use std::sync::atomic::Ordering;

use fred::prelude::Value;
use tokio::time::Instant;
use tracing::Instrument;

use super::base;
use super::handle::Lock;
use super::kind::LockKind;
use super::running::unexpected;
use crate::connection::detach::FinishOnDrop;
use crate::connection::replicas::Synced;
use crate::connection::retry;
use crate::connection::scripts::{Resend, outcome_unknown};
use crate::engine::BackgroundRelease;
use crate::engine::hold::ledger::BackgroundCall;
use crate::engine::telemetry;
use crate::error::Result;
use crate::names::owner::LockOwner;
use crate::names::unlock_latch;

/// What the unlock script answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnlockReply {
    NotOwner,
    StillHeld,
    Released,
    /// Released for real by a local hand-off's release that found waiters of `others`
    /// other clients listening (not local lines) after this client's line had its turn
    /// (see [`crate::engine::wait::local_queue`]).
    Yielded {
        others: u32,
    },
    /// Released by handing the lock to a waiter of this client: the next of the local
    /// line (see [`crate::engine::wait::local_queue`]), or the `to`-th named waiter of a fair lock's
    /// queue (see [`crate::engine::wait::queued_waiters`]).
    Handed {
        to: usize,
    },
}

/// Whether a release keeps the order of its owner's calls: an `unlock()` waits for the
/// owner's calls finished in the background (an abandoned acquire, a dropped guard's
/// release), and a dropped guard's release, itself one of them, does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    AfterBackground,
    InBackground,
}

/// Whom a release may hand the lock to.
#[derive(Clone, Copy, Debug)]
pub(super) enum HandTo<'a> {
    /// Nobody: the kind's release.
    Nobody,
    /// The head of the local line.
    Line(&'a base::HandoffTo),
    /// The head of the fair lock's queue, if it is one of these waiters.
    Queue(&'a [std::sync::Arc<crate::engine::wait::queued_waiters::Slot>]),
}

impl<K: LockKind> Lock<K> {
    /// An unlock as `owner`, finished even if dropped: one watchdog hold stops at once
    /// (whatever Redis will answer, as in Redisson), then the release runs.
    pub(crate) async fn unlock_as(&self, owner: LockOwner) -> Result<UnlockReply> {
        self.check()?;
        self.stop_renewal(owner);
        let lock = self.clone();
        let span = tracing::debug_span!(
            "redisson_lock.unlock",
            lock = %self.name,
            kind = K::NAME,
            %owner,
            outcome = tracing::field::Empty,
        );
        let work = async move { lock.release_settled(owner, Order::AfterBackground).await }
            .instrument(span);
        FinishOnDrop::new(work, |_| async {}).await
    }

    /// Removes one watchdog hold of `owner`: the first half of every unlock, done
    /// synchronously (a dropped guard calls it from `Drop`).
    pub(crate) fn stop_renewal(&self, owner: LockOwner) {
        let registry = &self.context.registry;
        let hold = (self.name.clone(), owner, K::CAPABILITIES.write_lock);
        if self.kind.renewal_values().is_some() {
            // Its holds differ by their values: this one's leave.
            registry.remove_part(&hold, &*self.kind.held(&self.target(owner)));
        } else {
            registry.remove_hold(&hold);
        }
    }

    /// The second half of every unlock: once no renewal round of the hold is in flight,
    /// the release script, then the re-arm lease is reset after a full release (Redisson
    /// 3.27.2+: not after a partial one). `order`: whether it first waits for the owner's
    /// calls finished in the background.
    pub(crate) async fn release_settled(
        &self,
        owner: LockOwner,
        order: Order,
    ) -> Result<UnlockReply> {
        // A renewal round of this hold in flight answers first: landing after the release,
        // it would re-arm the watchdog's lease on the holds left (`hold::rounds`).
        let registry = &self.context.registry;
        if registry.renewing() {
            let hold = (self.name.clone(), owner, K::CAPABILITIES.write_lock);
            let limit = self.context.redis.timeout().saturating_mul(2);
            registry.renewal_over(&hold, limit).await;
        }
        match order {
            Order::AfterBackground => self.settle_doubt(owner).await?,
            Order::InBackground => self.settle_in_doubt(owner).await?,
        }
        let lease = self.shared.internal_lease_ms.load(Ordering::Relaxed);
        // A partial unlock re-arms the key to the re-arm lease: a check beside it is asked
        // again.
        let writing = registry.writing(
            &(self.name.clone(), owner, K::CAPABILITIES.write_lock),
            K::CAPABILITIES.write_lock || K::CAPABILITIES.yields_to_writers,
        );
        let released = if K::CAPABILITIES.hands_off_locally {
            self.release_or_hand_off(owner, lease).await
        } else if K::CAPABILITIES.queues_in_redis {
            self.release_or_offer(owner, lease).await
        } else {
            self.release_script(owner, lease).await
        };
        let (outcome, held_for) = match released {
            Ok(UnlockReply::StillHeld) => (
                telemetry::UnlockOutcome::StillHeld,
                self.context
                    .holds
                    .released(&self.name, owner, K::CAPABILITIES.write_lock, false),
            ),
            Ok(
                UnlockReply::Released | UnlockReply::Yielded { .. } | UnlockReply::Handed { .. },
            ) => (
                telemetry::UnlockOutcome::Released,
                self.context
                    .holds
                    .released(&self.name, owner, K::CAPABILITIES.write_lock, true),
            ),
            Ok(UnlockReply::NotOwner) => {
                self.context
                    .holds
                    .released(&self.name, owner, K::CAPABILITIES.write_lock, true);
                (telemetry::UnlockOutcome::NotOwner, None)
            }
            Err(_) => (telemetry::UnlockOutcome::Error, None),
        };
        drop(writing);
        match released {
            Ok(
                UnlockReply::Released | UnlockReply::Yielded { .. } | UnlockReply::Handed { .. },
            ) => self.context.registry.released(
                &(self.name.clone(), owner, K::CAPABILITIES.write_lock),
                false,
            ),
            Ok(UnlockReply::NotOwner) => self.context.registry.released(
                &(self.name.clone(), owner, K::CAPABILITIES.write_lock),
                true,
            ),
            _ => {}
        }
        tracing::Span::current().record("outcome", outcome.as_str());
        telemetry::unlock_finished(K::NAME, outcome, held_for, self.metric_name());
        if matches!(
            released,
            Ok(UnlockReply::Released
                | UnlockReply::Yielded { .. }
                | UnlockReply::Handed { .. }
                | UnlockReply::NotOwner)
        ) {
            self.shared
                .internal_lease_ms
                .store(self.context.watchdog_ms, Ordering::Relaxed);
        }
        released
    }

    /// The unlock of a dropped guard (whose renewal hold `Drop` already removed); `_call`
    /// keeps the owner's next call on the lock waiting until it is over.
    async fn release_dropped(self, _call: BackgroundCall) {
        let owner = self.owner();
        match self.release_settled(owner, Order::InBackground).await {
            Ok(UnlockReply::NotOwner) => {
                tracing::debug!(lock = %self.name, %owner, "dropped guard: lock was already gone")
            }
            Ok(_) => tracing::debug!(lock = %self.name, %owner, "dropped guard: released"),
            Err(error) => {
                tracing::warn!(lock = %self.name, %owner, %error, "dropped guard: release failed; the lease will end it")
            }
        }
    }

    /// Hands this handle (acting as a dropped guard's owner) to the client's chore task,
    /// which releases one hold. The owner's next call on the lock (an acquire, an unlock)
    /// waits for that release, as it would after an `unlock()`: an acquire that went first
    /// would lose one count of its hold to the release, or all of it when the dropped
    /// guard's hold had already expired.
    pub(crate) fn release_in_background(&self) {
        self.context.release_later(self.release_to_run());
    }

    /// The release of one hold of this handle's owner, to be run in the background (by
    /// the chore task, or the blocking API's runtime); the owner's next call on the lock
    /// waits for it from now on.
    pub(crate) fn release_to_run(&self) -> BackgroundRelease {
        let call = self.context.holds.background_call(
            &self.name,
            self.owner(),
            K::CAPABILITIES.write_lock,
        );
        Box::pin(self.clone().release_dropped(call))
    }

    /// The kind's release script, retried with the same latch while its outcome is
    /// unknown, and followed by `WAIT` for the replicas (logged, never failed).
    pub(crate) async fn release_script(
        &self,
        owner: LockOwner,
        lease_ms: u64,
    ) -> Result<UnlockReply> {
        self.release_script_with(owner, lease_ms, true, HandTo::Nobody)
            .await
    }

    /// [`Lock::release_script`]; `sync`: whether to `WAIT` for the replicas; `to`: whom
    /// the release may hand the lock to.
    pub(super) async fn release_script_with(
        &self,
        owner: LockOwner,
        lease_ms: u64,
        sync: bool,
        to: HandTo<'_>,
    ) -> Result<UnlockReply> {
        let context = &self.context;
        let latch = unlock_latch(&self.name, context.next_request_id());
        let latch_ttl = context.config.settings.unlock_latch_ttl;
        let target = self.target(owner);
        let (call, receivers) = match to {
            HandTo::Nobody => (None, 0),
            HandTo::Line(next) => (self.kind.handoff(&target, lease_ms, &latch, next), 1),
            HandTo::Queue(named) => (
                self.kind.queue_handoff(&target, lease_ms, &latch, named),
                named.len(),
            ),
        };
        let receivers = if call.is_some() { receivers as i64 } else { 0 };
        // Only a local hand-off's release answers 2 + n for "yielded to n other clients"
        // (a fair hand-off's 3 is its second named waiter).
        let yields = call.is_some() && matches!(to, HandTo::Line(_));
        let call = call.unwrap_or_else(|| self.kind.release(&target, lease_ms, &latch));
        let started = Instant::now();
        let mut retries = 0u32;
        let mut pauses = retry::UNLOCK_ASKED_AGAIN.pauses();
        loop {
            let reply = if sync {
                self.run_synced(&call, Resend::Never).await
            } else {
                self.run(&call, Resend::Never)
                    .await
                    .map(|reply| (reply, Synced::Unchecked))
            };
            match reply {
                Ok((reply, synced)) => {
                    self.log_unsynced("unlock", &synced);
                    context.delete_latch_later(latch);
                    return match reply {
                        Value::Null => Ok(UnlockReply::NotOwner),
                        Value::Integer(0) => Ok(UnlockReply::StillHeld),
                        Value::Integer(1) => Ok(UnlockReply::Released),
                        Value::Integer(others @ 3..) if yields => Ok(UnlockReply::Yielded {
                            others: u32::try_from(others - 2).unwrap_or(u32::MAX),
                        }),
                        Value::Integer(to @ 2..) if to - 2 < receivers => Ok(UnlockReply::Handed {
                            to: (to - 2) as usize,
                        }),
                        other => Err(unexpected("unlock", other)),
                    };
                }
                // The first reply may have been lost after the script ran: ask again with
                // the same latch, which answers what the first call did. Only while the
                // latch surely still lives. (A call fred never wrote is re-sent by
                // `Script::run` itself.)
                Err(error)
                    if outcome_unknown(&error)
                        && retries < 5
                        && !context.is_closed()
                        && started.elapsed() < latch_ttl / 2 =>
                {
                    retries += 1;
                    tracing::warn!(lock = %self.name, %error, retries, "unlock outcome unknown; asking again");
                    tokio::time::sleep(pauses.next()).await;
                }
                Err(error) => return Err(self.redis_error_as(owner, error)),
            }
        }
    }
}
