//! The lock kinds' holds as the hold machinery keeps them ([`Held`]): an owner field in a
//! lock hash, a read lock's holds, a faster multi-lock's values; and the batched scripts
//! that renew and check them.

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use fred::bytes_utils::Str;
use fred::prelude::Value;

use crate::connection::scripts::Script;
use crate::engine::hold::held::{BatchScript, Forced, Held, Purpose};

/// `lua/lock_renew.lua`: the watchdog's batched renewal of owner fields.
pub(crate) const LOCK_RENEW: &str = include_str!("../../lua/lock_renew.lua");
/// `lua/rw_read_renew.lua`: the watchdog's batched renewal of read holds.
pub(crate) const RW_READ_RENEW: &str = include_str!("../../lua/rw_read_renew.lua");
/// `lua/faster_multi_renew.lua`: the watchdog's batched renewal of faster multi-lock
/// values.
pub(crate) const FASTER_MULTI_RENEW: &str = include_str!("../../lua/faster_multi_renew.lua");
/// `lua/hold_check.lua`: whether lease holds are still in Redis, after a fault.
pub(crate) const HOLD_CHECK: &str = include_str!("../../lua/hold_check.lua");

fn lease_first(lease: &Value, args: &mut Vec<Value>) {
    args.push(lease.clone());
}

/// A renewal's flag: 0 is gone, anything else renewed with the lease.
fn renewed(flag: i64, lease_ms: u64) -> Option<u64> {
    (flag != 0).then_some(lease_ms)
}

static RENEW_FIELDS: BatchScript = BatchScript {
    name: "fields",
    script: LazyLock::new(|| Script::new(LOCK_RENEW)),
    prelude: lease_first,
    confirms: renewed,
};

static RENEW_READ_HOLDS: BatchScript = BatchScript {
    name: "read holds",
    script: LazyLock::new(|| Script::new(RW_READ_RENEW)),
    prelude: lease_first,
    confirms: renewed,
};

static RENEW_VALUES: BatchScript = BatchScript {
    name: "values",
    script: LazyLock::new(|| Script::new(FASTER_MULTI_RENEW)),
    prelude: |lease, args| {
        args.push(lease.clone());
        args.push(Value::from(crate::connection::scripts::now_ms()));
    },
    confirms: renewed,
};

/// `lua/hold_check.lua`: per hold the field that must exist and the owner it must name
/// (empty: any); the reply is the key's PTTL, -1 for none, -2 when gone.
static CHECK_HOLDS: BatchScript = BatchScript {
    name: "check",
    script: LazyLock::new(|| Script::new(HOLD_CHECK)),
    prelude: |_, _| {},
    confirms: |flag, _| match flag {
        -2 => None,
        -1 => Some(u64::MAX / 4),
        ttl => Some(ttl.max(0) as u64),
    },
};

/// An owner field in a lock hash: RLock, fair, fenced, spin, non-reentrant, write locks.
/// Renewed by `PEXPIRE` while the field is there.
#[derive(Debug)]
pub(crate) struct OwnerField(pub(crate) Str);

impl Held for OwnerField {
    fn renewal(&self) -> &'static BatchScript {
        &RENEW_FIELDS
    }

    fn check(&self) -> &'static BatchScript {
        &CHECK_HOLDS
    }

    fn push(&self, purpose: Purpose, key: &Value, keys: &mut Vec<Value>, args: &mut Vec<Value>) {
        keys.push(key.clone());
        args.push(Value::String(self.0.clone()));
        if purpose == Purpose::Check {
            args.push(Value::from_static_str(""));
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A read lock's holds by one owner: each hold's timeout key under `key_prefix`, and the
/// hash unless its TTL is longer already (Redisson 4.4+'s read renewal, which renews only
/// its own holds).
#[derive(Debug)]
pub(crate) struct ReadHolds {
    pub(crate) field: Str,
    pub(crate) key_prefix: Str,
}

impl Held for ReadHolds {
    fn renewal(&self) -> &'static BatchScript {
        &RENEW_READ_HOLDS
    }

    fn check(&self) -> &'static BatchScript {
        &CHECK_HOLDS
    }

    fn push(&self, purpose: Purpose, key: &Value, keys: &mut Vec<Value>, args: &mut Vec<Value>) {
        keys.push(key.clone());
        args.push(Value::String(self.field.clone()));
        match purpose {
            Purpose::Renew => keys.push(Value::String(self.key_prefix.clone())),
            Purpose::Check => args.push(Value::from_static_str("")),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A faster multi-lock's values (field ids) held by owner `field` in the group hash: each
/// acquisition of one (group, owner) adds its value set, and a round renews them all
/// (`lua/faster_multi_renew.lua`).
#[derive(Debug, Clone)]
pub(crate) struct Values {
    pub(crate) field: Str,
    pub(crate) sets: Vec<Arc<[String]>>,
}

impl Values {
    /// One acquisition's values.
    pub(crate) fn new(field: Str, values: Arc<[String]>) -> Values {
        Values {
            field,
            sets: vec![values],
        }
    }

    /// The union of the sets, sorted.
    fn union(&self) -> BTreeSet<&str> {
        self.sets
            .iter()
            .flat_map(|s| s.iter().map(String::as_str))
            .collect()
    }

    fn of(held: &dyn Held) -> Option<&Values> {
        held.as_any().downcast_ref::<Values>()
    }
}

impl Held for Values {
    fn renewal(&self) -> &'static BatchScript {
        &RENEW_VALUES
    }

    fn check(&self) -> &'static BatchScript {
        &CHECK_HOLDS
    }

    fn push(&self, purpose: Purpose, key: &Value, keys: &mut Vec<Value>, args: &mut Vec<Value>) {
        keys.push(key.clone());
        let union = self.union();
        match purpose {
            // Its owner, the number of its values and the values.
            Purpose::Renew => {
                args.push(Value::String(self.field.clone()));
                args.push(Value::from(union.len() as i64));
                args.extend(union.into_iter().map(Value::from));
            }
            // Checked by its first value naming the owner.
            Purpose::Check => match union.first() {
                Some(first) => {
                    args.push(Value::from(*first));
                    args.push(Value::String(self.field.clone()));
                }
                None => {
                    args.push(Value::String(self.field.clone()));
                    args.push(Value::from_static_str(""));
                }
            },
        }
    }

    fn joins(&self) -> bool {
        true
    }

    fn join(&self, other: &dyn Held) -> Option<Arc<dyn Held>> {
        let other = Values::of(other)?;
        let mut joined = self.clone();
        joined.sets.extend(other.sets.iter().cloned());
        Some(Arc::new(joined))
    }

    fn leave(&self, part: &dyn Held) -> Option<Option<Arc<dyn Held>>> {
        let part = Values::of(part)?;
        let mut rest = self.clone();
        for set in &part.sets {
            if let Some(at) = rest.sets.iter().position(|s| **s == **set) {
                rest.sets.swap_remove(at);
            }
        }
        Some((!rest.sets.is_empty()).then(|| Arc::new(rest) as Arc<dyn Held>))
    }

    /// A force release of some values ends the acquisitions that share one of them; the
    /// group's others go on. An RLock's force release of the group's name deletes the
    /// whole hash (protocol §14.3.1), and ends them all.
    fn forced(&self, forced: &dyn Held) -> Forced {
        let Some(forced) = Values::of(forced) else {
            return if std::ptr::eq(forced.renewal(), &RENEW_FIELDS) {
                Forced::Ended
            } else {
                Forced::Kept
            };
        };
        let gone = forced.union();
        let mut rest = self.clone();
        rest.sets
            .retain(|set| !set.iter().any(|v| gone.contains(v.as_str())));
        let ended = (self.sets.len() - rest.sets.len()) as u32;
        Forced::Shrunk {
            rest: (!rest.sets.is_empty()).then(|| Arc::new(rest) as Arc<dyn Held>),
            ended,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
