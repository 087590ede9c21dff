//! What a kind may change in how the engine behaves, beyond its scripts: one
//! [`Capabilities`] value per kind (`Kind::CAPABILITIES`, none by default), and the list
//! of every branch of the engine that reads it.
//!
//! A kind's scripts, keys, channel, replies and renewal reach the engine through the
//! methods of [`Kind`](super::kind::Kind); everything else a kind changes is a field
//! here, set in the kind's own file and read by the engine as `K::CAPABILITIES.<field>`.

/// The engine behaviours a kind turns on; [`Capabilities::NONE`] (the default) is RLock's
/// engine without its local line: Redisson's wait loop, no queue, no token.
///
/// A kind sets only what it changes, in its `impl Kind`:
///
/// ```text
/// const CAPABILITIES: Capabilities = Capabilities {
///     queues_in_redis: true,
///     ..Capabilities::NONE
/// };
/// ```
///
/// Every branch of the engine a kind can cause, besides the calls its methods build:
///
/// | field | kinds | where the engine reads it | what changes |
/// |---|---|---|---|
/// | `queues_in_redis` | fair, non-reentrant fair | `queue_exit.rs`: `QueueExit::new`; `queue_handoff.rs`: `QueuedPlace::join`; `releasing.rs`: `release_settled` | a waiter that gives up (or is dropped) runs the kind's `acquire_failed`; waiters are listed in [`crate::engine::wait::queued_waiters`], and a release may hand the lock to the head of the queue when it is one of them (`Kind::queue_handoff` builds the call) |
/// | `hands_out_tokens` | fenced | `acquiring.rs`: `acquire_script` | an acquire whose reply was lost and that ran is released and sent again: its token went with the reply |
/// | `write_lock` | write | `acquiring.rs`: `acquire_redisson_wait`; the hold ledger and renewal calls of every file | its waiters announce themselves to this client's readers; its holds are kept apart from the read holds of the same name |
/// | `yields_to_writers` | read | `acquiring.rs`: `acquire_with_wait`; `waiting.rs`: `yield_to_writers`; `settling.rs`: `learn_outcome` | a single try takes the wait path too; a reader that holds nothing lets announced writers go first; a lost acquire is never assumed expired (other readers keep the hash alive) |
/// | `hands_off_locally` | reentrant, non-reentrant, spin | `acquiring.rs`: `acquire_with_wait`, `attempt`; `releasing.rs`: `release_settled`; `kind.rs`: `Kind::handoff` | waiters queue in this client's local line ([`crate::engine::wait::local_queue`]); a release may hand the lock to the next local waiter |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// Waiters queue in Redis (the fair lock): a waiter that gives up must leave the
    /// queue through the kind's `acquire_failed`, and a release may hand the lock to the
    /// head of the queue when it is a waiter of this client (`Kind::queue_handoff`).
    pub(crate) queues_in_redis: bool,
    /// An acquisition hands out a token (the fenced lock): an acquire whose reply was lost
    /// is then undone rather than reported, as its token is unknown.
    pub(crate) hands_out_tokens: bool,
    /// The write half of a read-write lock: its waiters announce themselves to this
    /// client's readers of the same lock (see `writer_gates`), and its holds are counted
    /// and renewed apart from the read holds of the same name.
    pub(crate) write_lock: bool,
    /// The read half of a read-write lock: a reader that holds nothing on the lock lets
    /// this client's announced write waiters go first.
    pub(crate) yields_to_writers: bool,
    /// This client's waiters of the kind queue locally, one of them waiting in Redis, and
    /// a release may hand the lock to the next local waiter (`Kind::handoff` then builds
    /// the call; see [`crate::engine::wait::local_queue`]).
    pub(crate) hands_off_locally: bool,
}

impl Capabilities {
    /// Nothing turned on: the engine's default behaviour.
    pub(crate) const NONE: Capabilities = Capabilities {
        queues_in_redis: false,
        hands_out_tokens: false,
        write_lock: false,
        yields_to_writers: false,
        hands_off_locally: false,
    };
}
