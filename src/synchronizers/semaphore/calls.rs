//! The semaphore's scripts and how they are sent: each operation is one script call
//! (`EVALSHA`, `EVAL` after a `NOSCRIPT`), through the failover gate, with `WAIT` for the
//! replicas behind it where Redisson sends one (docs/protocol.md §24).
//!
//! Invariants: a script that changes the count is written at most once
//! ([`Resend::Never`]): a plain semaphore's permits have no owner, so a call whose reply
//! was lost cannot be told apart from one that never ran, and sending it again could
//! apply it twice; such a call ends in [`Error::OutcomeUnknown`]. The one exception is the
//! undo of an acquire no replica acknowledged, which carries a latch key that makes it
//! idempotent, so it is sent until it is answered: the permits are given back exactly
//! once.

use std::sync::LazyLock;

use fred::prelude::Value;

use super::Semaphore;
use crate::connection::replicas::Synced;
use crate::connection::retry;
use crate::connection::scripts::{Resend, Script, is_wrong_type, outcome_unknown, redis_error};
use crate::error::{Error, Result};

pub(crate) const SEMAPHORE_ACQUIRE: &str = include_str!("../../../lua/semaphore_acquire.lua");
pub(crate) const SEMAPHORE_RELEASE: &str = include_str!("../../../lua/semaphore_release.lua");
pub(crate) const SEMAPHORE_TRY_SET_PERMITS: &str =
    include_str!("../../../lua/semaphore_try_set_permits.lua");
pub(crate) const SEMAPHORE_ADD_PERMITS: &str =
    include_str!("../../../lua/semaphore_add_permits.lua");
pub(crate) const SEMAPHORE_DRAIN_PERMITS: &str =
    include_str!("../../../lua/semaphore_drain_permits.lua");

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(SEMAPHORE_ACQUIRE));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(SEMAPHORE_RELEASE));
static TRY_SET_PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(SEMAPHORE_TRY_SET_PERMITS));
static ADD_PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(SEMAPHORE_ADD_PERMITS));
static DRAIN_PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(SEMAPHORE_DRAIN_PERMITS));

/// How many times the undo of an unsynced acquire is sent before the caller is told its
/// outcome is unknown.
const UNDO_SENDS: u32 = 4;

/// What one acquire attempt found.
#[derive(Debug)]
pub(super) enum Attempt {
    Taken,
    TooFew,
}

impl Semaphore {
    /// `N` and `redisson_sc:{N}`, the keys of every script but the acquire's.
    fn keys(&self) -> [Value; 2] {
        [Value::from(&*self.name), Value::from(&*self.channel)]
    }

    /// `"PUBLISH"` or `"SPUBLISH"`.
    fn publish(&self) -> Value {
        Value::from_static_str(self.context.publish_command)
    }

    /// Sends one script call, followed by `WAIT` for the replicas when the configuration
    /// asks for it.
    async fn run_synced(
        &self,
        script: &'static Script,
        keys: &[Value],
        args: &[Value],
        resend: Resend,
    ) -> Result<(Value, Synced), fred::error::Error> {
        self.context
            .redis
            .eval_synced(script, keys, args, resend)
            .await
    }

    /// A Redis error as the crate's.
    pub(super) fn redis_error(&self, error: fred::error::Error) -> Error {
        redis_error(&self.name, self.context.is_closed(), error)
    }

    /// The error of a call written at most once whose reply was lost.
    fn lost_reply(&self, operation: &'static str, error: fred::error::Error) -> Error {
        if !outcome_unknown(&error) || self.context.is_closed() {
            return self.redis_error(error);
        }
        Error::OutcomeUnknown {
            operation,
            name: self.name().to_owned(),
            reason: format!(
                "its reply was lost ({error}). A semaphore's permits have no owner, so this \
                 client cannot learn whether it ran, and does not send it again (it could run \
                 twice). Check `available_permits()`; a PermitExpirableSemaphore's permits \
                 have ids and leases, which settle such a loss."
            ),
        }
    }

    /// A change applied on the primary that no replica acknowledged: logged, not failed
    /// (failing it would tell the caller it did not happen; Redisson fails it, and re-runs
    /// some of them, docs/protocol.md §24.4).
    fn log_unsynced(&self, operation: &'static str, synced: &Synced) {
        synced.log_unsynced("semaphore", &self.name, operation);
    }

    /// A change of the count, written at most once; its reply as an integer.
    async fn change(
        &self,
        operation: &'static str,
        script: &'static Script,
        keys: &[Value],
        args: &[Value],
    ) -> Result<i64> {
        let (reply, synced) = self
            .run_synced(script, keys, args, Resend::Never)
            .await
            .map_err(|error| self.lost_reply(operation, error))?;
        self.log_unsynced(operation, &synced);
        integer(operation, reply)
    }

    /// One acquire attempt: the script, once; permits taken without a replica's
    /// acknowledgement are given back (exactly once) and reported as
    /// [`Error::NoSyncedReplicas`].
    pub(super) async fn attempt(&self, permits: u32) -> Result<Attempt> {
        let keys = [Value::from(&*self.name)];
        let args = [Value::from(i64::from(permits))];
        let (reply, synced) = self
            .run_synced(&ACQUIRE, &keys, &args, Resend::Never)
            .await
            .map_err(|error| self.lost_reply("semaphore acquire", error))?;
        if integer("semaphore acquire", reply)? != 1 {
            return Ok(Attempt::TooFew);
        }
        match synced {
            Synced::NoneAcked { replicas } => {
                self.undo_unsynced(permits).await?;
                Err(Error::NoSyncedReplicas {
                    name: self.name().to_owned(),
                    replicas,
                })
            }
            Synced::Failed(error) => {
                self.undo_unsynced(permits).await?;
                Err(self.redis_error(error))
            }
            Synced::Unchecked | Synced::Acked => Ok(Attempt::Taken),
        }
    }

    /// Gives back the permits of an acquire no replica acknowledged, exactly once: the
    /// release carries a fresh latch key, so a send whose reply was lost can be sent
    /// again without giving back twice. No `WAIT` of its own (the replicas just failed to
    /// answer). Unlike Redisson, the acquire is not run again.
    async fn undo_unsynced(&self, permits: u32) -> Result<()> {
        tracing::warn!(semaphore = %self.name, permits, "no replica acknowledged the acquire: giving the permits back");
        let latch = crate::names::formats::unlock_latch(&self.name, self.context.next_request_id());
        let keys = [
            Value::from(&*self.name),
            Value::from(&*self.channel),
            Value::from(latch.as_str()),
        ];
        let ttl = self
            .context
            .config
            .settings
            .unlock_latch_ttl
            .as_millis()
            .max(1) as i64;
        let args = [
            Value::from(i64::from(permits)),
            self.publish(),
            Value::from_static_str("0"),
            Value::from(ttl),
        ];
        let mut last = None;
        let mut pauses = retry::UNSYNCED_UNDONE.pauses();
        for send in 0..UNDO_SENDS {
            if send > 0 {
                tokio::time::sleep(pauses.next()).await;
            }
            let sent = self
                .context
                .redis
                .eval(&RELEASE, &keys, &args, Resend::Allowed)
                .await;
            match sent {
                Ok(_) => {
                    self.context.delete_latch_later(latch);
                    return Ok(());
                }
                Err(error) if is_wrong_type(&error) || self.context.is_closed() => {
                    return Err(self.redis_error(error));
                }
                Err(error) => last = Some(error),
            }
        }
        Err(Error::OutcomeUnknown {
            operation: "semaphore acquire",
            name: self.name().to_owned(),
            reason: format!(
                "no replica acknowledged it, and giving its {permits} permit(s) back failed \
                 ({}): they may be missing from the semaphore. Check `available_permits()` \
                 and `add_permits` what is missing.",
                last.map_or_else(String::new, |e| e.to_string())
            ),
        })
    }

    /// `release` (`only_if_exists` false) or `release_if_exists`: whether it applied.
    pub(super) async fn release_script(&self, permits: u32, only_if_exists: bool) -> Result<bool> {
        let operation = if only_if_exists {
            "semaphore release_if_exists"
        } else {
            "semaphore release"
        };
        let args = [
            Value::from(i64::from(permits)),
            self.publish(),
            Value::from_static_str(if only_if_exists { "1" } else { "0" }),
        ];
        Ok(self
            .change(operation, &RELEASE, &self.keys(), &args)
            .await?
            == 1)
    }

    pub(super) async fn try_set_script(&self, permits: i64, ttl_ms: i64) -> Result<bool> {
        let args = [Value::from(permits), self.publish(), Value::from(ttl_ms)];
        let set = self
            .change(
                "semaphore try_set_permits",
                &TRY_SET_PERMITS,
                &self.keys(),
                &args,
            )
            .await?;
        Ok(set == 1)
    }

    pub(super) async fn add_script(&self, permits: i64) -> Result<i64> {
        let args = [Value::from(permits), self.publish()];
        self.change("semaphore add_permits", &ADD_PERMITS, &self.keys(), &args)
            .await
    }

    pub(super) async fn drain_script(&self) -> Result<i64> {
        let keys = [Value::from(&*self.name)];
        self.change("semaphore drain_permits", &DRAIN_PERMITS, &keys, &[])
            .await
    }
}

/// A script's integer reply.
fn integer(operation: &'static str, reply: Value) -> Result<i64> {
    match reply {
        Value::Integer(n) => Ok(n),
        other => Err(Error::UnexpectedReply {
            operation,
            reply: format!("{other:?}"),
        }),
    }
}
