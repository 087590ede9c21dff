//! The settings the crate honours: each read as its Java type and kept where
//! [`resolve`](super::resolve) looks for it, or, when the crate cannot do what it says,
//! recorded as a problem of the section it is in (it counts only if Redisson uses that
//! section).
//!
//! The settings the crate takes only at Redisson's default (a class of Redisson's own, a
//! TLS or NAT setting left alone) are data: one row each, what another value is and why
//! the crate cannot follow it.

use super::super::scalar::{Lens, Redisson, Why};
use super::super::schema::{self, Setting, Ty};
use super::super::source::file_error;
use super::super::tree::Node;
use super::{Refusal, Section, Shared, Step, Walk};
use crate::config::defaults::PublishMode;
use crate::error::RedissonFileError;

/// A setting the crate honours only at Redisson's default.
struct DefaultOnly {
    /// Reads the value; `Some` (what it is, for the message) when it is not the default.
    other: fn(&Lens, &Node) -> Result<Option<String>, Why>,
    /// Why the crate cannot follow another value.
    why: fn(&str) -> String,
}

const NAT_MAP: DefaultOnly = DefaultOnly {
    other: |lens, value| {
        let map = lens.string_map(value)?;
        Ok(map.filter(|m| !m.is_empty()).map(|_| String::new()))
    },
    why: |_| {
        "a NAT map translates the addresses the servers announce, which fred (this crate's \
         client) cannot do; reach the nodes at the addresses they announce"
            .to_owned()
    },
};

const SSL_STORE: DefaultOnly = DefaultOnly {
    other: |lens, value| lens.string(value),
    why: |_| {
        "a Java key store (JKS/PKCS#12) cannot be read; give the CA or the client \
         certificate as PEM files with ConfigBuilder::tls(TlsOptions::new()\
         .ca_file(..).client_cert_files(..))"
            .to_owned()
    },
};

const SSL_VERIFICATION_MODE: DefaultOnly = DefaultOnly {
    other: |lens, value| {
        let mode = lens.enumeration(value, schema::SSL_VERIFICATION_MODES)?;
        Ok(mode.filter(|m| *m != "STRICT").map(str::to_owned))
    },
    why: |mode| {
        format!(
            "`{mode}`: this crate always verifies the certificate chain and the host name \
             (STRICT)"
        )
    },
};

const ENDPOINT_IDENTIFICATION: DefaultOnly = DefaultOnly {
    other: |lens, value| Ok((!lens.boolean(value)?).then(String::new)),
    why: |_| "this crate always checks the server's host name against its certificate".to_owned(),
};

/// A class-valued setting: the crate honours Redisson's own class only.
struct ClassSetting {
    /// Redisson's own class in 3.x and in 4.x (some moved between them).
    v3: &'static str,
    v4: &'static str,
    /// Why the crate cannot run another class (given its name).
    why: fn(&str) -> String,
}

const NAME_MAPPER: ClassSetting = ClassSetting {
    v3: "org.redisson.api.DefaultNameMapper",
    v4: "org.redisson.config.DefaultNameMapper",
    why: |class| {
        format!(
            "the name mapper class `{class}` is Java code this crate cannot run; give the \
             same mapping in code with ConfigBuilder::name_mapper"
        )
    },
};

const NAT_MAPPER: ClassSetting = ClassSetting {
    v3: "org.redisson.api.DefaultNatMapper",
    v4: "org.redisson.config.DefaultNatMapper",
    why: |_| {
        "a NAT mapper translates the addresses the servers announce, which fred (this \
         crate's client) cannot do; reach the nodes at the addresses they announce"
            .to_owned()
    },
};

const CREDENTIALS_RESOLVER: ClassSetting = ClassSetting {
    v3: "org.redisson.client.DefaultCredentialsResolver",
    v4: "org.redisson.client.DefaultCredentialsResolver",
    why: |class| {
        format!(
            "the credentials resolver `{class}` is Java code; give the credentials with \
             ConfigBuilder::username / password"
        )
    },
};

const COMMAND_MAPPER: ClassSetting = ClassSetting {
    v3: "org.redisson.config.DefaultCommandMapper",
    v4: "org.redisson.config.DefaultCommandMapper",
    why: |_| {
        "a command mapper renames the commands the lock scripts are sent with; this crate \
         sends Redis's own names"
            .to_owned()
    },
};

impl Walk<'_> {
    /// One honoured key of the top level or of `section` (its index).
    pub(super) fn honoured(
        &mut self,
        section: Option<usize>,
        setting: Setting,
        ty: Ty,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        match setting {
            Setting::Section => self.check(value, ty, path)?,
            Setting::Codec => {
                let class = self.lens.class(value).map_err(|why| self.bad(path, why))?;
                self.codec = class.map(|class| (class, path.to_owned()));
            }
            Setting::WatchdogTimeout => self.watchdog_timeout = Some(self.number(value, ty, path)?),
            Setting::BatchSize => self.renewal_batch_size = Some(self.number(value, ty, path)?),
            Setting::CheckSynced => {
                self.check_lock_synced_replicas = Some(self.boolean(value, path)?)
            }
            Setting::SlavesSyncTimeout => {
                self.replicas_sync_timeout = Some(self.number(value, ty, path)?)
            }
            Setting::FairLockWaitTimeout => {
                self.fair_lock_wait_timeout = Some(self.number(value, ty, path)?)
            }
            Setting::Username => self.shared_text(section, |s| &mut s.username, path, value)?,
            Setting::Password => self.shared_text(section, |s| &mut s.password, path, value)?,
            Setting::NameMapper => self.class_setting(section, &NAME_MAPPER, path, value)?,
            Setting::NatMapper => self.class_setting(section, &NAT_MAPPER, path, value)?,
            Setting::CredentialsResolver => {
                self.class_setting(section, &CREDENTIALS_RESOLVER, path, value)?
            }
            Setting::CommandMapper => self.class_setting(section, &COMMAND_MAPPER, path, value)?,
            Setting::NatMap => self.default_only(section, &NAT_MAP, path, value)?,
            Setting::SslStore => self.default_only(section, &SSL_STORE, path, value)?,
            Setting::SslVerificationMode => {
                self.default_only(section, &SSL_VERIFICATION_MODE, path, value)?
            }
            Setting::EndpointIdentification => {
                self.default_only(section, &ENDPOINT_IDENTIFICATION, path, value)?
            }
            Setting::Timeout => {
                self.section_number(section, |s| &mut s.timeout, ty, path, value)?
            }
            Setting::ConnectTimeout => {
                self.section_number(section, |s| &mut s.connect_timeout, ty, path, value)?
            }
            Setting::SubscriptionTimeout => {
                self.section_number(section, |s| &mut s.subscription_timeout, ty, path, value)?
            }
            Setting::Database => {
                self.section_number(section, |s| &mut s.database, ty, path, value)?
            }
            Setting::Address => self.address(section, path, value)?,
            Setting::Addresses => self.addresses(section, path, value)?,
            Setting::MasterName => {
                self.section_text(section, |s| &mut s.master_name, path, value)?
            }
            Setting::SentinelUsername => {
                self.section_text(section, |s| &mut s.sentinel_username, path, value)?
            }
            Setting::SentinelPassword => {
                self.section_text(section, |s| &mut s.sentinel_password, path, value)?
            }
            Setting::ShardedSubscriptionMode => self.publish_mode(section, path, value)?,
        }
        Ok(())
    }

    /// A setting 4.x has at its top level and every version in the sections.
    fn shared_text(
        &mut self,
        section: Option<usize>,
        field: fn(&mut Shared) -> &mut Option<String>,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        let text = self.string(value, path)?;
        let shared = match section {
            Some(i) => &mut self.sections[i].shared,
            None => &mut self.top,
        };
        *field(shared) = text;
        Ok(())
    }

    /// A section's number, kept with where it was written.
    fn section_number(
        &mut self,
        section: Option<usize>,
        field: fn(&mut Section) -> &mut Option<(i64, String)>,
        ty: Ty,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        let number = self.number(value, ty, path)?;
        if let Some(s) = self.section_mut(section) {
            *field(s) = Some(number);
        }
        Ok(())
    }

    /// A section's text.
    fn section_text(
        &mut self,
        section: Option<usize>,
        field: fn(&mut Section) -> &mut Option<String>,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        let text = self.string(value, path)?;
        if let Some(s) = self.section_mut(section) {
            *field(s) = text;
        }
        Ok(())
    }

    /// `address` or `masterAddress`: the section's one address, at `path` (null: none).
    fn address(&mut self, section: Option<usize>, path: &str, value: &Node) -> Step<()> {
        let text = self.string(value, path)?;
        if let Some(s) = self.section_mut(section) {
            s.set_addresses(path, text.map(|text| (path.to_owned(), text)));
        }
        Ok(())
    }

    /// `nodeAddresses`, `sentinelAddresses` or `slaveAddresses`: the section's addresses,
    /// at `path[n]`.
    fn addresses(&mut self, section: Option<usize>, path: &str, value: &Node) -> Step<()> {
        let list = self
            .lens
            .string_list(value)
            .map_err(|why| self.bad(path, why))?;
        if let Some(s) = self.section_mut(section) {
            let each = list.unwrap_or_default().into_iter().enumerate();
            s.set_addresses(path, each.map(|(n, text)| (format!("{path}[{n}]"), text)));
        }
        Ok(())
    }

    /// `shardedSubscriptionMode`: how a cluster publishes unlock messages.
    fn publish_mode(&mut self, section: Option<usize>, path: &str, value: &Node) -> Step<()> {
        let mode = self
            .lens
            .enumeration(value, schema::SHARDED_SUBSCRIPTION_MODES)
            .map_err(|why| self.bad(path, why))?;
        if let Some(s) = self.section_mut(section) {
            s.publish_mode = mode.map(|m| match m {
                "ON" => PublishMode::Sharded,
                "OFF" => PublishMode::Publish,
                _ => PublishMode::Auto,
            });
        }
        Ok(())
    }

    fn section_mut(&mut self, section: Option<usize>) -> Option<&mut Section> {
        section.map(|i| &mut self.sections[i])
    }

    /// A number, with where it was written.
    fn number(&self, value: &Node, ty: Ty, path: &str) -> Step<(i64, String)> {
        Ok((self.integer(value, ty, path)?, path.to_owned()))
    }

    fn boolean(&self, value: &Node, path: &str) -> Step<bool> {
        self.lens.boolean(value).map_err(|why| self.bad(path, why))
    }

    /// A setting the crate takes at Redisson's default only: any other value is a problem.
    fn default_only(
        &mut self,
        section: Option<usize>,
        row: &DefaultOnly,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        let other = (row.other)(&self.lens, value).map_err(|why| self.bad(path, why))?;
        if let Some(other) = other {
            let why = (row.why)(&other);
            self.problem(section, RedissonFileError::Unsupported, path, &why);
        }
        Ok(())
    }

    /// A class-valued setting: Redisson's own class (or null) is fine; the other
    /// version's own class is one this version does not find (it refuses the file);
    /// any other class is a problem.
    fn class_setting(
        &mut self,
        section: Option<usize>,
        row: &ClassSetting,
        path: &str,
        value: &Node,
    ) -> Step<()> {
        let class = self.lens.class(value).map_err(|why| self.bad(path, why))?;
        let Some(class) = class else {
            return Ok(());
        };
        let version = self.version();
        let (mine, theirs) = match version {
            Redisson::V3 => (row.v3, row.v4),
            Redisson::V4 => (row.v4, row.v3),
        };
        if class == mine {
            return Ok(());
        }
        if class == theirs {
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
        self.problem(
            section,
            RedissonFileError::Unsupported,
            path,
            &(row.why)(&class),
        );
        Ok(())
    }
}

impl Section {
    /// Replaces the addresses written at `path` (and under it) by `addresses`.
    fn set_addresses(&mut self, path: &str, addresses: impl IntoIterator<Item = (String, String)>) {
        self.addresses.retain(|(p, _)| !p.starts_with(path));
        self.addresses.extend(addresses);
    }
}
