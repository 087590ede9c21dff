//! Every lock kind against real redis-server: reentrant, fair, spin, read-write, fenced and
//! non-reentrant locks, their guards, hold state and raw state in Redis, the scripts, the
//! local hand-off, the name mapper, the watchdog, mutual exclusion, the multi, fast multi and
//! red locks, and fencing.
//!
//! One test binary for the area: one module per file of tests/locks/, so that the large
//! `support` module is compiled once for all of them (`cargo test --test locks`).

mod support;

#[path = "locks/fair_lock.rs"]
mod fair_lock;
#[path = "locks/faster_multi_lock.rs"]
mod faster_multi_lock;
#[path = "locks/fenced_lock.rs"]
mod fenced_lock;
#[path = "locks/fencing.rs"]
mod fencing;
#[path = "locks/guard.rs"]
mod guard;
#[path = "locks/hold_state.rs"]
mod hold_state;
#[path = "locks/local_handoff.rs"]
mod local_handoff;
#[path = "locks/multi_lock.rs"]
mod multi_lock;
#[path = "locks/mutual_exclusion.rs"]
mod mutual_exclusion;
#[path = "locks/name_mapper.rs"]
mod name_mapper;
#[path = "locks/non_reentrant.rs"]
mod non_reentrant;
#[path = "locks/raw_state.rs"]
mod raw_state;
#[path = "locks/read_write_lock.rs"]
mod read_write_lock;
#[path = "locks/redlock.rs"]
mod redlock;
#[path = "locks/reentrancy.rs"]
mod reentrancy;
#[path = "locks/scripts.rs"]
mod scripts;
#[path = "locks/spin_lock.rs"]
mod spin_lock;
#[path = "locks/told_at_once.rs"]
mod told_at_once;
#[path = "locks/watchdog.rs"]
mod watchdog;
