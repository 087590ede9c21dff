//! [`ConfigBuilder`]: every setting of a [`Config`], checked by [`ConfigBuilder::build`].

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::connection::{apply_credentials, apply_tls, check_scheme, tls_scheme};
use super::{
    Config, PublishMode, DEFAULT_FAIR_LOCK_WAIT_TIMEOUT, DEFAULT_LOCAL_HANDOFFS,
    DEFAULT_LOCAL_HANDOFF_TIME, DEFAULT_RENEWAL_BATCH_SIZE, DEFAULT_REPLICAS_SYNC_TIMEOUT,
    DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SUBSCRIPTION_TIMEOUT, DEFAULT_UNLOCK_LATCH_TTL,
    DEFAULT_WATCHDOG_TIMEOUT, MAX_LEASE,
};
use crate::error::{Error, Result};
use crate::name_mapper::{FairQueueNames, NameMapper};
use crate::secrets::{redacted_fred_config, redacted_url};
use crate::tls::TlsOptions;

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
#[derive(Clone)]
#[must_use = "a builder does nothing until `build()`"]
pub struct ConfigBuilder {
    url: Option<String>,
    redis: Option<fred::prelude::Config>,
    tls: Option<TlsOptions>,
    username: Option<String>,
    password: Option<String>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    /// `None`: the default for the topology (see `reconnect_policy`).
    reconnect: Option<fred::prelude::ReconnectPolicy>,
    watchdog_timeout: Duration,
    renewal_batch_size: usize,
    publish_mode: PublishMode,
    response_timeout: Duration,
    subscription_timeout: Duration,
    unlock_latch_ttl: Duration,
    fair_lock_wait_timeout: Duration,
    metrics_lock_names: bool,
    check_lock_synced_replicas: bool,
    replicas_sync_timeout: Duration,
    local_handoffs: u32,
    local_handoff_time: Duration,
    validity_margin: Option<Duration>,
    client_id: Option<Uuid>,
    name_mapper: Option<Arc<dyn NameMapper>>,
    fair_queue_names: FairQueueNames,
}

impl std::fmt::Debug for ConfigBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |secret: &Option<String>| secret.as_ref().map(|_| crate::secrets::REDACTED);
        f.debug_struct("ConfigBuilder")
            .field("url", &self.url.as_deref().map(redacted_url))
            .field("redis", &self.redis.as_ref().map(redacted_fred_config))
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("sentinel_username", &self.sentinel_username)
            .field("sentinel_password", &hidden(&self.sentinel_password))
            .field("watchdog_timeout", &self.watchdog_timeout)
            .field("publish_mode", &self.publish_mode)
            .field("response_timeout", &self.response_timeout)
            .field("name_mapper", &self.name_mapper)
            .field("fair_queue_names", &self.fair_queue_names)
            .finish_non_exhaustive()
    }
}

impl Default for ConfigBuilder {
    fn default() -> Self {
        ConfigBuilder {
            url: None,
            redis: None,
            tls: None,
            username: None,
            password: None,
            sentinel_username: None,
            sentinel_password: None,
            reconnect: None,
            watchdog_timeout: DEFAULT_WATCHDOG_TIMEOUT,
            renewal_batch_size: DEFAULT_RENEWAL_BATCH_SIZE,
            publish_mode: PublishMode::Auto,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            subscription_timeout: DEFAULT_SUBSCRIPTION_TIMEOUT,
            unlock_latch_ttl: DEFAULT_UNLOCK_LATCH_TTL,
            fair_lock_wait_timeout: DEFAULT_FAIR_LOCK_WAIT_TIMEOUT,
            metrics_lock_names: false,
            check_lock_synced_replicas: true,
            replicas_sync_timeout: DEFAULT_REPLICAS_SYNC_TIMEOUT,
            local_handoffs: DEFAULT_LOCAL_HANDOFFS,
            local_handoff_time: DEFAULT_LOCAL_HANDOFF_TIME,
            validity_margin: None,
            client_id: None,
            name_mapper: None,
            fair_queue_names: FairQueueNames::Mapped,
        }
    }
}

impl ConfigBuilder {
    /// The Redis to connect to, as a URL (see [`Config::from_url`]).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self.redis = None;
        self
    }

    /// A full fred configuration, for what a URL cannot say.
    pub fn redis_config(mut self, config: fred::prelude::Config) -> Self {
        self.redis = Some(config);
        self.url = None;
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
    /// use redisson_lock::{Config, TlsOptions};
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
        self.username = Some(username.into());
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
        self.password = Some(password.into());
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
        self.sentinel_username = username;
        self.sentinel_password = Some(password.into());
        self
    }

    /// fred's reconnect policy. Default: forever, backing off from 50 ms to 2 s (to
    /// 500 ms through sentinels: after a crash failover the client reaches the promoted
    /// replica at fred's next attempt once the sentinels announce it, so the back-off
    /// bounds how long locks wait for it).
    pub fn reconnect_policy(mut self, policy: fred::prelude::ReconnectPolicy) -> Self {
        self.reconnect = Some(policy);
        self
    }

    /// Redisson's `lockWatchdogTimeout` (default 30 s). Must match the Java apps that
    /// share the locks if you want the same expiry after a crash. At least 3 ms.
    pub fn watchdog_timeout(mut self, timeout: Duration) -> Self {
        self.watchdog_timeout = timeout;
        self
    }

    /// Redisson's `lockWatchdogBatchSize` (default 100): locks per renewal script.
    pub fn renewal_batch_size(mut self, size: usize) -> Self {
        self.renewal_batch_size = size;
        self
    }

    /// How unlock notifications travel (default [`PublishMode::Auto`]).
    pub fn publish_mode(mut self, mode: PublishMode) -> Self {
        self.publish_mode = mode;
        self
    }

    /// How long one command may take before it fails (default 3 s).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long a blocking `lock()` waits for its subscription (default 7.5 s).
    pub fn subscription_timeout(mut self, timeout: Duration) -> Self {
        self.subscription_timeout = timeout;
        self
    }

    /// How long an unlock latch lives (default 13.5 s); see `docs/protocol.md`.
    pub fn unlock_latch_ttl(mut self, ttl: Duration) -> Self {
        self.unlock_latch_ttl = ttl;
        self
    }

    /// How long a queued fair-lock waiter's slot is reserved when the caller waits
    /// without a bound (Redisson's `fairLockWaitTimeout`, default 5 min): a waiter whose
    /// process died leaves the queue after this. Set it to what your Java apps use.
    pub fn fair_lock_wait_timeout(mut self, timeout: Duration) -> Self {
        self.fair_lock_wait_timeout = timeout;
        self
    }

    /// Whether the acquire, unlock and hold-time metrics (feature `metrics`) carry the
    /// lock name as a `lock` label (default `false`). Off by default: one time series per
    /// lock name can overwhelm a metrics backend when names are per-entity (`order:42`).
    pub fn metrics_lock_names(mut self, on: bool) -> Self {
        self.metrics_lock_names = on;
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
    pub fn check_lock_synced_replicas(mut self, check: bool) -> Self {
        self.check_lock_synced_replicas = check;
        self
    }

    /// Redisson's `slavesSyncTimeout` (default 1 s): how long `WAIT` gives the replicas.
    /// While it waits, the node's connection carries nothing else, so a lagging replica
    /// delays this client's other commands to that node by up to this much. At least
    /// 1 ms (a `WAIT` timeout of 0 would block for ever).
    pub fn replicas_sync_timeout(mut self, timeout: Duration) -> Self {
        self.replicas_sync_timeout = timeout;
        self
    }

    /// Local hand-off (default [`DEFAULT_LOCAL_HANDOFFS`] in a row): when a task of this
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
    /// Redis. See `docs/design.md`.
    pub fn local_handoffs(mut self, in_a_row: u32) -> Self {
        self.local_handoffs = in_a_row;
        self
    }

    /// How long a lock may stay in this client through local hand-offs before an unlock
    /// that others wait for is a real release (default [`DEFAULT_LOCAL_HANDOFF_TIME`]);
    /// see [`local_handoffs`](ConfigBuilder::local_handoffs).
    pub fn local_handoff_time(mut self, time: Duration) -> Self {
        self.local_handoff_time = time;
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
        self.validity_margin = Some(margin);
        self
    }

    /// Use this client id instead of a fresh random one. Two live clients must never share
    /// an id; this exists for tests and for restarting a process that must release the
    /// locks its previous incarnation held.
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
    /// use redisson_lock::{Config, FairQueueNames, PrefixNameMapper};
    /// let config = Config::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .name_mapper(PrefixNameMapper::new("app1:"))
    ///     .fair_queue_names(FairQueueNames::Unmapped)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(config.fair_queue_names(), FairQueueNames::Unmapped);
    /// ```
    pub fn fair_queue_names(mut self, names: FairQueueNames) -> Self {
        self.fair_queue_names = names;
        self
    }

    /// Checks the settings and returns the [`Config`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no URL or fred config was given, the URL's scheme
    /// is not one of [`URL_SCHEMES`](super::URL_SCHEMES) or the URL does not parse, or a setting is out of range (a watchdog timeout under 3 ms or above
    /// [`MAX_LEASE`], a batch size of 0, a zero response or subscription timeout, a latch
    /// TTL, fair-lock wait timeout or replicas sync timeout under 1 ms).
    pub fn build(self) -> Result<Config> {
        // TLS is decided, and refused without a TLS library, before the URL is parsed:
        // fred without one reads a TLS scheme as plain TCP.
        let tls = match (self.tls, self.url.as_deref().and_then(tls_scheme)) {
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
        let mut redis = match (self.redis, &self.url) {
            (Some(config), _) => config,
            (None, Some(url)) => {
                check_scheme(url)?;
                fred::prelude::Config::from_url(url).map_err(|e| {
                    Error::invalid(format!(
                        "cannot parse Redis URL `{}`: {}",
                        redacted_url(url),
                        crate::secrets::redact_error(&e.to_string(), url)
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
            self.username,
            self.password,
            self.sentinel_username,
            self.sentinel_password,
        );
        if self.watchdog_timeout < Duration::from_millis(3) || self.watchdog_timeout > MAX_LEASE {
            return Err(Error::invalid(format!(
                "watchdog timeout {:?} is outside 3 ms ..= {MAX_LEASE:?}",
                self.watchdog_timeout
            )));
        }
        if self.renewal_batch_size == 0 {
            return Err(Error::invalid("renewal batch size must be at least 1"));
        }
        if self.response_timeout.is_zero() || self.subscription_timeout.is_zero() {
            return Err(Error::invalid(
                "response and subscription timeouts must be > 0",
            ));
        }
        if self.unlock_latch_ttl < Duration::from_millis(1) || self.unlock_latch_ttl > MAX_LEASE {
            return Err(Error::invalid(
                "unlock latch TTL must be between 1 ms and MAX_LEASE",
            ));
        }
        if self.fair_lock_wait_timeout < Duration::from_millis(1)
            || self.fair_lock_wait_timeout > MAX_LEASE
        {
            return Err(Error::invalid(
                "fair lock wait timeout must be between 1 ms and MAX_LEASE",
            ));
        }
        if self.replicas_sync_timeout < Duration::from_millis(1)
            || self.replicas_sync_timeout > MAX_LEASE
        {
            return Err(Error::invalid(
                "replicas sync timeout must be between 1 ms and MAX_LEASE",
            ));
        }
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
            watchdog_timeout: self.watchdog_timeout,
            renewal_batch_size: self.renewal_batch_size,
            publish_mode: self.publish_mode,
            response_timeout: self.response_timeout,
            subscription_timeout: self.subscription_timeout,
            unlock_latch_ttl: self.unlock_latch_ttl,
            fair_lock_wait_timeout: self.fair_lock_wait_timeout,
            metrics_lock_names: self.metrics_lock_names,
            check_lock_synced_replicas: self.check_lock_synced_replicas,
            replicas_sync_timeout: self.replicas_sync_timeout,
            local_handoffs: self.local_handoffs,
            local_handoff_time: self.local_handoff_time,
            validity_margin: self.validity_margin,
            client_id: self.client_id,
            name_mapper: self.name_mapper,
            fair_queue_names: self.fair_queue_names,
        })
    }
}
