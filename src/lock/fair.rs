//! [`Fair`] and [`NonReentrantFair`]: Redisson's `RFairLock` (protocol §10) and its
//! non-reentrant twin (`RedissonNonReentrantFairLock`, 4.4.0+, §10.6).
//!
//! The hash `N` is RLock's. Waiters queue in `redisson_lock_queue:{N}` (a list of owner
//! fields) with their deadlines in `redisson_lock_timeout:{N}` (a zset); each waiter
//! listens on its own channel `redisson_lock__channel:{N}:<client-id>:<owner>`, and an
//! unlock publishes `0` only to the head of the queue. A waiter that gives up (or whose
//! future is dropped) leaves the queue through `acquireFailed`; one whose process died is
//! purged once its deadline passes.
//!
//! With a name mapper, `N` is the mapped name, and so are the channels; the queue and the
//! deadline set are built from the mapped name too (Redisson 3.52.0+) or from the name as
//! given (up to 3.51.x), as [`FairQueueNames`] says.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::{Arc, LazyLock};

use fred::prelude::Value;

use super::kind::{AcquireMode, Capabilities, Kind, ScriptCall, Target, Waiting, now_ms};
use crate::connection::scripts::Script;
use crate::engine::wait::queued_waiters::Slot;
use crate::error::Error;
use crate::names::mapper::FairQueueNames;
use crate::names::{fair_queue, fair_timeouts, fair_waiter_channel, lock_channel};

/// `lua/fair_acquire.lua`: take, re-enter or queue (the blocking variant).
pub(crate) const FAIR_ACQUIRE: &str = include_str!("../../lua/fair_acquire.lua");
/// `lua/fair_try_acquire.lua`: take or re-enter without queueing (`tryLock()`).
pub(crate) const FAIR_TRY_ACQUIRE: &str = include_str!("../../lua/fair_try_acquire.lua");
/// `lua/fair_release.lua`: give back one hold and wake the head waiter.
pub(crate) const FAIR_RELEASE: &str = include_str!("../../lua/fair_release.lua");
/// `lua/fair_handoff.lua`: give back one hold; hand the lock to the head of the queue
/// when it is one of this client's named waiters, else wake it.
pub(crate) const FAIR_HANDOFF: &str = include_str!("../../lua/fair_handoff.lua");
/// `lua/fair_force_release.lua`: delete the lock and wake the head waiter.
pub(crate) const FAIR_FORCE_RELEASE: &str = include_str!("../../lua/fair_force_release.lua");
/// `lua/fair_acquire_failed.lua`: leave the queue (`acquireFailed`).
pub(crate) const FAIR_ACQUIRE_FAILED: &str = include_str!("../../lua/fair_acquire_failed.lua");

/// How often (ms) a queued waiter retries while the lock is free but a waiter ahead of it
/// has not taken it yet (Redisson retries at once, in a loop). The wait ends earlier when
/// the head's slot ends, or on the `0` the head's unlock or departure publishes.
const FREE_LOCK_POLL_MS: i64 = 100;

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_ACQUIRE));
static TRY_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_TRY_ACQUIRE));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_RELEASE));
static HANDOFF: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_HANDOFF));
static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_FORCE_RELEASE));
static ACQUIRE_FAILED: LazyLock<Script> = LazyLock::new(|| Script::new(FAIR_ACQUIRE_FAILED));

/// The fair kind: Redisson's `RFairLock`. [`FairLock`](crate::FairLock) is `Lock<Fair>`.
///
/// Waiters get the lock in the order they queued, across processes and languages.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock = client.get_fair_lock("tickets");
/// lock.lock().await?;      // queued behind earlier waiters, if any
/// lock.unlock().await?;    // wakes the next waiter in the queue, only it
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Fair;

/// The non-reentrant fair kind: Redisson 4.4's `RedissonNonReentrantFairLock`.
/// [`NonReentrantFairLock`](crate::NonReentrantFairLock) is `Lock<NonReentrantFair>`.
///
/// A second acquisition by the holder fails with [`Error::NonReentrant`] instead of
/// counting.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock = client.get_non_reentrant_fair_lock("tickets");
/// lock.lock().await?;
/// assert!(matches!(lock.lock().await, Err(redisson_lock::Error::NonReentrant { .. })));
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NonReentrantFair;

/// The name the queue and the deadline set are built from: the mapped name, or the name as
/// given under [`FairQueueNames::Unmapped`] (Redisson up to 3.51.x, protocol §10.1).
fn queue_base<'a>(target: &Target<'a>) -> &'a str {
    match target.context.config.settings.fair_queue_names {
        FairQueueNames::Mapped => target.name,
        FairQueueNames::Unmapped => target.given,
    }
}

/// The queue and the deadline set, as ready-made strings (see `key_cache`).
fn queue_keys<'a>(target: &Target<'a>) -> &'a [fred::bytes_utils::Str] {
    target.keys.kind_keys(|| {
        vec![
            fair_queue(queue_base(target)),
            fair_timeouts(queue_base(target)),
        ]
    })
}

fn acquire(target: &Target<'_>, lease_ms: u64, mode: AcquireMode, reentrant: bool) -> ScriptCall {
    let mut keys = Vec::with_capacity(3);
    keys.push(target.name_value());
    keys.extend(queue_keys(target).iter().cloned().map(Value::String));
    let (lease, field, now) = (
        Value::from(lease_ms as i64),
        target.owner_value(),
        Value::from(now_ms()),
    );
    let reentrant = Value::from_static_str(if reentrant { "1" } else { "0" });
    match mode {
        AcquireMode::Once => {
            let wait = Value::from(
                target
                    .context
                    .config
                    .settings
                    .fair_lock_wait_timeout
                    .as_millis() as i64,
            );
            ScriptCall::with_values(&TRY_ACQUIRE, keys, vec![lease, field, now, wait, reentrant])
        }
        AcquireMode::Queue { wait_ms } => {
            let wait = Value::from(wait_ms as i64);
            let poll = Value::from(FREE_LOCK_POLL_MS);
            ScriptCall::with_values(
                &ACQUIRE,
                keys,
                vec![lease, field, wait, now, reentrant, poll],
            )
        }
    }
}

fn release(target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
    let mut keys = Vec::with_capacity(5);
    keys.push(target.name_value());
    keys.extend(queue_keys(target).iter().cloned().map(Value::String));
    keys.extend([target.channel_value(), Value::from(latch)]);
    ScriptCall::with_values(
        &RELEASE,
        keys,
        vec![
            Value::from_static_str("0"),
            Value::from(lease_ms as i64),
            target.owner_value(),
            Value::from(now_ms()),
            target.publish(),
            target.latch_ttl(),
        ],
    )
}

/// The release, then each named waiter's field, lease and wait.
fn queue_handoff(
    target: &Target<'_>,
    lease_ms: u64,
    latch: &str,
    named: &[Arc<Slot>],
) -> ScriptCall {
    let mut call = release(target, lease_ms, latch);
    call.script = &HANDOFF;
    call.args.reserve(3 * named.len());
    for waiter in named.iter().map(|slot| &slot.to) {
        call.args.extend([
            waiter.field.clone(),
            Value::from(waiter.lease_ms as i64),
            Value::from(waiter.wait_ms as i64),
        ]);
    }
    call
}

fn force_release(target: &Target<'_>) -> ScriptCall {
    ScriptCall::new(
        &FORCE_RELEASE,
        vec![
            target.name.to_owned(),
            fair_queue(queue_base(target)),
            fair_timeouts(queue_base(target)),
            lock_channel(target.name),
        ],
        vec![
            Value::from_static_str("0"),
            Value::from(now_ms()),
            target.publish(),
        ],
    )
}

fn acquire_failed(target: &Target<'_>, wait_ms: u64) -> ScriptCall {
    ScriptCall::new(
        &ACQUIRE_FAILED,
        vec![
            fair_queue(queue_base(target)),
            fair_timeouts(queue_base(target)),
            target.name.to_owned(),
            lock_channel(target.name),
        ],
        vec![
            target.owner_value(),
            Value::from(wait_ms as i64),
            Value::from_static_str("0"),
            target.publish(),
        ],
    )
}

fn waiting(target: &Target<'_>) -> Waiting {
    Waiting::Channel(fair_waiter_channel(target.name, &target.owner_field()))
}

/// `impl Kind` for the two fair kinds, which differ only in their name and whether the
/// owner may take the lock again (a refused re-entry of the non-reentrant one is its
/// typed error).
macro_rules! fair_kind {
    ($kind:ty, $name:literal, reentrant: $reentrant:literal) => {
        impl Kind for $kind {
            const NAME: &'static str = $name;
            const CAPABILITIES: Capabilities = Capabilities {
                queues_in_redis: true,
                ..Capabilities::NONE
            };

            fn acquire(&self, target: &Target<'_>, lease_ms: u64, mode: AcquireMode) -> ScriptCall {
                acquire(target, lease_ms, mode, $reentrant)
            }

            fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
                release(target, lease_ms, latch)
            }

            fn queue_handoff(
                &self,
                target: &Target<'_>,
                lease_ms: u64,
                latch: &str,
                named: &[Arc<Slot>],
            ) -> Option<ScriptCall> {
                Some(queue_handoff(target, lease_ms, latch, named))
            }

            fn force_release(&self, target: &Target<'_>) -> ScriptCall {
                force_release(target)
            }

            fn acquire_failed(&self, target: &Target<'_>, wait_ms: u64) -> Option<ScriptCall> {
                Some(acquire_failed(target, wait_ms))
            }

            fn waiting(&self, target: &Target<'_>) -> Waiting {
                waiting(target)
            }

            fn script_error(
                &self,
                target: &Target<'_>,
                error: &fred::error::Error,
            ) -> Option<Error> {
                if $reentrant {
                    None
                } else {
                    super::non_reentrant::reacquire_error(target, error)
                }
            }
        }
    };
}

fair_kind!(Fair, "fair", reentrant: true);
fair_kind!(NonReentrantFair, "non_reentrant_fair", reentrant: false);
