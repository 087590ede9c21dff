//! Topologies other than a single server: a Redis cluster, a Sentinel set, replica
//! acknowledgement (`WAIT`) and ACL authentication.
//!
//! One test binary for the area: one module per file of tests/topology/, so that the large
//! `support` module is compiled once for all of them (`cargo test --test topology`).

mod support;

#[path = "topology/auth.rs"]
mod auth;
#[path = "topology/cluster.rs"]
mod cluster;
#[path = "topology/replica_wait.rs"]
mod replica_wait;
#[path = "topology/sentinel.rs"]
mod sentinel;
#[path = "topology/told_at_once.rs"]
mod told_at_once;
