//! What a channel's message wakes: each channel is read by its own decoder
//! ([`Messages`]): a lock channel's `0` wakes one waiter and `1` all
//! ([`lock_messages`]); a channel that carries a number (a Redisson semaphore's) wakes up
//! to that many ([`Wake::Count`], [`semaphore_messages`]); a count-down latch's channel
//! wakes its waiters to read the count on `0` and `1` ([`latch_messages`]).

/// What one message wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// One local waiter (or the next one to wait, if none waits now).
    One,
    /// Every local waiter, and the next one to wait.
    All,
    /// Up to this many local waiters (at least one is remembered if none waits now).
    Count(u32),
}

/// Reads one message of a channel: what it wakes, or `None` to ignore it.
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

/// A Redisson semaphore's channel (`redisson_sc:{N}`, shared by `RSemaphore` and
/// `RPermitExpirableSemaphore`): the payload is a decimal number, a wake-up budget
/// (docs/protocol.md §23): `n > 0` wakes up to `n` local waiters; `0`, negatives and anything
/// that is not a number wake nobody (as a Java subscriber ignores them, or throws).
pub(crate) fn semaphore_messages(payload: &[u8]) -> Option<Wake> {
    let n: i64 = std::str::from_utf8(payload).ok()?.parse().ok()?;
    (n > 0).then(|| Wake::Count(u32::try_from(n).unwrap_or(u32::MAX)))
}

/// A Redisson count-down latch's channel (`redisson_countdownlatch__channel__{N}`): `0`
/// (`ZERO_COUNT_MESSAGE`, the count reached zero) and `1` (`NEW_COUNT_MESSAGE`, the count
/// was set, or Java's `delete()` removed the key) wake every waiter; anything else wakes
/// nobody. A waiter re-reads the count after each wake-up, so a stray `0` (or a `1` of a
/// new count) costs one `GET`; the `1` of Java's `delete()` is what releases this crate's
/// waiters of a deleted latch (docs/protocol.md §21.3, §23.4).
pub(crate) fn latch_messages(payload: &[u8]) -> Option<Wake> {
    (payload == b"0" || payload == b"1").then_some(Wake::All)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_channel_reads_its_own_messages() {
        assert_eq!(lock_messages(b"0"), Some(Wake::One));
        assert_eq!(lock_messages(b"1"), Some(Wake::All));
        assert_eq!(lock_messages(b"3"), None);
        assert_eq!(semaphore_messages(b"3"), Some(Wake::Count(3)));
        assert_eq!(semaphore_messages(b"0"), None);
        assert_eq!(semaphore_messages(b"-2"), None);
        assert_eq!(semaphore_messages(b"abc"), None);
        assert_eq!(
            semaphore_messages(b"99999999999"),
            Some(Wake::Count(u32::MAX))
        );
        assert_eq!(latch_messages(b"0"), Some(Wake::All));
        assert_eq!(latch_messages(b"1"), Some(Wake::All));
        assert_eq!(latch_messages(b"2"), None);
    }
}
