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

use saphyr::{LoadableYamlNode, Yaml};

use super::ConfigBuilder;
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

mod reader;
mod text;

use reader::Reader;
pub(crate) use text::substitute;
use text::{convert, Node};

pub(super) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub(super) fn file_error(
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

pub(super) fn unsupported(setting: &str, reason: impl Into<String>) -> Error {
    file_error(RedissonFileError::Unsupported, setting, reason)
}

pub(super) fn bad_value(setting: &str, reason: impl Into<String>) -> Error {
    file_error(RedissonFileError::BadValue, setting, reason)
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::text::parse_address;
    use super::*;
    use crate::connection::config::PublishMode;

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
