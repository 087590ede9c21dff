#![doc = include_str!("../README.md")]
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
mod error;
mod lock;
pub mod names;
pub mod synchronizers;

pub use client::Client;
pub use client::entries::EntryObjects;
pub use client::fencing;
pub use config::{Config, ConfigBuilder};
pub use engine::hold::state::HoldState;
pub use engine::hold::watch::HoldWatch;
pub use error::{Error, Result};
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

/// The type parameters behind the lock handles: each lock kind (the `K` of [`Lock<K>`],
/// named at the crate root by its alias such as [`RLock`] or [`FairLock`]), each group
/// rule (the `R` of [`LockGroup<R>`](kinds::LockGroup), named by [`MultiLock`] and
/// [`RedLock`]), and the group types themselves.
///
/// Most code names the aliases and never needs this module; it is for code generic over
/// the kind, and for the guard aliases of a group.
///
/// ```
/// use redisson_lock::kinds::{Fair, Reentrant};
/// use redisson_lock::{Lock, LockKind};
///
/// fn kind_of<K: LockKind>(_: &Lock<K>) -> &'static str {
///     std::any::type_name::<K>()
/// }
/// # fn use_it(rlock: Lock<Reentrant>, fair: Lock<Fair>) {
/// #     let _ = (kind_of(&rlock), kind_of(&fair));
/// # }
/// ```
pub mod kinds {
    pub use crate::lock::{
        AllMembers, AnyLock, Fair, FasterMulti, Fenced, GroupRule, LockGroup, Majority,
        MultiLockGuard, NonReentrant, NonReentrantFair, Read, RedLockGuard, Reentrant, Spin, Write,
    };
}

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
