//! How the blocking API is derived from the async one: [`forward!`] writes each blocking
//! method of a lock from its signature and documentation alone, and [`forward_handles!`]
//! each `get_*` of the client. What a method does is the async method's business; what
//! running it from a plain thread takes is written once, in `Lock::run` and
//! [`Shared::run`](super::runtime::Shared::run).

use std::time::Duration;

use super::lock::Lock;
use crate::lock::LockKind;
use crate::names::owner::LockOwner;

/// An async lock method's answer as its blocking twin returns it: the same value, except
/// that an async guard becomes a blocking [`LockGuard`](super::LockGuard) of the handle
/// and owner that took it (`guards.rs`).
pub(super) trait IntoBlocking<K: LockKind> {
    /// What the blocking method returns.
    type Blocking;

    /// Turns the answer of a call made by `lock` as `owner` into the blocking one.
    fn into_blocking(self, lock: &Lock<K>, owner: LockOwner) -> Self::Blocking;
}

/// Plain answers are the same in both APIs.
macro_rules! same_answer {
    ($($answer:ty),* $(,)?) => {$(
        impl<K: LockKind> IntoBlocking<K> for $answer {
            type Blocking = $answer;

            fn into_blocking(self, _lock: &Lock<K>, _owner: LockOwner) -> $answer {
                self
            }
        }
    )*};
}

same_answer!((), bool, u32, u64, Option<u64>, Option<Duration>);

/// Blocking lock methods that run the async lock's method of the same name (or the one
/// named after `=>`) with the same arguments: on the client's runtime, as this handle's
/// owner (the calling thread unless `with_owner` set one), the caller blocked until done.
/// Each entry is a signature ending in `;`, with its attributes and documentation:
///
/// ```text
/// forward! {
///     /// Docs, with an example.
///     pub fn try_lock_for(&self, wait: Duration) -> Result<bool>;
///     /// Docs, with an example.
///     pub fn is_held_by_current_thread(&self) -> Result<bool> => is_held_by_current_task;
/// }
/// ```
///
/// The return type must be the async method's, turned blocking by [`IntoBlocking`].
macro_rules! forward {
    (@call $lock:ident, $name:ident, $args:tt) => {
        $lock.$name $args
    };
    (@call $lock:ident, $name:ident => $target:ident, $args:tt) => {
        $lock.$target $args
    };
    ($(
        $(#[$meta:meta])*
        pub fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty
            $(=> $target:ident)?;
    )*) => {$(
        $(#[$meta])*
        pub fn $name(&self $(, $arg: $ty)*) -> $ret {
            self.run(|lock| async move {
                forward!(@call lock, $name $(=> $target)?, ($($arg),*)).await
            })
        }
    )*};
}

/// The blocking client's `get_*` methods: the async client's method of the same name,
/// whose handle is wrapped as a blocking [`Lock`] of this client.
macro_rules! forward_handles {
    ($(
        $(#[$meta:meta])*
        pub fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty;
    )*) => {$(
        $(#[$meta])*
        pub fn $name(&self $(, $arg: $ty)*) -> $ret {
            self.handle(self.shared.client.$name($($arg),*))
        }
    )*};
}

pub(super) use forward;
pub(super) use forward_handles;
