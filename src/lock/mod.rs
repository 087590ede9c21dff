//! The lock engine, and the lock kinds over it.
//!
//! [`Lock<K>`] is every kind's handle: one wait loop, one unlock path, one guard type.
//! What a kind changes (its scripts, keys, channel, messages and renewal) lives in one
//! file per kind and reaches the engine through [`kind::Kind`]:
//!
//! | kind | file | Redisson |
//! |---|---|---|
//! | [`Reentrant`] | `reentrant.rs` | `RLock` |
//! | [`Fair`] | `fair.rs` | `RFairLock` |
//! | [`Read`], [`Write`] | `read_write.rs` | `RReadWriteLock` |
//! | [`Fenced`] | `fenced.rs` | `RFencedLock` |
//! | [`FasterMulti`] | `faster_multi.rs` | `RedissonFasterMultiLock` (`getMultiLock(group, values)`) |
//! | [`Spin`] | `spin.rs` | `RSpinLock` |
//! | [`NonReentrant`], [`NonReentrantFair`] | `non_reentrant.rs`, `fair.rs` | `RedissonNonReentrantLock`, `RedissonNonReentrantFairLock` |
//!
//! The engine is one type, `Lock<K>`, whose methods live in several files, one job each
//! (every file is an `impl<K: LockKind> Lock<K>` block; each file's own docs say what it
//! keeps true):
//!
//! | file | job |
//! |---|---|
//! | `handle.rs` | the struct, its constructor and the public methods (the `RLock` API) |
//! | `acquiring.rs` | one acquisition: the choice of wait, Redisson's wait loop, one attempt, registering a hold |
//! | `waiting.rs` | between attempts: the channel, polling, readers yielding to writers, subscribing |
//! | `local_line.rs` | the local line of the kinds that hand off: joining, the hand-off on release |
//! | `line_head.rs` | the wait of a local line's head, on the wait engine |
//! | `queue_exit.rs` | leaving a fair lock's queue in Redis, exactly once |
//! | `settling.rs` | acquires whose reply was lost: learning whether they ran, undoing them |
//! | `releasing.rs` | every unlock: the release script and its latch, the ledger, dropped guards |
//! | `running.rs` | sending a script call (with `WAIT` for replicas) and naming its errors |
//!
//! Beside them, `key_cache.rs` keeps each handle's keys and owner field as ready-made
//! script values (built once, cloned by reference count into every call).
//!
//! What a kind changes in the engine beyond its scripts is one value,
//! `Kind::CAPABILITIES` (`capabilities.rs`): a queue in Redis, tokens, the two sides of a
//! read-write lock, the local line. Its docs list every branch of these files that reads
//! it (`grep CAPABILITIES src/lock` finds them all).
//!
//! Invariants the engine keeps for every kind: every lock operation is one script round
//! trip when the lock is free; a waiter subscribes before it retries and sleeps until a
//! message or the holder's TTL; acquire and unlock are written at most once and, once
//! written, always finished (see [`FinishOnDrop`](crate::connection::detach::FinishOnDrop)); a queued
//! waiter that gives up (or is dropped) leaves the queue exactly once; a watchdog
//! acquisition registers with the renewal registry before the caller sees it, and every
//! unlock removes one registration.

// `handle` first: rustdoc lists a type's impl blocks in module order, so `Lock<K>`'s page
// opens with `handle.rs`'s general methods (`lock`, `unlock`) and the fenced-only ones
// (`fenced.rs`) follow.
mod handle;

mod acquiring;
mod backoff;
pub(crate) mod base;
mod call;
mod capabilities;
pub(crate) mod fair;
pub(crate) mod faster_multi;
pub(crate) mod fenced;
mod guard;
pub(crate) mod holds;
mod key_cache;
mod kind;
mod line_head;
mod local_line;
pub(crate) mod multi;
pub(crate) mod non_reentrant;
mod queue_exit;
mod queue_handoff;
pub(crate) mod read_write;
pub(crate) mod reentrant;
mod releasing;
mod rlock_methods;
mod running;
mod settling;
pub(crate) mod spin;
mod waiting;

pub use backoff::Backoff;
pub use fair::{Fair, NonReentrantFair};
pub use faster_multi::FasterMulti;
pub use fenced::Fenced;
pub use guard::LockGuard;
pub use handle::Lock;
pub use kind::LockKind;
pub use multi::{
    AllMembers, AnyLock, GroupGuard, GroupRule, LockGroup, Majority, MultiLock, MultiLockGuard,
    RedLock, RedLockGuard,
};
pub use non_reentrant::NonReentrant;
pub use read_write::{Read, ReadWriteLock, Write};
pub use reentrant::Reentrant;
pub use spin::Spin;

/// Redisson's reentrant lock (`RLock`): `Lock` of the [`Reentrant`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::RLock;
/// let lock: RLock = client.get_lock("orders");
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type RLock = Lock<Reentrant>;
/// Redisson's fair lock (`RFairLock`): `Lock` of the [`Fair`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::FairLock;
/// let lock: FairLock = client.get_fair_lock("orders");
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type FairLock = Lock<Fair>;
/// The read half of Redisson's `RReadWriteLock`: `Lock` of the [`Read`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::ReadLock;
/// let lock: ReadLock = client.get_read_write_lock("orders").read_lock();
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type ReadLock = Lock<Read>;
/// The write half of Redisson's `RReadWriteLock`: `Lock` of the [`Write`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::WriteLock;
/// let lock: WriteLock = client.get_read_write_lock("orders").write_lock();
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type WriteLock = Lock<Write>;
/// Redisson's fenced lock (`RFencedLock`): `Lock` of the [`Fenced`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::FencedLock;
/// let lock: FencedLock = client.get_fenced_lock("orders");
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type FencedLock = Lock<Fenced>;
/// Redisson 3.38's `RedissonFasterMultiLock` (`getMultiLock(group, values)`): `Lock` of
/// the [`FasterMulti`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::FasterMultiLock;
/// let lock: FasterMultiLock = client.get_multi_lock("orders", ["a", "b"])?;
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type FasterMultiLock = Lock<FasterMulti>;
/// Redisson's spin lock (`RSpinLock`): `Lock` of the [`Spin`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::SpinLock;
/// let lock: SpinLock = client.get_spin_lock("orders");
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type SpinLock = Lock<Spin>;
/// Redisson 4.4's `RedissonNonReentrantLock`: `Lock` of the [`NonReentrant`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::NonReentrantLock;
/// let lock: NonReentrantLock = client.get_non_reentrant_lock("orders");
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type NonReentrantLock = Lock<NonReentrant>;
/// Redisson 4.4's `RedissonNonReentrantFairLock`: `Lock` of the [`NonReentrantFair`] kind.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::NonReentrantFairLock;
/// let lock: NonReentrantFairLock = client.get_non_reentrant_fair_lock("orders");
/// let guard = lock.lock().await?;
/// # Ok(()) }
/// ```
pub type NonReentrantFairLock = Lock<NonReentrantFair>;
