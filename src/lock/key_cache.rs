//! [`KeyCache`]: one lock handle's keys and owner field as ready-made script values,
//! shared by the handle's clones.
//!
//! A script call carries its keys and arguments as [`Value`]s that fred takes by value.
//! Formatting a key (`redisson_lock__channel:{N}`, a fair lock's queue) and copying it
//! into a fresh value on every call cost an allocation or two each, per call. Here each
//! is built once per handle, made shared (see [`shared`]), and every call clones it by
//! reference count.
//!
//! Invariants: a cached value is exactly what the kind would format for this handle (the
//! same name, the same owner); the owner field is cached for the last owner asked, and
//! rebuilt when another owner uses the handle.

use std::sync::{Mutex, OnceLock};

use fred::prelude::Value;

use crate::owner::LockOwner;

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    name: OnceLock<Value>,
    channel: OnceLock<Value>,
    marker: OnceLock<Value>,
    /// A kind's own keys (the fair lock's queue and deadline set).
    kind_keys: OnceLock<Box<[Value]>>,
    field: Mutex<Option<(LockOwner, Value)>>,
}

/// A value made from `text` whose clones share its buffer: the first clone of a value
/// made from a `String` turns its buffer into a shared one (one allocation, once); later
/// clones only count a reference.
pub(crate) fn shared(text: String) -> Value {
    let value = Value::from(text);
    drop(value.clone());
    value
}

impl KeyCache {
    /// The lock's name `N` (built by `name` the first time).
    pub(crate) fn name(&self, name: impl FnOnce() -> String) -> Value {
        self.name.get_or_init(|| shared(name())).clone()
    }

    /// The lock's channel (built by `channel` the first time).
    pub(crate) fn channel(&self, channel: impl FnOnce() -> String) -> Value {
        self.channel.get_or_init(|| shared(channel())).clone()
    }

    /// The mark of local lines (built by `marker` the first time).
    pub(crate) fn marker(&self, marker: impl FnOnce() -> String) -> Value {
        self.marker.get_or_init(|| shared(marker())).clone()
    }

    /// The kind's own keys (built by `keys` the first time), in the kind's order.
    pub(crate) fn kind_keys(&self, keys: impl FnOnce() -> Vec<String>) -> &[Value] {
        self.kind_keys
            .get_or_init(|| keys().into_iter().map(shared).collect())
    }

    /// `owner`'s field `<client-id>:<owner>` (built by `field` when the owner changed).
    pub(crate) fn field(&self, owner: LockOwner, field: impl FnOnce() -> String) -> Value {
        // Each critical section is one read or one write: a poisoned lock is consistent.
        let mut cached = self.field.lock().unwrap_or_else(|p| p.into_inner());
        match cached.as_ref() {
            Some((cached_owner, value)) if *cached_owner == owner => value.clone(),
            _ => {
                let value = shared(field());
                *cached = Some((owner, value.clone()));
                value
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
        let mut built = 0;
        for _ in 0..3 {
            let name = cache.name(|| {
                built += 1;
                "orders".to_owned()
            });
            assert_eq!(name.as_str().as_deref(), Some("orders"));
        }
        assert_eq!(built, 1);
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
    }
}
