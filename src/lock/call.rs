//! [`Target`]: the lock and owner a script call is for, with the handle's ready-made
//! keys. A kind builds a [`ScriptCall`] from it, which the engine sends.

use fred::prelude::Value;

use super::key_cache::KeyCache;
pub(crate) use crate::connection::scripts::ScriptCall;
use crate::engine::Engine;
use crate::names::owner::LockOwner;

/// The lock and owner a script call is for.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) context: &'a Engine,
    /// The name as stored in Redis (protocol `N`): keys and channels derive from it.
    pub(crate) name: &'a str,
    /// The same, as the handle keeps it.
    pub(crate) name_arc: &'a std::sync::Arc<str>,
    /// The name as given, before the name mapper (equal to `name` without one).
    pub(crate) given: &'a str,
    pub(crate) owner: LockOwner,
    /// The handle's ready-made keys and owner field.
    pub(crate) keys: &'a KeyCache,
}

impl Target<'_> {
    /// `<client-id>:<owner>`.
    pub(crate) fn owner_field(&self) -> String {
        crate::names::owner_field(&self.context.id, self.owner)
    }

    /// `N` as a ready-made value.
    pub(crate) fn name_value(&self) -> Value {
        self.keys.name(self.name_arc)
    }

    /// `<client-id>:<owner>` as a ready-made value.
    pub(crate) fn owner_value(&self) -> Value {
        self.keys.field(self.owner, || self.owner_field())
    }

    /// `<client-id>:<owner>` as a ready-made string.
    pub(crate) fn owner_str(&self) -> fred::bytes_utils::Str {
        self.keys.field_str(self.owner, || self.owner_field())
    }

    /// `<client-id>:<owner>` as a hold (what the watchdog renews), shared by the owner's
    /// holds through this handle.
    pub(crate) fn owner_held(&self) -> std::sync::Arc<crate::lock::holds::OwnerField> {
        self.keys.field_held(self.owner, || self.owner_field())
    }

    /// `redisson_lock__channel:{N}` as a ready-made value.
    pub(crate) fn channel_value(&self) -> Value {
        self.keys.channel(|| crate::names::lock_channel(self.name))
    }

    /// The mark of local lines (see [`crate::names::line_marker`]).
    pub(crate) fn marker_value(&self) -> Value {
        self.keys.marker(|| crate::names::line_marker(self.name))
    }

    /// `"PUBLISH"` or `"SPUBLISH"`.
    pub(crate) fn publish(&self) -> Value {
        Value::from_static_str(self.context.publish_command)
    }

    /// The unlock latch's time to live, in ms, as the release scripts take it.
    pub(crate) fn latch_ttl(&self) -> Value {
        Value::from(
            self.context
                .config
                .settings
                .unlock_latch_ttl
                .as_millis()
                .max(1) as i64,
        )
    }
}
