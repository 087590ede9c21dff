//! [`ConfigBuilder`]: every setting of a [`Config`], checked by [`ConfigBuilder::build`].

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::built::Config;
use super::connection::{apply_credentials, apply_tls, check_scheme, tls_scheme};
use super::defaults::{MAX_LEASE, PublishMode};
use super::settings::{LockSettings, Settings, TlsFiles};
use crate::config::secrets::{redacted_fred_config, redacted_url};
use crate::config::tls::TlsOptions;
use crate::error::{Error, Result};
use crate::names::mapper::{FairQueueNames, NameMapper, PrefixNameMapper};

/// Builds a [`Config`]; see [`Config::builder`].
///
/// # Examples
/// ```
/// use std::time::Duration;
/// let config = redisson_lock::Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .response_timeout(Duration::from_secs(1))
///     .build()
///     .unwrap();
/// ```
#[derive(Clone, Default)]
#[must_use = "a builder does nothing until `build()`"]
pub struct ConfigBuilder {
    /// Every plain setting (URL, credentials, name prefix, TLS files, lock settings).
    settings: Settings,
    /// A fred configuration given instead of a URL.
    redis: Option<fred::prelude::Config>,
    /// TLS options given in code (they win over `settings.tls`).
    tls: Option<TlsOptions>,
    /// `None`: the default for the topology (see `reconnect_policy`).
    reconnect: Option<fred::prelude::ReconnectPolicy>,
    client_id: Option<Uuid>,
    /// A mapper given in code (it wins over `settings.name_prefix`).
    name_mapper: Option<Arc<dyn NameMapper>>,
}

impl std::fmt::Debug for ConfigBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigBuilder")
            .field("settings", &self.settings)
            .field("redis", &self.redis.as_ref().map(redacted_fred_config))
            .field("tls", &self.tls)
            .field("name_mapper", &self.name_mapper)
            .finish_non_exhaustive()
    }
}

impl ConfigBuilder {
    /// The Redis to connect to, as a URL (see [`Config::from_url`]).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1:6379/0")
    ///     .build()?;
    /// assert_eq!(config.redis().server.hosts()[0].port, 6379);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.settings.url = Some(url.into());
        self.redis = None;
        self
    }

    /// A builder that starts from `settings` (the URL, credentials, name prefix, TLS
    /// files and lock settings a service keeps in its configuration; see [`Settings`]).
    ///
    /// # Examples
    /// ```
    /// let mut settings = redisson_lock::config::Settings::default();
    /// settings.url = Some("redis://127.0.0.1:6379".to_owned());
    /// let config = redisson_lock::ConfigBuilder::from_settings(settings)
    ///     .local_handoffs(0)
    ///     .build()?;
    /// assert_eq!(config.local_handoffs(), 0);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_settings(settings: Settings) -> Self {
        ConfigBuilder {
            settings,
            ..ConfigBuilder::default()
        }
    }

    /// Replaces every lock setting at once (see [`LockSettings`]).
    ///
    /// # Examples
    /// ```
    /// let locks = redisson_lock::config::LockSettings::default();
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .lock_settings(locks.clone())
    ///     .build()?;
    /// assert_eq!(config.lock_settings(), &locks);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn lock_settings(mut self, locks: LockSettings) -> Self {
        self.settings.locks = locks;
        self
    }

    /// A full fred configuration, for what a URL cannot say.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::fred::prelude::Config as RedisConfig;
    /// let redis = RedisConfig::from_url("redis://127.0.0.1:6379")?;
    /// let config = redisson_lock::Config::builder().redis_config(redis).build()?;
    /// assert_eq!(config.redis().server.hosts()[0].port, 6379);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn redis_config(mut self, config: fred::prelude::Config) -> Self {
        self.redis = Some(config);
        self.settings.url = None;
        self
    }

    /// Encrypts the connections with TLS, with these options (a custom CA, a client
    /// certificate for mutual TLS, the TLS library). TLS is also on, with default options,
    /// for a `rediss://` or `valkeys://` URL. Needs the `tls-rustls` or `tls-native-tls`
    /// feature: without one, [`build`](ConfigBuilder::build) refuses with
    /// [`Error::TlsNotEnabled`]. For a fred config given with
    /// [`redis_config`](ConfigBuilder::redis_config), these options replace its TLS
    /// settings.
    ///
    /// # Examples
    /// ```no_run
    /// use redisson_lock::Config;
    /// use redisson_lock::config::TlsOptions;
    /// let config = Config::builder()
    ///     .url("rediss://redis.internal:6380")
    ///     .tls(TlsOptions::new().ca_file("/etc/redis/ca.crt"))
    ///     .build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn tls(mut self, options: TlsOptions) -> Self {
        self.tls = Some(options);
        self
    }

    /// The ACL user to authenticate as (Redis 6+), instead of the URL's. Without one, a
    /// password authenticates the `default` user.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .username("locks")
    ///     .password("s3cret")
    ///     .build()
    ///     .unwrap();
    /// assert!(!format!("{config:?}").contains("s3cret"));
    /// ```
    pub fn username(mut self, username: impl Into<String>) -> Self {
        self.settings.username = Some(username.into());
        self
    }

    /// The password to authenticate with, instead of the URL's (so that it can come from
    /// an environment variable or a secret store rather than a URL in a config file).
    /// Never shown by `Debug` or in errors.
    ///
    /// # Examples
    /// ```
    /// let password = std::env::var("REDIS_PASSWORD").unwrap_or_default();
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .password(password)
    ///     .build()
    ///     .unwrap();
    /// # let _ = config;
    /// ```
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.settings.password = Some(password.into());
        self
    }

    /// The user and password for the Sentinel nodes themselves, when they differ from the
    /// data nodes' (Redisson's `sentinelUsername` / `sentinelPassword`; in a URL, the
    /// `sentinelUsername` and `sentinelPassword` query parameters). Without them the
    /// sentinels are sent the data nodes' credentials.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis-sentinel://127.0.0.1:26379?sentinelServiceName=mymaster")
    ///     .sentinel_credentials(None, "sentinel-s3cret")
    ///     .build()
    ///     .unwrap();
    /// assert!(!format!("{config:?}").contains("sentinel-s3cret"));
    /// ```
    pub fn sentinel_credentials(
        mut self,
        username: Option<String>,
        password: impl Into<String>,
    ) -> Self {
        self.settings.sentinel_username = username;
        self.settings.sentinel_password = Some(password.into());
        self
    }

    /// fred's reconnect policy. Default: forever, backing off from 50 ms to 2 s (to
    /// 500 ms through sentinels: after a crash failover the client reaches the promoted
    /// replica at fred's next attempt once the sentinels announce it, so the back-off
    /// bounds how long locks wait for it).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::fred::prelude::ReconnectPolicy;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .reconnect_policy(ReconnectPolicy::new_constant(0, 250))
    ///     .build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn reconnect_policy(mut self, policy: fred::prelude::ReconnectPolicy) -> Self {
        self.reconnect = Some(policy);
        self
    }

    /// Redisson's `lockWatchdogTimeout` (default 30 s). Must match the Java apps that
    /// share the locks if you want the same expiry after a crash. At least 3 ms.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .watchdog_timeout(Duration::from_secs(10))
    ///     .build()?;
    /// assert_eq!(config.watchdog_timeout(), Duration::from_secs(10));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn watchdog_timeout(mut self, timeout: Duration) -> Self {
        self.settings.locks.watchdog_timeout = timeout;
        self
    }

    /// Redisson's `lockWatchdogBatchSize` (default 100): locks per renewal script.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .renewal_batch_size(50)
    ///     .build()?;
    /// assert_eq!(config.renewal_batch_size(), 50);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn renewal_batch_size(mut self, size: usize) -> Self {
        self.settings.locks.renewal_batch_size = size;
        self
    }

    /// Whether a holder is told at once when anyone else changes or removes its lock
    /// (default `true`): the command connection runs `CLIENT TRACKING ON REDIRECT <id>
    /// NOLOOP`, so Redis sends an invalidation for a held key that another client, an
    /// operator or the server (expiry, eviction, `FLUSHALL`) changed, and the client checks
    /// that hold at once: gone → `lost()`, shortened → `at_risk()`. Off, such a change is
    /// heard at the hold's next renewal (a third of the watchdog timeout). A server or user
    /// that refuses `CLIENT TRACKING` or `EVALSHA_RO` (Redis before 7, an ACL without
    /// `client|tracking`) leaves it off, said once in the log. On a single server,
    /// Sentinel and Redis Cluster (every primary; see `docs/reliability.md`, "Told at
    /// once").
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .key_tracking(false)
    ///     .build()?;
    /// assert!(!config.key_tracking());
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn key_tracking(mut self, on: bool) -> Self {
        self.settings.locks.key_tracking = on;
        self
    }

    /// How unlock notifications travel (default [`PublishMode::Auto`]).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::config::PublishMode;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .publish_mode(PublishMode::Sharded)
    ///     .build()?;
    /// assert_eq!(config.publish_mode(), PublishMode::Sharded);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn publish_mode(mut self, mode: PublishMode) -> Self {
        self.settings.locks.publish_mode = mode;
        self
    }

    /// How long one command may take before it fails (default 3 s).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .response_timeout(Duration::from_secs(1))
    ///     .build()?;
    /// assert_eq!(config.lock_settings().response_timeout, Duration::from_secs(1));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.settings.locks.response_timeout = timeout;
        self
    }

    /// How long making a connection may take before it fails (default 10 s; Redisson's
    /// `connectTimeout`): the TCP connect, the TLS handshake and the first commands
    /// (`AUTH`, `SELECT`). `Client::connect` to an address that accepts the connection
    /// and never answers (a TLS port spoken to in plain text, a firewall that swallows
    /// packets) fails after this long, and so does each reconnection attempt.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .connect_timeout(Duration::from_secs(2))
    ///     .build()?;
    /// assert_eq!(config.lock_settings().connect_timeout, Duration::from_secs(2));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.locks.connect_timeout = timeout;
        self
    }

    /// How long a blocking `lock()` waits for its subscription (default 7.5 s).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .subscription_timeout(Duration::from_secs(5))
    ///     .build()?;
    /// assert_eq!(config.lock_settings().subscription_timeout, Duration::from_secs(5));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn subscription_timeout(mut self, timeout: Duration) -> Self {
        self.settings.locks.subscription_timeout = timeout;
        self
    }

    /// How long an unlock latch lives (default 13.5 s); see `docs/protocol.md`.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .unlock_latch_ttl(Duration::from_secs(20))
    ///     .build()?;
    /// assert_eq!(config.lock_settings().unlock_latch_ttl, Duration::from_secs(20));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn unlock_latch_ttl(mut self, ttl: Duration) -> Self {
        self.settings.locks.unlock_latch_ttl = ttl;
        self
    }

    /// How long a queued fair-lock waiter's slot is reserved when the caller waits
    /// without a bound (Redisson's `fairLockWaitTimeout`, default 5 min): a waiter whose
    /// process died leaves the queue after this. Set it to what your Java apps use.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .fair_lock_wait_timeout(Duration::from_secs(60))
    ///     .build()?;
    /// assert_eq!(config.fair_lock_wait_timeout(), Duration::from_secs(60));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn fair_lock_wait_timeout(mut self, timeout: Duration) -> Self {
        self.settings.locks.fair_lock_wait_timeout = timeout;
        self
    }

    /// Whether the acquire, unlock and hold-time metrics (feature `metrics`) carry the
    /// lock name as a `lock` label (default `false`). Off by default: one time series per
    /// lock name can overwhelm a metrics backend when names are per-entity (`order:42`).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .metrics_lock_names(true)
    ///     .build()?;
    /// assert!(config.lock_settings().metrics_lock_names);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn metrics_lock_names(mut self, on: bool) -> Self {
        self.settings.locks.metrics_lock_names = on;
        self
    }

    /// Redisson's `checkLockSyncedSlaves` (default on): on a Sentinel or Cluster setup,
    /// every lock script that changes a lock (acquire, unlock, force unlock; not the
    /// watchdog's renewal) is followed, in the same pipeline and on the same connection,
    /// by `WAIT <replicas> <replicas_sync_timeout>`. An acquisition no replica
    /// acknowledged is undone and fails with
    /// [`Error::NoSyncedReplicas`]; an unlock or force unlock that no replica
    /// acknowledged is logged and reported as done. A single-server configuration never
    /// waits, as in Redisson. See `docs/reliability.md` for the cost.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .check_lock_synced_replicas(false)
    ///     .build()?;
    /// assert!(!config.check_lock_synced_replicas());
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn check_lock_synced_replicas(mut self, check: bool) -> Self {
        self.settings.locks.check_lock_synced_replicas = check;
        self
    }

    /// Redisson's `slavesSyncTimeout` (default 1 s): how long `WAIT` gives the replicas.
    /// While it waits, the node's connection carries nothing else, so a lagging replica
    /// delays this client's other commands to that node by up to this much. At least
    /// 1 ms (a `WAIT` timeout of 0 would block for ever).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .replicas_sync_timeout(Duration::from_millis(200))
    ///     .build()?;
    /// assert_eq!(config.replicas_sync_timeout(), Duration::from_millis(200));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn replicas_sync_timeout(mut self, timeout: Duration) -> Self {
        self.settings.locks.replicas_sync_timeout = timeout;
        self
    }

    /// Local hand-off (default [`DEFAULT_LOCAL_HANDOFFS`](super::DEFAULT_LOCAL_HANDOFFS) in a row): when a task of this
    /// client gives back a reentrant or non-reentrant lock that another task of this
    /// client waits for, its unlock script hands the lock straight to that task (the
    /// owner field moves; no message, no second script). After `in_a_row` such hand-offs
    /// in a row, or once the lock has stayed in this client for
    /// [`local_handoff_time`](ConfigBuilder::local_handoff_time), an unlock hands off
    /// only if no other client listens for the lock (on a single server; on Sentinel or
    /// Cluster it never does then) and otherwise releases for real and publishes, so
    /// that other processes and Java clients get their turn. A fair lock's unlock hands
    /// the lock to the head of its queue in Redis when that head is a task of this client
    /// (no bound needed: the queue keeps the order across clients). 0 turns hand-off off:
    /// every unlock is Redisson's. Waiting tasks of one client queue locally either way
    /// (fair locks: in the Redis queue), in arrival order, with only the first waiting in
    /// Redis. See `docs/lock-engine.md`.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .local_handoffs(0)
    ///     .build()?;
    /// assert_eq!(config.local_handoffs(), 0);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn local_handoffs(mut self, in_a_row: u32) -> Self {
        self.settings.locks.local_handoffs = in_a_row;
        self
    }

    /// How long a lock may stay in this client through local hand-offs before an unlock
    /// that others wait for is a real release (default [`DEFAULT_LOCAL_HANDOFF_TIME`](super::DEFAULT_LOCAL_HANDOFF_TIME));
    /// see [`local_handoffs`](ConfigBuilder::local_handoffs).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .local_handoff_time(Duration::from_millis(20))
    ///     .build()?;
    /// assert_eq!(config.local_handoff_time(), Duration::from_millis(20));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn local_handoff_time(mut self, time: Duration) -> Self {
        self.settings.locks.local_handoff_time = time;
        self
    }

    /// How long before a hold's lease could end in Redis its guard says
    /// [`HoldState::AtRisk`](crate::HoldState::AtRisk) when no renewal or re-entry has
    /// confirmed it since (the validity deadline: last confirmed lease − this margin).
    /// Default: 2 % of the lease plus 10 ms (Redlock's clock drift allowance, with room
    /// for a late timer); never more than half the lease. A wider margin warns earlier:
    /// with an explicit lease, it is how long before the lease's end a holder whose work
    /// outlives it is told.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .validity_margin(Duration::from_millis(500))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(config.validity_margin(), Some(Duration::from_millis(500)));
    /// ```
    pub fn validity_margin(mut self, margin: Duration) -> Self {
        self.settings.locks.validity_margin = Some(margin);
        self
    }

    /// Use this client id instead of a fresh random one. Two live clients must never share
    /// an id; this exists for tests and for restarting a process that must release the
    /// locks its previous incarnation held.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::Uuid;
    /// let id = Uuid::parse_str("5f3c2a9e-8d41-4b7a-9c1e-2f6a7b8c9d0e").expect("a UUID");
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .client_id(id)
    ///     .build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn client_id(mut self, id: Uuid) -> Self {
        self.client_id = Some(id);
        self
    }

    /// Redisson's `Config.setNameMapper(...)`: the name of every lock this client hands
    /// out goes through `mapper` to become the name stored in Redis (the lock hash; its
    /// channels, latch, read-hold keys and token counter follow). Default: none, names are
    /// stored as given. Map exactly as the Java apps that share the locks do; the usual
    /// mapper is a fixed prefix, [`PrefixNameMapper`](crate::PrefixNameMapper).
    ///
    /// [`Lock::name`](crate::Lock::name) keeps answering the name you gave;
    /// [`Lock::raw_name`](crate::Lock::raw_name) answers the mapped one. Locks handed to a
    /// [`MultiLock`](crate::MultiLock) or [`RedLock`](crate::RedLock) keep their client's
    /// mapping.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{Config, PrefixNameMapper};
    /// let config = Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(config.name_mapper().unwrap().map("orders"), "app1:orders");
    /// ```
    pub fn name_mapper(mut self, mapper: impl NameMapper) -> Self {
        self.name_mapper = Some(Arc::new(mapper));
        self
    }

    /// Which name the fair lock's queue and deadline set are built from when a
    /// [`name_mapper`](ConfigBuilder::name_mapper) is set: [`FairQueueNames::Mapped`]
    /// (default) as Redisson 3.52.0 and later, [`FairQueueNames::Unmapped`] as Redisson up
    /// to 3.51.x. Set it to what the Java apps sharing your fair locks run; without a
    /// mapper it changes nothing.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{Config, PrefixNameMapper};
    /// use redisson_lock::config::FairQueueNames;
    /// let config = Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .fair_queue_names(FairQueueNames::Unmapped)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(config.fair_queue_names(), FairQueueNames::Unmapped);
    /// ```
    pub fn fair_queue_names(mut self, names: FairQueueNames) -> Self {
        self.settings.locks.fair_queue_names = names;
        self
    }

    /// Redisson's `codec` (`Config.setCodec(..)`, `codec:` in `redisson.yaml`): the codec
    /// whose bytes name the per-key objects of [`Client::map`](crate::Client::map) and
    /// [`Client::set`](crate::Client::set), as Java's `getMap(name)` / `getSet(name)`
    /// without a codec use the client's. Default [`JavaCodec::Kryo5`](crate::codec::JavaCodec::Kryo5),
    /// Redisson's default. Give the codec the Java services configure: another one names
    /// other keys, with no error. A map or set with a codec of its own
    /// (`getMap(name, codec)`) is [`Client::map_with_codec`](crate::Client::map_with_codec).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// // Java: config.setCodec(StringCodec.INSTANCE)
    /// let config = redisson_lock::Config::builder()
    ///     .url("redis://127.0.0.1")
    ///     .codec(JavaCodec::String)
    ///     .build()?;
    /// assert_eq!(config.codec(), JavaCodec::String);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn codec(mut self, codec: crate::codec::JavaCodec) -> Self {
        self.settings.locks.codec = codec;
        self
    }

    /// Checks the settings and returns the [`Config`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no URL or fred config was given, the URL's scheme
    /// is not one of [`URL_SCHEMES`](super::URL_SCHEMES) or the URL does not parse, or a setting is out of range (a watchdog timeout under 3 ms or above
    /// [`MAX_LEASE`], a batch size of 0, a zero response or subscription timeout, a latch
    /// TTL, fair-lock wait timeout or replicas sync timeout under 1 ms).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder().url("redis://127.0.0.1").build()?;
    /// assert!(redisson_lock::Config::builder().url("http://127.0.0.1").build().is_err());
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn build(self) -> Result<Config> {
        let Settings {
            url,
            username,
            password,
            sentinel_username,
            sentinel_password,
            name_prefix,
            tls: tls_files,
            locks,
        } = self.settings;
        let tls_options = match (self.tls, tls_files) {
            (Some(options), _) => Some(options),
            (None, Some(files)) => Some(files_to_options(files)?),
            (None, None) => None,
        };
        // TLS is decided, and refused without a TLS library, before the URL is parsed:
        // fred without one reads a TLS scheme as plain TCP.
        let tls = match (tls_options, url.as_deref().and_then(tls_scheme)) {
            (Some(options), _) => {
                let backend = options.check_enabled("the TLS options")?;
                Some((options, backend))
            }
            (None, Some(scheme)) => {
                let options = TlsOptions::default();
                let backend = options.check_enabled(&format!("the URL scheme `{scheme}`"))?;
                Some((options, backend))
            }
            (None, None) => None,
        };
        let mut redis = match (self.redis, &url) {
            (Some(config), _) => config,
            (None, Some(url)) => {
                check_scheme(url)?;
                fred::prelude::Config::from_url(url).map_err(|e| {
                    Error::invalid(format!(
                        "cannot parse Redis URL `{}`: {}",
                        redacted_url(url),
                        crate::config::secrets::redact_error(&e.to_string(), url)
                    ))
                })?
            }
            (None, None) => return Err(Error::invalid("no Redis URL or fred config was given")),
        };
        if let Some((options, backend)) = &tls {
            apply_tls(&mut redis, options, *backend)?;
        }
        apply_credentials(
            &mut redis,
            username,
            password,
            sentinel_username,
            sentinel_password,
        );
        check_locks(&locks)?;
        let name_mapper = self.name_mapper.or_else(|| {
            name_prefix
                .filter(|prefix| !prefix.is_empty())
                .map(|prefix| Arc::new(PrefixNameMapper::new(prefix)) as Arc<dyn NameMapper>)
        });
        // Reconnect forever, quickly at first: a lock client that gives up reconnecting
        // turns every later call into an error until restart.
        let reconnect = self.reconnect.unwrap_or_else(|| {
            let max_ms = match redis.server {
                fred::types::config::ServerConfig::Sentinel { .. } => 500,
                _ => 2_000,
            };
            fred::prelude::ReconnectPolicy::new_exponential(0, 50, max_ms, 2)
        });
        Ok(Config {
            redis,
            reconnect,
            settings: locks,
            client_id: self.client_id,
            name_mapper,
        })
    }
}

/// TLS options from PEM file paths.
fn files_to_options(files: TlsFiles) -> Result<TlsOptions> {
    let mut options = TlsOptions::new();
    if let Some(ca) = files.ca_file {
        options = options.ca_file(ca);
    }
    match (files.client_cert_file, files.client_key_file) {
        (Some(cert), Some(key)) => options = options.client_cert_files(cert, key),
        (None, None) => {}
        _ => {
            return Err(Error::invalid(
                "a TLS client certificate needs both client_cert_file and client_key_file",
            ));
        }
    }
    Ok(options)
}

/// The ranges of [`ConfigBuilder::build`]'s errors.
fn check_locks(locks: &LockSettings) -> Result<()> {
    if locks.watchdog_timeout < Duration::from_millis(3) || locks.watchdog_timeout > MAX_LEASE {
        return Err(Error::invalid(format!(
            "watchdog timeout {:?} is outside 3 ms ..= {MAX_LEASE:?}",
            locks.watchdog_timeout
        )));
    }
    if locks.renewal_batch_size == 0 {
        return Err(Error::invalid("renewal batch size must be at least 1"));
    }
    if locks.response_timeout.is_zero()
        || locks.subscription_timeout.is_zero()
        || locks.connect_timeout.is_zero()
    {
        return Err(Error::invalid(
            "response, subscription and connect timeouts must be > 0",
        ));
    }
    if locks.unlock_latch_ttl < Duration::from_millis(1) || locks.unlock_latch_ttl > MAX_LEASE {
        return Err(Error::invalid(
            "unlock latch TTL must be between 1 ms and MAX_LEASE",
        ));
    }
    if locks.fair_lock_wait_timeout < Duration::from_millis(1)
        || locks.fair_lock_wait_timeout > MAX_LEASE
    {
        return Err(Error::invalid(
            "fair lock wait timeout must be between 1 ms and MAX_LEASE",
        ));
    }
    if locks.replicas_sync_timeout < Duration::from_millis(1)
        || locks.replicas_sync_timeout > MAX_LEASE
    {
        return Err(Error::invalid(
            "replicas sync timeout must be between 1 ms and MAX_LEASE",
        ));
    }
    Ok(())
}
