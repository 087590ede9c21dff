//! The crate beside real Java Redisson 3.23.3 and 4.7.0 (`tests/support/real_java.rs`).
//!
//! Every test here runs real Redisson driver processes, which a clone of this repository
//! does not carry, so every test is `#[ignore]`d; run them with
//!
//! ```sh
//! REDISSON_JAVA_DIR=/path/to/redisson-java cargo test --all-features --test java -- --ignored
//! ```
//!
//! (`.ci/run` does, with `../shared/redisson-java` after its `deps.sh`). Without the
//! drivers each test fails with that instruction: none passes without Java.

mod support;

#[path = "java/fleet_share.rs"]
mod fleet_share;

#[path = "java/sentinel.rs"]
mod sentinel;

#[path = "java/cluster.rs"]
mod cluster;
