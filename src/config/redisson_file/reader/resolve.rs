//! What a version would connect with, from the section it uses ([`Walk::resolve`]): the
//! topology, the addresses and their credentials, the database, and the lock settings
//! with Redisson's defaults, each checked against what the crate can take.

use std::collections::HashMap;
use std::time::Duration;

use super::super::address::{self, Address, AddressError};
use super::super::file::RedissonTopology;
use super::super::scalar::Redisson;
use super::super::schema::Scope;
use super::super::source::file_error;
use super::{Resolved, Section, Walk};
use crate::config::defaults::{MAX_LEASE, PublishMode};
use crate::error::{Error, RedissonFileError};

/// A duration setting in milliseconds: its key (where [`Resolved::paths`] keeps where it
/// was written), Redisson's default, and the least the crate takes.
struct Millis {
    key: &'static str,
    default: i64,
    min: i64,
}

const TIMEOUT: Millis = Millis {
    key: "timeout",
    default: 3_000,
    min: 1,
};
const CONNECT_TIMEOUT: Millis = Millis {
    key: "connectTimeout",
    default: 10_000,
    min: 1,
};
const SUBSCRIPTION_TIMEOUT: Millis = Millis {
    key: "subscriptionTimeout",
    default: 7_500,
    min: 1,
};
const WATCHDOG_TIMEOUT: Millis = Millis {
    key: "lockWatchdogTimeout",
    default: 30_000,
    min: 3,
};
const SLAVES_SYNC_TIMEOUT: Millis = Millis {
    key: "slavesSyncTimeout",
    default: 1_000,
    min: 1,
};
const FAIR_LOCK_WAIT_TIMEOUT: Millis = Millis {
    key: "fairLockWaitTimeout",
    default: 300_000,
    min: 1,
};

/// Redisson's `lockWatchdogBatchSize` default (4.x).
const BATCH_SIZE: usize = 100;

/// A parsed address of a section, with where it was written.
type Parsed<'s> = (&'s String, Address);

/// The credentials a version connects with.
struct Credentials {
    username: Option<String>,
    password: Option<String>,
    /// The sentinels' own, when Redisson sends them any.
    sentinel: Option<(Option<String>, String)>,
}

impl Walk<'_> {
    /// What Redisson would connect with from `section`, or why the crate cannot.
    pub(super) fn resolve(&self, section: Section) -> Result<Resolved, Error> {
        let v4 = self.version() == Redisson::V4;
        let topology = self.topology(section.scope)?;
        if section.addresses.is_empty() {
            return Err(file_error(
                RedissonFileError::NoServers,
                section.scope.key(),
                "no server address (Redisson.create refuses such a file too)",
            ));
        }
        let mut paths: HashMap<&'static str, String> = HashMap::new();
        let (parsed, tls) = self.parse_addresses(&section.addresses)?;
        paths.insert("address", parsed[0].0.clone());
        let credentials = self.credentials(&section, topology, &parsed)?;
        let master_name = master_name(topology, &section)?;
        let database = self.database(topology, &section, &mut paths)?;
        let response_timeout = self.millis(&section.timeout, &TIMEOUT, &mut paths)?;
        let connect_timeout =
            self.millis(&section.connect_timeout, &CONNECT_TIMEOUT, &mut paths)?;
        let subscription_timeout = v4
            .then(|| {
                self.millis(
                    &section.subscription_timeout,
                    &SUBSCRIPTION_TIMEOUT,
                    &mut paths,
                )
            })
            .transpose()?;
        let watchdog_timeout =
            self.millis(&self.watchdog_timeout, &WATCHDOG_TIMEOUT, &mut paths)?;
        let replicas_sync_timeout = self.millis(
            &self.replicas_sync_timeout,
            &SLAVES_SYNC_TIMEOUT,
            &mut paths,
        )?;
        let fair_lock_wait_timeout = v4
            .then(|| {
                self.millis(
                    &self.fair_lock_wait_timeout,
                    &FAIR_LOCK_WAIT_TIMEOUT,
                    &mut paths,
                )
            })
            .transpose()?;
        let renewal_batch_size = v4
            .then(|| self.renewal_batch_size(&mut paths))
            .transpose()?;
        let publish_mode = (v4 && topology == RedissonTopology::Cluster)
            .then(|| section.publish_mode.unwrap_or(PublishMode::Auto));
        let codec = self.codec.as_ref().map(|(class, path)| {
            paths.insert("codec", path.clone());
            class.clone()
        });
        Ok(Resolved {
            topology,
            nodes: parsed
                .iter()
                .map(|(_, a)| (a.host.clone(), a.port))
                .collect(),
            tls,
            master_name,
            username: credentials.username,
            password: credentials.password,
            sentinel: credentials.sentinel,
            database,
            response_timeout,
            connect_timeout,
            subscription_timeout,
            watchdog_timeout,
            renewal_batch_size,
            check_lock_synced_replicas: self.check_lock_synced_replicas.unwrap_or(true),
            replicas_sync_timeout,
            fair_lock_wait_timeout,
            publish_mode,
            codec,
            paths,
        })
    }

    fn unsupported(&self, path: &str, why: &str) -> Error {
        file_error(RedissonFileError::Unsupported, path, self.secrets.mask(why))
    }

    /// The topology of the section Redisson uses, when the crate can connect to it.
    fn topology(&self, scope: Scope) -> Result<RedissonTopology, Error> {
        match scope {
            Scope::Single => Ok(RedissonTopology::SingleServer),
            Scope::Cluster => Ok(RedissonTopology::Cluster),
            Scope::Sentinel => Ok(RedissonTopology::Sentinel),
            _ => Err(self.unsupported(
                scope.key(),
                "this topology finds its master by polling each node's role, which fred \
                 (this crate's client) cannot do; point the crate at the master with \
                 `singleServerConfig`, or use Sentinel or Cluster",
            )),
        }
    }

    /// The section's addresses as this version parses them, and whether they use TLS
    /// (all or none of them).
    fn parse_addresses<'s>(
        &self,
        addresses: &'s [(String, String)],
    ) -> Result<(Vec<Parsed<'s>>, bool), Error> {
        let mut parsed = Vec::new();
        for (path, text) in addresses {
            match address::parse(text, self.version()) {
                Ok(a) => parsed.push((path, a)),
                Err(AddressError::Refused(why)) => {
                    return Err(file_error(
                        RedissonFileError::BadValue,
                        path,
                        self.secrets.mask(&why),
                    ));
                }
                Err(AddressError::Unsupported(why)) => return Err(self.unsupported(path, &why)),
            }
        }
        let tls = parsed[0].1.tls;
        if let Some((path, _)) = parsed.iter().find(|(_, a)| a.tls != tls) {
            return Err(self.unsupported(
                path,
                "mixes TLS (`rediss://`) and plain (`redis://`) addresses; this crate uses one \
                 for every node",
            ));
        }
        Ok((parsed, tls))
    }

    /// The data nodes' credentials and (Sentinel) the sentinels': 4.x's top level wins
    /// over the section; an address's own win over both (Redisson's connection handler
    /// takes the address's first).
    fn credentials(
        &self,
        section: &Section,
        topology: RedissonTopology,
        parsed: &[Parsed<'_>],
    ) -> Result<Credentials, Error> {
        let (username, password) = match self.version() {
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
        if topology != RedissonTopology::Sentinel {
            let (username, password) = self.one_set(parsed, &username, &password)?;
            return Ok(Credentials {
                username,
                password,
                sentinel: None,
            });
        }
        // Redisson sends the sentinels credentials only when the data nodes have a
        // password: `sentinelUsername` (else none) and `sentinelPassword` (else the data
        // password); a sentinel address's own credentials win.
        let (base_user, base_pass) = match &password {
            Some(data) => (
                section.sentinel_username.clone(),
                Some(section.sentinel_password.clone().unwrap_or(data.clone())),
            ),
            None => (None, None),
        };
        let (s_user, s_pass) = self.one_set(parsed, &base_user, &base_pass)?;
        Ok(Credentials {
            username,
            password,
            sentinel: s_pass.map(|p| (s_user, p)),
        })
    }

    /// The one set of credentials every address connects with (an address's own, else
    /// `user` and `pass`), or why the crate cannot use one set for all.
    fn one_set(
        &self,
        parsed: &[Parsed<'_>],
        user: &Option<String>,
        pass: &Option<String>,
    ) -> Result<(Option<String>, Option<String>), Error> {
        let sets: Vec<_> = parsed
            .iter()
            .map(|(path, a)| {
                (
                    *path,
                    a.username.clone().or(user.clone()),
                    a.password.clone().or(pass.clone()),
                )
            })
            .collect();
        let (_, user, pass) = sets[0].clone();
        match sets.iter().find(|(_, u, p)| *u != user || *p != pass) {
            Some((path, ..)) => Err(self.unsupported(
                path,
                "the addresses carry different credentials; this crate uses one set for \
                 every node (put them in `username` / `password`)",
            )),
            None => Ok((user, pass)),
        }
    }

    /// The database (0 unless set; only 0 on a cluster).
    fn database(
        &self,
        topology: RedissonTopology,
        section: &Section,
        paths: &mut HashMap<&'static str, String>,
    ) -> Result<u8, Error> {
        let Some((db, path)) = &section.database else {
            return Ok(0);
        };
        paths.insert("database", path.clone());
        if topology == RedissonTopology::Cluster && *db != 0 {
            return Err(self.unsupported(
                path,
                "a database other than 0 in a cluster (Valkey 9); this crate's client reaches \
                 database 0 of a cluster",
            ));
        }
        u8::try_from(*db).map_err(|_| {
            self.unsupported(path, &format!("database {db} is out of range (0 to 255)"))
        })
    }

    /// A duration setting as written (else Redisson's default), in the range the crate
    /// takes.
    fn millis(
        &self,
        value: &Option<(i64, String)>,
        setting: &Millis,
        paths: &mut HashMap<&'static str, String>,
    ) -> Result<Duration, Error> {
        let (ms, path) = match value {
            Some((ms, path)) => {
                paths.insert(setting.key, path.clone());
                (*ms, path.as_str())
            }
            None => (setting.default, setting.key),
        };
        let (min, max) = (setting.min, max_millis());
        if ms < min || ms > max {
            return Err(self.unsupported(
                path,
                &format!(
                    "{ms} ms is outside what this crate takes: {min} to {max} ms (2^52 ms, \
                     about 142,700 years: the longest expiry Redis keeps without overflowing \
                     its clock)"
                ),
            ));
        }
        Ok(Duration::from_millis(ms.unsigned_abs()))
    }

    /// 4.x's `lockWatchdogBatchSize` (at least 1).
    fn renewal_batch_size(
        &self,
        paths: &mut HashMap<&'static str, String>,
    ) -> Result<usize, Error> {
        let Some((n, path)) = &self.renewal_batch_size else {
            return Ok(BATCH_SIZE);
        };
        paths.insert("lockWatchdogBatchSize", path.clone());
        usize::try_from(*n).ok().filter(|n| *n >= 1).ok_or_else(|| {
            self.unsupported(
                path,
                &format!(
                    "a batch of {n} locks is outside what this crate takes: 1 to \
                         2147483647 (Java's int)"
                ),
            )
        })
    }
}

/// The most milliseconds a duration setting may have: [`MAX_LEASE`].
fn max_millis() -> i64 {
    i64::try_from(MAX_LEASE.as_millis()).unwrap_or(i64::MAX)
}

/// The master's name: a Sentinel configuration needs one; the others have none.
fn master_name(topology: RedissonTopology, section: &Section) -> Result<Option<String>, Error> {
    match (topology, &section.master_name) {
        (RedissonTopology::Sentinel, None) => Err(file_error(
            RedissonFileError::BadValue,
            format!("{}.masterName", section.scope.key()),
            "a Sentinel configuration needs the master's name (Redisson.create refuses it \
             without one too)",
        )),
        (RedissonTopology::Sentinel, Some(m)) => Ok(Some(m.clone())),
        _ => Ok(None),
    }
}
