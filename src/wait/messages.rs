//! What a channel's message wakes: each channel is read by its own decoder
//! ([`Messages`]): a lock channel's `0` wakes one waiter and `1` all
//! ([`lock_messages`]); a channel that carries a number (a Redisson semaphore's) wakes up
//! to that many ([`Wake::Count`]).

/// What one message wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Wake {
    /// One local waiter (or the next one to wait, if none waits now).
    One,
    /// Every local waiter, and the next one to wait.
    All,
    /// Up to this many local waiters (at least one is remembered if none waits now).
    Count(u32),
}

/// Reads one message of a channel: what it wakes, or `None` to ignore it.
// `Count` and `subscribe_with` are for channels whose messages carry a count (Redisson's
// semaphores); until one lands they serve the unit tests.
pub(crate) type Messages = fn(&[u8]) -> Option<Wake>;

/// A lock channel's messages: `0` (Redisson's `UNLOCK_MESSAGE`) wakes one waiter, `1`
/// (`READ_UNLOCK_MESSAGE`) wakes them all; anything else is ignored, as Redisson's
/// `LockPubSub` does.
pub(crate) fn lock_messages(payload: &[u8]) -> Option<Wake> {
    match payload {
        b"0" => Some(Wake::One),
        b"1" => Some(Wake::All),
        _ => None,
    }
}
