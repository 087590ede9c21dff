//! How waiters are woken and ordered: where a wake-up is decided.
//!
//! * [`pubsub`]: one Redis subscription per channel per client, shared by its local
//!   waiters, following its slot on a cluster;
//! * [`messages`]: what a message wakes, each channel's own decoder
//!   ([`messages::lock_messages`] for the lock channels; a count for channels that carry
//!   one);
//! * [`local_queue`]: this client's tasks that wait for the same lock, in order (the
//!   local line the unlock hands the lock to);
//! * [`queued_waiters`]: this client's waiters in a fair lock's queue in Redis;
//! * [`waiter`]: the one wait loop of every primitive (subscribe, arm, try, sleep until a
//!   message, a hint, the re-check or the deadline), and its semantics;
//! * [`writer_gates`]: writers ahead of readers within this client.
//!
//! Who uses it: the lock engine (`lock/waiting.rs`, `lock/line_head.rs`,
//! `lock/local_line.rs`, `lock/queue_handoff.rs`) and the synchronizers (their waits run
//! on [`waiter`]); the client starts the pub/sub registry and closes it on shutdown.
//! Nothing here sends a script: it decides who wakes, the primitive retries.

pub(crate) mod local_queue;
pub(crate) mod messages;
pub(crate) mod pubsub;
pub(crate) mod queued_waiters;
pub(crate) mod waiter;
pub(crate) mod writer_gates;
