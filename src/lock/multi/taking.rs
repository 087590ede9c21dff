//! One acquisition of a group: every member at once, then one at a time in the canonical
//! order (see [`LockGroup`]'s documentation), all or nothing.

use std::future::Future;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tracing::Instrument;

use super::group::LockGroup;
use super::rules::GroupRule;
use crate::config::{MAX_LEASE, lease_millis};
use crate::connection::retry;
use crate::error::{Error, Result};
use crate::lock::acquiring::{Acquired, Wait};
use crate::names::owner::LockOwner;

/// One member taken by an acquisition.
pub(super) struct HeldMember {
    pub(super) index: usize,
    pub(super) acquired: Acquired,
}

/// What a successful acquisition holds.
pub(super) struct Taken {
    pub(super) held: Vec<HeldMember>,
    /// Lease mode: when the lease (less the rule's drift) ends.
    pub(super) valid_until: Option<Instant>,
}

/// How one acquisition ended without an error.
enum Outcome {
    Taken(Taken),
    /// Not taken; the error that made success impossible in the last round, if any.
    Failed(Option<Error>),
}

/// What happened to one member in a round.
enum Tried {
    Held(HeldMember),
    /// Held by another owner, or its wait ran out.
    Busy,
    /// An error, or no reply within the wait.
    Failed(Option<Error>),
}
impl<R: GroupRule> LockGroup<R> {
    /// Redisson's `lock()` loop: acquisitions with a wait of `members × 1500 ms` (with a
    /// lease, a random wait below it), until one succeeds.
    pub(super) async fn lock_forever(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
    ) -> Result<Taken> {
        let base = Duration::from_millis(1500) * self.members.len() as u32;
        loop {
            let wait = match lease {
                None => base,
                Some(lease) if lease <= base => random_between(lease / 2, lease),
                Some(lease) => random_between(base, lease),
            }
            .max(Duration::from_millis(1));
            match self.take(owner, wait, lease).await? {
                Outcome::Taken(taken) => return Ok(taken),
                Outcome::Failed(Some(error)) => return Err(error),
                Outcome::Failed(None) => continue,
            }
        }
    }

    /// A bounded acquisition (`try_lock*`): a non-reentrant member the owner already holds
    /// answers `None` at once, as it does for one lock.
    pub(super) async fn try_take(
        &self,
        owner: LockOwner,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<Taken>> {
        match self.take(owner, wait, lease).await {
            Ok(Outcome::Taken(taken)) => Ok(Some(taken)),
            Ok(Outcome::Failed(_)) | Err(Error::NonReentrant { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// One acquisition with a wait budget (zero: a single round without waiting).
    async fn take(
        &self,
        owner: LockOwner,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Outcome> {
        self.check()?;
        let budget = Budget::new(wait, lease)?;
        let span = tracing::debug_span!(
            "redisson_lock.group_acquire",
            rule = R::NAME,
            members = self.members.len(),
            %owner,
            ?wait,
            ?lease,
        );
        // Each round tries every member at once (step 1), then, while the wait lasts, one
        // at a time in the canonical order (step 2), until enough are taken.
        async move {
            let mut taking = Taking::new(self, owner);
            // The error that made the last round hopeless (too many members failed with
            // errors for the rule to be met), reported if the acquisition fails.
            let mut hopeless: Option<Error> = None;
            let mut first_round = true;
            let mut pauses = retry::MEMBERS_FAILED.pauses();
            loop {
                if !first_round && budget.deadline.is_none_or(|d| Instant::now() >= d) {
                    return Ok(Outcome::Failed(hopeless));
                }
                first_round = false;
                // Step 1: every member once, at the same time.
                let (busy, errors) = self
                    .try_all(owner, budget.member_lease, budget.deadline, &mut taking)
                    .await?;
                if taking.held.len() >= self.required() {
                    match self
                        .finish(&mut taking, budget.lease, budget.lease_ms, budget.deadline)
                        .await?
                    {
                        Some(taken) => return Ok(Outcome::Taken(taken)),
                        None => continue,
                    }
                }
                taking.release_all().await;
                hopeless = self.hopeless(errors, budget.wait);
                let Some(deadline) = budget.deadline else {
                    return Ok(Outcome::Failed(hopeless));
                };
                if Instant::now() >= deadline {
                    return Ok(Outcome::Failed(hopeless));
                }
                if busy == 0 {
                    // Only errors (a server down?): waiting on a member would not help.
                    // Back off a little, then try again while the wait lasts.
                    let most = pauses.next();
                    let pause = random_between(most / 2, most);
                    tokio::time::sleep_until((Instant::now() + pause).min(deadline)).await;
                    continue;
                }
                // Step 2: one member at a time, in the canonical order.
                if self
                    .take_in_order(owner, budget.member_lease, deadline, &mut taking)
                    .await?
                {
                    match self
                        .finish(&mut taking, budget.lease, budget.lease_ms, Some(deadline))
                        .await?
                    {
                        Some(taken) => return Ok(Outcome::Taken(taken)),
                        None => continue,
                    }
                }
                taking.release_all().await;
            }
        }
        .instrument(span)
        .await
    }

    /// The error to report when the members that failed with `errors` leave too few for
    /// the rule: the first error, or a timeout when none said more.
    fn hopeless(&self, errors: Vec<Option<Error>>, wait: Duration) -> Option<Error> {
        let allowance = self.members.len() - self.required();
        if errors.len() > allowance {
            let first = errors.into_iter().flatten().next();
            Some(first.unwrap_or(Error::Timeout {
                what: "taking the group's members",
                after: wait,
            }))
        } else {
            None
        }
    }

    /// Step 1: every member once, without waiting, at the same time. Returns how many
    /// were busy and the failures. Stops at the deadline, and soon after enough members
    /// are held: the others get as long again as that took (a member on a dead server
    /// must not hold the lock up; one that answers with the rest adds a spare). Members
    /// still in flight then are finished in the background, and released if taken.
    async fn try_all(
        &self,
        owner: LockOwner,
        member_lease: Option<Duration>,
        deadline: Option<Instant>,
        taking: &mut Taking<'_, R>,
    ) -> Result<(usize, Vec<Option<Error>>)> {
        let mut pending: FuturesUnordered<_> = (0..self.members.len())
            .map(|index| self.try_member(index, owner, member_lease, Wait::Once, deadline))
            .collect();
        let (mut busy, mut errors, mut fatal) = (0, Vec::new(), None);
        let started = Instant::now();
        // Once enough are held: how long the others still get.
        let mut grace: Option<Instant> = None;
        loop {
            let limit = match (deadline, grace) {
                (Some(d), Some(g)) => Some(d.min(g)),
                (d, g) => d.or(g),
            };
            let next = match limit {
                Some(limit) => match tokio::time::timeout_at(limit, pending.next()).await {
                    Ok(next) => next,
                    Err(_) if grace.is_some_and(|g| g <= limit) => break,
                    Err(_) => {
                        errors.extend((0..pending.len()).map(|_| None));
                        break;
                    }
                },
                None => pending.next().await,
            };
            let Some(tried) = next else { break };
            match tried {
                Ok(Tried::Held(held)) => taking.held.push(held),
                Ok(Tried::Busy) => busy += 1,
                Ok(Tried::Failed(error)) => errors.push(error),
                Err(error) => fatal = fatal.or(Some(error)),
            }
            if fatal.is_none() && grace.is_none() && taking.held.len() >= self.required() {
                let now = Instant::now();
                grace = Some(now + (now - started).max(Duration::from_millis(1)));
            }
        }
        if let Some(error) = fatal {
            // Members still in flight are finished in the background (and released if
            // they took the lock) when `pending` drops.
            drop(pending);
            taking.release_all().await;
            return Err(error);
        }
        Ok((busy, errors))
    }

    /// Step 2: the members one at a time in the canonical order, each waited for up to
    /// the rule's share of what is left. Whether enough were held.
    async fn take_in_order(
        &self,
        owner: LockOwner,
        member_lease: Option<Duration>,
        deadline: Instant,
        taking: &mut Taking<'_, R>,
    ) -> Result<bool> {
        let n = self.members.len();
        let mut allowance = n - self.required();
        for &index in self.order.iter() {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(false);
            }
            let member_wait = R::member_wait(remaining, n).min(remaining);
            let wait = match Instant::now().checked_add(member_wait) {
                Some(until) => Wait::Until(until, member_wait),
                None => Wait::Forever,
            };
            match self
                .try_member(index, owner, member_lease, wait, Some(deadline))
                .await
            {
                Ok(Tried::Held(held)) => taking.held.push(held),
                Ok(Tried::Busy | Tried::Failed(_)) => {
                    if taking.held.len() >= self.required() {
                        return Ok(true);
                    }
                    if allowance == 0 {
                        return Ok(false);
                    }
                    allowance -= 1;
                }
                Err(error) => {
                    taking.release_all().await;
                    return Err(error);
                }
            }
        }
        Ok(taking.held.len() >= self.required())
    }

    /// One member's attempt, bounded by the deadline. `Err` only for errors that make the
    /// whole acquisition fail (no waiting can help).
    fn try_member(
        &self,
        index: usize,
        owner: LockOwner,
        member_lease: Option<Duration>,
        wait: Wait,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<Tried>> + Send + '_ {
        let member = self.members[index].clone();
        async move {
            let attempt = member.acquire_as_member(owner, member_lease, wait);
            let reply = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, attempt).await {
                    Ok(reply) => reply,
                    // Dropped in flight: the engine finishes it and releases what it took.
                    Err(_) => return Ok(Tried::Failed(None)),
                },
                None => attempt.await,
            };
            match reply {
                Ok(Some(acquired)) => Ok(Tried::Held(HeldMember { index, acquired })),
                Ok(None) => Ok(Tried::Busy),
                Err(error) if is_fatal(&error) => Err(error),
                Err(error) => {
                    // A member whose acquire reply was lost (Redisson unlocks it) is
                    // settled by the engine: it reads the owner's hold count, and undoes
                    // a hold nobody was told of (Error::OutcomeUnknown: at its next call).
                    tracing::debug!(lock = member.member_key(), %error, "group member failed");
                    Ok(Tried::Failed(Some(error)))
                }
            }
        }
    }

    /// Sets the lease (when a temporary one was used) and checks that the lease, less the
    /// drift, still has time left. `None`: a member was lost on the way (released; try
    /// again while the wait lasts).
    async fn finish(
        &self,
        taking: &mut Taking<'_, R>,
        lease: Option<Duration>,
        lease_ms: Option<u64>,
        deadline: Option<Instant>,
    ) -> Result<Option<Taken>> {
        let (Some(lease), Some(lease_ms)) = (lease, lease_ms) else {
            return Ok(Some(taking.done(None)));
        };
        let lease_start = if deadline.is_some() {
            // Replace the temporary lease, as Redisson does: `PEXPIRE N lease`.
            let sent = Instant::now();
            let replies = futures::future::join_all(taking.held.iter().map(|h| {
                let member = &self.members[h.index];
                async move { (h.index, member.set_lease(lease_ms).await) }
            }))
            .await;
            for (index, reply) in replies {
                match reply {
                    Ok(true) => continue,
                    // The key is gone: nothing to release.
                    Ok(false) => {}
                    // Unknown: release it in the background.
                    Err(_) => self.members[index].release_later(taking.owner),
                }
                tracing::debug!(
                    lock = self.members[index].member_key(),
                    "group member lost before its lease was set"
                );
                taking.forget(index);
            }
            if taking.held.len() < self.required() {
                taking.release_all().await;
                return Ok(None);
            }
            sent
        } else {
            // Taken with the lease itself: it started with the earliest acquire.
            taking
                .held
                .iter()
                .filter_map(|h| h.acquired.lease_deadline)
                .min()
                .and_then(|end| end.checked_sub(lease))
                .unwrap_or_else(Instant::now)
        };
        let valid_until = lease_start + lease.saturating_sub(R::drift(lease));
        let now = Instant::now();
        if now >= valid_until || lease <= R::drift(lease) {
            taking.release_all().await;
            return Err(Error::LeaseTooShort {
                lease,
                elapsed: now.saturating_duration_since(lease_start),
            });
        }
        Ok(Some(taking.done(Some(valid_until))))
    }
}

/// What one acquisition may spend: its wait and lease, and what follows from them.
struct Budget {
    wait: Duration,
    lease: Option<Duration>,
    lease_ms: Option<u64>,
    /// When the wait ends; `None` for a single round without waiting.
    deadline: Option<Instant>,
    /// The lease each member is taken with.
    member_lease: Option<Duration>,
}

impl Budget {
    fn new(wait: Duration, lease: Option<Duration>) -> Result<Budget> {
        let lease_ms = lease.map(lease_millis).transpose()?;
        let deadline = (!wait.is_zero())
            .then(|| Instant::now().checked_add(wait))
            .flatten();
        // Redisson: with a lease and a wait, members get twice the wait (none may expire
        // while the others are taken); the lease is set at the end.
        let member_lease = match (lease, deadline) {
            (Some(_), Some(_)) => Some(wait.saturating_mul(2).min(MAX_LEASE)),
            (lease, _) => lease,
        };
        Ok(Budget {
            wait,
            lease,
            lease_ms,
            deadline,
            member_lease,
        })
    }
}

/// Errors no waiting can cure: they end an acquisition at once.
fn is_fatal(error: &Error) -> bool {
    matches!(
        error,
        Error::Shutdown
            | Error::WrongType { .. }
            | Error::InvalidArgument(_)
            | Error::BadToken { .. }
            | Error::NonReentrant { .. }
    )
}

/// A random duration in `[low, high)` (`low` if the range is empty).
fn random_between(low: Duration, high: Duration) -> Duration {
    let span = high.saturating_sub(low).as_micros() as u64;
    if span == 0 {
        return low;
    }
    let random = uuid::Uuid::new_v4().as_u64_pair().0;
    low + Duration::from_micros(random % span)
}

/// The members one acquisition holds so far. Dropped while it still holds some (the
/// caller's future was dropped), it releases them in the background.
struct Taking<'a, R: GroupRule> {
    group: &'a LockGroup<R>,
    owner: LockOwner,
    held: Vec<HeldMember>,
}

impl<'a, R: GroupRule> Taking<'a, R> {
    fn new(group: &'a LockGroup<R>, owner: LockOwner) -> Self {
        Taking {
            group,
            owner,
            held: Vec::new(),
        }
    }

    /// Releases every member held, all at the same time, and waits for the answers
    /// (each unlock is finished in the background if this future is dropped).
    async fn release_all(&mut self) {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            return;
        }
        let owner = self.owner;
        let members = &self.group.members;
        let replies = futures::future::join_all(held.iter().map(|h| {
            let member = &members[h.index];
            async move { (member, member.unlock_as_member(owner).await) }
        }))
        .await;
        for (member, reply) in replies {
            if let Err(error) = reply {
                tracing::warn!(lock = member.member_key(), %error, "could not release a group member; its lease will end it");
            }
        }
    }

    /// Drops a member known to be gone (nothing to release).
    fn forget(&mut self, index: usize) {
        self.held.retain(|h| h.index != index);
    }

    fn done(&mut self, valid_until: Option<Instant>) -> Taken {
        Taken {
            held: std::mem::take(&mut self.held),
            valid_until,
        }
    }
}

impl<R: GroupRule> Drop for Taking<'_, R> {
    fn drop(&mut self) {
        for held in self.held.drain(..) {
            self.group.members[held.index].release_later(self.owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_between_stays_in_range() {
        let (low, high) = (Duration::from_millis(5), Duration::from_millis(10));
        for _ in 0..1000 {
            let d = random_between(low, high);
            assert!(d >= low && d < high);
        }
        assert_eq!(random_between(high, low), high);
    }
}
