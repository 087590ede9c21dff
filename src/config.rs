//! What a [`Config`](crate::Config) is made of, beyond [`Config`](crate::Config) and
//! [`ConfigBuilder`](crate::ConfigBuilder) themselves: the defaults (Redisson's), the plain
//! settings as data ([`Settings`], [`LockSettings`]), the TLS options, the fair queue's
//! naming, the publish command, and (feature `redisson-yaml`) the Java fleet's own
//! `redisson.yaml`.
//!
//! ```
//! use redisson_lock::config::{DEFAULT_WATCHDOG_TIMEOUT, PublishMode};
//! use redisson_lock::Config;
//!
//! let config = Config::builder()
//!     .url("redis://127.0.0.1:6379")
//!     .publish_mode(PublishMode::Publish)
//!     .build()?;
//! assert_eq!(config.watchdog_timeout(), DEFAULT_WATCHDOG_TIMEOUT);
//! # Ok::<(), redisson_lock::Error>(())
//! ```

pub use crate::connection::config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_FAIR_LOCK_WAIT_TIMEOUT, DEFAULT_LOCAL_HANDOFF_TIME,
    DEFAULT_LOCAL_HANDOFFS, DEFAULT_RENEWAL_BATCH_SIZE, DEFAULT_REPLICAS_SYNC_TIMEOUT,
    DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SUBSCRIPTION_TIMEOUT, DEFAULT_UNLOCK_LATCH_TTL,
    DEFAULT_WATCHDOG_TIMEOUT, LockSettings, MAX_LEASE, PublishMode, Settings, TlsFiles,
    URL_SCHEMES,
};
#[cfg(feature = "redisson-yaml")]
#[cfg_attr(docsrs, doc(cfg(feature = "redisson-yaml")))]
pub use crate::connection::config::{RedissonFile, RedissonFileOptions, RedissonTopology};
pub use crate::connection::secrets::redacted_url;
pub use crate::connection::tls::{ClusterTlsNames, TlsBackend, TlsOptions};
pub use crate::error::RedissonFileError;
pub use crate::names::mapper::FairQueueNames;
