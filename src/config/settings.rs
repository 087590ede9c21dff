//! [`LockSettings`] and [`Settings`]: every plain setting of a [`Config`](super::Config),
//! each listed once. [`Config`](super::Config) and [`ConfigBuilder`](super::ConfigBuilder)
//! keep them in these structs, and with the `serde` feature a service keeps them in its own
//! configuration (`config`, `figment`, environment), durations as humantime strings
//! (`"30s"`, `"1m 30s"`, `"250ms"`).

use std::path::PathBuf;
use std::time::Duration;

use super::defaults::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_FAIR_LOCK_WAIT_TIMEOUT, DEFAULT_LOCAL_HANDOFF_TIME,
    DEFAULT_LOCAL_HANDOFFS, DEFAULT_RENEWAL_BATCH_SIZE, DEFAULT_REPLICAS_SYNC_TIMEOUT,
    DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SUBSCRIPTION_TIMEOUT, DEFAULT_UNLOCK_LATCH_TTL,
    DEFAULT_WATCHDOG_TIMEOUT, PublishMode,
};
use crate::codec::JavaCodec;
use crate::names::mapper::FairQueueNames;

/// How the locks behave: the settings of [`ConfigBuilder`](super::ConfigBuilder) that
/// are not about where Redis is. Each field's meaning and range is the builder method of
/// the same name's; [`Default`] is Redisson's defaults.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use redisson_lock::Config;
/// use redisson_lock::config::LockSettings;
///
/// let mut locks = LockSettings::default();
/// locks.watchdog_timeout = Duration::from_secs(10);
/// let config = Config::builder()
///     .url("redis://127.0.0.1:6379")
///     .lock_settings(locks)
///     .build()?;
/// assert_eq!(config.lock_settings().watchdog_timeout, Duration::from_secs(10));
/// # Ok::<(), redisson_lock::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct LockSettings {
    /// Redisson's `lockWatchdogTimeout` (default 30 s); see
    /// [`ConfigBuilder::watchdog_timeout`](super::ConfigBuilder::watchdog_timeout).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub watchdog_timeout: Duration,
    /// Redisson's `lockWatchdogBatchSize` (default 100).
    pub renewal_batch_size: usize,
    /// How unlock notifications travel (`auto`, `publish`, `sharded`).
    pub publish_mode: PublishMode,
    /// Redisson's `timeout` (default 3 s).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub response_timeout: Duration,
    /// Redisson's `connectTimeout` (default 10 s).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub connect_timeout: Duration,
    /// Redisson's `subscriptionTimeout` (default 7.5 s).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub subscription_timeout: Duration,
    /// How long an unlock latch lives (default 13.5 s).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub unlock_latch_ttl: Duration,
    /// Redisson's `fairLockWaitTimeout` (default 5 min).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub fair_lock_wait_timeout: Duration,
    /// Whether the metrics carry the lock name (default `false`).
    pub metrics_lock_names: bool,
    /// Redisson's `checkLockSyncedSlaves` (default `true`).
    pub check_lock_synced_replicas: bool,
    /// Redisson's `slavesSyncTimeout` (default 1 s).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub replicas_sync_timeout: Duration,
    /// Local hand-offs in a row (default 8; 0: never).
    pub local_handoffs: u32,
    /// How long a lock may stay in one client through local hand-offs (default 50 ms).
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub local_handoff_time: Duration,
    /// The validity margin; `None`: 2 % of the lease plus 10 ms.
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde::option"))]
    pub validity_margin: Option<Duration>,
    /// Which name a fair lock's queue is built from under a name mapper (`mapped`,
    /// `unmapped`).
    pub fair_queue_names: FairQueueNames,
    /// Redisson's `codec`: how [`Client::map`](crate::Client::map) and
    /// [`Client::set`](crate::Client::set) encode keys (default `kryo5`; `string`,
    /// `{ json-jackson = { uuids = "typed" } }`).
    pub codec: JavaCodec,
    /// Whether the client asks Redis to tell it at once when anyone else changes a key
    /// it holds (`CLIENT TRACKING`; default `true`); see
    /// [`ConfigBuilder::key_tracking`](super::ConfigBuilder::key_tracking).
    pub key_tracking: bool,
}

impl Default for LockSettings {
    fn default() -> Self {
        LockSettings {
            watchdog_timeout: DEFAULT_WATCHDOG_TIMEOUT,
            renewal_batch_size: DEFAULT_RENEWAL_BATCH_SIZE,
            publish_mode: PublishMode::Auto,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            subscription_timeout: DEFAULT_SUBSCRIPTION_TIMEOUT,
            unlock_latch_ttl: DEFAULT_UNLOCK_LATCH_TTL,
            fair_lock_wait_timeout: DEFAULT_FAIR_LOCK_WAIT_TIMEOUT,
            metrics_lock_names: false,
            check_lock_synced_replicas: true,
            replicas_sync_timeout: DEFAULT_REPLICAS_SYNC_TIMEOUT,
            local_handoffs: DEFAULT_LOCAL_HANDOFFS,
            local_handoff_time: DEFAULT_LOCAL_HANDOFF_TIME,
            validity_margin: None,
            fair_queue_names: FairQueueNames::Mapped,
            codec: JavaCodec::Kryo5,
            key_tracking: true,
        }
    }
}

/// TLS from PEM files (see [`TlsOptions`](crate::config::TlsOptions)): a CA to trust instead of
/// the platform's roots, and a client certificate for mutual TLS.
///
/// # Examples
/// ```
/// let mut files = redisson_lock::config::TlsFiles::default();
/// files.ca_file = Some("/etc/redis/ca.crt".into());
/// # let _ = files;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct TlsFiles {
    /// A PEM file of the CA certificate(s) to trust.
    pub ca_file: Option<PathBuf>,
    /// The client certificate (PEM); needs `client_key_file`.
    pub client_cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM, PKCS#8).
    pub client_key_file: Option<PathBuf>,
}

/// Every plain setting of a [`Config`](super::Config): where Redis is, how to
/// authenticate, the name mapper's prefix, TLS files, and the [`LockSettings`]. What a
/// service keeps in its configuration; [`ConfigBuilder`](super::ConfigBuilder) keeps its
/// settings in one of these, and [`ConfigBuilder::from_settings`](super::ConfigBuilder::from_settings)
/// starts from one. `Debug` never shows the passwords.
///
/// With the `serde` feature it deserializes (unknown fields refused, missing ones at
/// their defaults):
///
/// ```toml
/// url = "redis://redis.internal:6379/0"
/// username = "locks"
/// name_prefix = "app1:"
/// tls = { ca_file = "/etc/redis/ca.crt" }
///
/// [locks]
/// watchdog_timeout = "10s"
/// fair_lock_wait_timeout = "1m"
/// publish_mode = "auto"
/// ```
///
/// # Examples
/// ```
/// let mut settings = redisson_lock::config::Settings::default();
/// settings.url = Some("redis://127.0.0.1:6379".to_owned());
/// settings.name_prefix = Some("app1:".to_owned());
/// let config = redisson_lock::Config::from_settings(settings)?;
/// assert_eq!(config.name_mapper().unwrap().map("orders"), "app1:orders");
/// # Ok::<(), redisson_lock::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct Settings {
    /// The Redis URL (see [`Config::from_url`](super::Config::from_url)).
    pub url: Option<String>,
    /// The ACL user, instead of the URL's.
    pub username: Option<String>,
    /// The password, instead of the URL's. Serialized as is: keep it out of files you
    /// write back, or fill it from the environment.
    pub password: Option<String>,
    /// The sentinels' own user (with `sentinel_password`).
    pub sentinel_username: Option<String>,
    /// The sentinels' own password.
    pub sentinel_password: Option<String>,
    /// The prefix of a [`PrefixNameMapper`](crate::PrefixNameMapper) (Redisson's
    /// `nameMapper` putting a fixed prefix before every name).
    pub name_prefix: Option<String>,
    /// TLS from PEM files (TLS is on for a `rediss://` URL without them too).
    pub tls: Option<TlsFiles>,
    /// How the locks behave.
    pub locks: LockSettings,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden =
            |secret: &Option<String>| secret.as_ref().map(|_| crate::config::secrets::REDACTED);
        f.debug_struct("Settings")
            .field(
                "url",
                &self
                    .url
                    .as_deref()
                    .map(crate::config::secrets::redacted_url),
            )
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("sentinel_username", &self.sentinel_username)
            .field("sentinel_password", &hidden(&self.sentinel_password))
            .field("name_prefix", &self.name_prefix)
            .field("tls", &self.tls)
            .field("locks", &self.locks)
            .finish()
    }
}

/// Durations as humantime strings (`"30s"`, `"1m 30s"`, `"250ms"`).
#[cfg(feature = "serde")]
mod humantime_serde {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(*d))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "`{text}` is not a duration like \"30s\", \"1m 30s\" or \"250ms\": {e}"
            ))
        })
    }

    pub(super) mod option {
        use std::time::Duration;

        use serde::{Deserialize, Deserializer, Serializer};

        pub(in super::super) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub(in super::super) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            match Option::<String>::deserialize(d)? {
                None => Ok(None),
                Some(text) => humantime::parse_duration(&text).map(Some).map_err(|e| {
                    serde::de::Error::custom(format!(
                        "`{text}` is not a duration like \"30s\" or \"250ms\": {e}"
                    ))
                }),
            }
        }
    }
}
