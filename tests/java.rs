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
//!
//! | module | what |
//! |---|---|
//! | `locks` | every lock kind on a single server: raw state, wake-ups, exclusion, watchdog |
//! | `synchronizers` | the semaphores and the latch on a single server |
//! | `name_mapper` | a prefix mapper on both sides |
//! | `shares` | a hot lock shared with Java threads |
//! | `sentinel`, `cluster` | every kind on a Sentinel set and a Redis 7 cluster, and a failover with Java in the fleet |
//! | `fleet_share` | the fleet race: the crate's share of a hot lock beside two JVMs, per topology |
//! | `codec` | Java's codec bytes and per-key object names |
//! | `map_entries` | map entries' and set values' locks, semaphores and latches (`Client::map`), single server and cluster |
//! | `expiry` | the synchronizers' expiry and existence (`RExpirable`), and 0 permits |
//! | `config` | `redisson.yaml` files read by real Redisson and by the crate |
//! | `told_at_once` | Java's `forceUnlock()` of a crate's hold, told at once |

mod support;

#[path = "java/cluster.rs"]
mod cluster;
#[path = "java/codec.rs"]
mod codec;
#[path = "java/config.rs"]
mod config;
#[path = "java/expiry.rs"]
mod expiry;
#[path = "java/fleet_share.rs"]
mod fleet_share;
#[path = "java/locks.rs"]
mod locks;
#[path = "java/map_entries.rs"]
mod map_entries;
#[path = "java/name_mapper.rs"]
mod name_mapper;
#[path = "java/sentinel.rs"]
mod sentinel;
#[path = "java/shares.rs"]
mod shares;
#[path = "java/synchronizers.rs"]
mod synchronizers;
#[path = "java/told_at_once.rs"]
mod told_at_once;
