//! The Java fleet's own `redisson.yaml` read into working clients (feature
//! `redisson-yaml`): one file per topology (tests/redisson-yaml/), each against real
//! servers, plus the settings refused and the ones listed as ignored.
#![cfg(feature = "redisson-yaml")]

use crate::support;

use std::time::Duration;

use redisson_lock::config::{PublishMode, RedissonFile, RedissonFileError, RedissonTopology};
use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Error};
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
            "transportMode",
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
    assert!(
        file.ignored()
            .contains(&"clusterServersConfig.loadBalancer".to_owned())
    );
    assert!(!file.ignored().contains(&"codec".to_owned()));
    let config = file.build().unwrap();
    assert_eq!(config.codec(), redisson_lock::codec::JavaCodec::Kryo5);
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

fn read_sample(
    name: &str,
    vars: Vec<(&'static str, String)>,
) -> redisson_lock::Result<RedissonFile> {
    let text = sample(name);
    if name.ends_with(".json") {
        RedissonFile::from_json_with_env(&text, env(vars))
    } else {
        RedissonFile::from_yaml_with_env(&text, env(vars))
    }
}

#[tokio::test]
async fn credentials_in_the_address_win_over_the_password_setting() {
    // An ACL user whose password is only in the address; `password` is a wrong one.
    let server = RedisServer::start_with(&[
        "--requirepass",
        "default-pass",
        "--user",
        "app",
        "on",
        ">s3cret",
        "~*",
        "&*",
        "+@all",
    ]);
    let yaml = "singleServerConfig:\n  \
                address: \"redis://app:${REDIS_PASSWORD}@127.0.0.1:${REDIS_PORT}\"\n  \
                password: not-this-one\n";
    let vars = env(vec![
        ("REDIS_PASSWORD", "s3cret".into()),
        ("REDIS_PORT", server.port.to_string()),
    ]);
    let config = RedissonFile::from_yaml_with_env(yaml, vars)
        .unwrap()
        .build()
        .unwrap();
    let redis = config.redis();
    assert_eq!(redis.username.as_deref(), Some("app"));
    assert_eq!(redis.password.as_deref(), Some("s3cret"));
    let redisson_lock::fred::types::config::ServerConfig::Centralized { server: node } =
        &redis.server
    else {
        panic!("{:?}", redis.server)
    };
    assert_eq!(&*node.host, "127.0.0.1", "the host holds no credentials");
    assert!(!format!("{config:?}").contains("s3cret"));
    let client = Client::connect(config).await.unwrap();
    let lock = client.get_lock("fleet:userinfo");
    lock.lock().await.unwrap();
    let raw = raw_at(&format!("redis://app:s3cret@127.0.0.1:{}", server.port)).await;
    assert!(exists(&raw, "fleet:userinfo").await);
    let clients: String = raw
        .custom(redisson_lock::fred::cmd!("CLIENT"), vec!["LIST"])
        .await
        .unwrap();
    assert!(
        clients
            .lines()
            .filter(|l| !l.contains("cmd=client"))
            .all(|l| l.contains("user=app")),
        "{clients}"
    );
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn sentinels_get_the_data_password_without_the_data_user() {
    // Data nodes with an ACL user `app`; a sentinel with a plain requirepass (no user
    // `app`). Redisson authenticates to the sentinel with the password alone.
    let primary = RedisServer::start_with(&[
        "--requirepass",
        "s3cret",
        "--user",
        "app",
        "on",
        ">s3cret",
        "~*",
        "&*",
        "+@all",
    ]);
    let sentinel =
        SentinelServer::start_with_auth(primary.port, 5_000, Some("s3cret"), Some("s3cret"));
    let yaml = "sentinelServersConfig:\n  \
                sentinelAddresses:\n  - \"redis://127.0.0.1:${SENTINEL_PORT}\"\n  \
                masterName: mymaster\n  username: app\n  password: \"${REDIS_PASSWORD}\"\n  \
                checkSentinelsList: false\n";
    let vars = env(vec![
        ("SENTINEL_PORT", sentinel.port.to_string()),
        ("REDIS_PASSWORD", "s3cret".into()),
    ]);
    let config = RedissonFile::from_yaml_with_env(yaml, vars)
        .unwrap()
        .build()
        .unwrap();
    let redisson_lock::fred::types::config::ServerConfig::Sentinel {
        username, password, ..
    } = &config.redis().server
    else {
        panic!()
    };
    assert_eq!(
        (username.as_deref(), password.as_deref()),
        (None, Some("s3cret"))
    );
    let client = tokio::time::timeout(Duration::from_secs(20), Client::connect(config))
        .await
        .expect("connect in time")
        .expect("connect through a requirepass-only sentinel");
    let lock = client.get_lock("fleet:sentinel-acl");
    lock.lock().await.unwrap();
    let raw = raw_at(&format!("redis://app:s3cret@127.0.0.1:{}", primary.port)).await;
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(
        hgetall(&raw, "fleet:sentinel-acl").await,
        vec![(field, "1".into())]
    );
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[test]
fn what_each_redisson_version_writes_with_to_yaml_loads() {
    for version in ["3.23.3", "4.7.0"] {
        for (kind, topology) in [
            ("single", RedissonTopology::SingleServer),
            ("cluster", RedissonTopology::Cluster),
            ("sentinel", RedissonTopology::Sentinel),
        ] {
            let name = format!("toyaml/{kind}-{version}.yaml");
            let file = read_sample(&name, vec![]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(file.topology(), topology, "{name}");
            // 4.7's writes the default credentials resolver and dnsMonitoringTimes.
            if version == "4.7.0" {
                assert!(
                    file.ignored()
                        .iter()
                        .any(|s| s.ends_with(".dnsMonitoringTimes")),
                    "{name}: {:?}",
                    file.ignored()
                );
            }
            let config = file.build().unwrap();
            assert_eq!(config.watchdog_timeout(), Duration::from_secs(20), "{name}");
        }
    }
}

#[test]
fn yaml_1_1_scalars_and_digit_strings_as_redisson_reads_them() {
    let config = read_sample("fleet/yaml11-booleans.yaml", vec![])
        .unwrap()
        .build()
        .unwrap();
    assert!(!config.check_lock_synced_replicas(), "`no`");
    let vars = vec![
        ("REDIS_USER", "0042".to_owned()),
        ("REDIS_PASSWORD", "0099".to_owned()),
    ];
    let config = read_sample("fleet/digit-strings.yaml", vars)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.redis().username.as_deref(), Some("0042"));
    assert_eq!(config.redis().password.as_deref(), Some("0099"));
    let config = read_sample("fleet/yes-no-strings.yaml", vec![])
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.redis().username.as_deref(), Some("on"));
    assert_eq!(config.redis().password.as_deref(), Some("no"));
    // Read as the one version that loads each: 3.x's `09`, 4.x's hex and `1_000`.
    let config = read_sample("fleet/leading-zero-database.yaml", vec![])
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.redis().database, Some(9));
    let config = read_sample("fleet/hex-timeout.yaml", vec![])
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.watchdog_timeout(), Duration::from_millis(8_000));
    assert_eq!(
        config.fair_lock_wait_timeout(),
        Duration::from_millis(1_000)
    );
    // Both load `0100` and disagree (100 ms, octal 64 ms): refused, naming it.
    assert_eq!(
        refused(&sample("unsupported/octal-timeout.yaml")),
        (
            RedissonFileError::Unsupported,
            "singleServerConfig.timeout".into()
        )
    );
    // A merge key: 4.x's reading (3.x refuses `<<`).
    let file = read_sample("fleet/anchors-merge.yaml", vec![]).unwrap();
    assert!(
        file.ignored()
            .contains(&"clusterServersConfig.masterConnectionPoolSize".to_owned())
    );
    let config = file.build().unwrap();
    assert_eq!(
        config.lock_settings().subscription_timeout,
        Duration::from_millis(2_500)
    );
}

#[test]
fn settings_of_both_versions_are_known_and_typos_are_not() {
    // 4.x's cluster tuning and the deprecated natMap (empty) load.
    let file = read_sample("fleet/cluster-4x-tuning.yaml", vec![]).unwrap();
    for setting in [
        "clusterServersConfig.checkMasterLinkStatus",
        "clusterServersConfig.dnsMonitoringTimes",
        "clusterServersConfig.fallbackLoadingToMaster",
    ] {
        assert!(file.ignored().contains(&setting.to_owned()), "{setting}");
    }
    let config = file.build().unwrap();
    assert_eq!(config.publish_mode(), PublishMode::Sharded);
    assert_eq!(config.renewal_batch_size(), 200);
    // A key one version has and a key the other has: neither reads both.
    let Err(Error::RedissonFile { kind, reason, .. }) =
        read_sample("refused/versions-mixed.yaml", vec![])
    else {
        panic!()
    };
    assert_eq!(kind, RedissonFileError::Unknown);
    assert!(reason.contains("3.x") && reason.contains("4.x"), "{reason}");
    // A typo: both refuse, and the message says so truthfully.
    let Err(Error::RedissonFile { reason, .. }) = read_sample("refused/typo.yaml", vec![]) else {
        panic!()
    };
    assert!(reason.contains("not a setting"), "{reason}");
}

#[test]
fn passwords_never_show_in_errors_or_debug() {
    let secret = "hunter22-secret";
    let vars = || vec![("REDIS_PASSWORD", secret.to_owned())];
    let cases = [
        // A password variable pasted where a number belongs.
        "singleServerConfig:\n  address: redis://127.0.0.1:6379\n  timeout: ${REDIS_PASSWORD}\n",
        // An address Redisson cannot connect to (no port), with its password.
        "singleServerConfig:\n  address: \"redis://app:${REDIS_PASSWORD}@127.0.0.1\"\n",
        // A password literally in the file, and a bad value elsewhere quoting it.
        "password: hunter22-secret\nsingleServerConfig:\n  address: redis://h:1\n  \
         clientName: [hunter22-secret]\n",
        // Addresses with different credentials.
        "clusterServersConfig:\n  nodeAddresses:\n  - \"redis://a:${REDIS_PASSWORD}@h:1\"\n  \
         - \"redis://b:other@h:2\"\n",
    ];
    for yaml in cases {
        let error = RedissonFile::from_yaml_with_env(yaml, env(vars())).unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(secret), "{shown}");
    }
    let file = read_sample("fleet/managed-tls-userinfo.yaml", vars()).unwrap();
    assert!(!format!("{file:?}").contains(secret), "{file:?}");
}
