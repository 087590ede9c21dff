//! The tracker: one task per client that keeps Redis tracking every held key and checks
//! the holds whose keys Redis invalidated.
//!
//! Each round takes what [`TrackQueue`](super::queue::TrackQueue) collected during a
//! short window ([`WINDOW`]), so that a burst is one round and a hold released within the
//! window costs nothing:
//! * holds whose keys Redis invalidated (every hold, after a flush or a new set-up) are
//!   checked with their kind's read-only check, sent as `EVALSHA_RO` (which also makes
//!   Redis track their keys again), through the watchdog's batches
//!   ([`Holds::Verify`]): gone → lost; shorter than this client set → at risk, and the
//!   sentry's check (a renewal for a watchdog hold) decides; as set → nothing visible;
//! * holds whose keys this client wrote (which `NOLOOP` tracking forgets) are read again
//!   with one `EXISTS` per batch (per hash slot on a cluster); a key found missing is
//!   checked in the next round.
//!
//! An invalidation is a hint, never a verdict: only a check's reply changes a signal.
//! Checks that find every hold as set (a tracking table over `tracking-table-max-keys`
//! drops and re-announces keys, another reader of a shared read lock writes its hash) make
//! the window grow, up to [`QUIET_MAX`], until a check finds something again.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::KeysInterface;
use fred::types::Key;
use tokio::sync::watch;

use crate::connection::redis::Redis;
use crate::hold::registry::{HoldKey, HoldRegistry};
use crate::hold::renewal::{Holds, RenewalSettings};
use crate::hold::tracking::queue::Pending;

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
        let checked = if pending.has_checks() {
            let (checked, found) = check(&registry, &redis, &settings, &pending).await;
            window = if found {
                WINDOW
            } else {
                (window * 2).min(QUIET_MAX)
            };
            checked
        } else {
            HashSet::new()
        };
        read_again(&registry, &redis, &settings, &pending, &checked).await;
    }
}

/// Checks the holds `pending` names (see the module docs); returns the holds checked and
/// whether any was found changed.
async fn check(
    registry: &HoldRegistry,
    redis: &Redis,
    settings: &RenewalSettings,
    pending: &Pending,
) -> (HashSet<HoldKey>, bool) {
    let holds = if pending.everything {
        registry.snapshot(|_, _| true)
    } else {
        let keys: HashSet<&[u8]> = pending.invalidated.iter().map(|k| &k[..]).collect();
        registry.snapshot_where(|hold, held| keys.contains(held.tracked_key(&hold.0)))
    };
    if holds.is_empty() {
        return (HashSet::new(), true);
    }
    let checked = holds.iter().map(|h| h.hold.clone()).collect();
    let count = holds.len();
    let outcome = crate::hold::renewal::send(registry, redis, settings, Holds::Verify(holds)).await;
    tracing::debug!(
        checked = count,
        held = outcome.confirmed,
        shortened = outcome.shortened,
        gone = outcome.gone,
        failed = outcome.failed,
        "holds checked after an invalidation"
    );
    crate::telemetry::tracking_checks(outcome.confirmed, outcome.shortened, outcome.gone);
    (
        checked,
        outcome.shortened + outcome.gone + outcome.failed > 0,
    )
}

/// Reads again the keys this client wrote, except those `checked` just read; a key
/// found missing goes back to the queue as invalidated.
async fn read_again(
    registry: &HoldRegistry,
    redis: &Redis,
    settings: &RenewalSettings,
    pending: &Pending,
    checked: &HashSet<HoldKey>,
) {
    if pending.rewritten.is_empty() && pending.shared.is_empty() {
        return;
    }
    let names: HashSet<&str> = pending.shared.iter().map(|n| &**n).collect();
    let keys = registry.tracked_keys_of(&pending.rewritten, &names, |hold| checked.contains(hold));
    // Per slot on a cluster.
    let mut groups: BTreeMap<u16, Vec<Key>> = BTreeMap::new();
    for (slot, key) in keys {
        let slot = if settings.clustered { slot } else { 0 };
        groups.entry(slot).or_default().push(Key::from(key));
    }
    let reads = groups.into_values().flat_map(|keys| {
        keys.chunks(settings.batch_size.max(1))
            .map(<[Key]>::to_vec)
            .collect::<Vec<_>>()
    });
    let reads = reads.map(|keys| async move {
        let expected = keys.len() as i64;
        let found: Result<i64, _> = redis.query(|c| c.exists(keys.clone())).await;
        match found {
            Ok(found) if found < expected => {
                // Somebody removed one between this client's write and the read: checked.
                registry
                    .tracking
                    .invalidated(Some(keys.iter().map(|k| k.as_bytes().to_vec().into()).collect()));
            }
            Ok(_) => {}
            Err(error) => {
                tracing::debug!(%error, "key tracking: EXISTS failed; the keys are checked at the next set-up");
            }
        }
    });
    futures::future::join_all(reads).await;
}
