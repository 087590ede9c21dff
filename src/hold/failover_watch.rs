//! The Sentinel failover watch: with a `redis-sentinel://` configuration, one pub/sub
//! connection per sentinel listens for `+switch-master` of the client's service.
//!
//! Why: during a failover the promoted replica is the primary (others who ask a sentinel
//! are sent there) while the old primary still accepts this client's renewals until the
//! sentinels demote it, seconds later. Renewals sent there no longer reach the new
//! primary, where the lock's key expires. Waiting for the demotion's `CLIENT KILL` tells
//! holders too late; `+switch-master` comes first. On it every hold is at risk at once,
//! and stays so until the data connection reaches the new primary (the old one's
//! `CLIENT KILL` sends it there through the sentinels): a check on the old primary would
//! find the hold there and prove nothing, so the sentry checks only after reconnecting.
//! (Forcing the reconnection at once fails the commands in flight, and an acquire whose
//! `WAIT` fails that way cannot always be undone.)
//!
//! Invariants: a sentinel that cannot be reached is retried by fred's reconnect policy;
//! subscriptions are renewed after each reconnection; the task ends with the client.

use std::sync::Arc;

use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::prelude::{Builder, ServerConfig};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connection::config::Config;
use crate::hold::registry::HoldRegistry;
use crate::hold::state::Cause;

/// The channel sentinels announce a completed failover on.
const SWITCH_MASTER: &str = "+switch-master";

/// Starts the watch when `config` goes through sentinels; does nothing otherwise.
pub(crate) fn start(config: &Config, registry: Arc<HoldRegistry>, shutdown: watch::Receiver<bool>) {
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
            shutdown.clone(),
        ));
    }
}

async fn watch_one(
    sentinel: fred::prelude::Client,
    service: String,
    registry: Arc<HoldRegistry>,
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
                        tracing::warn!(switch = %text, "sentinel failover: every hold is at risk until checked on the new primary");
                        // "<service> <old ip> <old port> <new ip> <new port>"
                        let parts: Vec<&str> = text.split(' ').collect();
                        let to = match parts.as_slice() {
                            [_, _, _, ip, port] => format!("{ip}:{port}"),
                            _ => String::from("?"),
                        };
                        registry.failover_announced(to);
                        registry.suspend(Cause::Failover, Instant::now(), |_| true);
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
