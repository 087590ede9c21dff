//! Every key and channel name this crate writes, each built in one function.
//!
//! The rule is Redisson's `prefixName`: a lock name without `{` is wrapped in braces, so
//! that every auxiliary key hashes to the lock's own cluster slot; a name that already
//! contains `{` is used as it is.

/// The name with Redisson's hash tag: `{N}`, or `N` itself when it contains `{`.
pub(crate) fn hash_tag(name: &str) -> String {
    HashTag(name).to_string()
}

/// [`hash_tag`] as a `Display`, so that a key built around it is one allocation.
pub(crate) struct HashTag<'a>(pub(crate) &'a str);

impl std::fmt::Display for HashTag<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.contains('{') {
            f.write_str(self.0)
        } else {
            write!(f, "{{{}}}", self.0)
        }
    }
}

/// The unlock notification channel: `redisson_lock__channel:{N}`.
pub(crate) fn lock_channel(name: &str) -> String {
    format!("redisson_lock__channel:{}", HashTag(name))
}

/// The mark of this crate's local lines: `redisson_lock__channel:{N}:local_line`, a
/// channel nobody publishes on. A client whose local line waits for `N` subscribes to it
/// beside the lock channel, so that a hand-off script can tell the lock channel's other
/// listeners (clients that wait the Redisson way) from lines like its own (protocol §16).
/// It lies under the lock channel's name, so an ACL that grants a lock's channels
/// (`&redisson_lock__channel:{app:*`) grants it too; no fair waiter's channel
/// (`...:{N}:<client-id>:<owner>`) can be named so.
pub(crate) fn line_marker(name: &str) -> String {
    format!("redisson_lock__channel:{}:local_line", HashTag(name))
}

/// The fair lock's wait queue: `redisson_lock_queue:{N}`.
pub(crate) fn fair_queue(name: &str) -> String {
    format!("redisson_lock_queue:{}", HashTag(name))
}

/// The fair lock's waiter deadlines: `redisson_lock_timeout:{N}`.
pub(crate) fn fair_timeouts(name: &str) -> String {
    format!("redisson_lock_timeout:{}", HashTag(name))
}

/// One fair-lock waiter's channel: `redisson_lock__channel:{N}:<client-uuid>:<owner>`.
pub(crate) fn fair_waiter_channel(name: &str, field: &str) -> String {
    format!("{}:{field}", lock_channel(name))
}

/// The read-write lock's channel: `redisson_rwlock:{N}`.
pub(crate) fn rwlock_channel(name: &str) -> String {
    format!("redisson_rwlock:{}", HashTag(name))
}

/// The prefix of one read holder's per-hold timeout keys:
/// `{N}:<client-uuid>:<owner>:rwlock_timeout` (hold `k` is this `:k`).
pub(crate) fn read_timeout_prefix(name: &str, field: &str) -> String {
    format!("{}:{field}:rwlock_timeout", HashTag(name))
}

/// The fenced lock's token counter: `redisson_lock_token:{N}`.
pub(crate) fn fencing_token(name: &str) -> String {
    format!("redisson_lock_token:{}", HashTag(name))
}

/// A Redisson semaphore's channel, shared by `RSemaphore` and `RPermitExpirableSemaphore`
/// of one name: `redisson_sc:{N}` (docs/protocol.md §19.1).
pub(crate) fn semaphore_channel(name: &str) -> String {
    format!("redisson_sc:{}", HashTag(name))
}

/// A permit-expirable semaphore's held permits (a sorted set, score = expiry):
/// `{N}:timeout` (docs/protocol.md §20.1).
pub(crate) fn permit_timeouts(name: &str) -> String {
    format!("{}:timeout", HashTag(name))
}

/// A Redisson count-down latch's channel: `redisson_countdownlatch__channel__{N}`, the
/// braces added even when `N` has some (docs/protocol.md §21.1; on a cluster such a
/// name's channel and key hash to different slots, §25.3).
pub(crate) fn latch_channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// The unlock latch of one unlock call: `redisson_unlock_latch:{N}:<request-id>`.
pub(crate) fn unlock_latch(name: &str, request_id: impl std::fmt::Display) -> String {
    format!("redisson_unlock_latch:{}:{request_id}", HashTag(name))
}

/// The hash field of one owner: `<client-uuid>:<owner-id>`.
pub(crate) fn owner_field(client_id: &str, owner: crate::names::owner::LockOwner) -> String {
    format!("{client_id}:{owner}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_redisson_prefix_name() {
        assert_eq!(lock_channel("orders"), "redisson_lock__channel:{orders}");
        assert_eq!(lock_channel("a{b}c"), "redisson_lock__channel:a{b}c");
        assert_eq!(unlock_latch("x", "ab"), "redisson_unlock_latch:{x}:ab");
        assert_eq!(fair_queue("n"), "redisson_lock_queue:{n}");
        assert_eq!(fair_timeouts("n"), "redisson_lock_timeout:{n}");
        assert_eq!(
            fair_waiter_channel("n", "u:1"),
            "redisson_lock__channel:{n}:u:1"
        );
        assert_eq!(rwlock_channel("n"), "redisson_rwlock:{n}");
        assert_eq!(read_timeout_prefix("n", "u:1"), "{n}:u:1:rwlock_timeout");
        assert_eq!(
            read_timeout_prefix("a{b}", "u:1"),
            "a{b}:u:1:rwlock_timeout"
        );
        assert_eq!(fencing_token("n"), "redisson_lock_token:{n}");
        assert_eq!(
            owner_field(
                "6e3d30b7-83b1-433a-9335-5e8b9916d3ac",
                crate::names::owner::LockOwner::from_raw(731)
            ),
            "6e3d30b7-83b1-433a-9335-5e8b9916d3ac:731"
        );
    }
}
