//! [`ReadWriteLock`] with its halves [`Read`] and [`Write`]: Redisson's `RReadWriteLock`
//! (protocol §11).
//!
//! One hash `N` for both halves: field `mode` (`read` or `write`), each reader's
//! `<client-id>:<owner>` → its read holds, the writer's `<client-id>:<owner>:write` → its
//! write holds. Each read hold `k` also has a key `{N}:<client-id>:<owner>:rwlock_timeout:k`
//! with that hold's own lease, and a read unlock re-arms the hash to the longest lease
//! still alive (in write mode only upward: the write hold's lease is never cut short,
//! see docs/protocol.md section 10.5). Both halves wait on `redisson_rwlock:{N}`: a read unlock publishes `0`
//! (wakes one waiter), a write unlock `1` (wakes every waiter, so all readers get in).
//!
//! The write holder may also take read holds (a downgrade); a read holder that asks for
//! the write lock waits for itself, as in Redisson: `lock()` never returns, so use a
//! `try_lock*` with a wait there.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::{Arc, LazyLock};

use fred::prelude::Value;

use super::handle::Lock;
use super::holds::{OwnerField, ReadHolds};
use super::key_cache::shared;
use super::kind::{AcquireMode, Capabilities, Kind, LockedProbe, ScriptCall, Target, Waiting};
use crate::connection::scripts::Script;
use crate::engine::Engine;
use crate::engine::hold::held::Held;
use crate::names::mapper::MappedName;
use crate::names::owner::LockOwner;
use crate::names::{hash_tag, owner_field, read_timeout_prefix, rwlock_channel};

/// `lua/rw_read_acquire.lua`.
pub(crate) const RW_READ_ACQUIRE: &str = include_str!("../../lua/rw_read_acquire.lua");
/// `lua/rw_read_release.lua`.
pub(crate) const RW_READ_RELEASE: &str = include_str!("../../lua/rw_read_release.lua");
/// `lua/rw_read_force_release.lua`.
pub(crate) const RW_READ_FORCE_RELEASE: &str = include_str!("../../lua/rw_read_force_release.lua");
/// `lua/rw_read_is_locked.lua`.
pub(crate) const RW_READ_IS_LOCKED: &str = include_str!("../../lua/rw_read_is_locked.lua");
/// `lua/rw_write_acquire.lua`.
pub(crate) const RW_WRITE_ACQUIRE: &str = include_str!("../../lua/rw_write_acquire.lua");
/// `lua/rw_write_release.lua`.
pub(crate) const RW_WRITE_RELEASE: &str = include_str!("../../lua/rw_write_release.lua");
/// `lua/rw_write_force_release.lua`.
pub(crate) const RW_WRITE_FORCE_RELEASE: &str =
    include_str!("../../lua/rw_write_force_release.lua");

static READ_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_ACQUIRE));
static READ_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_RELEASE));
static READ_FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_FORCE_RELEASE));
static READ_IS_LOCKED: LazyLock<Script> = LazyLock::new(|| Script::new(RW_READ_IS_LOCKED));
static WRITE_ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_WRITE_ACQUIRE));
static WRITE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RW_WRITE_RELEASE));
static WRITE_FORCE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(RW_WRITE_FORCE_RELEASE));

/// Redisson's `RReadWriteLock`: a pair of locks on one name, many readers or one writer.
///
/// A cheap `Clone` handle; no I/O until a half is used.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let rw = client.get_read_write_lock("catalog");
/// let read = rw.read_lock();
/// read.lock().await?;           // many readers at once, here and in Java
/// read.unlock().await?;
///
/// let write = rw.write_lock();
/// write.lock().await?;          // waits for the last reader
/// read.lock().await?;           // the writer may also read (same owner)
/// read.unlock().await?;
/// write.unlock().await?;        // wakes every waiter
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    read: Lock<Read>,
    write: Lock<Write>,
}

impl ReadWriteLock {
    pub(crate) fn new(context: Arc<Engine>, name: String) -> ReadWriteLock {
        // Mapped once, for both halves (Redisson maps each half's name, to the same key).
        let names = MappedName::new(context.config.name_mapper(), name);
        ReadWriteLock {
            read: Lock::named(context.clone(), names.clone(), Read),
            write: Lock::named(context, names, Write),
        }
    }

    /// The name, as given to the client; the Redis key of the hash both halves share is
    /// [`ReadWriteLock::raw_name`] (the same without a name mapper).
    ///
    /// # Redisson equivalent
    /// `RReadWriteLock#getName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.get_read_write_lock("catalog").name(), "catalog");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.read.name()
    }

    /// The name as stored in Redis: the key of the hash both halves share, through the
    /// client's [name mapper](crate::ConfigBuilder::name_mapper).
    ///
    /// # Redisson equivalent
    /// `RedissonObject#getRawName()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let rw = client.get_read_write_lock("catalog");
    /// assert_eq!(rw.raw_name(), rw.write_lock().raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        self.read.raw_name()
    }

    /// The read half: shared with other readers, excluded by a writer.
    ///
    /// # Redisson equivalent
    /// `RReadWriteLock#readLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let read = client.get_read_write_lock("catalog").read_lock();
    /// let guard = read.acquire().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn read_lock(&self) -> Lock<Read> {
        self.read.clone()
    }

    /// The write half: exclusive.
    ///
    /// # Redisson equivalent
    /// `RReadWriteLock#writeLock()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let write = client.get_read_write_lock("catalog").write_lock();
    /// let guard = write.acquire().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn write_lock(&self) -> Lock<Write> {
        self.write.clone()
    }
}

/// The read half of a [`ReadWriteLock`]. [`ReadLock`](crate::ReadLock) is `Lock<Read>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let read: redisson_lock::ReadLock = client.get_read_write_lock("n").read_lock();
/// read.lock().await?;
/// read.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Read;

/// The write half of a [`ReadWriteLock`]. [`WriteLock`](crate::WriteLock) is
/// `Lock<Write>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let write: redisson_lock::WriteLock = client.get_read_write_lock("n").write_lock();
/// write.lock().await?;
/// write.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Write;

impl Kind for Read {
    const NAME: &'static str = "read";
    const CAPABILITIES: Capabilities = Capabilities {
        yields_to_writers: true,
        ..Capabilities::NONE
    };

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        let field = target.owner_field();
        ScriptCall::new(
            &READ_ACQUIRE,
            vec![
                target.name.to_owned(),
                read_timeout_prefix(target.name, &field),
            ],
            vec![
                Value::from(lease_ms as i64),
                Value::from(field.as_str()),
                Value::from(format!("{field}:write")),
            ],
        )
    }

    fn release(&self, target: &Target<'_>, _lease_ms: u64, latch: &str) -> ScriptCall {
        let field = target.owner_field();
        ScriptCall::new(
            &READ_RELEASE,
            vec![
                target.name.to_owned(),
                rwlock_channel(target.name),
                read_timeout_prefix(target.name, &field),
                hash_tag(target.name),
                latch.to_owned(),
            ],
            vec![
                Value::from_static_str("0"),
                Value::from(field),
                target.publish(),
                target.latch_ttl(),
            ],
        )
    }

    fn force_release(&self, target: &Target<'_>) -> ScriptCall {
        ScriptCall::new(
            &READ_FORCE_RELEASE,
            vec![target.name.to_owned(), rwlock_channel(target.name)],
            vec![Value::from_static_str("0"), target.publish()],
        )
    }

    fn waiting(&self, target: &Target<'_>) -> Waiting {
        Waiting::Channel(rwlock_channel(target.name))
    }

    fn held(&self, target: &Target<'_>) -> Arc<dyn Held> {
        Arc::new(ReadHolds {
            field: target.owner_str(),
            key_prefix: shared(hash_tag(target.name)),
        })
    }

    fn locked_probe(&self, name: &str) -> LockedProbe {
        LockedProbe::Script(ScriptCall::new(
            &READ_IS_LOCKED,
            vec![name.to_owned()],
            vec![],
        ))
    }
}

impl Kind for Write {
    const NAME: &'static str = "write";
    const CAPABILITIES: Capabilities = Capabilities {
        write_lock: true,
        ..Capabilities::NONE
    };

    fn field(&self, context: &Engine, owner: LockOwner) -> String {
        format!("{}:write", owner_field(&context.id, owner))
    }

    fn held(&self, target: &Target<'_>) -> Arc<dyn Held> {
        Arc::new(OwnerField(shared(self.field(target.context, target.owner))))
    }

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        ScriptCall::new(
            &WRITE_ACQUIRE,
            vec![target.name.to_owned()],
            vec![
                Value::from(lease_ms as i64),
                Value::from(self.field(target.context, target.owner)),
            ],
        )
    }

    fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
        ScriptCall::new(
            &WRITE_RELEASE,
            vec![
                target.name.to_owned(),
                rwlock_channel(target.name),
                latch.to_owned(),
            ],
            vec![
                Value::from_static_str("1"),
                Value::from(lease_ms as i64),
                Value::from(self.field(target.context, target.owner)),
                target.publish(),
                target.latch_ttl(),
            ],
        )
    }

    fn force_release(&self, target: &Target<'_>) -> ScriptCall {
        ScriptCall::new(
            &WRITE_FORCE_RELEASE,
            vec![target.name.to_owned(), rwlock_channel(target.name)],
            vec![Value::from_static_str("1"), target.publish()],
        )
    }

    fn waiting(&self, target: &Target<'_>) -> Waiting {
        Waiting::Channel(rwlock_channel(target.name))
    }

    fn locked_probe(&self, _name: &str) -> LockedProbe {
        LockedProbe::ModeIs("write")
    }
}
