//! [`ReplicaSync`]: Redisson's "synced eval" (`checkLockSyncedSlaves`, docs/protocol.md
//! §3.5 and §24.3): a script that changes a lock or a synchronizer's count is followed by
//! `WAIT <replicas> <timeout>`.
//!
//! Invariants:
//! * Nothing is waited for on a single-server configuration, or with the check off
//!   (Redisson HEAD skips single-server setups too); nor on a primary that reported no
//!   replicas.
//! * The `WAIT` goes to the script's node, on the same connection, right behind the script
//!   in the same pipeline: both commands are handed to fred together (script first), so a
//!   synced script costs no round trip of its own. `WAIT` counts the replicas that have
//!   every write of that connection, the script's included.
//! * The replica count is learned per primary from `INFO replication` the first time a
//!   node is used, and cached. It counts the replicas `WAIT` can count: those online
//!   (`slave<n>:...,state=online`), not `connected_slaves`, which includes a replica
//!   still in its full sync (right after a Sentinel failover, the demoted primary): a
//!   `WAIT` for it answers 0 until the sync ends, where Redisson 4.x, which keeps the 0
//!   it read before the replica attached, sends no `WAIT` at all. It is read again in
//!   the background when `WAIT` answers a different count, and forgotten (read again
//!   before the next script) after a reconnect or a cluster change, when the primary may
//!   be another server with other replicas. A count read before a Sentinel switch
//!   ([`PrimarySwitch`]) is never used after it: the gate opens as soon as the connection
//!   is on the new primary, possibly before the reconnect event reaches this cache, and a
//!   `WAIT` for the old primary's replicas would block the new one's connection for the
//!   whole sync timeout. A count of zero is read again (in the
//!   background) once it is a second old, since no `WAIT` answer would reveal a replica
//!   that joined later.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fred::prelude::{ClientLike, ClusterInterface, EventInterface, Options, Value};
use fred::types::cluster::ClusterRouting;
use fred::types::{ClusterHash, CustomCommand};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::Config;
use crate::connection::primary_switch::PrimarySwitch;

/// How long a count of zero replicas is trusted before it is read again (in the
/// background).
const ZERO_RECHECK: Duration = Duration::from_secs(1);

/// The cache key of a non-cluster primary (Sentinel: there is one at a time).
const PRIMARY: &str = "primary";

/// What the replicas said about one script.
#[derive(Debug)]
pub(crate) enum Synced {
    /// No `WAIT` was sent (single server, check off, or no replicas).
    Unchecked,
    /// At least one replica acknowledged.
    Acked,
    /// None of the primary's `replicas` acknowledged within the timeout.
    NoneAcked { replicas: u32 },
    /// The `WAIT` itself failed (the connection dropped after the script's reply).
    Failed(fred::error::Error),
}

impl Synced {
    /// Logs a write that no replica acknowledged: it did happen on the primary, and
    /// failing it would tell the caller something it did not (Redisson throws after
    /// applying it and re-runs some writes, docs/protocol.md §24.4; see
    /// `docs/reliability.md`). `object` is the kind of thing written (`"lock"`,
    /// `"semaphore"`), `name` its name.
    pub(crate) fn log_unsynced(&self, object: &'static str, name: &str, operation: &str) {
        match self {
            Synced::NoneAcked { replicas } => tracing::warn!(
                object,
                name,
                operation,
                replicas,
                "None of slaves were synced: the primary applied it, no replica acknowledged it"
            ),
            Synced::Failed(error) => tracing::warn!(
                object,
                name,
                operation,
                %error,
                "WAIT for the replicas failed: the primary applied it"
            ),
            Synced::Unchecked | Synced::Acked => {}
        }
    }
}

/// A `WAIT` to send behind a script.
#[derive(Debug, Clone)]
pub(crate) struct WaitFor {
    node: String,
    replicas: u32,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct ReplicaSync {
    enabled: bool,
    clustered: bool,
    timeout: Duration,
    response_timeout: Duration,
    nodes: Mutex<Nodes>,
    switch: Arc<PrimarySwitch>,
}

#[derive(Debug, Default)]
struct Nodes {
    /// The cluster's slot map, as fred last knew it (cluster only).
    routing: Option<ClusterRouting>,
    /// Replica count per primary, when it was read, and the Sentinel switch epoch it was
    /// read in.
    counts: HashMap<String, (u32, Instant, u64)>,
    /// Primaries whose count is being read again in the background.
    refreshing: HashSet<String>,
}

impl ReplicaSync {
    pub(crate) fn new(config: &Config, switch: Arc<PrimarySwitch>) -> ReplicaSync {
        ReplicaSync {
            enabled: config.waits_for_replicas(),
            clustered: config.redis.server.is_clustered(),
            timeout: config.settings.replicas_sync_timeout,
            response_timeout: config.settings.response_timeout,
            nodes: Mutex::default(),
            switch,
        }
    }

    fn nodes(&self) -> MutexGuard<'_, Nodes> {
        // Every critical section is one map operation: a poisoned lock is consistent.
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long a `WAIT` may block its connection.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The primary that serves `slot`.
    fn node(&self, client: &fred::prelude::Client, slot: u16) -> String {
        if !self.clustered {
            return PRIMARY.to_owned();
        }
        let mut nodes = self.nodes();
        if nodes.routing.is_none() {
            nodes.routing = client.cached_cluster_state();
        }
        match nodes.routing.as_ref().and_then(|r| r.get_server(slot)) {
            Some(server) => server.to_string(),
            None => format!("slot {slot}"),
        }
    }

    /// The `WAIT` to send behind a script in `slot`, if any. Reads the node's replica
    /// count first when it is not known (once per node, and after a reconnect).
    pub(crate) async fn wait_for(
        self: &Arc<Self>,
        client: &fred::prelude::Client,
        slot: u16,
    ) -> Option<WaitFor> {
        if !self.enabled {
            return None;
        }
        let node = self.node(client, slot);
        let epoch = self.switch.epoch();
        let replicas = match self.cached(&node, epoch) {
            Some((0, read_at)) if read_at.elapsed() >= ZERO_RECHECK => {
                // No WAIT answers for a node without replicas, so nothing would tell us
                // that one joined (a new primary's replicas attach after its promotion).
                self.refresh_later(client, slot, &node);
                0
            }
            Some((count, _)) => count,
            None => {
                let count = read_replica_count(client, slot, self.response_timeout).await?;
                self.learned(&node, count, epoch);
                tracing::debug!(%node, replicas = count, "replica count learned");
                count
            }
        };
        (replicas > 0).then_some(WaitFor { node, replicas })
    }

    /// `node`'s cached count and when it was read, unless it was read before switch
    /// `epoch` (the old primary's replicas).
    fn cached(&self, node: &str, epoch: u64) -> Option<(u32, Instant)> {
        self.nodes()
            .counts
            .get(node)
            .filter(|(_, _, read_in)| *read_in == epoch)
            .map(|(count, read_at, _)| (*count, *read_at))
    }

    /// Caches `node`'s `count`, read in switch `epoch`; a count read across a switch, or
    /// while the client moves to a new primary (possibly still on the old one), is dropped
    /// (the next script reads it again).
    fn learned(&self, node: &str, count: u32, epoch: u64) {
        let mut nodes = self.nodes();
        if self.switch.epoch() == epoch && !self.switch.is_moving() {
            nodes
                .counts
                .insert(node.to_owned(), (count, Instant::now(), epoch));
        } else {
            nodes.counts.remove(node);
        }
    }

    /// The `WAIT` command for `wait`, routed to `slot`'s node.
    pub(crate) fn wait_command(&self, slot: u16, wait: &WaitFor) -> (CustomCommand, Vec<Value>) {
        let command = CustomCommand::new_static("WAIT", ClusterHash::Custom(slot), false);
        let timeout_ms = self.timeout.as_millis().clamp(1, i64::MAX as u128) as i64;
        (
            command,
            vec![
                Value::from(i64::from(wait.replicas)),
                Value::from(timeout_ms),
            ],
        )
    }

    /// Reads `WAIT`'s answer. A count other than the cached one has the node's count read
    /// again in the background.
    pub(crate) fn answered(
        self: &Arc<Self>,
        client: &fred::prelude::Client,
        slot: u16,
        wait: &WaitFor,
        reply: Result<Value, fred::error::Error>,
    ) -> Synced {
        let acked = match reply {
            Ok(Value::Integer(n)) => n.clamp(0, i64::from(u32::MAX)) as u32,
            Ok(other) => {
                return Synced::Failed(fred::error::Error::new(
                    fred::error::ErrorKind::Unknown,
                    format!("unexpected WAIT reply {other:?}"),
                ));
            }
            Err(error) => return Synced::Failed(error),
        };
        if acked != wait.replicas {
            self.refresh_later(client, slot, &wait.node);
        }
        if acked == 0 {
            Synced::NoneAcked {
                replicas: wait.replicas,
            }
        } else {
            Synced::Acked
        }
    }

    /// Reads `node`'s replica count again in the background (at most one read per node at
    /// a time); the cached count serves until it answers.
    fn refresh_later(self: &Arc<Self>, client: &fred::prelude::Client, slot: u16, node: &str) {
        // While moving to a new primary the read could reach the old one; the first
        // script after the move reads the count anyway.
        if self.switch.is_moving() || !self.nodes().refreshing.insert(node.to_owned()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.nodes().refreshing.remove(node);
            return;
        };
        let this = self.clone();
        let client = client.clone();
        let node = node.to_owned();
        runtime.spawn(async move {
            let epoch = this.switch.epoch();
            let count = read_replica_count(&client, slot, this.response_timeout).await;
            this.nodes().refreshing.remove(&node);
            match count {
                Some(count) => {
                    tracing::debug!(%node, replicas = count, "replica count read again");
                    this.learned(&node, count, epoch);
                }
                // Unreadable: ask again before the next script.
                None => {
                    this.nodes().counts.remove(&node);
                }
            }
        });
    }

    /// Forgets every primary's replica count and the slot map.
    pub(crate) fn forget(&self) {
        let mut nodes = self.nodes();
        nodes.routing = None;
        nodes.counts.clear();
    }

    /// Forgets what it knows after every reconnect and cluster change, until `shutdown`.
    pub(crate) async fn watch(
        self: Arc<Self>,
        client: fred::prelude::Client,
        mut shutdown: watch::Receiver<bool>,
    ) {
        if !self.enabled {
            return;
        }
        let mut reconnects = client.reconnect_rx();
        let mut changes = client.cluster_change_rx();
        drop(client);
        loop {
            tokio::select! {
                event = reconnects.recv() => {
                    if matches!(event, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        return;
                    }
                    tracing::debug!("reconnected: replica counts forgotten");
                    self.forget();
                }
                event = changes.recv() => {
                    if matches!(event, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        return;
                    }
                    self.forget();
                }
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// `INFO replication` on `slot`'s node: its online replicas. `None` when it could not
/// be read (then no `WAIT` is sent this time; the next script asks again).
async fn read_replica_count(
    client: &fred::prelude::Client,
    slot: u16,
    timeout: Duration,
) -> Option<u32> {
    let options = Options {
        timeout: Some(timeout),
        ..Options::default()
    };
    let info = CustomCommand::new_static("INFO", ClusterHash::Custom(slot), false);
    match client
        .with_options(&options)
        .custom::<String, Value>(info, vec![Value::from("replication")])
        .await
    {
        Ok(text) => Some(replica_count(&text)),
        Err(error) => {
            tracing::warn!(%error, "cannot read the replica count; this script is not synced");
            None
        }
    }
}

/// The replicas of an `INFO replication` text that `WAIT` can count: those whose
/// `slave<n>:` line says `state=online`. A replica still in its full sync (`wait_bgsave`,
/// `send_bulk`) is in `connected_slaves` but acknowledges nothing until it is online.
fn replica_count(info: &str) -> u32 {
    info.lines()
        .filter(|line| {
            let line = line.trim();
            line.strip_prefix("slave")
                .and_then(|rest| rest.split_once(':'))
                .is_some_and(|(n, fields)| {
                    n.bytes().all(|b| b.is_ascii_digit())
                        && fields.split(',').any(|field| field == "state=online")
                })
        })
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_connected_slaves() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
                    slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n\
                    slave1:ip=127.0.0.1,port=7002,state=online,offset=42,lag=1\r\n";
        assert_eq!(replica_count(info), 2);
        assert_eq!(replica_count("role:slave\r\n"), 0);
    }

    #[test]
    fn a_count_read_before_a_switch_is_not_used_after_it() {
        let config =
            Config::from_url("redis-sentinel://127.0.0.1:26379/0?sentinelServiceName=mymaster")
                .unwrap();
        let switch = Arc::new(PrimarySwitch::default());
        let sync = ReplicaSync::new(&config, switch.clone());
        sync.learned(PRIMARY, 1, 0);
        assert_eq!(sync.cached(PRIMARY, 0).map(|(n, _)| n), Some(1));
        let epoch = switch.announce("127.0.0.1:7001").unwrap();
        assert_eq!(sync.cached(PRIMARY, epoch), None);
        // Read while moving (perhaps on the old primary): dropped.
        sync.learned(PRIMARY, 1, epoch);
        assert_eq!(sync.cached(PRIMARY, epoch), None);
        switch.arrive(epoch);
        // Read before the switch, answered after it: dropped.
        sync.learned(PRIMARY, 1, 0);
        assert_eq!(sync.cached(PRIMARY, epoch), None);
        sync.learned(PRIMARY, 0, epoch);
        assert_eq!(sync.cached(PRIMARY, epoch).map(|(n, _)| n), Some(0));
    }

    #[test]
    fn a_replica_in_its_full_sync_is_not_counted() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
                    slave0:ip=127.0.0.1,port=7001,state=wait_bgsave,offset=0,lag=0\r\n\
                    slave1:ip=127.0.0.1,port=7002,state=online,offset=42,lag=0\r\n\
                    master_failover_state:no-failover\r\n";
        assert_eq!(replica_count(info), 1);
    }
}
