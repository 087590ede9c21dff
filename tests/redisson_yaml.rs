//! The Java fleet's own `redisson.yaml` read into working clients (feature
//! `redisson-yaml`): one file per topology (tests/redisson-yaml/), each against real
//! servers, plus the settings refused and the ones listed as ignored.
#![cfg(feature = "redisson-yaml")]

mod support;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{
    Client, Error, PublishMode, RedissonFile, RedissonFileError, RedissonTopology,
};
use support::cluster::Cluster;
use support::*;

fn sample(name: &str) -> String {
    let path = format!("{}/tests/redisson-yaml/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn env(vars: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
    move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }
}

async fn raw_at(url: &str) -> redisson_lock::fred::prelude::Client {
    let raw = Builder::from_config(redisson_lock::fred::prelude::Config::from_url(url).unwrap())
        .build()
        .unwrap();
    raw.init().await.unwrap();
    raw
}

#[tokio::test]
async fn single_server_file_gives_a_working_client_with_the_fleets_settings() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let vars = env(vec![
        ("REDIS_PORT", server.port.to_string()),
        ("REDIS_PASSWORD", "s3cret".into()),
        ("REDIS_DB", "3".into()),
    ]);
    let file = RedissonFile::from_yaml_with_env(&sample("single.yaml"), vars).unwrap();
    assert_eq!(file.topology(), RedissonTopology::SingleServer);
    assert_eq!(
        file.ignored(),
        [
            "threads",
            "nettyThreads",
            "codec",
            "transportMode",
            "singleServerConfig.connectTimeout",
            "singleServerConfig.idleConnectionTimeout",
            "singleServerConfig.retryAttempts",
            "singleServerConfig.retryDelay",
            "singleServerConfig.reconnectionDelay",
            "singleServerConfig.subscriptionsPerConnection",
            "singleServerConfig.clientName",
            "singleServerConfig.subscriptionConnectionMinimumIdleSize",
            "singleServerConfig.subscriptionConnectionPoolSize",
            "singleServerConfig.connectionMinimumIdleSize",
            "singleServerConfig.connectionPoolSize",
            "singleServerConfig.dnsMonitoringInterval",
        ]
    );
    let config = file.build().unwrap();
    assert_eq!(config.watchdog_timeout(), Duration::from_millis(10_000));
    assert_eq!(config.renewal_batch_size(), 50);
    assert!(!config.check_lock_synced_replicas());
    assert_eq!(config.replicas_sync_timeout(), Duration::from_millis(2_500));
    assert_eq!(
        config.fair_lock_wait_timeout(),
        Duration::from_millis(60_000)
    );
    assert_eq!(config.redis().database, Some(3));
    assert_eq!(config.redis().username.as_deref(), Some("default"));
    assert!(config.name_mapper().is_none());
    assert!(!format!("{config:?}").contains("s3cret"));

    let client = Client::connect(config).await.unwrap();
    let lock = client.get_lock("fleet:single");
    lock.lock().await.unwrap();
    // Where a Java app of the fleet would look: database 3, the watchdog's 10 s lease.
    let raw = raw_at(&format!("redis://:s3cret@127.0.0.1:{}/3", server.port)).await;
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(
        hgetall(&raw, "fleet:single").await,
        vec![(field, "1".into())]
    );
    let ttl = pttl(&raw, "fleet:single").await;
    assert!((8_000..=10_000).contains(&ttl), "PTTL {ttl}");
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, "fleet:single").await);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn unset_variable_without_default_stays_literal_as_in_redisson() {
    // No REDIS_PASSWORD: Redisson sets the password to the text `${REDIS_PASSWORD}`.
    let vars = env(vec![]);
    let config = RedissonFile::from_yaml_with_env(&sample("single.yaml"), vars)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(
        config.redis().password.as_deref(),
        Some("${REDIS_PASSWORD}")
    );
    assert_eq!(
        config.redis().database,
        None,
        "the ${{REDIS_DB:-0}} default"
    );
    // An empty variable is used as empty (`:-` applies to unset ones only).
    let vars = env(vec![("REDIS_PASSWORD", String::new())]);
    let config = RedissonFile::from_yaml_with_env(&sample("single.yaml"), vars)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.redis().password.as_deref(), Some(""));
}

#[tokio::test]
async fn cluster_file_gives_a_working_client() {
    let cluster = Cluster::start_with_password(Some("clusterpw"));
    let vars = env(vec![
        ("NODE1_PORT", cluster.nodes[0].port.to_string()),
        ("NODE2_PORT", cluster.nodes[1].port.to_string()),
        ("NODE3_PORT", cluster.nodes[2].port.to_string()),
        ("REDIS_PASSWORD", "clusterpw".into()),
    ]);
    let file = RedissonFile::from_yaml_with_env(&sample("cluster.yaml"), vars).unwrap();
    assert_eq!(file.topology(), RedissonTopology::Cluster);
    assert!(file
        .ignored()
        .contains(&"clusterServersConfig.loadBalancer".to_owned()));
    assert!(file.ignored().contains(&"codec".to_owned()));
    let config = file.build().unwrap();
    assert!(config.redis().server.is_clustered());
    assert_eq!(config.watchdog_timeout(), Duration::from_secs(20));
    assert_eq!(config.replicas_sync_timeout(), Duration::from_millis(1_500));
    assert_eq!(config.publish_mode(), PublishMode::Auto);
    let client = Client::connect(config).await.unwrap();
    let raw = cluster.raw().await;
    // Names on all three primaries' slots.
    for name in ["fleet:a", "fleet:b", "fleet:c", "fleet:d"] {
        let lock = client.get_lock(name);
        lock.lock().await.unwrap();
        let field = format!("{}:{}", client.id(), lock.owner());
        assert_eq!(hgetall(&raw, name).await, vec![(field, "1".into())]);
        let ttl = pttl(&raw, name).await;
        assert!((18_000..=20_000).contains(&ttl), "PTTL {ttl}");
        lock.unlock().await.unwrap();
    }
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn sentinel_file_gives_a_working_client() {
    let primary = RedisServer::start();
    let sentinel = SentinelServer::start(primary.port, 5_000);
    let vars = env(vec![("SENTINEL_PORT", sentinel.port.to_string())]);
    let file = RedissonFile::from_yaml_with_env(&sample("sentinel.yaml"), vars).unwrap();
    assert_eq!(file.topology(), RedissonTopology::Sentinel);
    assert_eq!(
        file.ignored(),
        [
            "sentinelServersConfig.checkSentinelsList",
            "sentinelServersConfig.readMode",
            "sentinelServersConfig.subscriptionMode",
            "sentinelServersConfig.scanInterval",
            "sentinelServersConfig.masterConnectionPoolSize",
            "sentinelServersConfig.slaveConnectionPoolSize",
        ]
    );
    let config = file.build().unwrap();
    assert!(!config.check_lock_synced_replicas());
    let client = Client::connect(config).await.unwrap();
    let lock = client.get_lock("fleet:sentinel");
    lock.lock().await.unwrap();
    let raw = raw_at(&format!("redis://127.0.0.1:{}/1", primary.port)).await;
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(
        hgetall(&raw, "fleet:sentinel").await,
        vec![(field, "1".into())]
    );
    let ttl = pttl(&raw, "fleet:sentinel").await;
    assert!((13_000..=15_000).contains(&ttl), "PTTL {ttl}");
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

fn refused(text: &str) -> (RedissonFileError, String) {
    match RedissonFile::from_yaml_with_env(text, |_| None) {
        Err(Error::RedissonFile { kind, setting, .. }) => (kind, setting),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn settings_the_crate_cannot_honour_are_typed_errors_naming_them() {
    use RedissonFileError::*;
    assert_eq!(
        refused(&sample("truststore.yaml")),
        (Unsupported, "sslTruststore".into())
    );
    assert_eq!(
        refused(&sample("verification.yaml")),
        (Unsupported, "sslVerificationMode".into())
    );
    assert_eq!(
        refused(&sample("replicated.yaml")),
        (Unsupported, "replicatedServersConfig".into())
    );
    // A custom name mapper (its class must be on the Java apps' class path, so no sample
    // file: Redisson would not load it here either).
    let custom = "nameMapper: !<com.example.TenantNameMapper> {}\n\
                  singleServerConfig:\n  address: redis://h:6379\n";
    assert_eq!(refused(custom), (Unsupported, "nameMapper".into()));
    let old_layout = "singleServerConfig:\n  address: redis://h:6379\n  \
                      nameMapper: !<com.example.TenantNameMapper> {}\n  sslKeystore: file:/k.p12\n";
    assert_eq!(
        refused(old_layout),
        (Unsupported, "singleServerConfig.nameMapper".into())
    );
    // What Redisson itself refuses.
    assert_eq!(
        refused(&sample("refused/typo.yaml")),
        (Unknown, "singleServerConfig.adress".into())
    );
    assert_eq!(
        refused(&sample("refused/units.yaml")),
        (BadValue, "lockWatchdogTimeout".into())
    );
    assert_eq!(refused("threads: 4\n"), (NoServers, "<file>".into()));
    let message = RedissonFile::from_yaml_with_env(&sample("truststore.yaml"), |_| None)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("sslTruststore") && message.contains("PEM"),
        "{message}"
    );
}

#[tokio::test]
async fn json_file_of_redisson_3() {
    let server = RedisServer::start_with(&["--requirepass", "pw3"]);
    let vars = env(vec![
        ("REDIS_PORT", server.port.to_string()),
        ("REDIS_PASSWORD", "pw3".into()),
    ]);
    let file = RedissonFile::from_json_with_env(&sample("3.x/single.json"), vars).unwrap();
    assert_eq!(
        file.ignored(),
        [
            "codec",
            "singleServerConfig.retryAttempts",
            "singleServerConfig.retryInterval",
            "singleServerConfig.connectionPoolSize",
        ]
    );
    let config = file.build().unwrap();
    assert_eq!(config.watchdog_timeout(), Duration::from_secs(10));
    assert_eq!(config.redis().database, Some(2));
    let client = Client::connect(config).await.unwrap();
    let lock = client.get_lock("fleet:json");
    lock.lock().await.unwrap();
    let raw = raw_at(&format!("redis://:pw3@127.0.0.1:{}/2", server.port)).await;
    assert!(exists(&raw, "fleet:json").await);
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}
