//! [`keep_routing`]: starts a fred client's routing task again when fred ended it on an
//! error while the client is in use.
//!
//! fred 10.1 ends a client's routing task, and with it every connection of the client,
//! when following a redirection fails in its router: a command whose writes are used up
//! (a script the crate sends at most once, `Resend::Never`) that meets an `ASK` (a slot
//! being migrated) fails its `ASKING` step with "Max attempts reached", and one that
//! meets a `MOVED` fails its write after the cluster sync with "Too many failed write
//! attempts"; fred treats either as the end of the router. Nothing reconnects then: every later command of the client
//! waits for its response timeout (seen on a loaded machine in
//! `tests/topology/cluster.rs`'s migration test: a waiter's client answered nothing for
//! 40 s). The command that met the `ASK` fails (it did not run); the crate's own calls
//! that were queued behind it are taken by the new task, as fred keeps its command queue
//! for the next one.

use tokio::sync::watch;

use fred::prelude::ClientLike;
use fred::types::ConnectHandle;

use crate::connection::retry;

/// Watches `client`'s routing task (`task`, as `init()` returned it) until `shutdown`
/// says the client is closing (or is gone): a task that ended on an error is started
/// again, pausing by [`retry::ROUTING_RESTARTED`] while starting fails. A task that
/// fred ended without an error (the client quit, or the reconnect policy the user gave
/// ran out) is not.
pub(crate) fn keep_routing(
    connection: &'static str,
    client: fred::prelude::Client,
    task: ConnectHandle,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut task = task;
        loop {
            let ended = tokio::select! {
                ended = &mut task => ended,
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        return;
                    }
                    continue;
                }
            };
            if *shutdown.borrow() {
                return;
            }
            // fred ends the task without an error when the client quit or the user's
            // reconnect policy ran out: it stays ended then, as fred leaves it.
            let error = match ended {
                Ok(Err(error)) => error,
                Ok(Ok(())) => return,
                Err(join) => {
                    tracing::warn!(connection, error = %join, "fred's routing task failed");
                    return;
                }
            };
            tracing::warn!(connection, %error, "fred ended the connection's routing task; starting it again");
            let mut pauses = retry::ROUTING_RESTARTED.pauses();
            task = loop {
                if *shutdown.borrow() {
                    return;
                }
                match client.init().await {
                    Ok(task) => break task,
                    Err(error) => {
                        tracing::debug!(connection, %error, "starting the routing task again failed; retrying");
                        tokio::time::sleep(pauses.next()).await;
                    }
                }
            };
            tracing::info!(connection, "the connection's routing task runs again");
        }
    });
}
