//! A Redis Cluster of three real primaries for the cluster tests, optionally with a
//! password.

use std::process::Command;
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;

use super::{command_calls, reset_stats, RedisServer};

/// Three primaries (no replicas) joined by `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<RedisServer>,
    /// The nodes' `requirepass` (and `masterauth`), if any.
    password: Option<String>,
}

impl Cluster {
    pub fn start() -> Cluster {
        Self::start_with_password(None)
    }

    /// A cluster whose nodes ask for `password` (clients and each other).
    pub fn start_with_password(password: Option<&str>) -> Cluster {
        let mut options = vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"];
        if let Some(password) = password {
            options.extend(["--requirepass", password, "--masterauth", password]);
        }
        let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::start_with(&options)).collect();
        let mut create = Command::new("redis-cli");
        if let Some(password) = password {
            create.args(["--no-auth-warning", "-a", password]);
        }
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = create
            .output()
            .expect("redis-cli is needed for cluster tests (apt-get install -y redis-tools)");
        assert!(out.status.success(), "cluster create failed: {out:?}");
        let cluster = Cluster {
            nodes,
            password: password.map(str::to_owned),
        };
        cluster.wait_ok();
        cluster
    }

    fn wait_ok(&self) {
        let started = Instant::now();
        for node in &self.nodes {
            loop {
                let mut info = Command::new("redis-cli");
                if let Some(password) = &self.password {
                    info.args(["--no-auth-warning", "-a", password]);
                }
                let out = info
                    .args(["-p", &node.port.to_string(), "cluster", "info"])
                    .output()
                    .expect("redis-cli");
                if String::from_utf8_lossy(&out.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "cluster never became ok"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    pub fn url(&self) -> String {
        let first = self.nodes[0].port;
        let rest: Vec<String> = self.nodes[1..]
            .iter()
            .map(|n| format!("node=127.0.0.1:{}", n.port))
            .collect();
        format!("redis-cluster://127.0.0.1:{first}?{}", rest.join("&"))
    }

    /// Sum of one command's calls over all primaries.
    pub async fn calls(&self, command: &str) -> u64 {
        let mut total = 0;
        for node in &self.nodes {
            let raw = node.raw().await;
            total += command_calls(&raw, command).await;
            let _ = raw.quit().await;
        }
        total
    }

    pub async fn reset_stats(&self) {
        for node in &self.nodes {
            let raw = node.raw().await;
            reset_stats(&raw).await;
            let _ = raw.quit().await;
        }
    }

    pub async fn raw(&self) -> redisson_lock::fred::prelude::Client {
        let mut config = redisson_lock::fred::prelude::Config::from_url(&self.url()).unwrap();
        config.password.clone_from(&self.password);
        let client = Builder::from_config(config).build().unwrap();
        client.init().await.unwrap();
        client
    }
}
