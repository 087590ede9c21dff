//! The walk over the file as one Redisson version reads it: every key checked against
//! that version's settings ([`schema`](super::schema)), every value read as its Java
//! type ([`scalar`](super::scalar)), then what Redisson would connect with resolved
//! (which section it uses, the addresses' credentials, its defaults).
//!
//! The outcome of one version is a [`Refusal`] (that version refuses the file) or a
//! [`Reading`], which may carry a problem: something Redisson loads but `Redisson.create`
//! refuses (no address), or that this crate cannot honour. The parent module combines
//! the two.
//!
//! The walk itself is here; what it does with the settings the crate honours is in
//! [`honoured`], and what a version connects with in [`resolve`].

mod honoured;
mod resolve;

use std::collections::HashMap;
use std::time::Duration;

use super::file::RedissonTopology;
use super::scalar::{Lens, Redisson, View, Why};
use super::schema::{self, Scope, Ty, Use};
use super::secret_values::Secrets;
use super::source::file_error;
use super::tree::{Kind, Node};
use crate::config::defaults::PublishMode;
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
    pub(super) connect_timeout: Duration,
    pub(super) subscription_timeout: Option<Duration>,
    pub(super) watchdog_timeout: Duration,
    pub(super) renewal_batch_size: Option<usize>,
    pub(super) check_lock_synced_replicas: bool,
    pub(super) replicas_sync_timeout: Duration,
    pub(super) fair_lock_wait_timeout: Option<Duration>,
    pub(super) publish_mode: Option<PublishMode>,
    /// The `codec` class the file names (`None`: none, Redisson's default `Kryo5Codec`).
    pub(super) codec: Option<String>,
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
    connect_timeout: Option<(i64, String)>,
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
    /// The `codec` class, with where it was written.
    codec: Option<(String, String)>,
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
            codec: None,
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
                ));
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
                        ));
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
            connect_timeout: None,
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
}
