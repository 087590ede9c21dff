//! The synchronizers against real redis-server: the semaphore, the permit-expirable semaphore
//! (its permits and their holds), the count-down latch, their expiry and existence, and 0
//! permits.
//!
//! One test binary for the area: one module per file of tests/synchronizers/, so that the large
//! `support` module is compiled once for all of them (`cargo test --test synchronizers`).

mod support;

#[path = "synchronizers/count_down_latch.rs"]
mod count_down_latch;
#[path = "synchronizers/expiry.rs"]
mod expiry;
#[path = "synchronizers/permit_expirable.rs"]
mod permit_expirable;
#[path = "synchronizers/permit_expirable_holds.rs"]
mod permit_expirable_holds;
#[path = "synchronizers/semaphore.rs"]
mod semaphore;
#[path = "synchronizers/zero_permits.rs"]
mod zero_permits;
