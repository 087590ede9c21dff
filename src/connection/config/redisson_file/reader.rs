//! The walk over the file's settings: each key Redisson knows is used, listed as ignored,
//! or refused as one the crate cannot honour; an unknown key is an error.

use std::time::Duration;

use super::text::{boolean, integer, millis, parse_address, text, Node};
use super::{bad_value, file_error, unsupported, RedissonFile, RedissonTopology};
use crate::connection::config::{ConfigBuilder, PublishMode};
use crate::connection::tls::TlsOptions;
use crate::error::{Error, RedissonFileError, Result};

/// What the file said, before precedence (4.x top level over the server level) is applied.
#[derive(Default)]
pub(super) struct Reader {
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

    pub(super) fn top(&mut self, entries: Vec<(String, Node)>) -> Result<()> {
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

    pub(super) fn finish(self) -> Result<RedissonFile> {
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
