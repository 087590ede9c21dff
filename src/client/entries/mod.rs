//! [`EntryObjects`]: the locks, semaphores and latches Redisson hands out per map key
//! (`RMap#getLock(key)`, ...) and per set value (`RSet#getLock(value)`, ...), as this
//! crate's ordinary handles on the very keys Java uses.
//!
//! | Java | Rust |
//! |---|---|
//! | `redisson.getMap("orders")` (also `getMapCache`, `getLocalCachedMap`) | [`Client::map("orders")`](crate::Client::map) |
//! | `redisson.getMap("orders", codec)` | [`Client::map_with_codec("orders", codec)`](crate::Client::map_with_codec) |
//! | `redisson.getSet("tags")`, `getSet("tags", codec)` | [`Client::set`](crate::Client::set), [`Client::set_with_codec`](crate::Client::set_with_codec) |
//! | `map.getLock(key)` | [`EntryObjects::get_lock`] → [`RLock`] |
//! | `map.getFairLock(key)` | [`EntryObjects::get_fair_lock`] → [`FairLock`] |
//! | `map.getReadWriteLock(key)` | [`EntryObjects::get_read_write_lock`] → [`ReadWriteLock`] |
//! | `map.getSemaphore(key)` | [`EntryObjects::get_semaphore`] → [`Semaphore`] |
//! | `map.getPermitExpirableSemaphore(key)` | [`EntryObjects::get_permit_expirable_semaphore`] → [`PermitExpirableSemaphore`] |
//! | `map.getCountDownLatch(key)` | [`EntryObjects::get_count_down_latch`] → [`CountDownLatch`] |
//!
//! How a name is made (`docs/codecs.md`): the key's bytes under the map's codec
//! ([`EntryKey`], [`JavaCodec`]) are hashed, the object's name is
//! `{<map's name in Redis>}:<hash>:<suffix>` ([`EntryObjectName`]), and the handle maps
//! that name once more with the client's name mapper, as the Java object's constructor
//! does. On a Redis Cluster every key and channel of the object lies in the map's slot
//! (the name carries the map's name as its hash tag), except a latch's channel: see
//! [`EntryObjects::get_count_down_latch`].

mod key;

use std::fmt;
use std::sync::Arc;

pub use key::{EntryKey, KeyBytes};

use crate::client::Client;
use crate::codec::{CodecError, JavaCodec};
use crate::lock::{FairLock, RLock, ReadWriteLock};
use crate::names::map_entry::{EntryObject, EntryObjectName};
use crate::synchronizers::latch::CountDownLatch;
use crate::synchronizers::permit_expirable::PermitExpirableSemaphore;
use crate::synchronizers::semaphore::Semaphore;

/// Which Java collection the objects belong to (the names are the same for both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Collection {
    /// `RMap` (and `RMapCache`, `RLocalCachedMap`): per key.
    Map,
    /// `RSet`: per value.
    Set,
}

/// The per-key objects of one Java `RMap` (per-value objects of one `RSet`): a lock, fair
/// lock, read-write lock, semaphore, permit-expirable semaphore or count-down latch for
/// each key, each the crate's ordinary handle on the key Redisson uses. Made by
/// [`Client::map`], [`Client::map_with_codec`], [`Client::set`], [`Client::set_with_codec`].
///
/// A key is named by its bytes under the map's codec: **the codec must be the one the
/// Java map uses**. [`Client::map`] takes the client's codec, as Java's `getMap(name)`
/// does: Redisson's default `Kryo5Codec`, or what the configuration names
/// ([`ConfigBuilder::codec`](crate::ConfigBuilder::codec), `codec:` in a `redisson.yaml`
/// read with [`RedissonFile`](crate::config::RedissonFile)). A map made with
/// `getMap(name, codec)` needs [`Client::map_with_codec`]. A wrong codec names other
/// objects, silently (their keys differ). Keys are Java `String`, `Integer`, `Long`,
/// `UUID`, `Boolean`, `Double` values ([`EntryKey`]; a Rust `42` is Java's `Integer`,
/// `42i64` its `Long`); anything else as [`KeyBytes`].
///
/// Cheap to clone; making handles does no I/O. The handles are exactly those of
/// [`Client::get_lock`] and its siblings, so everything they do (waiting, the watchdog,
/// guards, expiry) is the same.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::codec::JavaCodec;
///
/// // Java: RLock lock = redisson.getMap("orders").getLock("o-1"); lock.lock();
/// let lock = client.map("orders").get_lock("o-1")?;
/// lock.lock().await?;
/// lock.unlock().await?;
///
/// // Java: redisson.getMap("orders", StringCodec.INSTANCE).getSemaphore(42L)
/// let seats = client.map_with_codec("orders", JavaCodec::String).get_semaphore(42i64)?;
/// seats.try_set_permits(10).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct EntryObjects {
    client: Client,
    /// The map's (set's) name as given.
    name: Arc<str>,
    codec: JavaCodec,
    of: Collection,
}

impl fmt::Debug for EntryObjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntryObjects")
            .field("of", &self.of)
            .field("name", &self.name)
            .field("codec", &self.codec)
            .field("client_id", &self.client.id())
            .finish()
    }
}

impl EntryObjects {
    pub(crate) fn new(
        client: Client,
        name: String,
        codec: JavaCodec,
        of: Collection,
    ) -> EntryObjects {
        EntryObjects {
            client,
            name: name.into(),
            codec,
            of,
        }
    }

    /// The map's (set's) name, as given.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// assert_eq!(client.map("orders").name(), "orders");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The codec keys are encoded with.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// // The client's codec: Kryo5Codec unless the configuration names another.
    /// assert_eq!(client.map("orders").codec(), client.config().codec());
    /// # }
    /// ```
    pub fn codec(&self) -> JavaCodec {
        self.codec
    }

    /// The same map with keys encoded by `codec`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// use redisson_lock::codec::JavaCodec;
    /// let map = client.map("orders").with_codec(JavaCodec::String);
    /// assert_eq!(map.codec(), JavaCodec::String);
    /// # }
    /// ```
    pub fn with_codec(&self, codec: JavaCodec) -> EntryObjects {
        EntryObjects {
            codec,
            ..self.clone()
        }
    }

    /// The name of `key`'s `object`, through the client's name mapper as Java's is:
    /// [`EntryObjectName::raw_name`] is the key in Redis; [`EntryObjectName::name`] is
    /// what the handles of this type are given (they map it once more).
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RedissonObject#getLockByMapKey(key, suffix)` / `getLockByValue(value, suffix)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) -> Result<(), redisson_lock::codec::CodecError> {
    /// use redisson_lock::names::EntryObject;
    /// use redisson_lock::codec::JavaCodec;
    /// let map = client.map_with_codec("orders", JavaCodec::String);
    /// let entry = map.entry_name("o-1", EntryObject::Lock)?;
    /// assert_eq!(entry.raw_name(), "{orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
    /// # Ok(()) }
    /// ```
    pub fn entry_name(
        &self,
        key: impl EntryKey,
        object: EntryObject,
    ) -> Result<EntryObjectName, CodecError> {
        let bytes = key.encode_with(self.codec)?;
        Ok(EntryObjectName::with_config(
            &self.name,
            &bytes,
            object,
            self.client.config(),
        ))
    }

    /// The handle's name for `key`'s `object`: [`EntryObjectName::name`].
    fn handle_name(&self, key: impl EntryKey, object: EntryObject) -> Result<String, CodecError> {
        let entry = self.entry_name(key, object)?;
        Ok(entry.name().to_owned())
    }

    /// The lock of `key`: an ordinary [`RLock`] on `{map}:<hash>:lock`. No I/O. It is
    /// also the lock a Java `RTransaction` takes on the map key it writes (its hash field
    /// carries the transaction's id), so holding it keeps such a transaction from
    /// committing that key, and the other way round.
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RMap#getLock(K key)`, `RSet#getLock(V value)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.map("orders").get_lock("o-1")?;
    /// let guard = lock.acquire().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_lock(&self, key: impl EntryKey) -> Result<RLock, CodecError> {
        Ok(self
            .client
            .get_lock(self.handle_name(key, EntryObject::Lock)?))
    }

    /// The fair lock of `key` (`{map}:<hash>:fairlock`). No I/O.
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RMap#getFairLock(K key)`, `RSet#getFairLock(V value)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.map("orders").get_fair_lock("o-1")?;
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_fair_lock(&self, key: impl EntryKey) -> Result<FairLock, CodecError> {
        Ok(self
            .client
            .get_fair_lock(self.handle_name(key, EntryObject::FairLock)?))
    }

    /// The read-write lock of `key` (`{map}:<hash>:rw_lock`). No I/O.
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RMap#getReadWriteLock(K key)`, `RSet#getReadWriteLock(V value)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let rw = client.map("orders").get_read_write_lock("o-1")?;
    /// rw.read_lock().lock().await?;
    /// rw.read_lock().unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_read_write_lock(&self, key: impl EntryKey) -> Result<ReadWriteLock, CodecError> {
        Ok(self
            .client
            .get_read_write_lock(self.handle_name(key, EntryObject::ReadWriteLock)?))
    }

    /// The semaphore of `key` (`{map}:<hash>:semaphore`). No I/O.
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RMap#getSemaphore(K key)`, `RSet#getSemaphore(V value)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let semaphore = client.map("tenants").get_semaphore("t-7")?;
    /// semaphore.try_set_permits(3).await?;
    /// semaphore.acquire(1).await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn get_semaphore(&self, key: impl EntryKey) -> Result<Semaphore, CodecError> {
        Ok(self
            .client
            .get_semaphore(self.handle_name(key, EntryObject::Semaphore)?))
    }

    /// The permit-expirable semaphore of `key` (`{map}:<hash>:permitexpirablesemaphore`,
    /// its leases in that name + `:timeout`). No I/O.
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RMap#getPermitExpirableSemaphore(K key)`, `RSet#getPermitExpirableSemaphore(V value)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let sem = client.map("tenants").get_permit_expirable_semaphore("t-7")?;
    /// sem.try_set_permits(2).await?;
    /// # Ok(()) }
    /// ```
    pub fn get_permit_expirable_semaphore(
        &self,
        key: impl EntryKey,
    ) -> Result<PermitExpirableSemaphore, CodecError> {
        Ok(self.client.get_permit_expirable_semaphore(
            self.handle_name(key, EntryObject::PermitExpirableSemaphore)?,
        ))
    }

    /// The count-down latch of `key` (`{map}:<hash>:countdownlatch`). No I/O.
    ///
    /// **Not on a Redis Cluster.** Redisson wraps a latch's name in new braces for its
    /// channel, so this latch's channel `redisson_countdownlatch__channel__{{map}:...}`
    /// hashes to another slot than its key: real Redisson's `trySetCount` and
    /// `countDown` on it fail with `CROSSSLOT`, and on a cluster every method of this
    /// handle returns [`Error::InvalidArgument`](crate::Error::InvalidArgument) before
    /// any I/O (see [`CountDownLatch`]). On a single server or Sentinel it works, beside
    /// Java.
    ///
    /// # Errors
    /// [`CodecError`] when the map's codec cannot write `key` byte for byte.
    ///
    /// # Redisson equivalent
    /// `RMap#getCountDownLatch(K key)`, `RSet#getCountDownLatch(V value)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let latch = client.map("batches").get_count_down_latch("b-7")?;
    /// latch.try_set_count(3).await?;
    /// # Ok(()) }
    /// ```
    pub fn get_count_down_latch(&self, key: impl EntryKey) -> Result<CountDownLatch, CodecError> {
        Ok(self
            .client
            .get_count_down_latch(self.handle_name(key, EntryObject::CountDownLatch)?))
    }
}

/// Java's `getMap` / `getSet`: a client hands out the per-key objects of a map or set.
impl Client {
    /// The per-key locks, semaphores and latches of the Java map `name`
    /// (`redisson.getMap(name)`, also `getMapCache` and `getLocalCachedMap`), keys
    /// encoded with the client's codec, as Java's `getMap(name)` encodes them with its
    /// `Config.getCodec()`: [`Config::codec`](crate::Config::codec), Redisson's default
    /// `Kryo5Codec` unless the configuration names another
    /// ([`ConfigBuilder::codec`](crate::ConfigBuilder::codec), or the `codec:` of a
    /// `redisson.yaml`). A map Java makes with `getMap(name, codec)` needs
    /// [`Client::map_with_codec`]. The map's name goes through the client's name mapper,
    /// as Java's does. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getMap(String name)`, then `getLock(key)` and its siblings
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// // Java: redisson.getMap("orders").getLock("o-1").lock()
    /// let lock = client.map("orders").get_lock("o-1")?;
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn map(&self, name: impl Into<String>) -> EntryObjects {
        self.map_with_codec(name, self.config().codec())
    }

    /// [`Client::map`] for a map whose keys Java encodes with `codec`
    /// (`redisson.getMap(name, codec)`, or a client with `config.setCodec(codec)`). No
    /// I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getMap(String name, Codec codec)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::codec::JavaCodec;
    /// // Java: redisson.getMap("orders", StringCodec.INSTANCE).getFairLock("o-1")
    /// let lock = client.map_with_codec("orders", JavaCodec::String).get_fair_lock("o-1")?;
    /// assert_eq!(lock.raw_name(), "{orders}:SCr6VJrRQp772OGd8PWr8Q:fairlock");
    /// # Ok(()) }
    /// ```
    pub fn map_with_codec(&self, name: impl Into<String>, codec: JavaCodec) -> EntryObjects {
        EntryObjects::new(self.clone(), name.into(), codec, Collection::Map)
    }

    /// The per-value locks, semaphores and latches of the Java set `name`
    /// (`redisson.getSet(name)`), values encoded with the client's codec (see
    /// [`Client::map`]). A set's object for a value is the map's object for the same key
    /// and name: the names are built alike. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSet(String name)`, then `getLock(value)` and its siblings
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let semaphore = client.set("tags").get_semaphore("rust")?;
    /// semaphore.try_set_permits(1).await?;
    /// # Ok(()) }
    /// ```
    pub fn set(&self, name: impl Into<String>) -> EntryObjects {
        self.set_with_codec(name, self.config().codec())
    }

    /// [`Client::set`] for a set whose values Java encodes with `codec`. No I/O.
    ///
    /// # Redisson equivalent
    /// `RedissonClient#getSet(String name, Codec codec)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use redisson_lock::codec::JavaCodec;
    /// let lock = client.set_with_codec("tags", JavaCodec::String).get_lock("rust")?;
    /// lock.lock().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn set_with_codec(&self, name: impl Into<String>, codec: JavaCodec) -> EntryObjects {
        EntryObjects::new(self.clone(), name.into(), codec, Collection::Set)
    }
}
