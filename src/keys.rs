//! [`LockKeys`]: every key and channel Redisson (and this crate) may use for one lock name,
//! for tools that read a lock's raw state (the `redisson-lock` inspector, dashboards,
//! tests).
//!
//! The names come from the same functions the locks use, so they follow Redisson's
//! `prefixName` rule: a name without `{` is wrapped in braces; a name that already
//! contains `{` is used as it is.

use crate::names;

/// The keys and channels of the lock named `name`, whatever its kind.
///
/// Which of them exist tells the kind: a `mode` field in the hash is a read-write lock, a
/// queue or deadline set is a fair lock, a token counter is a fenced lock.
///
/// # Examples
/// ```
/// let keys = redisson_lock::LockKeys::new("orders");
/// assert_eq!(keys.name(), "orders");
/// assert_eq!(keys.channel(), "redisson_lock__channel:{orders}");
/// assert_eq!(keys.fair_queue(), "redisson_lock_queue:{orders}");
/// assert_eq!(keys.fair_timeouts(), "redisson_lock_timeout:{orders}");
/// assert_eq!(keys.rwlock_channel(), "redisson_rwlock:{orders}");
/// assert_eq!(keys.fencing_token(), "redisson_lock_token:{orders}");
/// assert_eq!(keys.fair_waiter_channel("u:1"), "redisson_lock__channel:{orders}:u:1");
/// assert_eq!(keys.read_timeout_key("u:1", 2), "{orders}:u:1:rwlock_timeout:2");
/// // A name with a hash tag of its own keeps it.
/// assert_eq!(redisson_lock::LockKeys::new("a{b}").channel(), "redisson_lock__channel:a{b}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockKeys {
    name: String,
}

impl LockKeys {
    /// The keys of the lock `name` (the name as stored in Redis). No I/O.
    pub fn new(name: impl Into<String>) -> LockKeys {
        LockKeys { name: name.into() }
    }

    /// The lock key itself: a hash (every kind).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The unlock channel of the reentrant, fenced and non-reentrant locks:
    /// `redisson_lock__channel:{N}`.
    pub fn channel(&self) -> String {
        names::lock_channel(&self.name)
    }

    /// The fair lock's wait queue (a list of owner fields): `redisson_lock_queue:{N}`.
    pub fn fair_queue(&self) -> String {
        names::fair_queue(&self.name)
    }

    /// The fair lock's waiter deadlines (a sorted set, score = epoch ms):
    /// `redisson_lock_timeout:{N}`.
    pub fn fair_timeouts(&self) -> String {
        names::fair_timeouts(&self.name)
    }

    /// The channel a fair-lock waiter with hash field `field` listens on:
    /// `redisson_lock__channel:{N}:<field>`.
    pub fn fair_waiter_channel(&self, field: &str) -> String {
        names::fair_waiter_channel(&self.name, field)
    }

    /// The read-write lock's channel: `redisson_rwlock:{N}`.
    pub fn rwlock_channel(&self) -> String {
        names::rwlock_channel(&self.name)
    }

    /// The timeout key of read hold `k` (1-based) of the reader with hash field `field`:
    /// `{N}:<field>:rwlock_timeout:<k>`.
    pub fn read_timeout_key(&self, field: &str, k: u64) -> String {
        format!("{}:{k}", names::read_timeout_prefix(&self.name, field))
    }

    /// The fenced lock's token counter: `redisson_lock_token:{N}`.
    pub fn fencing_token(&self) -> String {
        names::fencing_token(&self.name)
    }
}
