//! The sentry: one task per client that tells holders their lock is at risk *before*
//! anyone else can take it, and verifies, as soon as it can, whether it still is theirs.
//!
//! It watches three things:
//! * fred's connection errors: the connection serving a lock's key dropped (on a cluster,
//!   the node owning the key's slot; on Sentinel, the master, which a failover moves).
//!   Every hold there is at risk at once.
//! * the validity deadlines of the [`HoldRegistry`]'s holds (last confirmed lease − a
//!   margin): a hold whose deadline passes is at risk; past its expiry, lost.
//! * fred's reconnections: every at-risk hold of that server is checked at once, in
//!   batches (per slot on a cluster), by its renewal script or `lua/hold_check.lua`;
//!   still there → held again, gone → lost. The server's `run_id` is compared with the
//!   one seen before: a changed one (a restart, a failover to another server) makes every
//!   hold there at risk and checked.
//!
//! Holds still at risk after a check that failed are checked again every
//! [`RECHECK_EVERY`] while the fault lasts. The sentry never blocks on Redis: checks run in
//! their own task, one at a time.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::ClusterInterface;
use fred::prelude::{ClientLike, EventInterface, Server};
use fred::types::InfoKind;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::connection::redis::Redis;
use crate::engine::hold::registry::HoldRegistry;
use crate::engine::hold::renewal::RenewalSettings;
use crate::engine::hold::state::{Cause, HoldState, instant, millis};

/// How often holds that are still at risk after a failed check are checked again.
pub(crate) const RECHECK_EVERY: Duration = Duration::from_millis(250);

/// The sentry task; runs until `shutdown` changes.
pub(crate) async fn run(
    registry: Arc<HoldRegistry>,
    redis: Redis,
    settings: RenewalSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut errors = redis.client().error_rx();
    let mut reconnects = redis.client().reconnect_rx();
    let checker = Checker {
        registry: registry.clone(),
        redis: redis.clone(),
        settings: settings.clone(),
        run_ids: Arc::default(),
    };
    // The run ids of the servers as first seen.
    {
        let checker = checker.clone();
        tokio::spawn(async move { checker.learn_run_ids().await });
    }
    let mut checks = Checks {
        checker,
        running: None,
        asked: None,
        last: Instant::now(),
    };
    loop {
        let now = Instant::now();
        let next_deadline = registry.check_deadlines(now);
        let waiting = !registry
            .snapshot(|_, signal| signal.needs_verification())
            .is_empty();
        checks.start_due(now, waiting);
        let wake = checks.wake_at(now, settings.period, next_deadline, waiting);
        let sooner = registry.scan_at(millis(wake));
        let flow = tokio::select! {
            _ = shutdown.changed() => ControlFlow::Break(()),
            _ = tokio::time::sleep_until(wake) => ControlFlow::Continue(()),
            _ = sooner.notified() => ControlFlow::Continue(()),
            event = errors.recv() => {
                connection_error(&registry, redis.client(), settings.clustered, event)
            }
            event = reconnects.recv() => checks.reconnected(event),
        };
        if flow.is_break() {
            return;
        }
    }
}

/// A connection error from fred: every hold on that server (on every server, when
/// events were lost) is at risk. `Break` once fred's event channel is closed.
fn connection_error(
    registry: &HoldRegistry,
    redis: &fred::prelude::Client,
    clustered: bool,
    event: Result<(fred::error::Error, Option<Server>), RecvError>,
) -> ControlFlow<()> {
    let at = Instant::now();
    match event {
        Ok((error, server)) => {
            tracing::debug!(%error, server = ?server.as_ref().map(ToString::to_string), "connection error");
            suspend(
                registry,
                redis,
                clustered,
                Cause::ConnectionLost,
                at,
                server.as_ref(),
            );
        }
        Err(RecvError::Lagged(_)) => {
            suspend(registry, redis, clustered, Cause::ConnectionLost, at, None);
        }
        Err(RecvError::Closed) => return ControlFlow::Break(()),
    }
    ControlFlow::Continue(())
}

/// The sentry's checks of at-risk holds: one runs at a time.
struct Checks {
    checker: Checker,
    /// The check running, or the last one.
    running: Option<JoinHandle<()>>,
    /// A check a reconnection asked for: of one server, or (`None`) of every server.
    asked: Option<Option<Server>>,
    /// When the last check started.
    last: Instant,
}

impl Checks {
    /// Starts a check unless one is running: the one a reconnection asked for, else one
    /// of every server when holds are `waiting` for verification, the last check is
    /// [`RECHECK_EVERY`] ago, the client is connected and no failover is pending.
    fn start_due(&mut self, now: Instant, waiting: bool) {
        let idle = self.running.as_ref().is_none_or(JoinHandle::is_finished);
        if !idle {
            return;
        }
        let server = match self.asked.take() {
            Some(server) => server,
            None if waiting
                && now >= self.last + RECHECK_EVERY
                && self.checker.redis.client().is_connected()
                && !self.checker.registry.failover_pending() =>
            {
                None
            }
            None => return,
        };
        self.running = Some(self.checker.clone().spawn(server));
        self.last = now;
    }

    /// When the sentry looks again: after a watchdog period at the latest, at the next
    /// validity deadline, and within [`RECHECK_EVERY`] while holds wait for a check or a
    /// reconnection asked for one.
    fn wake_at(
        &self,
        now: Instant,
        period: Duration,
        next_deadline: Option<u64>,
        waiting: bool,
    ) -> Instant {
        let mut wake = now + period;
        if let Some(deadline) = next_deadline {
            wake = wake.min(instant(deadline));
        }
        if waiting || self.asked.is_some() {
            wake = wake.min(now + RECHECK_EVERY);
        }
        wake
    }

    /// A reconnection from fred: asks for a check of that server (of every server, when
    /// events were lost), unless it is not the primary the sentinels announced. `Break`
    /// once fred's event channel is closed.
    fn reconnected(&mut self, event: Result<Server, RecvError>) -> ControlFlow<()> {
        let registry = &self.checker.registry;
        match event {
            Ok(server) => {
                tracing::debug!(%server, "reconnected");
                if registry.reconnected_to(Some(&format!("{}:{}", server.host, server.port))) {
                    self.asked = Some(merge(self.asked.take(), Some(server)));
                } else {
                    tracing::warn!(%server, "reconnected, but not to the primary the sentinel announced: holds stay at risk");
                }
            }
            Err(RecvError::Lagged(_)) => {
                if registry.reconnected_to(None) {
                    self.asked = Some(None);
                }
            }
            Err(RecvError::Closed) => return ControlFlow::Break(()),
        }
        ControlFlow::Continue(())
    }
}

/// Two pending checks as one: of one server, or (`None`) of every server.
fn merge(pending: Option<Option<Server>>, next: Option<Server>) -> Option<Server> {
    match (pending, next) {
        (None, next) => next,
        (Some(Some(a)), Some(b)) if a == b => Some(a),
        _ => None,
    }
}

/// Whether a hold's slot is served by `server` (every hold when unknown or not a cluster).
fn on_server(
    redis: &fred::prelude::Client,
    clustered: bool,
    server: Option<&Server>,
) -> impl Fn(u16) -> bool + use<> {
    let routing = match (clustered, server) {
        (true, Some(server)) => redis
            .cached_cluster_state()
            .map(|state| (state, server.clone())),
        _ => None,
    };
    move |slot| match &routing {
        Some((state, server)) => state.get_server(slot).is_none_or(|s| s == server),
        None => true,
    }
}

fn suspend(
    registry: &HoldRegistry,
    redis: &fred::prelude::Client,
    clustered: bool,
    cause: Cause,
    at: Instant,
    server: Option<&Server>,
) {
    registry.suspend(cause, at, on_server(redis, clustered, server));
}

/// Checks at-risk holds in Redis (see the module docs).
#[derive(Clone)]
struct Checker {
    registry: Arc<HoldRegistry>,
    redis: Redis,
    settings: RenewalSettings,
    run_ids: Arc<Mutex<HashMap<String, String>>>,
}

impl Checker {
    fn spawn(self, server: Option<Server>) -> JoinHandle<()> {
        tokio::spawn(async move { self.check(server).await })
    }

    /// Checks the at-risk holds of `server` (every server: `None`), and compares its run
    /// id with the last one seen, at the same time.
    async fn check(&self, server: Option<Server>) {
        let pick = on_server(
            self.redis.client(),
            self.settings.clustered,
            server.as_ref(),
        );
        let started = Instant::now();
        let holds = self
            .registry
            .snapshot(|_, signal| signal.state() == HoldState::AtRisk);
        let holds: Vec<_> = holds.into_iter().filter(|h| pick(h.slot)).collect();
        let count = holds.len();
        let verify = async {
            if holds.is_empty() {
                return;
            }
            let outcome = crate::engine::hold::renewal::send(
                &self.registry,
                &self.redis,
                &self.settings,
                crate::engine::hold::renewal::Holds::These(holds),
            )
            .await;
            tracing::debug!(
                checked = count,
                held = outcome.confirmed,
                gone = outcome.gone,
                failed = outcome.failed,
                "at-risk holds checked"
            );
        };
        let (_, restarted) = tokio::join!(verify, self.run_id_changed(server.as_ref()));
        if restarted {
            // Every hold of that server that this check did not just confirm, even one no
            // fault made at risk, is checked now.
            let at = Instant::now();
            self.registry
                .suspend_where(Cause::ServerRestarted, at, |slot, signal| {
                    pick(slot) && !signal.confirmed_since(started)
                });
            let holds: Vec<_> = self
                .registry
                .snapshot(|_, signal| signal.state() == HoldState::AtRisk)
                .into_iter()
                .filter(|h| pick(h.slot))
                .collect();
            if !holds.is_empty() {
                crate::engine::hold::renewal::send(
                    &self.registry,
                    &self.redis,
                    &self.settings,
                    crate::engine::hold::renewal::Holds::These(holds),
                )
                .await;
            }
        }
    }

    /// The run id of `server` (the one server when not a cluster).
    async fn run_id(&self, server: Option<&Server>) -> Option<(String, String)> {
        let info: Result<String, _> = match (self.settings.clustered, server) {
            (true, Some(server)) => {
                self.redis
                    .query(|redis| async move {
                        redis
                            .with_cluster_node(server.clone())
                            .info(Some(InfoKind::Server))
                            .await
                    })
                    .await
            }
            (true, None) => return None,
            (false, _) => {
                self.redis
                    .query(|redis| redis.info(Some(InfoKind::Server)))
                    .await
            }
        };
        let info = info.ok()?;
        let run_id = info
            .lines()
            .find_map(|line| line.strip_prefix("run_id:"))?
            .trim()
            .to_owned();
        let name = match (self.settings.clustered, server) {
            (true, Some(server)) => server.to_string(),
            _ => String::new(),
        };
        Some((name, run_id))
    }

    /// Records the run id of `server`; whether it differs from the one seen before.
    async fn run_id_changed(&self, server: Option<&Server>) -> bool {
        let Some((name, run_id)) = self.run_id(server).await else {
            return false;
        };
        let before = self.run_ids.lock().await.insert(name, run_id.clone());
        match before {
            Some(before) if before != run_id => {
                tracing::warn!(server = ?server.map(ToString::to_string), before, now = run_id, "the lock server restarted or changed: checking every hold on it");
                true
            }
            _ => false,
        }
    }

    async fn learn_run_ids(&self) {
        if self.settings.clustered {
            let primaries = self
                .redis
                .client()
                .cached_cluster_state()
                .map(|state| state.unique_primary_nodes())
                .unwrap_or_default();
            for server in primaries {
                self.run_id_changed(Some(&server)).await;
            }
        } else {
            self.run_id_changed(None).await;
        }
    }
}
