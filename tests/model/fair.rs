//! The fair lock (contract §10): the reentrant model's hash and TTL, plus the queue
//! `redisson_lock_queue:{N}` (list of waiters' fields) and `redisson_lock_timeout:{N}`
//! (zset of the same waiters, by deadline, so in queue order), both without TTL.
//!
//! * `try_lock` (no wait) is the non-blocking script: it takes a free lock only when the
//!   queue is empty or the caller is its head, re-enters, or answers `false`; it never
//!   queues;
//! * a waiter (`try_lock_for` with a budget) joins the tail; an unlock or force unlock
//!   publishes `0` on the *head's* channel only, and the head takes the lock;
//! * `unlock()` of a vanished fair lock answers "released" (`Ok(())`), owner or not, and
//!   wakes the head (§10.3; kept by the crate, `docs/protocol.md` §10.5).
//!
//! The switches are in [`super::reentrant::Excl`] (`Variant::fair`).

use redisson_lock::kinds::Fair;
use redisson_lock::{Client, Lock};

use super::reentrant::{ExclKind, Variant};

impl ExclKind for Fair {
    const LABEL: &'static str = "fair";
    const VARIANT: Variant = Variant {
        fair: true,
        fenced: false,
        non_reentrant: false,
        spin: false,
    };
    const CASES: u32 = 64;
    fn get(client: &Client, name: &str) -> Lock<Self> {
        client.get_fair_lock(name)
    }
}
