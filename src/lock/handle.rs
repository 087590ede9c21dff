//! [`Lock<K>`](super::Lock), the handle every kind shares: what it holds (the engine, the
//! mapped name, the kind, the owner, the state its clones share) and how it is made. Its
//! public methods, Redisson's `RLock` API, are in `rlock_methods.rs`; the engine's jobs
//! (`acquiring.rs`, `releasing.rs`, ...) are `impl` blocks of their own on it, so each of
//! them imports this file, and this file imports none of them.
//!
//! Invariants: a handle is a cheap `Clone` and does no I/O until used; its clones share
//! `internal_lease_ms`, the lease a partial unlock re-arms.

use std::sync::Arc;

use super::key_cache::HandleShared;
use super::kind::LockKind;
use super::reentrant::Reentrant;
use crate::engine::Engine;
use crate::names::mapper::MappedName;
use crate::names::owner::LockOwner;

/// A distributed lock of kind `K`, wire-compatible with the Redisson lock of that kind.
///
/// Every kind has the same methods, named as Redisson's `RLock` in Rust's casing; a kind
/// changes what is written to Redis, not how you call it. [`RLock`](super::RLock) (`Lock<Reentrant>`)
/// is the reentrant lock; the client hands out the other kinds.
///
/// The lock is the Redis hash `name`: field `<client-id>:<owner>` counts the holds of one
/// owner (see [`LockOwner`] for what an owner is), and the key's TTL is the lease. Taking
/// it again as the same owner is a re-entry: the count goes up, and as many unlocks are
/// needed to release it. Java Redisson clients on the same Redis see the same lock.
///
/// `Lock` is a cheap `Clone` handle and does no I/O until used. Methods come in two
/// styles: Redisson's (`lock` / `unlock`) and guards (`acquire` returns a
/// [`LockGuard`](crate::LockGuard) that unlocks on drop and tells you when the lock is lost).
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use std::time::Duration;
/// let lock = client.get_lock("stock:product_101");
///
/// lock.lock().await?;                       // held until unlock; the watchdog renews it
/// lock.lock().await?;                       // re-entry: hold count 2
/// assert_eq!(lock.hold_count().await?, 2);
/// lock.unlock().await?;
/// lock.unlock().await?;                     // released; one waiter is woken
///
/// if lock.try_lock_with_lease(Duration::from_secs(1), Duration::from_secs(10)).await? {
///     lock.unlock().await?;
/// }
/// # Ok(()) }
/// ```
pub struct Lock<K: LockKind = Reentrant> {
    pub(super) context: Arc<Engine>,
    /// The name as stored in Redis (protocol `N`, Redisson's `getRawName()`): the given
    /// name through the client's name mapper. Every key and channel derives from it.
    pub(super) name: Arc<str>,
    pub(super) kind: K,
    pub(super) owner: Option<LockOwner>,
    /// Shared by the handle's clones: Redisson's `internalLockLeaseTime` (the lease a
    /// partial unlock re-arms: the lease of the last lease-mode acquisition through this
    /// handle, reset to the watchdog timeout by a full unlock), and the handle's keys and
    /// owner field as ready-made script values, and the name as given when a name mapper
    /// changed it.
    pub(super) shared: Arc<super::key_cache::HandleShared>,
}

impl<K: LockKind> Clone for Lock<K> {
    fn clone(&self) -> Self {
        Lock {
            context: self.context.clone(),
            name: self.name.clone(),
            kind: self.kind.clone(),
            owner: self.owner,
            shared: self.shared.clone(),
        }
    }
}

impl<K: LockKind> std::fmt::Debug for Lock<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("kind", &K::NAME)
            .field("name", &self.name())
            .field("raw_name", &self.name)
            .field("owner", &self.owner)
            .field("client_id", &self.context.id)
            .finish()
    }
}

impl<K: LockKind> Lock<K> {
    /// A handle on lock `name` (as the application gives it) of kind `kind`; no I/O.
    ///
    /// This is where the client's name mapper is applied, once per handle, as Redisson's
    /// `RedissonObject` constructor does: every key and channel derives from the mapped
    /// name.
    pub(crate) fn new(context: Arc<Engine>, name: String, kind: K) -> Lock<K> {
        let names = MappedName::new(context.config.name_mapper(), name);
        Lock::named(context, names, kind)
    }

    /// A handle on the lock with these (already mapped) names; no I/O.
    pub(crate) fn named(context: Arc<Engine>, names: MappedName, kind: K) -> Lock<K> {
        let watchdog_ms = context.watchdog_ms;
        Lock {
            context,
            name: names.raw,
            kind,
            owner: None,
            shared: Arc::new(HandleShared::new(watchdog_ms, names.given)),
        }
    }
}
