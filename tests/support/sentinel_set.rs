//! A Sentinel set as Redisson accepts it: a primary, a linked replica, and three
//! sentinels (quorum 2) that already know each other and the replica. (Redisson's
//! `checkSentinelsList` refuses to start when a sentinel knows fewer than two others.)

use std::time::{Duration, Instant};

use super::{RedisServer, SentinelServer, redis_cli, wait_replica_linked};

/// A primary, one replica and three sentinels watching `mymaster`; all stopped on drop.
pub struct SentinelSet {
    pub primary: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<SentinelServer>,
}

impl SentinelSet {
    /// Starts the set with `down_after_ms` failure detection and waits until every
    /// sentinel knows the replica and the two other sentinels.
    pub fn start(down_after_ms: u64) -> SentinelSet {
        let primary = RedisServer::start();
        let replica = RedisServer::start_replica_of(&primary);
        wait_replica_linked(replica.port, Duration::from_secs(20));
        let sentinels: Vec<SentinelServer> = (0..3)
            .map(|_| SentinelServer::start_quorum(primary.port, down_after_ms, 2))
            .collect();
        let set = SentinelSet {
            primary,
            replica,
            sentinels,
        };
        let replica_port = set.replica.port.to_string();
        let started = Instant::now();
        for sentinel in &set.sentinels {
            loop {
                let peers = redis_cli(sentinel.port, &["sentinel", "sentinels", "mymaster"])
                    .lines()
                    .filter(|l| l.trim() == "name")
                    .count();
                let replicas = redis_cli(sentinel.port, &["sentinel", "replicas", "mymaster"]);
                if peers >= 2 && replicas.contains(&replica_port) {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the sentinels never discovered each other and the replica"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        set
    }

    /// The set's URL, every sentinel named (the crate's and the Java driver's form).
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.sentinels[1..]
            .iter()
            .map(|s| format!("&node=127.0.0.1:{}", s.port))
            .collect();
        format!(
            "redis-sentinel://127.0.0.1:{}/0?sentinelServiceName=mymaster{}",
            self.sentinels[0].port,
            nodes.concat()
        )
    }

    /// The port of the primary the first sentinel names now.
    pub fn master_port(&self) -> Option<u16> {
        self.sentinels[0].master_port()
    }
}
