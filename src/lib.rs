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
mod connection;
mod engine;
mod entries;
mod error;
pub mod fencing;
mod hold;
mod lock;
mod names;
mod synchronizers;
mod telemetry;
mod wait;

pub use client::Client;
pub use codec::{CodecError, JavaCodec, JavaValue, JsonUuids};
pub use connection::config::{
    Config, ConfigBuilder, PublishMode, DEFAULT_FAIR_LOCK_WAIT_TIMEOUT, DEFAULT_LOCAL_HANDOFFS,
    DEFAULT_LOCAL_HANDOFF_TIME, DEFAULT_RENEWAL_BATCH_SIZE, DEFAULT_REPLICAS_SYNC_TIMEOUT,
    DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SUBSCRIPTION_TIMEOUT, DEFAULT_UNLOCK_LATCH_TTL,
    DEFAULT_WATCHDOG_TIMEOUT, MAX_LEASE, URL_SCHEMES,
};
pub use connection::config::{LockSettings, Settings, TlsFiles};
#[cfg(feature = "redisson-yaml")]
#[cfg_attr(docsrs, doc(cfg(feature = "redisson-yaml")))]
pub use connection::config::{RedissonFile, RedissonTopology};
pub use connection::secrets::redacted_url;
pub use connection::tls::{ClusterTlsNames, TlsBackend, TlsOptions};
pub use entries::{EntryKey, EntryObjects, KeyBytes};
pub use error::{Error, RedissonFileError, Result};
pub use fencing::{FencedWriter, FencingGate};
pub use hold::state::HoldState;
pub use hold::watch::HoldWatch;
pub use lock::{
    AllMembers, AnyLock, Backoff, Fair, FairLock, FasterMulti, FasterMultiLock, Fenced, FencedLock,
    GroupGuard, GroupRule, Lock, LockGroup, LockGuard, LockKind, Majority, MultiLock,
    MultiLockGuard, NonReentrant, NonReentrantFair, NonReentrantFairLock, NonReentrantLock, RLock,
    Read, ReadLock, ReadWriteLock, RedLock, RedLockGuard, Reentrant, Spin, SpinLock, Write,
    WriteLock,
};
pub use names::keys::LockKeys;
pub use names::map_entry::{EntryObject, EntryObjectName};
pub use names::mapper::{FairQueueNames, NameMapper, PrefixNameMapper};
pub use names::owner::LockOwner;
pub use synchronizers::latch::CountDownLatch;
pub use synchronizers::permit_expirable::{
    Permit, PermitExpirableSemaphore, PermitId, PermitIdError,
};
pub use synchronizers::semaphore::{Semaphore, SemaphorePermits};

/// The fred crate this crate is built on, for [`ConfigBuilder::redis_config`] and
/// [`Client::redis`].
pub use fred;

/// The Lua scripts this crate sends, as text, for tools and tests that want to run or
/// inspect them (for example to check them against a Java client's behaviour).
pub mod lua {
    /// `lua/lock_acquire.lua`.
    pub const LOCK_ACQUIRE: &str = crate::lock::base::LOCK_ACQUIRE;
    /// `lua/lock_release.lua`.
    pub const LOCK_RELEASE: &str = crate::lock::base::LOCK_RELEASE;
    /// `lua/lock_force_release.lua`.
    pub const LOCK_FORCE_RELEASE: &str = crate::lock::base::LOCK_FORCE_RELEASE;
    /// `lua/lock_handoff.lua` (redisson-lock's local hand-off; not a Redisson script).
    pub const LOCK_HANDOFF: &str = crate::lock::base::LOCK_HANDOFF;
    /// `lua/lock_renew.lua`.
    pub const LOCK_RENEW: &str = crate::lock::holds::LOCK_RENEW;
    /// `lua/rw_read_renew.lua`.
    pub const RW_READ_RENEW: &str = crate::lock::holds::RW_READ_RENEW;
    /// `lua/hold_check.lua` (redisson-lock's check of lease holds after a fault; not a
    /// Redisson script).
    pub const HOLD_CHECK: &str = crate::lock::holds::HOLD_CHECK;
    /// `lua/fair_acquire.lua`.
    pub const FAIR_ACQUIRE: &str = crate::lock::fair::FAIR_ACQUIRE;
    /// `lua/fair_try_acquire.lua`.
    pub const FAIR_TRY_ACQUIRE: &str = crate::lock::fair::FAIR_TRY_ACQUIRE;
    /// `lua/fair_release.lua`.
    pub const FAIR_RELEASE: &str = crate::lock::fair::FAIR_RELEASE;
    /// `lua/fair_handoff.lua` (redisson-lock's hand-off to the head of a fair lock's
    /// queue when it is a waiter of the same client; not a Redisson script).
    pub const FAIR_HANDOFF: &str = crate::lock::fair::FAIR_HANDOFF;
    /// `lua/fair_force_release.lua`.
    pub const FAIR_FORCE_RELEASE: &str = crate::lock::fair::FAIR_FORCE_RELEASE;
    /// `lua/fair_acquire_failed.lua`.
    pub const FAIR_ACQUIRE_FAILED: &str = crate::lock::fair::FAIR_ACQUIRE_FAILED;
    /// `lua/rw_read_acquire.lua`.
    pub const RW_READ_ACQUIRE: &str = crate::lock::read_write::RW_READ_ACQUIRE;
    /// `lua/rw_read_release.lua`.
    pub const RW_READ_RELEASE: &str = crate::lock::read_write::RW_READ_RELEASE;
    /// `lua/rw_read_force_release.lua`.
    pub const RW_READ_FORCE_RELEASE: &str = crate::lock::read_write::RW_READ_FORCE_RELEASE;
    /// `lua/rw_read_is_locked.lua`.
    pub const RW_READ_IS_LOCKED: &str = crate::lock::read_write::RW_READ_IS_LOCKED;
    /// `lua/rw_write_acquire.lua`.
    pub const RW_WRITE_ACQUIRE: &str = crate::lock::read_write::RW_WRITE_ACQUIRE;
    /// `lua/rw_write_release.lua`.
    pub const RW_WRITE_RELEASE: &str = crate::lock::read_write::RW_WRITE_RELEASE;
    /// `lua/rw_write_force_release.lua`.
    pub const RW_WRITE_FORCE_RELEASE: &str = crate::lock::read_write::RW_WRITE_FORCE_RELEASE;
    /// `lua/faster_multi_acquire.lua`.
    pub const FASTER_MULTI_ACQUIRE: &str = crate::lock::faster_multi::FASTER_MULTI_ACQUIRE;
    /// `lua/faster_multi_release.lua`.
    pub const FASTER_MULTI_RELEASE: &str = crate::lock::faster_multi::FASTER_MULTI_RELEASE;
    /// `lua/faster_multi_force_release.lua`.
    pub const FASTER_MULTI_FORCE_RELEASE: &str =
        crate::lock::faster_multi::FASTER_MULTI_FORCE_RELEASE;
    /// `lua/faster_multi_is_locked.lua`.
    pub const FASTER_MULTI_IS_LOCKED: &str = crate::lock::faster_multi::FASTER_MULTI_IS_LOCKED;
    /// `lua/faster_multi_holds.lua`.
    pub const FASTER_MULTI_HOLDS: &str = crate::lock::faster_multi::FASTER_MULTI_HOLDS;
    /// `lua/faster_multi_renew.lua` (the watchdog's).
    pub const FASTER_MULTI_RENEW: &str = crate::lock::holds::FASTER_MULTI_RENEW;
    /// `lua/fenced_acquire.lua`.
    pub const FENCED_ACQUIRE: &str = crate::lock::fenced::FENCED_ACQUIRE;
    /// `lua/fenced_token_floor.lua` (`FencedLock::ensure_token_floor`; not a Redisson
    /// script).
    pub const FENCED_TOKEN_FLOOR: &str = crate::lock::fenced::FENCED_TOKEN_FLOOR;
    /// `lua/nonreentrant_acquire.lua`.
    pub const NONREENTRANT_ACQUIRE: &str = crate::lock::non_reentrant::NONREENTRANT_ACQUIRE;
    /// `lua/spin_release.lua`.
    pub const SPIN_RELEASE: &str = crate::lock::spin::SPIN_RELEASE;
    /// `lua/spin_force_release.lua`.
    pub const SPIN_FORCE_RELEASE: &str = crate::lock::spin::SPIN_FORCE_RELEASE;
    /// `lua/spin_handoff.lua` (redisson-lock's local hand-off of a spin lock; not a
    /// Redisson script).
    pub const SPIN_HANDOFF: &str = crate::lock::spin::SPIN_HANDOFF;

    /// `lua/fencing_guard.lua`: the fence check around every fenced write (a fragment:
    /// the write function goes in front of it).
    pub const FENCING_GUARD: &str = crate::fencing::FENCING_GUARD;
    /// `lua/fencing_ops.lua`: the fenced `SET`/`HSET`/`DEL` write function.
    pub const FENCING_OPS: &str = crate::fencing::FENCING_OPS;

    /// `lua/latch_try_set_count.lua` (`CountDownLatch::try_set_count`).
    pub const LATCH_TRY_SET_COUNT: &str = crate::synchronizers::latch::LATCH_TRY_SET_COUNT;
    /// `lua/latch_count_down.lua` (`CountDownLatch::count_down`).
    pub const LATCH_COUNT_DOWN: &str = crate::synchronizers::latch::LATCH_COUNT_DOWN;
    /// `lua/latch_delete.lua` (`CountDownLatch::delete`: publishes `0` where Redisson
    /// publishes `1`).
    pub const LATCH_DELETE: &str = crate::synchronizers::latch::LATCH_DELETE;
    /// `lua/pes_acquire.lua` (`RPermitExpirableSemaphore`'s acquire attempt).
    pub const PES_ACQUIRE: &str = crate::synchronizers::permit_expirable::ops::PES_ACQUIRE;
    /// `lua/pes_release.lua`.
    pub const PES_RELEASE: &str = crate::synchronizers::permit_expirable::ops::PES_RELEASE;
    /// `lua/pes_release_many.lua`.
    pub const PES_RELEASE_MANY: &str =
        crate::synchronizers::permit_expirable::ops::PES_RELEASE_MANY;
    /// `lua/pes_permits.lua` (available, held and total permits).
    pub const PES_PERMITS: &str = crate::synchronizers::permit_expirable::ops::PES_PERMITS;
    /// `lua/pes_try_set_permits.lua`.
    pub const PES_TRY_SET_PERMITS: &str =
        crate::synchronizers::permit_expirable::ops::PES_TRY_SET_PERMITS;
    /// `lua/pes_set_permits.lua`.
    pub const PES_SET_PERMITS: &str = crate::synchronizers::permit_expirable::ops::PES_SET_PERMITS;
    /// `lua/pes_add_permits.lua`.
    pub const PES_ADD_PERMITS: &str = crate::synchronizers::permit_expirable::ops::PES_ADD_PERMITS;
    /// `lua/pes_update_lease.lua`.
    pub const PES_UPDATE_LEASE: &str =
        crate::synchronizers::permit_expirable::ops::PES_UPDATE_LEASE;
    /// `lua/pes_lease_time.lua`.
    pub const PES_LEASE_TIME: &str = crate::synchronizers::permit_expirable::ops::PES_LEASE_TIME;
    /// `lua/pes_renew.lua` (the watchdog's renewal of kept permits; not a Redisson script).
    pub const PES_RENEW: &str = crate::synchronizers::permit_expirable::hold::PES_RENEW;
    /// `lua/pes_check.lua` (the check of permits after a fault; not a Redisson script).
    pub const PES_CHECK: &str = crate::synchronizers::permit_expirable::hold::PES_CHECK;
    /// `lua/semaphore_acquire.lua` (`RSemaphore#tryAcquire`).
    pub const SEMAPHORE_ACQUIRE: &str = crate::synchronizers::semaphore::SEMAPHORE_ACQUIRE;
    /// `lua/semaphore_release.lua` (`RSemaphore#release`, `#releaseIfExists`).
    pub const SEMAPHORE_RELEASE: &str = crate::synchronizers::semaphore::SEMAPHORE_RELEASE;
    /// `lua/semaphore_try_set_permits.lua` (`RSemaphore#trySetPermits`).
    pub const SEMAPHORE_TRY_SET_PERMITS: &str =
        crate::synchronizers::semaphore::SEMAPHORE_TRY_SET_PERMITS;
    /// `lua/semaphore_add_permits.lua` (`RSemaphore#addPermits`).
    pub const SEMAPHORE_ADD_PERMITS: &str = crate::synchronizers::semaphore::SEMAPHORE_ADD_PERMITS;
    /// `lua/semaphore_drain_permits.lua` (`RSemaphore#drainPermits`).
    pub const SEMAPHORE_DRAIN_PERMITS: &str =
        crate::synchronizers::semaphore::SEMAPHORE_DRAIN_PERMITS;

    /// `lua/expire_keys.lua` (`expire`, `expire_at`, `clear_expire` of a semaphore or a
    /// permit-expirable semaphore: every key of the object in one step).
    pub const EXPIRE_KEYS: &str = crate::synchronizers::expiry::EXPIRE_KEYS;

    /// Every script above.
    pub const ALL: &[&str] = &[
        LOCK_HANDOFF,
        LOCK_ACQUIRE,
        LOCK_RELEASE,
        LOCK_FORCE_RELEASE,
        LOCK_RENEW,
        RW_READ_RENEW,
        HOLD_CHECK,
        FAIR_ACQUIRE,
        FAIR_TRY_ACQUIRE,
        FAIR_RELEASE,
        FAIR_HANDOFF,
        FAIR_FORCE_RELEASE,
        FAIR_ACQUIRE_FAILED,
        RW_READ_ACQUIRE,
        RW_READ_RELEASE,
        RW_READ_FORCE_RELEASE,
        RW_READ_IS_LOCKED,
        RW_WRITE_ACQUIRE,
        RW_WRITE_RELEASE,
        RW_WRITE_FORCE_RELEASE,
        FASTER_MULTI_ACQUIRE,
        FASTER_MULTI_RELEASE,
        FASTER_MULTI_FORCE_RELEASE,
        FASTER_MULTI_IS_LOCKED,
        FASTER_MULTI_HOLDS,
        FASTER_MULTI_RENEW,
        FENCED_ACQUIRE,
        FENCED_TOKEN_FLOOR,
        NONREENTRANT_ACQUIRE,
        SPIN_RELEASE,
        SPIN_FORCE_RELEASE,
        SPIN_HANDOFF,
        FENCING_GUARD,
        FENCING_OPS,
        LATCH_TRY_SET_COUNT,
        LATCH_COUNT_DOWN,
        LATCH_DELETE,
        PES_ACQUIRE,
        PES_RELEASE,
        PES_RELEASE_MANY,
        PES_PERMITS,
        PES_TRY_SET_PERMITS,
        PES_SET_PERMITS,
        PES_ADD_PERMITS,
        PES_UPDATE_LEASE,
        PES_LEASE_TIME,
        PES_RENEW,
        PES_CHECK,
        SEMAPHORE_ACQUIRE,
        SEMAPHORE_RELEASE,
        SEMAPHORE_TRY_SET_PERMITS,
        SEMAPHORE_ADD_PERMITS,
        SEMAPHORE_DRAIN_PERMITS,
        EXPIRE_KEYS,
    ];
}

#[cfg(test)]
mod bounds {
    //! Every public type and every public future is `Send`, and handles are `Sync`.
    use super::*;

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
