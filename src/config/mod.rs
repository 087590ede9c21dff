//! [`Config`] and [`ConfigBuilder`] (both also at the crate root), and what a config is
//! made of: the defaults (Redisson's), the plain
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
//!
//! # Where it lives
//!
//! * `defaults`: the constants, the bounds of a lease and [`PublishMode`]; `built`:
//!   [`Config`] with its getters;
//! * `builder`: [`ConfigBuilder`], its settings and the checks of `build`;
//! * `connection`: what a URL, the TLS options and the credentials put into fred's
//!   configuration (scheme checks, TLS refused without a TLS feature, sentinel
//!   credentials);
//! * `tls`, `secrets`: the TLS options as fred takes them, and passwords never shown;
//! * `settings`: the plain settings as data; `names`: the lock keys a config names;
//! * `redisson_file` (feature `redisson-yaml`): the Java fleet's `redisson.yaml`.
//!
//! Configuration is read here and nowhere else: the transport (`src/connection/`) and
//! the engine take a built [`Config`].

mod builder;
mod built;
mod connection;
mod defaults;
mod making;
mod names;
#[cfg(feature = "redisson-yaml")]
mod redisson_file;
pub(crate) mod secrets;
mod settings;
pub(crate) mod tls;

pub use crate::error::RedissonFileError;
pub use crate::names::mapper::FairQueueNames;
pub use builder::ConfigBuilder;
pub use built::Config;
pub(crate) use defaults::lease_millis;
pub use defaults::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_FAIR_LOCK_WAIT_TIMEOUT, DEFAULT_LOCAL_HANDOFF_TIME,
    DEFAULT_LOCAL_HANDOFFS, DEFAULT_RENEWAL_BATCH_SIZE, DEFAULT_REPLICAS_SYNC_TIMEOUT,
    DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SUBSCRIPTION_TIMEOUT, DEFAULT_UNLOCK_LATCH_TTL,
    DEFAULT_WATCHDOG_TIMEOUT, MAX_LEASE, PublishMode, URL_SCHEMES,
};
#[cfg(feature = "redisson-yaml")]
pub use redisson_file::{RedissonFile, RedissonFileOptions, RedissonTopology};
pub use secrets::redacted_url;
pub use settings::{LockSettings, Settings, TlsFiles};
pub use tls::{ClusterTlsNames, TlsBackend, TlsOptions};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::Error;

    #[test]
    fn rejects_bad_settings_before_io() {
        assert!(matches!(
            Config::builder().build(),
            Err(Error::InvalidArgument(_))
        ));
        let bad = Config::builder()
            .url("redis://x")
            .renewal_batch_size(0)
            .build();
        assert!(matches!(bad, Err(Error::InvalidArgument(_))));
        let bad = Config::builder()
            .url("redis://x")
            .watchdog_timeout(Duration::ZERO)
            .build();
        assert!(matches!(bad, Err(Error::InvalidArgument(_))));
        assert!(lease_millis(Duration::ZERO).is_err());
        assert!(lease_millis(Duration::from_micros(999)).is_err());
        assert!(lease_millis(Duration::MAX).is_err());
        assert_eq!(lease_millis(Duration::from_secs(10)).unwrap(), 10_000);
    }
}
