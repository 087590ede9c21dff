//! The listener: the connection Redis sends invalidations to, and the set-up that makes
//! it do so.
//!
//! On every server the client's command connection holds keys on (the one server; the
//! primary under Sentinel; every primary of a cluster), the listener's connection to that
//! server subscribes to `__redis__:invalidate`, and the command connection runs
//! `CLIENT TRACKING ON REDIRECT <listener's id> NOLOOP`: from then on Redis remembers
//! every key the command connection *reads* (`EXISTS`, `EVALSHA_RO`; not a plain
//! `EVALSHA`, which is a write command) and, when anyone else changes one, or the server
//! expires, evicts or flushes it, publishes its name to the listener, once. The
//! connection's own writes (`NOLOOP`) are not announced: they make Redis forget the key,
//! and the tracker reads it again (see [`super::tracker`]).
//!
//! Set up again (and every hold checked, since what was tracked is gone) whenever either
//! connection is made again (a reconnect, a Sentinel failover) or the cluster's map
//! changes. A server or user that refuses `CLIENT TRACKING` or `EVALSHA_RO` turns it off
//! for the client's life, said once in the log and in the `redisson_lock_key_tracking_total`
//! metric: holders then hear of others' changes at the next renewal, as before.

use std::sync::Arc;

use fred::bytes::Bytes;
use fred::error::{Error as FredError, ErrorKind};
use fred::interfaces::ClientInterface;
use fred::prelude::{ClientLike, ClusterInterface, EventInterface, PubsubInterface, Server, Value};
use fred::types::{ClusterHash, CustomCommand};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use crate::connection::redis::Redis;
use crate::connection::retry;
use crate::engine::hold::registry::HoldRegistry;

/// The channel Redis publishes a RESP2 client's invalidations on.
pub(crate) const INVALIDATIONS: &str = "__redis__:invalidate";

/// Why a set-up did not finish.
#[derive(Debug)]
enum SetUpError {
    /// The server or the user refused a command: tracking stays off.
    Refused(FredError),
    /// A connection error: tried again.
    Failed(FredError),
}

impl From<FredError> for SetUpError {
    /// A refusal only when the server says so (an ACL's `NOPERM`, a command it does not
    /// know); anything else (a dropped or paused connection, a loading server) is tried
    /// again.
    fn from(error: FredError) -> Self {
        let details = error.details().to_ascii_uppercase();
        let refused = ["NOPERM", "UNKNOWN COMMAND", "UNKNOWN SUBCOMMAND", "NOAUTH"];
        if refused.iter().any(|word| details.contains(word)) {
            SetUpError::Refused(error)
        } else {
            SetUpError::Failed(error)
        }
    }
}

/// The listener's task (spawned by the client): connects `listener`, sets tracking up on
/// `redis`'s connections, and hands what Redis invalidates to the registry's tracker until
/// `shutdown` changes.
pub(crate) async fn run(
    listener: fred::prelude::Client,
    redis: Redis,
    registry: Arc<HoldRegistry>,
    clustered: bool,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut messages = listener.message_rx();
    let mut redis_back = redis.client().reconnect_rx();
    let mut map_changed = redis.client().cluster_change_rx();
    if let Err(error) = listener.init().await {
        tracing::warn!(%error, "key tracking: the listener cannot connect; holders hear of other clients' changes at the next renewal");
        return;
    }
    // After its first connection (whose event would only repeat the first set-up).
    let mut listener_back = listener.reconnect_rx();
    let mut due = true;
    let mut pauses = retry::TRACKING_SET_UP_AGAIN.pauses();
    loop {
        if due {
            due = false;
            match set_up(&listener, &redis, clustered).await {
                Ok(servers) => {
                    tracing::debug!(servers, "key tracking on");
                    crate::engine::telemetry::key_tracking(true);
                    registry.tracking.set_on(true);
                    // What was tracked before (if anything) is gone: every hold is read
                    // (and so tracked) again, and checked.
                    registry.tracking.check_everything();
                }
                Err(SetUpError::Refused(error)) => {
                    tracing::warn!(%error, "key tracking refused by the server (CLIENT TRACKING or EVALSHA_RO): holders hear of other clients' changes to their locks at the next renewal only");
                    crate::engine::telemetry::key_tracking(false);
                    registry.tracking.set_on(false);
                    let _ = listener.quit().await;
                    return;
                }
                Err(SetUpError::Failed(error)) => {
                    tracing::debug!(%error, "key tracking set-up failed; trying again");
                    if error.details().contains("redirect to does not exist") {
                        // The command connection moved (a Sentinel failover the client
                        // followed at once) and the listener is still on the old primary:
                        // it asks the sentinels again.
                        let _ = listener.force_reconnection().await;
                    }
                    due = true;
                }
            }
        }
        let retry = async {
            if due {
                tokio::time::sleep(pauses.next()).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            message = messages.recv() => match message {
                Ok(message) if message.channel == INVALIDATIONS => {
                    let keys = invalidated_keys(message.value);
                    registry.tracking.waited.changed(keys.as_deref());
                    registry.tracking.invalidated(keys);
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {
                    registry.tracking.waited.changed(None);
                    registry.tracking.check_everything();
                }
                Err(RecvError::Closed) => return,
            },
            event = listener_back.recv() => due |= !matches!(event, Err(RecvError::Closed)),
            event = redis_back.recv() => due |= !matches!(event, Err(RecvError::Closed)),
            event = map_changed.recv() => due |= clustered && added_a_node(event),
            () = retry => {}
            _ = shutdown.changed() => {
                let _ = listener.quit().await;
                return;
            }
        }
    }
}

/// Whether a cluster change brought a primary the set-up has not seen (a slot moving
/// between known nodes changes nothing of the tracking, which is per connection).
fn added_a_node(event: Result<Vec<fred::types::ClusterStateChange>, RecvError>) -> bool {
    match event {
        Ok(changes) => changes
            .iter()
            .any(|c| matches!(c, fred::types::ClusterStateChange::Add(_))),
        Err(RecvError::Lagged(_)) => true,
        Err(RecvError::Closed) => false,
    }
}

/// The keys of one invalidation message; `None`: every key (Redis sends a null on
/// `FLUSHALL` / `FLUSHDB`).
fn invalidated_keys(value: Value) -> Option<Vec<Bytes>> {
    match value {
        Value::Array(keys) => Some(
            keys.into_iter()
                .filter_map(|key| match key {
                    Value::Bytes(bytes) => Some(bytes),
                    Value::String(text) => Some(text.into_inner()),
                    _ => None,
                })
                .collect(),
        ),
        Value::Bytes(bytes) => Some(vec![bytes]),
        Value::String(text) => Some(vec![text.into_inner()]),
        _ => None,
    }
}

/// Sets tracking up on every server; how many.
async fn set_up(
    listener: &fred::prelude::Client,
    redis: &Redis,
    clustered: bool,
) -> Result<usize, SetUpError> {
    if !clustered {
        listener.subscribe(INVALIDATIONS).await?;
        let id = listener_id(listener, None)?;
        track(redis, None, id).await?;
        return Ok(1);
    }
    let servers = redis
        .client()
        .cached_cluster_state()
        .map(|state| state.unique_primary_nodes())
        .unwrap_or_default();
    for server in &servers {
        listener
            .with_cluster_node(server.clone())
            .subscribe(INVALIDATIONS)
            .await?;
        let id = listener_id(listener, Some(server))?;
        track(redis, Some(server), id).await?;
    }
    Ok(servers.len())
}

/// The `CLIENT ID` of the listener's connection to `server` (the one server: `None`), as
/// fred read it when it connected.
fn listener_id(
    listener: &fred::prelude::Client,
    server: Option<&Server>,
) -> Result<i64, FredError> {
    let ids = listener.connection_ids();
    let id = match server {
        Some(server) => ids.get(server).copied(),
        None => ids.values().next().copied(),
    };
    id.ok_or_else(|| {
        FredError::new(
            ErrorKind::NotFound,
            "the listener's connection id is not known yet",
        )
    })
}

/// `CLIENT TRACKING ON REDIRECT <id> NOLOOP` on the command connection to `server`, and a
/// probe that `EVALSHA_RO` (the tracker's check) is there.
async fn track(redis: &Redis, server: Option<&Server>, id: i64) -> Result<(), FredError> {
    let tracking = CustomCommand::new_static("CLIENT", ClusterHash::Random, false);
    let probe = CustomCommand::new_static("EVAL_RO", ClusterHash::Random, false);
    let args = vec![
        Value::from("TRACKING"),
        Value::from("ON"),
        Value::from("REDIRECT"),
        Value::from(id),
        Value::from("NOLOOP"),
    ];
    let on = |client: &fred::prelude::Client| {
        let (tracking, probe, args, server) = (
            tracking.clone(),
            probe.clone(),
            args.clone(),
            server.cloned(),
        );
        let client = client.clone();
        async move {
            match server {
                Some(server) => {
                    let node = client.with_cluster_node(server);
                    node.custom::<Value, _>(tracking, args).await?;
                    node.custom::<Value, _>(probe, vec!["return 0", "0"]).await
                }
                None => {
                    client.custom::<Value, _>(tracking, args).await?;
                    client
                        .custom::<Value, _>(probe, vec!["return 0", "0"])
                        .await
                }
            }
        }
    };
    redis.query(on).await.map(|_| ())
}
