//! The scripts of a permit-expirable semaphore (`lua/pes_*.lua`, each written from
//! docs/protocol.md §20) and how one call of each is sent and its reply read.
//!
//! Invariants: every operation is one script round trip (plus the `WAIT` for the
//! replicas in the same pipeline, for the writes Redisson syncs); an acquire is written
//! at most once ([`Resend::Never`]): its permit ids were chosen before it was sent, so a
//! lost reply is settled by looking for them ([`Shared::find`]), never by sending it
//! again with its old expiry. Nothing publishes a count of 0 or less.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use fred::prelude::Value;
use fred::types::{ClusterHash, CustomCommand};
use tokio::time::Instant;

use super::id::PermitId;
use crate::connection::replicas::Synced;
use crate::connection::retry;
use crate::connection::scripts::now_ms;
use crate::connection::scripts::{Resend, Script, outcome_unknown, redis_error};
use crate::engine::Engine;
use crate::error::{Error, Result};

/// `lua/pes_acquire.lua`.
pub(crate) const PES_ACQUIRE: &str = include_str!("../../../lua/pes_acquire.lua");
/// `lua/pes_release.lua`.
pub(crate) const PES_RELEASE: &str = include_str!("../../../lua/pes_release.lua");
/// `lua/pes_release_many.lua`.
pub(crate) const PES_RELEASE_MANY: &str = include_str!("../../../lua/pes_release_many.lua");
/// `lua/pes_permits.lua`.
pub(crate) const PES_PERMITS: &str = include_str!("../../../lua/pes_permits.lua");
/// `lua/pes_try_set_permits.lua`.
pub(crate) const PES_TRY_SET_PERMITS: &str = include_str!("../../../lua/pes_try_set_permits.lua");
/// `lua/pes_set_permits.lua`.
pub(crate) const PES_SET_PERMITS: &str = include_str!("../../../lua/pes_set_permits.lua");
/// `lua/pes_add_permits.lua`.
pub(crate) const PES_ADD_PERMITS: &str = include_str!("../../../lua/pes_add_permits.lua");
/// `lua/pes_update_lease.lua`.
pub(crate) const PES_UPDATE_LEASE: &str = include_str!("../../../lua/pes_update_lease.lua");
/// `lua/pes_lease_time.lua`.
pub(crate) const PES_LEASE_TIME: &str = include_str!("../../../lua/pes_lease_time.lua");

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(PES_ACQUIRE));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(PES_RELEASE));
static RELEASE_MANY: LazyLock<Script> = LazyLock::new(|| Script::new(PES_RELEASE_MANY));
static PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(PES_PERMITS));
static TRY_SET_PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(PES_TRY_SET_PERMITS));
static SET_PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(PES_SET_PERMITS));
static ADD_PERMITS: LazyLock<Script> = LazyLock::new(|| Script::new(PES_ADD_PERMITS));
static UPDATE_LEASE: LazyLock<Script> = LazyLock::new(|| Script::new(PES_UPDATE_LEASE));
static LEASE_TIME: LazyLock<Script> = LazyLock::new(|| Script::new(PES_LEASE_TIME));

/// Redisson's score of a permit without a lease (`Long.MAX_VALUE / 10000`,
/// docs/protocol.md §20.1).
pub(crate) const NO_LEASE: i64 = 922_337_203_685_477;

/// What one handle shares with its clones, its guards and its background releases.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) context: Arc<Engine>,
    /// The name as given (before the name mapper).
    pub(crate) given: String,
    /// `N`, the name in Redis.
    pub(crate) name: Arc<str>,
    pub(crate) name_value: Value,
    /// `{N}:timeout`.
    pub(crate) timeouts: Value,
    /// `redisson_sc:{N}`.
    pub(crate) channel: String,
    pub(crate) channel_value: Value,
}

/// What one acquire attempt's script said.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The permits were taken.
    Taken,
    /// Not now; the earliest lease ends at this client-clock epoch ms.
    Hint(i64),
    /// Not now, and no held permit has a lease.
    NoHint,
}

/// The counts `lua/pes_permits.lua` answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) available: i64,
    pub(crate) held: i64,
    pub(crate) exists: bool,
}

impl Shared {
    pub(crate) fn new(context: Arc<Engine>, given: String) -> Shared {
        let name =
            crate::names::mapper::MappedName::new(context.config.name_mapper(), given.clone()).raw;
        let channel = crate::names::formats::semaphore_channel(&name);
        Shared {
            name_value: Value::from(&*name),
            timeouts: Value::from(crate::names::formats::permit_timeouts(&name)),
            channel_value: Value::from(channel.as_str()),
            channel,
            name,
            given,
            context,
        }
    }

    fn publish(&self) -> Value {
        Value::from_static_str(self.context.publish_command)
    }

    /// Rejects calls on an empty name or a client shut down.
    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.context.is_closed() {
            return Err(Error::Shutdown);
        }
        if self.name.is_empty() {
            return Err(Error::InvalidArgument(
                "a semaphore name must not be empty".to_owned(),
            ));
        }
        Ok(())
    }

    /// A fresh permit id: unique to this client's life and across clients.
    pub(crate) fn fresh_id(&self) -> PermitId {
        PermitId::from_bytes(self.context.next_request_id().to_bytes())
    }

    /// A Redis error as the caller sees it.
    pub(crate) fn error(&self, error: fred::error::Error) -> Error {
        redis_error(&self.name, self.context.is_closed(), error)
    }

    /// Runs `script` (no `WAIT`).
    async fn run(
        &self,
        script: &Script,
        keys: &[Value],
        args: &[Value],
        resend: Resend,
    ) -> std::result::Result<Value, fred::error::Error> {
        self.context.redis.eval(script, keys, args, resend).await
    }

    /// Runs `script` with the `WAIT` for the replicas behind it.
    async fn run_synced(
        &self,
        script: &Script,
        keys: &[Value],
        args: &[Value],
        resend: Resend,
    ) -> std::result::Result<(Value, Synced), fred::error::Error> {
        self.context
            .redis
            .eval_synced(script, keys, args, resend)
            .await
    }

    /// Logs a write no replica acknowledged: it did happen on the primary, and failing
    /// it would tell the caller something it did not (Redisson throws after applying it,
    /// docs/protocol.md §24.4).
    fn log_unsynced(&self, operation: &str, synced: &Synced) {
        synced.log_unsynced("permit_expirable_semaphore", &self.name, operation);
    }

    /// One acquire attempt for `ids` with expiry `score`, at client time `now`. Written at
    /// most once.
    pub(crate) async fn acquire_script(
        &self,
        ids: &[PermitId],
        score: i64,
        now: i64,
    ) -> std::result::Result<(Reply, Synced), fred::error::Error> {
        let keys = [
            self.name_value.clone(),
            self.timeouts.clone(),
            self.channel_value.clone(),
        ];
        let mut args = Vec::with_capacity(5 + ids.len());
        args.push(Value::from(ids.len() as i64));
        args.push(Value::from(score));
        args.push(Value::from(now));
        args.push(Value::from(NO_LEASE));
        args.push(self.publish());
        args.extend(ids.iter().map(PermitId::value));
        let (reply, synced) = self
            .run_synced(&ACQUIRE, &keys, &args, Resend::Never)
            .await?;
        let reply = match &reply {
            Value::Null => Reply::NoHint,
            other => match other.as_str().as_deref() {
                Some("OK") => Reply::Taken,
                Some(text) => match text.strip_prefix(':').and_then(|ms| ms.parse().ok()) {
                    Some(ms) => Reply::Hint(ms),
                    None => return Err(unexpected_reply(other)),
                },
                None => return Err(unexpected_reply(other)),
            },
        };
        Ok((reply, synced))
    }

    /// The score of permit `id`, or `None` when it is not held: how a lost acquire reply
    /// (or a lost release reply) is settled.
    pub(crate) async fn find(
        &self,
        id: &PermitId,
    ) -> std::result::Result<Option<i64>, fred::error::Error> {
        use fred::prelude::ClientLike;
        let command = CustomCommand::new_static("ZSCORE", ClusterHash::FirstKey, false);
        let reply: Value = self
            .context
            .redis
            .query(|r| {
                r.custom::<Value, Value>(command.clone(), vec![self.timeouts.clone(), id.value()])
            })
            .await?;
        Ok(match reply {
            Value::Null => None,
            other => other.as_f64().map(|score| score as i64),
        })
    }

    /// Gives back permit `id`: `Ok(true)` when it was held with its lease running,
    /// `Ok(false)` when it was not held (or its lease had ended: given back anyway, as
    /// Redisson does). A lost reply is settled by looking for the id, never by
    /// reporting "not held" for a release that ran.
    pub(crate) async fn release_one(&self, id: &PermitId) -> Result<bool> {
        self.release_one_with(id, true).await
    }

    /// [`Shared::release_one`]; `synced`: with the `WAIT` for the replicas behind it (not
    /// for the give-back of permits nobody was told about, which must not double a wait
    /// the replicas just failed).
    async fn release_one_with(&self, id: &PermitId, synced: bool) -> Result<bool> {
        let keys = [
            self.name_value.clone(),
            self.channel_value.clone(),
            self.timeouts.clone(),
        ];
        let mut sends = 0;
        loop {
            sends += 1;
            let args = [
                id.value(),
                Value::from(1),
                Value::from(now_ms()),
                self.publish(),
            ];
            let sent = if synced {
                self.run_synced(&RELEASE, &keys, &args, Resend::Never).await
            } else {
                self.run(&RELEASE, &keys, &args, Resend::Never)
                    .await
                    .map(|reply| (reply, Synced::Unchecked))
            };
            match sent {
                Ok((reply, synced)) => {
                    self.log_unsynced("release", &synced);
                    return match reply.as_i64() {
                        Some(flag) => Ok(flag == 1),
                        None => Err(unexpected("release", reply)),
                    };
                }
                Err(error) if outcome_unknown(&error) && !self.context.is_closed() => {
                    tracing::warn!(semaphore = %self.name, permit = %id, %error, "release outcome unknown; looking for the permit");
                    match self.find(id).await {
                        Ok(None) => return Ok(true),
                        Ok(Some(_)) if sends < 3 => continue,
                        Ok(Some(_)) => return Err(self.error(error)),
                        Err(lookup) => {
                            return Err(Error::OutcomeUnknown {
                                operation: "release",
                                name: self.given.clone(),
                                reason: format!(
                                    "its reply was lost ({error}) and the permit could not be \
                                     looked up ({lookup}); it is given back by its lease at \
                                     the latest. Call `try_release` again to be sure."
                                ),
                            });
                        }
                    }
                }
                Err(error) => return Err(self.error(error)),
            }
        }
    }

    /// Gives back `ids` all or none; returns how many were given back (0: none, some id
    /// was not held or its lease had ended).
    pub(crate) async fn release_many(&self, ids: &[PermitId]) -> Result<u32> {
        let keys = [
            self.name_value.clone(),
            self.channel_value.clone(),
            self.timeouts.clone(),
        ];
        let mut args = Vec::with_capacity(3 + ids.len());
        args.push(Value::from(ids.len() as i64));
        args.push(Value::from(now_ms()));
        args.push(self.publish());
        args.extend(ids.iter().map(PermitId::value));
        match self
            .run_synced(&RELEASE_MANY, &keys, &args, Resend::Never)
            .await
        {
            Ok((reply, synced)) => {
                self.log_unsynced("release", &synced);
                reply
                    .as_i64()
                    .map(|n| n.max(0) as u32)
                    .ok_or_else(|| unexpected("release", reply))
            }
            Err(error) if outcome_unknown(&error) && !self.context.is_closed() => {
                // All or none: the first id says which.
                match ids.first() {
                    Some(first) => match self.find(first).await {
                        Ok(None) => Ok(ids.len() as u32),
                        Ok(Some(_)) => Err(self.error(error)),
                        Err(_) => Err(self.error(error)),
                    },
                    None => Ok(0),
                }
            }
            Err(error) => Err(self.error(error)),
        }
    }

    /// Gives back `ids` whatever their state, retrying while Redis cannot be reached,
    /// for at most `patience`: what a dropped acquire, a settled lost reply or an undone
    /// unsynced acquisition leaves. Nobody else knows these ids, so giving them back
    /// again is harmless.
    pub(crate) async fn release_quietly(&self, ids: Vec<PermitId>, patience: Duration) {
        let until = Instant::now() + patience;
        for id in ids {
            let mut pauses = retry::PERMITS_GIVEN_BACK.pauses();
            loop {
                match self.release_one_with(&id, false).await {
                    Ok(_) => break,
                    Err(Error::Shutdown) => return,
                    Err(error) if Instant::now() + pauses.peek() < until => {
                        tracing::debug!(semaphore = %self.name, permit = %id, %error, "could not give a permit back yet; retrying");
                        tokio::time::sleep(pauses.next()).await;
                    }
                    Err(error) => {
                        tracing::warn!(semaphore = %self.name, permit = %id, %error, "could not give a permit back; its lease ends it");
                        break;
                    }
                }
            }
        }
    }

    /// Reclaims expired permits and reads the counts.
    pub(crate) async fn counts(&self) -> Result<Counts> {
        let keys = [
            self.name_value.clone(),
            self.timeouts.clone(),
            self.channel_value.clone(),
        ];
        let args = [Value::from(now_ms()), self.publish()];
        let reply = self
            .run(&PERMITS, &keys, &args, Resend::Allowed)
            .await
            .map_err(|e| self.error(e))?;
        let numbers = match &reply {
            Value::Array(items) if items.len() == 3 => {
                items.iter().map(Value::as_i64).collect::<Option<Vec<_>>>()
            }
            _ => None,
        };
        match numbers.as_deref() {
            Some(&[available, held, exists]) => Ok(Counts {
                available,
                held,
                exists: exists == 1,
            }),
            _ => Err(unexpected("permits", reply)),
        }
    }

    /// Runs a write that may be sent again (it sets, it does not add): its reply; a
    /// write the replicas did not acknowledge is logged, not failed (it was applied).
    async fn write_resendable(
        &self,
        script: &'static Script,
        keys: &[Value],
        args: &[Value],
        operation: &'static str,
    ) -> Result<Value> {
        let (reply, synced) = self
            .run_synced(script, keys, args, Resend::Allowed)
            .await
            .map_err(|e| self.error(e))?;
        self.log_unsynced(operation, &synced);
        Ok(reply)
    }

    /// `SET N n` unless `N` exists; whether it was set.
    pub(crate) async fn try_set_permits(&self, permits: i64) -> Result<bool> {
        let keys = [self.name_value.clone(), self.channel_value.clone()];
        let args = [Value::from(permits), self.publish()];
        let reply = self
            .write_resendable(&TRY_SET_PERMITS, &keys, &args, "try_set_permits")
            .await?;
        reply
            .as_i64()
            .map(|flag| flag == 1)
            .ok_or_else(|| unexpected("try_set_permits", reply))
    }

    /// Makes the total `permits`; returns the available count after it.
    pub(crate) async fn set_permits(&self, permits: i64) -> Result<i64> {
        let keys = [
            self.name_value.clone(),
            self.channel_value.clone(),
            self.timeouts.clone(),
        ];
        let args = [Value::from(permits), self.publish()];
        let reply = self
            .write_resendable(&SET_PERMITS, &keys, &args, "set_permits")
            .await?;
        reply
            .as_i64()
            .ok_or_else(|| unexpected("set_permits", reply))
    }

    /// Adds `delta` permits (written at most once: it is not idempotent).
    pub(crate) async fn add_permits(&self, delta: i64) -> Result<i64> {
        let keys = [self.name_value.clone(), self.channel_value.clone()];
        let args = [Value::from(delta), self.publish()];
        match self
            .run_synced(&ADD_PERMITS, &keys, &args, Resend::Never)
            .await
        {
            Ok((reply, synced)) => {
                self.log_unsynced("add_permits", &synced);
                reply
                    .as_i64()
                    .ok_or_else(|| unexpected("add_permits", reply))
            }
            Err(error) if outcome_unknown(&error) && !self.context.is_closed() => {
                Err(Error::OutcomeUnknown {
                    operation: "add_permits",
                    name: self.given.clone(),
                    reason: format!(
                        "its reply was lost ({error}); it was not sent again (adding twice \
                         is not adding once). Read `get_permits()` and correct as needed."
                    ),
                })
            }
            Err(error) => Err(self.error(error)),
        }
    }

    /// Moves permit `id`'s expiry to `score`; whether it was held.
    pub(crate) async fn update_lease(&self, id: &PermitId, score: i64, now: i64) -> Result<bool> {
        let keys = [
            self.name_value.clone(),
            self.timeouts.clone(),
            self.channel_value.clone(),
        ];
        let args = [
            id.value(),
            Value::from(score),
            Value::from(now),
            self.publish(),
        ];
        let reply = self
            .write_resendable(&UPDATE_LEASE, &keys, &args, "update_lease_time")
            .await?;
        reply
            .as_i64()
            .map(|flag| flag == 1)
            .ok_or_else(|| unexpected("update_lease_time", reply))
    }

    /// The ms left on permit `id`'s lease: -1 for none, 0 when not held.
    pub(crate) async fn lease_time(&self, id: &PermitId) -> Result<i64> {
        let keys = [
            self.name_value.clone(),
            self.timeouts.clone(),
            self.channel_value.clone(),
        ];
        let args = [
            id.value(),
            Value::from(NO_LEASE),
            Value::from(now_ms()),
            self.publish(),
        ];
        let reply = self
            .run(&LEASE_TIME, &keys, &args, Resend::Allowed)
            .await
            .map_err(|e| self.error(e))?;
        reply
            .as_i64()
            .ok_or_else(|| unexpected("get_lease_time", reply))
    }

    /// `DEL N {N}:timeout`; whether anything was deleted.
    pub(crate) async fn delete(&self) -> Result<bool> {
        use fred::prelude::KeysInterface;
        let keys = vec![self.name.to_string(), value_text(&self.timeouts)];
        let deleted: i64 = self
            .context
            .redis
            .query(|r| r.del(keys.clone()))
            .await
            .map_err(|e| self.error(e))?;
        Ok(deleted > 0)
    }
}

fn value_text(value: &Value) -> String {
    value.as_str().map(|s| s.to_string()).unwrap_or_default()
}

fn unexpected(operation: &'static str, reply: Value) -> Error {
    Error::UnexpectedReply {
        operation,
        reply: format!("{reply:?}"),
    }
}

fn unexpected_reply(reply: &Value) -> fred::error::Error {
    fred::error::Error::new(
        fred::error::ErrorKind::Parse,
        format!("unexpected permit-expirable acquire reply {reply:?}"),
    )
}

impl Shared {
    /// The name as a metrics label, when the configuration opts in.
    pub(crate) fn metric_name(&self) -> Option<&str> {
        self.context
            .config
            .settings
            .metrics_lock_names
            .then_some(&*self.name)
    }
}
