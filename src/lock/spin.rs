//! [`Spin`]: Redisson's `RSpinLock` (protocol §13): the reentrant lock's hash and field,
//! no pub/sub; a waiter polls with back-off, and unlock never publishes.
//!
//! Like the reentrant lock, this client's waiters of one spin lock form a local line
//! ([`crate::engine::wait::local_queue`]): only its head polls Redis (with the back-off), and a release
//! hands the lock to the head in the same script (`lua/spin_handoff.lua`, never
//! publishing), within the same bounds, after which it releases for real so that other
//! clients' pollers get their turn.
//!
//! Pick it where pub/sub is unavailable (some proxies and managed services) or too costly
//! (very many lock names with waiters at once: every waited-on name costs a channel
//! subscription on the other kinds). It costs more scripts per acquisition under
//! contention and hands over later: a waiter notices a release only at its next poll.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::LazyLock;

use fred::prelude::Value;

use super::backoff::Backoff;
use super::base::HandoffTo;
use super::base::{ACQUIRE, acquire_call};
use super::kind::{AcquireMode, Capabilities, Kind, ScriptCall, Target, Waiting};
use crate::connection::scripts::Script;
use crate::error::Result;

/// `lua/spin_release.lua`: give back one hold, never publishing.
pub(crate) const SPIN_RELEASE: &str = include_str!("../../lua/spin_release.lua");
/// `lua/spin_force_release.lua`: delete the lock, never publishing.
pub(crate) const SPIN_FORCE_RELEASE: &str = include_str!("../../lua/spin_force_release.lua");
/// `lua/spin_handoff.lua`: give back one hold and hand the lock to the next local owner,
/// never publishing.
pub(crate) const SPIN_HANDOFF: &str = include_str!("../../lua/spin_handoff.lua");

static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(SPIN_RELEASE));
static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(SPIN_FORCE_RELEASE));
static HANDOFF: LazyLock<Script> = LazyLock::new(|| Script::new(SPIN_HANDOFF));

/// The spin kind: Redisson's `RSpinLock`. [`SpinLock`](crate::SpinLock) is `Lock<Spin>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::Backoff;
/// let lock = client.get_spin_lock_with("jobs", Backoff::constant(std::time::Duration::from_millis(10))?);
/// lock.lock().await?;
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Spin {
    backoff: Backoff,
}

impl Spin {
    pub(crate) fn new(backoff: Backoff) -> Spin {
        Spin { backoff }
    }

    /// The back-off this spin lock polls with.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// use redisson_lock::Backoff;
    /// let lock = client.get_spin_lock("jobs");
    /// assert_eq!(lock.kind().backoff(), Backoff::default());
    /// # }
    /// ```
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }
}

impl Kind for Spin {
    const NAME: &'static str = "spin";
    const CAPABILITIES: Capabilities = Capabilities {
        hands_off_locally: true,
        ..Capabilities::NONE
    };

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        acquire_call(&ACQUIRE, target, lease_ms)
    }

    fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
        ScriptCall::with_values(
            &RELEASE,
            vec![target.name_value(), Value::from(latch)],
            vec![
                Value::from(lease_ms as i64),
                target.owner_value(),
                target.latch_ttl(),
            ],
        )
    }

    /// Within the hand-off bounds (`next.listeners < 0`) the lock moves to the next local
    /// owner; past them the release is a real one: nobody listens on a spin lock, so
    /// there are no listeners to count, and other clients' pollers need a free lock.
    fn handoff(
        &self,
        target: &Target<'_>,
        lease_ms: u64,
        latch: &str,
        next: &HandoffTo,
    ) -> Option<ScriptCall> {
        (next.listeners < 0).then(|| {
            ScriptCall::with_values(
                &HANDOFF,
                vec![target.name_value(), Value::from(latch)],
                vec![
                    Value::from(lease_ms as i64),
                    target.owner_value(),
                    target.latch_ttl(),
                    Value::from(next.field.as_str()),
                    Value::from(next.lease_ms as i64),
                ],
            )
        })
    }

    fn force_release(&self, target: &Target<'_>) -> ScriptCall {
        ScriptCall::new(&FORCE_RELEASE, vec![target.name.to_owned()], vec![])
    }

    fn waiting(&self, _target: &Target<'_>) -> Waiting {
        Waiting::Poll(self.backoff)
    }

    /// A back-off built through its variants is checked here, before any acquisition.
    fn check(&self) -> Result<()> {
        self.backoff.validated().map(drop)
    }
}
