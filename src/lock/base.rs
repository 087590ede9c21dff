//! The reentrant lock's scripts and script calls: the base most kinds start from. The
//! [`Kind`](super::kind::Kind) trait's defaults release, force-release and wait the way
//! `RLock` does, with these; a kind overrides only what differs.

use std::sync::LazyLock;

use fred::prelude::Value;

use super::call::{ScriptCall, Target};
use crate::connection::scripts::Script;
use crate::names::lock_channel;

/// `lua/lock_acquire.lua`: take or re-enter a lock.
pub(crate) const LOCK_ACQUIRE: &str = include_str!("../../lua/lock_acquire.lua");
/// `lua/lock_release.lua`: give back one hold, with the unlock latch.
pub(crate) const LOCK_RELEASE: &str = include_str!("../../lua/lock_release.lua");
/// `lua/lock_force_release.lua`: delete a lock whoever holds it.
pub(crate) const LOCK_FORCE_RELEASE: &str = include_str!("../../lua/lock_force_release.lua");
pub(crate) const LOCK_HANDOFF: &str = include_str!("../../lua/lock_handoff.lua");

pub(crate) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_ACQUIRE));
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_RELEASE));
pub(crate) static FORCE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(LOCK_FORCE_RELEASE));
pub(crate) static HANDOFF: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_HANDOFF));

/// `KEYS [N]`, `ARGV [lease, field]`: the RLock acquire shape, also sent by the spin lock
/// and (with its own script) the non-reentrant lock.
pub(crate) fn acquire_call(
    script: &'static Script,
    target: &Target<'_>,
    lease_ms: u64,
) -> ScriptCall {
    ScriptCall::with_values(
        script,
        vec![target.name_value()],
        vec![Value::from(lease_ms as i64), target.owner_value()],
    )
}

/// RLock's release (§4.2): the default release of every kind that unlocks as RLock
/// does.
pub(crate) fn release_call(target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
    ScriptCall::with_values(
        &RELEASE,
        vec![
            target.name_value(),
            target.channel_value(),
            Value::from(latch),
        ],
        vec![
            Value::from_static_str("0"),
            Value::from(lease_ms as i64),
            target.owner_value(),
            target.publish(),
            target.latch_ttl(),
        ],
    )
}

/// `lua/lock_handoff.lua`: the release of `target`'s owner that hands the lock to the
/// next local owner (see [`crate::engine::wait::local_queue`]).
pub(crate) fn handoff_call(
    target: &Target<'_>,
    lease_ms: u64,
    latch: &str,
    next: &HandoffTo,
) -> ScriptCall {
    // The release's keys and arguments, then whom to hand to; when counting other
    // clients' waiters, the mark of local lines and whether the turn goes on.
    let marked = usize::from(next.marked);
    let mut keys = Vec::with_capacity(3 + marked);
    keys.extend([
        target.name_value(),
        target.channel_value(),
        Value::from(latch),
    ]);
    let mut args = Vec::with_capacity(8 + marked);
    args.extend([
        Value::from_static_str("0"),
        Value::from(lease_ms as i64),
        target.owner_value(),
        target.publish(),
        target.latch_ttl(),
        Value::from(next.field.as_str()),
        Value::from(next.lease_ms as i64),
        Value::from(next.listeners),
    ]);
    if next.marked {
        keys.push(target.marker_value());
        args.push(Value::from_static_str(if next.turn_goes_on {
            "1"
        } else {
            "0"
        }));
    }
    ScriptCall::with_values(&HANDOFF, keys, args)
}

/// Whom a hand-off goes to: the next owner's field and lease, how many listeners on the
/// channel still allow it (`-1`: any number), and whether the script tells other
/// clients' waiters from local lines by their mark (`marked`), and then whether this
/// client's line may go on handing off while such waiters listen (`turn_goes_on`).
#[derive(Clone, Debug)]
pub(crate) struct HandoffTo {
    pub(crate) field: String,
    pub(crate) lease_ms: u64,
    pub(crate) listeners: i64,
    pub(crate) marked: bool,
    pub(crate) turn_goes_on: bool,
}

/// RLock's force release (§4.3): the default of every kind that force-unlocks as RLock
/// does.
pub(crate) fn force_release_call(target: &Target<'_>) -> ScriptCall {
    ScriptCall::new(
        &FORCE_RELEASE,
        vec![target.name.to_owned(), lock_channel(target.name)],
        vec![Value::from_static_str("0"), target.publish()],
    )
}
