//! What a lock kind tells the engine: its scripts with their keys and arguments, how to
//! read their replies, where its waiters listen, how the watchdog renews it, and which of
//! the engine's behaviours it turns on ([`Capabilities`]).
//!
//! A kind builds script calls; it never sends anything itself. The engine
//! ([`Lock`](super::Lock)) runs the calls, and owns everything the kinds share: the wait
//! loop, the wait budget, cancel safety, sending acquire and unlock at most once, the
//! unlock latch, watchdog registration and guards.

use fred::prelude::Value;

use crate::engine::Engine;
use crate::engine::hold::held::Held;
use crate::engine::wait::queued_waiters::Slot;
use crate::error::Error;
use crate::names::owner::LockOwner;

pub(crate) use super::call::{ScriptCall, Target};
pub(crate) use super::capabilities::Capabilities;

/// A kind of lock (reentrant, fair, read, write, fenced, spin, non-reentrant).
///
/// Implemented by the kind types of this crate only; it names the kind in types such as
/// [`Lock<Fair>`](super::Lock) and [`LockGuard<Fair>`](super::LockGuard), and is sealed.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::{Lock, LockKind};
/// async fn with_any_lock<K: LockKind>(lock: &Lock<K>) -> redisson_lock::Result<()> {
///     lock.lock().await?;
///     lock.unlock().await
/// }
/// with_any_lock(&client.get_lock("a")).await?;
/// with_any_lock(&client.get_fair_lock("b")).await?;
/// # Ok(()) }
/// ```
pub trait LockKind: sealed::Kind {}

impl<K: sealed::Kind> LockKind for K {}

pub(crate) use sealed::Kind;

// The trait is sealed: nothing outside the crate can name it, so the crate-private types
// in its methods never reach a user (`private_interfaces` does not know that).
#[allow(unreachable_pub, private_interfaces)]
mod sealed {
    use super::*;

    /// The engine's view of a kind. Every method is cheap and does no I/O.
    pub trait Kind: Clone + Send + Sync + std::fmt::Debug + 'static {
        /// The kind's name in traces and errors, e.g. `"fair"`.
        const NAME: &'static str;

        /// What the kind changes in the engine's behaviour beyond its scripts (a queue in
        /// Redis, tokens, the read-write lock's sides, the local line); nothing by default.
        /// See [`Capabilities`] for every branch of the engine it turns on.
        const CAPABILITIES: Capabilities = Capabilities::NONE;

        /// The hash field `owner` writes: `<client-id>:<owner>` (write locks add
        /// `:write`).
        fn field(&self, context: &Engine, owner: LockOwner) -> String {
            crate::names::owner_field(&context.id, owner)
        }

        /// Checks the kind's own settings (a spin lock's back-off) before an acquisition:
        /// [`Error::InvalidArgument`] refuses it before any I/O.
        fn check(&self) -> Result<(), Error> {
            Ok(())
        }

        /// The acquire script for one attempt.
        fn acquire(&self, target: &Target<'_>, lease_ms: u64, mode: AcquireMode) -> ScriptCall;

        /// Reads the acquire script's reply; `Err` gives back a reply the kind does not
        /// know.
        fn acquire_reply(&self, reply: Value) -> Result<Acquire, Value> {
            match reply {
                Value::Null => Ok(Acquire::Taken { token: None }),
                Value::Integer(ttl) => Ok(Acquire::Held { ttl }),
                other => Err(other),
            }
        }

        /// The release script: give back one hold, idempotently through `latch`. It
        /// answers nil (not the owner), 0 (holds remain) or 1 (released). Default: RLock's.
        fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
            super::super::base::release_call(target, lease_ms, latch)
        }

        /// The release of `target`'s owner that hands the lock to `next` when it gives
        /// back the last hold (replies as the release, plus `2`: handed): RLock's
        /// hand-off script for the kinds with [`Capabilities::hands_off_locally`], none for
        /// the others.
        fn handoff(
            &self,
            target: &Target<'_>,
            lease_ms: u64,
            latch: &str,
            next: &super::super::base::HandoffTo,
        ) -> Option<ScriptCall> {
            Self::CAPABILITIES
                .hands_off_locally
                .then(|| super::super::base::handoff_call(target, lease_ms, latch, next))
        }

        /// The release of `target`'s owner that, when it gives back the last hold and
        /// the head of the lock's queue in Redis is one of `named`, does that waiter's
        /// acquire in the same step (replies as the release, plus `2 + i`: handed to
        /// `named[i]`): the fair lock's hand-off (see [`crate::engine::wait::queued_waiters`]); none
        /// for the kinds without a queue.
        fn queue_handoff(
            &self,
            _target: &Target<'_>,
            _lease_ms: u64,
            _latch: &str,
            _named: &[std::sync::Arc<Slot>],
        ) -> Option<ScriptCall> {
            None
        }

        /// The force-release script: delete the lock whoever holds it; answers 1 or 0.
        /// Default: RLock's.
        fn force_release(&self, target: &Target<'_>) -> ScriptCall {
            super::super::base::force_release_call(target)
        }

        /// The clean-up after a queued waiter gives up (the fair lock's `acquireFailed`);
        /// `None` for kinds without a queue.
        fn acquire_failed(&self, _target: &Target<'_>, _wait_ms: u64) -> Option<ScriptCall> {
            None
        }

        /// How a waiter of this kind waits between attempts. Default: RLock's channel
        /// `redisson_lock__channel:{N}`.
        fn waiting(&self, target: &Target<'_>) -> Waiting {
            Waiting::Channel(crate::names::lock_channel(target.name))
        }

        /// What a hold of `target`'s owner is, for the watchdog and the sentry: by
        /// default the owner field `<client-id>:<owner>` (shared with the handle's
        /// ready-made values). Kinds whose [`Kind::field`] differs override this too.
        fn held(&self, target: &Target<'_>) -> std::sync::Arc<dyn Held> {
            target.owner_held()
        }

        /// The values the watchdog renews for one hold of this handle, for the kinds that
        /// hold several values under one name (the faster multi-lock); `None` for the
        /// others, whose holds of one name are all alike.
        fn renewal_values(&self) -> Option<&std::sync::Arc<[String]>> {
            None
        }

        /// How `is_locked` asks Redis.
        fn locked_probe(&self, _name: &str) -> LockedProbe {
            LockedProbe::Exists
        }

        /// A script answering `{held, count, remaining_ms}` for `target`'s owner, used by
        /// `is_held_by`, `hold_count` and `remain_time_to_live` in place of `HEXISTS`,
        /// `HGET` and `PTTL` (the faster multi-lock, whose holds are per value); `None`
        /// for the kinds with one owner field.
        fn holds_probe(&self, _target: &Target<'_>) -> Option<ScriptCall> {
            None
        }

        /// A typed error for a script error reply this kind raises on purpose.
        fn script_error(&self, _target: &Target<'_>, _error: &fred::error::Error) -> Option<Error> {
            None
        }
    }
}

/// Which acquire script an attempt uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AcquireMode {
    /// A single attempt (`tryLock()`): a fair lock does not queue.
    Once,
    /// An attempt of a caller that will wait: a fair lock queues it, reserving `wait_ms`
    /// (Redisson's thread wait time) for its turn.
    Queue { wait_ms: u64 },
}

/// What an acquire script answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Acquire {
    /// Taken (or re-entered); a fenced lock's token.
    Taken { token: Option<u64> },
    /// Held by another owner; the time in ms worth waiting before the next attempt
    /// (negative: no expiry, wait for a message).
    Held { ttl: i64 },
}

/// How waiters wait between attempts.
#[derive(Clone, Debug)]
pub(crate) enum Waiting {
    /// On a pub/sub channel, bounded by the holder's TTL.
    Channel(String),
    /// Polling with back-off (the spin lock).
    Poll(super::backoff::Backoff),
}

/// How `is_locked` asks Redis.
pub(crate) enum LockedProbe {
    /// `EXISTS name`.
    Exists,
    /// `HGET name mode` equals this.
    ModeIs(&'static str),
    /// A script answering 1 or 0.
    Script(ScriptCall),
}

pub(crate) use crate::connection::scripts::now_ms;
