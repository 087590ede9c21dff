//! The blocking [`EntryObjects`]: a Java map's per-key (set's per-value) locks,
//! semaphores and latches as blocking handles, named by the async
//! [`crate::EntryObjects`].

use std::sync::Arc;

use super::latch::CountDownLatch;
use super::lock::{FairLock, Lock, RLock, ReadWriteLock};
use super::permit_expirable::PermitExpirableSemaphore;
use super::runtime::Shared;
use super::semaphore::Semaphore;
use crate::client::entries::EntryKey;
use crate::codec::{CodecError, JavaCodec};
use crate::lock::LockKind;
use crate::names::map_entry::{EntryObject, EntryObjectName};

/// The per-key objects of one Java `RMap` (per-value objects of one `RSet`), blocking:
/// the async [`crate::EntryObjects`], whose docs say how keys are encoded (give the
/// Java map's codec), with blocking handles. Made by
/// [`Client::map`](super::Client::map) and its siblings. No I/O.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// // Java: redisson.getMap("orders").getLock("o-1").lock()
/// let lock = client.map("orders").get_lock("o-1")?;
/// lock.lock()?;
/// lock.unlock()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct EntryObjects {
    pub(super) shared: Arc<Shared>,
    pub(super) inner: crate::EntryObjects,
}

impl EntryObjects {
    fn lock<K: LockKind>(&self, inner: crate::Lock<K>) -> Lock<K> {
        Lock {
            shared: self.shared.clone(),
            inner,
            owner: None,
        }
    }

    /// The map's (set's) name, as given.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.map("orders").name(), "orders");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The codec keys are encoded with.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// // The client's codec: Kryo5Codec unless the configuration names another.
    /// println!("{:?}", client.map("orders").codec());
    /// # }
    /// ```
    pub fn codec(&self) -> JavaCodec {
        self.inner.codec()
    }

    /// The same map with keys encoded by `codec`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// let map = client.map("orders").with_codec(redisson_lock::codec::JavaCodec::String);
    /// # }
    /// ```
    pub fn with_codec(&self, codec: JavaCodec) -> EntryObjects {
        EntryObjects {
            shared: self.shared.clone(),
            inner: self.inner.with_codec(codec),
        }
    }

    /// See [`crate::EntryObjects::entry_name`].
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> Result<(), redisson_lock::codec::CodecError> {
    /// let entry = client.map("orders").entry_name("o-1", redisson_lock::names::EntryObject::Lock)?;
    /// println!("{}", entry.raw_name());
    /// # Ok(()) }
    /// ```
    pub fn entry_name(
        &self,
        key: impl EntryKey,
        object: EntryObject,
    ) -> Result<EntryObjectName, CodecError> {
        self.inner.entry_name(key, object)
    }

    /// See [`crate::EntryObjects::get_lock`] (`RMap#getLock(key)`).
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let guard = client.map("orders").get_lock("o-1")?.acquire()?;
    /// guard.unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn get_lock(&self, key: impl EntryKey) -> Result<RLock, CodecError> {
        Ok(self.lock(self.inner.get_lock(key)?))
    }

    /// See [`crate::EntryObjects::get_fair_lock`] (`RMap#getFairLock(key)`).
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let lock = client.map("orders").get_fair_lock("o-1")?;
    /// # Ok(()) }
    /// ```
    pub fn get_fair_lock(&self, key: impl EntryKey) -> Result<FairLock, CodecError> {
        Ok(self.lock(self.inner.get_fair_lock(key)?))
    }

    /// See [`crate::EntryObjects::get_read_write_lock`] (`RMap#getReadWriteLock(key)`).
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let rw = client.map("orders").get_read_write_lock("o-1")?;
    /// rw.write_lock().lock()?;
    /// rw.write_lock().unlock()?;
    /// # Ok(()) }
    /// ```
    pub fn get_read_write_lock(&self, key: impl EntryKey) -> Result<ReadWriteLock, CodecError> {
        let rw = self.inner.get_read_write_lock(key)?;
        Ok(ReadWriteLock {
            read: self.lock(rw.read_lock()),
            write: self.lock(rw.write_lock()),
        })
    }

    /// See [`crate::EntryObjects::get_semaphore`] (`RMap#getSemaphore(key)`).
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let semaphore = client.map("tenants").get_semaphore("t-7")?;
    /// semaphore.try_set_permits(3)?;
    /// # Ok(()) }
    /// ```
    pub fn get_semaphore(&self, key: impl EntryKey) -> Result<Semaphore, CodecError> {
        Ok(Semaphore {
            shared: self.shared.clone(),
            inner: self.inner.get_semaphore(key)?,
        })
    }

    /// See [`crate::EntryObjects::get_permit_expirable_semaphore`]
    /// (`RMap#getPermitExpirableSemaphore(key)`).
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let sem = client.map("tenants").get_permit_expirable_semaphore("t-7")?;
    /// sem.try_set_permits(2)?;
    /// # Ok(()) }
    /// ```
    pub fn get_permit_expirable_semaphore(
        &self,
        key: impl EntryKey,
    ) -> Result<PermitExpirableSemaphore, CodecError> {
        Ok(PermitExpirableSemaphore {
            shared: self.shared.clone(),
            inner: self.inner.get_permit_expirable_semaphore(key)?,
        })
    }

    /// See [`crate::EntryObjects::get_count_down_latch`] (`RMap#getCountDownLatch(key)`;
    /// not on a Redis Cluster).
    ///
    /// # Errors
    /// [`CodecError`] when the codec cannot write `key` byte for byte.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let latch = client.map("batches").get_count_down_latch("b-7")?;
    /// latch.try_set_count(3)?;
    /// # Ok(()) }
    /// ```
    pub fn get_count_down_latch(&self, key: impl EntryKey) -> Result<CountDownLatch, CodecError> {
        Ok(CountDownLatch {
            shared: self.shared.clone(),
            inner: self.inner.get_count_down_latch(key)?,
        })
    }
}
