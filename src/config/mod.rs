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
//! * this file: the constants, [`PublishMode`] and [`Config`] with its getters;
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

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::error::{Error, Result};
use crate::names::mapper::NameMapper;
use secrets::redacted_fred_config;

mod builder;
mod connection;
mod names;
#[cfg(feature = "redisson-yaml")]
mod redisson_file;
pub(crate) mod secrets;
mod settings;
pub(crate) mod tls;

pub use crate::error::RedissonFileError;
pub use crate::names::mapper::FairQueueNames;
pub use builder::ConfigBuilder;
#[cfg(feature = "redisson-yaml")]
pub use redisson_file::{RedissonFile, RedissonFileOptions, RedissonTopology};
pub use secrets::redacted_url;
pub use settings::{LockSettings, Settings, TlsFiles};
pub use tls::{ClusterTlsNames, TlsBackend, TlsOptions};

/// Redisson's `lockWatchdogTimeout`: the lease of a lock taken without one.
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_WATCHDOG_TIMEOUT;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.watchdog_timeout(), DEFAULT_WATCHDOG_TIMEOUT);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_WATCHDOG_TIMEOUT: Duration = Duration::from_secs(30);
/// Redisson's `lockWatchdogBatchSize`: locks renewed by one script.
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_RENEWAL_BATCH_SIZE;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.renewal_batch_size(), DEFAULT_RENEWAL_BATCH_SIZE);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_RENEWAL_BATCH_SIZE: usize = 100;
/// Redisson's `timeout`: how long one command may take.
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_RESPONSE_TIMEOUT;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.lock_settings().response_timeout, DEFAULT_RESPONSE_TIMEOUT);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);
/// Redisson's `connectTimeout`: how long making a connection may take (the TCP connect,
/// TLS and the handshake's first commands).
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_CONNECT_TIMEOUT;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.lock_settings().connect_timeout, DEFAULT_CONNECT_TIMEOUT);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Redisson's `subscriptionTimeout`: how long a blocking `lock()` waits for its
/// subscription to be confirmed.
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_SUBSCRIPTION_TIMEOUT;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.lock_settings().subscription_timeout, DEFAULT_SUBSCRIPTION_TIMEOUT);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_SUBSCRIPTION_TIMEOUT: Duration = Duration::from_millis(7_500);
/// How long an unlock's latch lives, and so the window in which a lost unlock reply may be
/// retried (Redisson's 3.24 default, `(3000 + 1500) × 3`).
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_UNLOCK_LATCH_TTL;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.lock_settings().unlock_latch_ttl, DEFAULT_UNLOCK_LATCH_TTL);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_UNLOCK_LATCH_TTL: Duration = Duration::from_millis(13_500);

/// Redisson's `fairLockWaitTimeout`: how long a queued fair-lock waiter's slot is
/// reserved beyond its predecessor's when the caller waits without a bound.
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_FAIR_LOCK_WAIT_TIMEOUT;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.fair_lock_wait_timeout(), DEFAULT_FAIR_LOCK_WAIT_TIMEOUT);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_FAIR_LOCK_WAIT_TIMEOUT: Duration = Duration::from_secs(300);

/// Redisson's `slavesSyncTimeout`: how long `WAIT` gives the replicas to acknowledge a
/// lock script.
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_REPLICAS_SYNC_TIMEOUT;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.replicas_sync_timeout(), DEFAULT_REPLICAS_SYNC_TIMEOUT);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_REPLICAS_SYNC_TIMEOUT: Duration = Duration::from_millis(1_000);

/// How many times in a row a lock may be handed from one task of a client to the next
/// before it is released for real when others wait (see
/// [`ConfigBuilder::local_handoffs`]).
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_LOCAL_HANDOFFS;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.local_handoffs(), DEFAULT_LOCAL_HANDOFFS);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_LOCAL_HANDOFFS: u32 = 8;

/// How long a lock may stay in one client through local hand-offs before it is released
/// for real when others wait (see [`ConfigBuilder::local_handoff_time`]).
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_LOCAL_HANDOFF_TIME;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.local_handoff_time(), DEFAULT_LOCAL_HANDOFF_TIME);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_LOCAL_HANDOFF_TIME: Duration = Duration::from_millis(50);

/// The URL schemes [`Config::from_url`] accepts (fred's, with its `valkey` twins).
///
/// # Examples
/// ```
/// use redisson_lock::config::URL_SCHEMES;
/// let url = "valkeys://cache.internal:6380";
/// let scheme = url.split("://").next().unwrap_or_default();
/// assert!(URL_SCHEMES.contains(&scheme));
/// assert!(!URL_SCHEMES.contains(&"http"));
/// ```
pub const URL_SCHEMES: &[&str] = &[
    "redis",
    "rediss",
    "redis-cluster",
    "rediss-cluster",
    "redis-sentinel",
    "rediss-sentinel",
    "redis+unix",
    "valkey",
    "valkeys",
    "valkey-cluster",
    "valkeys-cluster",
    "valkey-sentinel",
    "valkeys-sentinel",
    "valkey+unix",
];

/// The largest lease Redis accepts without overflowing its expiry clock, with room to
/// spare: 2^52 ms, about 142,700 years.
///
/// # Examples
/// ```
/// use redisson_lock::config::MAX_LEASE;
/// let lease = std::time::Duration::from_secs(3600);
/// assert!(lease <= MAX_LEASE);
/// ```
pub const MAX_LEASE: Duration = Duration::from_millis(1 << 52);

/// How unlock notifications are published and subscribed to.
///
/// # Examples
/// ```
/// use redisson_lock::Config;
/// use redisson_lock::config::PublishMode;
/// let config = Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .publish_mode(PublishMode::Publish)
///     .build()
///     .unwrap();
/// assert_eq!(config.publish_mode(), PublishMode::Publish);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum PublishMode {
    /// As Java Redisson does: sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`) on a Redis Cluster
    /// that answers `PUBSUB SHARDNUMSUB` (Redis 7+), classic pub/sub everywhere else.
    #[default]
    Auto,
    /// Always `PUBLISH` / `SUBSCRIBE`.
    Publish,
    /// Always `SPUBLISH` / `SSUBSCRIBE` (Redis 7+).
    Sharded,
}

/// Everything [`Client::connect`](crate::Client::connect) needs.
///
/// Build it from a URL with [`Config::from_url`], or with [`Config::builder`] to change the
/// lock settings or to pass a full [`fred::prelude::Config`] (cluster, sentinel, TLS).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use redisson_lock::Config;
///
/// let simple = Config::from_url("redis://127.0.0.1:6379").unwrap();
/// assert_eq!(simple.watchdog_timeout(), Duration::from_secs(30));
///
/// let tuned = Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .watchdog_timeout(Duration::from_secs(9))
///     .renewal_batch_size(50)
///     .build()
///     .unwrap();
/// assert_eq!(tuned.renewal_batch_size(), 50);
/// ```
///
/// `Debug` shows every setting but never a password: passwords print as `<redacted>`.
#[derive(Clone)]
pub struct Config {
    pub(crate) redis: fred::prelude::Config,
    pub(crate) reconnect: fred::prelude::ReconnectPolicy,
    /// How the locks behave; each setting listed once, in [`LockSettings`].
    pub(crate) settings: LockSettings,
    pub(crate) client_id: Option<Uuid>,
    /// Redisson's `nameMapper`; `None` is the identity (nothing mapped, nothing allocated).
    pub(crate) name_mapper: Option<Arc<dyn NameMapper>>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("redis", &redacted_fred_config(&self.redis))
            .field("reconnect", &self.reconnect)
            .field("settings", &self.settings)
            .field("client_id", &self.client_id)
            .field("name_mapper", &self.name_mapper)
            .finish()
    }
}

impl Config {
    /// A configuration for the Redis at `url` with Redisson's defaults.
    ///
    /// Accepts every URL fred accepts: `redis://`, `rediss://`, `redis-cluster://`,
    /// `redis-sentinel://`, `redis+unix://` and their `valkey` twins.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the scheme is not one of [`URL_SCHEMES`] (the
    /// message names it), or fred cannot parse the URL (no host, a bad port).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1:6379/0").unwrap();
    /// assert!(redisson_lock::Config::from_url("not a url").is_err());
    /// let refused = redisson_lock::Config::from_url("http://nope").unwrap_err();
    /// assert!(refused.to_string().contains("`http`"));
    /// ```
    pub fn from_url(url: &str) -> Result<Config> {
        Config::builder().url(url).build()
    }

    /// A builder that starts from Redisson's defaults.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder().url("redis://127.0.0.1").build().unwrap();
    /// ```
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }

    /// A configuration from the plain [`Settings`] a service keeps (with the `serde`
    /// feature, deserialized from its configuration file or environment).
    ///
    /// # Errors
    /// As [`ConfigBuilder::build`].
    ///
    /// # Examples
    /// ```
    /// let mut settings = redisson_lock::config::Settings::default();
    /// settings.url = Some("redis://127.0.0.1:6379".to_owned());
    /// let config = redisson_lock::Config::from_settings(settings)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_settings(settings: Settings) -> Result<Config> {
        ConfigBuilder::from_settings(settings).build()
    }

    /// Every lock setting, as one [`LockSettings`].
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.lock_settings(), &redisson_lock::config::LockSettings::default());
    /// ```
    pub fn lock_settings(&self) -> &LockSettings {
        &self.settings
    }

    /// The watchdog timeout: the lease of locks taken without one, renewed every third of it.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.watchdog_timeout(), redisson_lock::config::DEFAULT_WATCHDOG_TIMEOUT);
    /// ```
    pub fn watchdog_timeout(&self) -> Duration {
        self.settings.watchdog_timeout
    }

    /// Whether holders are told at once of another client's change to their keys
    /// ([`ConfigBuilder::key_tracking`]).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert!(config.key_tracking());
    /// ```
    pub fn key_tracking(&self) -> bool {
        self.settings.key_tracking
    }

    /// The most locks one renewal script re-arms.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.renewal_batch_size(), 100);
    /// ```
    pub fn renewal_batch_size(&self) -> usize {
        self.settings.renewal_batch_size
    }

    /// How unlock notifications travel.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.publish_mode(), redisson_lock::config::PublishMode::Auto);
    /// ```
    pub fn publish_mode(&self) -> PublishMode {
        self.settings.publish_mode
    }

    /// How long a queued fair-lock waiter's slot is reserved when the caller waits
    /// without a bound (Redisson's `fairLockWaitTimeout`, default 5 min). A waiter with a
    /// wait budget reserves its budget instead.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.fair_lock_wait_timeout(), redisson_lock::config::DEFAULT_FAIR_LOCK_WAIT_TIMEOUT);
    /// ```
    pub fn fair_lock_wait_timeout(&self) -> Duration {
        self.settings.fair_lock_wait_timeout
    }

    /// Whether lock scripts are followed by `WAIT` (Redisson's `checkLockSyncedSlaves`);
    /// see [`ConfigBuilder::check_lock_synced_replicas`].
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis-sentinel://127.0.0.1:26379?sentinelServiceName=m").unwrap();
    /// assert!(config.check_lock_synced_replicas());
    /// ```
    pub fn check_lock_synced_replicas(&self) -> bool {
        self.settings.check_lock_synced_replicas
    }

    /// How long `WAIT` gives the replicas (Redisson's `slavesSyncTimeout`, default 1 s).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.replicas_sync_timeout(), redisson_lock::config::DEFAULT_REPLICAS_SYNC_TIMEOUT);
    /// ```
    pub fn replicas_sync_timeout(&self) -> Duration {
        self.settings.replicas_sync_timeout
    }

    /// How many local hand-offs in a row a lock may make before a release that others
    /// wait for is a real one (default [`DEFAULT_LOCAL_HANDOFFS`]; 0: never hand off).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.local_handoffs(), redisson_lock::config::DEFAULT_LOCAL_HANDOFFS);
    /// ```
    pub fn local_handoffs(&self) -> u32 {
        self.settings.local_handoffs
    }

    /// How long a lock may stay in this client through local hand-offs before a release
    /// that others wait for is a real one (default [`DEFAULT_LOCAL_HANDOFF_TIME`]).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.local_handoff_time(), redisson_lock::config::DEFAULT_LOCAL_HANDOFF_TIME);
    /// ```
    pub fn local_handoff_time(&self) -> Duration {
        self.settings.local_handoff_time
    }

    /// The margin set with [`ConfigBuilder::validity_margin`]; `None`: the default (2 %
    /// of the lease plus 10 ms).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.validity_margin(), None);
    /// ```
    pub fn validity_margin(&self) -> Option<Duration> {
        self.settings.validity_margin
    }

    /// The name mapper set with [`ConfigBuilder::name_mapper`] (Redisson's `nameMapper`);
    /// `None` when names are stored as given (Redisson's default, the identity).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{Config, PrefixNameMapper};
    /// let plain = Config::from_url("redis://127.0.0.1").unwrap();
    /// assert!(plain.name_mapper().is_none());
    /// let mapped = Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(mapped.name_mapper().unwrap().map("orders"), "app1:orders");
    /// ```
    pub fn name_mapper(&self) -> Option<&dyn NameMapper> {
        self.name_mapper.as_deref()
    }

    /// Which name the fair lock's queue and deadline set are built from when a name mapper
    /// is set; see [`FairQueueNames`] (default [`FairQueueNames::Mapped`], Redisson
    /// 3.52.0+).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::Config;
    /// use redisson_lock::config::FairQueueNames;
    /// let config = Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.fair_queue_names(), FairQueueNames::Mapped);
    /// ```
    pub fn fair_queue_names(&self) -> FairQueueNames {
        self.settings.fair_queue_names
    }

    /// Redisson's `codec`: how [`Client::map`](crate::Client::map) and
    /// [`Client::set`](crate::Client::set) encode keys (see [`ConfigBuilder::codec`];
    /// default [`JavaCodec::Kryo5`](crate::codec::JavaCodec::Kryo5)).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.codec(), redisson_lock::codec::JavaCodec::Kryo5);
    /// ```
    pub fn codec(&self) -> crate::codec::JavaCodec {
        self.settings.codec
    }

    /// Whether the connections use TLS.
    pub(crate) fn uses_tls(&self) -> bool {
        self.redis.uses_tls()
    }

    /// Whether the server is a single one (every pub/sub listener is on it).
    pub(crate) fn is_single_server(&self) -> bool {
        matches!(
            self.redis.server,
            fred::types::config::ServerConfig::Centralized { .. }
        )
    }

    /// Whether this configuration waits for replicas at all: the check is on and the
    /// topology is Sentinel or Cluster (a single server is skipped, as Redisson does).
    pub(crate) fn waits_for_replicas(&self) -> bool {
        use fred::types::config::ServerConfig;
        self.settings.check_lock_synced_replicas
            && matches!(
                self.redis.server,
                ServerConfig::Sentinel { .. } | ServerConfig::Clustered { .. }
            )
    }

    /// The fred configuration the client connects with.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis-cluster://127.0.0.1:7000").unwrap();
    /// assert!(config.redis().server.is_clustered());
    /// ```
    pub fn redis(&self) -> &fred::prelude::Config {
        &self.redis
    }
}

/// A lease as the whole milliseconds Redis takes.
///
/// # Errors
/// [`Error::InvalidArgument`] for a lease under 1 ms or above [`MAX_LEASE`].
pub(crate) fn lease_millis(lease: Duration) -> Result<u64> {
    if lease < Duration::from_millis(1) {
        return Err(Error::invalid(format!("lease {lease:?} is below 1 ms")));
    }
    if lease > MAX_LEASE {
        return Err(Error::invalid(format!(
            "lease {lease:?} is above the largest Redis accepts ({MAX_LEASE:?})"
        )));
    }
    // Bounded by MAX_LEASE above, so the cast cannot truncate.
    Ok(lease.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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
