//! What the synchronizers ([`Semaphore`](crate::Semaphore),
//! [`PermitExpirableSemaphore`](crate::PermitExpirableSemaphore),
//! [`CountDownLatch`](crate::CountDownLatch)) hand out: a semaphore's permits held by
//! this process ([`SemaphorePermits`]), a permit of a permit-expirable semaphore
//! ([`Permit`]) and its id ([`PermitId`], [`PermitIdError`]).
//!
//! ```
//! use redisson_lock::synchronizers::PermitId;
//!
//! let id: PermitId = "2d6f1b0c4e7a9f3e8b5d1c2a3f4e5d6c".parse()?;
//! assert_eq!(id.to_string(), "2d6f1b0c4e7a9f3e8b5d1c2a3f4e5d6c");
//! # Ok::<(), redisson_lock::synchronizers::PermitIdError>(())
//! ```
//
// Inside the crate:
// Redisson's synchronizers, wire-compatible: a semaphore (`RSemaphore`), a semaphore whose
// permits expire (`RPermitExpirableSemaphore`) and a count-down latch (`RCountDownLatch`).
// The contract is `docs/protocol.md`, sections 19 to 26 (keys, channels, the meaning of
// each published number, each script, and where the crate differs from Redisson).
//
// * [`semaphore`]: `Semaphore`, permits without owners in a string key;
// * [`permit_expirable`]: `PermitExpirableSemaphore`, permits with ids and leases in a
//   sorted set beside the same string key;
// * [`latch`]: `CountDownLatch`, a count that opens its waiters at zero;
// * [`expiry`]: the expiry and existence of their keys (Redisson's `RExpirable`), one
//   script for an object of several keys.
//
// What they use: the client's connection and scripts (`connection/`), its pub/sub
// registry with each channel's decoder (`engine/wait/`: [`crate::engine::wait::messages`]), the hold
// machinery for a watchdog-kept permit (`engine/hold/`, through [`crate::engine::hold::held::Held`]),
// and the key names (`names/`). Nothing here touches a lock's keys.

pub(crate) mod expiry;
pub(crate) mod latch;
pub(crate) mod permit_expirable;
pub(crate) mod semaphore;

pub use expiry::{Expiration, ExpireTime};
pub use permit_expirable::{Permit, PermitId, PermitIdError};
pub use semaphore::SemaphorePermits;
