//! Acquires whose reply was lost: reading the owner's count in Redis to learn whether the
//! script ran (`learn_outcome`), undoing an acquisition no replica acknowledged
//! (`undo_unsynced`), and settling a doubt an earlier call left (`settle_doubt`,
//! `leave_in_doubt`) before anything else the owner does on the lock.
//!
//! Invariants: a hold nobody was told about is given back, never reported; one settler
//! at a time per lock and owner; a doubt that cannot be settled now is retried in the
//! background until the client shuts down or ten minutes pass.

use std::sync::atomic::Ordering;
use std::time::Duration;

use fred::prelude::HashesInterface;
use tokio::time::Instant;

use super::handle::Lock;
use super::kind::LockKind;
use crate::connection::retry;
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

/// What reading the owner's count said about an acquire whose reply was lost.
pub(super) enum Outcome {
    Ran,
    NotRun,
}

impl<K: LockKind> Lock<K> {
    /// Undoes an acquisition no replica acknowledged (Redisson's `handleNoSync`): one
    /// release of the kind, without a `WAIT` of its own (the replicas just failed to
    /// answer; waiting again would double the caller's wait). The acquisition was never
    /// reported, so the hold ledger has nothing to take back; if the release itself
    /// fails, the acquisition is left in doubt and the next call settles it.
    pub(super) async fn undo_unsynced(&self, owner: LockOwner, before: u32, lease_ms: u64) {
        tracing::warn!(lock = %self.name, %owner, "no replica acknowledged the acquisition: undoing it");
        if let Err(error) = self
            .release_script_with(owner, lease_ms, false, super::releasing::HandTo::Nobody)
            .await
        {
            tracing::warn!(lock = %self.name, %owner, %error, "could not undo an unsynced acquisition; the next call settles it");
            self.leave_in_doubt(owner, before);
        }
    }

    /// Reads the owner's count after an acquire whose reply was lost: `before + 1` means
    /// it ran, `before` that it did not. Retries the read until `settle_by`; past that,
    /// the hold is marked in doubt (settled by this client's next call on the lock and
    /// owner) and the caller gets [`Error::OutcomeUnknown`].
    pub(super) async fn learn_outcome(
        &self,
        owner: LockOwner,
        field: &str,
        before: u32,
        (settle_by, expires_by): (Instant, Instant),
        lost_reply: &fred::error::Error,
    ) -> Result<Outcome> {
        let mut pauses = retry::OUTCOME_ASKED.pauses();
        loop {
            match self.hold_count_in_redis(field).await {
                Ok(count) if count == u64::from(before) + 1 => return Ok(Outcome::Ran),
                Ok(count) if count == u64::from(before) => return Ok(Outcome::NotRun),
                // More than one send ran (a send thought not to have run was still pending
                // somewhere, as in a failover). A task's or thread's own owner id is used
                // by nobody else, so the extra holds are this call's: give them back.
                Ok(count) if count > u64::from(before) + 1 && owner.is_automatic() => {
                    let extra = count - u64::from(before) - 1;
                    tracing::warn!(lock = %self.name, %owner, extra, "an acquire ran more than once; giving back the extra holds");
                    let lease = self.shared.internal_lease_ms.load(Ordering::Relaxed);
                    for _ in 0..extra {
                        self.release_script(owner, lease).await?;
                    }
                    return Ok(Outcome::Ran);
                }
                Ok(count) => {
                    return Err(Error::OutcomeUnknown {
                        operation: "acquire",
                        name: self.name().to_owned(),
                        reason: format!(
                            "its reply was lost ({lost_reply}), and Redis counts {count} holds of \
                             owner {owner} where this client expected {before} or {}: another \
                             task or process acts as the same owner. Check `hold_count()` and \
                             unlock as your protocol requires.",
                            before + 1
                        ),
                    });
                }
                Err(error @ (Error::WrongType { .. } | Error::Shutdown)) => return Err(error),
                Err(error) if Instant::now() + pauses.peek() >= settle_by => {
                    // With no earlier hold of this owner (whose renewal would keep the
                    // hash alive) and not a read lock (whose hash other readers keep
                    // alive), a hold the lost send took has expired by `expires_by`.
                    if before == 0
                        && !K::CAPABILITIES.yields_to_writers
                        && expires_by <= settle_by + Duration::from_millis(100)
                    {
                        tokio::time::sleep_until(expires_by).await;
                        tracing::debug!(lock = %self.name, %owner, "any hold the lost acquire took has expired");
                        return Ok(Outcome::NotRun);
                    }
                    self.leave_in_doubt(owner, before);
                    return Err(Error::OutcomeUnknown {
                        operation: "acquire",
                        name: self.name().to_owned(),
                        reason: format!(
                            "its reply was lost ({lost_reply}) and Redis could not be asked \
                             whether it ran ({error}). Nothing is reported held: if it ran, \
                             this client undoes it at its next call on this lock as owner \
                             {owner}, and otherwise its lease ends it."
                        ),
                    });
                }
                Err(_) => tokio::time::sleep(pauses.next()).await,
            }
        }
    }

    /// Whether [`Lock::settle_doubt`] may have something to do: a call of this client
    /// finished in the background (an abandoned acquire, a dropped guard's release) is
    /// running, or this owner's count is in doubt (a map lookup; no I/O).
    pub(super) fn may_need_settling(&self, owner: LockOwner) -> bool {
        let holds = &self.context.holds;
        holds.any_in_background()
            || holds
                .settling(&self.name, owner, K::CAPABILITIES.write_lock)
                .is_some()
    }

    /// Settles an acquire left in doubt by an earlier call: if it ran, nobody was told,
    /// so its hold is given back before anything else happens. Waits first for the
    /// owner's calls finished in the background (see `HoldLedger::background_call`).
    pub(super) async fn settle_doubt(&self, owner: LockOwner) -> Result<()> {
        // An acquire of this owner abandoned by its caller first finishes (and gives back
        // what it took), and a guard it dropped is released: no call of the owner runs
        // between a hold and its undoing, or before a release it made earlier.
        self.context
            .holds
            .background_over(&self.name, owner, K::CAPABILITIES.write_lock)
            .await;
        self.settle_in_doubt(owner).await
    }

    /// [`Lock::settle_doubt`] without waiting for the owner's background calls: for a
    /// background call itself (a dropped guard's release), which would wait for itself.
    pub(super) async fn settle_in_doubt(&self, owner: LockOwner) -> Result<()> {
        let Some(settling) =
            self.context
                .holds
                .settling(&self.name, owner, K::CAPABILITIES.write_lock)
        else {
            return Ok(());
        };
        // One settler at a time (this call, another call, the background settler); the
        // doubt may be gone once it is our turn.
        let _turn = settling.lock().await;
        let Some(before) =
            self.context
                .holds
                .in_doubt(&self.name, owner, K::CAPABILITIES.write_lock)
        else {
            return Ok(());
        };
        let field = self.kind.field(&self.context, owner);
        let field = field.as_str();
        let count = self.hold_count_in_redis(field).await?;
        let mut known = count.min(u64::from(before)) as u32;
        if count == u64::from(before) + 1 {
            tracing::warn!(lock = %self.name, %owner, "undoing an acquisition whose reply was lost");
            let lease = self.shared.internal_lease_ms.load(Ordering::Relaxed);
            self.release_script(owner, lease).await?;
            known = before;
        }
        self.context
            .holds
            .settled(&self.name, owner, K::CAPABILITIES.write_lock, known);
        Ok(())
    }

    /// Marks an acquire of `owner` in doubt (see [`Lock::settle_doubt`]) and settles it in
    /// the background as soon as Redis answers, so that a hold nobody was told about does
    /// not wait for this owner's next call; the next call waits for a settlement in
    /// progress. Gives up when the client shuts down or after ten minutes.
    pub(super) fn leave_in_doubt(&self, owner: LockOwner, before: u32) {
        self.context
            .holds
            .mark_in_doubt(&self.name, owner, K::CAPABILITIES.write_lock, before);
        let lock = self.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let give_up = Instant::now() + Duration::from_secs(600);
            let mut pauses = retry::DOUBT_SETTLED_LATER.pauses();
            while !lock.context.is_closed() && Instant::now() < give_up {
                match lock.settle_doubt(owner).await {
                    Ok(()) => return,
                    Err(error) => {
                        tracing::debug!(lock = %lock.name, %owner, %error, "settling an acquire in doubt; retrying");
                        tokio::time::sleep(pauses.next()).await;
                    }
                }
            }
        });
    }

    /// `HGET name field` as a count (0 when absent), on the primary the sentinels name
    /// (through the failover gate).
    pub(super) async fn hold_count_in_redis(&self, field: &str) -> Result<u64> {
        let count: Option<i64> = self
            .context
            .redis
            .query(|r| r.hget(&*self.name, field))
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(count.unwrap_or(0).max(0) as u64)
    }
}
