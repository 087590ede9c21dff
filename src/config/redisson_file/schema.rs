//! Every property Redisson 3.x (3.23) and 4.x (4.7) read from the file, where, as which
//! Java type, and what this crate does with it: honours it, or ignores it (listed by
//! `ignored()`). A key missing here is one neither version knows, and both refuse the
//! file for it (3.x: Jackson's unknown property; 4.x: snakeyaml's missing property).
//!
//! The lists were taken from the setters of `Config`, `BaseConfig`,
//! `BaseMasterSlaveServersConfig` and the `*ServersConfig` classes of both versions, and
//! each entry checked by loading a file with it through real Redisson (`config-check.sh`).
//! Quirks kept from that check: 3.x's Jackson quietly skips `clusterConfig`,
//! `sentinelConfig`, `slaveNotUsed`, `executor`, `eventLoopGroup` and the server-level
//! `ssl*ManagerFactory` whatever their value; 4.x refuses `retryInterval`, `slaveNotUsed`
//! and the `ssl*ManagerFactory` settings as unknown.

use super::scalar::Redisson;

/// Where a key sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Scope {
    Top,
    Single,
    Cluster,
    Sentinel,
    Replicated,
    MasterSlave,
}

impl Scope {
    fn bit(self) -> u8 {
        match self {
            Scope::Top => TOP,
            Scope::Single => SINGLE,
            Scope::Cluster => CLUSTER,
            Scope::Sentinel => SENTINEL,
            Scope::Replicated => REPLICATED,
            Scope::MasterSlave => MASTER_SLAVE,
        }
    }

    /// The section's key at the top of the file.
    pub(super) fn key(self) -> &'static str {
        match self {
            Scope::Top => "",
            Scope::Single => "singleServerConfig",
            Scope::Cluster => "clusterServersConfig",
            Scope::Sentinel => "sentinelServersConfig",
            Scope::Replicated => "replicatedServersConfig",
            Scope::MasterSlave => "masterSlaveServersConfig",
        }
    }

    /// Which section Redisson uses when a file sets several (its `ConfigSupport` order).
    pub(super) fn precedence(self) -> u8 {
        match self {
            Scope::MasterSlave => 0,
            Scope::Single => 1,
            Scope::Sentinel => 2,
            Scope::Cluster => 3,
            Scope::Replicated => 4,
            Scope::Top => 5,
        }
    }
}

const TOP: u8 = 1;
const SINGLE: u8 = 2;
const CLUSTER: u8 = 4;
const SENTINEL: u8 = 8;
const REPLICATED: u8 = 16;
const MASTER_SLAVE: u8 = 32;
/// Every `*ServersConfig` (`BaseConfig`'s settings).
const SERVER: u8 = SINGLE | CLUSTER | SENTINEL | REPLICATED | MASTER_SLAVE;
/// `BaseMasterSlaveServersConfig`'s settings.
const MASTER_SLAVE_FAMILY: u8 = CLUSTER | SENTINEL | REPLICATED | MASTER_SLAVE;

/// A setting's Java type, as the reader checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    Str,
    Int,
    Long,
    Bool,
    /// A Java enum: its constants in declaration order.
    Enum(&'static [&'static str]),
    /// A set of a Java enum's constants.
    EnumSet(&'static [&'static str]),
    /// An object of a class the file names (`!<class> {...}`).
    Class,
    StrList,
    StrMap,
    /// Skipped by the reader whatever the value (3.x's ignored types).
    Any,
    /// A `*ServersConfig` section.
    Section(Scope),
}

/// What the crate does with a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Use {
    /// Does not matter to locks: listed by `ignored()`.
    Ignored,
    Honoured(Setting),
}

/// The settings the crate uses (or checks it can honour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Setting {
    Section,
    /// `codec`: the bytes `getMap(name)` / `getSet(name)` hash for a key.
    Codec,
    WatchdogTimeout,
    BatchSize,
    CheckSynced,
    SlavesSyncTimeout,
    FairLockWaitTimeout,
    Username,
    Password,
    NameMapper,
    CredentialsResolver,
    CommandMapper,
    SslStore,
    SslVerificationMode,
    EndpointIdentification,
    Timeout,
    ConnectTimeout,
    SubscriptionTimeout,
    Address,
    Addresses,
    MasterName,
    Database,
    SentinelUsername,
    SentinelPassword,
    ShardedSubscriptionMode,
    NatMapper,
    NatMap,
}

pub(super) const TRANSPORT_MODES: &[&str] = &["NIO", "EPOLL", "KQUEUE", "IO_URING"];
pub(super) const READ_MODES: &[&str] = &["SLAVE", "MASTER", "MASTER_SLAVE"];
pub(super) const SUBSCRIPTION_MODES: &[&str] = &["SLAVE", "MASTER"];
pub(super) const SSL_PROVIDERS: &[&str] = &["JDK", "OPENSSL"];
pub(super) const SSL_VERIFICATION_MODES: &[&str] = &["NONE", "CA_ONLY", "STRICT"];
pub(super) const PROTOCOLS: &[&str] = &["RESP2", "RESP3"];
pub(super) const SHARDED_SUBSCRIPTION_MODES: &[&str] = &["AUTO", "ON", "OFF"];
pub(super) const VALKEY_CAPABILITIES: &[&str] = &["REDIRECT"];

use Setting as S;
use Ty::*;

/// One row: where, which keys, the type 3.x reads them as (`None`: 3.x does not know
/// them there), the type 4.x reads them as, and the crate's use.
type Row = (u8, &'static [&'static str], Option<Ty>, Option<Ty>, Use);

const fn h(setting: Setting) -> Use {
    Use::Honoured(setting)
}
const I: Use = Use::Ignored;

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // The sections.
    (TOP, &["singleServerConfig"], Some(Section(Scope::Single)), Some(Section(Scope::Single)), h(S::Section)),
    (TOP, &["clusterServersConfig"], Some(Section(Scope::Cluster)), Some(Section(Scope::Cluster)), h(S::Section)),
    (TOP, &["sentinelServersConfig"], Some(Section(Scope::Sentinel)), Some(Section(Scope::Sentinel)), h(S::Section)),
    (TOP, &["replicatedServersConfig"], Some(Section(Scope::Replicated)), Some(Section(Scope::Replicated)), h(S::Section)),
    (TOP, &["masterSlaveServersConfig"], Some(Section(Scope::MasterSlave)), Some(Section(Scope::MasterSlave)), h(S::Section)),
    // Lock settings (`Config`).
    (TOP, &["lockWatchdogTimeout"], Some(Long), Some(Long), h(S::WatchdogTimeout)),
    (TOP, &["lockWatchdogBatchSize"], None, Some(Int), h(S::BatchSize)),
    (TOP, &["checkLockSyncedSlaves"], Some(Bool), Some(Bool), h(S::CheckSynced)),
    (TOP, &["slavesSyncTimeout"], Some(Long), Some(Long), h(S::SlavesSyncTimeout)),
    (TOP, &["fairLockWaitTimeout"], None, Some(Long), h(S::FairLockWaitTimeout)),
    // The rest of `Config`: threads, codec, clean-up, transport, TCP.
    (TOP, &["threads", "nettyThreads", "minCleanUpDelay", "maxCleanUpDelay", "cleanUpKeysAmount"], Some(Int), Some(Int), I),
    (TOP, &["reliableTopicWatchdogTimeout"], Some(Long), Some(Long), I),
    (TOP, &["referenceEnabled", "keepPubSubOrder", "useScriptCache", "useThreadClassLoader", "lazyInitialization"], Some(Bool), Some(Bool), I),
    (TOP, &["transportMode"], Some(Enum(TRANSPORT_MODES)), Some(Enum(TRANSPORT_MODES)), I),
    (TOP, &["codec"], Some(Class), Some(Class), h(S::Codec)),
    (TOP, &["nettyHook", "connectionListener", "addressResolverGroupFactory"], Some(Class), Some(Class), I),
    (TOP, &["executor", "eventLoopGroup"], Some(Any), Some(Class), I),
    (TOP, &["nettyExecutor"], None, Some(Class), I),
    (TOP, &["protocol"], None, Some(Enum(PROTOCOLS)), I),
    (TOP, &["valkeyCapabilities"], None, Some(EnumSet(VALKEY_CAPABILITIES)), I),
    (TOP, &["tcpKeepAlive", "tcpNoDelay"], None, Some(Bool), I),
    (TOP, &["tcpKeepAliveCount", "tcpKeepAliveIdle", "tcpKeepAliveInterval", "tcpUserTimeout"], None, Some(Int), I),
    (TOP, &["clusterConfig", "sentinelConfig", "slaveNotUsed"], Some(Any), None, I),
    // 4.x's top level; the same settings inside every section (3.x's layout, 4.x's
    // deprecated one, where the top level wins).
    (TOP, &["username"], None, Some(Str), h(S::Username)),
    (SERVER, &["username"], Some(Str), Some(Str), h(S::Username)),
    (TOP, &["password"], None, Some(Str), h(S::Password)),
    (SERVER, &["password"], Some(Str), Some(Str), h(S::Password)),
    (TOP, &["nameMapper"], None, Some(Class), h(S::NameMapper)),
    (SERVER, &["nameMapper"], Some(Class), Some(Class), h(S::NameMapper)),
    (TOP, &["credentialsResolver"], None, Some(Class), h(S::CredentialsResolver)),
    (SERVER, &["credentialsResolver"], Some(Class), Some(Class), h(S::CredentialsResolver)),
    (TOP, &["commandMapper"], None, Some(Class), h(S::CommandMapper)),
    (SERVER, &["commandMapper"], Some(Class), Some(Class), h(S::CommandMapper)),
    (TOP, &["sslTruststore", "sslKeystore"], None, Some(Str), h(S::SslStore)),
    (SERVER, &["sslTruststore", "sslKeystore"], Some(Str), Some(Str), h(S::SslStore)),
    (TOP | SERVER, &["sslVerificationMode"], None, Some(Enum(SSL_VERIFICATION_MODES)), h(S::SslVerificationMode)),
    (TOP, &["sslProvider"], None, Some(Enum(SSL_PROVIDERS)), I),
    (SERVER, &["sslProvider"], Some(Enum(SSL_PROVIDERS)), Some(Enum(SSL_PROVIDERS)), I),
    (TOP, &["sslTruststorePassword", "sslKeystorePassword"], None, Some(Str), I),
    (SERVER, &["sslTruststorePassword", "sslKeystorePassword"], Some(Str), Some(Str), I),
    (TOP | SERVER, &["sslKeystoreType"], None, Some(Str), I),
    (TOP, &["sslProtocols", "sslCiphers"], None, Some(StrList), I),
    (SERVER, &["sslProtocols", "sslCiphers"], Some(StrList), Some(StrList), I),
    // `BaseConfig`: every section.
    (SERVER, &["sslEnableEndpointIdentification"], Some(Bool), Some(Bool), h(S::EndpointIdentification)),
    (SERVER, &["sslKeyManagerFactory", "sslTrustManagerFactory"], Some(Any), None, I),
    (SERVER, &["idleConnectionTimeout", "retryAttempts", "subscriptionsPerConnection", "pingConnectionInterval"], Some(Int), Some(Int), I),
    (SERVER, &["timeout"], Some(Int), Some(Int), h(S::Timeout)),
    (SERVER, &["connectTimeout"], Some(Int), Some(Int), h(S::ConnectTimeout)),
    (SERVER, &["retryInterval"], Some(Int), None, I),
    (SERVER, &["retryDelay", "reconnectionDelay"], None, Some(Class), I),
    (SERVER, &["subscriptionTimeout"], None, Some(Int), h(S::SubscriptionTimeout)),
    (SERVER, &["clientName"], Some(Str), Some(Str), I),
    (SERVER, &["keepAlive", "tcpNoDelay"], Some(Bool), Some(Bool), I),
    (SERVER, &["tcpKeepAliveCount", "tcpKeepAliveIdle", "tcpKeepAliveInterval", "tcpUserTimeout"], None, Some(Int), I),
    // `SingleServerConfig`.
    (SINGLE, &["address"], Some(Str), Some(Str), h(S::Address)),
    (SINGLE, &["connectionMinimumIdleSize", "connectionPoolSize", "subscriptionConnectionMinimumIdleSize", "subscriptionConnectionPoolSize"], Some(Int), Some(Int), I),
    (SINGLE | MASTER_SLAVE_FAMILY, &["dnsMonitoringInterval"], Some(Long), Some(Long), I),
    (SINGLE | MASTER_SLAVE_FAMILY, &["dnsMonitoringTimes"], None, Some(Int), I),
    (SINGLE | SENTINEL | REPLICATED | MASTER_SLAVE, &["database"], Some(Int), Some(Int), h(S::Database)),
    // `BaseMasterSlaveServersConfig`: cluster, sentinel, replicated, master/slave.
    (MASTER_SLAVE_FAMILY, &["failedSlaveCheckInterval", "failedSlaveReconnectionInterval", "masterConnectionMinimumIdleSize", "masterConnectionPoolSize", "slaveConnectionMinimumIdleSize", "slaveConnectionPoolSize", "subscriptionConnectionMinimumIdleSize", "subscriptionConnectionPoolSize"], Some(Int), Some(Int), I),
    (MASTER_SLAVE_FAMILY, &["failedSlaveNodeDetector"], None, Some(Class), I),
    (MASTER_SLAVE_FAMILY, &["fallbackLoadingToMaster"], None, Some(Bool), I),
    (MASTER_SLAVE_FAMILY, &["loadBalancer"], Some(Class), Some(Class), I),
    (MASTER_SLAVE_FAMILY, &["readMode"], Some(Enum(READ_MODES)), Some(Enum(READ_MODES)), I),
    (MASTER_SLAVE_FAMILY, &["subscriptionMode"], Some(Enum(SUBSCRIPTION_MODES)), Some(Enum(SUBSCRIPTION_MODES)), I),
    (MASTER_SLAVE_FAMILY, &["slaveNotUsed"], Some(Any), None, I),
    // `ClusterServersConfig`.
    (CLUSTER, &["nodeAddresses"], Some(StrList), Some(StrList), h(S::Addresses)),
    (CLUSTER | SENTINEL | REPLICATED, &["scanInterval"], Some(Int), Some(Int), I),
    (CLUSTER, &["checkSlotsCoverage"], Some(Bool), Some(Bool), I),
    (CLUSTER, &["checkMasterLinkStatus"], None, Some(Bool), I),
    (CLUSTER, &["database"], None, Some(Int), h(S::Database)),
    (CLUSTER, &["shardedSubscriptionMode"], None, Some(Enum(SHARDED_SUBSCRIPTION_MODES)), h(S::ShardedSubscriptionMode)),
    (CLUSTER | SENTINEL, &["natMapper"], Some(Class), Some(Class), h(S::NatMapper)),
    (CLUSTER | SENTINEL, &["natMap"], Some(StrMap), Some(StrMap), h(S::NatMap)),
    // `SentinelServersConfig`.
    (SENTINEL, &["sentinelAddresses"], Some(StrList), Some(StrList), h(S::Addresses)),
    (SENTINEL, &["masterName"], Some(Str), Some(Str), h(S::MasterName)),
    (SENTINEL, &["sentinelUsername"], Some(Str), Some(Str), h(S::SentinelUsername)),
    (SENTINEL, &["sentinelPassword"], Some(Str), Some(Str), h(S::SentinelPassword)),
    (SENTINEL, &["checkSentinelsList", "checkSlaveStatusWithSyncing", "sentinelsDiscovery"], Some(Bool), Some(Bool), I),
    // `ReplicatedServersConfig`, `MasterSlaveServersConfig`: read to check them (the
    // topologies themselves are refused when Redisson would use them).
    (REPLICATED, &["nodeAddresses"], Some(StrList), Some(StrList), h(S::Addresses)),
    (REPLICATED, &["monitorIPChanges"], Some(Bool), Some(Bool), I),
    (REPLICATED, &["natMapper"], None, Some(Class), h(S::NatMapper)),
    (MASTER_SLAVE, &["masterAddress"], Some(Str), Some(Str), h(S::Address)),
    (MASTER_SLAVE, &["slaveAddresses"], Some(StrList), Some(StrList), h(S::Addresses)),
];

/// How `version` reads `key` in `scope`: its type and the crate's use; `None` when that
/// version does not know the key there.
pub(super) fn spec(scope: Scope, key: &str, version: Redisson) -> Option<(Ty, Use)> {
    ROWS.iter()
        .find(|(scopes, keys, ..)| scopes & scope.bit() != 0 && keys.contains(&key))
        .and_then(|(_, _, three, four, use_)| {
            match version {
                Redisson::V3 => *three,
                Redisson::V4 => *four,
            }
            .map(|ty| (ty, *use_))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        use Redisson::*;
        assert_eq!(spec(Scope::Top, "username", V3), None);
        assert_eq!(
            spec(Scope::Top, "username", V4),
            Some((Str, h(S::Username)))
        );
        assert_eq!(
            spec(Scope::Single, "username", V3),
            Some((Str, h(S::Username)))
        );
        assert_eq!(spec(Scope::Single, "retryInterval", V4), None);
        assert_eq!(spec(Scope::Cluster, "database", V3), None);
        assert!(spec(Scope::Cluster, "dnsMonitoringTimes", V4).is_some());
        assert!(spec(Scope::Cluster, "checkMasterLinkStatus", V4).is_some());
        assert_eq!(
            spec(Scope::Cluster, "natMap", V3),
            Some((StrMap, h(S::NatMap)))
        );
        assert_eq!(
            spec(Scope::Sentinel, "sentinelPassword", V3),
            Some((Str, h(S::SentinelPassword)))
        );
        assert_eq!(
            spec(Scope::Sentinel, "checkSentinelsList", V4),
            Some((Bool, I))
        );
        assert_eq!(spec(Scope::Single, "natMap", V4), None);
        assert_eq!(
            spec(Scope::Top, "sslEnableEndpointIdentification", V4),
            None
        );
        assert_eq!(spec(Scope::Top, "sslKeyManagerFactory", V3), None);
        assert_eq!(
            spec(Scope::Single, "sslKeyManagerFactory", V3),
            Some((Any, I))
        );
        assert_eq!(spec(Scope::Single, "sslKeyManagerFactory", V4), None);
        assert_eq!(spec(Scope::Replicated, "natMapper", V3), None);
        assert_eq!(spec(Scope::Top, "adress", V4), None);
    }
}
