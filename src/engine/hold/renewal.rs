//! The watchdog: one timer per client that renews every watchdog hold of the
//! [`HoldRegistry`], and the batched scripts it sends, which the sentry also uses to
//! verify holds after a fault.
//!
//! Invariants:
//! * One task renews every registered watchdog hold every `watchdog_timeout / 3`, with
//!   one script per batch of at most `renewal_batch_size` holds; on a cluster a batch
//!   never mixes hash slots. The script re-arms a lock only while its owner field exists.
//! * A hold whose field is gone at a renewal is lost: it leaves the registry and its
//!   signal says `Lost`.
//! * A renewal confirmed at all moves the hold's validity deadline to its send time plus
//!   the lease (see [`crate::engine::hold::state`]). Errors (a dropped connection, a timeout) are
//!   logged and the next tick tries again, as Redisson 3.44+ does; the deadline, watched
//!   by the sentry, says when the holder can no longer count on the lock.
//! * The same batches verify holds after a fault: a watchdog hold by its renewal script
//!   (which re-arms it too), a lease hold by `lua/hold_check.lua` (read-only).
//! * A round renews only the holds that still have watchdog holds once the connection is
//!   ready, and an unlock of one of them waits until its replies are in (see
//!   [`crate::engine::hold::rounds`]): a renewal never lands after an unlock called once the
//!   round started, so it never re-arms the watchdog's lease on lease holds left.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use crate::connection::redis::Redis;
use crate::engine::hold::held::{BatchScript, Purpose};
use crate::engine::hold::registry::{HoldRegistry, Snapshot};

/// What the renewal task needs besides the registry.
#[derive(Debug, Clone)]
pub(crate) struct RenewalSettings {
    pub(crate) period: Duration,
    pub(crate) lease_ms: u64,
    pub(crate) batch_size: usize,
    pub(crate) clustered: bool,
}

/// How one batched send went, in holds.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) confirmed: u64,
    pub(crate) gone: u64,
    pub(crate) failed: u64,
    /// Still there, with a lease shorter than this client set (a verification only).
    pub(crate) shortened: u64,
    /// Not judged: a write of this client to the key ran beside the check (asked again).
    pub(crate) asked_again: u64,
}

/// The renewal task: runs until `shutdown` changes or its sender is dropped.
pub(crate) async fn run(
    registry: Arc<HoldRegistry>,
    redis: Redis,
    settings: RenewalSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        // Idle while nothing is renewed.
        tokio::select! {
            _ = registry.first_renewed_hold() => {}
            _ = shutdown.changed() => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(settings.period) => {}
            _ = shutdown.changed() => return,
        }
        let locks = registry.renewed_len();
        if locks == 0 {
            continue;
        }
        let span = tracing::debug_span!("redisson_lock.renewal", locks);
        tokio::select! {
            outcome = send(&registry, &redis, &settings, Holds::Renewed).instrument(span) => {
                tracing::debug!(renewed = outcome.confirmed, lost = outcome.gone, failed = outcome.failed, "renewal round");
                crate::engine::telemetry::renewal_round(outcome.confirmed, outcome.gone, outcome.failed);
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// What a round sends.
pub(crate) enum Holds {
    /// Every hold the watchdog renews, as it is once the connection is ready (the
    /// watchdog's timer).
    Renewed,
    /// These, taken earlier (the sentry's checks), as they are once it is ready.
    These(Vec<Snapshot>),
    /// These, checked without renewing (every hold by its read-only check, sent as
    /// `EVALSHA_RO` so that Redis tracks its keys again): somebody else may have changed
    /// them (the tracker, on an invalidation). Gone → lost; shorter than this client set
    /// → at risk (the sentry's check decides); as set → nothing changes.
    Verify(Vec<Snapshot>),
}

/// Sends `holds` in batches (per slot and script) and applies the replies to their
/// signals: renewed or still there → confirmed; field gone → lost; a failed batch
/// changes nothing (the deadline does the rest).
pub(crate) async fn send(
    registry: &HoldRegistry,
    redis: &Redis,
    settings: &RenewalSettings,
    holds: Holds,
) -> Outcome {
    let lease = Value::from(settings.lease_ms as i64);
    // Never to a primary the sentinels replaced: wait for the new one (see
    // `PrimarySwitch`); a round in flight across a switch confirms nothing.
    let epoch = match redis.ready().await {
        Ok(epoch) => epoch,
        Err(error) => {
            let holds = match &holds {
                Holds::Renewed => registry.renewed_len(),
                Holds::These(holds) | Holds::Verify(holds) => holds.len(),
            };
            tracing::warn!(%error, holds, "can't update locks expiration; will retry");
            return Outcome {
                failed: holds as u64,
                ..Outcome::default()
            };
        }
    };
    // Only what is still renewed now, and in flight until the replies are in: an unlock
    // of one of these holds waits for them (`hold::rounds`).
    let verify = matches!(holds, Holds::Verify(_));
    let read_only = verify;
    let (holds, _in_flight) = match holds {
        Holds::Renewed => registry.renewal_round(),
        Holds::These(holds) | Holds::Verify(holds) => registry.start_round(holds),
    };
    let groups = group(holds, settings.clustered, verify);
    let round = Round {
        registry,
        lease_ms: settings.lease_ms,
        verify,
        sent_at: Instant::now(),
        // Sent while the registry still counts a failover as pending (fred moved without
        // the client's move being over), they renew but confirm nothing: the sentry's
        // check on the new primary does.
        may_recover: !registry.failover_pending(),
    };
    let batches = groups
        .iter()
        .flat_map(|((slot, _, _), (script, purpose, group))| {
            group
                .chunks(settings.batch_size.max(1))
                .map(move |batch| (*slot, *script, *purpose, batch))
        })
        .map(|(slot, script, purpose, batch)| {
            let call = batch_call(script, purpose, batch, &lease);
            // A renewal writes its keys, which `NOLOOP` tracking then forgets: each
            // renewal script reads every key it renewed once more, which has Redis track
            // it again for this connection (no `EXISTS` beside it).
            async move {
                let reply = send_batch(redis, slot, script, call, read_only).await;
                (script, batch, reply)
            }
        });
    let mut outcome = Outcome::default();
    let replies = futures::future::join_all(batches).await;
    let switched = redis.switched_since(epoch);
    for (script, batch, reply) in replies {
        let reply = if switched {
            Err(crate::connection::primary_switch::replaced())
        } else {
            reply
        };
        round.apply(script, batch, reply, &mut outcome);
    }
    outcome
}

/// One batch's script call in hash slot `slot`, through [`Redis::run_batch`] (the gate
/// of every command; a renewal or a check may run twice after a reconnect).
async fn send_batch(
    redis: &Redis,
    slot: u16,
    script: &BatchScript,
    (keys, args): (Vec<Value>, Vec<Value>),
    read_only: bool,
) -> Result<Value, fred::error::Error> {
    let push_call = |call: &mut Vec<Value>| {
        call.reserve(1 + keys.len() + args.len());
        call.push(Value::from(keys.len() as i64));
        call.extend(keys.iter().cloned());
        call.extend(args.iter().cloned());
    };
    redis
        .run_batch(&script.script, slot, read_only, push_call)
        .await
}

/// What one round's replies are applied with.
struct Round<'r> {
    registry: &'r HoldRegistry,
    lease_ms: u64,
    /// A verification ([`Holds::Verify`]): replies are compared, never confirmed.
    verify: bool,
    /// When the round was sent: a confirmed lease runs from here.
    sent_at: Instant,
    /// Whether a confirmation may end a hold's risk (no failover pending).
    may_recover: bool,
}

impl Round<'_> {
    /// Applies one batch's reply to its holds, counting them in `outcome`.
    fn apply(
        &self,
        script: &BatchScript,
        batch: &[Snapshot],
        reply: Result<Value, fred::error::Error>,
        outcome: &mut Outcome,
    ) {
        match reply {
            Ok(Value::Array(flags)) if flags.len() == batch.len() => {
                for (hold, flag) in batch.iter().zip(flags) {
                    let confirmed = match flag.as_i64() {
                        Some(flag) => (script.confirms)(flag, self.lease_ms),
                        None => Some(self.lease_ms),
                    };
                    if (self.verify || confirmed.is_none()) && self.superseded(hold) {
                        outcome.asked_again += 1;
                        continue;
                    }
                    match confirmed {
                        None => {
                            outcome.gone += 1;
                            self.lost(hold);
                        }
                        Some(lease_ms) if self.verify => {
                            if self.shortened(hold, lease_ms) {
                                outcome.shortened += 1;
                            } else {
                                outcome.confirmed += 1;
                            }
                        }
                        Some(lease_ms) => {
                            outcome.confirmed += 1;
                            self.confirm(hold, lease_ms);
                        }
                    }
                }
            }
            Ok(other) => {
                outcome.failed += batch.len() as u64;
                tracing::warn!(reply = ?other, "unexpected renewal reply");
            }
            Err(error) => {
                outcome.failed += batch.len() as u64;
                let names: Vec<&str> = batch.iter().map(|r| &*r.hold.0).collect();
                tracing::warn!(%error, locks = ?names, "can't update locks expiration; will retry");
            }
        }
    }

    /// Whether a write of this client to the hold's key was in flight when the hold was
    /// taken into this round, or ran (or was confirmed) since: the reply may have been
    /// read before or after it, and says nothing sure about the hold now. A re-entry or a
    /// partial unlock re-arms the key to its own lease, shorter than an earlier lease
    /// hold's (a "shortened" that is this client's own); an acquisition that joins the
    /// entry right after a release makes a "gone" stale. With tracking on the hold is
    /// checked again; else the next renewal is its check.
    fn superseded(&self, hold: &Snapshot) -> bool {
        if !hold.signal.wrote_since(hold.writes) {
            return false;
        }
        tracing::debug!(lock = %hold.hold.0, owner = %hold.hold.1, "a check ran beside a write of this client: asked again");
        let tracking = &self.registry.tracking;
        if tracking.is_on() {
            let key = hold.held.tracked_key(&hold.hold.0);
            tracking.invalidated(Some(vec![fred::bytes::Bytes::copy_from_slice(key)]));
        }
        true
    }

    /// The hold's field is gone: it leaves the registry, its signal says `Lost`.
    fn lost(&self, hold: &Snapshot) {
        tracing::warn!(lock = %hold.hold.0, owner = %hold.hold.1, "lock lost: its owner field is gone");
        self.registry.found_gone(&hold.hold, &hold.signal);
    }

    /// A verification found the hold there for `lease_ms` more: counted from now (after
    /// the reply, so a late bound of its real end), if that ends before the expiry this
    /// client had set when the check was taken (an early bound; not a later write's,
    /// which the check may have run before), somebody shortened it, and the hold is at
    /// risk until the sentry's check.
    fn shortened(&self, hold: &Snapshot, lease_ms: u64) -> bool {
        let ends_ms = crate::engine::hold::state::millis(Instant::now()).saturating_add(lease_ms);
        if ends_ms.saturating_add(SHORTENED_SLACK_MS) >= hold.expires_ms {
            return false;
        }
        tracing::warn!(lock = %hold.hold.0, owner = %hold.hold.1, write = hold.hold.2, left_ms = lease_ms, expected_left_ms = hold.expires_ms.saturating_sub(ends_ms.saturating_sub(lease_ms)), "lock at risk: somebody else shortened its lease");
        if let Some(t) = hold.signal.suspend(
            crate::engine::hold::state::Cause::ForeignChange,
            self.sent_at,
        ) {
            crate::engine::hold::state::report(&hold.signal, t, Some(&hold.hold));
        }
        self.registry.wake_sentry();
        true
    }

    /// The hold is still there for `lease_ms` from the round's send time.
    fn confirm(&self, hold: &Snapshot, lease_ms: u64) {
        let margin = self.registry.margin_ms(lease_ms);
        let reset = !hold.renewed;
        if let Some(t) =
            hold.signal
                .confirm(self.sent_at, lease_ms, margin, reset, self.may_recover)
        {
            crate::engine::hold::state::report(&hold.signal, t, Some(&hold.hold));
        }
    }
}

/// How much shorter than expected a verified lease may be before it counts as shortened:
/// a PTTL is rounded down to the millisecond, the expiry this client keeps is a lower
/// bound taken at the send of the command that set it, and a read hold's hash is re-armed
/// from its hold keys' PTTLs (each rounded down again). 2 ms was seen exceeded by 1 ms in
/// a run; 25 ms is far below any shortening that matters (a `PEXPIRE` to 100 ms).
const SHORTENED_SLACK_MS: u64 = 25;

/// One group of holds: sent with one script for one purpose, in batches.
type Group = (&'static BatchScript, Purpose, Vec<Snapshot>);

/// `holds` grouped per slot (on a cluster), script and purpose: a watchdog hold goes to
/// its renewal, a lease hold (and any hold, when `verify`) to its check.
fn group(
    holds: Vec<Snapshot>,
    clustered: bool,
    verify: bool,
) -> BTreeMap<(u16, &'static str, bool), Group> {
    let mut groups: BTreeMap<(u16, &'static str, bool), Group> = BTreeMap::new();
    for item in holds {
        let slot = if clustered { item.slot } else { 0 };
        let (script, purpose) = if item.renewed && !verify {
            (item.held.renewal(), Purpose::Renew)
        } else {
            (item.held.check(), Purpose::Check)
        };
        groups
            .entry((slot, script.name, item.renewed && !verify))
            .or_insert_with(|| (script, purpose, Vec::new()))
            .2
            .push(item);
    }
    groups
}

/// One batch's keys and arguments: every hold's keys, then the script's prelude and
/// every hold's arguments (see [`BatchScript`]).
fn batch_call(
    script: &BatchScript,
    purpose: Purpose,
    batch: &[Snapshot],
    lease: &Value,
) -> (Vec<Value>, Vec<Value>) {
    let mut keys = Vec::with_capacity(2 * batch.len());
    let mut args = Vec::with_capacity(2 + 2 * batch.len());
    (script.prelude)(lease, &mut args);
    for hold in batch {
        hold.held.push(purpose, &hold.key, &mut keys, &mut args);
    }
    (keys, args)
}

#[cfg(test)]
mod tests {
    use std::any::Any;
    use std::sync::LazyLock;

    use fred::bytes_utils::Str;

    use super::*;
    use crate::connection::scripts::Script;
    use crate::engine::hold::held::Held;
    use crate::lock::holds::OwnerField;
    use crate::names::owner::LockOwner;

    /// A hold that is not a lock's: a permit, a member of a sorted set whose score is the
    /// end of its lease (what Redisson's permit-expirable semaphore keeps). Private to
    /// this test; it shows what a second kind of hold implements.
    #[derive(Debug)]
    struct Permit {
        id: &'static str,
    }

    /// Never sent here: the test builds the calls only.
    static RENEW_PERMITS: BatchScript = BatchScript {
        name: "test permits",
        script: LazyLock::new(|| Script::new("return {}")),
        prelude: |lease, args| {
            args.push(lease.clone());
            args.push(Value::from(1_000));
        },
        confirms: |flag, lease_ms| (flag == 1).then_some(lease_ms),
    };

    static CHECK_PERMITS: BatchScript = BatchScript {
        name: "test permit check",
        script: LazyLock::new(|| Script::new("return {}")),
        prelude: |_, _| {},
        confirms: |flag, _| u64::try_from(flag).ok(),
    };

    impl Held for Permit {
        fn renewal(&self) -> &'static BatchScript {
            &RENEW_PERMITS
        }

        fn check(&self) -> &'static BatchScript {
            &CHECK_PERMITS
        }

        fn push(&self, _: Purpose, key: &Value, keys: &mut Vec<Value>, args: &mut Vec<Value>) {
            let name = key.as_str().unwrap_or_default();
            keys.push(Value::from(format!("redisson__timeout__set:{{{name}}}")));
            args.push(Value::from(self.id));
        }

        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    fn hold(name: &str, owner: u64) -> crate::engine::hold::registry::HoldKey {
        (Arc::from(name), LockOwner::from_raw(owner), false)
    }

    #[tokio::test]
    async fn another_kind_of_hold_gets_its_own_batches_and_force_releases() {
        let registry = HoldRegistry::new(30_000, None);
        let now = Instant::now();
        registry.add_hold(hold("sem", 1), None, now, || Arc::new(Permit { id: "p1" }));
        registry.add_hold(hold("sem", 2), Some(5_000), now, || {
            Arc::new(Permit { id: "p2" })
        });
        registry.add_hold(hold("orders", 1), None, now, || {
            Arc::new(OwnerField(Str::from("c:1")))
        });
        assert_eq!(
            registry.renewed_len(),
            2,
            "the watchdog permit and the lock"
        );

        let lease = Value::from(30_000);
        let groups = group(registry.snapshot(|_, _| true), false, false);
        let call = |key: (u16, &'static str, bool)| {
            let (script, purpose, holds) = &groups[&key];
            batch_call(script, *purpose, holds, &lease)
        };
        assert_eq!(groups.len(), 3, "{:?}", groups.keys());
        assert_eq!(
            call((0, "test permits", true)),
            (
                vec![Value::from("redisson__timeout__set:{sem}")],
                vec![lease.clone(), Value::from(1_000), Value::from("p1")]
            )
        );
        assert_eq!(
            call((0, "test permit check", false)),
            (
                vec![Value::from("redisson__timeout__set:{sem}")],
                vec![Value::from("p2")]
            )
        );
        // The lock's batch is what it was: KEYS the hash, ARGV the lease and the field.
        assert_eq!(
            call((0, "fields", true)),
            (
                vec![Value::from("orders")],
                vec![lease.clone(), Value::from("c:1")]
            )
        );
        // The permit script's flags: 1 renewed, 0 gone.
        assert_eq!((RENEW_PERMITS.confirms)(1, 30_000), Some(30_000));
        assert_eq!((RENEW_PERMITS.confirms)(0, 30_000), None);

        // A lock's force release of the same name leaves the permits alone; one of the
        // permits' own kind ends them.
        registry.remove_lock("sem", &OwnerField(Str::from("c:9")));
        assert_eq!(registry.renewed_len(), 2);
        registry.remove_lock("sem", &Permit { id: "p9" });
        assert_eq!(registry.renewed_len(), 1);
        assert_eq!(registry.snapshot(|_, _| true).len(), 1);

        // Shutdown sends nothing and tells every holder.
        let signal = registry.add_hold(hold("sem", 3), None, now, || Arc::new(Permit { id: "p3" }));
        registry.clear();
        assert!(signal.is_lost());
        assert_eq!(registry.renewed_len(), 0);
    }
}
