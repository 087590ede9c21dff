//! [`RedissonFile`] as read: the builder it makes, the settings it ignores, its topology
//! ([`RedissonTopology`]). How a file is read is in `reading.rs`.

use super::super::builder::ConfigBuilder;
use crate::error::Result;

/// The topology a Redisson configuration file describes.
///
/// # Examples
/// ```
/// use redisson_lock::config::{RedissonFile, RedissonTopology};
/// let file = RedissonFile::from_yaml("singleServerConfig:\n  address: redis://127.0.0.1:6379\n")?;
/// assert_eq!(file.topology(), RedissonTopology::SingleServer);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedissonTopology {
    /// `singleServerConfig`.
    SingleServer,
    /// `clusterServersConfig`.
    Cluster,
    /// `sentinelServersConfig`.
    Sentinel,
}

/// A Redisson configuration file read into this crate's settings.
///
/// Read the same `redisson.yaml` the Java apps load, so that the address, credentials
/// (also those in the address, `rediss://user:pass@host:6380`, which Redisson prefers),
/// database, TLS switch, `lockWatchdogTimeout`, `lockWatchdogBatchSize`,
/// `checkLockSyncedSlaves`, `slavesSyncTimeout`, `fairLockWaitTimeout`, `timeout`,
/// `subscriptionTimeout`, `shardedSubscriptionMode`, name mapper and `codec` (the one
/// [`Client::map`](crate::Client::map) and [`Client::set`](crate::Client::set) encode keys
/// with; see [`RedissonFile::options`] for a codec whose bytes the crate does not write)
/// cannot drift apart.
/// The file is read as Redisson 3.x and 4.x read it (docs/redisson-yaml.md): it loads when
/// one of them loads it, as that one reads it.
/// [`builder`](RedissonFile::builder) hands the settings over as a [`ConfigBuilder`] to
/// add what the file cannot say (a PEM CA, this crate's own settings);
/// [`ignored`](RedissonFile::ignored) lists the settings that do not matter to locks.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use redisson_lock::config::RedissonFile;
///
/// let yaml = r#"
/// lockWatchdogTimeout: 10000
/// codec: !<org.redisson.client.codec.StringCodec> {}
/// threads: 16
/// singleServerConfig:
///   address: "redis://${REDIS_HOST:-127.0.0.1}:6379"
///   database: 2
///   connectionPoolSize: 64
/// "#;
/// let file = RedissonFile::from_yaml_with_env(yaml, |_| None)?;
/// assert_eq!(file.ignored(), ["threads", "singleServerConfig.connectionPoolSize"]);
/// let config = file.build()?;
/// assert_eq!(config.watchdog_timeout(), Duration::from_secs(10));
/// assert_eq!(config.redis().database, Some(2));
/// // `client.map(..)` / `client.set(..)` encode keys as the Java services do.
/// assert_eq!(config.codec(), redisson_lock::codec::JavaCodec::String);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
#[derive(Debug)]
pub struct RedissonFile {
    pub(super) builder: ConfigBuilder,
    pub(super) ignored: Vec<String>,
    pub(super) topology: RedissonTopology,
}

impl RedissonFile {
    /// The settings found in the file that do not matter to locks and were not used, as
    /// paths (`threads`, `singleServerConfig.connectionPoolSize`), in file order.
    ///
    /// # Examples
    /// ```
    /// let yaml = "threads: 16\nsingleServerConfig:\n  address: redis://h:6379\n";
    /// let file = redisson_lock::config::RedissonFile::from_yaml(yaml)?;
    /// assert_eq!(file.ignored(), ["threads"]);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// The topology the file describes.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::config::{RedissonFile, RedissonTopology};
    /// let yaml = "clusterServersConfig:\n  nodeAddresses:\n  - redis://h:7000\n";
    /// assert_eq!(RedissonFile::from_yaml(yaml)?.topology(), RedissonTopology::Cluster);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn topology(&self) -> RedissonTopology {
        self.topology
    }

    /// The settings as a [`ConfigBuilder`], to add what the file cannot say (a PEM CA
    /// with [`ConfigBuilder::tls`], a reconnect policy, this crate's own settings).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let file = redisson_lock::config::RedissonFile::from_yaml("singleServerConfig:\n  address: redis://h:6379\n")?;
    /// let config = file.builder().local_handoffs(0).build()?;
    /// assert_eq!(config.local_handoffs(), 0);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn builder(self) -> ConfigBuilder {
        self.builder
    }

    /// The settings as a [`Config`](crate::Config).
    ///
    /// # Errors
    /// As [`ConfigBuilder::build`] (a `rediss://` address without a TLS feature, a
    /// setting out of range).
    ///
    /// # Examples
    /// ```
    /// let yaml = "lockWatchdogTimeout: 9000\nsingleServerConfig:\n  address: redis://h:6379\n";
    /// let config = redisson_lock::config::RedissonFile::from_yaml(yaml)?.build()?;
    /// assert_eq!(config.watchdog_timeout().as_millis(), 9000);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn build(self) -> Result<super::super::built::Config> {
        self.builder.build()
    }
}
