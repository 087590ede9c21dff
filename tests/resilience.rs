//! The client under faults: killed, paused and cut servers seen by several processes
//! (`faults`), lost replies, resends, reconnects, dropped futures, the bugs Redisson's users
//! report, and concurrent random sequences checked by a witness.
//!
//! One test binary for the area: one module per file of tests/resilience/, so that the large
//! `support` module is compiled once for all of them (`cargo test --test resilience`).

mod support;

#[path = "resilience/cancel_safety.rs"]
mod cancel_safety;
#[path = "resilience/concurrent_sequences.rs"]
mod concurrent_sequences;
#[path = "resilience/faults.rs"]
mod faults;
#[path = "resilience/lost_reply.rs"]
mod lost_reply;
#[path = "resilience/reconnect.rs"]
mod reconnect;
#[path = "resilience/resend.rs"]
mod resend;
#[path = "resilience/upstream_bugs.rs"]
mod upstream_bugs;
