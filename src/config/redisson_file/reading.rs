//! Reading a file: its text substituted and parsed, walked as each Redisson version walks
//! it, the two readings combined, and the [`RedissonFile`] built; with the constructors
//! ([`RedissonFile::read`], `from_yaml*`, `from_json*`) that start it.

use std::path::Path;

use super::super::builder::ConfigBuilder;
use super::agreement;
use super::file::{RedissonFile, RedissonTopology};
use super::reader::{Reading, Refusal, Resolved, Walk};
use super::scalar::Redisson;
use super::secret_values::Secrets;
use super::source::{env_var, file_error, read_file};
use super::text;
use super::tree;
use crate::codec::{JavaCodec, JsonUuids};
use crate::config::tls::TlsOptions;
use crate::error::{Error, RedissonFileError, Result};

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
    /// let config = redisson_lock::config::RedissonFile::read("/etc/app/redisson.yaml")?.build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<RedissonFile> {
        let (text, json) = read_file(path.as_ref())?;
        read_text(&text, json, &env_var, None)
    }

    /// Reads a `redisson.yaml` text, `${...}` substituted from the environment.
    ///
    /// # Errors
    /// [`Error::RedissonFile`] (never showing a password): a syntax error, a key or a
    /// value neither Redisson version reads, an address Redisson would not connect to, no
    /// server address, a setting this crate cannot honour, or one that Redisson 3.x and
    /// 4.x, both loading the file, read differently.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::Error;
    /// use redisson_lock::config::{RedissonFile, RedissonFileError};
    /// let typo = RedissonFile::from_yaml("singleServerConfig:\n  adress: redis://h:6379\n");
    /// assert!(matches!(typo, Err(Error::RedissonFile { kind: RedissonFileError::Unknown, .. })));
    /// ```
    pub fn from_yaml(text: &str) -> Result<RedissonFile> {
        read_text(text, false, &env_var, None)
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
    /// let config = redisson_lock::config::RedissonFile::from_yaml_with_env(yaml, env)?.build()?;
    /// assert_eq!(config.redis().database, Some(3));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_yaml_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RedissonFile> {
        read_text(text, false, &env, None)
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
    ///                "codec": {"class": "org.redisson.client.codec.StringCodec"}, "threads": 8}"#;
    /// let file = redisson_lock::config::RedissonFile::from_json(json)?;
    /// assert_eq!(file.ignored(), ["threads"]);
    /// assert_eq!(file.build()?.codec(), redisson_lock::codec::JavaCodec::String);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<RedissonFile> {
        read_text(text, true, &env_var, None)
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
    /// let config = redisson_lock::config::RedissonFile::from_json_with_env(json, env)?.build()?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_json_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RedissonFile> {
        read_text(text, true, &env, None)
    }
}

pub(super) fn read_text(
    text: &str,
    json: bool,
    env: &dyn Fn(&str) -> Option<String>,
    codec: Option<JavaCodec>,
) -> Result<RedissonFile> {
    let (text, pasted) = text::substitute_tracked(text, env);
    let mut secrets = Secrets::default();
    secrets.add_variables(&pasted);
    // A file that does not parse: both versions refuse it.
    let mask = |e: Error, secrets: &Secrets| match e {
        Error::RedissonFile {
            kind,
            setting,
            reason,
        } => file_error(kind, setting, secrets.mask(&reason)),
        other => other,
    };
    let outcomes: Vec<(Redisson, std::result::Result<Reading, Refusal>)> = if json {
        let root = tree::parse_json(&text).map_err(|e| mask(e, &secrets))?;
        secrets.add_tree(&root);
        Redisson::ALL
            .into_iter()
            .map(|version| {
                let outcome = match version {
                    Redisson::V4 => Err(Refusal {
                        error: file_error(
                            RedissonFileError::Syntax,
                            "<file>",
                            "JSON: Redisson 4.x reads no JSON (it removed Config.fromJSON); \
                             only 3.x does",
                        ),
                        layout: true,
                    }),
                    Redisson::V3 => Walk::new(version, true, &secrets).read(&root),
                };
                (version, outcome)
            })
            .collect()
    } else {
        let documents = tree::parse_yaml(&text).map_err(|e| mask(e, &secrets))?;
        for document in documents.iter().flatten() {
            secrets.add_tree(document);
        }
        Redisson::ALL
            .into_iter()
            .map(|version| {
                let first = documents.first().and_then(Option::as_ref);
                let outcome = match (version, first) {
                    (_, None) => Err(Refusal {
                        error: tree::syntax("the file holds no YAML document"),
                        layout: false,
                    }),
                    // 3.x's Jackson reads the first document and stops there.
                    (Redisson::V4, Some(_)) if documents.len() > 1 => Err(Refusal {
                        error: tree::syntax(format!(
                            "{} YAML documents (`---`); Redisson 4.x reads exactly one \
                             (3.x the first)",
                            documents.len()
                        )),
                        layout: true,
                    }),
                    (_, Some(root)) => Walk::new(version, false, &secrets).read(root),
                };
                (version, outcome)
            })
            .collect()
    };
    combine(outcomes, &secrets, codec)
}

/// The crate loads a file when at least one Redisson version loads it, reading it as
/// that version does; when both load it they must resolve the same settings.
fn combine(
    outcomes: Vec<(Redisson, std::result::Result<Reading, Refusal>)>,
    secrets: &Secrets,
    codec: Option<JavaCodec>,
) -> Result<RedissonFile> {
    let mut loaded = Vec::new();
    let mut refused = Vec::new();
    for (version, outcome) in outcomes {
        match outcome {
            Ok(reading) => loaded.push(reading),
            Err(refusal) => refused.push((version, refusal)),
        }
    }
    // A version that loads the file but would not connect with it (no address, an
    // address it refuses) counts as refusing it.
    let (unusable, loaded): (Vec<Reading>, Vec<Reading>) =
        loaded.into_iter().partition(|reading| {
            matches!(
                reading.problem,
                Some(Error::RedissonFile {
                    kind: RedissonFileError::NoServers | RedissonFileError::BadValue,
                    ..
                })
            )
        });
    if loaded.is_empty() {
        return Err(match unusable.into_iter().find_map(|r| r.problem) {
            Some(problem) => problem,
            None => refusal_of_both(refused),
        });
    }
    for (version, refusal) in &refused {
        tracing::debug!(
            refused_by = version.name(),
            reason = %refusal.error,
            "redisson configuration file: read as the other Redisson version reads it"
        );
    }
    let mut resolved = Vec::new();
    let mut ignored = None;
    for reading in loaded {
        if let Some(problem) = reading.problem {
            return Err(problem);
        }
        if ignored.is_none() {
            ignored = Some(reading.ignored);
        }
        if let Some(r) = reading.resolved {
            resolved.push((reading.version, r));
        }
    }
    if let [(a_version, a), (b_version, b)] = resolved.as_slice()
        && let Some(error) = agreement::disagreement(*a_version, a, *b_version, b, secrets)
    {
        return Err(error);
    }
    let only_v4 = matches!(resolved.as_slice(), [(Redisson::V4, _)]);
    let Some((_, resolved)) = resolved.into_iter().next() else {
        return Err(file_error(
            RedissonFileError::NoServers,
            "<file>",
            "no server settings",
        ));
    };
    let mut ignored = ignored.unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    ignored.retain(|setting| seen.insert(setting.clone()));
    let codec = match codec {
        Some(codec) => codec,
        None => file_codec(&resolved, only_v4)?,
    };
    Ok(build(resolved, ignored, codec))
}

/// The codec the file names, as the crate writes it: Redisson's default `Kryo5Codec`
/// when it names none; `JsonJacksonCodec`'s UUIDs as 4.x writes them when only 4.x reads
/// the file, else not known (3.x's layout is also read by 3.55.0 and later, which write
/// them as 4.x does). A codec whose bytes the crate does not write is refused: the
/// per-key objects would be other keys than Java's.
fn file_codec(resolved: &Resolved, only_v4: bool) -> Result<JavaCodec> {
    let Some(class) = &resolved.codec else {
        return Ok(JavaCodec::Kryo5);
    };
    let uuids = if only_v4 {
        JsonUuids::Typed
    } else {
        JsonUuids::Unknown
    };
    JavaCodec::from_java_class(class, uuids).ok_or_else(|| {
        let path = resolved.paths.get("codec").map_or("codec", String::as_str);
        file_error(
            RedissonFileError::Unsupported,
            path,
            format!(
                "`{class}`: this crate does not write this codec's bytes, so the per-key \
                 objects of maps and sets (`client.map(..)`, `client.set(..)`) would be other \
                 keys than the Java services', with no error. It writes those of StringCodec \
                 (and LongCodec, IntegerCodec, DoubleCodec), Kryo5Codec and JsonJacksonCodec. \
                 To read the file all the same, say which codec those objects use: \
                 `RedissonFile::options().codec(JavaCodec::..).read(..)` (a service that takes \
                 none of them may give any); a map whose Java codec writes other bytes takes \
                 its keys as `KeyBytes`"
            ),
        )
    })
}

/// The error when both versions refuse: the one that is not merely the other version's
/// layout (a typo rather than a 3.x key in a 4.x file), saying that both refuse.
fn refusal_of_both(refused: Vec<(Redisson, Refusal)>) -> Error {
    let mut refused = refused.into_iter();
    let Some((first_version, first)) = refused.next() else {
        return file_error(RedissonFileError::Syntax, "<file>", "not read");
    };
    let Some((second_version, second)) = refused.next() else {
        return first.error;
    };
    let (chosen, other_version, other) = if first.layout && !second.layout {
        (second, first_version, first)
    } else {
        (first, second_version, second)
    };
    let Error::RedissonFile {
        kind,
        setting,
        reason,
    } = chosen.error
    else {
        return chosen.error;
    };
    let also = match &other.error {
        Error::RedissonFile {
            setting: other_setting,
            reason: other_reason,
            ..
        } if *other_setting == setting && *other_reason == reason => String::new(),
        Error::RedissonFile {
            setting: other_setting,
            ..
        } if *other_setting == setting => format!(" ({} refuses it too)", other_version.name()),
        Error::RedissonFile {
            setting: other_setting,
            reason: other_reason,
            ..
        } => format!(
            "; {} refuses the file too, at `{other_setting}`: {other_reason}",
            other_version.name()
        ),
        other => format!("; {} refuses the file too: {other}", other_version.name()),
    };
    file_error(kind, setting, format!("{reason}{also}"))
}

/// The crate's settings from what Redisson resolved.
fn build(r: Resolved, ignored: Vec<String>, codec: JavaCodec) -> RedissonFile {
    use fred::types::config::ServerConfig;
    let mut nodes = r.nodes;
    let server = match r.topology {
        RedissonTopology::SingleServer => {
            let (host, port) = nodes.remove(0);
            ServerConfig::new_centralized(host, port)
        }
        RedissonTopology::Cluster => ServerConfig::new_clustered(nodes),
        RedissonTopology::Sentinel => {
            ServerConfig::new_sentinel(nodes, r.master_name.unwrap_or_default())
        }
    };
    let redis = fred::prelude::Config {
        server,
        database: (r.database != 0).then_some(r.database),
        ..Default::default()
    };
    let mut builder = ConfigBuilder::default()
        .redis_config(redis)
        .watchdog_timeout(r.watchdog_timeout)
        .check_lock_synced_replicas(r.check_lock_synced_replicas)
        .replicas_sync_timeout(r.replicas_sync_timeout)
        .response_timeout(r.response_timeout)
        .connect_timeout(r.connect_timeout)
        .codec(codec);
    if r.tls {
        builder = builder.tls(TlsOptions::new());
    }
    if let Some(username) = r.username {
        builder = builder.username(username);
    }
    if let Some(password) = r.password {
        builder = builder.password(password);
    }
    if let Some((username, password)) = r.sentinel {
        builder = builder.sentinel_credentials(username, password);
    }
    if let Some(v) = r.subscription_timeout {
        builder = builder.subscription_timeout(v);
    }
    if let Some(v) = r.renewal_batch_size {
        builder = builder.renewal_batch_size(v);
    }
    if let Some(v) = r.fair_lock_wait_timeout {
        builder = builder.fair_lock_wait_timeout(v);
    }
    if let Some(v) = r.publish_mode {
        builder = builder.publish_mode(v);
    }
    RedissonFile {
        builder,
        ignored,
        topology: r.topology,
    }
}
