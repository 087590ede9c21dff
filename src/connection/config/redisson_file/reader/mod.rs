//! The walk over the file as one Redisson version reads it: every key checked against
//! that version's settings ([`schema`](super::schema)), every value read as its Java
//! type ([`scalar`](super::scalar)), then what Redisson would connect with resolved
//! (which section it uses, the addresses' credentials, its defaults).
//!
//! The outcome of one version is a [`Refusal`] (that version refuses the file) or a
//! [`Reading`], which may carry a problem: something Redisson loads but `Redisson.create`
//! refuses (no address), or that this crate cannot honour. `mod.rs` combines the two.

use std::collections::HashMap;
use std::time::Duration;

use super::address::{self, AddressError};
use super::scalar::{Lens, Redisson, View, Why};
use super::schema::{self, Scope, Setting, Ty, Use};
use super::tree::{Kind, Node};
use super::{file_error, RedissonTopology, Secrets};
use crate::connection::config::{PublishMode, MAX_LEASE};
use crate::error::{Error, RedissonFileError};

/// A version refuses the file.
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) error: Error,
    /// Refused for a key the other version knows there (a layout difference, not a typo),
    /// or for a form only the other version reads (JSON, several documents).
    pub(super) layout: bool,
}

/// A version loads the file.
#[derive(Debug)]
pub(super) struct Reading {
    pub(super) version: Redisson,
    pub(super) ignored: Vec<String>,
    /// What `Redisson.create` would refuse, or what this crate cannot honour.
    pub(super) problem: Option<Error>,
    /// What Redisson would connect with (`None` with a problem).
    pub(super) resolved: Option<Resolved>,
}

/// What a version resolves from the file, with Redisson's defaults, in the crate's terms.
/// `None` in an optional field: that version has no such setting.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Resolved {
    pub(super) topology: RedissonTopology,
    pub(super) nodes: Vec<(String, u16)>,
    pub(super) tls: bool,
    pub(super) master_name: Option<String>,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
    /// The sentinels' own credentials, when Redisson sends them any.
    pub(super) sentinel: Option<(Option<String>, String)>,
    pub(super) database: u8,
    pub(super) response_timeout: Duration,
    pub(super) subscription_timeout: Option<Duration>,
    pub(super) watchdog_timeout: Duration,
    pub(super) renewal_batch_size: Option<usize>,
    pub(super) check_lock_synced_replicas: bool,
    pub(super) replicas_sync_timeout: Duration,
    pub(super) fair_lock_wait_timeout: Option<Duration>,
    pub(super) publish_mode: Option<PublishMode>,
    /// Where each resolved setting was written (for messages about it).
    pub(super) paths: HashMap<&'static str, String>,
}

/// Settings that live both at 4.x's top level and in a section (3.x's layout).
#[derive(Default, Debug)]
struct Shared {
    username: Option<String>,
    password: Option<String>,
}

/// A `*ServersConfig` section as read.
#[derive(Debug)]
struct Section {
    scope: Scope,
    shared: Shared,
    /// Each address with its path.
    addresses: Vec<(String, String)>,
    timeout: Option<(i64, String)>,
    subscription_timeout: Option<(i64, String)>,
    database: Option<(i64, String)>,
    master_name: Option<String>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    publish_mode: Option<PublishMode>,
    /// Problems found in this section (they count only if Redisson uses it).
    problems: Vec<(usize, Error)>,
    ignored: Vec<String>,
}

/// The walk of one version.
pub(super) struct Walk<'s> {
    lens: Lens,
    secrets: &'s Secrets,
    ignored: Vec<String>,
    problems: Vec<(usize, Error)>,
    /// Problems are kept in file order across the top level and the sections.
    order: usize,
    top: Shared,
    watchdog_timeout: Option<(i64, String)>,
    renewal_batch_size: Option<(i64, String)>,
    check_lock_synced_replicas: Option<bool>,
    replicas_sync_timeout: Option<(i64, String)>,
    fair_lock_wait_timeout: Option<(i64, String)>,
    sections: Vec<Section>,
    /// 4.x builds an anchored node once: the Java type of its first use.
    anchors: HashMap<usize, Ty>,
}

type Step<T> = Result<T, Refusal>;

impl<'s> Walk<'s> {
    pub(super) fn new(version: Redisson, json: bool, secrets: &'s Secrets) -> Walk<'s> {
        Walk {
            lens: Lens { version, json },
            secrets,
            ignored: Vec::new(),
            problems: Vec::new(),
            order: 0,
            top: Shared::default(),
            watchdog_timeout: None,
            renewal_batch_size: None,
            check_lock_synced_replicas: None,
            replicas_sync_timeout: None,
            fair_lock_wait_timeout: None,
            sections: Vec::new(),
            anchors: HashMap::new(),
        }
    }

    fn version(&self) -> Redisson {
        self.lens.version
    }

    /// `version refuses the file at path`.
    fn refuse(&self, kind: RedissonFileError, path: &str, why: impl AsRef<str>) -> Refusal {
        Refusal {
            error: file_error(kind, path, self.secrets.mask(why.as_ref())),
            layout: false,
        }
    }

    fn bad(&self, path: &str, why: Why) -> Refusal {
        self.refuse(RedissonFileError::BadValue, path, why)
    }

    fn problem(&mut self, section: Option<usize>, kind: RedissonFileError, path: &str, why: &str) {
        let error = file_error(kind, path, self.secrets.mask(why));
        self.order += 1;
        match section {
            Some(i) => self.sections[i].problems.push((self.order, error)),
            None => self.problems.push((self.order, error)),
        }
    }

    /// Reads the file's root.
    pub(super) fn read(mut self, root: &Node) -> Step<Reading> {
        let entries = match self.lens.view(root) {
            View::Map(..) => self.entries(root, "<file>")?,
            _ => {
                return Err(self.refuse(
                    RedissonFileError::Syntax,
                    "<file>",
                    "the top of the file is not a mapping of settings",
                ))
            }
        };
        for (key, value) in entries {
            self.setting(Scope::Top, None, &key, key.clone(), value)?;
        }
        Ok(self.finish())
    }

    /// A mapping's entries as this version sees them: keys as text; for 4.x, YAML merge
    /// keys (`<<: *defaults`) applied (the mapping's own keys win, then the first merged).
    fn entries<'n>(&self, node: &'n Node, path: &str) -> Step<Vec<(String, &'n Node)>> {
        let View::Map(raw, _) = self.lens.view(node) else {
            return Err(self.bad(path, format!("{} is not a mapping", node.form())));
        };
        let mut own = Vec::new();
        let mut merged = Vec::new();
        for (key, value) in raw {
            let is_merge = self.version() == Redisson::V4
                && matches!(&key.kind, Kind::Scalar { text, plain: true, tag: None } if text == "<<");
            if is_merge {
                let sources: Vec<&Node> = match self.lens.view(value) {
                    View::Map(..) => vec![value],
                    View::Seq(items) => items.iter().collect(),
                    _ => {
                        return Err(self.bad(
                            path,
                            "a merge key (`<<`) takes a mapping or a list of mappings".into(),
                        ))
                    }
                };
                for source in sources {
                    for (k, v) in self.entries(source, path)? {
                        merged.push((k, v));
                    }
                }
                continue;
            }
            let key = self
                .lens
                .key(key)
                .map_err(|why| self.refuse(RedissonFileError::Syntax, path, why))?;
            own.push((key.to_owned(), value));
        }
        if merged.is_empty() {
            return Ok(own);
        }
        let mut result: Vec<(String, &Node)> = Vec::new();
        for (k, v) in merged {
            if !own.iter().any(|(o, _)| *o == k) && !result.iter().any(|(r, _)| *r == k) {
                result.push((k, v));
            }
        }
        result.extend(own);
        Ok(result)
    }

    /// One key of `scope` (`section`: the index of the section being read).
    fn setting(
        &mut self,
        scope: Scope,
        section: Option<usize>,
        key: &str,
        path: String,
        value: &Node,
    ) -> Step<()> {
        let version = self.version();
        let Some((ty, use_)) = schema::spec(scope, key, version) else {
            return Err(self.unknown(scope, key, &path));
        };
        self.check_anchor(value, ty, &path)?;
        match use_ {
            Use::Ignored => {
                self.check(value, ty, &path)?;
                match section {
                    Some(i) => self.sections[i].ignored.push(path),
                    None => self.ignored.push(path),
                }
            }
            Use::Honoured(setting) => self.honoured(section, setting, ty, &path, value)?,
        }
        Ok(())
    }

    fn unknown(&self, scope: Scope, key: &str, path: &str) -> Refusal {
        let version = self.version();
        let other = version.other();
        if key == "<<" {
            return Refusal {
                error: file_error(
                    RedissonFileError::Unknown,
                    path,
                    format!(
                        "a YAML merge key, which {} does not read (it takes `<<` for a setting \
                         name); {} does",
                        version.name(),
                        other.name()
                    ),
                ),
                layout: true,
            };
        }
        let layout = schema::spec(scope, key, other).is_some();
        let reason = if layout {
            format!(
                "a {} setting; {} does not know it here",
                other.name(),
                version.name()
            )
        } else {
            format!(
                "not a setting {} knows here (names are case-sensitive)",
                version.name()
            )
        };
        Refusal {
            error: file_error(RedissonFileError::Unknown, path, reason),
            layout,
        }
    }

    /// 4.x builds an anchored node once and gives every alias the same Java object: a
    /// second use that needs another type is refused (a `long` may take an `int`).
    fn check_anchor(&mut self, value: &Node, ty: Ty, path: &str) -> Step<()> {
        if self.version() != Redisson::V4 {
            return Ok(());
        }
        let anchor = match &value.kind {
            Kind::Alias { target, .. } => target.anchor,
            _ => value.anchor,
        };
        if anchor == 0 {
            return Ok(());
        }
        match self.anchors.get(&anchor) {
            None => {
                self.anchors.insert(anchor, ty);
                Ok(())
            }
            Some(first) if *first == ty || (*first == Ty::Int && ty == Ty::Long) => Ok(()),
            Some(first) => Err(self.bad(
                path,
                format!(
                    "this alias is the object Redisson 4.x built for its anchor's first use \
                     (a {first:?} setting), not a {ty:?}"
                ),
            )),
        }
    }

    /// Checks that the version reads `value` as `ty` (an ignored setting still has to be
    /// one Redisson reads).
    fn check(&mut self, value: &Node, ty: Ty, path: &str) -> Step<()> {
        let lens = self.lens;
        let result = match ty {
            Ty::Str => lens.string(value).map(drop),
            Ty::Int => lens.integer(value, 32).map(drop),
            Ty::Long => lens.integer(value, 64).map(drop),
            Ty::Bool => lens.boolean(value).map(drop),
            Ty::Enum(names) => lens.enumeration(value, names).map(drop),
            Ty::EnumSet(names) => match lens.view(value) {
                View::Seq(items) => items
                    .iter()
                    .try_for_each(|item| lens.enumeration(item, names).map(drop)),
                _ if lens.is_null(value) => Ok(()),
                _ => Err(format!("{} is not a list", value.form())),
            },
            Ty::Class => lens.class(value).map(drop),
            Ty::StrList => lens.string_list(value).map(drop),
            Ty::StrMap => lens.string_map(value).map(drop),
            Ty::Any => Ok(()),
            Ty::Section(scope) => return self.section(scope, path, value),
        };
        result.map_err(|why| self.bad(path, why))
    }

    fn string(&self, value: &Node, path: &str) -> Step<Option<String>> {
        self.lens.string(value).map_err(|why| self.bad(path, why))
    }

    fn integer(&self, value: &Node, ty: Ty, path: &str) -> Step<i64> {
        let bits = if ty == Ty::Long { 64 } else { 32 };
        self.lens
            .integer(value, bits)
            .map_err(|why| self.bad(path, why))
    }

    fn honoured(
        &mut self,
        section: Option<usize>,
        setting: Setting,
        ty: Ty,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        let path_owned = path.to_owned();
        match setting {
            Setting::Section => self.check(value, ty, path)?,
            Setting::WatchdogTimeout => {
                self.watchdog_timeout = Some((self.integer(value, ty, path)?, path_owned))
            }
            Setting::BatchSize => {
                self.renewal_batch_size = Some((self.integer(value, ty, path)?, path_owned))
            }
            Setting::CheckSynced => {
                self.check_lock_synced_replicas = Some(
                    self.lens
                        .boolean(value)
                        .map_err(|why| self.bad(path, why))?,
                )
            }
            Setting::SlavesSyncTimeout => {
                self.replicas_sync_timeout = Some((self.integer(value, ty, path)?, path_owned))
            }
            Setting::FairLockWaitTimeout => {
                self.fair_lock_wait_timeout = Some((self.integer(value, ty, path)?, path_owned))
            }
            Setting::Username | Setting::Password => {
                let text = self.string(value, path)?;
                let shared = match section {
                    Some(i) => &mut self.sections[i].shared,
                    None => &mut self.top,
                };
                if setting == Setting::Username {
                    shared.username = text;
                } else {
                    shared.password = text;
                }
            }
            Setting::NameMapper
            | Setting::CredentialsResolver
            | Setting::CommandMapper
            | Setting::NatMapper => {
                let class = self.lens.class(value).map_err(|why| self.bad(path, why))?;
                if let Some(class) = class {
                    self.class_setting(section, setting, path, &class)?;
                }
            }
            Setting::NatMap => {
                let map = self
                    .lens
                    .string_map(value)
                    .map_err(|why| self.bad(path, why))?;
                if map.is_some_and(|m| !m.is_empty()) {
                    self.problem(
                        section,
                        RedissonFileError::Unsupported,
                        path,
                        "a NAT map translates the addresses the servers announce, which fred \
                         (this crate's client) cannot do; reach the nodes at the addresses they \
                         announce",
                    );
                }
            }
            Setting::SslStore => {
                if self.string(value, path)?.is_some() {
                    self.problem(
                        section,
                        RedissonFileError::Unsupported,
                        path,
                        "a Java key store (JKS/PKCS#12) cannot be read; give the CA or the \
                         client certificate as PEM files with ConfigBuilder::tls(TlsOptions::new()\
                         .ca_file(..).client_cert_files(..))",
                    );
                }
            }
            Setting::SslVerificationMode => {
                let mode = self
                    .lens
                    .enumeration(value, schema::SSL_VERIFICATION_MODES)
                    .map_err(|why| self.bad(path, why))?;
                if let Some(mode) = mode.filter(|m| *m != "STRICT") {
                    self.problem(
                        section,
                        RedissonFileError::Unsupported,
                        path,
                        &format!(
                            "`{mode}`: this crate always verifies the certificate chain and the \
                             host name (STRICT)"
                        ),
                    );
                }
            }
            Setting::EndpointIdentification => {
                if !self
                    .lens
                    .boolean(value)
                    .map_err(|why| self.bad(path, why))?
                {
                    self.problem(
                        section,
                        RedissonFileError::Unsupported,
                        path,
                        "this crate always checks the server's host name against its certificate",
                    );
                }
            }
            Setting::Timeout | Setting::SubscriptionTimeout | Setting::Database => {
                let n = self.integer(value, ty, path)?;
                if let Some(i) = section {
                    let s = &mut self.sections[i];
                    let slot = match setting {
                        Setting::Timeout => &mut s.timeout,
                        Setting::SubscriptionTimeout => &mut s.subscription_timeout,
                        _ => &mut s.database,
                    };
                    *slot = Some((n, path_owned));
                }
            }
            Setting::Address => {
                let text = self.string(value, path)?;
                if let Some(i) = section {
                    self.sections[i]
                        .addresses
                        .retain(|(p, _)| !p.starts_with(path));
                    if let Some(text) = text {
                        self.sections[i].addresses.push((path_owned, text));
                    }
                }
            }
            Setting::Addresses => {
                let list = self
                    .lens
                    .string_list(value)
                    .map_err(|why| self.bad(path, why))?;
                if let Some(i) = section {
                    let s = &mut self.sections[i];
                    s.addresses.retain(|(p, _)| !p.starts_with(path));
                    for (n, text) in list.unwrap_or_default().into_iter().enumerate() {
                        s.addresses.push((format!("{path}[{n}]"), text));
                    }
                }
            }
            Setting::MasterName | Setting::SentinelUsername | Setting::SentinelPassword => {
                let text = self.string(value, path)?;
                if let Some(i) = section {
                    let s = &mut self.sections[i];
                    match setting {
                        Setting::MasterName => s.master_name = text,
                        Setting::SentinelUsername => s.sentinel_username = text,
                        _ => s.sentinel_password = text,
                    }
                }
            }
            Setting::ShardedSubscriptionMode => {
                let mode = self
                    .lens
                    .enumeration(value, schema::SHARDED_SUBSCRIPTION_MODES)
                    .map_err(|why| self.bad(path, why))?;
                if let Some(i) = section {
                    self.sections[i].publish_mode = mode.map(|m| match m {
                        "ON" => PublishMode::Sharded,
                        "OFF" => PublishMode::Publish,
                        _ => PublishMode::Auto,
                    });
                }
            }
        }
        Ok(())
    }

    /// A class-valued setting the crate honours only with Redisson's own default class.
    fn class_setting(
        &mut self,
        section: Option<usize>,
        setting: Setting,
        path: &str,
        class: &str,
    ) -> Step<()> {
        let version = self.version();
        let (v3, v4): (&[&str], &[&str]) = match setting {
            Setting::NameMapper => (
                &["org.redisson.api.DefaultNameMapper"],
                &["org.redisson.config.DefaultNameMapper"],
            ),
            Setting::NatMapper => (
                &["org.redisson.api.DefaultNatMapper"],
                &["org.redisson.config.DefaultNatMapper"],
            ),
            Setting::CredentialsResolver => (
                &["org.redisson.client.DefaultCredentialsResolver"],
                &["org.redisson.client.DefaultCredentialsResolver"],
            ),
            _ => (
                &["org.redisson.config.DefaultCommandMapper"],
                &["org.redisson.config.DefaultCommandMapper"],
            ),
        };
        let (mine, theirs) = match version {
            Redisson::V3 => (v3, v4),
            Redisson::V4 => (v4, v3),
        };
        if mine.contains(&class) {
            return Ok(());
        }
        if theirs.contains(&class) {
            // A class that moved between versions: not found by this one.
            return Err(Refusal {
                error: file_error(
                    RedissonFileError::BadValue,
                    path,
                    format!(
                        "`{class}` is {}'s class; {} has no such class",
                        version.other().name(),
                        version.name()
                    ),
                ),
                layout: true,
            });
        }
        let why = match setting {
            Setting::NameMapper => format!(
                "the name mapper class `{class}` is Java code this crate cannot run; give the \
                 same mapping in code with ConfigBuilder::name_mapper"
            ),
            Setting::NatMapper => "a NAT mapper translates the addresses the servers announce, \
                 which fred (this crate's client) cannot do; reach the nodes at the addresses \
                 they announce"
                .to_owned(),
            Setting::CredentialsResolver => format!(
                "the credentials resolver `{class}` is Java code; give the credentials with \
                 ConfigBuilder::username / password"
            ),
            _ => "a command mapper renames the commands the lock scripts are sent with; this \
                 crate sends Redis's own names"
                .to_owned(),
        };
        self.problem(section, RedissonFileError::Unsupported, path, &why);
        Ok(())
    }

    /// A `*ServersConfig` section.
    fn section(&mut self, scope: Scope, path: &str, value: &Node) -> Step<()> {
        // Null: as if absent (`Config` keeps no such section).
        if self.lens.is_null(value) {
            self.sections.retain(|s| s.scope != scope);
            return Ok(());
        }
        if !matches!(self.lens.view(value), View::Map(..)) {
            return Err(self.bad(
                path,
                format!("{} is not a mapping of settings", value.form()),
            ));
        }
        // A section given twice: the last one is the one Redisson keeps.
        self.sections.retain(|s| s.scope != scope);
        self.sections.push(Section {
            scope,
            shared: Shared::default(),
            addresses: Vec::new(),
            timeout: None,
            subscription_timeout: None,
            database: None,
            master_name: None,
            sentinel_username: None,
            sentinel_password: None,
            publish_mode: None,
            problems: Vec::new(),
            ignored: Vec::new(),
        });
        let index = self.sections.len() - 1;
        for (key, node) in self.entries(value, path)? {
            let child = format!("{path}.{key}");
            self.setting(scope, Some(index), &key, child, node)?;
        }
        Ok(())
    }

    /// What Redisson would connect with, or the problem.
    fn finish(mut self) -> Reading {
        let version = self.version();
        let mut sections = std::mem::take(&mut self.sections);
        sections.sort_by_key(|s| s.scope.precedence());
        let mut ignored = std::mem::take(&mut self.ignored);
        let mut chosen = None;
        for section in sections {
            if chosen.is_none() {
                chosen = Some(section);
            } else {
                ignored.push(section.scope.key().to_owned());
            }
        }
        let mut problems = std::mem::take(&mut self.problems);
        let result = match chosen {
            None => Err(file_error(
                RedissonFileError::NoServers,
                "<file>",
                "no singleServerConfig, clusterServersConfig or sentinelServersConfig \
                 (Redisson.create refuses such a file too)",
            )),
            Some(mut section) => {
                ignored.append(&mut section.ignored);
                problems.append(&mut section.problems);
                problems.sort_by_key(|(order, _)| *order);
                match problems.into_iter().next() {
                    Some((_, problem)) => Err(problem),
                    None => self.resolve(section),
                }
            }
        };
        match result {
            Ok(resolved) => Reading {
                version,
                ignored,
                problem: None,
                resolved: Some(resolved),
            },
            Err(problem) => Reading {
                version,
                ignored,
                problem: Some(problem),
                resolved: None,
            },
        }
    }

    fn unsupported(&self, path: &str, why: &str) -> Error {
        file_error(RedissonFileError::Unsupported, path, self.secrets.mask(why))
    }

    fn resolve(&self, section: Section) -> Result<Resolved, Error> {
        let version = self.version();
        let name = section.scope.key();
        let topology = match section.scope {
            Scope::Single => RedissonTopology::SingleServer,
            Scope::Cluster => RedissonTopology::Cluster,
            Scope::Sentinel => RedissonTopology::Sentinel,
            _ => {
                return Err(self.unsupported(
                    name,
                    "this topology finds its master by polling each node's role, which fred \
                     (this crate's client) cannot do; point the crate at the master with \
                     `singleServerConfig`, or use Sentinel or Cluster",
                ))
            }
        };
        if section.addresses.is_empty() {
            return Err(file_error(
                RedissonFileError::NoServers,
                name,
                "no server address (Redisson.create refuses such a file too)",
            ));
        }
        let mut paths: HashMap<&'static str, String> = HashMap::new();
        let mut parsed = Vec::new();
        for (path, text) in &section.addresses {
            match address::parse(text, version) {
                Ok(a) => parsed.push((path, a)),
                Err(AddressError::Refused(why)) => {
                    return Err(file_error(
                        RedissonFileError::BadValue,
                        path,
                        self.secrets.mask(&why),
                    ))
                }
                Err(AddressError::Unsupported(why)) => return Err(self.unsupported(path, &why)),
            }
        }
        paths.insert("address", parsed[0].0.clone());
        let tls = parsed[0].1.tls;
        if let Some((path, _)) = parsed.iter().find(|(_, a)| a.tls != tls) {
            return Err(self.unsupported(
                path,
                "mixes TLS (`rediss://`) and plain (`redis://`) addresses; this crate uses one \
                 for every node",
            ));
        }
        // Credentials: 4.x's top level wins over the section; an address's own win over
        // both (Redisson's connection handler takes the address's first).
        let (username, password) = match version {
            Redisson::V3 => (
                section.shared.username.clone(),
                section.shared.password.clone(),
            ),
            Redisson::V4 => (
                self.top
                    .username
                    .clone()
                    .or(section.shared.username.clone()),
                self.top
                    .password
                    .clone()
                    .or(section.shared.password.clone()),
            ),
        };
        let per_address = |base_user: &Option<String>, base_pass: &Option<String>| {
            parsed
                .iter()
                .map(|(path, a)| {
                    (
                        *path,
                        a.username.clone().or(base_user.clone()),
                        a.password.clone().or(base_pass.clone()),
                    )
                })
                .collect::<Vec<_>>()
        };
        let one_set = |sets: Vec<(&String, Option<String>, Option<String>)>| {
            let (_, user, pass) = sets[0].clone();
            match sets.iter().find(|(_, u, p)| *u != user || *p != pass) {
                Some((path, ..)) => Err(self.unsupported(
                    path,
                    "the addresses carry different credentials; this crate uses one set for \
                     every node (put them in `username` / `password`)",
                )),
                None => Ok((user, pass)),
            }
        };
        let (username, password, sentinel) = if topology == RedissonTopology::Sentinel {
            // Redisson sends the sentinels credentials only when the data nodes have a
            // password: `sentinelUsername` (else none) and `sentinelPassword` (else the
            // data password); a sentinel address's own credentials win.
            let (base_user, base_pass) = match &password {
                Some(data) => (
                    section.sentinel_username.clone(),
                    Some(section.sentinel_password.clone().unwrap_or(data.clone())),
                ),
                None => (None, None),
            };
            let (s_user, s_pass) = one_set(per_address(&base_user, &base_pass))?;
            (username, password, s_pass.map(|p| (s_user, p)))
        } else {
            let (user, pass) = one_set(per_address(&username, &password))?;
            (user, pass, None)
        };
        let master_name = match (topology, &section.master_name) {
            (RedissonTopology::Sentinel, None) => {
                return Err(file_error(
                    RedissonFileError::BadValue,
                    format!("{name}.masterName"),
                    "a Sentinel configuration needs the master's name (Redisson.create \
                     refuses it without one too)",
                ))
            }
            (RedissonTopology::Sentinel, Some(m)) => Some(m.clone()),
            _ => None,
        };
        let database = match &section.database {
            None => 0,
            Some((db, path)) => {
                paths.insert("database", path.clone());
                if topology == RedissonTopology::Cluster && *db != 0 {
                    return Err(self.unsupported(
                        path,
                        "a database other than 0 in a cluster (Valkey 9); this crate's client \
                         reaches database 0 of a cluster",
                    ));
                }
                u8::try_from(*db).map_err(|_| {
                    self.unsupported(path, &format!("database {db} is out of range (0 to 255)"))
                })?
            }
        };
        let millis = |value: &Option<(i64, String)>,
                      key: &'static str,
                      default: i64,
                      min: i64,
                      paths: &mut HashMap<&'static str, String>|
         -> Result<Duration, Error> {
            let (ms, path) = match value {
                Some((ms, path)) => {
                    paths.insert(key, path.clone());
                    (*ms, path.as_str())
                }
                None => (default, key),
            };
            let max = i64::try_from(MAX_LEASE.as_millis()).unwrap_or(i64::MAX);
            if ms < min || ms > max {
                return Err(self.unsupported(
                    path,
                    &format!("{ms} ms is outside what this crate takes ({min} ms and up)"),
                ));
            }
            Ok(Duration::from_millis(ms.unsigned_abs()))
        };
        let v4 = version == Redisson::V4;
        let response_timeout = millis(&section.timeout, "timeout", 3_000, 1, &mut paths)?;
        let subscription_timeout = if v4 {
            Some(millis(
                &section.subscription_timeout,
                "subscriptionTimeout",
                7_500,
                1,
                &mut paths,
            )?)
        } else {
            None
        };
        let watchdog_timeout = millis(
            &self.watchdog_timeout,
            "lockWatchdogTimeout",
            30_000,
            3,
            &mut paths,
        )?;
        let replicas_sync_timeout = millis(
            &self.replicas_sync_timeout,
            "slavesSyncTimeout",
            1_000,
            1,
            &mut paths,
        )?;
        let fair_lock_wait_timeout = if v4 {
            Some(millis(
                &self.fair_lock_wait_timeout,
                "fairLockWaitTimeout",
                300_000,
                1,
                &mut paths,
            )?)
        } else {
            None
        };
        let renewal_batch_size = match (&self.renewal_batch_size, v4) {
            (_, false) => None,
            (None, true) => Some(100),
            (Some((n, path)), true) => {
                paths.insert("lockWatchdogBatchSize", path.clone());
                Some(
                    usize::try_from(*n)
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| {
                            self.unsupported(path, &format!("a batch of {n} locks: at least 1"))
                        })?,
                )
            }
        };
        let publish_mode = (v4 && topology == RedissonTopology::Cluster)
            .then(|| section.publish_mode.unwrap_or(PublishMode::Auto));
        Ok(Resolved {
            topology,
            nodes: parsed
                .iter()
                .map(|(_, a)| (a.host.clone(), a.port))
                .collect(),
            tls,
            master_name,
            username,
            password,
            sentinel,
            database,
            response_timeout,
            subscription_timeout,
            watchdog_timeout,
            renewal_batch_size,
            check_lock_synced_replicas: self.check_lock_synced_replicas.unwrap_or(true),
            replicas_sync_timeout,
            fair_lock_wait_timeout,
            publish_mode,
            paths,
        })
    }
}
