//! The Sentinel failover watch: with a `redis-sentinel://` configuration, one pub/sub
//! connection per sentinel listens for `+switch-master` of the client's service.
//!
//! Why: during a failover the promoted replica is the primary (others who ask a sentinel
//! are sent there) while the old primary still accepts this client's renewals until the
//! sentinels demote it, seconds later. Renewals sent there no longer reach the new
//! primary, where the lock's key expires. Waiting for the demotion's `CLIENT KILL` tells
//! holders too late; `+switch-master` comes first. On it, at once:
//! * every hold is at risk, and stays so until checked on the new primary (a check on the
//!   old one would find the hold there and prove nothing);
//! * the [`PrimarySwitch`] gate closes: no acquire, renewal or release is sent until the
//!   data connection is on the announced primary, and a command in flight on the old
//!   connection has an unknown outcome, settled on the new primary like a lost reply;
//! * both connections (commands, subscriptions) are made again through fred's sentinel
//!   support (`force_reconnection`), until fred lands on the announced primary: a
//!   sentinel that has not heard of the switch yet still names the old one, which still
//!   answers `ROLE` as a master, so a landing elsewhere is retried. On arrival the gate
//!   opens and the sentry checks (and the watchdog renews) the holds there at once.
//!
//! Every sentinel announces the same switch: only the first announcement of a primary
//! acts. Invariants: a sentinel that cannot be reached is retried by fred's reconnect
//! policy; subscriptions are renewed after each reconnection; the tasks end with the
//! client.

use std::sync::Arc;

use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::prelude::{Builder, ServerConfig};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::Config;
use crate::connection::primary_switch::PrimarySwitch;
use crate::connection::retry;
use crate::engine::hold::registry::HoldRegistry;
use crate::engine::hold::state::Cause;

/// The client's two connections, which a switch moves to the new primary.
#[derive(Clone)]
pub(crate) struct Connections {
    pub(crate) redis: fred::prelude::Client,
    pub(crate) subscriber: fred::prelude::Client,
    pub(crate) switch: Arc<PrimarySwitch>,
    /// The client's id, named in the log lines (several clients in one process each
    /// hear the switch on their own).
    pub(crate) client_id: Arc<str>,
}

/// The channel sentinels announce a completed failover on.
const SWITCH_MASTER: &str = "+switch-master";

/// Starts the watch when `config` goes through sentinels; does nothing otherwise.
pub(crate) fn start(
    config: &Config,
    registry: Arc<HoldRegistry>,
    connections: Connections,
    shutdown: watch::Receiver<bool>,
) {
    let ServerConfig::Sentinel {
        hosts,
        service_name,
        username,
        password,
    } = &config.redis.server
    else {
        return;
    };
    tracing::debug!(sentinels = hosts.len(), service = %service_name, "watching sentinels for failovers");
    for host in hosts {
        let mut sentinel = config.redis.clone();
        sentinel.server = ServerConfig::Centralized {
            server: host.clone(),
        };
        // Sentinels have no databases: `SELECT` would fail the connection.
        sentinel.database = None;
        sentinel.username.clone_from(username);
        sentinel.password.clone_from(password);
        let Ok(client) = Builder::from_config(sentinel)
            .set_policy(config.reconnect.clone())
            .build()
        else {
            tracing::warn!(sentinel = %host, "cannot watch this sentinel for failovers");
            continue;
        };
        tokio::spawn(watch_one(
            client,
            service_name.clone(),
            registry.clone(),
            connections.clone(),
            shutdown.clone(),
        ));
    }
}

async fn watch_one(
    sentinel: fred::prelude::Client,
    service: String,
    registry: Arc<HoldRegistry>,
    connections: Connections,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut messages = sentinel.message_rx();
    let mut reconnects = sentinel.reconnect_rx();
    let connection = sentinel.connect();
    let subscribe = |sentinel: fred::prelude::Client| async move {
        match sentinel.subscribe(SWITCH_MASTER).await {
            Ok(()) => tracing::debug!("watching the sentinel for failovers"),
            Err(error) => {
                tracing::debug!(%error, "cannot subscribe to +switch-master; retrying at the next reconnection")
            }
        }
    };
    tokio::select! {
        _ = shutdown.changed() => {
            connection.abort();
            return;
        }
        connected = sentinel.wait_for_connect() => {
            if let Err(error) = &connected {
                tracing::debug!(%error, "cannot reach a sentinel yet; fred retries");
            }
            if connected.is_ok() {
                subscribe(sentinel.clone()).await;
            }
        }
    }
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            event = reconnects.recv() => match event {
                Ok(_) => subscribe(sentinel.clone()).await,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
            message = messages.recv() => match message {
                Ok(message) => {
                    let text = message.value.as_string().unwrap_or_default();
                    if text.split(' ').next() == Some(service.as_str()) {
                        // "<service> <old ip> <old port> <new ip> <new port>"
                        let parts: Vec<&str> = text.split(' ').collect();
                        let to = match parts.as_slice() {
                            [_, _, _, ip, port] => format!("{ip}:{port}"),
                            _ => String::from("?"),
                        };
                        if to == "?" {
                            tracing::warn!(switch = %text, "sentinel failover announced without a new primary: every hold is at risk");
                            registry.suspend(Cause::Failover, Instant::now(), |_| true);
                            continue;
                        }
                        let Some(epoch) = connections.switch.announce(&to) else {
                            continue; // another sentinel's announcement of the same switch
                        };
                        tracing::warn!(client_id = %connections.client_id, switch = %text, "sentinel failover: moving to the new primary; every hold is at risk until checked there");
                        registry.failover_announced(to.clone());
                        registry.suspend(Cause::Failover, Instant::now(), |_| true);
                        tokio::spawn(move_to(
                            connections.clone(),
                            registry.clone(),
                            to,
                            epoch,
                            shutdown.clone(),
                        ));
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
        }
    }
    let _ = sentinel.quit().await;
    connection.abort();
}

/// Moves both connections to `to`, the primary of switch `epoch`, and opens the gate once
/// the command connection is there. Gives up when another switch is announced or the
/// client shuts down.
async fn move_to(
    connections: Connections,
    registry: Arc<HoldRegistry>,
    to: String,
    epoch: u64,
    shutdown: watch::Receiver<bool>,
) {
    let started = Instant::now();
    let subscriptions = tokio::spawn(follow(
        "subscriptions",
        connections.subscriber.clone(),
        connections.switch.clone(),
        to.clone(),
        epoch,
        shutdown.clone(),
    ));
    if follow(
        "commands",
        connections.redis.clone(),
        connections.switch.clone(),
        to.clone(),
        epoch,
        shutdown,
    )
    .await
    {
        // The sentry checks the holds there now. (It also learns it from fred's reconnect
        // event, unless fred had reached `to` on its own before the announcement.)
        registry.reconnected_to(Some(&to));
        connections.switch.arrive(epoch);
        tracing::info!(client_id = %connections.client_id, primary = %to, elapsed = ?started.elapsed(), "on the new primary after the sentinel failover");
    }
    let _ = subscriptions.await;
}

/// Makes `client`'s connection (`connection` names it in the log) again through the
/// sentinels until it is on `to`; whether it got there (else another switch was
/// announced, or the client shut down).
async fn follow(
    connection: &'static str,
    client: fred::prelude::Client,
    switch: Arc<PrimarySwitch>,
    to: String,
    epoch: u64,
    shutdown: watch::Receiver<bool>,
) -> bool {
    let mut pauses = retry::NEW_PRIMARY_SOUGHT.pauses();
    loop {
        if switch.epoch() != epoch || *shutdown.borrow() {
            return false;
        }
        if is_on(&client, &to) {
            return true;
        }
        let mut landings = client.reconnect_rx();
        if let Err(error) = client.force_reconnection().await {
            tracing::debug!(%error, primary = %to, "reconnecting to the new primary; retrying");
        }
        // Where fred landed: its reconnect events (`active_connections` stays empty on a
        // server that refuses `CLIENT ID`).
        let mut landed = None;
        loop {
            match landings.try_recv() {
                Ok(server) => landed = Some(format!("{}:{}", server.host, server.port)),
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
        if client.is_connected() && landed.as_deref() == Some(to.as_str()) {
            return true;
        }
        // A sentinel that has not heard of the switch yet named the old primary.
        tracing::debug!(connection, primary = %to, landed = landed.as_deref().unwrap_or("nowhere"), "not on the new primary yet; asking the sentinels again");
        tokio::time::sleep(pauses.next()).await;
    }
}

/// Whether `client`'s connection is to `to` (`host:port`).
fn is_on(client: &fred::prelude::Client, to: &str) -> bool {
    client.is_connected()
        && client
            .active_connections()
            .iter()
            .any(|server| format!("{}:{}", server.host, server.port) == to)
}
