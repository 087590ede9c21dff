//! One acquisition, as Redisson's waiter does it (docs/protocol.md §19.4, §23.4): try; if too
//! few permits are there, take a share of this client's one subscription to the channel,
//! try again, and sleep until a message wakes this waiter, then try again.
//!
//! Invariants:
//! * A waiter subscribes before the attempt it sleeps after, and enables its wake-up
//!   before that attempt, so a release published in between is never lost (see
//!   [`crate::engine::wait::pubsub`]).
//! * A message `n` wakes up to `n` of this client's waiters (the channel's decoder,
//!   [`crate::engine::wait::messages::semaphore_messages`]); `0`, negatives and anything else wake
//!   nobody.
//! * Every sleep is bounded: by the caller's deadline, and by the wait's re-check
//!   ([`crate::engine::wait::waiter::RECHECK`]), so that a lost message (or a change nobody
//!   published, such as a `SET` by another program) costs at most that long.
//! * Each attempt is finished even when the caller's future is dropped during it: permits
//!   it took are given back ([`FinishOnDrop`]). The subscription share is a value the
//!   future owns, so dropping the future at any point gives it back.

use tokio::time::Instant;

use super::Semaphore;
use super::calls::Attempt;
use crate::connection::detach::FinishOnDrop;
use crate::engine::wait::messages::semaphore_messages;
use crate::engine::wait::waiter::{self, Budget, Listen, Tried};
use crate::error::Result;

impl Semaphore {
    /// One attempt that is finished in the background if the caller's future is dropped
    /// during it (permits it took are then given back).
    pub(super) async fn attempt_detached(&self, permits: u32) -> Result<Attempt> {
        let semaphore = self.clone();
        let work = async move { semaphore.attempt(permits).await };
        let owner = self.clone();
        FinishOnDrop::new(work, move |outcome| async move {
            if let Ok(Attempt::Taken) = outcome {
                tracing::debug!(semaphore = %owner.name, permits, "acquire dropped after it took permits: giving them back");
                if let Err(error) = owner.release_script(permits, false).await {
                    tracing::warn!(semaphore = %owner.name, permits, %error, "could not give back the permits of a dropped acquire");
                }
            }
        })
        .await
    }

    /// Takes `permits`, waiting until `deadline` (`None`: without a bound); `false` when
    /// the deadline passed first. The wait is [`crate::engine::wait::waiter`]'s.
    pub(super) async fn acquire_until(
        &self,
        permits: u32,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let pubsub = &self.context.pubsub;
        // Waiters of this client are subscribed already: join them before the first
        // attempt, which then needs no second one.
        if !pubsub.is_ready(&self.channel) {
            if let Attempt::Taken = self.attempt_detached(permits).await? {
                return Ok(true);
            }
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Ok(false);
            }
        }
        let _waiting = crate::engine::telemetry::Waiting::start(super::KIND);
        let listen = Listen {
            channel: &self.channel,
            messages: semaphore_messages,
            marker: None,
            what: "subscribing to the semaphore channel",
        };
        let budget = Budget {
            deadline,
            subscription_timeout: self.context.config.settings.subscription_timeout,
        };
        let subscribed = waiter::subscribe(pubsub, listen, budget, |e| self.redis_error(e));
        let Some(subscription) = subscribed.await? else {
            return Ok(false);
        };
        let taken = waiter::wait_for(pubsub, &subscription, deadline, || async {
            Ok(match self.attempt_detached(permits).await? {
                Attempt::Taken => Tried::Done(()),
                _ => {
                    tracing::trace!(semaphore = %self.name, permits, "too few permits; waiting for a release");
                    Tried::NotYet(None)
                }
            })
        })
        .await?;
        Ok(taken.is_some())
    }
}
