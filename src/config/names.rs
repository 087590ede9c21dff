//! The names a [`Config`] gives: a lock's keys and a map entry's object name through the
//! configuration's name mapper. (Here, beside `Config`: `names` knows nothing of the
//! configuration.)

use super::built::Config;
use crate::names::keys::LockKeys;
use crate::names::map_entry::{EntryObject, EntryObjectName};

impl LockKeys {
    /// The keys of the lock an application names `name`, as a client with `config` stores
    /// it: through its [name mapper](crate::ConfigBuilder::name_mapper), if any, and its
    /// [fair-queue naming](crate::ConfigBuilder::fair_queue_names). No I/O.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{Config, PrefixNameMapper};
    /// use redisson_lock::names::LockKeys;
    /// let config = Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(LockKeys::with_config("orders", &config).name(), "app1:orders");
    /// let plain = Config::from_url("redis://127.0.0.1:6379").unwrap();
    /// assert_eq!(LockKeys::with_config("orders", &plain), LockKeys::new("orders"));
    /// ```
    pub fn with_config(name: &str, config: &Config) -> LockKeys {
        match config.name_mapper() {
            Some(mapper) => LockKeys::mapped(name, mapper, config.fair_queue_names()),
            None => LockKeys::new(name),
        }
    }
}

impl EntryObjectName {
    /// The `object` of key `key` in map `map` for a client with `config`: through its
    /// [name mapper](crate::ConfigBuilder::name_mapper) as [`EntryObjectName::mapped`],
    /// or as [`EntryObjectName::new`] without one.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{Config, PrefixNameMapper};
    /// use redisson_lock::names::{EntryObject, EntryObjectName};
    /// use redisson_lock::codec::JavaCodec;
    /// let config = Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .build()
    ///     .unwrap();
    /// let key = JavaCodec::String.encode("o-1")?;
    /// let lock = EntryObjectName::with_config("orders", &key, EntryObject::Lock, &config);
    /// assert_eq!(lock.raw_name(), "app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    pub fn with_config(
        map: &str,
        key: &[u8],
        object: EntryObject,
        config: &Config,
    ) -> EntryObjectName {
        match config.name_mapper() {
            Some(mapper) => EntryObjectName::mapped(map, key, object, mapper),
            None => EntryObjectName::new(map, key, object),
        }
    }
}
