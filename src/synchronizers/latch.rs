//! `CountDownLatch`: Redisson's `RCountDownLatch` (docs/protocol.md §21).
//!
//! The count is the string key `N` (missing = 0, open); its channel is
//! `redisson_countdownlatch__channel__{N}`, braces always added
//! ([`crate::names::formats::latch_channel`]). Each change is one script
//! (`lua/latch_*.lua`), with the same effect on the key and the same messages as Java's,
//! except `delete`, which opens the waiters (`0`) where Java closes them (`1`).
//!
//! Invariants of a wait:
//! * it reads the count (`GET`) before subscribing, after subscribing and after every
//!   wake-up, and returns as soon as it reads 0 or less (joining a channel this client is
//!   subscribed to already costs nothing, so such a waiter joins first and reads once);
//! * it waits through [`crate::engine::wait::waiter`], as every primitive does: the channel's
//!   subscription is this client's one share per channel (with [`latch_messages`]): 64
//!   waiters of one client are one `SUBSCRIBE`; the wake-up is armed before each read, so
//!   a `0` published between the read and the sleep is not lost; every sleep is bounded
//!   by the caller's deadline and the wait's re-check (a message lost with a
//!   subscription costs at most that long);
//! * a message that does not open the latch (a stray `0`, Java's `1`) costs each waiter
//!   one `GET`, and the waiter keeps its deadline;
//! * dropping a wait at any await point gives its share of the subscription back (the
//!   channel is unsubscribed [`LINGER`](crate::engine::wait::pubsub::LINGER) later if nobody
//!   else uses it).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use fred::prelude::{KeysInterface, Value};
use tokio::time::Instant;
use tracing::Instrument;

use crate::connection::scripts::{Resend, Script, outcome_unknown, redis_error};
use crate::engine::Engine;
use crate::engine::telemetry::{self, LatchWaitOutcome};
use crate::engine::wait::messages::latch_messages;
use crate::engine::wait::waiter::{self, Budget, Listen, Tried};
use crate::error::{Error, Result};

/// `lua/latch_try_set_count.lua`.
pub(crate) const LATCH_TRY_SET_COUNT: &str = include_str!("../../lua/latch_try_set_count.lua");
/// `lua/latch_count_down.lua`.
pub(crate) const LATCH_COUNT_DOWN: &str = include_str!("../../lua/latch_count_down.lua");
/// `lua/latch_delete.lua`.
pub(crate) const LATCH_DELETE: &str = include_str!("../../lua/latch_delete.lua");

static TRY_SET_COUNT: LazyLock<Script> = LazyLock::new(|| Script::new(LATCH_TRY_SET_COUNT));
static COUNT_DOWN: LazyLock<Script> = LazyLock::new(|| Script::new(LATCH_COUNT_DOWN));
static DELETE: LazyLock<Script> = LazyLock::new(|| Script::new(LATCH_DELETE));

/// Redisson's `ZERO_COUNT_MESSAGE`: the count reached zero.
const ZERO_COUNT: &str = "0";
/// Redisson's `NEW_COUNT_MESSAGE`: a count was set.
const NEW_COUNT: &str = "1";

/// The metrics' and spans' name of this kind.
const KIND: &str = "count_down_latch";

/// A distributed count-down latch, wire-compatible with Redisson's `RCountDownLatch`.
///
/// A latch is a count in Redis (the string key `name`) that tasks count down; waiters
/// are released when it reaches zero. A missing key is a count of zero: a latch is open
/// until [`try_set_count`](CountDownLatch::try_set_count) gives it a count, and it can be
/// set again once it is open. Java apps on the same Redis see the same latch: their
/// `countDown()` releases this crate's waiters and the other way round.
///
/// `CountDownLatch` is a cheap `Clone` handle and does no I/O until used.
///
/// # Differences from Redisson
/// * [`delete`](CountDownLatch::delete) releases the latch's waiters (their count now
///   reads 0), Java's and this crate's; Redisson's `delete()` leaves its own waiters
///   asleep (docs/protocol.md §21.3).
/// * A wait keeps its timeout whatever is published on the channel (a Java waiter spins
///   and ignores its timeout after a stray `0`).
/// * [`count_down_and_wait`](CountDownLatch::count_down_and_wait) (redisson#6060).
/// * On a Redis Cluster a name containing `{` is refused with
///   [`Error::InvalidArgument`]: the latch's channel (which Redisson always wraps in new
///   braces) then hashes to another slot than its key, and every script fails with
///   `CROSSSLOT`, in Java as here.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let latch = client.get_count_down_latch("jobs:batch-7");
/// latch.try_set_count(3).await?;
/// for _ in 0..3 {
///     let latch = latch.clone();
///     tokio::spawn(async move { latch.count_down().await });
/// }
/// latch.wait().await?;                      // returns once all three counted down
/// assert_eq!(latch.get_count().await?, 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CountDownLatch {
    context: Arc<Engine>,
    /// The name as stored in Redis (`N`): the given name through the name mapper.
    name: Arc<str>,
    /// The name as given, when a name mapper changed it.
    given: Option<Arc<str>>,
    /// `redisson_countdownlatch__channel__{N}`.
    channel: Arc<str>,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("name", &self.name())
            .field("raw_name", &self.name)
            .field("channel", &self.channel)
            .finish()
    }
}

impl CountDownLatch {
    /// A handle on latch `name` (as the application gives it); the name mapper is applied
    /// here, once. No I/O.
    pub(crate) fn new(context: Arc<Engine>, name: String) -> CountDownLatch {
        let crate::names::mapper::MappedName { raw, given } =
            crate::names::mapper::MappedName::new(context.config.name_mapper(), name);
        let channel = crate::names::formats::latch_channel(&raw).into();
        CountDownLatch {
            context,
            name: raw,
            given,
            channel,
        }
    }

    /// The latch's name, as given to the client.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#getName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.get_count_down_latch("jobs").name(), "jobs");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.given.as_deref().unwrap_or(&self.name)
    }

    /// The latch's name as stored in Redis (the count's key): [`CountDownLatch::name`]
    /// through the client's [name mapper](crate::ConfigBuilder::name_mapper).
    ///
    /// # Redisson equivalent
    /// `RedissonObject#getRawName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// println!("the count is the key {}", client.get_count_down_latch("jobs").raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        &self.name
    }

    /// The channel the latch's messages travel on:
    /// `redisson_countdownlatch__channel__{` + [`raw_name`](CountDownLatch::raw_name) +
    /// `}` (braces added even when the name has some, as Redisson does).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let latch = client.get_count_down_latch("jobs");
    /// assert_eq!(latch.channel(), "redisson_countdownlatch__channel__{jobs}");
    /// # }
    /// ```
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Sets the count to `count` if the latch has none (its key is missing: it is open),
    /// and publishes `1` (Java clients close their local latches). Returns whether it was
    /// set. A count of 0 or less is stored as given, as Redisson does, and leaves the
    /// latch open.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty name, or a name with `{` on a cluster (see
    /// the type's docs); [`Error::WrongType`] when the key holds something else than a
    /// string; [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#trySetCount(long count)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs");
    /// assert!(latch.try_set_count(2).await?);
    /// assert!(!latch.try_set_count(5).await?, "already counting");
    /// # Ok(()) }
    /// ```
    pub async fn try_set_count(&self, count: i64) -> Result<bool> {
        self.check()?;
        let span =
            tracing::debug_span!("redisson_lock.latch.try_set_count", latch = %self.name, count);
        async {
            let args = [
                Value::from(NEW_COUNT),
                Value::from(count),
                Value::from(self.context.publish_command),
            ];
            let reply = self.run(&TRY_SET_COUNT, &args, Resend::Allowed).await?;
            let set = int_reply("try_set_count", &reply)? == 1;
            tracing::debug!(set, "try_set_count");
            Ok(set)
        }
        .instrument(span)
        .await
    }

    /// Counts the latch down by one. At zero the key is deleted and `0` is published:
    /// every waiter (Java's too) is released. On a latch that is open already it does
    /// nothing (Redisson deletes the `-1` its `DECR` made).
    ///
    /// Sent once, never again: a reply lost with the connection leaves the caller not
    /// knowing whether it counted, and a second `DECR` could count twice.
    ///
    /// # Errors
    /// [`Error::OutcomeUnknown`] when the reply was lost (read
    /// [`get_count`](CountDownLatch::get_count) to decide); [`Error::WrongType`] when the
    /// key does not hold an integer; [`Error::InvalidArgument`], [`Error::Redis`],
    /// [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#countDown()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs");
    /// latch.count_down().await?;
    /// # Ok(()) }
    /// ```
    pub async fn count_down(&self) -> Result<()> {
        self.count_down_left().await.map(|_| ())
    }

    /// [`count_down`](CountDownLatch::count_down), returning the count left as the
    /// script saw it (0 or less: open).
    async fn count_down_left(&self) -> Result<i64> {
        self.check()?;
        let span = tracing::debug_span!("redisson_lock.latch.count_down", latch = %self.name);
        async {
            let args = [
                Value::from(ZERO_COUNT),
                Value::from(self.context.publish_command),
            ];
            let reply = match self.run(&COUNT_DOWN, &args, Resend::Never).await {
                Err(Error::Redis(error)) if outcome_unknown(&error) => {
                    return Err(Error::OutcomeUnknown {
                        operation: "count_down",
                        name: self.name().to_owned(),
                        reason: format!(
                            "the reply was lost ({error}); the count down was not sent \
                             again (it could count twice): read get_count() to decide"
                        ),
                    });
                }
                other => other?,
            };
            let left = int_reply("count_down", &reply)?;
            telemetry::latch_count_down(left <= 0);
            tracing::debug!(left, "count_down");
            Ok(left)
        }
        .instrument(span)
        .await
    }

    /// The count (`GET`): 0 when the key is missing (open). A negative count set by
    /// [`try_set_count`](CountDownLatch::try_set_count) reads as stored.
    ///
    /// # Errors
    /// [`Error::WrongType`] when the key holds something other than an integer;
    /// [`Error::InvalidArgument`], [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#getCount()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs");
    /// println!("{} jobs to go", latch.get_count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn get_count(&self) -> Result<i64> {
        self.check()?;
        self.read_count().await
    }

    /// Deletes the latch's count and, if there was one, publishes `0`: every waiter of
    /// the latch, this crate's and Java's, wakes, reads 0 and returns. Returns whether
    /// there was a count.
    ///
    /// Redisson's `delete()` publishes `1` instead, which leaves its waiters asleep on a
    /// latch whose count reads 0 until their timeout (or forever); this crate's waiters
    /// are released by that `1` too.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#delete()` (which publishes `1`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs");
    /// latch.try_set_count(10).await?;
    /// assert!(latch.delete().await?);           // waiters are released
    /// assert_eq!(latch.get_count().await?, 0);
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<bool> {
        self.check()?;
        let span = tracing::debug_span!("redisson_lock.latch.delete", latch = %self.name);
        async {
            let args = [
                Value::from(ZERO_COUNT),
                Value::from(self.context.publish_command),
            ];
            let reply = self.run(&DELETE, &args, Resend::Allowed).await?;
            let deleted = int_reply("delete", &reply)? == 1;
            tracing::debug!(deleted, "delete");
            Ok(deleted)
        }
        .instrument(span)
        .await
    }

    /// Whether the latch's count key exists (`EXISTS N`): `false` for a latch never set,
    /// counted down to 0 or deleted (all of which are open).
    ///
    /// Redisson's `RCountDownLatch` is an `RObject`, not an `RExpirable`: it has no
    /// `expire` / `clearExpire` / `remainTimeToLive`, and neither has this type.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (see the type's docs: a braced name on a cluster),
    /// [`Error::Redis`], [`Error::Shutdown`].
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#isExists()` (`RObject`)
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.get_count_down_latch("jobs");
    /// if !latch.is_exists().await? {
    ///     latch.try_set_count(3).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn is_exists(&self) -> Result<bool> {
        self.check()?;
        crate::synchronizers::expiry::exists(&self.context, &self.name).await
    }

    /// Waits until the count is 0 or less (the key is missing). Returns at once on an
    /// open latch.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future gives back its share of the channel's
    /// subscription; nothing else was changed.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the subscription is not confirmed within
    /// [`ConfigBuilder::subscription_timeout`](crate::ConfigBuilder::subscription_timeout);
    /// [`Error::Shutdown`] when the client shuts down meanwhile; [`Error::WrongType`],
    /// [`Error::InvalidArgument`], [`Error::Redis`].
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#await()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// client.get_count_down_latch("jobs").wait().await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait(&self) -> Result<()> {
        self.check()?;
        self.wait_measured(None, false).await.map(|_| ())
    }

    /// Waits until the count is 0 or less, at most `timeout`. Returns `true` when the
    /// latch opened, `false` when the time ran out. Messages on the channel never extend
    /// or cut the wait.
    ///
    /// # Cancel safety
    /// As [`wait`](CountDownLatch::wait).
    ///
    /// # Errors
    /// As [`wait`](CountDownLatch::wait), without [`Error::Timeout`] (a subscription
    /// not confirmed in time is `false`).
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#await(long time, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let latch = client.get_count_down_latch("jobs");
    /// if !latch.wait_for(Duration::from_secs(30)).await? {
    ///     eprintln!("{} jobs still running", latch.get_count().await?);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait_for(&self, timeout: Duration) -> Result<bool> {
        self.check()?;
        let deadline = Instant::now().checked_add(timeout);
        self.wait_measured(Some(deadline), false).await
    }

    /// Counts down (as [`count_down`](CountDownLatch::count_down)), then waits for the
    /// latch to open (as [`wait`](CountDownLatch::wait)): a barrier of `count` parties
    /// that each call this once. Returns at once when this count down opened the latch.
    ///
    /// # Cancel safety
    /// Dropped before the count down's reply, the count down may or may not have been
    /// applied; dropped later, only the wait is cancelled (the count down stands).
    ///
    /// # Errors
    /// As [`count_down`](CountDownLatch::count_down) and [`wait`](CountDownLatch::wait).
    ///
    /// # Redisson equivalent
    /// None: requested as `countDownAndAwait()` (redisson#6060).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let barrier = client.get_count_down_latch("stage-1");
    /// barrier.try_set_count(4).await?;          // once, by a coordinator
    /// // … in each of the 4 workers, when its part of stage 1 is done:
    /// barrier.count_down_and_wait().await?;
    /// # Ok(()) }
    /// ```
    pub async fn count_down_and_wait(&self) -> Result<()> {
        if self.count_down_left().await? <= 0 {
            return Ok(());
        }
        self.wait_measured(None, true).await.map(|_| ())
    }

    /// [`count_down_and_wait`](CountDownLatch::count_down_and_wait), waiting at most
    /// `timeout` (the count down's round trip included). Returns whether the latch opened.
    ///
    /// # Cancel safety
    /// As [`count_down_and_wait`](CountDownLatch::count_down_and_wait).
    ///
    /// # Errors
    /// As [`count_down`](CountDownLatch::count_down) and
    /// [`wait_for`](CountDownLatch::wait_for).
    ///
    /// # Redisson equivalent
    /// None (redisson#6060).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let barrier = client.get_count_down_latch("stage-1");
    /// if !barrier.count_down_and_wait_for(Duration::from_secs(60)).await? {
    ///     eprintln!("a worker is late");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn count_down_and_wait_for(&self, timeout: Duration) -> Result<bool> {
        let deadline = Instant::now().checked_add(timeout);
        if self.count_down_left().await? <= 0 {
            return Ok(true);
        }
        self.wait_measured(Some(deadline), true).await
    }

    /// The wait with its span, metrics and waiters gauge. `deadline`: `None` waits
    /// without a limit, `Some(None)` has a deadline too far to represent (the same).
    async fn wait_measured(
        &self,
        deadline: Option<Option<Instant>>,
        counted_down: bool,
    ) -> Result<bool> {
        let started = Instant::now();
        let span = tracing::debug_span!(
            "redisson_lock.latch.wait",
            latch = %self.name,
            timeout_ms = deadline.flatten().map(|d| d.saturating_duration_since(started).as_millis() as u64),
        );
        let waiting = telemetry::Waiting::start(KIND);
        let deadline = deadline.flatten();
        let outcome = self
            .wait_until(deadline, counted_down)
            .instrument(span)
            .await;
        drop(waiting);
        let measured = match &outcome {
            Ok(true) => LatchWaitOutcome::Opened,
            Ok(false) => LatchWaitOutcome::TimedOut,
            Err(_) => LatchWaitOutcome::Error,
        };
        telemetry::latch_wait_finished(measured, started.elapsed());
        outcome
    }

    /// Reads, subscribes, reads, then sleeps and reads after each wake-up (see the module
    /// docs), through [`crate::engine::wait::waiter`]. `skip_first_read`: the caller knows the
    /// count is positive.
    async fn wait_until(&self, deadline: Option<Instant>, skip_first_read: bool) -> Result<bool> {
        // A channel this client is subscribed to already (other waiters, or one that left
        // less than `LINGER` ago) costs nothing to join: join it first, and the loop's
        // first read is the only one before sleeping.
        let pubsub = &self.context.pubsub;
        let warm = pubsub.is_ready(&self.channel);
        if !skip_first_read && !warm && self.read_count().await? <= 0 {
            return Ok(true);
        }
        let listen = Listen {
            channel: &self.channel,
            messages: latch_messages,
            marker: None,
            what: "subscribing to the latch channel",
        };
        let budget = Budget {
            deadline,
            subscription_timeout: self.context.config.settings.subscription_timeout,
        };
        let subscribed = waiter::subscribe(pubsub, listen, budget, |e| self.redis_error(e));
        let Some(subscription) = subscribed.await? else {
            return Ok(false);
        };
        let opened = waiter::wait_for(pubsub, &subscription, deadline, || async {
            let count = self.read_count().await?;
            if count <= 0 {
                tracing::debug!(count, "latch open");
                return Ok(Tried::Done(()));
            }
            tracing::trace!(count, "waiting for the latch's message");
            Ok(Tried::NotYet(None))
        })
        .await?;
        if opened.is_none() {
            tracing::debug!("latch still closed at the deadline");
        }
        Ok(opened.is_some())
    }

    /// `GET N` as a count: nil is 0.
    async fn read_count(&self) -> Result<i64> {
        let value: Value = self
            .context
            .redis
            .query(|r| r.get::<Value, _>(&*self.name))
            .await
            .map_err(|e| self.redis_error(e))?;
        match value {
            Value::Null => Ok(0),
            Value::Integer(n) => Ok(n),
            other => other
                .as_str()
                .and_then(|text| text.parse::<i64>().ok())
                .ok_or_else(|| Error::WrongType {
                    key: self.name.to_string(),
                }),
        }
    }

    /// Refuses an empty name, a closed client, and on a cluster a name whose channel
    /// hashes to another slot than its key (docs/protocol.md §25.3), before any I/O.
    fn check(&self) -> Result<()> {
        if self.name.is_empty() || self.name().is_empty() {
            return Err(Error::invalid("latch name must not be empty"));
        }
        if self.context.is_closed() {
            return Err(Error::Shutdown);
        }
        if self.context.config.redis.server.is_clustered()
            && fred::util::redis_keyslot(self.name.as_bytes())
                != fred::util::redis_keyslot(self.channel.as_bytes())
        {
            return Err(Error::invalid(format!(
                "latch name {:?} contains braces: on a Redis Cluster its channel {:?} (Redisson \
                 always wraps the name in new braces) hashes to another slot than its key, so \
                 every latch script would fail with CROSSSLOT (Java Redisson's too); use a \
                 name without `{{`",
                &*self.name, &*self.channel
            )));
        }
        Ok(())
    }

    /// Runs one of the latch's scripts on `[N, channel]`, through the failover gate.
    async fn run(&self, script: &Script, args: &[Value], resend: Resend) -> Result<Value> {
        let keys = [&*self.name, &*self.channel];
        self.context
            .redis
            .eval(script, &keys, args, resend)
            .await
            .map_err(|e| self.redis_error(e))
    }

    fn redis_error(&self, error: fred::error::Error) -> Error {
        if error.details().contains("not an integer") {
            Error::WrongType {
                key: self.name.to_string(),
            }
        } else {
            redis_error(&self.name, self.context.is_closed(), error)
        }
    }
}

fn int_reply(operation: &'static str, reply: &Value) -> Result<i64> {
    reply.as_i64().ok_or_else(|| Error::UnexpectedReply {
        operation,
        reply: format!("{reply:?}"),
    })
}
