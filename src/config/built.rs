//! [`Config`]: a built, checked configuration, and the getters every part of the crate
//! reads it by. It is made by [`ConfigBuilder`](super::ConfigBuilder) (`builder.rs`, which
//! also holds `Config::from_url`, `Config::builder` and `Config::from_settings`).

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::defaults::PublishMode;
use super::secrets::redacted_fred_config;
use super::settings::LockSettings;
use crate::names::mapper::{FairQueueNames, NameMapper};

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
    /// ([`ConfigBuilder::key_tracking`](crate::config::ConfigBuilder::key_tracking)).
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
    /// see [`ConfigBuilder::check_lock_synced_replicas`](crate::config::ConfigBuilder::check_lock_synced_replicas).
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
    /// wait for is a real one (default [`DEFAULT_LOCAL_HANDOFFS`](crate::config::DEFAULT_LOCAL_HANDOFFS); 0: never hand off).
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
    /// that others wait for is a real one (default [`DEFAULT_LOCAL_HANDOFF_TIME`](crate::config::DEFAULT_LOCAL_HANDOFF_TIME)).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1").unwrap();
    /// assert_eq!(config.local_handoff_time(), redisson_lock::config::DEFAULT_LOCAL_HANDOFF_TIME);
    /// ```
    pub fn local_handoff_time(&self) -> Duration {
        self.settings.local_handoff_time
    }

    /// The margin set with [`ConfigBuilder::validity_margin`](crate::config::ConfigBuilder::validity_margin); `None`: the default (2 %
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

    /// The name mapper set with [`ConfigBuilder::name_mapper`](crate::config::ConfigBuilder::name_mapper) (Redisson's `nameMapper`);
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
    /// [`Client::set`](crate::Client::set) encode keys (see [`ConfigBuilder::codec`](crate::config::ConfigBuilder::codec);
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
