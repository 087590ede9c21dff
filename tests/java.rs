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

#[path = "java/codec.rs"]
mod codec;

#[path = "java/fleet_share.rs"]
mod fleet_share;

#[path = "java/config.rs"]
mod config;
#[path = "java/locks.rs"]
mod locks;
#[path = "java/name_mapper.rs"]
mod name_mapper;
#[path = "java/shares.rs"]
mod shares;
#[path = "java/synchronizers.rs"]
mod synchronizers;
