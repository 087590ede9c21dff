//! Redis Sentinel through fred: a primary, a replica and a sentinel, all real processes.
//! Locks work through the sentinel URL, and keep working after a manual failover, where
//! the client follows the sentinel to the promoted replica.
use crate::support;
use support::*;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Config};

fn role(port: u16) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "role"])
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Retries `op` until it succeeds: during a failover a call can fail, as with any client.
async fn eventually<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = redisson_lock::Result<T>>,
{
    let started = Instant::now();
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) if started.elapsed() < Duration::from_secs(20) => {
                println!("{what}: {e} (retrying)");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{what} still failing after 20 s: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_follow_the_primary_through_a_sentinel_failover() {
    let primary = RedisServer::start();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    let sentinel = SentinelServer::start(primary.port, 2000);
    // Wait for the replica to be in sync, so the failover can pick it.
    let started = Instant::now();
    while !Command::new("redis-cli")
        .args(["-p", &replica.port.to_string(), "info", "replication"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("master_link_status:up"))
        .unwrap_or(false)
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "replica never synced"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sentinel.wait_for(
        |s| {
            redis_cli(s.port, &["sentinel", "replicas", "mymaster"])
                .contains(&replica.port.to_string())
        },
        "sentinel to discover the replica",
    );

    let url = format!(
        "redis-sentinel://127.0.0.1:{}/0?sentinelServiceName=mymaster",
        sentinel.port
    );
    let client = Client::connect(Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let name = key("sentinel");
    let lock = client.get_lock(&name);

    // Through the sentinel, the lock lands on the primary.
    lock.lock().await.unwrap();
    let on_primary = primary.raw().await;
    assert_eq!(hgetall(&on_primary, &name).await.len(), 1);
    lock.unlock().await.unwrap();

    // Manual failover: the replica is promoted; the old primary is demoted.
    let answer = sentinel.failover();
    assert!(
        answer.contains("OK"),
        "SENTINEL FAILOVER answered {answer:?}"
    );
    sentinel.wait_for(|s| s.master_port() == Some(replica.port), "the failover");
    let started = Instant::now();
    while role(replica.port) != "master" {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "replica never became master"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Until the sentinel demotes the old primary, both accept writes (the split-brain
    // window every Sentinel deployment has); wait for the demotion, whose CLIENT KILL
    // sends every client back to the sentinel.
    let started = Instant::now();
    while role(primary.port) != "slave" {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "old primary never demoted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The same client follows: the lock is now written to the promoted replica.
    assert!(eventually("lock after failover", || lock.try_lock()).await);
    assert!(lock.is_held_by_current_task().await.unwrap());
    let on_new_primary = replica.raw().await;
    let hash = hgetall(&on_new_primary, &name).await;
    assert_eq!(hash.len(), 1, "lock not on the new primary: {hash:?}");
    assert!(hash[0].0.starts_with(client.id()));

    // Waiting and waking still work on the new primary. The waiter is another
    // process's (a client of its own, through the same sentinel): only the unlock
    // message on the new primary wakes it before the hold's 30 s TTL (a waiter on the
    // holder's client is handed the lock locally).
    let other = Client::connect(Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let waiter = spawn_waiter(other.get_lock(&name));
    // Another program listening on the new primary sees what the waiter sees.
    let (_subscriber, mut rx) = listen(&replica, &channel(&name)).await;
    // The waiter is subscribed to the lock's channel on the new primary: waiting there.
    assert!(
        support::eventually(Duration::from_secs(10), || async {
            numsub(&on_new_primary, &channel(&name)).await >= 2
        })
        .await,
        "the waiter never subscribed on the new primary"
    );
    let released = Instant::now();
    lock.unlock().await.unwrap();
    assert_eq!(
        drain_first(&mut rx, Duration::from_secs(2)).await,
        Some((channel(&name), b"0".to_vec())),
        "no unlock message on the new primary"
    );
    let handoff = waiter.await.unwrap().duration_since(released);
    println!("hand-off after failover: {handoff:?}");
    assert!(
        handoff < Duration::from_secs(2),
        "waiter not woken by the message: {handoff:?}"
    );
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

// ---- issue 34: moving to the announced primary at once -------------------------------

/// How the primary goes away.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// `SENTINEL FAILOVER`: the old primary keeps taking writes until demoted, seconds
    /// later.
    Demote,
    /// The old primary is killed; the sentinels notice and promote the replica.
    Crash,
}

/// What one worker task saw: (when, in seconds since the epoch; the error, if any).
type Seen = Arc<Mutex<Vec<(f64, Option<String>)>>>;

/// The worker tasks' calls: (lock name, when the call began, when it returned), in
/// seconds since the epoch.
type Calls = Arc<Mutex<Vec<(String, f64, f64)>>>;

/// Whether a `MONITOR` line names lock `name` (as a key, or inside a channel's or a
/// latch's braces), not a longer name that starts with it.
fn names(line: &str, name: &str) -> bool {
    line.contains(&format!("\"{name}\"")) || line.contains(&format!("{{{name}}}"))
}

fn others_known(sentinel: &SentinelServer) -> usize {
    redis_cli(sentinel.port, &["sentinel", "sentinels", "mymaster"])
        .lines()
        .filter(|l| l.trim() == "name")
        .count()
}

/// The ports of the other sentinels `sentinel` knows, in the order of its answer.
fn sentinel_ports(sentinel: &SentinelServer) -> Vec<u16> {
    let answer = redis_cli(sentinel.port, &["sentinel", "sentinels", "mymaster"]);
    let lines: Vec<&str> = answer.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|pair| pair[0] == "port")
        .filter_map(|pair| pair[1].parse().ok())
        .collect()
}

/// When the first `+switch-master` arrives from any of `sentinels` (seconds since the
/// epoch), as the crate hears it: by subscribing.
async fn listen_for_switch(sentinels: &[SentinelServer]) -> Arc<Mutex<Option<f64>>> {
    let heard: Arc<Mutex<Option<f64>>> = Arc::default();
    for sentinel in sentinels {
        let url = format!("redis://127.0.0.1:{}", sentinel.port);
        let raw = Builder::from_config(fred::prelude::Config::from_url(&url).unwrap())
            .build()
            .unwrap();
        raw.init().await.unwrap();
        let mut messages = raw.message_rx();
        raw.subscribe("+switch-master").await.unwrap();
        let heard = heard.clone();
        tokio::spawn(async move {
            let _raw = raw;
            if messages.recv().await.is_ok() {
                let at = epoch_secs();
                let mut heard = heard.lock().unwrap();
                if heard.is_none() {
                    *heard = Some(at);
                }
            }
        });
    }
    heard
}

/// When `client` itself heard a sentinel's `+switch-master` (seconds since the epoch):
/// the crate's warning, which names the client.
async fn noticed_switch(client: &Client) -> f64 {
    let words = ["sentinel failover: moving", client.id()];
    let started = Instant::now();
    loop {
        if let Some(at) = events::first(&words) {
            return at;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "client {} never logged the switch",
            client.id()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Holds and waiters across a failover through three sentinels (quorum 2): after the
/// switch is announced nothing is written to the old primary, the first acquisition on
/// the new one follows within 2 s, watchdog holds (30 s and 10 s) are renewed there and
/// released cleanly, and, with `full_sync`, a new replica that needs a full sync does not
/// fail the locks taken meanwhile.
async fn failover_under_load(fault: Fault, full_sync: bool) {
    init_tracing();
    let mut primary = RedisServer::start();
    // As a primary, the replica delays each full sync by 3 s: a replica attaching to it
    // is "connected" but not synced for that long.
    let replica = RedisServer::start_with(&[
        "--replicaof",
        "127.0.0.1",
        &primary.port.to_string(),
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "3",
    ]);
    wait_replica_linked(replica.port, Duration::from_secs(20));
    let sentinels: Vec<SentinelServer> = (0..3)
        .map(|_| SentinelServer::start_quorum(primary.port, 1000, 2))
        .collect();
    for sentinel in &sentinels {
        sentinel.wait_for(
            |s| s.known_replicas() == 1 && others_known(s) == 2,
            "the sentinels to know the replica and each other",
        );
    }
    let url = format!(
        "redis-sentinel://127.0.0.1:{}/0?node=127.0.0.1:{}&node=127.0.0.1:{}&sentinelServiceName=mymaster",
        sentinels[0].port, sentinels[1].port, sentinels[2].port
    );
    let a = Client::connect(Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let b = Client::connect(
        Config::builder()
            .url(&url)
            .watchdog_timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let old_writes = Monitor::start(primary.port);
    let new_writes = Monitor::start(replica.port);
    let switch = listen_for_switch(&sentinels).await;

    // Watchdog holds: the default 30 s, and 10 s.
    let hold30 = key("fo-hold30");
    let hold10 = key("fo-hold10");
    let guard30 = a.get_lock(&hold30).acquire().await.unwrap();
    let guard10 = b.get_lock(&hold10).acquire().await.unwrap();

    // Waiters: three tasks taking turns on one lock; churn: two tasks taking fresh locks.
    let stop = Arc::new(AtomicBool::new(false));
    let busy = key("fo-busy");
    let mut workers = Vec::new();
    let contended: Seen = Arc::default();
    // Every worker call: (lock name, when it began, when it ended).
    let calls: Calls = Arc::default();
    for _ in 0..3 {
        let (lock, stop, seen) = (a.get_lock(&busy), stop.clone(), contended.clone());
        let (calls, name) = (calls.clone(), busy.clone());
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let began = epoch_secs();
                let taken = lock.lock().await;
                let at = epoch_secs();
                calls.lock().unwrap().push((name.clone(), began, at));
                seen.lock()
                    .unwrap()
                    .push((at, taken.as_ref().err().map(|e| e.to_string())));
                match taken {
                    Ok(()) => {
                        tokio::time::sleep(Duration::from_millis(30)).await;
                        let began = epoch_secs();
                        let _ = lock.unlock().await;
                        calls
                            .lock()
                            .unwrap()
                            .push((name.clone(), began, epoch_secs()));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }));
    }
    let churned: Seen = Arc::default();
    for task in 0..2 {
        let (client, stop, seen) = (b.clone(), stop.clone(), churned.clone());
        let prefix = key("fo-churn");
        let calls = calls.clone();
        workers.push(tokio::spawn(async move {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                let name = format!("{prefix}-{task}-{round}");
                let lock = client.get_lock(&name);
                let began = epoch_secs();
                let taken = lock.try_lock().await;
                let at = epoch_secs();
                calls.lock().unwrap().push((name.clone(), began, at));
                match taken {
                    Ok(true) => {
                        seen.lock().unwrap().push((at, None));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        let began = epoch_secs();
                        let _ = lock.unlock().await;
                        calls.lock().unwrap().push((name, began, epoch_secs()));
                    }
                    Ok(false) => {}
                    Err(e) => {
                        seen.lock().unwrap().push((at, Some(e.to_string())));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }));
    }
    // The load is on: every worker group has taken locks.
    let taking = |seen: &Seen| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(_, e)| e.is_none())
            .count()
    };
    assert!(
        support::eventually(Duration::from_secs(10), || async {
            taking(&contended) >= 3 && taking(&churned) >= 3
        })
        .await,
        "the workers took no locks before the fault"
    );

    let began = epoch_secs();
    match fault {
        Fault::Demote => {
            let answer = redis_cli(sentinels[0].port, &["sentinel", "failover", "mymaster"]);
            assert!(
                answer.contains("OK"),
                "SENTINEL FAILOVER answered {answer:?}"
            );
        }
        Fault::Crash => primary.kill(),
    }
    let waiting = Instant::now();
    let switched = loop {
        if let Some(at) = *switch.lock().unwrap() {
            break at;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(30),
            "no +switch-master"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "{fault:?}: +switch-master {:.2} s after the fault began",
        switched - began
    );
    // A replica that needs a full sync (delayed 3 s by the new primary) attaches now.
    let fresh = full_sync
        .then(|| RedisServer::start_with(&["--replicaof", "127.0.0.1", &replica.port.to_string()]));
    // Until both watchdog holds were renewed on the new primary (the 30 s one renews
    // every 10 s), the workers have run there over 3 s and, with `full_sync`, the new
    // replica has finished its (3 s delayed) full sync while locks were being taken.
    let renewed_there = |name: &str| {
        new_writes
            .script_commands_after(switched)
            .iter()
            .any(|(_, line)| line.contains("\"pexpire\"") && line.contains(name))
    };
    let settled = poll_every(Duration::from_secs(30), Duration::from_millis(200), || {
        let linked = fresh.as_ref().is_none_or(|fresh| {
            redis_cli(fresh.port, &["info", "replication"]).contains("master_link_status:up")
        });
        let ready = epoch_secs() > switched + 3.0
            && linked
            && renewed_there(&hold30)
            && renewed_there(&hold10);
        async move { ready }
    })
    .await;
    println!(
        "{fault:?}: holds renewed on the new primary{}: {settled} {:.2} s after the switch",
        if full_sync {
            ", fresh replica synced"
        } else {
            ""
        },
        epoch_secs() - switched
    );
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }

    // 1. Nothing sent to the old primary once the client itself knew of the switch.
    // The test's own subscriber (`switched`) and each client hear the sentinels on
    // connections of their own: on a loaded machine a client may hear it later, and its
    // gate can act only from then (the crate's warning, which names the client). A script
    // that passed the gate before that may still be on its way (fred's queue, the socket)
    // and run on the old primary a little later. So, measured from its client's own
    // notice, a script may run on the old primary only if a call on its lock was already
    // under way then (a worker's call began before the notice and had not returned; the
    // holds' renewals and releases are the crate's own), and within `IN_FLIGHT` of it.
    // Scripts are told apart by their keys: `a` works on hold30 and busy, `b` on hold10
    // and the churn; one naming neither is held to the later notice.
    const IN_FLIGHT: f64 = 0.5;
    let (noticed_a, noticed_b) = (noticed_switch(&a).await, noticed_switch(&b).await);
    let calls = calls.lock().unwrap().clone();
    // (s after the notice, whether a call on its lock was under way then, how long before
    // the notice that call began, the command)
    let after_notice: Vec<(f64, bool, Option<f64>, String)> = old_writes
        .script_commands_after(switched.min(noticed_a).min(noticed_b))
        .into_iter()
        .filter_map(|(at, line)| {
            let noticed = if names(&line, &hold30) || line.contains(busy.as_str()) {
                noticed_a
            } else if names(&line, &hold10) || line.contains("test:fo-churn:") {
                noticed_b
            } else {
                noticed_a.max(noticed_b)
            };
            let call = calls
                .iter()
                .filter(|(name, began, ended)| {
                    names(&line, name) && *began <= noticed && *ended >= noticed
                })
                .map(|(_, began, _)| noticed - began)
                .reduce(f64::min);
            let under_way = call.is_some() || names(&line, &hold30) || names(&line, &hold10);
            (at > noticed).then_some((at - noticed, under_way, call, line))
        })
        .collect();
    let late: Vec<&(f64, bool, Option<f64>, String)> = after_notice
        .iter()
        .filter(|(after, under_way, ..)| !under_way || *after > IN_FLIGHT)
        .collect();
    println!(
        "{fault:?}: the clients heard +switch-master {:+.3} s (a) and {:+.3} s (b) from the test's \
         listener; {} script commands on the old primary after their client's notice (latest \
         {:.3} s after it), {} of calls begun after it or later than {IN_FLIGHT} s",
        noticed_a - switched,
        noticed_b - switched,
        after_notice.len(),
        after_notice
            .iter()
            .map(|(after, ..)| *after)
            .fold(0.0, f64::max),
        late.len()
    );
    for (after, under_way, call, line) in &after_notice {
        println!(
            "  {after:.3} s after the notice (a call under way then: {under_way}, begun {} before \
             the notice): {line}",
            call.map_or("?".to_owned(), |c| format!("{c:.3} s"))
        );
    }
    assert!(
        late.is_empty(),
        "{} script commands ran on the old primary after their client heard +switch-master \
         from a call begun after that, or more than {IN_FLIGHT} s after it; first (s after \
         the notice, a call under way then, how long before the notice it began, command): \
         {:?}",
        late.len(),
        late.first()
    );
    // 2. The first acquisition on the new primary within 2 s of the announcement.
    let first = new_writes
        .script_commands_after(switched)
        .into_iter()
        .find(|(_, line)| line.contains("\"hincrby\""))
        .map(|(at, _)| at - switched);
    println!("{fault:?}: first acquisition on the new primary {first:?} s after +switch-master");
    assert!(
        first.is_some_and(|after| after < 2.0),
        "first acquisition on the new primary: {first:?} s after the switch"
    );
    // Every call failed only in those first 2 s.
    for (what, seen) in [("waiters", &contended), ("churn", &churned)] {
        let seen = seen.lock().unwrap();
        let late_errors: Vec<_> = seen
            .iter()
            .filter(|(at, error)| error.is_some() && *at > switched + 2.0)
            .collect();
        let after: usize = seen
            .iter()
            .filter(|(at, error)| error.is_none() && *at > switched + 2.0)
            .count();
        let errors = seen.iter().filter(|(_, e)| e.is_some()).count();
        let gaps: Vec<f64> = seen
            .windows(2)
            .filter(|w| w[1].0 - w[0].0 > 1.0)
            .map(|w| w[0].0 - switched)
            .collect();
        println!("{fault:?}: {what}: pauses over 1 s starting at {gaps:.2?} s after the switch");
        println!(
            "{fault:?}: {what}: {after} acquisitions 2 s after the switch; {errors} errors in all"
        );
        assert!(
            late_errors.is_empty(),
            "{what}: errors after the switch: {late_errors:?}"
        );
        assert!(after > 0, "{what}: nothing acquired after the switch");
        // No task stalled once the client was on the new primary.
        let stalls: Vec<f64> = gaps.iter().copied().filter(|at| *at > 0.5).collect();
        assert!(
            stalls.is_empty(),
            "{what}: stalled over 1 s at {stalls:.2?} s after the switch"
        );
    }
    // 3. Both watchdog holds survived on the new primary, renewed there.
    let raw = replica.raw().await;
    for (name, client) in [(&hold30, &a), (&hold10, &b)] {
        let hash = hgetall(&raw, name).await;
        assert!(
            hash.len() == 1 && hash[0].0.starts_with(client.id()),
            "{name} not held on the new primary: {hash:?}"
        );
        let renewed = new_writes
            .script_commands_after(switched)
            .iter()
            .any(|(_, line)| line.contains("\"pexpire\"") && line.contains(name.as_str()));
        assert!(renewed, "{name} was not renewed on the new primary");
    }
    guard30.unlock().await.unwrap();
    guard10.unlock().await.unwrap();
    assert!(hgetall(&raw, &hold30).await.is_empty());
    assert!(hgetall(&raw, &hold10).await.is_empty());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoting_failover_moves_to_the_new_primary_at_once() {
    failover_under_load(Fault::Demote, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_failover_moves_to_the_new_primary_at_once() {
    failover_under_load(Fault::Crash, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_in_full_sync_after_a_failover_fails_no_lock() {
    failover_under_load(Fault::Demote, true).await;
}

/// Every query of every primitive waits at the failover gate: once the client has heard
/// a sentinel announce a new primary, no `EXISTS`, `HGET`, `HEXISTS`, `PTTL` or `GET` of
/// a lock, a fenced lock's token, a semaphore or a latch reaches the replaced primary;
/// they wait until the client is on the new one. (Until 0.1 `is_locked`, `hold_count`,
/// `remain_time_to_live`, `is_held_by` and the fenced token went around the gate, while
/// the semaphore's and the latch's reads waited at it.)
///
/// The set-up opens the window the gate is for: after the switch, fred's reconnection
/// lands back on the replaced primary. The old primary is cut off from the sentinels but
/// not from the client (their ACL users lose their permissions: they cannot demote it, and
/// it goes on answering `ROLE` as a primary). The sentinel fred asks first when it
/// reconnects is cut off from the new primary and from the other sentinels (a minority
/// partition, made with ACLs): it misses the failover and names the old primary, where
/// fred lands; fred's next reconnection asks another sentinel. (fred connects through the
/// URL's first `node=`, and then takes that sentinel's `SENTINEL sentinels` answer, in its
/// order, as the sentinels to ask.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_never_reach_a_replaced_primary() {
    init_tracing();
    // Each sentinel has a user of its own on the servers; they reach each other as `peer`.
    let mut users = Vec::new();
    for i in 0..3 {
        users.extend([format!("sentinel-{i}"), "on".into(), ">spw".into()]);
        users.extend(["~*".into(), "&*".into(), "+@all".into()]);
    }
    let mut args: Vec<&str> = users
        .chunks(6)
        .flat_map(|user| std::iter::once("--user").chain(user.iter().map(String::as_str)))
        .collect();
    let primary = RedisServer::start_with(&args);
    let primary_port = primary.port.to_string();
    args.extend(["--replicaof", "127.0.0.1", &primary_port]);
    let replica = RedisServer::start_with(&args);
    wait_replica_linked(replica.port, Duration::from_secs(20));
    // The failover is asked for (`SENTINEL FAILOVER`); with a 60 s down-after no sentinel
    // marks the old primary down, nor fails it over, on its own.
    let sentinels: Vec<SentinelServer> = (0..3)
        .map(|i| {
            let conf = format!(
                "sentinel auth-user mymaster sentinel-{i}\nsentinel auth-pass mymaster spw\n\
                 sentinel sentinel-user peer\nsentinel sentinel-pass pp\n\
                 user peer on >pp ~* &* +@all\n"
            );
            SentinelServer::start_with_conf(primary.port, 60_000, 2, &conf)
        })
        .collect();
    for sentinel in &sentinels {
        sentinel.wait_for(
            |s| s.known_replicas() == 1 && others_known(s) == 2,
            "the sentinels to know the replica and each other",
        );
    }
    let url = format!(
        "redis-sentinel://127.0.0.1:{}/0?node=127.0.0.1:{}&node=127.0.0.1:{}&sentinelServiceName=mymaster",
        sentinels[0].port, sentinels[1].port, sentinels[2].port
    );
    let client = Client::connect(Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let name = key("gate-q");
    let lock = client.get_lock(&name);
    let _held = lock.acquire().await.unwrap();
    let fenced = client.get_fenced_lock(key("gate-f"));
    fenced.lock_and_get_token().await.unwrap();
    fenced.unlock().await.unwrap();
    let semaphore = client.get_semaphore(key("gate-s"));
    assert!(semaphore.try_set_permits(3).await.unwrap());
    let latch = client.get_count_down_latch(key("gate-l"));
    assert!(latch.try_set_count(2).await.unwrap());
    let names = [
        name.clone(),
        fenced.name().to_string(),
        semaphore.name().to_string(),
        latch.name().to_string(),
    ];

    let old = Monitor::start(primary.port);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let asking = {
        let (stop, rounds) = (stop.clone(), rounds.clone());
        let (lock, fenced) = (lock.clone(), fenced.clone());
        let (semaphore, latch) = (semaphore.clone(), latch.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                // Errors are allowed while the client moves; stale answers are not.
                let _ = lock.is_locked().await;
                let _ = lock.hold_count().await;
                let _ = lock.remain_time_to_live().await;
                let _ = lock.is_held_by(redisson_lock::LockOwner::from_raw(7)).await;
                let _ = fenced.token().await;
                let _ = semaphore.available_permits().await;
                let _ = latch.get_count().await;
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let rounds_past = |n: u64| {
        let rounds = rounds.clone();
        async move {
            support::eventually(Duration::from_secs(10), || {
                let rounds = rounds.clone();
                async move { rounds.load(Ordering::Relaxed) >= n }
            })
            .await
        }
    };
    assert!(rounds_past(20).await, "the queries never got going");
    // The partition: no sentinel can use the old primary; the client still can.
    let revoke = |port: u16, user: &str, what: &[&str]| {
        let answer = redis_cli(port, &[&["acl", "setuser", user][..], what].concat());
        assert_eq!(answer.trim(), "OK", "ACL SETUSER {user} on {port}");
    };
    for i in 0..3 {
        revoke(primary.port, &format!("sentinel-{i}"), &["-@all"]);
    }
    // The sentinel fred asks first (the first one `sentinels[1]`, the URL's first `node=`,
    // names) hears neither the new primary nor the other sentinels' hello messages.
    let asked_first = sentinel_ports(&sentinels[1])[0];
    let cut_off = sentinels
        .iter()
        .position(|s| s.port == asked_first)
        .expect("sentinels[1] names one of the set");
    revoke(
        replica.port,
        &format!("sentinel-{cut_off}"),
        &["resetchannels", "-@all"],
    );
    revoke(sentinels[cut_off].port, "peer", &["-publish"]);
    let answer = sentinels[1].failover();
    assert!(answer.contains("OK"), "SENTINEL FAILOVER: {answer}");
    let new_primary = format!("127.0.0.1:{}", replica.port);
    // The switch's text names the new primary as "<ip> <port>".
    let switch_to = format!("127.0.0.1 {}", replica.port);
    let limit = Duration::from_secs(30);
    let announced = events::wait_first(
        &["sentinel failover: moving", client.id(), &switch_to],
        limit,
        &format!("the client heard the switch to {new_primary}"),
    )
    .await;
    let arrived = events::wait_first(
        &["on the new primary after", client.id(), &new_primary],
        limit,
        &format!("the client reached {new_primary}"),
    )
    .await;
    // Queries go on for a while on the new primary.
    let done = rounds.load(Ordering::Relaxed);
    assert!(rounds_past(done + 50).await, "the queries stopped");
    stop.store(true, Ordering::Relaxed);
    asking.await.unwrap();
    // A command already written when the client heard the switch may still arrive: allow
    // a few milliseconds for it.
    let stale: Vec<(f64, String)> = old
        .lines()
        .into_iter()
        .filter(|(at, line)| {
            *at > announced + 0.02
                && !line.contains(" lua] ")
                && names.iter().any(|n| line.contains(n.as_str()))
        })
        .collect();
    let landed_old = |connection: &str| {
        let landed = format!("landed=127.0.0.1:{}", primary.port);
        let words = [
            "not on the new primary yet",
            &new_primary,
            connection,
            &landed,
        ];
        events::all(&words)
            .into_iter()
            .filter(|at| *at >= announced)
            .count()
    };
    let landed = landed_old("connection=commands");
    println!(
        "{} rounds of queries; {} stale (reached the old primary after the switch was heard); \
         on the new primary {:.0} ms after the switch was heard; reconnections after the switch \
         that landed back on the old primary: {landed} of the commands', {} of the subscriptions'",
        rounds.load(Ordering::Relaxed),
        stale.len(),
        (arrived - announced) * 1000.0,
        landed_old("connection=subscriptions"),
    );
    assert!(
        stale.is_empty(),
        "{} queries reached the replaced primary after the client heard the switch, first {:?}",
        stale.len(),
        stale.first().map(|(at, line)| (at - announced, line))
    );
    // The window was there: the command connection was on the old primary after the
    // switch (else the test proves nothing).
    assert!(
        landed > 0,
        "fred never landed back on the old primary: no window for stale queries \
         (does fred still ask the first sentinel's `SENTINEL sentinels` first?)"
    );
    // And they were answered by the new primary.
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(semaphore.available_permits().await.unwrap(), 3);
    assert_eq!(latch.get_count().await.unwrap(), 2);
    client.shutdown().await.unwrap();
}
