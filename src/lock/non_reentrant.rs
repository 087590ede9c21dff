//! [`NonReentrant`]: Redisson 4.4's `RedissonNonReentrantLock` (protocol §14.4): RLock's
//! keys, channel, unlock and renewal, but a second acquisition by the holder is an error
//! (`NON_REENTRANT_REACQUIRE` from the script, [`Error::NonReentrant`] here) instead of
//! a re-entry.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::LazyLock;

use super::base::acquire_call;
use super::kind::{AcquireMode, Capabilities, Kind, ScriptCall, Target};
use crate::connection::scripts::Script;
use crate::error::Error;

/// `lua/nonreentrant_acquire.lua`: take the lock; a re-entry is an error.
pub(crate) const NONREENTRANT_ACQUIRE: &str = include_str!("../../lua/nonreentrant_acquire.lua");

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(NONREENTRANT_ACQUIRE));

/// The non-reentrant kind: Redisson 4.4's `RedissonNonReentrantLock`.
/// [`NonReentrantLock`](crate::NonReentrantLock) is `Lock<NonReentrant>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock = client.get_non_reentrant_lock("batch");
/// lock.lock().await?;
/// assert!(!lock.try_lock().await?);   // the holder itself cannot take it again
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NonReentrant;

impl Kind for NonReentrant {
    const NAME: &'static str = "non_reentrant";

    const CAPABILITIES: Capabilities = Capabilities {
        hands_off_locally: true,
        ..Capabilities::NONE
    };

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        acquire_call(&ACQUIRE, target, lease_ms)
    }

    fn script_error(&self, target: &Target<'_>, error: &fred::error::Error) -> Option<Error> {
        reacquire_error(target, error)
    }
}

/// [`Error::NonReentrant`] for the scripts' `NON_REENTRANT_REACQUIRE` error reply.
pub(crate) fn reacquire_error(target: &Target<'_>, error: &fred::error::Error) -> Option<Error> {
    error
        .details()
        .contains("NON_REENTRANT_REACQUIRE")
        .then(|| Error::NonReentrant {
            name: target.given.to_owned(),
            owner: target.owner,
        })
}
