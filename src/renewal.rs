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
//!   the lease (see [`crate::hold_state`]). Errors (a dropped connection, a timeout) are
//!   logged and the next tick tries again, as Redisson 3.44+ does; the deadline, watched
//!   by the sentry, says when the holder can no longer count on the lock.
//! * The same batches verify holds after a fault: a watchdog hold by its renewal script
//!   (which re-arms it too), a lease hold by `lua/hold_check.lua` (read-only).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use fred::prelude::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use crate::hold_registry::{HoldRegistry, Snapshot};
use crate::scripts::{Resend, Script};

/// `lua/lock_renew.lua`: the watchdog's batched renewal of owner fields.
pub(crate) const LOCK_RENEW: &str = include_str!("../lua/lock_renew.lua");
/// `lua/rw_read_renew.lua`: the watchdog's batched renewal of read holds.
pub(crate) const RW_READ_RENEW: &str = include_str!("../lua/rw_read_renew.lua");
/// `lua/faster_multi_renew.lua`: the watchdog's batched renewal of faster multi-lock
/// values.
pub(crate) const FASTER_MULTI_RENEW: &str = include_str!("../lua/faster_multi_renew.lua");
/// `lua/hold_check.lua`: whether lease holds are still in Redis, after a fault.
pub(crate) const HOLD_CHECK: &str = include_str!("../lua/hold_check.lua");

static RENEW_FIELDS: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_RENEW));
static RENEW_READ_HOLDS: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_RENEW));
static RENEW_VALUES: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_RENEW));
static CHECK_HOLDS: LazyLock<Script> = LazyLock::new(|| Script::new(HOLD_CHECK));

/// What the renewal task needs besides the registry.
#[derive(Debug, Clone)]
pub(crate) struct RenewalSettings {
    pub(crate) period: Duration,
    pub(crate) lease_ms: u64,
    pub(crate) batch_size: usize,
    pub(crate) clustered: bool,
    pub(crate) response_timeout: Duration,
    /// The gate that keeps renewals off a primary the sentinels replaced.
    pub(crate) switch: Arc<crate::primary_switch::PrimarySwitch>,
}

/// Which script a batch goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Batch {
    Fields,
    ReadHolds,
    Values,
    Check,
}

/// How one batched send went, in holds.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) confirmed: u64,
    pub(crate) gone: u64,
    pub(crate) failed: u64,
}

/// The renewal task: runs until `shutdown` changes or its sender is dropped.
pub(crate) async fn run(
    registry: Arc<HoldRegistry>,
    redis: fred::prelude::Client,
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
        let snapshot = registry.snapshot(|renewed, _| renewed);
        if snapshot.is_empty() {
            continue;
        }
        let span = tracing::debug_span!("redisson_lock.renewal", locks = snapshot.len());
        tokio::select! {
            outcome = send(&registry, &redis, &settings, snapshot).instrument(span) => {
                tracing::debug!(renewed = outcome.confirmed, lost = outcome.gone, failed = outcome.failed, "renewal round");
                crate::telemetry::renewal_round(outcome.confirmed, outcome.gone, outcome.failed);
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// Sends `holds` in batches (per slot and script) and applies the replies to their
/// signals: renewed or still there → confirmed; field gone → lost; a failed batch
/// changes nothing (the deadline does the rest).
pub(crate) async fn send(
    registry: &HoldRegistry,
    redis: &fred::prelude::Client,
    settings: &RenewalSettings,
    holds: Vec<Snapshot>,
) -> Outcome {
    let mut groups: BTreeMap<(u16, Batch), Vec<Snapshot>> = BTreeMap::new();
    for item in holds {
        let slot = if settings.clustered { item.slot } else { 0 };
        let batch = match (
            item.renewed,
            item.key_prefix.is_some(),
            item.values.is_some(),
        ) {
            (false, _, _) => Batch::Check,
            (true, _, true) => Batch::Values,
            (true, false, false) => Batch::Fields,
            (true, true, false) => Batch::ReadHolds,
        };
        groups.entry((slot, batch)).or_default().push(item);
    }
    let lease = Value::from(settings.lease_ms as i64);
    // Never to a primary the sentinels replaced: wait for the new one (see
    // `PrimarySwitch`); a round in flight across a switch confirms nothing.
    let epoch = match settings.switch.ready(settings.response_timeout).await {
        Ok(epoch) => epoch,
        Err(error) => {
            tracing::warn!(%error, holds = groups.values().map(Vec::len).sum::<usize>(), "can't update locks expiration; will retry");
            return Outcome {
                failed: groups.values().map(|g| g.len() as u64).sum(),
                ..Outcome::default()
            };
        }
    };
    let sent_at = Instant::now();
    // Sent while the registry still counts a failover as pending (fred moved without
    // the client's move being over), they renew but confirm nothing: the sentry's check
    // on the new primary does.
    let may_recover = !registry.failover_pending();
    let batches = groups
        .iter()
        .flat_map(|(slot, group)| {
            group
                .chunks(settings.batch_size.max(1))
                .map(move |batch| (*slot, batch))
        })
        .map(|((slot, kind), batch)| {
            let lease = lease.clone();
            async move {
                let script: &Script = match kind {
                    Batch::Fields => &RENEW_FIELDS,
                    Batch::ReadHolds => &RENEW_READ_HOLDS,
                    Batch::Values => &RENEW_VALUES,
                    Batch::Check => &CHECK_HOLDS,
                };
                let reply = script
                    .run_in_slot(
                        redis,
                        slot,
                        Resend::Allowed,
                        settings.response_timeout,
                        |call| push_batch(call, kind, batch, &lease),
                    )
                    .await;
                (kind, batch, reply)
            }
        });
    let mut outcome = Outcome::default();
    let replies = futures::future::join_all(batches).await;
    let switched = settings.switch.epoch() != epoch;
    for (kind, batch, reply) in replies {
        let reply = if switched {
            Err(crate::primary_switch::replaced())
        } else {
            reply
        };
        match reply {
            Ok(Value::Array(flags)) if flags.len() == batch.len() => {
                for (hold, flag) in batch.iter().zip(flags) {
                    let confirmed = match (kind, flag.as_i64()) {
                        (Batch::Check, Some(-2))
                        | (Batch::Fields | Batch::ReadHolds | Batch::Values, Some(0)) => None,
                        (Batch::Check, Some(-1)) => Some(u64::MAX / 4),
                        (Batch::Check, Some(ttl)) => Some(ttl.max(0) as u64),
                        _ => Some(settings.lease_ms),
                    };
                    match confirmed {
                        None => {
                            outcome.gone += 1;
                            tracing::warn!(lock = %hold.hold.0, owner = %hold.hold.1, "lock lost: its owner field is gone");
                            registry.found_gone(&hold.hold, &hold.signal);
                        }
                        Some(lease_ms) => {
                            outcome.confirmed += 1;
                            let margin = registry.margin_ms(lease_ms);
                            let reset = kind == Batch::Check;
                            if let Some(t) =
                                hold.signal
                                    .confirm(sent_at, lease_ms, margin, reset, may_recover)
                            {
                                crate::telemetry::report(&hold.signal, t, Some(&hold.hold));
                            }
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
    outcome
}

/// One batch's keys and arguments.
fn push_batch(call: &mut Vec<Value>, kind: Batch, batch: &[Snapshot], lease: &Value) {
    call.reserve(2 + 3 * batch.len());
    match kind {
        Batch::ReadHolds => {
            call.push(Value::from(2 * batch.len() as i64));
            for r in batch {
                call.push(r.key.clone());
                call.push(r.key_prefix.clone().unwrap_or(Value::Null));
            }
            call.push(lease.clone());
        }
        Batch::Fields => {
            call.push(Value::from(batch.len() as i64));
            call.extend(batch.iter().map(|r| r.key.clone()));
            call.push(lease.clone());
        }
        Batch::Values => {
            // The groups, then the lease, now, and per group its owner, the number of its
            // values and the values.
            call.push(Value::from(batch.len() as i64));
            call.extend(batch.iter().map(|r| r.key.clone()));
            call.push(lease.clone());
            call.push(Value::from(epoch_ms()));
            for r in batch {
                let values = r.values.as_deref().unwrap_or_default();
                call.push(r.field.clone());
                call.push(Value::from(values.len() as i64));
                call.extend(values.iter().cloned());
            }
            return;
        }
        Batch::Check => {
            // Per hold: the field that must exist, and the owner it must name (empty: any).
            // A faster multi-lock hold is checked by its first value naming the owner.
            call.push(Value::from(batch.len() as i64));
            call.extend(batch.iter().map(|r| r.key.clone()));
            for r in batch {
                match r.values.as_deref().and_then(<[Value]>::first) {
                    Some(first) => {
                        call.push(first.clone());
                        call.push(r.field.clone());
                    }
                    None => {
                        call.push(r.field.clone());
                        call.push(Value::from_static_str(""));
                    }
                }
            }
            return;
        }
    }
    call.extend(batch.iter().map(|r| r.field.clone()));
}

/// This client's clock in epoch milliseconds (the faster multi-lock's deadlines).
fn epoch_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
