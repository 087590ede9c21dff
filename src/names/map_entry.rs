//! [`EntryObjectName`]: the name Redisson gives the lock, fair lock, read-write lock,
//! semaphore, permit-expirable semaphore or count-down latch of one map key
//! (`RMap#getLock(key)`, ...) or set value (`RSet#getLock(value)`, ...), and
//! [`EntryObject`], which of them.
//!
//! Recipe (Redisson's `RedissonObject#getLockByMapKey` / `getLockByValue`): the key's bytes
//! as the map's codec writes them ([`JavaCodec`](crate::codec::JavaCodec)) are hashed with
//! `Hash.hash128toBase64` (22 characters, the hash of
//! [`FasterMulti::field_id`](crate::kinds::FasterMulti::field_id)), and the object's name is
//! `suffixName(<map's raw name>, <hash> + ":" + <suffix>)`: `{<map>}:<hash>:<suffix>`, or
//! `<map>:<hash>:<suffix>` when the map's name already holds a `{`.
//!
//! Name mappers: Redisson maps twice. `getMap(name)` maps the map's name (its raw name),
//! the object's name is built from that, and the object's constructor maps the result once
//! more, as it maps every object's name. So with a prefix mapper `app1:` the lock of map
//! `orders`, key `o-1` (`StringCodec`) is the key
//! `app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock`. [`EntryObjectName`] keeps the two
//! steps apart: [`EntryObjectName::name`] is the name after the first mapping, which is
//! what a handle of this crate is given (`Client::get_lock` maps it the second time), and
//! [`EntryObjectName::raw_name`] is the key in Redis.

use crate::names::formats::HashTag;
use crate::names::mapper::NameMapper;

/// Which object of a map key (or set value): Redisson's per-key objects and the suffix
/// their names end with.
///
/// | Java | `EntryObject` | suffix | handle of this crate |
/// |---|---|---|---|
/// | `RMap#getLock(key)` | [`Lock`](EntryObject::Lock) | `lock` | [`Client::get_lock`](crate::Client::get_lock) |
/// | `RMap#getFairLock(key)` | [`FairLock`](EntryObject::FairLock) | `fairlock` | [`Client::get_fair_lock`](crate::Client::get_fair_lock) |
/// | `RMap#getReadWriteLock(key)` | [`ReadWriteLock`](EntryObject::ReadWriteLock) | `rw_lock` | [`Client::get_read_write_lock`](crate::Client::get_read_write_lock) |
/// | `RMap#getSemaphore(key)` | [`Semaphore`](EntryObject::Semaphore) | `semaphore` | [`Client::get_semaphore`](crate::Client::get_semaphore) |
/// | `RMap#getPermitExpirableSemaphore(key)` | [`PermitExpirableSemaphore`](EntryObject::PermitExpirableSemaphore) | `permitexpirablesemaphore` | [`Client::get_permit_expirable_semaphore`](crate::Client::get_permit_expirable_semaphore) |
/// | `RMap#getCountDownLatch(key)` | [`CountDownLatch`](EntryObject::CountDownLatch) | `countdownlatch` | [`Client::get_count_down_latch`](crate::Client::get_count_down_latch) |
///
/// `RSet`'s methods of the same names give the same objects for a value.
///
/// # Examples
/// ```
/// use redisson_lock::names::EntryObject;
/// assert_eq!(EntryObject::ReadWriteLock.suffix(), "rw_lock");
/// assert_eq!(EntryObject::ALL.len(), 6);
/// assert_eq!(EntryObject::Lock.to_string(), "lock");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryObject {
    /// `getLock(key)`: a reentrant lock.
    Lock,
    /// `getFairLock(key)`: a fair lock.
    FairLock,
    /// `getReadWriteLock(key)`: a read-write lock (its read and write locks share the name).
    ReadWriteLock,
    /// `getSemaphore(key)`: a semaphore.
    Semaphore,
    /// `getPermitExpirableSemaphore(key)`: a permit-expirable semaphore (its leases live in
    /// the name + `:timeout`).
    PermitExpirableSemaphore,
    /// `getCountDownLatch(key)`: a count-down latch.
    CountDownLatch,
}

impl EntryObject {
    /// Every kind, in the order of Redisson's `RMap` methods.
    ///
    /// # Examples
    /// ```
    /// let suffixes: Vec<_> = redisson_lock::names::EntryObject::ALL.iter().map(|o| o.suffix()).collect();
    /// assert_eq!(suffixes[0], "lock");
    /// ```
    pub const ALL: [EntryObject; 6] = [
        EntryObject::Lock,
        EntryObject::FairLock,
        EntryObject::ReadWriteLock,
        EntryObject::Semaphore,
        EntryObject::PermitExpirableSemaphore,
        EntryObject::CountDownLatch,
    ];

    /// The suffix Redisson ends the object's name with.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::names::EntryObject;
    /// assert_eq!(EntryObject::PermitExpirableSemaphore.suffix(), "permitexpirablesemaphore");
    /// ```
    pub const fn suffix(self) -> &'static str {
        match self {
            EntryObject::Lock => "lock",
            EntryObject::FairLock => "fairlock",
            EntryObject::ReadWriteLock => "rw_lock",
            EntryObject::Semaphore => "semaphore",
            EntryObject::PermitExpirableSemaphore => "permitexpirablesemaphore",
            EntryObject::CountDownLatch => "countdownlatch",
        }
    }
}

impl std::fmt::Display for EntryObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.suffix())
    }
}

/// The name of one map key's (or set value's) lock, semaphore or latch, as Redisson builds
/// it: before the object's own name mapping ([`name`](EntryObjectName::name)) and in
/// Redis ([`raw_name`](EntryObjectName::raw_name)). Pure: no I/O.
///
/// The key is given as the bytes the map's codec writes for it: encode it with
/// [`JavaCodec::encode`](crate::codec::JavaCodec::encode) (a `&str` is not taken as bytes by
/// itself, since under Redisson's default codec its bytes are not its UTF-8).
///
/// # Which name goes where
///
/// * [`name`](EntryObjectName::name): the name to give a handle of a client with the
///   same name mapper (`client.get_lock(entry.name())`): the client maps it once, as the
///   Java object's constructor does, and lands on [`raw_name`](EntryObjectName::raw_name).
///   It is also what the Java object's `getName()` answers (for a mapper whose `unmap`
///   undoes `map`). For a fair lock under
///   [`FairQueueNames::Unmapped`](crate::config::FairQueueNames::Unmapped) (Redisson up to
///   3.51.x) the queue is built from this name, as Java's is.
/// * [`raw_name`](EntryObjectName::raw_name): the key in Redis (Java's `getRawName()`), for
///   [`LockKeys::new`](crate::names::LockKeys::new), the inspector, or raw commands. Never give
///   it to a client that has a name mapper: it would be mapped a third time.
///
/// Without a mapper the two are equal. Use [`EntryObjectName::with_config`] with the
/// client's own [`Config`](crate::Config) so that the mapper here is the client's.
///
/// # Examples
/// ```
/// use redisson_lock::PrefixNameMapper;
/// use redisson_lock::names::{EntryObject, EntryObjectName};
/// use redisson_lock::codec::JavaCodec;
///
/// // Java: redisson.getMap("orders", StringCodec.INSTANCE).getLock("o-1")
/// let key = JavaCodec::String.encode("o-1")?;
/// let lock = EntryObjectName::new("orders", &key, EntryObject::Lock);
/// assert_eq!(lock.raw_name(), "{orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
///
/// // The same under Redisson's default codec (Kryo5Codec).
/// let key = JavaCodec::Kryo5.encode("o-1")?;
/// let lock = EntryObjectName::new("orders", &key, EntryObject::Lock);
/// assert_eq!(lock.raw_name(), "{orders}:SqBMO/H/ZbaHHTFor61/4A:lock");
///
/// // A Java client with a prefix name mapper maps twice.
/// let key = JavaCodec::String.encode("o-1")?;
/// let mapper = PrefixNameMapper::new("app1:");
/// let lock = EntryObjectName::mapped("orders", &key, EntryObject::Lock, &mapper);
/// assert_eq!(lock.name(), "{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
/// assert_eq!(lock.raw_name(), "app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
/// # Ok::<(), redisson_lock::codec::CodecError>(())
/// ```
///
/// With a client (its handles map [`name`](EntryObjectName::name) once more):
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::names::{EntryObject, EntryObjectName};
/// use redisson_lock::codec::JavaCodec;
/// let key = JavaCodec::Kryo5.encode("o-1")?;
/// let entry = EntryObjectName::with_config("orders", &key, EntryObject::Lock, client.config());
/// let lock = client.get_lock(entry.name());
/// assert_eq!(lock.raw_name(), entry.raw_name());
/// lock.lock().await?;
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EntryObjectName {
    object: EntryObject,
    name: String,
    /// `None` when no mapper changed [`EntryObjectName::name`].
    raw: Option<String>,
}

impl EntryObjectName {
    /// The `object` of key `key` (its encoded bytes) in the map or set `map`, for a client
    /// without a name mapper: [`name`](EntryObjectName::name) and
    /// [`raw_name`](EntryObjectName::raw_name) are equal.
    ///
    /// # Redisson equivalent
    /// `RedissonObject#getLockByMapKey(key, suffix)` / `getLockByValue(value, suffix)`
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::names::{EntryObject, EntryObjectName};
    /// use redisson_lock::codec::JavaCodec;
    /// let key = JavaCodec::String.encode("o-1")?;
    /// // A map name with a hash tag of its own is not wrapped again.
    /// let latch = EntryObjectName::new("{tag}orders", &key, EntryObject::CountDownLatch);
    /// assert_eq!(latch.raw_name(), "{tag}orders:SCr6VJrRQp772OGd8PWr8Q:countdownlatch");
    /// assert_eq!(latch.name(), latch.raw_name());
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    pub fn new(map: &str, key: &[u8], object: EntryObject) -> EntryObjectName {
        EntryObjectName {
            object,
            name: entry_object_name(map, key, object),
            raw: None,
        }
    }

    /// The `object` of key `key` in the map or set the application names `map`, for a
    /// client with name mapper `mapper`: the map's name is mapped, the object's name built
    /// from it ([`name`](EntryObjectName::name)), and that mapped once more
    /// ([`raw_name`](EntryObjectName::raw_name)).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::PrefixNameMapper;
    /// use redisson_lock::names::{EntryObject, EntryObjectName};
    /// use redisson_lock::codec::JavaCodec;
    /// let key = JavaCodec::String.encode("o-1")?;
    /// let mapper = PrefixNameMapper::new("app1:");
    /// let sem = EntryObjectName::mapped("orders", &key, EntryObject::Semaphore, &mapper);
    /// assert_eq!(sem.raw_name(), "app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:semaphore");
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    pub fn mapped(
        map: &str,
        key: &[u8],
        object: EntryObject,
        mapper: &dyn NameMapper,
    ) -> EntryObjectName {
        let name = entry_object_name(&mapper.map(map), key, object);
        let raw = mapper.map(&name);
        EntryObjectName {
            object,
            raw: (raw != name).then_some(raw),
            name,
        }
    }

    /// Which object this is.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::names::{EntryObject, EntryObjectName};
    /// let fair = EntryObjectName::new("orders", b"o-1", EntryObject::FairLock);
    /// assert_eq!(fair.object(), EntryObject::FairLock);
    /// ```
    pub fn object(&self) -> EntryObject {
        self.object
    }

    /// The object's name before its own name mapping: what to give a handle of a client
    /// with the same mapper (`client.get_lock(entry.name())`), and what the Java object's
    /// `getName()` answers.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::names::{EntryObject, EntryObjectName};
    /// let lock = EntryObjectName::new("orders", b"o-1", EntryObject::Lock);
    /// assert_eq!(lock.name(), "{orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The object's key in Redis (Java's `getRawName()`).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::names::{EntryObject, EntryObjectName, LockKeys};
    /// let rw = EntryObjectName::new("orders", b"o-1", EntryObject::ReadWriteLock);
    /// let keys = LockKeys::new(rw.raw_name());
    /// assert_eq!(keys.rwlock_channel(), "redisson_rwlock:{orders}:SCr6VJrRQp772OGd8PWr8Q:rw_lock");
    /// ```
    pub fn raw_name(&self) -> &str {
        self.raw.as_deref().unwrap_or(&self.name)
    }
}

/// Redisson's `suffixName(map, hash128toBase64(key) + ":" + suffix)`, `map` being the
/// map's raw name: the per-key object's name before its own mapping.
pub(crate) fn entry_object_name(map: &str, key: &[u8], object: EntryObject) -> String {
    let hash = crate::names::hash::hash128_base64(key);
    format!("{}:{hash}:{}", HashTag(map), object.suffix())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::JavaCodec;
    use crate::names::mapper::PrefixNameMapper;

    /// The README of the real drivers (`mapobj`, `setobj`, `lock mapkey:...`).
    #[test]
    fn readme_names() {
        let string = JavaCodec::String.encode("o-1").unwrap();
        let kryo = JavaCodec::Kryo5.encode("o-1").unwrap();
        let json = crate::codec::JavaCodec::JsonJackson {
            uuids: crate::codec::JsonUuids::Plain,
        }
        .encode("o-1")
        .unwrap();
        let lock = |map: &str, key: &[u8]| EntryObjectName::new(map, key, EntryObject::Lock);
        assert_eq!(
            lock("orders", &string).raw_name(),
            "{orders}:SCr6VJrRQp772OGd8PWr8Q:lock"
        );
        assert_eq!(
            lock("orders", &kryo).raw_name(),
            "{orders}:SqBMO/H/ZbaHHTFor61/4A:lock"
        );
        assert_eq!(
            lock("orders", &json).raw_name(),
            "{orders}:TWm6PiRMppsfcK8xurPPwQ:lock"
        );
        assert_eq!(
            lock("orders", b"").raw_name(),
            "{orders}:t6rZwibGo2uy1OSmNVe8pg:lock"
        );
        assert_eq!(
            lock("{tag}orders", &string).raw_name(),
            "{tag}orders:SCr6VJrRQp772OGd8PWr8Q:lock"
        );
        // Only `{` counts, as in Redisson (driver: `mapobj a}b o-1 lock`).
        assert_eq!(
            lock("a}b", &string).raw_name(),
            "{a}b}:SCr6VJrRQp772OGd8PWr8Q:lock"
        );
        assert_eq!(
            EntryObjectName::new("orders", &string, EntryObject::Semaphore).raw_name(),
            "{orders}:SCr6VJrRQp772OGd8PWr8Q:semaphore"
        );
    }

    #[test]
    fn mapper_maps_twice_and_keeps_the_steps() {
        let mapper = PrefixNameMapper::new("app1:");
        let entry = EntryObjectName::mapped("orders", b"o-1", EntryObject::Lock, &mapper);
        assert_eq!(entry.name(), "{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
        assert_eq!(
            entry.raw_name(),
            "app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock"
        );
        // Handles map the name once: the mapper of the handle lands on the raw name.
        assert_eq!(mapper.map(entry.name()), entry.raw_name());
        assert_eq!(mapper.unmap(entry.raw_name()), entry.name());
        // An identity mapper leaves one name.
        let none = EntryObjectName::mapped(
            "orders",
            b"o-1",
            EntryObject::Lock,
            &PrefixNameMapper::new(""),
        );
        assert_eq!(
            none,
            EntryObjectName::new("orders", b"o-1", EntryObject::Lock)
        );
        for object in EntryObject::ALL {
            let entry = EntryObjectName::mapped("{t}m", b"k", object, &mapper);
            assert!(entry.name().starts_with("app1:{t}m:"), "{entry:?}");
            assert!(entry.name().ends_with(&format!(":{object}")));
            assert_eq!(entry.object(), object);
        }
    }
}
