//! [`Held`]: what one registered hold is in Redis, as the machinery that keeps it sees
//! it. The registry, the watchdog's batches and the sentry's checks know holds only
//! through it, so a new kind of hold (a semaphore's permit, a sorted-set member whose lease
//! is its score) plugs in by implementing it, without changing what they do for locks.
//!
//! A hold says:
//! * which batched script renews it (a watchdog hold) and which checks it without
//!   renewing it (a lease hold after a fault): [`BatchScript`]s, statics that holds of
//!   one kind share, so that one call serves many holds (per hash slot on a cluster);
//! * its keys and arguments in either call ([`Held::push`]);
//! * how another acquisition of the same (name, owner) joins it, how one leaves it, and
//!   whether a force release ends it: all holds of one (name, owner) are alike for most
//!   kinds, while a faster multi-lock's acquisitions each add their own values.
//!
//! On shutdown nothing is sent for a hold: it expires in Redis by its lease, as Redisson's
//! do, and its signal says `Lost`.

use std::any::Any;
use std::fmt::Debug;
use std::sync::{Arc, LazyLock};

use fred::prelude::Value;

use crate::connection::scripts::Script;

/// Which call a hold's part is pushed into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// The watchdog's renewal (which also confirms the hold).
    Renew,
    /// A read-only check after a fault (a lease hold, which nobody re-arms).
    Check,
}

/// A batched script: one call for many holds of one kind. Its `KEYS` are every hold's
/// keys in order; its `ARGV` the [`BatchScript::prelude`] and then every hold's
/// arguments in order; its reply one integer flag per hold.
#[derive(Debug)]
pub(crate) struct BatchScript {
    /// Orders and groups batches (holds with the same name share calls).
    pub(crate) name: &'static str,
    pub(crate) script: LazyLock<Script>,
    /// The arguments before the holds' own: given the lease in ms.
    pub(crate) prelude: fn(lease: &Value, args: &mut Vec<Value>),
    /// One hold's flag: `None` when the hold is gone, else the lease in ms it confirms
    /// from the call's send time (given the lease the call renewed).
    pub(crate) confirms: fn(flag: i64, lease_ms: u64) -> Option<u64>,
}

/// See the module docs.
pub(crate) trait Held: Send + Sync + Debug + Any {
    /// The batched script that renews it (a watchdog hold).
    fn renewal(&self) -> &'static BatchScript;

    /// The batched script that checks it without renewing it (a lease hold).
    fn check(&self) -> &'static BatchScript;

    /// Its keys and arguments in the call of `purpose`; `key` is the hold's name as a
    /// value.
    fn push(&self, purpose: Purpose, key: &Value, keys: &mut Vec<Value>, args: &mut Vec<Value>);

    /// The key Redis tracks for this hold (`CLIENT TRACKING`), given the hold's name: the
    /// key an invalidation names when somebody else changes it. The name itself (a lock
    /// hash) unless the hold lives in another key.
    fn tracked_key<'a>(&'a self, name: &'a str) -> &'a [u8] {
        name.as_bytes()
    }

    /// Whether another acquisition by the same (name, owner) can differ from this one
    /// (then [`Held::join`] is asked); `false` for holds that are all alike, so that a
    /// re-entry builds nothing.
    fn joins(&self) -> bool {
        false
    }

    /// What the entry holds once `other`, another acquisition by the same (name, owner),
    /// joined it; `None`: they are alike and the entry stays as it is.
    fn join(&self, _other: &dyn Held) -> Option<Arc<dyn Held>> {
        None
    }

    /// What is left once `part`, one acquisition joined earlier, leaves: `Some(None)`
    /// when nothing is left, `Some(Some(rest))` when the rest differs, `None` when the
    /// parts are alike (the entry counts its holds, nothing else changes).
    #[allow(clippy::option_option)]
    fn leave(&self, _part: &dyn Held) -> Option<Option<Arc<dyn Held>>> {
        None
    }

    /// What a force release described by `forced` (of the same name, by any owner of this
    /// client) leaves of this hold, and how many of its acquisitions it ended.
    fn forced(&self, forced: &dyn Held) -> Forced {
        if std::ptr::eq(self.renewal(), forced.renewal()) {
            Forced::Ended
        } else {
            Forced::Kept
        }
    }

    /// For [`Held::join`], [`Held::leave`] and [`Held::forced`] of one kind.
    fn as_any(&self) -> &dyn Any;
}

/// See [`Held::forced`].
#[derive(Debug)]
pub(crate) enum Forced {
    /// Untouched (another half of a read-write lock, other values of a group).
    Kept,
    /// Ended whole.
    Ended,
    /// `ended` of its acquisitions ended; `rest` (if any) is still held.
    Shrunk {
        rest: Option<Arc<dyn Held>>,
        ended: u32,
    },
}
