//! [`LockKeys`]: every key and channel Redisson (and this crate) may use for one lock name,
//! for tools that read a lock's raw state (the `redisson-lock` inspector, dashboards,
//! tests).
//!
//! The names come from the same functions the locks use, so they follow Redisson's
//! `prefixName` rule: a name without `{` is wrapped in braces; a name that already
//! contains `{` is used as it is.
//!
//! [`LockKeys::new`] takes the name as stored in Redis; [`LockKeys::with_config`] and
//! [`LockKeys::mapped`] take the name an application gives and map it as a client with
//! that [`NameMapper`] does.

use crate::names;
use crate::names::mapper::{FairQueueNames, NameMapper};

/// The keys and channels of the lock named `name`, whatever its kind.
///
/// Which of them exist tells the kind: a `mode` field in the hash is a read-write lock, a
/// queue or deadline set is a fair lock, a token counter is a fenced lock.
///
/// # Examples
/// ```
/// let keys = redisson_lock::names::LockKeys::new("orders");
/// assert_eq!(keys.name(), "orders");
/// assert_eq!(keys.channel(), "redisson_lock__channel:{orders}");
/// assert_eq!(keys.fair_queue(), "redisson_lock_queue:{orders}");
/// assert_eq!(keys.fair_timeouts(), "redisson_lock_timeout:{orders}");
/// assert_eq!(keys.rwlock_channel(), "redisson_rwlock:{orders}");
/// assert_eq!(keys.fencing_token(), "redisson_lock_token:{orders}");
/// assert_eq!(keys.fair_waiter_channel("u:1"), "redisson_lock__channel:{orders}:u:1");
/// assert_eq!(keys.read_timeout_key("u:1", 2), "{orders}:u:1:rwlock_timeout:2");
/// // A name with a hash tag of its own keeps it.
/// assert_eq!(redisson_lock::names::LockKeys::new("a{b}").channel(), "redisson_lock__channel:a{b}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockKeys {
    name: String,
    /// The name the fair queue and deadline set are built from, when it is not `name`
    /// (Redisson up to 3.51.x with a name mapper: the unmapped name).
    fair_base: Option<String>,
}

impl LockKeys {
    /// The keys of the lock `name` (the name as stored in Redis, already mapped). No I/O.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("app1:orders");
    /// assert_eq!(keys.name(), "app1:orders");
    /// assert_eq!(keys.fair_queue(), "redisson_lock_queue:{app1:orders}");
    /// ```
    pub fn new(name: impl Into<String>) -> LockKeys {
        LockKeys {
            name: name.into(),
            fair_base: None,
        }
    }

    /// The keys of the lock an application names `name`, as a client with `mapper` and
    /// the fair-queue naming `fair` stores it. No I/O.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::PrefixNameMapper;
    /// use redisson_lock::config::FairQueueNames;
    /// use redisson_lock::names::LockKeys;
    /// let mapper = PrefixNameMapper::new("app1:");
    ///
    /// let keys = LockKeys::mapped("tickets", &mapper, FairQueueNames::Mapped);
    /// assert_eq!(keys.name(), "app1:tickets");
    /// assert_eq!(keys.channel(), "redisson_lock__channel:{app1:tickets}");
    /// assert_eq!(keys.fair_queue(), "redisson_lock_queue:{app1:tickets}");
    ///
    /// // Redisson up to 3.51.x built the fair queue from the unmapped name.
    /// let old = LockKeys::mapped("tickets", &mapper, FairQueueNames::Unmapped);
    /// assert_eq!(old.name(), "app1:tickets");
    /// assert_eq!(old.fair_queue(), "redisson_lock_queue:{tickets}");
    /// assert_eq!(old.fair_timeouts(), "redisson_lock_timeout:{tickets}");
    /// assert_eq!(old.fair_waiter_channel("u:1"), "redisson_lock__channel:{app1:tickets}:u:1");
    /// ```
    pub fn mapped(name: &str, mapper: &dyn NameMapper, fair: FairQueueNames) -> LockKeys {
        let raw = mapper.map(name);
        let fair_base = match fair {
            FairQueueNames::Unmapped if raw != name => Some(name.to_owned()),
            _ => None,
        };
        LockKeys {
            name: raw,
            fair_base,
        }
    }

    /// The lock key itself: a hash (every kind).
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::names::LockKeys::new("orders").name(), "orders");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name the fair lock's queue and deadline set are built from: [`LockKeys::name`],
    /// or the unmapped name for [`FairQueueNames::Unmapped`].
    fn fair_base(&self) -> &str {
        self.fair_base.as_deref().unwrap_or(&self.name)
    }

    /// The unlock channel of the reentrant, fenced and non-reentrant locks:
    /// `redisson_lock__channel:{N}`.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.channel(), "redisson_lock__channel:{orders}");
    /// ```
    pub fn channel(&self) -> String {
        names::lock_channel(&self.name)
    }

    /// The fair lock's wait queue (a list of owner fields): `redisson_lock_queue:{N}` (for
    /// [`FairQueueNames::Unmapped`], `N` is the unmapped name here).
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.fair_queue(), "redisson_lock_queue:{orders}");
    /// ```
    pub fn fair_queue(&self) -> String {
        names::fair_queue(self.fair_base())
    }

    /// The fair lock's waiter deadlines (a sorted set, score = epoch ms):
    /// `redisson_lock_timeout:{N}`.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.fair_timeouts(), "redisson_lock_timeout:{orders}");
    /// ```
    pub fn fair_timeouts(&self) -> String {
        names::fair_timeouts(self.fair_base())
    }

    /// The channel a fair-lock waiter with hash field `field` listens on:
    /// `redisson_lock__channel:{N}:<field>`.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.fair_waiter_channel("u:1"), "redisson_lock__channel:{orders}:u:1");
    /// ```
    pub fn fair_waiter_channel(&self, field: &str) -> String {
        names::fair_waiter_channel(&self.name, field)
    }

    /// The read-write lock's channel: `redisson_rwlock:{N}`.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.rwlock_channel(), "redisson_rwlock:{orders}");
    /// ```
    pub fn rwlock_channel(&self) -> String {
        names::rwlock_channel(&self.name)
    }

    /// The timeout key of read hold `k` (1-based) of the reader with hash field `field`:
    /// `{N}:<field>:rwlock_timeout:<k>`.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.read_timeout_key("u:1", 2), "{orders}:u:1:rwlock_timeout:2");
    /// ```
    pub fn read_timeout_key(&self, field: &str, k: u64) -> String {
        format!("{}:{k}", names::read_timeout_prefix(&self.name, field))
    }

    /// The fenced lock's token counter: `redisson_lock_token:{N}`.
    ///
    /// # Examples
    /// ```
    /// let keys = redisson_lock::names::LockKeys::new("orders");
    /// assert_eq!(keys.fencing_token(), "redisson_lock_token:{orders}");
    /// ```
    pub fn fencing_token(&self) -> String {
        names::fencing_token(&self.name)
    }
}
