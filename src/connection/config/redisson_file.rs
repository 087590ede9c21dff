//! [`RedissonFile`]: the Java fleet's own `redisson.yaml` (or 3.x `redisson.json`) read into
//! a [`ConfigBuilder`] (feature `redisson-yaml`).
//!
//! The reader follows what Redisson 3.23 and 4.7 really do with such a file:
//!
//! * `${NAME}` / `${NAME:-default}` are replaced in the raw text before parsing (comments
//!   included), with Redisson's pattern `\$\{([\w\.]+(:-.+?)?)\}`: an unset variable with
//!   no default stays literal text, an empty one is used as empty;
//! * every key must be one Redisson knows (3.x or 4.x layout): an unknown key is an error,
//!   as it is for Redisson;
//! * times are integers in milliseconds (quoted numbers accepted, unit suffixes refused);
//! * class-valued settings are YAML tags (`!<org.redisson.codec.Kryo5Codec> {}`) or, in
//!   JSON, `{"class": "..."}`.
//!
//! What matters to locks is used; what does not (codec, thread and connection pools,
//! retries, load balancer) is listed by [`RedissonFile::ignored`]; what matters and cannot
//! be honoured (a Java keystore, a custom name mapper or NAT mapper, a replicated or
//! master/slave topology) is an [`Error::RedissonFile`] of kind
//! [`RedissonFileError::Unsupported`] naming the setting.

use std::path::Path;
use std::time::Duration;

use saphyr::{LoadableYamlNode, Scalar, Yaml};

use super::{ConfigBuilder, PublishMode};
use crate::connection::tls::TlsOptions;
use crate::error::{Error, RedissonFileError, Result};

/// The topology a Redisson configuration file describes.
///
/// # Examples
/// ```
/// use redisson_lock::{RedissonFile, RedissonTopology};
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
/// Read the same `redisson.yaml` the Java apps load, so that the address, credentials,
/// database, TLS switch, `lockWatchdogTimeout`, `lockWatchdogBatchSize`,
/// `checkLockSyncedSlaves`, `slavesSyncTimeout`, `fairLockWaitTimeout`, `timeout`,
/// `subscriptionTimeout`, `shardedSubscriptionMode` and name mapper cannot drift apart.
/// [`builder`](RedissonFile::builder) hands the settings over as a [`ConfigBuilder`] to
/// add what the file cannot say (a PEM CA, this crate's own settings);
/// [`ignored`](RedissonFile::ignored) lists the settings that do not matter to locks.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use redisson_lock::RedissonFile;
///
/// let yaml = r#"
/// lockWatchdogTimeout: 10000
/// codec: !<org.redisson.codec.Kryo5Codec> {}
/// singleServerConfig:
///   address: "redis://${REDIS_HOST:-127.0.0.1}:6379"
///   database: 2
///   connectionPoolSize: 64
/// "#;
/// let file = RedissonFile::from_yaml_with_env(yaml, |_| None)?;
/// assert_eq!(file.ignored(), ["codec", "singleServerConfig.connectionPoolSize"]);
/// let config = file.build()?;
/// assert_eq!(config.watchdog_timeout(), Duration::from_secs(10));
/// assert_eq!(config.redis().database, Some(2));
/// # Ok::<(), redisson_lock::Error>(())
/// ```
#[derive(Debug)]
pub struct RedissonFile {
    builder: ConfigBuilder,
    ignored: Vec<String>,
    topology: RedissonTopology,
}

impl RedissonFile {
    /// Reads the file at `path`: JSON when its name ends in `.json` (Redisson 3.x's
    /// `fromJSON`), YAML otherwise; `${...}` substituted from the environment.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the file cannot be read; otherwise as
    /// [`from_yaml`](RedissonFile::from_yaml).
    ///
    /// # Examples
    /// ```no_run
    /// let config = redisson_lock::RedissonFile::read("/etc/app/redisson.yaml")?.build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<RedissonFile> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::invalid(format!("cannot read {}: {e}", path.display())))?;
        let json = path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        read_text(&text, json, &env_var)
    }

    /// Reads a `redisson.yaml` text, `${...}` substituted from the environment.
    ///
    /// # Errors
    /// [`Error::RedissonFile`]: a syntax error, a key Redisson does not know, a value of
    /// the wrong form, a setting this crate cannot honour, or not exactly one of
    /// `singleServerConfig`, `clusterServersConfig`, `sentinelServersConfig`.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::{Error, RedissonFile, RedissonFileError};
    /// let typo = RedissonFile::from_yaml("singleServerConfig:\n  adress: redis://h:6379\n");
    /// assert!(matches!(typo, Err(Error::RedissonFile { kind: RedissonFileError::Unknown, .. })));
    /// ```
    pub fn from_yaml(text: &str) -> Result<RedissonFile> {
        read_text(text, false, &env_var)
    }

    /// As [`from_yaml`](RedissonFile::from_yaml), with `${NAME}` looked up by `env`
    /// instead of the process environment (`None`: unset).
    ///
    /// # Errors
    /// As [`from_yaml`](RedissonFile::from_yaml).
    ///
    /// # Examples
    /// ```
    /// let yaml = "singleServerConfig:\n  address: redis://h:${PORT:-6379}\n  database: ${DB}\n";
    /// let env = |name: &str| (name == "DB").then(|| "3".to_owned());
    /// let config = redisson_lock::RedissonFile::from_yaml_with_env(yaml, env)?.build()?;
    /// assert_eq!(config.redis().database, Some(3));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_yaml_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RedissonFile> {
        read_text(text, false, &env)
    }

    /// Reads a Redisson 3.x `redisson.json` text (classes as `{"class": "..."}`),
    /// `${...}` substituted from the environment. (Redisson 4.x reads YAML only.)
    ///
    /// # Errors
    /// As [`from_yaml`](RedissonFile::from_yaml).
    ///
    /// # Examples
    /// ```
    /// let json = r#"{"singleServerConfig": {"address": "redis://127.0.0.1:6379"},
    ///                "codec": {"class": "org.redisson.client.codec.StringCodec"}}"#;
    /// let file = redisson_lock::RedissonFile::from_json(json)?;
    /// assert_eq!(file.ignored(), ["codec"]);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<RedissonFile> {
        read_text(text, true, &env_var)
    }

    /// As [`from_json`](RedissonFile::from_json), with `${NAME}` looked up by `env`.
    ///
    /// # Errors
    /// As [`from_yaml`](RedissonFile::from_yaml).
    ///
    /// # Examples
    /// ```
    /// let json = r#"{"singleServerConfig": {"address": "redis://h:${PORT}"}}"#;
    /// let env = |_: &str| Some("6380".to_owned());
    /// let config = redisson_lock::RedissonFile::from_json_with_env(json, env)?.build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_json_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RedissonFile> {
        read_text(text, true, &env)
    }

    /// The settings found in the file that do not matter to locks and were not used, as
    /// paths (`codec`, `singleServerConfig.connectionPoolSize`), in file order.
    ///
    /// # Examples
    /// ```
    /// let yaml = "threads: 16\nsingleServerConfig:\n  address: redis://h:6379\n";
    /// let file = redisson_lock::RedissonFile::from_yaml(yaml)?;
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
    /// use redisson_lock::{RedissonFile, RedissonTopology};
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
    /// let file = redisson_lock::RedissonFile::from_yaml("singleServerConfig:\n  address: redis://h:6379\n")?;
    /// let config = file.builder().local_handoffs(0).build()?;
    /// assert_eq!(config.local_handoffs(), 0);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn builder(self) -> ConfigBuilder {
        self.builder
    }

    /// The settings as a [`Config`](super::Config).
    ///
    /// # Errors
    /// As [`ConfigBuilder::build`] (a `rediss://` address without a TLS feature, a
    /// setting out of range).
    ///
    /// # Examples
    /// ```
    /// let yaml = "lockWatchdogTimeout: 9000\nsingleServerConfig:\n  address: redis://h:6379\n";
    /// let config = redisson_lock::RedissonFile::from_yaml(yaml)?.build()?;
    /// assert_eq!(config.watchdog_timeout().as_millis(), 9000);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn build(self) -> Result<super::Config> {
        self.builder.build()
    }
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn file_error(
    kind: RedissonFileError,
    setting: impl Into<String>,
    reason: impl Into<String>,
) -> Error {
    Error::RedissonFile {
        kind,
        setting: setting.into(),
        reason: reason.into(),
    }
}

fn unsupported(setting: &str, reason: impl Into<String>) -> Error {
    file_error(RedissonFileError::Unsupported, setting, reason)
}

fn bad_value(setting: &str, reason: impl Into<String>) -> Error {
    file_error(RedissonFileError::BadValue, setting, reason)
}

/// Redisson's substitution: `${NAME}` or `${NAME:-default}` where NAME is `[\w.]+` and the
/// default is at least one character other than a line break, up to the first `}`. An
/// unset NAME without a default stays as written; a set one (even empty) is pasted as is.
pub(crate) fn substitute(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match placeholder(after) {
            Some((name, default, used)) => {
                match env(name).or_else(|| default.map(str::to_owned)) {
                    Some(value) => out.push_str(&value),
                    None => out.push_str(&rest[start..start + 2 + used]),
                }
                rest = &after[used..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// After `${`: the name, the default, and the bytes up to and including the closing `}`.
fn placeholder(after: &str) -> Option<(&str, Option<&str>, usize)> {
    let name_len = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.')
        .count();
    if name_len == 0 {
        return None;
    }
    let name = &after[..name_len];
    let tail = &after[name_len..];
    if tail.starts_with('}') {
        return Some((name, None, name_len + 1));
    }
    let default_text = tail.strip_prefix(":-")?;
    // `.+?` then `}`: at least one character, no line break, the first `}` after it.
    let first = default_text.chars().next()?;
    if first == '\n' || first == '\r' {
        return None;
    }
    let from = first.len_utf8();
    let line_end = default_text[from..]
        .find(['\n', '\r'])
        .map_or(default_text.len(), |i| i + from);
    let close = default_text[from..line_end].find('}')? + from;
    let default = &default_text[..close];
    Some((name, Some(default), name_len + 2 + close + 1))
}

/// The file as a tree this reader walks: scalars as text (Redisson reads quoted and plain
/// numbers alike), classes as tags.
#[derive(Debug)]
enum Node {
    Null,
    Scalar(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
    /// `!<class> {...}` in YAML, `{"class": "...", ...}` in JSON.
    /// (The class's own settings do not matter here: only which class it is.)
    Class(String),
}

fn convert(yaml: &Yaml<'_>, json: bool) -> Result<Node> {
    Ok(match yaml {
        Yaml::Value(Scalar::Null) => Node::Null,
        Yaml::Value(Scalar::Boolean(b)) => Node::Scalar(b.to_string()),
        Yaml::Value(Scalar::Integer(i)) => Node::Scalar(i.to_string()),
        Yaml::Value(Scalar::FloatingPoint(f)) => Node::Scalar(f.to_string()),
        Yaml::Value(Scalar::String(s)) => Node::Scalar(s.to_string()),
        Yaml::Representation(text, _, _) => Node::Scalar(text.to_string()),
        Yaml::Sequence(items) => Node::Seq(
            items
                .iter()
                .map(|item| convert(item, json))
                .collect::<Result<_>>()?,
        ),
        Yaml::Mapping(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (key, value) in map {
                let key = match convert(key, json)? {
                    Node::Scalar(key) => key,
                    _ => {
                        return Err(file_error(
                            RedissonFileError::Syntax,
                            "<file>",
                            "a mapping key is not a plain name",
                        ))
                    }
                };
                entries.push((key, convert(value, json)?));
            }
            let class = json
                .then(|| entries.iter().position(|(key, _)| key == "class"))
                .flatten();
            match class {
                Some(at) => match entries.remove(at) {
                    (_, Node::Scalar(class)) => Node::Class(class),
                    _ => {
                        return Err(file_error(
                            RedissonFileError::Syntax,
                            "<file>",
                            "a `class` entry is not a class name",
                        ))
                    }
                },
                None => Node::Map(entries),
            }
        }
        Yaml::Tagged(tag, inner) => {
            let class = tag
                .suffix
                .strip_prefix("tag:yaml.org,2002:")
                .unwrap_or(&tag.suffix)
                .to_owned();
            {
                convert(inner, json)?;
                Node::Class(class)
            }
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(file_error(
                RedissonFileError::Syntax,
                "<file>",
                "an alias or a value that does not parse",
            ))
        }
    })
}

fn read_text(text: &str, json: bool, env: &dyn Fn(&str) -> Option<String>) -> Result<RedissonFile> {
    let text = substitute(text, env);
    let documents = Yaml::load_from_str(&text).map_err(|e| {
        file_error(
            RedissonFileError::Syntax,
            "<file>",
            format!("not {}: {e}", if json { "JSON" } else { "YAML" }),
        )
    })?;
    let [document] = documents.as_slice() else {
        return Err(file_error(
            RedissonFileError::Syntax,
            "<file>",
            format!("{} documents; Redisson reads exactly one", documents.len()),
        ));
    };
    let Node::Map(top) = convert(document, json)? else {
        return Err(file_error(
            RedissonFileError::Syntax,
            "<file>",
            "the top of the file is not a mapping of settings",
        ));
    };
    let mut reader = Reader::default();
    reader.top(top)?;
    reader.finish()
}

/// What the file said, before precedence (4.x top level over the server level) is applied.
#[derive(Default)]
struct Reader {
    ignored: Vec<String>,
    topology: Option<(RedissonTopology, &'static str)>,
    addresses: Vec<(String, String)>,
    master_name: Option<String>,
    database: Option<u8>,
    top: Credentials,
    server: Credentials,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    watchdog_timeout: Option<Duration>,
    renewal_batch_size: Option<usize>,
    check_lock_synced_replicas: Option<bool>,
    replicas_sync_timeout: Option<Duration>,
    fair_lock_wait_timeout: Option<Duration>,
    response_timeout: Option<Duration>,
    subscription_timeout: Option<Duration>,
    publish_mode: Option<PublishMode>,
}

/// The settings Redisson 4.x took to the top level (3.x: inside `*ServersConfig`).
#[derive(Default)]
struct Credentials {
    username: Option<String>,
    password: Option<String>,
}

/// Settings on both levels that do not matter to locks (Redisson 3.x and 4.x names).
const IGNORED_EVERYWHERE: &[&str] = &[
    "sslProvider",
    "sslKeystoreType",
    "sslTruststorePassword",
    "sslKeystorePassword",
    "sslProtocols",
    "sslCiphers",
    "tcpNoDelay",
    "tcpKeepAlive",
    "tcpKeepAliveCount",
    "tcpKeepAliveIdle",
    "tcpKeepAliveInterval",
    "tcpUserTimeout",
    "keepAlive",
    "credentialsReapplyInterval",
];

/// Top-level settings that do not matter to locks.
const IGNORED_TOP: &[&str] = &[
    "threads",
    "nettyThreads",
    "codec",
    "referenceEnabled",
    "transportMode",
    "reliableTopicWatchdogTimeout",
    "keepPubSubOrder",
    "useScriptCache",
    "minCleanUpDelay",
    "maxCleanUpDelay",
    "cleanUpKeysAmount",
    "nettyHook",
    "connectionListener",
    "useThreadClassLoader",
    "addressResolverGroupFactory",
    "lazyInitialization",
    "protocol",
    "valkeyCapabilities",
    "meterBinder",
];

/// Server-level settings (every topology) that do not matter to locks.
const IGNORED_SERVER: &[&str] = &[
    "idleConnectionTimeout",
    "connectTimeout",
    "pingTimeout",
    "retryAttempts",
    "retryInterval",
    "retryDelay",
    "reconnectionDelay",
    "subscriptionsPerConnection",
    "clientName",
    "pingConnectionInterval",
    "dnsMonitoringInterval",
    "subscriptionConnectionMinimumIdleSize",
    "subscriptionConnectionPoolSize",
    "connectionMinimumIdleSize",
    "connectionPoolSize",
    "tlsVersion",
];

/// Settings of the master/replica topologies (cluster, sentinel) that do not matter to
/// locks: reads, replicas' pools, scans.
const IGNORED_MASTER_SLAVE: &[&str] = &[
    "loadBalancer",
    "slaveConnectionMinimumIdleSize",
    "slaveConnectionPoolSize",
    "failedSlaveReconnectionInterval",
    "failedSlaveCheckInterval",
    "failedSlaveNodeDetector",
    "masterConnectionMinimumIdleSize",
    "masterConnectionPoolSize",
    "readMode",
    "subscriptionMode",
    "scanInterval",
    "slaveNotUsed",
];

const IGNORED_CLUSTER: &[&str] = &["checkSlotsCoverage"];

const IGNORED_SENTINEL: &[&str] = &[
    "checkSentinelsList",
    "checkSlaveStatusWithSyncing",
    "sentinelsDiscovery",
];

impl Reader {
    fn ignore(&mut self, path: String) {
        self.ignored.push(path);
    }

    fn top(&mut self, entries: Vec<(String, Node)>) -> Result<()> {
        for (key, value) in entries {
            let path = key.clone();
            match key.as_str() {
                "singleServerConfig" => {
                    self.section(RedissonTopology::SingleServer, "singleServerConfig", value)?
                }
                "clusterServersConfig" => {
                    self.section(RedissonTopology::Cluster, "clusterServersConfig", value)?
                }
                "sentinelServersConfig" => {
                    self.section(RedissonTopology::Sentinel, "sentinelServersConfig", value)?
                }
                "replicatedServersConfig" | "masterSlaveServersConfig" => {
                    return Err(unsupported(
                        &path,
                        "this topology finds its master by polling each node's role, which \
                         fred (this crate's client) cannot do; point the crate at the master \
                         with `singleServerConfig`, or use Sentinel or Cluster",
                    ))
                }
                "lockWatchdogTimeout" => self.watchdog_timeout = millis(&path, &value)?,
                "lockWatchdogBatchSize" => {
                    self.renewal_batch_size = integer(&path, &value)?
                        .map(|n| {
                            usize::try_from(n)
                                .map_err(|_| bad_value(&path, "not a positive integer"))
                        })
                        .transpose()?
                }
                "checkLockSyncedSlaves" => {
                    self.check_lock_synced_replicas = boolean(&path, &value)?
                }
                "slavesSyncTimeout" => self.replicas_sync_timeout = millis(&path, &value)?,
                "fairLockWaitTimeout" => self.fair_lock_wait_timeout = millis(&path, &value)?,
                _ => {
                    if IGNORED_TOP.contains(&key.as_str()) {
                        self.ignore(path);
                    } else if !shared_setting(
                        &mut self.top,
                        &mut self.ignored,
                        &path,
                        &key,
                        &value,
                    )? {
                        return Err(unknown(&path));
                    }
                }
            }
        }
        Ok(())
    }

    fn section(
        &mut self,
        topology: RedissonTopology,
        name: &'static str,
        value: Node,
    ) -> Result<()> {
        if let Some((_, first)) = self.topology {
            return Err(file_error(
                RedissonFileError::NoServers,
                name,
                format!("`{first}` is set too; Redisson takes one topology"),
            ));
        }
        self.topology = Some((topology, name));
        let entries = match value {
            Node::Map(entries) => entries,
            Node::Null => Vec::new(),
            _ => return Err(bad_value(name, "not a mapping of settings")),
        };
        for (key, value) in entries {
            let path = format!("{name}.{key}");
            let k = key.as_str();
            match (topology, k) {
                (RedissonTopology::SingleServer, "address") => {
                    if let Some(address) = text(&path, &value)? {
                        self.addresses.push((path, address));
                    }
                }
                (RedissonTopology::Cluster, "nodeAddresses")
                | (RedissonTopology::Sentinel, "sentinelAddresses") => {
                    let Node::Seq(items) = value else {
                        return Err(bad_value(&path, "not a list of addresses"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        let item_path = format!("{path}[{i}]");
                        match text(&item_path, item)? {
                            Some(address) => self.addresses.push((item_path, address)),
                            None => return Err(bad_value(&item_path, "empty address")),
                        }
                    }
                }
                (RedissonTopology::Sentinel, "masterName") => {
                    self.master_name = text(&path, &value)?
                }
                (RedissonTopology::Sentinel, "sentinelUsername") => {
                    self.sentinel_username = text(&path, &value)?
                }
                (RedissonTopology::Sentinel, "sentinelPassword") => {
                    self.sentinel_password = text(&path, &value)?
                }
                (_, "database") => {
                    let database = integer(&path, &value)?;
                    self.database = database
                        .map(|db| {
                            u8::try_from(db).map_err(|_| {
                                bad_value(&path, format!("database {db} is out of range"))
                            })
                        })
                        .transpose()?;
                    if topology == RedissonTopology::Cluster && self.database.unwrap_or(0) != 0 {
                        return Err(bad_value(&path, "Redis Cluster has only database 0"));
                    }
                }
                (_, "timeout") => self.response_timeout = millis(&path, &value)?,
                (_, "subscriptionTimeout") => self.subscription_timeout = millis(&path, &value)?,
                (RedissonTopology::Cluster, "shardedSubscriptionMode") => {
                    self.publish_mode = match text(&path, &value)?.as_deref() {
                        None | Some("AUTO") => Some(PublishMode::Auto),
                        Some("ON") => Some(PublishMode::Sharded),
                        Some("OFF") => Some(PublishMode::Publish),
                        Some(other) => {
                            return Err(bad_value(
                                &path,
                                format!("`{other}` is not AUTO, ON or OFF"),
                            ))
                        }
                    }
                }
                (RedissonTopology::Cluster | RedissonTopology::Sentinel, "natMapper") => {
                    match &value {
                        Node::Null => {}
                        Node::Class(class)
                            if class == "org.redisson.api.DefaultNatMapper"
                                || class == "org.redisson.config.DefaultNatMapper" => {}
                        _ => {
                            return Err(unsupported(
                                &path,
                                "fred cannot translate the addresses the servers announce; \
                                 reach the nodes at the addresses they announce",
                            ))
                        }
                    }
                }
                (RedissonTopology::Cluster, _) if IGNORED_CLUSTER.contains(&k) => self.ignore(path),
                (RedissonTopology::Sentinel, _) if IGNORED_SENTINEL.contains(&k) => {
                    self.ignore(path)
                }
                (RedissonTopology::Cluster | RedissonTopology::Sentinel, _)
                    if IGNORED_MASTER_SLAVE.contains(&k) =>
                {
                    self.ignore(path)
                }
                (_, _) if IGNORED_SERVER.contains(&k) => self.ignore(path),
                _ => {
                    if !shared_setting(&mut self.server, &mut self.ignored, &path, k, &value)? {
                        return Err(unknown(&path));
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<RedissonFile> {
        let Some((topology, section)) = self.topology else {
            return Err(file_error(
                RedissonFileError::NoServers,
                "<file>",
                "no singleServerConfig, clusterServersConfig or sentinelServersConfig",
            ));
        };
        if self.addresses.is_empty() {
            return Err(file_error(
                RedissonFileError::NoServers,
                section,
                "no server address",
            ));
        }
        let mut hosts = Vec::with_capacity(self.addresses.len());
        let mut tls = None;
        for (path, address) in &self.addresses {
            let (secure, host, port) = parse_address(path, address)?;
            if tls.is_some_and(|t| t != secure) {
                return Err(bad_value(
                    path,
                    "mixes TLS (`rediss://`) and plain (`redis://`) addresses",
                ));
            }
            tls = Some(secure);
            hosts.push((host, port));
        }
        use fred::types::config::ServerConfig;
        let server = match topology {
            RedissonTopology::SingleServer => {
                let (host, port) = hosts.remove(0);
                ServerConfig::new_centralized(host, port)
            }
            RedissonTopology::Cluster => ServerConfig::new_clustered(hosts),
            RedissonTopology::Sentinel => {
                let Some(master) = self.master_name else {
                    return Err(bad_value(
                        "sentinelServersConfig.masterName",
                        "a Sentinel configuration needs the master's name",
                    ));
                };
                ServerConfig::new_sentinel(hosts, master)
            }
        };
        let redis = fred::prelude::Config {
            server,
            database: self.database.filter(|db| *db != 0),
            ..Default::default()
        };
        let mut builder = ConfigBuilder::default().redis_config(redis);
        if tls == Some(true) {
            builder = builder.tls(TlsOptions::new());
        }
        let top = self.top;
        let server = self.server;
        if let Some(username) = top.username.or(server.username) {
            builder = builder.username(username);
        }
        if let Some(password) = top.password.or(server.password) {
            builder = builder.password(password);
        }
        if let Some(password) = self.sentinel_password {
            builder = builder.sentinel_credentials(self.sentinel_username, password);
        }
        if let Some(v) = self.watchdog_timeout {
            builder = builder.watchdog_timeout(v);
        }
        if let Some(v) = self.renewal_batch_size {
            builder = builder.renewal_batch_size(v);
        }
        if let Some(v) = self.check_lock_synced_replicas {
            builder = builder.check_lock_synced_replicas(v);
        }
        if let Some(v) = self.replicas_sync_timeout {
            builder = builder.replicas_sync_timeout(v);
        }
        if let Some(v) = self.fair_lock_wait_timeout {
            builder = builder.fair_lock_wait_timeout(v);
        }
        if let Some(v) = self.response_timeout {
            builder = builder.response_timeout(v);
        }
        if let Some(v) = self.subscription_timeout {
            builder = builder.subscription_timeout(v);
        }
        if let Some(v) = self.publish_mode {
            builder = builder.publish_mode(v);
        }
        Ok(RedissonFile {
            builder,
            ignored: self.ignored,
            topology,
        })
    }
}

fn unknown(path: &str) -> Error {
    file_error(
        RedissonFileError::Unknown,
        path,
        "not a setting Redisson knows here (Redisson refuses the file too; names are \
         case-sensitive)",
    )
}

/// The settings Redisson 4.x reads at the top level and 3.x inside `*ServersConfig`
/// (credentials, TLS, name and command mappers). `Ok(false)`: not one of them.
fn shared_setting(
    into: &mut Credentials,
    ignored: &mut Vec<String>,
    path: &str,
    key: &str,
    value: &Node,
) -> Result<bool> {
    match key {
        "username" => into.username = text(path, value)?,
        "password" => into.password = text(path, value)?,
        // Redisson's default mapper is the identity, as this crate's default.
        "nameMapper" => match value {
            Node::Null => {}
            Node::Class(class)
                if class == "org.redisson.api.DefaultNameMapper"
                    || class == "org.redisson.config.DefaultNameMapper" => {}
            Node::Class(class) => {
                return Err(unsupported(
                    path,
                    format!(
                        "the name mapper class `{class}` is Java code this crate cannot run; \
                         give the same mapping in code with ConfigBuilder::name_mapper"
                    ),
                ))
            }
            _ => return Err(bad_value(path, "not a class (`!<class> {}`)")),
        },
        "commandMapper" => match value {
            Node::Null => {}
            Node::Class(class) if class == "org.redisson.config.DefaultCommandMapper" => {}
            _ => {
                return Err(unsupported(
                    path,
                    "a command mapper renames the commands the lock scripts are sent with; \
                     this crate sends Redis's own names",
                ))
            }
        },
        "credentialsResolver" | "sentinelsCredentialsResolver" => {
            if !matches!(value, Node::Null) {
                return Err(unsupported(
                    path,
                    "a credentials resolver is Java code; give the credentials with \
                     ConfigBuilder::username / password",
                ));
            }
        }
        "sslTruststore" | "sslKeystore" => {
            if !matches!(value, Node::Null) {
                return Err(unsupported(
                    path,
                    "a Java key store (JKS/PKCS#12) cannot be read; give the CA or the client \
                     certificate as PEM files with ConfigBuilder::tls(TlsOptions::new()\
                     .ca_file(..).client_cert_files(..))",
                ));
            }
        }
        "sslTrustManagerFactory" | "sslKeyManagerFactory" => {
            if !matches!(value, Node::Null) {
                return Err(unsupported(
                    path,
                    "a trust or key manager factory is Java code; give PEM files with \
                     ConfigBuilder::tls",
                ));
            }
        }
        "sslEnableEndpointIdentification" => {
            if boolean(path, value)? == Some(false) {
                return Err(unsupported(
                    path,
                    "this crate always checks the server's host name against its certificate",
                ));
            }
        }
        "sslVerificationMode" => match text(path, value)?.as_deref() {
            None | Some("STRICT") => {}
            Some(mode) => {
                return Err(unsupported(
                    path,
                    format!(
                        "`{mode}`: this crate always verifies the certificate chain and the host \
                         name (STRICT)"
                    ),
                ))
            }
        },
        _ if IGNORED_EVERYWHERE.contains(&key) => ignored.push(path.to_owned()),
        _ => return Ok(false),
    }
    Ok(true)
}

/// A scalar as text; `None` for null. A class or a list is refused.
fn text(path: &str, value: &Node) -> Result<Option<String>> {
    match value {
        Node::Null => Ok(None),
        Node::Scalar(s) => Ok(Some(s.clone())),
        _ => Err(bad_value(path, "not a single value")),
    }
}

/// An integer as Redisson reads one (quoted or not, no unit); `None` for null.
fn integer(path: &str, value: &Node) -> Result<Option<i64>> {
    let Some(text) = text(path, value)? else {
        return Ok(None);
    };
    text.trim().parse::<i64>().map(Some).map_err(|_| {
        bad_value(
            path,
            format!("`{text}` is not an integer (Redisson takes milliseconds and counts as plain numbers, no units)"),
        )
    })
}

/// Milliseconds, as Redisson's timeouts; `None` for null.
fn millis(path: &str, value: &Node) -> Result<Option<Duration>> {
    match integer(path, value)? {
        None => Ok(None),
        Some(ms) => u64::try_from(ms)
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|_| bad_value(path, format!("{ms} ms is negative"))),
    }
}

fn boolean(path: &str, value: &Node) -> Result<Option<bool>> {
    match text(path, value)?.as_deref() {
        None => Ok(None),
        Some(b) if b.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(b) if b.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(bad_value(path, format!("`{other}` is not true or false"))),
    }
}

/// `redis://host:port` (or `rediss://`, `valkey://`, `valkeys://`): whether TLS, the host,
/// the port (6379 when left out).
fn parse_address(path: &str, address: &str) -> Result<(bool, String, u16)> {
    let Some((scheme, rest)) = address.split_once("://") else {
        return Err(bad_value(
            path,
            format!("`{address}` has no scheme; Redisson wants `redis://host:port`"),
        ));
    };
    let secure = match scheme.to_ascii_lowercase().as_str() {
        "redis" | "valkey" => false,
        "rediss" | "valkeys" => true,
        _ => {
            return Err(bad_value(
                path,
                format!("scheme `{scheme}` is not redis, rediss, valkey or valkeys"),
            ))
        }
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(bad_value(path, format!("`{address}`: unclosed `[`")));
        };
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad_value(path, format!("`{address}` has no host")));
    }
    let port = match port {
        None => 6379,
        Some(port) => port
            .parse::<u16>()
            .map_err(|_| bad_value(path, format!("`{address}`: `{port}` is not a port")))?,
    };
    Ok((secure, host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn substitution_follows_redissons_pattern() {
        let vars = [("HOST", "db1"), ("EMPTY", ""), ("redis.port", "7000")];
        let e = env(&vars);
        assert_eq!(substitute("${HOST}", &e), "db1");
        assert_eq!(substitute("${UNSET}", &e), "${UNSET}");
        assert_eq!(substitute("${UNSET:-x}", &e), "x");
        assert_eq!(substitute("${EMPTY:-x}", &e), "");
        assert_eq!(substitute("${redis.port:-6379}", &e), "7000");
        // Not Redisson's forms: left as written.
        assert_eq!(substitute("${HOST:db}", &e), "${HOST:db}");
        assert_eq!(substitute("${UNSET-x}", &e), "${UNSET-x}");
        assert_eq!(substitute("${UNSET:-}", &e), "${UNSET:-}");
        assert_eq!(substitute("${}", &e), "${}");
        assert_eq!(substitute("${a-b}", &e), "${a-b}");
        // The default ends at the first `}` and never crosses a line.
        assert_eq!(substitute("${UNSET:-a}b}", &e), "ab}");
        assert_eq!(substitute("${UNSET:-a\n}", &e), "${UNSET:-a\n}");
        assert_eq!(
            substitute("a ${HOST} b ${UNSET:-c} ${HOST:-z}", &e),
            "a db1 b c db1"
        );
        assert_eq!(substitute("$${HOST}", &e), "$db1");
        assert_eq!(substitute("é${UNSET:-ü}", &e), "éü");
    }

    #[test]
    fn layouts_of_both_versions_and_the_top_level_wins() {
        // 3.x: credentials inside the section; 4.x: at the top level, which wins.
        let yaml = "password: top\nusername: app\nsingleServerConfig:\n  \
                    address: redis://h:6379\n  password: server\n  username: old\n";
        let config = RedissonFile::from_yaml_with_env(yaml, |_| None)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.redis().password.as_deref(), Some("top"));
        assert_eq!(config.redis().username.as_deref(), Some("app"));
        let yaml = "singleServerConfig:\n  address: redis://h:6379\n  password: server\n";
        let config = RedissonFile::from_yaml_with_env(yaml, |_| None)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.redis().password.as_deref(), Some("server"));
        // Quoted numbers and booleans are read, as Redisson reads them.
        let yaml = "lockWatchdogTimeout: \"2500\"\ncheckLockSyncedSlaves: \"false\"\n\
                    singleServerConfig:\n  address: redis://h\n";
        let config = RedissonFile::from_yaml_with_env(yaml, |_| None)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.watchdog_timeout(), Duration::from_millis(2500));
        assert!(!config.check_lock_synced_replicas());
    }

    #[test]
    fn sharded_subscription_mode_sets_the_publish_mode() {
        for (mode, expected) in [
            ("AUTO", PublishMode::Auto),
            ("ON", PublishMode::Sharded),
            ("OFF", PublishMode::Publish),
        ] {
            let yaml = format!(
                "clusterServersConfig:\n  nodeAddresses:\n  - redis://h:7000\n  \
                 shardedSubscriptionMode: {mode}\n"
            );
            let config = RedissonFile::from_yaml_with_env(&yaml, |_| None)
                .unwrap()
                .build()
                .unwrap();
            assert_eq!(config.publish_mode(), expected, "{mode}");
        }
        let two = "singleServerConfig:\n  address: redis://a\n\
                   clusterServersConfig:\n  nodeAddresses:\n  - redis://b:1\n";
        assert!(matches!(
            RedissonFile::from_yaml_with_env(two, |_| None),
            Err(Error::RedissonFile {
                kind: RedissonFileError::NoServers,
                ..
            })
        ));
        let mixed = "clusterServersConfig:\n  nodeAddresses:\n  - redis://a:1\n  - rediss://b:1\n";
        assert!(matches!(
            RedissonFile::from_yaml_with_env(mixed, |_| None),
            Err(Error::RedissonFile {
                kind: RedissonFileError::BadValue,
                ..
            })
        ));
    }

    #[test]
    fn addresses() {
        assert_eq!(
            parse_address("a", "redis://127.0.0.1:6380").unwrap(),
            (false, "127.0.0.1".into(), 6380)
        );
        assert_eq!(
            parse_address("a", "rediss://h").unwrap(),
            (true, "h".into(), 6379)
        );
        assert_eq!(
            parse_address("a", "redis://[::1]:7000").unwrap(),
            (false, "::1".into(), 7000)
        );
        assert!(parse_address("a", "127.0.0.1:6379").is_err());
        assert!(parse_address("a", "http://h:1").is_err());
        assert!(parse_address("a", "redis://h:").is_err());
    }
}
