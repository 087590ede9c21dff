//! A watchdog-kept permit as the hold machinery keeps it ([`Held`]): a member of
//! `{N}:timeout` whose score is the end of its lease. The client's watchdog renews it in
//! the same rounds as the locks (batched, per hash slot on a cluster) by moving its score
//! to the client's now + the watchdog timeout, as `update_lease_time` would; after a
//! fault the sentry checks it with the same script, or with a read-only check for a
//! permit with a lease of its own.

use std::any::Any;
use std::sync::LazyLock;

use fred::prelude::Value;

use crate::connection::scripts::Script;
use crate::connection::scripts::now_ms;
use crate::engine::hold::held::{BatchScript, Held, Purpose};

/// `lua/pes_renew.lua`: the watchdog's batched renewal of permits.
pub(crate) const PES_RENEW: &str = include_str!("../../../lua/pes_renew.lua");
/// `lua/pes_check.lua`: whether permits are still held, after a fault.
pub(crate) const PES_CHECK: &str = include_str!("../../../lua/pes_check.lua");

/// The renewal: ARGV the lease and the client's now, then each permit's id.
static RENEW_PERMITS: BatchScript = BatchScript {
    name: "permits",
    script: LazyLock::new(|| Script::new(PES_RENEW)),
    prelude: |lease, args| {
        args.push(lease.clone());
        args.push(Value::from(now_ms()));
    },
    confirms: |flag, lease_ms| (flag == 1).then_some(lease_ms),
};

/// The check: ARGV the client's now, then each permit's id; the reply is the ms left,
/// -1 for no lease, -2 when gone.
static CHECK_PERMITS: BatchScript = BatchScript {
    name: "permit check",
    script: LazyLock::new(|| Script::new(PES_CHECK)),
    prelude: |_, args| args.push(Value::from(now_ms())),
    confirms: |flag, _| match flag {
        -2 => None,
        -1 => Some(u64::MAX / 4),
        left => Some(left.max(0) as u64),
    },
};

/// One permit: its sorted set and its id (both ready-made values).
#[derive(Debug)]
pub(crate) struct PermitHold {
    pub(crate) timeouts: Value,
    pub(crate) id: Value,
}

impl Held for PermitHold {
    fn renewal(&self) -> &'static BatchScript {
        &RENEW_PERMITS
    }

    fn check(&self) -> &'static BatchScript {
        &CHECK_PERMITS
    }

    fn tracked_key<'a>(&'a self, _: &'a str) -> &'a [u8] {
        self.timeouts.as_bytes().unwrap_or_default()
    }

    fn push(&self, _: Purpose, _: &Value, keys: &mut Vec<Value>, args: &mut Vec<Value>) {
        keys.push(self.timeouts.clone());
        args.push(self.id.clone());
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::time::Instant;

    use super::*;
    use crate::engine::hold::registry::HoldRegistry;
    use crate::lock::holds::OwnerField;
    use crate::names::owner::LockOwner;

    #[tokio::test]
    async fn a_lock_force_release_of_the_same_name_leaves_permits_alone() {
        let registry = HoldRegistry::new(30_000, None);
        let permit = || {
            Arc::new(PermitHold {
                timeouts: Value::from("{sem}:timeout"),
                id: Value::from("p1"),
            }) as Arc<dyn Held>
        };
        registry.add_hold(
            (Arc::from("sem"), LockOwner::from_raw(7), false),
            None,
            Instant::now(),
            permit,
        );
        registry.remove_lock("sem", &OwnerField(fred::bytes_utils::Str::from("c:1")));
        assert_eq!(registry.renewed_len(), 1);
        let mut keys = Vec::new();
        let mut args = Vec::new();
        (RENEW_PERMITS.prelude)(&Value::from(30_000), &mut args);
        permit().push(Purpose::Renew, &Value::from("sem"), &mut keys, &mut args);
        assert_eq!(keys, vec![Value::from("{sem}:timeout")]);
        assert_eq!(args.len(), 3);
        assert_eq!((CHECK_PERMITS.confirms)(-2, 30_000), None);
        assert_eq!((CHECK_PERMITS.confirms)(1_200, 30_000), Some(1_200));
    }
}
