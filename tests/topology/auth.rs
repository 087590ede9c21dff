//! Authentication beyond a single server: Sentinel whose data nodes and sentinels ask for
//! passwords (the same one, or each its own: Redisson's `sentinelPassword`), given in the
//! URL or to the builder, and never shown when it is wrong; a Redis Cluster with a
//! password.

use crate::support;
use support::cluster::Cluster;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, ConfigBuilder};

/// A primary wanting `data_pass` and a sentinel wanting `sentinel_pass`.
fn sentinel_setup(data_pass: &str, sentinel_pass: &str) -> (RedisServer, SentinelServer) {
    let primary = RedisServer::start_with(&["--requirepass", data_pass]);
    let sentinel =
        SentinelServer::start_with_auth(primary.port, 5_000, Some(data_pass), Some(sentinel_pass));
    (primary, sentinel)
}

async fn raw_with_password(server: &RedisServer, password: &str) -> fred::prelude::Client {
    let config = fred::prelude::Config {
        password: Some(password.to_owned()),
        ..fred::prelude::Config::from_url(&server.url()).unwrap()
    };
    let client = Builder::from_config(config).build().unwrap();
    client.init().await.unwrap();
    client
}

fn quick(config: ConfigBuilder) -> ConfigBuilder {
    config
        .response_timeout(Duration::from_secs(2))
        .reconnect_policy(ReconnectPolicy::new_constant(1, 100))
}

/// Takes a lock through `config` and checks the raw hash on the primary.
async fn lock_through(config: ConfigBuilder, primary: &RedisServer, password: &str) {
    let client = Client::connect(quick(config).build().unwrap())
        .await
        .expect("connect through the sentinel");
    let raw = raw_with_password(primary, password).await;
    take_and_release(&client, &raw, &key("sentinel-auth")).await;
    client.shutdown().await.unwrap();
}

/// Takes and releases `name`, checking the raw hash in between and that nothing is left.
async fn take_and_release(client: &Client, raw: &fred::prelude::Client, name: &str) {
    let lock = client.get_lock(name);
    lock.lock().await.unwrap();
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(hgetall(raw, name).await, vec![(field, "1".to_owned())]);
    lock.unlock().await.unwrap();
    assert!(!exists(raw, name).await);
}

#[tokio::test]
async fn sentinels_with_their_own_password() {
    let (primary, sentinel) = sentinel_setup("data-pass", "sentinel-pass");
    let base = format!("127.0.0.1:{}/0?sentinelServiceName=mymaster", sentinel.port);
    // In the URL, as Redisson's `password` and `sentinelPassword`.
    let url = format!("redis-sentinel://:data-pass@{base}&sentinelPassword=sentinel-pass");
    lock_through(Config::builder().url(url), &primary, "data-pass").await;
    // Given to the builder, the URL without secrets.
    let builder = Config::builder()
        .url(format!("redis-sentinel://{base}"))
        .password("data-pass")
        .sentinel_credentials(None, "sentinel-pass");
    lock_through(builder, &primary, "data-pass").await;

    // A wrong sentinel password fails, and is not shown.
    let wrong = Config::builder()
        .url(format!("redis-sentinel://{base}"))
        .password("data-pass")
        .sentinel_credentials(None, "wrong-sentinel-pass");
    let failed = tokio::time::timeout(
        Duration::from_secs(15),
        Client::connect(quick(wrong).build().unwrap()),
    )
    .await;
    match failed {
        Ok(Ok(_)) => panic!("connected with a wrong sentinel password"),
        Ok(Err(error)) => {
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains("wrong-sentinel-pass"), "{shown}");
        }
        Err(_) => {} // still trying: not connected either
    }
}

#[tokio::test]
async fn sentinels_and_data_nodes_with_one_password() {
    // Without `sentinelPassword` the sentinels get the data nodes' password, as before.
    let (primary, sentinel) = sentinel_setup("shared-pass", "shared-pass");
    let url = format!(
        "redis-sentinel://:shared-pass@127.0.0.1:{}/0?sentinelServiceName=mymaster",
        sentinel.port
    );
    let config = Config::builder().url(&url);
    let shown = format!("{:?}", config.clone().build().unwrap());
    assert!(!shown.contains("shared-pass"), "{shown}");
    lock_through(config, &primary, "shared-pass").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_a_password() {
    let cluster = Cluster::start_with_password(Some("cluster-pass"));
    let raw = cluster.raw().await;
    let url = cluster.url().replacen("://", "://:cluster-pass@", 1);
    for config in [
        Config::builder().url(&url),
        Config::builder()
            .url(cluster.url())
            .password("cluster-pass"),
    ] {
        let client = Client::connect(quick(config).build().unwrap())
            .await
            .expect("connect to the cluster");
        // Names on every node: the client follows the slots with the password.
        for i in 0..6 {
            take_and_release(&client, &raw, &key(&format!("cluster-auth-{i}"))).await;
        }
        client.shutdown().await.unwrap();
    }
    let wrong = Config::builder()
        .url(cluster.url())
        .password("wrong-cluster-pass");
    match Client::connect(quick(wrong).build().unwrap()).await {
        Ok(_) => panic!("connected with a wrong password"),
        Err(error) => {
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains("wrong-cluster-pass"), "{shown}");
        }
    }
}
