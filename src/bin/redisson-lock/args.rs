//! The command line: `redisson-lock [--url URL] [--json] <command>`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Inspect Redisson locks (Java Redisson's and this crate's) in Redis: who holds them,
/// since when, for how long, and who waits.
///
/// Exit codes: 0 found / done, 1 not found / not locked / not a lock, 2 usage or
/// connection error.
#[derive(Debug, Parser)]
#[command(
    name = "redisson-lock",
    version,
    propagate_version = true,
    after_help = "Environment: REDIS_URL (as --url), REDIS_USERNAME (as --user), REDIS_PASSWORD \
                  (the password, so that it need not be in the URL or on the command line). \
                  Passwords are never printed."
)]
pub(crate) struct Cli {
    /// Redis URL: redis://, rediss://, redis-cluster://h:p?node=h2:p2,
    /// redis-sentinel://h:p/db?sentinelServiceName=NAME, redis+unix:///path.
    #[arg(long, env = "REDIS_URL", global = true, value_name = "URL")]
    pub(crate) url: Option<String>,

    /// The ACL user to authenticate as (instead of the URL's).
    #[arg(long, env = "REDIS_USERNAME", global = true, value_name = "NAME")]
    pub(crate) user: Option<String>,

    /// Use TLS even for a redis:// URL (a rediss:// URL always does).
    #[arg(long, global = true)]
    pub(crate) tls: bool,

    /// Trust this CA certificate (PEM) instead of the system's roots; implies --tls.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,

    /// Client certificate (PEM) for mutual TLS; needs --key; implies --tls.
    #[arg(long, global = true, value_name = "FILE", requires = "key")]
    pub(crate) cert: Option<PathBuf>,

    /// The client certificate's private key (PEM, PKCS#8); needs --cert.
    #[arg(long, global = true, value_name = "FILE", requires = "cert")]
    pub(crate) key: Option<PathBuf>,

    /// The prefix the apps' Redisson NameMapper puts before every lock name (e.g.
    /// 'app1:'): names given here are prefixed, names listed are shown without it (the
    /// key as stored is in --json's "key").
    #[arg(long, global = true, value_name = "PREFIX")]
    pub(crate) prefix: Option<String>,

    /// With --prefix: the fair lock's queue and deadline set are named after the
    /// unprefixed name, as Redisson up to 3.51.x (3.52.0+ uses the prefixed name).
    #[arg(long, global = true, requires = "prefix")]
    pub(crate) fair_queue_unmapped: bool,

    /// Print JSON for scripts instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// Give up connecting after this many seconds.
    #[arg(
        long,
        global = true,
        default_value_t = 5,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub(crate) connect_timeout: u64,

    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// The TLS options the flags ask for; `None` when they ask for none.
    pub(crate) fn tls_options(&self) -> Option<redisson_lock::config::TlsOptions> {
        if !self.tls && self.cacert.is_none() && self.cert.is_none() {
            return None;
        }
        let mut options = redisson_lock::config::TlsOptions::new();
        if let Some(ca) = &self.cacert {
            options = options.ca_file(ca);
        }
        if let (Some(cert), Some(key)) = (&self.cert, &self.key) {
            options = options.client_cert_files(cert, key);
        }
        Some(options)
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show each lock's kind, holders, TTL, fencing token and waiters; a semaphore's
    /// permits, a permit-expirable semaphore's holders, a count-down latch's count.
    Inspect {
        /// Lock names, as stored in Redis (the key of the lock hash); with --prefix, the
        /// names without the prefix.
        #[arg(required = true, value_name = "NAME")]
        names: Vec<OsString>,
        /// What a string key holding an integer is: a semaphore's permits and a latch's
        /// count are the same bytes in Redis, told apart only by their waiters (a
        /// permit-expirable semaphore also by its `{N}:timeout` set).
        #[arg(long, value_enum, value_name = "KIND")]
        kind: Option<crate::synchronizers::KindArg>,
    },
    /// List every lock-shaped key, and the semaphores and latches Redis can tell (SCAN,
    /// never KEYS; every primary of a cluster).
    List {
        /// Only keys matching this glob pattern (SCAN's MATCH), e.g. 'orders:*'; with
        /// --prefix, the pattern of the names without the prefix.
        #[arg(long = "match", value_name = "PATTERN", default_value = "*")]
        pattern: String,
        /// Keys per SCAN call (SCAN's COUNT).
        #[arg(long, default_value_t = 500, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..))]
        count: u32,
        /// List every string key holding an integer as this kind. Without it, such keys
        /// are listed only when Redis tells their kind (waiters on a semaphore or latch
        /// channel, a permit-expirable semaphore's `{N}:timeout` set).
        #[arg(long, value_enum, value_name = "KIND")]
        kind: Option<crate::synchronizers::KindArg>,
    },
    /// Find the lock-family keys no client will ever remove (fair queues and deadline
    /// sets of dead waiters, token counters without a lock, latches without a TTL,
    /// read-hold timeout keys whose hold is gone), with SCAN on every primary; --clean
    /// removes the provably dead ones, each re-checked in the same atomic script.
    Orphans {
        /// Only keys of locks whose name (as stored) matches this glob pattern.
        #[arg(long, default_value = "*", value_name = "PATTERN")]
        pattern: String,
        /// Keys per SCAN call (SCAN's COUNT): the work asked of Redis per call.
        #[arg(long, default_value_t = 1000, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=100_000))]
        count: u32,
        /// Remove the orphaned keys that are provably dead (never token counters).
        #[arg(long)]
        clean: bool,
        /// Remove orphaned fencing token counters too; needs --yes (read the explanation
        /// it prints: Java Redisson then restarts that lock's tokens at 1).
        #[arg(long)]
        clean_tokens: bool,
        /// Confirms --clean-tokens.
        #[arg(long)]
        yes: bool,
    },
    /// Follow a lock live (channel messages, holder and waiter changes) until Ctrl-C.
    Watch {
        /// The lock name (with --prefix, without the prefix).
        #[arg(value_name = "NAME")]
        name: OsString,
        /// How often to read the lock's state, in milliseconds.
        #[arg(long, default_value_t = 200, value_name = "MS",
              value_parser = clap::value_parser!(u64).range(10..=60_000))]
        interval: u64,
        /// Stop after this many seconds instead of waiting for Ctrl-C.
        #[arg(long, value_name = "SECONDS")]
        duration: Option<f64>,
    },
    /// Delete a lock whoever holds it, and wake its waiters as Redisson's forceUnlock
    /// does for its kind. Refuses without --yes.
    ForceUnlock {
        /// The lock name (with --prefix, without the prefix).
        #[arg(value_name = "NAME")]
        name: OsString,
        /// Really do it.
        #[arg(long)]
        yes: bool,
    },
}
