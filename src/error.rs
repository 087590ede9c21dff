//! The crate's one error type.
//!
//! Every fallible call returns [`Result<T>`](crate::Result), whose error is [`Error`]. Each
//! variant says what happened; match on variants, never on the text (the text of
//! [`Error::NotOwner`] is Redisson's, for operators who grep logs of both worlds).

use std::time::Duration;

use crate::names::owner::LockOwner;

/// `Result` with this crate's [`Error`].
///
/// # Examples
/// ```
/// fn lease_ms(text: &str) -> redisson_lock::Result<u64> {
///     text.parse().map_err(|_| redisson_lock::Error::InvalidArgument(format!("not a lease: {text}")))
/// }
/// assert_eq!(lease_ms("30000")?, 30_000);
/// assert!(lease_ms("soon").is_err());
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong with a lock operation.
///
/// `Error` is `Clone`, so one failure (a lost connection, a shutdown) can be handed to
/// several waiters.
///
/// # Examples
/// ```no_run
/// # async fn demo(lock: redisson_lock::RLock) {
/// use redisson_lock::Error;
/// match lock.unlock().await {
///     Ok(()) => {}
///     Err(Error::NotOwner { .. }) => eprintln!("the lock had expired or was never ours"),
///     Err(other) => eprintln!("unlock failed: {other}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller tried to unlock a lock it does not hold: it was never taken, it expired,
    /// it was force-unlocked, or another owner holds it. The text is exactly Redisson's
    /// `IllegalMonitorStateException` message.
    #[error(
        "attempt to unlock lock, not locked by current thread by node id: {client_id} thread-id: {owner}"
    )]
    NotOwner {
        /// The client id (UUID) of the caller.
        client_id: String,
        /// The owner id the caller used.
        owner: LockOwner,
    },

    /// The caller already holds this non-reentrant lock and asked for it again (Redisson
    /// 4.4's non-reentrant locks). The text is Redisson's.
    #[error("Lock '{name}' is non-reentrant and is already held by thread {owner}")]
    NonReentrant {
        /// The lock's name, as given to the client (before any name mapper).
        name: String,
        /// The owner that holds it and asked again.
        owner: LockOwner,
    },

    /// A fenced lock's token key (`redisson_lock_token:{N}`) holds something other than
    /// an integer; nothing was written.
    #[error("fencing token key `{key}` does not hold an integer")]
    BadToken {
        /// The token key.
        key: String,
    },

    /// Redis may or may not have applied an operation whose reply was lost, and this
    /// client could not tell which. The text says what the client did about it and what
    /// the caller should do. (An acquire whose reply was lost is normally settled by
    /// reading the owner's hold count; this error remains only when Redis could not be
    /// asked in time, or the count shows another task or process acting as the same
    /// owner.)
    #[error("the outcome of {operation} on lock `{name}` is unknown: {reason}")]
    OutcomeUnknown {
        /// The operation, e.g. `"acquire"`.
        operation: &'static str,
        /// The lock's name, as given to the client (before any name mapper).
        name: String,
        /// What happened, what the client does about it, and what the caller should do.
        reason: String,
    },

    /// A wait that has no way to return `false` ran out of time, for example the
    /// subscription a blocking [`lock`](crate::RLock::lock) needs was not confirmed within
    /// [`ConfigBuilder::subscription_timeout`](crate::ConfigBuilder::subscription_timeout).
    #[error("{what} did not complete within {after:?}")]
    Timeout {
        /// What timed out.
        what: &'static str,
        /// How long it was given.
        after: Duration,
    },

    /// A key holds a value of another type than the operation needs (Redis answered
    /// `WRONGTYPE`): the lock's key is not a hash (something other than a lock is stored
    /// under that name), or the data key of a fenced write, such as
    /// [`FencedWriter::hset`](crate::client::fencing::FencedWriter::hset), is not what its command needs.
    #[error("key `{key}` holds a value of the wrong type (Redis answered WRONGTYPE)")]
    WrongType {
        /// The key that holds the foreign value.
        key: String,
    },

    /// A fenced write (or a [`FencingGate::check`](crate::client::fencing::FencingGate::check)) presented a
    /// token below the highest one the resource has seen: a newer holder of the lock has
    /// written since, so the caller's hold is stale and it should stop. Nothing was
    /// written and nothing was recorded.
    #[error("fencing token {presented} is below the highest seen ({seen}); nothing was written")]
    StaleToken {
        /// The highest token the resource had seen.
        seen: u64,
        /// The token the caller presented.
        presented: u64,
    },

    /// A fenced write found its fence key (see [`fencing::fence_key`](crate::client::fencing::fence_key))
    /// holding something other than a token: not a decimal `u64`, or not a string at all.
    /// Something other than this crate wrote it. Nothing was written.
    #[error("fence key `{key}` holds {found:?}, not a fencing token; nothing was written")]
    CorruptFence {
        /// The fence key.
        key: String,
        /// What it holds: its text (at most 64 bytes, control characters as `?`), or its
        /// type in angle brackets (`<hash>`) when it is not a string.
        found: String,
    },

    /// An acquisition was applied on the primary, but no replica acknowledged it within
    /// [`ConfigBuilder::replicas_sync_timeout`](crate::ConfigBuilder::replicas_sync_timeout)
    /// (`WAIT` answered 0 while the primary has replicas). A failover could lose such a
    /// hold, so it was undone: nothing is held. The text is Redisson's
    /// `NoSyncedSlavesException` message. Raised only with
    /// [`ConfigBuilder::check_lock_synced_replicas`](crate::ConfigBuilder::check_lock_synced_replicas)
    /// on (the default) and a Sentinel or Cluster configuration.
    #[error(
        "None of slaves were synced. Try to increase slavesSyncTimeout setting or set checkLockSyncedSlaves = false."
    )]
    NoSyncedReplicas {
        /// The lock's name, as given to the client (before any name mapper).
        name: String,
        /// The replicas the primary reported (`connected_slaves`), none of which
        /// acknowledged.
        replicas: u32,
    },

    /// An argument was rejected before any I/O: an empty lock name, a zero or too large
    /// lease, a malformed configuration.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The configuration asks for TLS (a `rediss://` or `valkeys://` URL, or
    /// [`ConfigBuilder::tls`](crate::ConfigBuilder::tls)) but this build of the crate has no
    /// TLS library: enable the named Cargo feature. Raised when the configuration is built,
    /// so nothing was ever sent in plaintext.
    #[error(
        "{asked_by} asks for TLS, but redisson-lock was built without it: enable its `{feature}` \
         feature (or `tls-native-tls`); nothing was connected"
    )]
    TlsNotEnabled {
        /// What asked for TLS (the URL's scheme, or the TLS options).
        asked_by: String,
        /// The Cargo feature to enable.
        feature: &'static str,
    },

    /// The TLS connection to Redis could not be set up: the server's certificate is not
    /// trusted (wrong CA, wrong host name, expired), the server wants a client certificate
    /// that was not given or that it does not trust, or the server does not speak TLS.
    #[error("TLS connection to Redis failed: {reason}")]
    Tls {
        /// The address(es) tried and what the TLS library or the server said.
        reason: String,
    },

    /// A [`MultiLock`](crate::MultiLock) or [`RedLock`](crate::RedLock) was given the same
    /// lock twice (the same name in Redis on the same server and database, whatever the
    /// kinds): the group would wait on itself.
    #[error("lock `{name}` is listed twice in one lock group")]
    DuplicateMember {
        /// The lock's name, as given to the client (before any name mapper).
        name: String,
    },

    /// Taking a [`MultiLock`](crate::MultiLock) or [`RedLock`](crate::RedLock) with a
    /// lease took so long that the lease (less the clock drift allowance, for a RedLock)
    /// had run out by the time every member was held. Everything taken was released.
    #[error(
        "the lease of {lease:?} ran out while the locks were taken ({elapsed:?}); nothing is held"
    )]
    LeaseTooShort {
        /// The lease asked for.
        lease: Duration,
        /// How much of it had passed when the members were held.
        elapsed: Duration,
    },

    /// A Redisson configuration file (`redisson.yaml`, `redisson.json`; feature
    /// `redisson-yaml`) could not be read faithfully: it does not parse, it has a key
    /// Redisson itself would refuse, a value of the wrong form, or a setting that matters to
    /// locks and that this crate cannot honour (a Java keystore, a custom name mapper class).
    /// Nothing was connected. The reason never holds a password.
    #[error("redisson configuration file: `{setting}`: {reason}")]
    RedissonFile {
        /// What went wrong, for a caller that matches on it.
        kind: RedissonFileError,
        /// The setting's path in the file (`singleServerConfig.sslTruststore`), or the
        /// file itself (`<file>`) for a syntax error.
        setting: String,
        /// What is wrong and what to do instead.
        reason: String,
    },

    /// The client was shut down (or dropped) before or during the call.
    #[error("the redisson-lock client is shut down")]
    Shutdown,

    /// Redis answered with something this crate does not expect from its own scripts.
    #[error("unexpected reply to {operation}: {reply}")]
    UnexpectedReply {
        /// The operation that got the reply.
        operation: &'static str,
        /// The reply, as text.
        reply: String,
    },

    /// Redis or the connection failed. The source is fred's error. When
    /// [`Client::connect`](crate::Client::connect) fails, its text names the address(es)
    /// tried and the reason, as in `Redis error: IO Error: cannot connect to Redis at
    /// 127.0.0.1:1: Connection refused (os error 111)`.
    #[error("Redis error: {0}")]
    Redis(#[from] fred::error::Error),
}

/// The kinds of [`Error::RedissonFile`].
///
/// # Examples
/// ```
/// use redisson_lock::Error;
/// use redisson_lock::config::RedissonFileError;
/// fn is_unsupported(error: &Error) -> bool {
///     matches!(error, Error::RedissonFile { kind: RedissonFileError::Unsupported, .. })
/// }
/// # let _ = is_unsupported;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedissonFileError {
    /// The text is not YAML (strict JSON for a `.json` file), or holds no document whose
    /// top is a mapping of settings.
    Syntax,
    /// A key neither Redisson 3.x nor 4.x reads there (both refuse the file), or keys of
    /// both versions that neither reads together (`retryInterval` beside `retryDelay`).
    Unknown,
    /// A value no Redisson version reads (a duration with a unit suffix, `y` for a
    /// boolean), or an address Redisson would not connect to (no port, another scheme).
    BadValue,
    /// A setting that matters to locks and that this crate cannot honour, or one that
    /// Redisson 3.x and 4.x, both loading the file, read differently (`timeout: 0100`).
    Unsupported,
    /// No server section Redisson would use, or no address in it (`Redisson.create`
    /// refuses such a file too).
    NoServers,
}

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
}
