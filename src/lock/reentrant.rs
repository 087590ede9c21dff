//! [`Reentrant`]: Redisson's `RLock` (protocol §4), the first kind over the engine.
//!
//! Hash `N`, field `<client-id>:<owner>` → hold count; waiters listen on
//! `redisson_lock__channel:{N}`, where a full release publishes `0`; the watchdog renews
//! with the batched field script.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::LazyLock;

use fred::prelude::Value;

use super::kind::{AcquireMode, Kind, ScriptCall, Target, Waiting};
use crate::names::lock_channel;
use crate::scripts::Script;

/// `lua/lock_acquire.lua`: take or re-enter a lock.
pub(crate) const LOCK_ACQUIRE: &str = include_str!("../../lua/lock_acquire.lua");
/// `lua/lock_release.lua`: give back one hold, with the unlock latch.
pub(crate) const LOCK_RELEASE: &str = include_str!("../../lua/lock_release.lua");
/// `lua/lock_force_release.lua`: delete a lock whoever holds it.
pub(crate) const LOCK_FORCE_RELEASE: &str = include_str!("../../lua/lock_force_release.lua");

pub(crate) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_ACQUIRE));
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_RELEASE));
pub(crate) static FORCE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(LOCK_FORCE_RELEASE));

/// The reentrant kind: Redisson's `RLock`. [`RLock`](crate::RLock) is `Lock<Reentrant>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock: redisson_lock::Lock<redisson_lock::Reentrant> = client.get_lock("orders");
/// lock.lock().await?;
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Reentrant;

impl Kind for Reentrant {
    const NAME: &'static str = "reentrant";

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        acquire_call(&ACQUIRE, target, lease_ms)
    }

    fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
        release_call(target, lease_ms, latch)
    }

    fn force_release(&self, target: &Target<'_>) -> ScriptCall {
        force_release_call(target)
    }

    fn waiting(&self, target: &Target<'_>) -> Waiting {
        Waiting::Channel(lock_channel(target.name))
    }
}

/// `KEYS [N]`, `ARGV [lease, field]`: the RLock acquire shape, shared by the kinds that
/// differ from RLock only in the acquire script (non-reentrant).
pub(crate) fn acquire_call(
    script: &'static Script,
    target: &Target<'_>,
    lease_ms: u64,
) -> ScriptCall {
    ScriptCall::new(
        script,
        vec![target.name.to_owned()],
        vec![
            Value::from(lease_ms as i64),
            Value::from(target.owner_field()),
        ],
    )
}

/// RLock's release (§4.2), shared by the kinds that unlock as RLock does (fenced,
/// non-reentrant).
pub(crate) fn release_call(target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
    ScriptCall::new(
        &RELEASE,
        vec![
            target.name.to_owned(),
            lock_channel(target.name),
            latch.to_owned(),
        ],
        vec![
            Value::from("0"),
            Value::from(lease_ms as i64),
            Value::from(target.owner_field()),
            target.publish(),
            target.latch_ttl(),
        ],
    )
}

/// RLock's force release (§4.3), shared likewise.
pub(crate) fn force_release_call(target: &Target<'_>) -> ScriptCall {
    ScriptCall::new(
        &FORCE_RELEASE,
        vec![target.name.to_owned(), lock_channel(target.name)],
        vec![Value::from("0"), target.publish()],
    )
}
