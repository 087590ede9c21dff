//! The type parameters behind the lock handles: each lock kind (the `K` of
//! [`Lock<K>`](crate::Lock), named at the crate root by its alias such as
//! [`RLock`](crate::RLock) or [`FairLock`](crate::FairLock)), each group rule (the `R` of
//! [`LockGroup<R>`], named by [`MultiLock`](crate::MultiLock) and
//! [`RedLock`](crate::RedLock)), and the group types themselves.
//!
//! Most code names the aliases and never needs this module; it is for code generic over
//! the kind, and for the guard aliases of a group.
//!
//! ```
//! use redisson_lock::kinds::{Fair, Reentrant};
//! use redisson_lock::{Lock, LockKind};
//!
//! fn kind_of<K: LockKind>(_: &Lock<K>) -> &'static str {
//!     std::any::type_name::<K>()
//! }
//! # fn use_it(rlock: Lock<Reentrant>, fair: Lock<Fair>) {
//! #     let _ = (kind_of(&rlock), kind_of(&fair));
//! # }
//! ```

pub use crate::lock::{
    AllMembers, AnyLock, Fair, FasterMulti, Fenced, GroupRule, LockGroup, Majority, MultiLockGuard,
    NonReentrant, NonReentrantFair, Read, RedLockGuard, Reentrant, Spin, Write,
};
