//! Sending a kind's script calls and naming their errors, for every other file of the
//! engine: `check` refuses an empty name or a closed client before any I/O; `run` sends
//! one call; `run_synced` adds `WAIT` for the replicas in the same pipeline;
//! `redis_error_as` turns a Redis error into the crate's (the kind's own script errors
//! first).
//!
//! Invariant: nothing here retries or waits; whether a call may be sent again is its
//! caller's [`Resend`].

use fred::prelude::Value;

use super::handle::Lock;
use super::kind::LockKind;
use super::kind::{ScriptCall, Target};
use crate::connection::replicas::Synced;
use crate::connection::scripts::{Resend, redis_error};
use crate::error::{Error, Result};
use crate::names::owner::LockOwner;

impl<K: LockKind> Lock<K> {
    pub(super) fn check(&self) -> Result<()> {
        if self.name.is_empty() || self.name().is_empty() {
            return Err(Error::invalid("lock name must not be empty"));
        }
        if self.context.is_closed() {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    pub(super) fn target(&self, owner: LockOwner) -> Target<'_> {
        Target {
            context: &self.context,
            name: &self.name,
            name_arc: &self.name,
            given: self.name(),
            owner,
            keys: &self.shared.keys,
        }
    }

    pub(super) fn redis_error(&self, error: fred::error::Error) -> Error {
        self.redis_error_as(self.owner(), error)
    }

    pub(super) fn redis_error_as(&self, owner: LockOwner, error: fred::error::Error) -> Error {
        if let Some(typed) = self.kind.script_error(&self.target(owner), &error) {
            typed
        } else {
            redis_error(&self.name, self.context.is_closed(), error)
        }
    }

    /// Sends one script call (see [`Redis::run`](crate::connection::redis::Redis::run)).
    pub(super) async fn run(
        &self,
        call: &ScriptCall,
        resend: Resend,
    ) -> Result<Value, fred::error::Error> {
        self.context.redis.run(call, resend).await
    }

    /// Sends one script call that changes the lock, followed by `WAIT` for the replicas
    /// in the same pipeline when the configuration asks for it (see
    /// [`Redis::run_synced`](crate::connection::redis::Redis::run_synced)).
    pub(super) async fn run_synced(
        &self,
        call: &ScriptCall,
        resend: Resend,
    ) -> Result<(Value, Synced), fred::error::Error> {
        self.context.redis.run_synced(call, resend).await
    }

    /// An unlock or force unlock that no replica acknowledged is logged, not failed: it
    /// did happen on the primary, and failing it would tell the caller it still holds a
    /// lock it gave back. (Redisson fails it with `NoSyncedSlavesException` after its
    /// retries; see `docs/reliability.md`.)
    pub(super) fn log_unsynced(&self, operation: &str, synced: &Synced) {
        synced.log_unsynced("lock", &self.name, operation);
    }

    /// The lock name as a metrics label, when the configuration opts in.
    pub(super) fn metric_name(&self) -> Option<&str> {
        self.context
            .config
            .settings
            .metrics_lock_names
            .then_some(&*self.name)
    }
}

pub(super) fn unexpected(operation: &'static str, reply: Value) -> Error {
    Error::UnexpectedReply {
        operation,
        reply: format!("{reply:?}"),
    }
}
