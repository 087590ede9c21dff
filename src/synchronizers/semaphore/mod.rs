//! `Semaphore`: Redisson's `RSemaphore` (docs/protocol.md §19): a count of permits in a
//! string key, without owners, shared with Java apps.
//!
//! Files: `mod.rs` the handle and its public methods; `calls.rs` the scripts and how each
//! is sent (written at most once, `WAIT` for replicas, the undo of an unsynced acquire);
//! `waiting.rs` Redisson's wait loop on the channel; `permits.rs` the guard; `expiry.rs`
//! the key's expiry and existence (`RExpirable`).

mod calls;
mod expiry;
mod permits;
mod waiting;

use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use fred::prelude::KeysInterface;
use tokio::time::Instant;

use crate::engine::Engine;
use crate::engine::telemetry::{self, AcquireOutcome, UnlockOutcome};
use crate::error::{Error, Result};

pub use permits::SemaphorePermits;

/// The `kind` label of the semaphore's metrics.
const KIND: &str = "semaphore";

/// A distributed counting semaphore, wire-compatible with Redisson's `RSemaphore`.
///
/// The permits are a decimal integer in the string key `name` (a missing key is 0
/// permits); releases publish the new count on `redisson_sc:{name}`, which wakes up to
/// that many waiters in each client. Java apps calling `redisson.getSemaphore(name)` on
/// the same Redis share the same permits and wake each other's waiters.
///
/// Permits have no owner, as in Redisson and in `java.util.concurrent.Semaphore`:
/// anyone may release, and a release is not checked against an acquire. [`acquire`]
/// returns a [`SemaphorePermits`] guard that gives them back when dropped;
/// [`SemaphorePermits::forget`] keeps them taken.
///
/// `Semaphore` is a cheap `Clone` handle and does no I/O until used.
///
/// # When a reply is lost
/// A plain semaphore cannot tell whether an acquire whose reply was lost (a response
/// timeout, a connection dropped mid-call) took its permits: nothing in Redis says who
/// took them. This crate never sends such an acquire again (it could take the permits
/// twice) and returns [`Error::OutcomeUnknown`]; if it did run, the permits are missing
/// until someone releases them. The same holds for a process that dies holding permits.
/// Where that matters, use Redisson's permit-expirable semaphore
/// (`RPermitExpirableSemaphore`), whose permits have ids (a lost acquire is settled by
/// looking for the id) and leases (a dead holder's permits come back).
///
/// # Waiting
/// A waiter tries, then takes a share of this client's one subscription to the channel,
/// tries again, and sleeps until a release's message wakes it (a message `n` wakes up to
/// `n` of this client's waiters, as in a Java client) or for at most 2 s, then tries
/// again: a lost message, or a count changed without one, costs at most that long.
///
/// # Examples
/// ```no_run
/// # async fn call_partner_api() {}
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// let semaphore = client.get_semaphore("partner-api");
/// semaphore.try_set_permits(4).await?;        // once, by whoever comes first
///
/// let permit = semaphore.acquire(1).await?;   // at most 4 at a time, across processes
/// call_partner_api().await;
/// permit.release().await?;
///
/// if let Some(permits) = semaphore.try_acquire_for(2, Duration::from_secs(1)).await? {
///     drop(permits);                          // given back
/// }
/// # Ok(()) }
/// ```
///
/// [`acquire`]: Semaphore::acquire
#[derive(Clone)]
pub struct Semaphore {
    context: Arc<Engine>,
    /// The name as stored in Redis (protocol `N`): the given name through the name mapper.
    name: Arc<str>,
    /// The name as given, when a name mapper changed it.
    given: Option<Arc<str>>,
    /// `redisson_sc:{N}`.
    channel: Arc<str>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("name", &self.name())
            .field("raw_name", &self.name)
            .field("client_id", &self.context.id)
            .finish()
    }
}

impl Semaphore {
    /// A handle on semaphore `name`, mapped by the client's name mapper; no I/O.
    pub(crate) fn new(context: Arc<Engine>, name: String) -> Semaphore {
        let names = crate::names::mapper::MappedName::new(context.config.name_mapper(), name);
        let channel = crate::names::semaphore_channel(&names.raw).into();
        Semaphore {
            context,
            name: names.raw,
            given: names.given,
            channel,
        }
    }

    /// The semaphore's name as given to the client.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.get_semaphore("partner-api").name(), "partner-api");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.given.as_deref().unwrap_or(&self.name)
    }

    /// The Redis key of the permits: the name through the client's
    /// [name mapper](crate::ConfigBuilder::name_mapper), or the name itself.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// println!("permits are in key {}", client.get_semaphore("partner-api").raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> Result<()> {
        if self.name.is_empty() || self.name().is_empty() {
            return Err(Error::invalid("semaphore name must not be empty"));
        }
        if self.context.is_closed() {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    /// The checks of [`check`](Semaphore::check); then whether `permits` is 0, which
    /// Redisson answers at once without I/O (`acquire(0)` returns, `tryAcquire(0)` is
    /// `true`, `release(0)` does nothing).
    fn no_permits(&self, permits: u32) -> Result<bool> {
        self.check()?;
        Ok(permits == 0)
    }

    /// The name as a metrics label, when the configuration opts in.
    fn metric_name(&self) -> Option<&str> {
        self.context
            .config
            .settings
            .metrics_lock_names
            .then_some(&*self.name)
    }

    /// Sets the number of permits to `permits` if the semaphore has none set yet (its key
    /// is missing); `false` if it had. Publishes the count when it is above 0.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key holds something else than a string;
    /// [`Error::OutcomeUnknown`] if the reply was lost (it is not sent again).
    ///
    /// # Redisson equivalent
    /// `RSemaphore#trySetPermits(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let semaphore = client.get_semaphore("partner-api");
    /// if semaphore.try_set_permits(4).await? {
    ///     println!("this process created the pool");
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.try_set_permits", skip(self), fields(semaphore = %self.name))]
    pub async fn try_set_permits(&self, permits: i64) -> Result<bool> {
        self.check()?;
        self.try_set_script(permits, 0).await
    }

    /// [`try_set_permits`](Semaphore::try_set_permits), with a time to live on the key:
    /// the semaphore (and every permit count in it) is gone after `ttl`, unless changed by
    /// [`add_permits`](Semaphore::add_permits) or
    /// [`drain_permits`](Semaphore::drain_permits), which drop the TTL as Redisson does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `ttl` under 1 ms; those of `try_set_permits`.
    ///
    /// # Redisson equivalent
    /// `RSemaphore#trySetPermits(int permits, Duration timeToLive)` (3.29.0+)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let semaphore = client.get_semaphore("batch-window");
    /// semaphore.try_set_permits_with_ttl(10, Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.try_set_permits", skip(self), fields(semaphore = %self.name))]
    pub async fn try_set_permits_with_ttl(&self, permits: i64, ttl: Duration) -> Result<bool> {
        self.check()?;
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        if ttl_ms < 1 {
            return Err(Error::invalid(
                "a semaphore's time to live must be at least 1 ms",
            ));
        }
        self.try_set_script(permits, ttl_ms).await
    }

    /// Takes `permits` permits, waiting as long as it takes; they are given back when the
    /// returned guard is dropped.
    ///
    /// The waiter sleeps until a release wakes it (a message of `n` wakes up to `n` of
    /// this client's waiters), or [at most 2 s](crate::Semaphore#waiting) without one.
    ///
    /// 0 permits is a no-op, as in Redisson: a guard of no permits at once, no I/O.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key is not a string; [`Error::OutcomeUnknown`] if an attempt's reply was lost (not sent again:
    /// see the type's docs); [`Error::NoSyncedReplicas`] if no replica acknowledged the
    /// acquire (the permits were given back); [`Error::Timeout`] if the channel's
    /// subscription was not confirmed in the subscription timeout.
    ///
    /// # Cancel safety
    /// Dropping the future gives back permits an attempt in flight took, and its share of
    /// the channel subscription.
    ///
    /// # Redisson equivalent
    /// `RSemaphore#acquire(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let permits = semaphore.acquire(2).await?;
    /// // ... at most as many holders as the pool allows ...
    /// permits.release().await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.acquire", skip(self), fields(semaphore = %self.name))]
    pub async fn acquire(&self, permits: u32) -> Result<SemaphorePermits> {
        if self.no_permits(permits)? {
            return Ok(SemaphorePermits::new(self.clone(), 0));
        }
        match self.timed(self.acquire_until(permits, None)).await? {
            true => Ok(SemaphorePermits::new(self.clone(), permits)),
            // Without a deadline the wait ends only with permits or an error.
            false => Err(Error::Shutdown),
        }
    }

    /// Takes `permits` permits if they are available now (one script call, no waiting);
    /// `None` if fewer are. 0 permits: a guard of none at once (Redisson's `true`).
    ///
    /// # Errors
    /// As [`acquire`](Semaphore::acquire), except the timeout.
    ///
    /// # Redisson equivalent
    /// `RSemaphore#tryAcquire(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// match semaphore.try_acquire(1).await? {
    ///     Some(permit) => permit.release().await?,
    ///     None => println!("busy; try later"),
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.try_acquire", skip(self), fields(semaphore = %self.name))]
    pub async fn try_acquire(&self, permits: u32) -> Result<Option<SemaphorePermits>> {
        if self.no_permits(permits)? {
            return Ok(Some(SemaphorePermits::new(self.clone(), 0)));
        }
        let taken = self
            .timed(async {
                Ok(matches!(
                    self.attempt_detached(permits).await?,
                    calls::Attempt::Taken
                ))
            })
            .await?;
        Ok(taken.then(|| SemaphorePermits::new(self.clone(), permits)))
    }

    /// Takes `permits` permits, waiting at most `wait` for them; `None` if they did not
    /// come in time. 0 permits: a guard of none at once.
    ///
    /// # Errors
    /// As [`acquire`](Semaphore::acquire); a subscription not confirmed within `wait` is
    /// `None`, not an error.
    ///
    /// # Cancel safety
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// # Redisson equivalent
    /// `RSemaphore#tryAcquire(int permits, long waitTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// if let Some(permit) = semaphore.try_acquire_for(1, Duration::from_millis(500)).await? {
    ///     permit.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.try_acquire", skip(self), fields(semaphore = %self.name))]
    pub async fn try_acquire_for(
        &self,
        permits: u32,
        wait: Duration,
    ) -> Result<Option<SemaphorePermits>> {
        if self.no_permits(permits)? {
            return Ok(Some(SemaphorePermits::new(self.clone(), 0)));
        }
        let deadline = Instant::now().checked_add(wait);
        let taken = self.timed(self.acquire_until(permits, deadline)).await?;
        Ok(taken.then(|| SemaphorePermits::new(self.clone(), permits)))
    }

    /// Runs an acquisition and records its metrics.
    async fn timed(
        &self,
        acquisition: impl std::future::Future<Output = Result<bool>>,
    ) -> Result<bool> {
        let started = StdInstant::now();
        let result = acquisition.await;
        let outcome = match result {
            Ok(true) => AcquireOutcome::Acquired,
            Ok(false) => AcquireOutcome::TimedOut,
            Err(_) => AcquireOutcome::Error,
        };
        telemetry::acquire_finished(KIND, outcome, started.elapsed(), self.metric_name());
        result
    }

    /// Gives `permits` permits back (creating the key if it is missing), and publishes the
    /// new count when it is above 0, which wakes up to that many waiters in each client.
    /// Any process may release; nothing checks it against an acquire. 0 permits is a
    /// no-op (no I/O, nothing published), as in Redisson.
    ///
    /// # Errors
    /// [`Error::WrongType`];
    /// [`Error::OutcomeUnknown`] if the reply was lost (not sent again: it could give back
    /// twice). A release no replica acknowledged is logged, not failed: it happened.
    ///
    /// # Redisson equivalent
    /// `RSemaphore#release(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.release(1).await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.release", skip(self), fields(semaphore = %self.name))]
    pub async fn release(&self, permits: u32) -> Result<()> {
        if self.no_permits(permits)? {
            return Ok(());
        }
        // The release script's future is boxed: unboxed, it nests so deep that a caller's
        // `async fn` awaiting an acquire and then a release exceeded rustc's default query
        // depth (128) when its layout was computed (`queries overflow the depth limit!`, seen
        // in this type's doc examples); one allocation per release cuts that chain.
        let result = Box::pin(self.release_script(permits, false))
            .await
            .map(|_| ());
        self.record_release(&result);
        result
    }

    /// [`release`](Semaphore::release), only if the semaphore's key exists (a semaphore
    /// that was deleted or expired is not re-created); whether it released. 0 permits:
    /// `false` without I/O, as Redisson 4.x answers.
    ///
    /// # Errors
    /// As [`release`](Semaphore::release).
    ///
    /// # Redisson equivalent
    /// `RSemaphore#releaseIfExists(int permits)` (4.0.0+)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// if !semaphore.release_if_exists(1).await? {
    ///     println!("the semaphore is gone; nothing to give back to");
    /// }
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.release", skip(self), fields(semaphore = %self.name))]
    pub async fn release_if_exists(&self, permits: u32) -> Result<bool> {
        if self.no_permits(permits)? {
            return Ok(false);
        }
        let result = Box::pin(self.release_script(permits, true)).await;
        self.record_release(&result);
        result
    }

    fn record_release<T>(&self, result: &Result<T>) {
        let outcome = match result {
            Ok(_) => UnlockOutcome::Released,
            Err(_) => UnlockOutcome::Error,
        };
        telemetry::unlock_finished(KIND, outcome, None, self.metric_name());
    }

    /// Adds `permits` permits (a negative number takes them away, possibly below 0);
    /// returns the new count, which is published when above 0. The key's TTL, if any, is
    /// dropped (Redisson's `SET`).
    ///
    /// Sent once: unlike Redisson, which runs it again (up to five times) when no replica
    /// acknowledged it, a change no replica acknowledged is logged, not repeated.
    ///
    /// # Errors
    /// [`Error::WrongType`]; [`Error::OutcomeUnknown`] if the reply was lost.
    ///
    /// # Redisson equivalent
    /// `RSemaphore#addPermits(int permits)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let now = semaphore.add_permits(2).await?;   // two more calls at a time
    /// semaphore.add_permits(-1).await?;            // one fewer
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.add_permits", skip(self), fields(semaphore = %self.name))]
    pub async fn add_permits(&self, permits: i64) -> Result<i64> {
        self.check()?;
        self.add_script(permits).await
    }

    /// Takes every available permit: sets the count to 0 if the key exists, and returns
    /// what it was (0 when missing; a negative count is returned as it was). Publishes
    /// nothing; drops a TTL.
    ///
    /// # Errors
    /// [`Error::WrongType`]; [`Error::OutcomeUnknown`] if the reply was lost.
    ///
    /// # Redisson equivalent
    /// `RSemaphore#drainPermits()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// let taken = semaphore.drain_permits().await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.drain_permits", skip(self), fields(semaphore = %self.name))]
    pub async fn drain_permits(&self) -> Result<i64> {
        self.check()?;
        self.drain_script().await
    }

    /// The permits available now (`GET`; 0 when the key is missing; may be negative).
    ///
    /// # Errors
    /// [`Error::WrongType`]; [`Error::Redis`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#availablePermits()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// println!("{} free", semaphore.available_permits().await?);
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.available_permits", skip(self), fields(semaphore = %self.name))]
    pub async fn available_permits(&self) -> Result<i64> {
        self.check()?;
        let count: Option<String> = self
            .context
            .redis
            .query(|r| r.get(&*self.name))
            .await
            .map_err(|e| self.redis_error(e))?;
        match count {
            None => Ok(0),
            Some(text) => text.parse().map_err(|_| Error::UnexpectedReply {
                operation: "semaphore available_permits",
                reply: text,
            }),
        }
    }

    /// Deletes the semaphore's key (`DEL`); whether it existed. Waiters keep waiting (a
    /// missing key is 0 permits). Publishes nothing, as Redisson.
    ///
    /// # Errors
    /// [`Error::Redis`].
    ///
    /// # Redisson equivalent
    /// `RSemaphore#delete()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
    /// semaphore.delete().await?;
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(name = "redisson_lock.semaphore.delete", skip(self), fields(semaphore = %self.name))]
    pub async fn delete(&self) -> Result<bool> {
        self.check()?;
        let deleted: i64 = self
            .context
            .redis
            .query(|r| r.del(&*self.name))
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(deleted == 1)
    }
}

#[cfg(test)]
mod bounds {
    //! The handle and guard are `Send + Sync`, and every future is `Send`.
    use super::*;

    fn send<T: Send>(_: &T) {}
    fn send_sync<T: Send + Sync>() {}

    #[allow(dead_code, clippy::let_underscore_future)]
    fn futures_are_send(semaphore: Semaphore, permits: SemaphorePermits) {
        send_sync::<Semaphore>();
        send_sync::<SemaphorePermits>();
        send(&semaphore.acquire(1));
        send(&semaphore.try_acquire(1));
        send(&semaphore.try_acquire_for(1, Duration::from_secs(1)));
        send(&semaphore.release(1));
        send(&semaphore.add_permits(1));
        send(&semaphore.available_permits());
        send(&permits.release());
    }
}
