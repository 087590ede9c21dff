//! Told at once: Redis's server-assisted client-side caching (`CLIENT TRACKING`) turned
//! to telling a holder when anyone else changes or removes its lock, within a round trip
//! rather than at its next renewal.
//!
//! * [`listener`]: the connection Redis publishes invalidations to, and the set-up on
//!   every server (`CLIENT TRACKING ON REDIRECT <id> NOLOOP`), made again after every
//!   reconnect, failover or cluster change; the fallback when a server refuses it;
//! * [`queue`]: what the tracker has to read or check next, filled by the registry (this
//!   client wrote a held key), the watchdog and the listener;
//! * [`tracker`]: the task that reads held keys again (so Redis keeps tracking them) and
//!   checks the holds whose keys were invalidated;
//! * [`waited`]: the lock keys this client's waiters wait on, woken by an invalidation
//!   (a lock deleted rather than unlocked publishes no unlock message).
//!
//! Nothing here is sent on the happy path of an acquisition: a hold is read once after
//! the window it was taken in (one `EXISTS` per batch), and checked only when Redis says
//! its key changed. A renewal script reads every key it renewed once more after writing
//! it (a read inside a script tracks the key for the calling connection, and the write
//! had made Redis forget it), so a renewal costs no command more. Switched off with
//! [`ConfigBuilder::key_tracking`](crate::ConfigBuilder::key_tracking).

pub(crate) mod listener;
pub(crate) mod queue;
pub(crate) mod tracker;
pub(crate) mod waited;
