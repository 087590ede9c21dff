//! [`NameMapper`]: Redisson's `Config.setNameMapper(...)`, the name a lock has in Redis
//! derived from the name the application gives it; [`PrefixNameMapper`], the common case
//! (one prefix per application or tenant); and [`FairQueueNames`], the one place where
//! Redisson versions disagree on which name a key is built from.
//!
//! Invariant: a lock handle maps its name once, when it is made
//! ([`Client::get_lock`](crate::Client::get_lock) and its siblings); every key and channel
//! of the lock derives from that mapped name (protocol `N`), except the fair lock's queue
//! and deadline set under [`FairQueueNames::Unmapped`]. Without a mapper nothing is mapped
//! and nothing is allocated for it.

use std::fmt::Debug;

/// Turns the name an application gives a lock into the name stored in Redis, and back:
/// Redisson's `org.redisson.api.NameMapper`.
///
/// Set one with [`ConfigBuilder::name_mapper`](crate::ConfigBuilder::name_mapper). Every
/// lock handle of that client maps its name once, when it is made; the lock hash, its
/// channels, the unlock latch, the read-write lock's per-hold keys and the fencing token
/// all derive from the mapped name, as in Redisson. [`Lock::name`](crate::Lock::name)
/// keeps answering the name you gave, [`Lock::raw_name`](crate::Lock::raw_name) the
/// mapped one.
///
/// `unmap` must undo `map` (`unmap(map(x)) == x`): Redisson's `getName()` answers
/// `unmap(rawName)`, this crate answers the name you gave, and the two agree only then.
/// Tools use `unmap` to show the names of the locks they find (the `redisson-lock list`
/// command).
///
/// To share locks with Java apps, map exactly as their `NameMapper` does.
///
/// # Examples
/// ```
/// use redisson_lock::NameMapper;
///
/// /// `<tenant>/<name>` in Redis (the mapper of the Java apps, say).
/// #[derive(Debug)]
/// struct Tenant(String);
///
/// impl NameMapper for Tenant {
///     fn map(&self, name: &str) -> String {
///         format!("{}/{name}", self.0)
///     }
///     fn unmap(&self, name: &str) -> String {
///         name.strip_prefix(&format!("{}/", self.0)).unwrap_or(name).to_owned()
///     }
/// }
///
/// let config = redisson_lock::Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .name_mapper(Tenant("acme".to_owned()))
///     .build()
///     .unwrap();
/// let mapper = config.name_mapper().unwrap();
/// assert_eq!(mapper.map("orders"), "acme/orders");
/// assert_eq!(mapper.unmap("acme/orders"), "orders");
/// ```
pub trait NameMapper: Send + Sync + Debug + 'static {
    /// The name stored in Redis for the application's `name` (Redisson's
    /// `NameMapper#map`).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{NameMapper, PrefixNameMapper};
    /// assert_eq!(PrefixNameMapper::new("app1:").map("orders"), "app1:orders");
    /// ```
    fn map(&self, name: &str) -> String;

    /// The application's name for `name` as stored in Redis (Redisson's
    /// `NameMapper#unmap`); it must undo [`map`](NameMapper::map).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{NameMapper, PrefixNameMapper};
    /// assert_eq!(PrefixNameMapper::new("app1:").unmap("app1:orders"), "orders");
    /// ```
    fn unmap(&self, name: &str) -> String;
}

/// A [`NameMapper`] that puts a fixed prefix before every name: the usual Redisson
/// mapper, one prefix per application or tenant (`app1:orders` for `orders`).
///
/// `unmap` removes the prefix, and leaves a name without it as it is.
///
/// The prefix goes before the whole name, hash tag included: a name `{cart}:1` becomes
/// `app1:{cart}:1` and keeps its cluster slot, and a name without braces becomes part of
/// the `{...}` tag of the lock's auxiliary keys (`redisson_lock__channel:{app1:orders}`),
/// which keeps them in the lock's slot.
///
/// # Examples
/// ```
/// use redisson_lock::{Config, NameMapper, PrefixNameMapper};
///
/// let mapper = PrefixNameMapper::new("app1:");
/// assert_eq!(mapper.prefix(), "app1:");
/// assert_eq!(mapper.map("orders"), "app1:orders");
/// assert_eq!(mapper.unmap("app1:orders"), "orders");
/// assert_eq!(mapper.unmap("other"), "other");
///
/// let config = Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .name_mapper(mapper)
///     .build()
///     .unwrap();
/// assert!(format!("{config:?}").contains("app1:"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrefixNameMapper {
    prefix: String,
}

impl PrefixNameMapper {
    /// A mapper that puts `prefix` before every name. An empty prefix maps nothing.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{NameMapper, PrefixNameMapper};
    /// assert_eq!(PrefixNameMapper::new("tenant-7:").map("jobs"), "tenant-7:jobs");
    /// ```
    pub fn new(prefix: impl Into<String>) -> PrefixNameMapper {
        PrefixNameMapper {
            prefix: prefix.into(),
        }
    }

    /// The prefix.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::PrefixNameMapper::new("app1:").prefix(), "app1:");
    /// ```
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl NameMapper for PrefixNameMapper {
    fn map(&self, name: &str) -> String {
        let mut mapped = String::with_capacity(self.prefix.len() + name.len());
        mapped.push_str(&self.prefix);
        mapped.push_str(name);
        mapped
    }

    fn unmap(&self, name: &str) -> String {
        name.strip_prefix(self.prefix.as_str())
            .unwrap_or(name)
            .to_owned()
    }
}

/// Which name the fair lock's wait queue (`redisson_lock_queue:{...}`) and deadline set
/// (`redisson_lock_timeout:{...}`) are built from, when a [`NameMapper`] is set.
///
/// Redisson changed this in 3.52.0 (issue #6759): up to 3.51.x `RedissonFairLock` built
/// both names from the name the application gave (unmapped), from 3.52.0 on from the
/// mapped name, like every other key. The lock hash, its channels (the waiters' own ones
/// included) and the unlock latch use the mapped name in every version. Without a mapper
/// both settings write the same keys.
///
/// Set it with [`ConfigBuilder::fair_queue_names`](crate::ConfigBuilder::fair_queue_names)
/// to match the Redisson version of the Java apps that share your fair locks: fair
/// waiters of a client with the other setting queue in another list and do not see each
/// other's places.
///
/// # Examples
/// ```
/// use redisson_lock::{Config, PrefixNameMapper};
/// use redisson_lock::config::FairQueueNames;
///
/// // Java apps on Redisson 3.40 with a prefix mapper.
/// let config = Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .name_mapper(PrefixNameMapper::new("app1:"))
///     .fair_queue_names(FairQueueNames::Unmapped)
///     .build()
///     .unwrap();
/// assert_eq!(config.fair_queue_names(), FairQueueNames::Unmapped);
/// assert_eq!(FairQueueNames::default(), FairQueueNames::Mapped);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum FairQueueNames {
    /// From the mapped name, as Redisson 3.52.0 and later (the default):
    /// `redisson_lock_queue:{app1:tickets}`.
    #[default]
    Mapped,
    /// From the name as given, before mapping, as Redisson up to 3.51.x (3.23.3
    /// included): `redisson_lock_queue:{tickets}` beside the hash `app1:tickets`.
    ///
    /// On a Redis Cluster those keys usually hash to another slot than the lock (`tickets`
    /// versus `app1:tickets`), so the fair scripts fail with `CROSSSLOT`, as they did for
    /// Redisson itself, unless the name carries its own hash tag (`{tickets}:1` is stored
    /// as `app1:{tickets}:1`, and every key hashes on `tickets`).
    Unmapped,
}

/// A name as stored in Redis (`raw`: through the client's [`NameMapper`], as Redisson's
/// `RedissonObject` constructor maps it once per object) and as the application gave it
/// (`given`: `None` when no mapper changed it). Every handle kind maps its name here.
#[derive(Clone, Debug)]
pub(crate) struct MappedName {
    pub(crate) raw: std::sync::Arc<str>,
    pub(crate) given: Option<std::sync::Arc<str>>,
}

impl MappedName {
    /// Maps `name` with the client's name mapper, if it has one
    /// (`Config::name_mapper`).
    pub(crate) fn new(mapper: Option<&dyn NameMapper>, name: String) -> MappedName {
        match mapper.map(|mapper| mapper.map(&name)) {
            None => MappedName {
                raw: name.into(),
                given: None,
            },
            Some(raw) => MappedName {
                raw: raw.into(),
                given: Some(name.into()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_mapper_maps_and_unmaps() {
        let mapper = PrefixNameMapper::new("app1:");
        assert_eq!(mapper.map("orders"), "app1:orders");
        assert_eq!(mapper.map(""), "app1:");
        assert_eq!(mapper.unmap(&mapper.map("a{b}c")), "a{b}c");
        assert_eq!(mapper.unmap("orders"), "orders");
        assert_eq!(PrefixNameMapper::new("").map("x"), "x");
    }
}
