//! A Redis Cluster of three real primaries for the cluster tests, optionally with a
//! password or a replica per primary, and the topology moves a user would make on one:
//! a manual failover and a slot migration.

use std::process::Command;
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;

use super::{RedisServer, command_calls, reset_stats};

/// Three primaries joined by `redis-cli --cluster create` (with a replica each when
/// started by [`Cluster::start_with_replicas`]).
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
        Self::start_nodes(password, 0, "5000")
    }

    /// Three primaries with one replica each, and a 2 s `cluster-node-timeout` (as a team
    /// running failovers would set), so that a manual failover completes quickly.
    pub fn start_with_replicas() -> Cluster {
        Self::start_nodes(None, 1, "2000")
    }

    fn start_nodes(password: Option<&str>, replicas: usize, node_timeout: &str) -> Cluster {
        let mut options = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            node_timeout,
        ];
        if let Some(password) = password {
            options.extend(["--requirepass", password, "--masterauth", password]);
        }
        let nodes: Vec<RedisServer> = (0..3 * (1 + replicas))
            .map(|_| RedisServer::start_with(&options))
            .collect();
        let mut create = Command::new("redis-cli");
        if let Some(password) = password {
            create.args(["--no-auth-warning", "-a", password]);
        }
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        let replicas = replicas.to_string();
        create.args(["--cluster-replicas", &replicas, "--cluster-yes"]);
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
                let ok = String::from_utf8_lossy(&out.stdout).contains("cluster_state:ok");
                // A replica counts once its link to its primary is up (a failover needs it).
                if ok && (self.role(node.port) == "master" || self.replica_linked(node.port)) {
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

    /// Sum of one command's calls over all nodes.
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

    /// `redis-cli` against one node, as text (with the cluster's password).
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let mut cli = Command::new("redis-cli");
        if let Some(password) = &self.password {
            cli.args(["--no-auth-warning", "-a", password]);
        }
        let out = cli
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn role(&self, port: u16) -> String {
        self.cli(port, &["role"])
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    }

    fn replica_linked(&self, port: u16) -> bool {
        self.cli(port, &["info", "replication"])
            .contains("master_link_status:up")
    }

    fn syncing(&self, port: u16) -> bool {
        self.cli(port, &["info", "replication"])
            .contains("master_sync_in_progress:1")
    }

    /// The topology as the node on `port` sees it.
    pub fn topology(&self, port: u16) -> Vec<ClusterNode> {
        self.cli(port, &["cluster", "nodes"])
            .lines()
            .filter_map(ClusterNode::parse)
            .collect()
    }

    /// The port of the primary serving `slot`, as the node on `asked` sees it.
    pub fn owner_seen_by(&self, asked: u16, slot: u16) -> Option<u16> {
        self.topology(asked)
            .into_iter()
            .find(|node| node.primary && node.serves(slot))
            .map(|node| node.port)
    }

    /// The port of the primary serving `slot` (as the first reachable node sees it).
    pub fn owner_of(&self, slot: u16) -> u16 {
        self.nodes
            .iter()
            .find_map(|node| self.owner_seen_by(node.port, slot))
            .expect("a primary serves the slot")
    }

    /// The port of the primary serving `key`'s slot (see [`Cluster::owner_of`]; from an
    /// async test, inside `tokio::task::block_in_place`).
    pub fn owner_of_key(&self, key: &str) -> u16 {
        self.owner_of(redisson_lock::fred::util::redis_keyslot(key.as_bytes()))
    }

    /// The port of a replica of the primary on `primary` (waiting up to 20 s for the
    /// primary to list one: right after a failover, the old primary rejoins as a replica
    /// of the new one a moment later).
    pub fn replica_of(&self, primary: u16) -> u16 {
        let started = Instant::now();
        loop {
            let topology = self.topology(primary);
            let id = &topology
                .iter()
                .find(|node| node.port == primary)
                .expect("the primary knows itself")
                .id;
            let replica = topology
                .iter()
                .find(|node| !node.primary && node.primary_id.as_deref() == Some(id.as_str()))
                .map(|node| node.port);
            match replica {
                Some(port) => return port,
                None if started.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                None => panic!("the primary on {primary} has no replica after 20 s"),
            }
        }
    }

    /// The node id of the node on `port`.
    pub fn id_of(&self, port: u16) -> String {
        self.cli(port, &["cluster", "myid"]).trim().to_string()
    }

    /// Whether every node sees `slot` served by the primary on `port`.
    fn seen_by_all(&self, slot: u16, port: u16) -> bool {
        self.nodes
            .iter()
            .all(|node| self.owner_seen_by(node.port, slot) == Some(port))
    }

    /// Blocks until every node sees `slot` served by the primary on `port`.
    pub fn wait_owner(&self, slot: u16, port: u16, limit: Duration) {
        let started = Instant::now();
        while !self.seen_by_all(slot, port) {
            assert!(
                started.elapsed() < limit,
                "not every node sees slot {slot} on {port} after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `CLUSTER FAILOVER` on the replica on `replica` (a manual failover: its primary
    /// stops, the replica catches up and takes over), then blocks until every node sees
    /// the replica serving `slot` and the old primary reports itself a replica.
    ///
    /// A manual failover the server gives up on (it waits at most 5 s for the replica to
    /// catch up, e.g. when the replica's sync after an earlier failover is still running)
    /// is asked again, up to 20 s in all.
    pub fn failover(&self, replica: u16, old_primary: u16, slot: u16) {
        let started = Instant::now();
        while !self.replica_linked(replica) || self.syncing(replica) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the replica {replica} never finished its sync with {old_primary}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        loop {
            let reply = self.cli(replica, &["cluster", "failover"]);
            assert_eq!(reply.trim(), "OK", "CLUSTER FAILOVER on {replica}: {reply}");
            let asked = Instant::now();
            while asked.elapsed() < Duration::from_secs(6) && !self.seen_by_all(slot, replica) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.seen_by_all(slot, replica) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "not every node sees slot {slot} on {replica} after 20 s of CLUSTER FAILOVER"
            );
        }
        let started = Instant::now();
        while self.role(old_primary) != "slave" {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the old primary {old_primary} never became a replica"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Moves `slot` from the primary on `from` to the primary on `to` the way
    /// `redis-cli --cluster reshard` does: `SETSLOT IMPORTING` / `MIGRATING`, `MIGRATE`
    /// of its keys, then `SETSLOT NODE` on the target, the source and the others. Blocks
    /// until every node sees the new owner.
    pub fn migrate_slot(&self, slot: u16, from: u16, to: u16) {
        let (from_id, to_id) = (self.id_of(from), self.id_of(to));
        let slot_text = slot.to_string();
        let ok = |port: u16, args: &[&str]| {
            let reply = self.cli(port, args);
            assert_eq!(reply.trim(), "OK", "{args:?} on {port}: {reply}");
        };
        ok(
            to,
            &["cluster", "setslot", &slot_text, "importing", &from_id],
        );
        ok(
            from,
            &["cluster", "setslot", &slot_text, "migrating", &to_id],
        );
        loop {
            let keys: Vec<String> = self
                .cli(from, &["cluster", "getkeysinslot", &slot_text, "100"])
                .lines()
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect();
            if keys.is_empty() {
                break;
            }
            let to_port = to.to_string();
            let mut args = vec!["migrate", "127.0.0.1", &to_port, "", "0", "5000"];
            if let Some(password) = &self.password {
                args.extend(["auth", password]);
            }
            args.push("keys");
            args.extend(keys.iter().map(String::as_str));
            ok(from, &args);
        }
        ok(to, &["cluster", "setslot", &slot_text, "node", &to_id]);
        ok(from, &["cluster", "setslot", &slot_text, "node", &to_id]);
        for node in &self.nodes {
            if node.port != to && node.port != from && self.role(node.port) == "master" {
                ok(
                    node.port,
                    &["cluster", "setslot", &slot_text, "node", &to_id],
                );
            }
        }
        self.wait_owner(slot, to, Duration::from_secs(20));
    }
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub id: String,
    pub port: u16,
    pub primary: bool,
    /// A replica's primary.
    pub primary_id: Option<String>,
    /// Slot ranges served (inclusive), without the migrating/importing markers.
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    fn parse(line: &str) -> Option<ClusterNode> {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.len() < 8 {
            return None;
        }
        let address = fields[1].split('@').next()?;
        let port = address.rsplit(':').next()?.parse().ok()?;
        let flags = fields[2];
        if flags.contains("fail") && !flags.contains("fail?") {
            return None;
        }
        let slots = fields[8..]
            .iter()
            .filter(|range| !range.starts_with('['))
            .filter_map(|range| {
                let mut bounds = range.split('-');
                let lo: u16 = bounds.next()?.parse().ok()?;
                let hi: u16 = bounds.next().map_or(Some(lo), |b| b.parse().ok())?;
                Some((lo, hi))
            })
            .collect();
        Some(ClusterNode {
            id: fields[0].to_string(),
            port,
            primary: flags.contains("master"),
            primary_id: (fields[3] != "-").then(|| fields[3].to_string()),
            slots,
        })
    }

    pub fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }
}

/// `PUBSUB SHARDNUMSUB channel` on the node on `port` alone.
pub async fn shard_subscribers(port: u16, channel: &str) -> i64 {
    let raw = RedisServer::raw_at(port).await;
    let reply: Vec<redisson_lock::fred::types::Value> = raw
        .custom(
            redisson_lock::fred::cmd!("PUBSUB"),
            vec!["SHARDNUMSUB", channel],
        )
        .await
        .unwrap();
    let _ = raw.quit().await;
    reply[1].as_i64().unwrap()
}
