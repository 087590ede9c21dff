//! The watchdog: one renewal registry and one timer per client.
//!
//! Invariants:
//! * Every lock this client holds in watchdog mode (taken without a lease) is registered
//!   here with its hold count; each watchdog acquisition adds a hold, each unlock removes
//!   one, and the lock leaves the registry with its last hold, with `force_unlock`, or
//!   when it is found lost. Nothing is renewed after that.
//! * One task renews every registered lock every `watchdog_timeout / 3`, with one script
//!   per batch of at most `renewal_batch_size` locks; on a cluster a batch never mixes
//!   hash slots. The script re-arms a lock only while its owner field still exists.
//! * A lock whose field is gone at a renewal is lost: it leaves the registry and its
//!   [`LostSignal`] fires, which is how a [`LockGuard`](crate::LockGuard) learns it.
//! * Errors (a dropped connection, a timeout) are logged and the next tick tries again,
//!   as Redisson 3.44+ does. The lock stays registered, but once renewals have failed for
//!   a whole lease since the last confirmed one (the server is down or out of reach, so
//!   the key may have expired there) its [`LostSignal`] fires: the holder can no longer
//!   count on it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use fred::prelude::Value;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tracing::Instrument;

use crate::owner::LockOwner;
use crate::scripts::{Resend, Script};

/// `lua/lock_renew.lua`: the watchdog's batched renewal of owner fields.
pub(crate) const LOCK_RENEW: &str = include_str!("../lua/lock_renew.lua");
/// `lua/rw_read_renew.lua`: the watchdog's batched renewal of read holds.
pub(crate) const RW_READ_RENEW: &str = include_str!("../lua/rw_read_renew.lua");
/// `lua/faster_multi_renew.lua`: the watchdog's batched renewal of faster multi-lock
/// values.
pub(crate) const FASTER_MULTI_RENEW: &str = include_str!("../lua/faster_multi_renew.lua");

static RENEW_FIELDS: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_RENEW));
static RENEW_READ_HOLDS: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_RENEW));
static RENEW_VALUES: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_RENEW));

/// What the watchdog renews for one (lock, owner).
#[derive(Debug, Clone)]
pub(crate) enum Renewable {
    /// The lock's hash while `field` is in it (RLock, fair, fenced, spin, write locks).
    Field { field: String },
    /// A read lock's holds of `field`: each hold's timeout key under `key_prefix`, and
    /// the hash unless its TTL is longer already (Redisson 4.4+'s read renewal, which
    /// renews only its own holds).
    ReadHolds { field: String, key_prefix: String },
    /// A faster multi-lock's values (field ids) held by owner `field` in the group hash:
    /// every hold of one (group, owner) adds its values, and a round renews them all
    /// (`lua/faster_multi_renew.lua`).
    Values {
        field: String,
        values: Arc<[String]>,
    },
}

/// Tells the holders of one lock that it was lost. Fires once, for good.
///
/// Also remembers when the lock's lease was last known to be set (acquired or renewed), so
/// that renewals failing for as long as the lease lasts count as a loss: by then the key
/// has expired on a server that is alive but out of reach, and another client may hold it.
#[derive(Debug, Default)]
pub(crate) struct LostSignal {
    lost: AtomicBool,
    notify: Notify,
    /// Milliseconds since [`EPOCH`] when the lease was last known to be set.
    confirmed_ms: AtomicU64,
}

/// The origin of [`LostSignal`]'s timestamps.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn millis_since_epoch(at: Instant) -> u64 {
    at.saturating_duration_since(*EPOCH).as_millis() as u64
}

impl LostSignal {
    /// Records that the lease was set (or renewed) by a command sent at `at`.
    pub(crate) fn confirm(&self, at: Instant) {
        self.confirmed_ms
            .fetch_max(millis_since_epoch(at), Ordering::AcqRel);
    }

    /// Fires (returning true the first time) if the lease set at the last confirmation
    /// has ended by `now`. A failed renewal may still have run (a timeout), so only a
    /// lease that surely ran out without a confirmed renewal counts.
    fn fire_if_expired(&self, now: Instant, lease_ms: u64) -> bool {
        if self.is_fired() {
            return false;
        }
        let confirmed = self.confirmed_ms.load(Ordering::Acquire);
        if millis_since_epoch(now) >= confirmed.saturating_add(lease_ms) {
            self.fire();
            return true;
        }
        false
    }

    pub(crate) fn fire(&self) {
        if !self.lost.swap(true, Ordering::AcqRel) {
            self.notify.notify_waiters();
        }
    }

    pub(crate) fn is_fired(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Completes when the signal fires (at once if it already has). Cancel safe.
    pub(crate) async fn fired(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_fired() {
                return;
            }
            notified.await;
        }
    }
}

#[derive(Debug)]
struct Held {
    /// The owner field (and a read lock's key prefix), as compact as they come: an entry
    /// lives as long as its hold, and a client may hold many locks, so the script
    /// arguments are built per renewal round (every `watchdog_timeout / 3`) instead.
    field: Box<str>,
    key_prefix: Option<Box<str>>,
    /// A faster multi-lock's value sets, one per hold (empty for the other kinds).
    sets: Vec<Arc<[String]>>,
    holds: u32,
    lost: Arc<LostSignal>,
}

/// One lock of a renewal round.
struct Renewing {
    hold: HoldKey,
    key: Value,
    field: Value,
    key_prefix: Option<Value>,
    /// A faster multi-lock's values: the union of its sets.
    values: Option<Vec<Value>>,
    slot: u16,
    lost: Arc<LostSignal>,
}

/// A lock name, the owner that holds it, and whether the hold is a write lock's (whose
/// field is `<id>:<owner>:write`, beside the same owner's read holds on the same name).
type HoldKey = (Arc<str>, LockOwner, bool);

/// What the renewal task needs besides the registry.
#[derive(Debug, Clone)]
pub(crate) struct RenewalSettings {
    pub(crate) period: Duration,
    pub(crate) lease_ms: u64,
    pub(crate) batch_size: usize,
    pub(crate) clustered: bool,
    pub(crate) response_timeout: Duration,
}

/// The per-client registry of watchdog-held locks.
#[derive(Debug, Default)]
pub(crate) struct Renewal {
    held: Mutex<HashMap<HoldKey, Held>>,
    /// Woken when the registry goes from empty to non-empty.
    first_hold: Notify,
}

impl Renewal {
    fn held(&self) -> MutexGuard<'_, HashMap<HoldKey, Held>> {
        // A panic while holding this lock cannot leave the map inconsistent (every
        // critical section is a single map operation), so a poisoned lock is still usable.
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers one watchdog hold; returns the lock's loss signal.
    pub(crate) fn add_hold(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
        renewable: impl FnOnce() -> Renewable,
    ) -> Arc<LostSignal> {
        let mut held = self.held();
        let was_empty = held.is_empty();
        let hold_key: HoldKey = (name.clone(), owner, write);
        let mut renewable = Some(renewable);
        let mut set = None;
        let entry = held.entry(hold_key).or_insert_with(|| {
            let made = renewable.take().map_or_else(
                || Renewable::Field {
                    field: String::new(),
                },
                |make| make(),
            );
            let (field, key_prefix) = match made {
                Renewable::Field { field } => (field, None),
                Renewable::ReadHolds { field, key_prefix } => (field, Some(key_prefix)),
                Renewable::Values { field, values } => {
                    set = Some(values);
                    (field, None)
                }
            };
            Held {
                field: field.into_boxed_str(),
                key_prefix: key_prefix.map(String::into_boxed_str),
                sets: Vec::new(),
                holds: 0,
                lost: Arc::default(),
            }
        });
        if !entry.sets.is_empty() {
            // A faster multi-lock entry: this hold's values join it.
            if let Some(Renewable::Values { values, .. }) = renewable.map(|make| make()) {
                set = Some(values);
            }
        }
        entry.sets.extend(set);
        entry.holds += 1;
        // The acquire script just set the lease.
        entry.lost.confirm(Instant::now());
        let lost = entry.lost.clone();
        drop(held);
        if was_empty {
            self.first_hold.notify_one();
        }
        lost
    }

    /// The loss signal of a registered hold, if any.
    pub(crate) fn signal(
        &self,
        name: &Arc<str>,
        owner: LockOwner,
        write: bool,
    ) -> Option<Arc<LostSignal>> {
        self.held()
            .get(&(name.clone(), owner, write))
            .map(|h| h.lost.clone())
    }

    /// Removes one hold; the lock stops being renewed with its owner's last one.
    pub(crate) fn remove_hold(&self, name: &Arc<str>, owner: LockOwner, write: bool) {
        let mut held = self.held();
        let key: HoldKey = (name.clone(), owner, write);
        if let Some(entry) = held.get_mut(&key) {
            entry.holds = entry.holds.saturating_sub(1);
            if entry.holds == 0 {
                held.remove(&key);
            }
        }
    }

    /// Removes one hold of a faster multi-lock: its `values` stop being renewed unless
    /// another hold of the same (group, owner) has them too.
    pub(crate) fn remove_values_hold(&self, name: &Arc<str>, owner: LockOwner, values: &[String]) {
        let mut held = self.held();
        let key: HoldKey = (name.clone(), owner, false);
        if let Some(entry) = held.get_mut(&key) {
            if let Some(at) = entry.sets.iter().position(|s| **s == *values) {
                entry.sets.swap_remove(at);
                entry.holds = entry.holds.saturating_sub(1);
            }
            if entry.holds == 0 || entry.sets.is_empty() {
                held.remove(&key);
            }
        }
    }

    /// Stops renewing `name` for every owner (force unlock), but only holds renewed the
    /// way `like` is: a read lock's force unlock stops its read holds, any other kind's
    /// (the write half's too) its owner fields. The two halves of a read-write lock share
    /// the name, and one half's force unlock must not stop the other half's renewal.
    ///
    /// A faster multi-lock's force unlock releases only its values: the holds (of any
    /// owner of this client) that share one of them stop, the group's others go on.
    pub(crate) fn remove_lock(&self, name: &str, like: &Renewable) {
        if let Renewable::Values { values, .. } = like {
            self.held().retain(|(n, _, _), h| {
                if &**n != name || h.sets.is_empty() {
                    return true;
                }
                let before = h.sets.len();
                h.sets
                    .retain(|set| !set.iter().any(|v| values.binary_search(v).is_ok()));
                h.holds = h.holds.saturating_sub((before - h.sets.len()) as u32);
                !h.sets.is_empty() && h.holds > 0
            });
            return;
        }
        let read_holds = matches!(like, Renewable::ReadHolds { .. });
        self.held()
            .retain(|(n, _, _), h| &**n != name || h.key_prefix.is_some() != read_holds);
    }

    /// Stops renewing everything and fires every loss signal (client shutdown).
    pub(crate) fn clear(&self) {
        let drained: Vec<Held> = self.held().drain().map(|(_, h)| h).collect();
        for held in drained {
            held.lost.fire();
        }
    }

    /// How many locks are registered.
    pub(crate) fn len(&self) -> usize {
        self.held().len()
    }

    fn lost(&self, key: &HoldKey, signal: &Arc<LostSignal>) {
        let mut held = self.held();
        // Only if the entry is the one that was renewed: an unlock and a new acquisition
        // between the snapshot and the reply make a new entry with a new signal.
        if held.get(key).is_some_and(|h| Arc::ptr_eq(&h.lost, signal)) {
            held.remove(key);
            drop(held);
            tracing::warn!(lock = %key.0, owner = %key.1, "lock lost: its owner field is gone");
            signal.fire();
        }
    }

    fn snapshot(&self) -> Vec<Renewing> {
        self.held()
            .iter()
            .map(|(k, h)| Renewing {
                hold: k.clone(),
                key: Value::from(&*k.0),
                field: Value::from(&*h.field),
                key_prefix: h.key_prefix.as_deref().map(Value::from),
                values: (!h.sets.is_empty()).then(|| {
                    let union: std::collections::BTreeSet<&str> = h
                        .sets
                        .iter()
                        .flat_map(|s| s.iter().map(String::as_str))
                        .collect();
                    union.into_iter().map(Value::from).collect()
                }),
                slot: fred::util::redis_keyslot(k.0.as_bytes()),
                lost: h.lost.clone(),
            })
            .collect()
    }

    /// The renewal task: runs until `shutdown` changes or its sender is dropped.
    pub(crate) async fn run(
        self: Arc<Self>,
        redis: fred::prelude::Client,
        settings: RenewalSettings,
        mut shutdown: watch::Receiver<bool>,
    ) {
        loop {
            // Idle while nothing is held.
            loop {
                let first = self.first_hold.notified();
                tokio::pin!(first);
                first.as_mut().enable();
                if self.len() > 0 {
                    break;
                }
                tokio::select! {
                    _ = first => {}
                    _ = shutdown.changed() => return,
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(settings.period) => {}
                _ = shutdown.changed() => return,
            }
            tokio::select! {
                _ = self.renew_once(&redis, &settings) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// One renewal round: every registered lock, in batches.
    async fn renew_once(&self, redis: &fred::prelude::Client, settings: &RenewalSettings) {
        let snapshot = self.snapshot();
        if snapshot.is_empty() {
            return;
        }
        let span = tracing::debug_span!("redisson_lock.renewal", locks = snapshot.len());
        self.renew_snapshot(redis, settings, snapshot)
            .instrument(span)
            .await
    }

    async fn renew_snapshot(
        &self,
        redis: &fred::prelude::Client,
        settings: &RenewalSettings,
        snapshot: Vec<Renewing>,
    ) {
        // One group per (slot, script): read holds and faster multi-lock values go to
        // their own scripts.
        let mut groups: BTreeMap<(u16, RenewScript), Vec<Renewing>> = BTreeMap::new();
        for item in snapshot {
            let slot = if settings.clustered { item.slot } else { 0 };
            let script = if item.values.is_some() {
                RenewScript::Values
            } else if item.key_prefix.is_some() {
                RenewScript::ReadHolds
            } else {
                RenewScript::Fields
            };
            groups.entry((slot, script)).or_default().push(item);
        }
        let lease = Value::from(settings.lease_ms as i64);
        let sent_at = Instant::now();
        let batches = groups
            .iter()
            .flat_map(|(slot, group)| {
                group
                    .chunks(settings.batch_size.max(1))
                    .map(move |batch| (*slot, batch))
            })
            .map(|((slot, kind), batch)| {
                let lease = lease.clone();
                let read_holds = kind == RenewScript::ReadHolds;
                async move {
                    let script: &Script = match kind {
                        RenewScript::Fields => &RENEW_FIELDS,
                        RenewScript::ReadHolds => &RENEW_READ_HOLDS,
                        RenewScript::Values => &RENEW_VALUES,
                    };
                    let reply = script
                        .run_in_slot(
                            redis,
                            slot,
                            Resend::Allowed,
                            settings.response_timeout,
                            |call| {
                                call.reserve(2 + 3 * batch.len());
                                if kind == RenewScript::Values {
                                    push_values_call(call, batch, &lease);
                                    return;
                                }
                                if read_holds {
                                    call.push(Value::from(2 * batch.len() as i64));
                                    for r in batch {
                                        call.push(r.key.clone());
                                        call.push(r.key_prefix.clone().unwrap_or(Value::Null));
                                    }
                                } else {
                                    call.push(Value::from(batch.len() as i64));
                                    call.extend(batch.iter().map(|r| r.key.clone()));
                                }
                                call.push(lease.clone());
                                call.extend(batch.iter().map(|r| r.field.clone()));
                            },
                        )
                        .await;
                    (batch, reply)
                }
            });
        let (mut renewed, mut lost, mut failed) = (0u64, 0u64, 0u64);
        for (batch, reply) in futures::future::join_all(batches).await {
            match reply {
                Ok(Value::Array(flags)) if flags.len() == batch.len() => {
                    for (lock, flag) in batch.iter().zip(flags) {
                        if flag.as_i64() == Some(0) {
                            lost += 1;
                            self.lost(&lock.hold, &lock.lost);
                        } else {
                            renewed += 1;
                            lock.lost.confirm(sent_at);
                        }
                    }
                }
                other => {
                    failed += batch.len() as u64;
                    match other {
                        Ok(other) => tracing::warn!(reply = ?other, "unexpected renewal reply"),
                        Err(error) => {
                            let names: Vec<&str> = batch.iter().map(|r| &*r.hold.0).collect();
                            tracing::warn!(%error, locks = ?names, "can't update locks expiration; will retry");
                        }
                    }
                    // Still renewed on later rounds, but a lease that ran out without a
                    // confirmed renewal no longer protects its holder (the server may be
                    // alive but out of reach, and the key gone).
                    let now = Instant::now();
                    for lock in batch {
                        if lock.lost.fire_if_expired(now, settings.lease_ms) {
                            tracing::warn!(lock = %lock.hold.0, owner = %lock.hold.1, "lock presumed lost: not renewed for its whole lease");
                        }
                    }
                }
            }
        }
        tracing::debug!(renewed, lost, failed, "renewal round");
        crate::telemetry::renewal_round(renewed, lost, failed);
    }
}

/// The renewal scripts a round sends, one group of batches each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum RenewScript {
    Fields,
    ReadHolds,
    Values,
}

/// `lua/faster_multi_renew.lua`'s keys and arguments for one batch: the groups, then the
/// lease, now, and per group its owner, the number of its values and the values.
fn push_values_call(call: &mut Vec<Value>, batch: &[Renewing], lease: &Value) {
    call.push(Value::from(batch.len() as i64));
    call.extend(batch.iter().map(|r| r.key.clone()));
    call.push(lease.clone());
    call.push(Value::from(crate::lock::now_ms()));
    for r in batch {
        let values = r.values.as_deref().unwrap_or_default();
        call.push(r.field.clone());
        call.push(Value::from(values.len() as i64));
        call.extend(values.iter().cloned());
    }
}
