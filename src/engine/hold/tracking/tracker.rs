//! The tracker: one task per client that checks the holds whose keys Redis invalidated.
//!
//! Each round takes what [`TrackQueue`](super::queue::TrackQueue) collected during a
//! short window ([`WINDOW`]), so that a burst is one round and a hold released within the
//! window costs nothing. The holds whose keys Redis invalidated (every hold, after a flush
//! or a new set-up) are checked with their kind's read-only check, sent as `EVALSHA_RO`
//! (which also makes Redis track their keys again), through the watchdog's batches
//! ([`Holds::Verify`]): gone → lost; shorter than this client set → at risk, and the
//! sentry's check (a renewal for a watchdog hold) decides; as set → nothing visible.
//!
//! Keys this client writes need no round here: Redis forgets a written key's tracking
//! entry (`NOLOOP` or not), so every script that writes a key holds remain in (an
//! acquisition, a re-entry, a partial or shared-key unlock, a hand-off, a renewal, a kept
//! permit's release) reads it once more, which tracks it again for the connection that
//! ran the script.
//!
//! An invalidation is a hint, never a verdict: only a check's reply changes a signal.
//! Checks that find every hold as set (a tracking table over `tracking-table-max-keys`
//! drops and re-announces keys, another reader of a shared read lock writes its hash), and
//! checks asked again because this client's own write to the key ran beside them, make
//! the window grow, up to [`QUIET_MAX`], until a check finds something again.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::connection::redis::Redis;
use crate::engine::hold::registry::HoldRegistry;
use crate::engine::hold::renewal::{Holds, RenewalSettings};
use crate::engine::hold::tracking::queue::Pending;

/// How long a round waits for more work after the first item.
pub(crate) const WINDOW: Duration = Duration::from_millis(2);
/// The longest window, after checks that found nothing in a row.
pub(crate) const QUIET_MAX: Duration = Duration::from_millis(250);

/// The tracker's task; runs until `shutdown` changes.
pub(crate) async fn run(
    registry: Arc<HoldRegistry>,
    redis: Redis,
    settings: RenewalSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut window = WINDOW;
    loop {
        tokio::select! {
            () = registry.tracking.wait() => {}
            _ = shutdown.changed() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(window) => {}
            _ = shutdown.changed() => return,
        }
        let pending = registry.tracking.take();
        let found = check(&registry, &redis, &settings, &pending).await;
        window = if found {
            WINDOW
        } else {
            (window * 2).min(QUIET_MAX)
        };
    }
}

/// Checks the holds `pending` names (see the module docs); returns whether any was found
/// changed (or none was there to check).
async fn check(
    registry: &HoldRegistry,
    redis: &Redis,
    settings: &RenewalSettings,
    pending: &Pending,
) -> bool {
    let holds = if pending.everything {
        registry.snapshot(|_, _| true)
    } else {
        let keys: HashSet<&[u8]> = pending.invalidated.iter().map(|k| &k[..]).collect();
        registry.snapshot_where(|hold, held| keys.contains(held.tracked_key(&hold.0)))
    };
    if holds.is_empty() {
        return true;
    }
    let count = holds.len();
    let outcome =
        crate::engine::hold::renewal::send(registry, redis, settings, Holds::Verify(holds)).await;
    tracing::debug!(
        checked = count,
        held = outcome.confirmed,
        shortened = outcome.shortened,
        gone = outcome.gone,
        failed = outcome.failed,
        asked_again = outcome.asked_again,
        "holds checked after an invalidation"
    );
    crate::engine::telemetry::tracking_checks(outcome.confirmed, outcome.shortened, outcome.gone);
    outcome.shortened + outcome.gone + outcome.failed > 0
}
