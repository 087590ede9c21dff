//! The at-risk signal, one fault at a time, against real redis-server processes: a
//! holder must be told its lock is at risk *before* another client can take it, then
//! told `Held` again (the lock was kept) or `Lost` (it was not).
//!
//! Each test records on one clock when the fault was injected, when the holder's guard
//! said `AtRisk`, when another client entered, and what the guard said afterwards.
use crate::support;
use support::faulty::{FaultyProxy, Flow, Restartable};
use support::*;

use std::sync::Arc;
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config, HoldState, HoldWatch, MultiLock};
use tokio::time::Instant;

/// The times a guard's state changed, as its watch's `state_changes()` receiver saw them.
#[derive(Clone, Default)]
struct Timeline(Arc<std::sync::Mutex<Vec<(Instant, HoldState)>>>);

impl Timeline {
    /// Records every change of a guard's state from now on (any guard: `guard.watch()`).
    fn follow(watch: &HoldWatch) -> Timeline {
        let timeline = Timeline::default();
        let mut changes = watch.state_changes();
        let record = timeline.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let state = *changes.borrow_and_update();
                record.0.lock().unwrap().push((Instant::now(), state));
                if state == HoldState::Lost {
                    return;
                }
            }
        });
        timeline
    }

    fn first(&self, state: HoldState) -> Option<Instant> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .find(|(_, s)| *s == state)
            .map(|(at, _)| *at)
    }

    fn states(&self) -> Vec<HoldState> {
        self.0.lock().unwrap().iter().map(|(_, s)| *s).collect()
    }

    async fn wait_for(&self, state: HoldState, limit: Duration) -> Option<Instant> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(at) = self.first(state) {
                return Some(at);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        None
    }
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

async fn client_at(url: &str, watchdog: Duration) -> Client {
    Client::connect(
        Config::builder()
            .url(url)
            .watchdog_timeout(watchdog)
            .response_timeout(Duration::from_secs(1))
            .build()
            .unwrap(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_warns_the_holder_before_another_client_can_enter() {
    let mut server = Restartable::start();
    let name = key("risk-restart");
    let holder = client_at(&server.url(), Duration::from_secs(3)).await;
    let other = client_at(&server.url(), Duration::from_secs(3)).await;
    let guard = holder.get_lock(&name).acquire().await.unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    let timeline = Timeline::follow(guard.watch());

    let fault = Instant::now();
    server.shutdown();
    // The other client takes the lock as soon as the empty server is back.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.start_again();
    let entered = other
        .get_lock(&name)
        .try_acquire_for(Duration::from_secs(10))
        .await
        .unwrap()
        .expect("the other client takes the lock on the empty server");
    let entered_at = Instant::now();

    let at_risk = timeline
        .wait_for(HoldState::AtRisk, Duration::from_secs(1))
        .await
        .expect("the holder was told its lock is at risk");
    assert!(
        at_risk < entered_at,
        "told {} ms after the fault, the other entered after {} ms",
        ms(at_risk - fault),
        ms(entered_at - fault)
    );
    assert!(
        at_risk - fault < Duration::from_millis(500),
        "at risk {} ms after the connection dropped",
        ms(at_risk - fault)
    );
    // After reconnecting, the holder checks and finds its field gone.
    let lost = timeline
        .wait_for(HoldState::Lost, Duration::from_secs(5))
        .await
        .expect("the holder learns the lock is lost");
    assert_eq!(timeline.states(), [HoldState::AtRisk, HoldState::Lost]);
    assert!(guard.is_lost());
    tokio::time::timeout(Duration::from_millis(100), guard.watch().lost())
        .await
        .expect("the watch says lost too");
    eprintln!(
        "restart: at risk after {} ms, other entered after {} ms, lost after {} ms",
        ms(at_risk - fault),
        ms(entered_at - fault),
        ms(lost - fault)
    );
    entered.unlock().await.unwrap();
    assert!(matches!(
        guard.unlock().await,
        Err(redisson_lock::Error::NotOwner { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_connection_is_a_false_alarm_recovered_at_reconnect() {
    let Bed(_server, client, raw, name) = Bed::new("risk-kill").await;
    let guard = client.get_lock(&name).acquire().await.unwrap();
    let lease_guard = client
        .get_lock(format!("{name}-lease"))
        .acquire_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let timeline = Timeline::follow(guard.watch());
    let lease_timeline = Timeline::follow(lease_guard.watch());
    // A clone of the guard's watch, in a task of its own, is told too.
    let watch = guard.watch().clone();
    let told = tokio::spawn(async move {
        let state = watch.at_risk().await;
        let at_risk = Instant::now();
        watch.held_again().await;
        (state, at_risk, Instant::now(), watch.state())
    });

    let fault = Instant::now();
    assert!(kill_clients(&raw, "normal").await >= 1);
    let at_risk = timeline
        .wait_for(HoldState::AtRisk, Duration::from_secs(2))
        .await
        .expect("at risk once the connection dropped");
    let held = timeline
        .wait_for(HoldState::Held, Duration::from_secs(5))
        .await
        .expect("confirmed held again after reconnecting");
    lease_timeline
        .wait_for(HoldState::Held, Duration::from_secs(5))
        .await
        .expect("the lease hold is confirmed too (by a check, not a renewal)");
    assert_eq!(timeline.states(), [HoldState::AtRisk, HoldState::Held]);
    assert_eq!(guard.state(), HoldState::Held);
    assert_eq!(lease_guard.state(), HoldState::Held);
    let (state, watch_at_risk, watch_held, then) =
        tokio::time::timeout(Duration::from_secs(5), told)
            .await
            .expect("the watch's task saw at risk, then held again")
            .unwrap();
    assert_eq!((state, then), (HoldState::AtRisk, HoldState::Held));
    assert!(
        watch_at_risk - fault < Duration::from_secs(1) && watch_held >= watch_at_risk,
        "watch: at risk after {} ms, held again after {} ms",
        ms(watch_at_risk - fault),
        ms(watch_held - fault)
    );
    eprintln!(
        "client kill: at risk after {} ms, held again after {} ms",
        ms(at_risk - fault),
        ms(held - fault)
    );
    // The check changed nothing of the lease hold.
    let ttl = pttl(&raw, &format!("{name}-lease")).await;
    assert!(ttl > 15_000 && ttl <= 20_000, "lease TTL {ttl}");
    assert_eq!(hgetall(&raw, &name).await.len(), 1);
    guard.unlock().await.unwrap();
    lease_guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_paused_past_the_lease_warns_before_the_key_can_expire() {
    let server = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let name = key("risk-pause");
    let watchdog = Duration::from_secs(1);
    let holder = client_at(&server.url(), watchdog).await;
    let other = client_at(&server.url(), watchdog).await;
    let guard = holder.get_lock(&name).acquire().await.unwrap();
    let timeline = Timeline::follow(guard.watch());
    // Let a renewal round pass, so the pause starts at an arbitrary point of the lease.
    tokio::time::sleep(Duration::from_millis(450)).await;

    let sleeper = server.raw().await;
    let fault = Instant::now();
    let pause = tokio::spawn(async move {
        let slept: Result<Value, _> = sleeper
            .custom(redisson_lock::fred::cmd!("DEBUG"), vec!["SLEEP", "1.6"])
            .await;
        slept.expect("DEBUG SLEEP runs");
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Queued behind the pause: runs when the server wakes, after the key expired.
    let entered = other
        .get_lock(&name)
        .try_acquire_for(Duration::from_secs(10))
        .await
        .unwrap();
    let probe = server.raw().await;
    let Some(entered) = entered else {
        panic!(
            "the other client takes the expired lock (gave up after {} ms); hash {:?} pttl {} timeline {:?}",
            ms(fault.elapsed()),
            hgetall(&probe, &name).await,
            pttl(&probe, &name).await,
            timeline.states()
        );
    };
    let entered_at = Instant::now();
    pause.await.unwrap();

    let at_risk = timeline
        .first(HoldState::AtRisk)
        .expect("the holder was told before the server woke up");
    assert!(
        at_risk < entered_at,
        "at risk after {} ms, other entered after {} ms",
        ms(at_risk - fault),
        ms(entered_at - fault)
    );
    timeline
        .wait_for(HoldState::Lost, Duration::from_secs(3))
        .await
        .expect("then lost");
    eprintln!(
        "pause: at risk after {} ms, other entered after {} ms",
        ms(at_risk - fault),
        ms(entered_at - fault)
    );
    entered.unlock().await.unwrap();
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_fires_the_validity_deadline_before_the_key_expires() {
    let server = RedisServer::start();
    let proxy = FaultyProxy::start(server.port).await;
    let name = key("risk-partition");
    let watchdog = Duration::from_secs(1);
    let holder = client_at(&proxy.url(), watchdog).await;
    let other = client_at(&server.url(), watchdog).await;
    let guard = holder.get_lock(&name).acquire().await.unwrap();
    let timeline = Timeline::follow(guard.watch());
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Bytes stop; nothing is closed, so no connection event comes: only the deadline.
    let fault = Instant::now();
    proxy.set_flow(Flow::Stall);
    let entered = other
        .get_lock(&name)
        .try_acquire_for(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("the other client takes the lock once it expired");
    let entered_at = Instant::now();
    let at_risk = timeline
        .first(HoldState::AtRisk)
        .expect("the holder was told by its validity deadline");
    assert!(
        at_risk < entered_at,
        "at risk after {} ms, other entered after {} ms",
        ms(at_risk - fault),
        ms(entered_at - fault)
    );
    let lost = timeline
        .wait_for(HoldState::Lost, Duration::from_secs(3))
        .await
        .expect("lost once the lease surely ran out");
    eprintln!(
        "partition: at risk after {} ms, other entered after {} ms, lost after {} ms",
        ms(at_risk - fault),
        ms(entered_at - fault),
        ms(lost - fault)
    );
    proxy.set_flow(Flow::Pass);
    entered.unlock().await.unwrap();
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_lease_outliving_the_work_is_at_risk_before_it_ends() {
    let server = RedisServer::start();
    let client = server
        .client_with(server.config().validity_margin(Duration::from_millis(150)))
        .await;
    let name = key("risk-lease");
    let started = Instant::now();
    let guard = client
        .get_lock(&name)
        .acquire_with_lease(Duration::from_millis(600))
        .await
        .unwrap();
    assert_eq!(guard.at_risk().await, HoldState::AtRisk);
    let at_risk = started.elapsed();
    assert!(
        at_risk >= Duration::from_millis(430) && at_risk < Duration::from_millis(600),
        "at risk after {} ms (lease 600, margin 150)",
        ms(at_risk)
    );
    guard.lost().await;
    assert!(started.elapsed() >= Duration::from_millis(595));
    assert_eq!(guard.state(), HoldState::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_is_at_risk_when_one_member_is() {
    let steady = RedisServer::start();
    let mut shaky = Restartable::start();
    let name = key("risk-multi");
    let a = client_at(&steady.url(), Duration::from_secs(3)).await;
    let b = client_at(&shaky.url(), Duration::from_secs(3)).await;
    let group = MultiLock::new([a.get_lock(&name), b.get_lock(&name)]).unwrap();
    let guard = group.acquire().await.unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    let mut changes = guard.state_changes();
    let timeline = Timeline::follow(guard.watch());
    shaky.shutdown();
    let state = tokio::time::timeout(Duration::from_secs(2), guard.at_risk())
        .await
        .expect("the group is at risk with one member's server down");
    assert_eq!(state, HoldState::AtRisk);
    tokio::time::timeout(Duration::from_secs(2), changes.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*changes.borrow_and_update(), HoldState::AtRisk);
    shaky.start_again();
    tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("lost: the restarted member's key is gone");
    timeline
        .wait_for(HoldState::Lost, Duration::from_secs(1))
        .await
        .expect("the group's receivers see it lost");
    assert_eq!(timeline.states(), [HoldState::AtRisk, HoldState::Lost]);
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_loses_every_hold() {
    let Bed(_server, client, _raw, name) = Bed::new("risk-shutdown").await;
    let guard = client.get_lock(&name).acquire().await.unwrap();
    client.shutdown().await.unwrap();
    assert_eq!(guard.state(), HoldState::Lost);
    assert_eq!(guard.at_risk().await, HoldState::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_warns_the_holder_then_confirms_the_replicated_lock() {
    init_tracing();
    let primary = RedisServer::start();
    let replica = RedisServer::start_replica_of(&primary);
    wait_replica_linked(replica.port, Duration::from_secs(20));
    let sentinel = SentinelServer::start(primary.port, 2000);
    sentinel.wait_for(
        |s| s.known_replicas() >= 1,
        "sentinel to discover the replica",
    );
    let url = format!(
        "redis-sentinel://127.0.0.1:{}/0?sentinelServiceName=mymaster",
        sentinel.port
    );
    // The default 30 s watchdog: the old primary takes the renewals until the sentinel
    // demotes it (about 10 s after the switch here), and they no longer reach the new
    // primary, where the key's last replicated lease must outlast that window.
    let client = client_at(&url, redisson_lock::config::DEFAULT_WATCHDOG_TIMEOUT).await;
    let name = key("risk-failover");
    let guard = client.get_lock(&name).acquire().await.unwrap();
    let timeline = Timeline::follow(guard.watch());
    // The hold reaches the replica before the failover.
    assert!(
        eventually(Duration::from_secs(5), || async {
            hgetall(&replica.raw().await, &name).await.len() == 1
        })
        .await
    );

    let answer = sentinel.failover();
    let fault = Instant::now();
    assert!(
        answer.contains("OK"),
        "SENTINEL FAILOVER answered {answer:?}"
    );
    // The sentinel's +switch-master makes the hold at risk (the old primary still takes
    // renewals, which no longer reach the new one); once the old primary drops its
    // clients, the client follows the sentinel to the promoted replica, where the check
    // finds the hold and renews it.
    let at_risk = timeline
        .wait_for(HoldState::AtRisk, Duration::from_secs(30))
        .await
        .expect("at risk when the old primary drops its clients");
    let held = timeline
        .wait_for(HoldState::Held, Duration::from_secs(20))
        .await
        .unwrap_or_else(|| {
            panic!(
                "confirmed on the new primary: {:?} after {} ms",
                timeline.states(),
                ms(fault.elapsed())
            )
        });
    assert_eq!(server_role(replica.port), "master");
    assert_eq!(guard.state(), HoldState::Held);
    // Told once (the sentinel's +switch-master, before the old primary's CLIENT KILL),
    // confirmed once: no second alarm for the new run id the check itself confirmed.
    assert_eq!(timeline.states(), [HoldState::AtRisk, HoldState::Held]);
    eprintln!(
        "failover: at risk after {} ms, held again after {} ms",
        ms(at_risk - fault),
        ms(held - fault)
    );
    guard.unlock().await.unwrap();
    let left = hgetall(&replica.raw().await, &name).await;
    assert!(
        left.is_empty(),
        "after unlock, on the new primary: {left:?}; role {}; on the old: {:?}",
        server_role(replica.port),
        hgetall(&primary.raw().await, &name).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_node_restart_warns_the_holds_on_that_node() {
    let mut cluster = support::cluster::Cluster::start();
    // fred re-syncs the whole cluster after one node's connection drops, and commands to
    // every node wait for it (measured 3.5 s here, with its growing reconnect delay): a
    // watchdog shorter than that loses the holds of the healthy nodes too (each told at
    // risk first). 10 s keeps them.
    let client = client_at(&cluster.url(), Duration::from_secs(10)).await;
    // Two locks on different nodes.
    let first = key("risk-cluster-a");
    let node_of = |name: &str| {
        let slot = redisson_lock::fred::util::redis_keyslot(name.as_bytes());
        cluster
            .nodes
            .iter()
            .position(|n| {
                let slots = redis_cli(n.port, &["cluster", "myid"]);
                let owner = redis_cli(n.port, &["cluster", "nodes"]);
                owner.lines().any(|line| {
                    line.starts_with(slots.trim())
                        && line.split(' ').skip(8).any(|range| {
                            let mut bounds = range.split('-');
                            let lo: u16 = bounds.next().and_then(|b| b.parse().ok()).unwrap_or(1);
                            let hi: u16 = bounds.next().and_then(|b| b.parse().ok()).unwrap_or(lo);
                            (lo..=hi).contains(&slot)
                        })
                })
            })
            .expect("a node owns the slot")
    };
    let first_node = node_of(&first);
    let second = (0..100)
        .map(|i| key(&format!("risk-cluster-b{i}")))
        .find(|name| node_of(name) != first_node)
        .expect("a name on another node");
    let on_restarted = client.get_lock(&first).acquire().await.unwrap();
    let elsewhere = client.get_lock(&second).acquire().await.unwrap();
    let restarted = Timeline::follow(on_restarted.watch());
    let other_node = Timeline::follow(elsewhere.watch());

    let fault = Instant::now();
    cluster.nodes[first_node].restart();
    let at_risk = restarted
        .wait_for(HoldState::AtRisk, Duration::from_secs(5))
        .await
        .expect("the hold on the restarted node is at risk");
    let lost = restarted
        .wait_for(HoldState::Lost, Duration::from_secs(20))
        .await
        .expect("and lost: the node came back empty");
    // The hold on another node stays held (or, at worst, is confirmed again).
    assert!(
        eventually(Duration::from_secs(10), || async {
            elsewhere.state() == HoldState::Held
        })
        .await,
        "the other node's hold: {:?}",
        other_node.states()
    );
    eprintln!(
        "cluster node restart: at risk after {} ms, lost after {} ms; other node's hold {:?}",
        ms(at_risk - fault),
        ms(lost - fault),
        other_node.states()
    );
    // A raw client made now: one made before the restart has no reconnect policy.
    let raw = cluster.raw().await;
    assert_eq!(hgetall(&raw, &second).await.len(), 1);
    elsewhere.unlock().await.unwrap();
    drop(on_restarted);
}
