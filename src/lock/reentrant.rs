//! [`Reentrant`]: Redisson's `RLock` (protocol §4), the first kind over the engine.
//!
//! Hash `N`, field `<client-id>:<owner>` → hold count; waiters listen on
//! `redisson_lock__channel:{N}`, where a full release publishes `0`; the watchdog renews
//! with the batched field script.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use super::base::{ACQUIRE, acquire_call};
use super::kind::{AcquireMode, Capabilities, Kind, ScriptCall, Target};

/// The reentrant kind: Redisson's `RLock`. [`RLock`](crate::RLock) is `Lock<Reentrant>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock: redisson_lock::Lock<redisson_lock::kinds::Reentrant> = client.get_lock("orders");
/// lock.lock().await?;
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Reentrant;

/// Everything but the acquire script is the trait's default: RLock's release, force
/// release, channel and renewal.
impl Kind for Reentrant {
    const NAME: &'static str = "reentrant";

    const CAPABILITIES: Capabilities = Capabilities {
        hands_off_locally: true,
        ..Capabilities::NONE
    };

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        acquire_call(&ACQUIRE, target, lease_ms)
    }
}
