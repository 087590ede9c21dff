//! The crate's surface around the primitives: argument checks, settings and `redisson.yaml`,
//! the blocking API (locks and groups), the CLI and its `orphans` command, the HTTP example
//! service and the examples' signals, map entries' objects, and a smoke test.
//!
//! One test binary for the area: one module per file of tests/api/, so that the large
//! `support` module is compiled once for all of them (`cargo test --test api`).

mod support;

#[path = "api/bad_input.rs"]
mod bad_input;
#[path = "api/blocking.rs"]
mod blocking;
#[path = "api/blocking_groups.rs"]
mod blocking_groups;
#[path = "api/cli.rs"]
mod cli;
#[path = "api/example_signals.rs"]
mod example_signals;
#[path = "api/http_service.rs"]
mod http_service;
#[path = "api/map_entries.rs"]
mod map_entries;
#[path = "api/orphans.rs"]
mod orphans;
#[path = "api/redisson_yaml.rs"]
mod redisson_yaml;
#[path = "api/settings.rs"]
mod settings;
#[path = "api/smoke.rs"]
mod smoke;
