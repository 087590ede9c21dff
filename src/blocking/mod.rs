//! The blocking API (feature `blocking`): every lock kind for code that is not async, with
//! the OS thread as the owner, exactly as in Java Redisson.
//!
//! CLI tools, synchronous web frameworks and code run by `spawn_blocking` need locks too.
//! This module gives them the same locks, with the same method names and the same guards,
//! as plain functions that block the calling thread:
//!
//! * [`Client`]: a connection with its own small runtime; hands out locks.
//! * [`Lock<K>`]: every kind's handle ([`RLock`], [`FairLock`], [`ReadLock`],
//!   [`WriteLock`], [`FencedLock`], [`SpinLock`], [`NonReentrantLock`],
//!   [`NonReentrantFairLock`]), and [`ReadWriteLock`] for the read-write pair.
//! * [`LockGuard<K>`]: one hold, released when dropped (also while a panic unwinds).
//! * `Semaphore` (with its `SemaphorePermits` guard) and `PermitExpirableSemaphore` (with
//!   its watchdog-kept `Permit`): Redisson's `RSemaphore` and
//!   `RPermitExpirableSemaphore`.
//! * [`CountDownLatch`]: Redisson's `RCountDownLatch`.
//! * [`MultiLock`], [`RedLock`] ([`LockGroup`]): Redisson's `RedissonMultiLock` and
//!   `RedissonRedLock` over blocking locks, with [`GroupGuard`].
//! * [`EntryObjects`] ([`Client::map`], [`Client::set`]): the locks, semaphores and latches
//!   of a Java map's keys (`map.getLock(key)`).
//!
//! The locks are the async locks underneath: same scripts, same keys, same watchdog. A
//! blocking client, an async [`crate::Client`] and a Java Redisson client contend for one
//! lock name as equals.
//!
//! ```no_run
//! use std::time::Duration;
//! use redisson_lock::blocking::Client;
//! use redisson_lock::Config;
//!
//! # fn demo() -> redisson_lock::Result<()> {
//! let client = Client::connect(Config::from_url("redis://127.0.0.1:6379")?)?;
//! let lock = client.get_lock("stock:product_101");
//!
//! lock.lock()?;                             // held until unlock; the watchdog renews it
//! lock.lock()?;                             // same thread: re-entry, hold count 2
//! assert_eq!(lock.hold_count()?, 2);
//! lock.unlock()?;
//! lock.unlock()?;                           // released; one waiter is woken
//!
//! // Redisson's tryLock(1, 10, SECONDS): wait up to 1 s, then hold for 10 s at most.
//! if let Some(guard) = lock.try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(10))? {
//!     // ... work; dropping the guard (or a panic) unlocks ...
//!     guard.unlock()?;
//! }
//! client.shutdown()?;
//! # Ok(()) }
//! ```
//!
//! # Owners: the calling thread
//!
//! Every call acts as [`LockOwner::current_thread`] of the thread that makes it, which is
//! Redisson's model: the same thread taking the lock again is a re-entry (the hold count
//! goes up), another thread waits, and only the holding thread can unlock.
//! [`Lock::with_owner`] fixes an explicit owner instead, like Redisson's `threadId`
//! overloads, to take a lock in one thread and release it in another. A [`LockGuard`]
//! remembers the owner that took it, so a guard may be moved to another thread and
//! unlocked or dropped there.
//!
//! Re-entry follows the thread, not the handle: two handles on one name from one client
//! are one lock on the same thread. Two clients (or a blocking and an async client) are
//! two Redisson "nodes" and exclude each other.
//!
//! # Threads and lifecycle
//!
//! [`Client::connect`] starts a tokio runtime owned by the client with
//! [`WORKER_THREADS`] (2) worker threads named [`THREAD_NAME`]
//! (`redisson-lock-blocking`), plus at most 2 helper threads of the same name that
//! exist only while a host name is being resolved (they end after 10 s idle). The async
//! client runs on it: its connections, the watchdog, the pub/sub listener and every
//! call's future. A calling thread hands its call to the runtime and sleeps until the
//! answer comes back; it never runs the runtime itself.
//!
//! The runtime stops, and its threads end, at [`Client::shutdown`] or when the last
//! handle (client, lock or guard) is dropped. Stopping first waits for dropped guards'
//! unlocks still in flight and closes the connections (at most [`SHUTDOWN_TIMEOUT`]),
//! then stops the threads (at most [`SHUTDOWN_TIMEOUT`] again): neither `shutdown` nor a
//! drop hangs on an unreachable Redis. As with the async client, locks still held are
//! not released by a shutdown (as in Redisson); they expire after their lease.
//!
//! After `shutdown`, every call returns [`Error::Shutdown`]; a call waiting at that
//! moment returns it too.
//!
//! # Calling from async code
//!
//! A blocking call made inside a tokio runtime (in a task, in `block_on`, in
//! `#[tokio::main]`) **works**: it neither panics nor deadlocks by itself, because the
//! call's future runs on this client's own runtime, never on the caller's, and the
//! caller waits on a plain channel (tokio's `block_on`, which panics there, is never
//! used). The cost is that it blocks the calling thread for the whole call: a
//! multi-thread runtime loses that worker meanwhile, and a **current-thread runtime
//! stops all its other tasks** until the call returns. So if the lock's holder is a task
//! on that same current-thread runtime, it cannot run to unlock, and the call waits until
//! the holder's lease ends (a watchdog lease included: the async client's watchdog also
//! runs on the stalled runtime). In async code use the async [`crate::Client`]; from
//! `spawn_blocking` or a plain thread, this module is the right tool. A drop of the last
//! handle inside a runtime stops this client's threads without waiting for them (tokio
//! forbids that wait there); they end on their own moments later.
//!
//! # Guards and panics
//!
//! Dropping a [`LockGuard`] without [`LockGuard::unlock`] (at the end of a scope, or
//! because a panic unwinds through it) hands its unlock to the client's runtime and
//! returns at once; the drop never blocks. The unlock runs even if the guard was the
//! last handle of the client: stopping the client waits for it first.
//!
//! [`LockOwner::current_thread`]: crate::LockOwner::current_thread

mod client;
mod entries;
mod forward;
mod group;
mod guards;
mod latch;
mod lock;
mod lock_methods;
mod permit_expirable;
mod runtime;
mod semaphore;

pub use client::Client;
pub use entries::EntryObjects;
pub use group::{AnyLock, GroupGuard, LockGroup, MultiLock, MultiLockGuard, RedLock, RedLockGuard};
pub use guards::LockGuard;
pub use latch::CountDownLatch;
pub use lock::{
    FairLock, FasterMultiLock, FencedLock, Lock, NonReentrantFairLock, NonReentrantLock, RLock,
    ReadLock, ReadWriteLock, SpinLock, WriteLock,
};
pub use permit_expirable::{Permit, PermitExpirableSemaphore};
pub use runtime::{SHUTDOWN_TIMEOUT, THREAD_NAME, WORKER_THREADS};
pub use semaphore::{Semaphore, SemaphorePermits};

#[cfg(doc)]
use crate::error::Error;
#[cfg(doc)]
use crate::names::owner::LockOwner;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::Fenced;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        send_sync::<Client>();
        send_sync::<RLock>();
        send_sync::<FairLock>();
        send_sync::<ReadWriteLock>();
        send_sync::<LockGuard>();
        send_sync::<LockGuard<Fenced>>();
        send_sync::<CountDownLatch>();
        send_sync::<MultiLock>();
        send_sync::<MultiLockGuard>();
        send_sync::<EntryObjects>();
    }
}
