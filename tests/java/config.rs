//! Every Redisson configuration file the suite holds (`tests/redisson-yaml/`), read by real
//! Redisson 3.23.3 and 4.7.0 (`config-check.sh`: their own `Config.fromYAML` /
//! `fromJSON`) and by the crate, each without and with the environment variables it uses
//! (`# env: NAME=value ...` in the file, `<file>.env` beside a JSON file).
//!
//! For each file and variant: the crate loads it exactly when a Redisson version would
//! connect with it (its loader takes the file and the file has a server address Redisson
//! connects to), or refuses it as unsupported naming a setting docs/redisson-yaml.md
//! lists, or because the two versions, which both load it, read a setting differently;
//! and every setting the crate resolves (addresses, credentials, database, timeouts, lock
//! settings, TLS) is the one each of those versions resolves.

#![cfg(feature = "redisson-yaml")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redisson_lock::config::{RedissonFile, RedissonFileError};
use redisson_lock::fred::types::config::ServerConfig;
use redisson_lock::{Config, Error};
use serde_json::Value;

use crate::support::real_java::{Version, config_check, config_check_archive};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redisson-yaml");
const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/redisson-yaml.md");
/// JVMs at a time (2 cores).
const IN_FLIGHT: usize = 3;

/// One file in one environment.
struct Case {
    path: PathBuf,
    name: String,
    /// `bare` (every variable the file uses unset) or `env`.
    variant: &'static str,
    env: Vec<(String, Option<String>)>,
}

impl Case {
    fn var(&self, name: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.clone())
    }
}

fn sample_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sample_files(&path, into);
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            into.push(path);
        }
    }
}

/// The `${NAME}` placeholders of a text (Redisson's pattern: `[\w.]+`).
fn placeholders(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in text.match_indices("${") {
        let name: String = text[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `NAME=value` pairs from the file's `# env:` line, or from `<file>.env`.
fn declared_env(path: &Path, text: &str) -> Vec<(String, String)> {
    let sidecar = PathBuf::from(format!("{}.env", path.display()));
    let line = match std::fs::read_to_string(&sidecar) {
        Ok(line) => line,
        Err(_) => text
            .lines()
            .find_map(|l| l.trim_start_matches('\u{feff}').strip_prefix("# env:"))
            .unwrap_or_default()
            .to_owned(),
    };
    line.split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

/// The folder compared: the suite's samples, or `REDISSON_YAML_DIR` (a fleet's own files:
/// point it at them to see how the crate reads each).
fn samples_dir() -> (PathBuf, bool) {
    match std::env::var_os("REDISSON_YAML_DIR") {
        Some(dir) => (PathBuf::from(dir), false),
        None => (PathBuf::from(SAMPLES), true),
    }
}

fn cases() -> Vec<Case> {
    let (dir, ours) = samples_dir();
    let mut files = Vec::new();
    sample_files(&dir, &mut files);
    let mut cases = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        let names = placeholders(&text);
        let unset = |n: &String| (n.clone(), None);
        cases.push(Case {
            path: path.clone(),
            name: name.clone(),
            variant: "bare",
            env: names.iter().map(unset).collect(),
        });
        if names.is_empty() {
            continue;
        }
        let declared = declared_env(&path, &text);
        if declared.is_empty() && !ours {
            continue;
        }
        assert!(
            !declared.is_empty(),
            "{name} uses {names:?}: say which values to try in a `# env: NAME=value` line \
             (`{name}.env` for JSON)"
        );
        cases.push(Case {
            path,
            name,
            variant: "env",
            env: names
                .iter()
                .map(|n| {
                    let value = declared
                        .iter()
                        .find(|(d, _)| d == n)
                        .map(|(_, v)| v.clone());
                    (n.clone(), value)
                })
                .collect(),
        });
    }
    cases
}

/// Runs real Redisson on every case, both versions, `IN_FLIGHT` JVMs at a time.
fn run_redisson(cases: &[Case]) -> Vec<[String; 2]> {
    // The class-data archives first, one JVM per version, before the checks share them.
    std::thread::scope(|scope| {
        for version in Version::ALL {
            scope.spawn(move || config_check_archive(version));
        }
    });
    let jobs: Vec<(usize, usize)> = (0..cases.len())
        .flat_map(|c| (0..2).map(move |v| (c, v)))
        .collect();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(vec![[String::new(), String::new()]; cases.len()]);
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT {
            scope.spawn(|| {
                while let Some(&(c, v)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let case = &cases[c];
                    let env: Vec<(&str, Option<&str>)> = case
                        .env
                        .iter()
                        .map(|(n, v)| (n.as_str(), v.as_deref()))
                        .collect();
                    let line = config_check(Version::ALL[v], &case.path, &env);
                    results.lock().unwrap()[c][v] = line;
                }
            });
        }
    });
    results.into_inner().unwrap()
}

/// The crate's reading: the file as `RedissonFile::read` would read it, with the case's
/// environment.
fn read_with_crate(case: &Case) -> Result<Config, Error> {
    let text = std::fs::read_to_string(&case.path).unwrap();
    let lookup = |name: &str| case.var(name);
    let file = if case.name.ends_with(".json") {
        RedissonFile::from_json_with_env(&text, lookup)
    } else {
        RedissonFile::from_yaml_with_env(&text, lookup)
    }?;
    file.build()
}

/// An address as the checker prints it (a password shown as `***`), read the way
/// Redisson's `RedisURI` reads it when it connects.
#[derive(Debug)]
struct JavaAddress {
    tls: bool,
    host: String,
    port: u16,
    username: Option<String>,
    password: bool,
}

fn java_address(text: &str, version: Version) -> Option<JavaAddress> {
    let (scheme, rest) = text.split_once("://")?;
    let tls = match (scheme, version) {
        ("redis", _) | ("valkey", Version::V4_7_0) => false,
        ("rediss", _) | ("valkeys", Version::V4_7_0) => true,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, host_port) = match authority.split_once('@') {
        Some((_, after)) if after.contains('@') => return None,
        Some((userinfo, after)) => (Some(userinfo), after),
        None => (None, authority),
    };
    let (username, password) = match userinfo {
        None => (None, false),
        Some(u) => match u.split_once(':') {
            Some((user, _)) => ((!user.is_empty()).then(|| user.to_owned()), true),
            // 4.x: a lone `secret@` is the password; 3.x ignores it.
            None => (None, version == Version::V4_7_0),
        },
    };
    let (host, port) = host_port.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
    (!host.is_empty()).then(|| JavaAddress {
        tls,
        host: host.to_owned(),
        port,
        username,
        password,
    })
}

/// What one Redisson version did with a case.
enum Outcome {
    Refused(String),
    /// Loaded, but Redisson would not connect with it (no address, an address it refuses).
    Unusable(String),
    Usable(Value, Vec<JavaAddress>),
}

fn outcome(line: &str, version: Version) -> Outcome {
    if line.starts_with("ERR") {
        return Outcome::Refused(line.to_owned());
    }
    let json: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let texts: Vec<String> = match json["mode"].as_str().unwrap_or("none") {
        "single" => json["address"]
            .as_str()
            .map(str::to_owned)
            .into_iter()
            .collect(),
        "cluster" | "replicated" => strings(&json["nodeAddresses"]),
        "sentinel" => strings(&json["sentinelAddresses"]),
        "masterslave" => json["masterAddress"]
            .as_str()
            .map(str::to_owned)
            .into_iter()
            .chain(strings(&json["slaveAddresses"]))
            .collect(),
        _ => Vec::new(),
    };
    if texts.is_empty() {
        return Outcome::Unusable(format!("no server address (mode {})", json["mode"]));
    }
    let mut addresses = Vec::new();
    for text in &texts {
        match java_address(text, version) {
            Some(a) => addresses.push(a),
            None => return Outcome::Unusable(format!("Redisson would not connect to `{text}`")),
        }
    }
    Outcome::Usable(json, addresses)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The settings docs/redisson-yaml.md lists as refused (`Unsupported`): the backticked
/// names in the rows of its table whose crate column says `Unsupported`.
fn documented_unsupported() -> Vec<String> {
    let docs = std::fs::read_to_string(DOCS).unwrap_or_else(|e| panic!("{DOCS}: {e}"));
    let mut names = Vec::new();
    for row in docs.lines().filter(|l| l.starts_with('|')) {
        if !row.contains("`Unsupported`") {
            continue;
        }
        for (i, piece) in row.split('`').enumerate() {
            if i % 2 == 1 {
                names.push(piece.trim_end_matches("://").to_owned());
            }
        }
    }
    assert!(!names.is_empty(), "{DOCS}: no table row says `Unsupported`");
    names
}

/// The setting's own name (`clusterServersConfig.nodeAddresses[1]` → `nodeAddresses`).
fn leaf(setting: &str) -> &str {
    let last = setting.rsplit('.').next().unwrap_or(setting);
    last.split('[').next().unwrap_or(last)
}

/// The crate's sentinel settings: the master's name, the sentinels' user and password.
type SentinelSide<'a> = (&'a String, &'a Option<String>, &'a Option<String>);

/// Differences between the crate's config and what `version` resolved (`json`).
fn compare(
    version: Version,
    json: &Value,
    addresses: &[JavaAddress],
    config: &Config,
) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, redisson: String, crate_: String| {
        if redisson != crate_ {
            diffs.push(format!(
                "{what}: Redisson {version} {redisson}, the crate {crate_}"
            ));
        }
    };
    let redis = config.redis();
    let mode = json["mode"].as_str().unwrap_or_default();
    let (crate_mode, hosts, sentinel): (&str, Vec<(String, u16)>, Option<SentinelSide<'_>>) =
        match &redis.server {
            ServerConfig::Centralized { server } => {
                ("single", vec![(server.host.to_string(), server.port)], None)
            }
            ServerConfig::Clustered { hosts, .. } => (
                "cluster",
                hosts.iter().map(|s| (s.host.to_string(), s.port)).collect(),
                None,
            ),
            ServerConfig::Sentinel {
                hosts,
                service_name,
                username,
                password,
            } => (
                "sentinel",
                hosts.iter().map(|s| (s.host.to_string(), s.port)).collect(),
                Some((service_name, username, password)),
            ),
        };
    check("topology", mode.to_owned(), crate_mode.to_owned());
    check(
        "addresses",
        format!(
            "{:?}",
            addresses
                .iter()
                .map(|a| (a.host.clone(), a.port))
                .collect::<Vec<_>>()
        ),
        format!("{hosts:?}"),
    );
    check(
        "TLS",
        addresses.iter().any(|a| a.tls).to_string(),
        redis.tls.is_some().to_string(),
    );
    // Credentials: an address's own first, then the settings (4.x's top level first; the
    // checker prints the winner).
    let config_user = json["username"].as_str().map(str::to_owned);
    let config_password = json["password"].as_bool().unwrap_or(false);
    let flags =
        |password: &Option<String>| password.as_ref().map(|p| (p.is_empty(), p.contains("${")));
    let json_flags = (
        json["passwordEmpty"].as_bool().unwrap_or(false),
        json["passwordUnresolvedPlaceholder"]
            .as_bool()
            .unwrap_or(false),
    );
    if let Some((master, s_user, s_pass)) = sentinel {
        check(
            "masterName",
            format!("{:?}", json["masterName"].as_str()),
            format!("{:?}", Some(master.as_str())),
        );
        check(
            "username",
            format!("{config_user:?}"),
            format!("{:?}", redis.username),
        );
        check(
            "password set",
            config_password.to_string(),
            redis.password.is_some().to_string(),
        );
        if config_password {
            check(
                "password (empty, placeholder)",
                format!("{:?}", Some(json_flags)),
                format!("{:?}", flags(&redis.password)),
            );
        }
        // Sentinels: `sentinelUsername` and `sentinelPassword` (else the data password)
        // when the data nodes have a password; a sentinel address's own credentials win.
        let a = &addresses[0];
        let expected_password = a.password || config_password;
        let expected_user = a.username.clone().or_else(|| {
            config_password
                .then(|| json["sentinelUsername"].as_str().map(str::to_owned))
                .flatten()
        });
        check(
            "sentinel password set",
            expected_password.to_string(),
            s_pass.is_some().to_string(),
        );
        if expected_password {
            check(
                "sentinel username",
                format!("{expected_user:?}"),
                format!("{s_user:?}"),
            );
        }
    } else {
        for a in addresses {
            let user = a.username.clone().or(config_user.clone());
            check(
                "username",
                format!("{user:?}"),
                format!("{:?}", redis.username),
            );
            check(
                "password set",
                (a.password || config_password).to_string(),
                redis.password.is_some().to_string(),
            );
            if !a.password && config_password {
                check(
                    "password (empty, placeholder)",
                    format!("{:?}", Some(json_flags)),
                    format!("{:?}", flags(&redis.password)),
                );
            }
        }
    }
    // A password never sits in a host name.
    for (host, _) in &hosts {
        check(
            "host without credentials",
            "true".into(),
            (!host.contains('@')).to_string(),
        );
    }
    check(
        "database",
        json["database"].as_i64().unwrap_or(0).to_string(),
        redis.database.unwrap_or(0).to_string(),
    );
    let ms = |d: Duration| d.as_millis().to_string();
    let settings = config.lock_settings();
    let mut number = |key: &str, crate_value: String| {
        if let Some(v) = json.get(key).filter(|v| !v.is_null()) {
            check(key, v.to_string(), crate_value);
        }
    };
    number("timeout", ms(settings.response_timeout));
    number("subscriptionTimeout", ms(settings.subscription_timeout));
    number("lockWatchdogTimeout", ms(config.watchdog_timeout()));
    number(
        "lockWatchdogBatchSize",
        config.renewal_batch_size().to_string(),
    );
    number("slavesSyncTimeout", ms(config.replicas_sync_timeout()));
    number("fairLockWaitTimeout", ms(config.fair_lock_wait_timeout()));
    number(
        "checkLockSyncedSlaves",
        config.check_lock_synced_replicas().to_string(),
    );
    // The codec `client.map(..)` / `client.set(..)` encode keys with: the file's class
    // (none: Redisson's default Kryo5Codec), as the crate writes its bytes.
    let codec_class = json["codec"]
        .as_str()
        .unwrap_or("org.redisson.codec.Kryo5Codec");
    let codec = redisson_lock::codec::JavaCodec::from_java_class(
        codec_class,
        redisson_lock::codec::JsonUuids::Unknown,
    );
    check(
        "codec",
        format!("{:?}", codec.map(|c| c.java_class())),
        format!("{:?}", Some(config.codec().java_class())),
    );
    // What the crate honours only at Redisson's default.
    let mapper = json["nameMapper"].as_str().unwrap_or("DefaultNameMapper");
    check(
        "name mapper",
        mapper.ends_with(".DefaultNameMapper").to_string(),
        config.name_mapper().is_none().to_string(),
    );
    let tls = &json["tls"];
    for store in ["sslTruststore", "sslKeystore"] {
        check(store, tls[store].to_string(), "null".into());
    }
    if let Some(mode) = tls["sslVerificationMode"].as_str() {
        check("sslVerificationMode", mode.into(), "STRICT".into());
    }
    if let Some(on) = tls["sslEnableEndpointIdentification"].as_bool() {
        check(
            "sslEnableEndpointIdentification",
            on.to_string(),
            "true".into(),
        );
    }
    diffs
}

/// The checker's value of a setting the crate says the versions read differently (it
/// prints whether a password is set, not the password).
fn shown(json: &Value, setting: &str) -> Option<String> {
    let key = leaf(setting);
    if key.ends_with("assword") {
        return None;
    }
    json.get(key).map(|v| v.to_string())
}

#[test]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
fn every_sample_file_reads_as_real_redisson_reads_it() {
    let started = Instant::now();
    let cases = cases();
    let unsupported_names = documented_unsupported();
    let lines = run_redisson(&cases);
    let java_time = started.elapsed();

    let mut failures = Vec::new();
    let mut loads = [0usize; 2];
    let mut unusable = [0usize; 2];
    let mut refuses = [0usize; 2];
    let mut crate_loads = 0;
    let mut crate_refuses_with_redisson = 0;
    let mut crate_unsupported: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (case, lines) in cases.iter().zip(&lines) {
        let label = format!("{} ({})", case.name, case.variant);
        let outcomes: Vec<(Version, Outcome)> = Version::ALL
            .iter()
            .zip(lines)
            .map(|(v, line)| (*v, outcome(line, *v)))
            .collect();
        for (i, (_, o)) in outcomes.iter().enumerate() {
            match o {
                Outcome::Refused(_) => refuses[i] += 1,
                Outcome::Unusable(_) => unusable[i] += 1,
                Outcome::Usable(..) => loads[i] += 1,
            }
        }
        let usable: Vec<(Version, &Value, &[JavaAddress])> = outcomes
            .iter()
            .filter_map(|(v, o)| match o {
                Outcome::Usable(json, a) => Some((*v, json, a.as_slice())),
                _ => None,
            })
            .collect();
        let redisson_said = || {
            outcomes
                .iter()
                .map(|(v, o)| match o {
                    Outcome::Refused(line) => format!("{v}: {line}"),
                    Outcome::Unusable(why) => format!("{v}: loads it, but {why}"),
                    Outcome::Usable(..) => format!("{v}: loads it"),
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let secrets: Vec<String> = case
            .env
            .iter()
            .filter(|(n, v)| n.contains("PASSWORD") && v.as_ref().is_some_and(|v| v.len() > 2))
            .filter_map(|(_, v)| v.clone())
            .collect();
        match read_with_crate(case) {
            Ok(config) => {
                crate_loads += 1;
                if usable.is_empty() {
                    failures.push(format!(
                        "{label}: the crate loads it; no Redisson version connects with it ({})",
                        redisson_said()
                    ));
                }
                for (version, json, addresses) in &usable {
                    for diff in compare(*version, json, addresses, &config) {
                        failures.push(format!("{label}: {diff}"));
                    }
                }
                let debug = format!("{config:?}");
                for secret in &secrets {
                    if debug.contains(secret.as_str()) {
                        failures.push(format!("{label}: Debug of the config shows a password"));
                    }
                }
            }
            Err(error) => {
                let message = error.to_string();
                for secret in &secrets {
                    if message.contains(secret.as_str()) {
                        failures.push(format!("{label}: the error shows a password: {message}"));
                    }
                }
                let Error::RedissonFile {
                    kind,
                    setting,
                    reason,
                } = &error
                else {
                    failures.push(format!("{label}: not a RedissonFile error: {error}"));
                    continue;
                };
                if usable.is_empty() {
                    crate_refuses_with_redisson += 1;
                    continue;
                }
                if *kind != RedissonFileError::Unsupported {
                    failures.push(format!(
                        "{label}: the crate refuses it ({kind:?}: {message}); {}",
                        redisson_said()
                    ));
                    continue;
                }
                if reason.starts_with("Redisson 3.x and 4.x read") {
                    // The versions disagree: both must load it, and where the checker
                    // shows the setting, show different values.
                    if usable.len() != 2 {
                        failures.push(format!(
                            "{label}: the crate says the versions read `{setting}` \
                             differently, but not both load it ({})",
                            redisson_said()
                        ));
                    } else if let (Some(a), Some(b)) =
                        (shown(usable[0].1, setting), shown(usable[1].1, setting))
                        && a == b
                    {
                        failures.push(format!(
                            "{label}: the crate says the versions read `{setting}` \
                                 differently; both print {a}"
                        ));
                    }
                    crate_unsupported
                        .entry(format!(
                            "{} (3.x and 4.x read it differently)",
                            leaf(setting)
                        ))
                        .or_default()
                        .push(label);
                } else if unsupported_names.iter().any(|n| n == leaf(setting)) {
                    crate_unsupported
                        .entry(leaf(setting).to_owned())
                        .or_default()
                        .push(label);
                } else {
                    failures.push(format!(
                        "{label}: refused as unsupported at `{setting}`, which {DOCS} does \
                         not list: {message}"
                    ));
                }
            }
        }
    }
    let summary = format!(
        "{} files, {} variants, {} Redisson runs in {:.1?} ({:.1?} in all)\n\
         Redisson 3.23.3: {} load and connect, {} load without an address it connects to, {} refuse\n\
         Redisson 4.7.0: {} load and connect, {} load without an address it connects to, {} refuse\n\
         the crate: {} load; {} refused, as no Redisson version would connect with them; \
         {} refused as unsupported: {:#?}",
        cases
            .iter()
            .map(|c| &c.name)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        cases.len(),
        cases.len() * 2,
        java_time,
        started.elapsed(),
        loads[0],
        unusable[0],
        refuses[0],
        loads[1],
        unusable[1],
        refuses[1],
        crate_loads,
        crate_refuses_with_redisson,
        crate_unsupported.values().map(Vec::len).sum::<usize>(),
        crate_unsupported,
    );
    println!("{summary}");
    assert!(
        failures.is_empty(),
        "{} disagreements with real Redisson:\n{}\n\n{summary}",
        failures.len(),
        failures.join("\n")
    );
}
