//! Distributed reentrant locks on Redis, wire-compatible with Java Redisson's `RLock`.
//!
//! A Rust service using this crate and a Java service using Redisson can contend for the
//! same lock name on the same Redis and see one lock: the same hash key and field
//! (`<client-uuid>:<owner-id>`), the same Lua semantics, the same pub/sub channel and
//! message, the same watchdog timing.
//!
//! * [`Client`]: a connection, like a `RedissonClient`; hands out locks.
//! * [`RLock`]: the reentrant lock (`lock`, `try_lock_with_lease`, `unlock`, ...).
//! * [`LockGuard`]: a hold that unlocks on drop and tells you when the lock is lost.
//! * [`LockOwner`]: who holds a lock: the current task, thread, or an explicit id.
//! * [`Semaphore`]: Redisson's `RSemaphore` (`Client::get_semaphore`), permits shared with
//!   Java apps, and its [`SemaphorePermits`] guard.
//! * [`Config`]: where Redis is, and Redisson's lock settings (a [`NameMapper`] among them).
//! * [`Error`]: everything that can go wrong.
//! * [`codec`]: the bytes Java Redisson's codecs write for a map key or set value
//!   ([`JavaCodec`]), and [`EntryObjectName`], the names of a map key's lock, semaphore and
//!   latch (`RMap#getLock(key)`, ...).
//! * [`EntryObjects`] ([`Client::map`], [`Client::set`]): those objects as handles, Java's
//!   `map.getLock(key)` in Rust.
//! * [`fencing`]: fencing tokens on the resource side: [`FencedWriter`] for fenced writes to
//!   Redis data, [`FencingGate`] for anything else; a write with an older token than the
//!   resource has seen is refused.
//! * `blocking` (feature `blocking`): the same locks for code that is not async, with
//!   the OS thread as the owner, as in Java Redisson.
//!
//! ```no_run
//! use std::time::Duration;
//! use redisson_lock::{Client, Config};
//!
//! # async fn demo() -> redisson_lock::Result<()> {
//! let client = Client::connect(Config::from_url("redis://127.0.0.1:6379")?).await?;
//! let lock = client.get_lock("stock:product_101");
//!
//! lock.lock().await?;                       // held until unlock; the watchdog renews it
//! lock.lock().await?;                       // same task: re-entry, hold count 2
//! lock.unlock().await?;
//! lock.unlock().await?;                     // released; one waiter is woken
//!
//! // Redisson's tryLock(100, 10, SECONDS): wait up to 100 s, then hold for 10 s at most.
//! if lock.try_lock_with_lease(Duration::from_secs(100), Duration::from_secs(10)).await? {
//!     lock.unlock().await?;
//! }
//! client.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! ## Relationship with Redisson
//!
//! What goes over the wire is Redisson's (see `docs/protocol.md` in the repository): the
//! scripts differ in text but not in keys, arguments, replies or effects. What differs is
//! the owner: Redisson uses the Java thread id, this crate the tokio task (see
//! [`LockOwner`]), because a task, not a thread, is what runs your code from one `.await`
//! to the next. Re-entry follows the task; [`RLock::with_owner`] sets an owner explicitly.
//!
//! ## Which method should you use?
//!
//! * Work that must be finished under the lock, of unknown length: [`RLock::acquire`]
//!   (watchdog mode) and race the work against [`LockGuard::lost`].
//! * Work with a known bound, where expiry after a crash must be quick:
//!   [`RLock::try_lock_with_lease`] / [`RLock::acquire_with_lease`].
//! * Code written against Redisson's API: `lock` / `unlock` as in Java.
//!
//! A Redis lock is not a fence: a holder paused longer than its lease (GC, swap, a
//! debugger) can wake up after another holder took the lock. Make writes idempotent or
//! fenced where that matters.
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]
#![deny(rustdoc::broken_intra_doc_links)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub mod blocking;
mod client;
pub mod codec;
pub mod config;
mod connection;
mod engine;
mod entries;
mod error;
pub mod fencing;
mod hold;
pub mod kinds;
mod lock;
pub mod names;
pub mod synchronizers;
mod telemetry;
mod wait;

pub use client::Client;
pub use connection::config::{Config, ConfigBuilder};
pub use entries::EntryObjects;
pub use error::{Error, Result};
pub use hold::state::HoldState;
pub use hold::watch::HoldWatch;
pub use lock::{
    Backoff, FairLock, FasterMultiLock, FencedLock, GroupGuard, Lock, LockGuard, LockKind,
    MultiLock, NonReentrantFairLock, NonReentrantLock, RLock, ReadLock, ReadWriteLock, RedLock,
    SpinLock, WriteLock,
};
pub use names::mapper::{NameMapper, PrefixNameMapper};
pub use names::owner::LockOwner;
pub use synchronizers::latch::CountDownLatch;
pub use synchronizers::permit_expirable::PermitExpirableSemaphore;
pub use synchronizers::semaphore::Semaphore;

/// The fred crate this crate is built on, for [`ConfigBuilder::redis_config`] and
/// [`Client::redis`].
pub use fred;

// The crate documentation above links these by their short names.
#[cfg(doc)]
use crate::{
    codec::JavaCodec,
    fencing::{FencedWriter, FencingGate},
    names::EntryObjectName,
    synchronizers::SemaphorePermits,
};

#[cfg(test)]
mod bounds {
    //! Every public type and every public future is `Send`, and handles are `Sync`.
    use super::*;
    use crate::synchronizers::{Permit, PermitId};

    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>() {}

    #[allow(dead_code, clippy::let_underscore_future)]
    fn futures_are_send(client: Client, lock: RLock, guard: LockGuard) {
        sync::<Client>();
        sync::<RLock>();
        sync::<LockGuard>();
        sync::<Error>();
        send(&Client::connect(Config::from_url("redis://x").unwrap()));
        send(&client.shutdown());
        send(&lock.lock());
        send(&lock.lock_with_lease(std::time::Duration::from_secs(1)));
        send(&lock.try_lock());
        send(&lock.try_lock_for(std::time::Duration::from_secs(1)));
        send(&lock.try_lock_with_lease(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(1),
        ));
        send(&lock.unlock());
        send(&lock.force_unlock());
        send(&lock.is_locked());
        send(&lock.hold_count());
        send(&lock.acquire());
        send(&guard.lost());
        send(&guard.held_again());
        send(&guard.unlock());
    }

    #[allow(dead_code, clippy::let_underscore_future)]
    fn hold_watch_is_send_sync_and_static(watch: HoldWatch) {
        fn owned<T: Clone + Send + Sync + 'static>(_: &T) {}
        owned(&watch);
        send(&watch.at_risk());
        send(&watch.held_again());
        send(&watch.lost());
    }

    #[allow(dead_code, clippy::let_underscore_future)]
    fn latch_futures_are_send(latch: CountDownLatch) {
        sync::<CountDownLatch>();
        send(&latch.try_set_count(1));
        send(&latch.count_down());
        send(&latch.get_count());
        send(&latch.delete());
        send(&latch.is_exists());
        send(&latch.wait());
        send(&latch.wait_for(std::time::Duration::from_secs(1)));
        send(&latch.count_down_and_wait());
        send(&latch.count_down_and_wait_for(std::time::Duration::from_secs(1)));
    }

    #[allow(dead_code, clippy::let_underscore_future)]
    fn permit_futures_are_send(sem: PermitExpirableSemaphore, permit: Permit, id: PermitId) {
        sync::<PermitExpirableSemaphore>();
        sync::<Permit>();
        send(&sem.acquire(None));
        send(&sem.try_acquire_many(2, std::time::Duration::ZERO, None));
        send(&sem.acquire_kept());
        send(&sem.try_release(id));
        send(&sem.available_permits());
        send(&sem.expire(std::time::Duration::from_secs(1)));
        send(&sem.clear_expire());
        send(&sem.remain_time_to_live());
        send(&permit.at_risk());
        send(&permit.release());
    }
}
