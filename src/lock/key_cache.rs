//! [`KeyCache`]: one lock handle's keys and owner field as ready-made script values,
//! shared by the handle's clones.
//!
//! A script call carries its keys and arguments as [`Value`]s that fred takes by value.
//! Formatting a key (`redisson_lock__channel:{N}`, a fair lock's queue) or an owner field
//! and copying it into a fresh value on every call cost an allocation or two each, per
//! call. Here each is built once per handle, made shared (see [`shared`]), and every call
//! clones it by reference count. The name itself is copied per call instead: it is short
//! (one small allocation, no formatting), and a handle kept as long as its hold then
//! carries no second copy of it.
//!
//! Invariants: a cached value is exactly what the kind would format for this handle (the
//! same name, the same owner); the owner field is cached for the last owner asked, and
//! rebuilt when another owner uses the handle.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use fred::bytes_utils::Str;
use fred::prelude::Value;

use crate::lock::holds::OwnerField;
use crate::names::owner::LockOwner;

/// What a handle's clones share: Redisson's `internalLockLeaseTime` and the ready-made
/// keys, in one allocation per handle.
#[derive(Debug)]
pub(crate) struct HandleShared {
    /// The lease a partial unlock re-arms (see `handle.rs`).
    pub(crate) internal_lease_ms: AtomicU64,
    pub(crate) keys: KeyCache,
}

impl HandleShared {
    /// `given`: the name as the application gave it, when a name mapper changed it.
    pub(crate) fn new(watchdog_ms: u64, given: Option<Arc<str>>) -> HandleShared {
        let keys = KeyCache::default();
        if given.is_some() {
            let _ = keys.rare.set(Box::new(RareKeys {
                given,
                ..RareKeys::default()
            }));
        }
        HandleShared {
            internal_lease_ms: AtomicU64::new(watchdog_ms),
            keys,
        }
    }
}

/// See the module docs. The strings are kept as [`Str`] (half a [`Value`]'s size: a
/// handle lives as long as its user keeps it, and a client may keep many) and wrapped into
/// a `Value` per call, which copies no bytes.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    channel: OnceLock<Str>,
    /// What only some handles use, made on first use: most handles never need it, and a
    /// held lock's handle is kept as long as the hold.
    rare: OnceLock<Box<RareKeys>>,
    /// The last owner asked, and its field as a hold of it (what the watchdog renews):
    /// every hold of that owner through this handle shares it.
    field: Mutex<Option<(LockOwner, Arc<OwnerField>)>>,
}

/// The names and keys only some handles use.
#[derive(Debug, Default)]
struct RareKeys {
    /// The name as given, when a name mapper changed it (set when the handle is made).
    given: Option<Arc<str>>,
    /// The mark of local lines (`redisson_lock__channel:{N}:local_line`): contended locks.
    marker: OnceLock<Str>,
    /// A kind's own keys (the fair lock's queue and deadline set).
    kind_keys: OnceLock<Box<[Str]>>,
}

/// A string made from `text` whose clones share its buffer: the first clone of a string
/// made from a `String` turns its buffer into a shared one (one allocation, once); later
/// clones only count a reference. The buffer is cut to the text first.
pub(crate) fn shared(mut text: String) -> Str {
    text.shrink_to_fit();
    let value = Str::from(text);
    drop(value.clone());
    value
}

impl KeyCache {
    /// The lock's name `N`, copied per call: a name is short, and a held lock's handle
    /// keeps no second copy of it.
    pub(crate) fn name(&self, name: &Arc<str>) -> Value {
        Value::String(Str::from(&**name))
    }

    /// The name as given, when a name mapper changed it.
    pub(crate) fn given(&self) -> Option<&Arc<str>> {
        self.rare.get().and_then(|rare| rare.given.as_ref())
    }

    fn rare(&self) -> &RareKeys {
        self.rare.get_or_init(Box::default)
    }

    /// The lock's channel (built by `channel` the first time).
    pub(crate) fn channel(&self, channel: impl FnOnce() -> String) -> Value {
        Value::String(self.channel.get_or_init(|| shared(channel())).clone())
    }

    /// The mark of local lines (built by `marker` the first time).
    pub(crate) fn marker(&self, marker: impl FnOnce() -> String) -> Value {
        Value::String(self.rare().marker.get_or_init(|| shared(marker())).clone())
    }

    /// The kind's own keys (built by `keys` the first time), in the kind's order.
    pub(crate) fn kind_keys(&self, keys: impl FnOnce() -> Vec<String>) -> &[Str] {
        self.rare()
            .kind_keys
            .get_or_init(|| keys().into_iter().map(shared).collect())
    }

    /// `owner`'s field `<client-id>:<owner>` (built by `field` when the owner changed).
    pub(crate) fn field(&self, owner: LockOwner, field: impl FnOnce() -> String) -> Value {
        Value::String(self.field_str(owner, field))
    }

    /// [`KeyCache::field`] as a shared string.
    pub(crate) fn field_str(&self, owner: LockOwner, field: impl FnOnce() -> String) -> Str {
        self.field_held(owner, field).0.clone()
    }

    /// [`KeyCache::field`] as a hold of it (an [`OwnerField`], shared by every hold of
    /// `owner` through this handle).
    pub(crate) fn field_held(
        &self,
        owner: LockOwner,
        field: impl FnOnce() -> String,
    ) -> Arc<OwnerField> {
        // Each critical section is one read or one write: a poisoned lock is consistent.
        let mut cached = self.field.lock().unwrap_or_else(|p| p.into_inner());
        match cached.as_ref() {
            Some((cached_owner, held)) if *cached_owner == owner => held.clone(),
            _ => {
                let held = Arc::new(OwnerField(shared(field())));
                *cached = Some((owner, held.clone()));
                held
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_built_once_and_per_owner() {
        let cache = KeyCache::default();
        let given: Arc<str> = Arc::from("orders");
        let name = cache.name(&given);
        assert_eq!(name.as_str().as_deref(), Some("orders"));
        let (a, b) = (LockOwner::from_raw(1), LockOwner::from_raw(2));
        assert_eq!(
            cache.field(a, || "c:1".to_owned()).as_str().as_deref(),
            Some("c:1")
        );
        assert_eq!(
            cache.field(b, || "c:2".to_owned()).as_str().as_deref(),
            Some("c:2")
        );
        // Another owner rebuilt the field: the first owner gets its own again.
        assert_eq!(
            cache.field(a, || "c:1".to_owned()).as_str().as_deref(),
            Some("c:1")
        );
        let keys = cache.kind_keys(|| vec!["q".to_owned(), "t".to_owned()]);
        assert_eq!(keys.len(), 2);
        assert_eq!(&*keys[1], "t");
    }
}
