//! When both Redisson versions load a file they must resolve the same settings: the crate
//! cannot connect as both. The settings compared, in the order they are reported, are a
//! table ([`COMPARED`]).

use std::time::Duration;

use super::reader::Resolved;
use super::scalar::Redisson;
use super::secret_values::Secrets;
use super::source::file_error;
use crate::error::{Error, RedissonFileError};

/// One setting both versions must resolve alike.
struct Compared {
    /// The setting the error names: where the file wrote it when the reading kept that
    /// ([`Resolved::paths`]), else this key.
    key: &'static str,
    differ: fn(&Resolved, &Resolved) -> bool,
    /// How a version's reading is shown; `None` for a password, never shown.
    shown: Option<fn(&Resolved) -> String>,
}

/// Every setting compared, in the order they are reported. `renewal_batch_size` and
/// `publish_mode` are 4.x's only; `subscriptionTimeout` and `fairLockWaitTimeout` are
/// compared only when both versions have them.
const COMPARED: [Compared; 16] = [
    Compared {
        key: "<file>",
        differ: |a, b| a.topology != b.topology,
        shown: Some(|r| format!("{:?}", r.topology)),
    },
    Compared {
        key: "address",
        differ: |a, b| a.nodes != b.nodes || a.tls != b.tls,
        shown: Some(|r| format!("{:?}", r.nodes)),
    },
    Compared {
        key: "masterName",
        differ: |a, b| a.master_name != b.master_name,
        shown: Some(|r| format!("{:?}", r.master_name)),
    },
    Compared {
        key: "username",
        differ: |a, b| a.username != b.username,
        shown: Some(|r| format!("{:?}", r.username)),
    },
    Compared {
        key: "password",
        differ: |a, b| a.password != b.password,
        shown: None,
    },
    Compared {
        key: "sentinelUsername",
        differ: |a, b| sentinel_username(a) != sentinel_username(b),
        shown: Some(|r| format!("{:?}", sentinel_username(r))),
    },
    Compared {
        key: "sentinelPassword",
        differ: |a, b| sentinel_password(a) != sentinel_password(b),
        shown: None,
    },
    Compared {
        key: "database",
        differ: |a, b| a.database != b.database,
        shown: Some(|r| r.database.to_string()),
    },
    Compared {
        key: "timeout",
        differ: |a, b| a.response_timeout != b.response_timeout,
        shown: Some(|r| ms(r.response_timeout)),
    },
    Compared {
        key: "connectTimeout",
        differ: |a, b| a.connect_timeout != b.connect_timeout,
        shown: Some(|r| ms(r.connect_timeout)),
    },
    Compared {
        key: "lockWatchdogTimeout",
        differ: |a, b| a.watchdog_timeout != b.watchdog_timeout,
        shown: Some(|r| ms(r.watchdog_timeout)),
    },
    Compared {
        key: "slavesSyncTimeout",
        differ: |a, b| a.replicas_sync_timeout != b.replicas_sync_timeout,
        shown: Some(|r| ms(r.replicas_sync_timeout)),
    },
    Compared {
        key: "checkLockSyncedSlaves",
        differ: |a, b| a.check_lock_synced_replicas != b.check_lock_synced_replicas,
        shown: Some(|r| r.check_lock_synced_replicas.to_string()),
    },
    Compared {
        key: "codec",
        differ: |a, b| a.codec != b.codec,
        shown: Some(|r| format!("{:?}", r.codec)),
    },
    Compared {
        key: "subscriptionTimeout",
        differ: |a, b| both_differ(a.subscription_timeout, b.subscription_timeout),
        shown: Some(|r| format!("{:?}", r.subscription_timeout)),
    },
    Compared {
        key: "fairLockWaitTimeout",
        differ: |a, b| both_differ(a.fair_lock_wait_timeout, b.fair_lock_wait_timeout),
        shown: Some(|r| format!("{:?}", r.fair_lock_wait_timeout)),
    },
];

/// When both versions load the file but resolve a setting differently, the crate cannot
/// be both: the setting, and how each reads it.
pub(super) fn disagreement(
    a_version: Redisson,
    a: &Resolved,
    b_version: Redisson,
    b: &Resolved,
    secrets: &Secrets,
) -> Option<Error> {
    let compared = COMPARED.iter().find(|c| (c.differ)(a, b))?;
    let setting = a
        .paths
        .get(compared.key)
        .or_else(|| b.paths.get(compared.key))
        .cloned()
        .unwrap_or_else(|| compared.key.to_owned());
    let reason = match compared.shown {
        Some(shown) => secrets.mask(&format!(
            "Redisson 3.x and 4.x read it differently ({} reads {}, {} reads {}); the crate \
             cannot follow both: write it so that both read it alike (a number without a \
             leading 0, a quoted text, no alias)",
            a_version.name(),
            shown(a),
            b_version.name(),
            shown(b)
        )),
        None => "Redisson 3.x and 4.x read this password differently (an alias, which 3.x \
                 reads as its name; a %-escape in an address, which only 4.x decodes); the \
                 crate cannot follow both"
            .to_owned(),
    };
    Some(file_error(RedissonFileError::Unsupported, setting, reason))
}

fn sentinel_username(r: &Resolved) -> Option<&Option<String>> {
    r.sentinel.as_ref().map(|s| &s.0)
}

fn sentinel_password(r: &Resolved) -> Option<&String> {
    r.sentinel.as_ref().map(|s| &s.1)
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

/// Two settings that only one version may have: they differ when both have them.
fn both_differ(x: Option<Duration>, y: Option<Duration>) -> bool {
    matches!((x, y), (Some(x), Some(y)) if x != y)
}
