//! The defaults (Redisson's), the bounds of a lease, and the publish command: the
//! constants every other part of the configuration reads.

use std::time::Duration;

use crate::error::{Error, Result};

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
/// [`ConfigBuilder::local_handoffs`](crate::config::ConfigBuilder::local_handoffs)).
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
/// for real when others wait (see [`ConfigBuilder::local_handoff_time`](crate::config::ConfigBuilder::local_handoff_time)).
///
/// # Examples
/// ```
/// use redisson_lock::config::DEFAULT_LOCAL_HANDOFF_TIME;
/// let config = redisson_lock::Config::from_url("redis://127.0.0.1")?;
/// assert_eq!(config.local_handoff_time(), DEFAULT_LOCAL_HANDOFF_TIME);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub const DEFAULT_LOCAL_HANDOFF_TIME: Duration = Duration::from_millis(50);

/// The URL schemes [`Config::from_url`](crate::config::Config::from_url) accepts (fred's, with its `valkey` twins).
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
