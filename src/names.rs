//! Every key and channel name this crate writes, each built in one function.
//!
//! The rule is Redisson's `prefixName`: a lock name without `{` is wrapped in braces, so
//! that every auxiliary key hashes to the lock's own cluster slot; a name that already
//! contains `{` is used as it is.

/// The name with Redisson's hash tag: `{N}`, or `N` itself when it contains `{`.
pub(crate) fn hash_tag(name: &str) -> String {
    if name.contains('{') {
        name.to_owned()
    } else {
        format!("{{{name}}}")
    }
}

/// The unlock notification channel: `redisson_lock__channel:{N}`.
pub(crate) fn lock_channel(name: &str) -> String {
    format!("redisson_lock__channel:{}", hash_tag(name))
}

/// The unlock latch of one unlock call: `redisson_unlock_latch:{N}:<request-id>`.
pub(crate) fn unlock_latch(name: &str, request_id: &str) -> String {
    format!("redisson_unlock_latch:{}:{request_id}", hash_tag(name))
}

/// The hash field of one owner: `<client-uuid>:<owner-id>`.
pub(crate) fn owner_field(client_id: &str, owner: crate::LockOwner) -> String {
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
        assert_eq!(
            owner_field(
                "6e3d30b7-83b1-433a-9335-5e8b9916d3ac",
                crate::LockOwner::from_raw(731)
            ),
            "6e3d30b7-83b1-433a-9335-5e8b9916d3ac:731"
        );
    }
}
