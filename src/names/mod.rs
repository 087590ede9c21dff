//! The names in Redis of a lock, and of the objects locked per map key: for tools that
//! read Redis beside the crate (an inspector, a dashboard) and for code that builds its own
//! names.
//!
//! * [`LockKeys`]: every key and channel of a lock name, as Redisson names them;
//! * [`EntryObjectName`], [`EntryObject`]: the names of a map key's (or set value's) lock,
//!   semaphore and latch (Redisson's `RMap#getLock(key)` and kin);
//! * [`EntryKey`], [`KeyBytes`]: a map key or set value, as the bytes its codec writes.
//!
//! ```
//! use redisson_lock::names::LockKeys;
//!
//! let keys = LockKeys::new("orders");
//! assert_eq!(keys.channel(), "redisson_lock__channel:{orders}");
//! ```
//
// Inside the crate:
// What things are called in Redis: where a key name or a channel name is built.
//
// * [`formats`]: every key, channel and field format Redisson uses (the lock hash `N`,
//   `redisson_lock__channel:{N}`, the fair queue, the read-hold keys, the token, the
//   unlock latch, the owner field `<client-id>:<owner>`);
// * [`hash`]: Redisson's name hash (HighwayHash-128 in Base64) of a value's bytes;
// * [`keys`]: [`LockKeys`](crate::names::LockKeys), the same names for tools and users;
// * [`map_entry`]: [`EntryObjectName`](crate::names::EntryObjectName), the names of a map key's
//   (or set value's) lock, semaphore and latch;
// * [`mapper`]: the name mapper ([`NameMapper`](crate::NameMapper)), applied once per
//   handle;
// * [`owner`]: [`LockOwner`](crate::LockOwner), who owns a hold.
//
// Who uses it: everything that names a key (the lock kinds, the inspector). Nothing here
// talks to Redis.

pub(crate) mod formats;
pub(crate) mod hash;
pub(crate) mod keys;
pub(crate) mod map_entry;
pub(crate) mod mapper;
pub(crate) mod owner;

pub(crate) use formats::*;

pub use crate::client::entries::{EntryKey, KeyBytes};
pub use keys::LockKeys;
pub use map_entry::{EntryObject, EntryObjectName};
