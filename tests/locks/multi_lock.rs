//! MultiLock: several locks of any kinds, on several servers, taken all or none by one
//! owner, on three real redis-server processes.

use crate::support;
use support::*;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use redisson_lock::fred::prelude::*;
use redisson_lock::kinds::AnyLock;
use redisson_lock::{Error, HoldState, LockOwner, MultiLock};

async fn three() -> (Vec<RedisServer>, Vec<redisson_lock::Client>, Vec<Client>) {
    let fleet = Fleet::new(3, |c| c).await;
    (fleet.servers, fleet.clients, fleet.raws)
}

/// `CLIENT PAUSE ms ALL` on one server: every command waits.
async fn pause(raw: &Client, ms: u64) {
    let _: () = raw
        .custom(
            fred::cmd!("CLIENT"),
            vec!["PAUSE".to_string(), ms.to_string(), "ALL".into()],
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_pairs_in_both_orders_never_deadlock_and_count_exactly() {
    // 2 clients (each with a connection to every server) x 8 tasks, random pairs of 6
    // names spread over 3 servers, half of the tasks listing them in reverse order, 10 s.
    const RUN: Duration = Duration::from_secs(10);
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let names: Vec<String> = (0..6).map(|i| key(&format!("pair{i}"))).collect();
    let server_of = |i: usize| i % 3;
    let mut raws = Vec::new();
    for server in &servers {
        raws.push(server.raw().await);
    }
    let in_use: Arc<Vec<AtomicBool>> = Arc::new((0..6).map(|_| AtomicBool::new(false)).collect());
    let expected: Arc<Vec<AtomicU64>> = Arc::new((0..6).map(|_| AtomicU64::new(0)).collect());
    let overlaps = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for participant in 0..2 {
        let mut clients = Vec::new();
        for server in &servers {
            clients.push(server.client().await);
        }
        for t in 0..8 {
            let (clients, raws, names) = (clients.clone(), raws.clone(), names.clone());
            let (in_use, expected, overlaps) = (in_use.clone(), expected.clone(), overlaps.clone());
            let reverse = t % 2 == 1;
            tasks.push(tokio::spawn(async move {
                let mut done_at = Vec::new();
                while start.elapsed() < RUN {
                    let mut pair: Vec<usize> = {
                        let mut rng = rand::thread_rng();
                        let mut all: Vec<usize> = (0..6).collect();
                        all.shuffle(&mut rng);
                        let mut pair = all[..2].to_vec();
                        pair.sort();
                        pair
                    };
                    if reverse {
                        pair.reverse();
                    }
                    let group = MultiLock::new(
                        pair.iter()
                            .map(|&i| clients[server_of(i)].get_lock(names[i].clone())),
                    )
                    .unwrap();
                    group.lock().await.unwrap();
                    for &i in &pair {
                        if in_use[i].swap(true, Ordering::SeqCst) {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    // A read-modify-write that loses updates without mutual exclusion.
                    for &i in &pair {
                        let raw = &raws[server_of(i)];
                        let counter = format!("{}:count", names[i]);
                        let n: Option<u64> = raw.get(&counter).await.unwrap();
                        tokio::task::yield_now().await;
                        let _: () = raw
                            .set(&counter, n.unwrap_or(0) + 1, None, None, false)
                            .await
                            .unwrap();
                        expected[i].fetch_add(1, Ordering::SeqCst);
                    }
                    for &i in &pair {
                        in_use[i].store(false, Ordering::SeqCst);
                    }
                    group.unlock().await.unwrap();
                    done_at.push(start.elapsed());
                    let _ = participant;
                }
                done_at
            }));
        }
    }
    let mut per_task = Vec::new();
    for task in tasks {
        per_task.push(task.await.unwrap());
    }
    let counts: Vec<usize> = per_task.iter().map(Vec::len).collect();
    let longest_gap = per_task
        .iter()
        .flat_map(|done| {
            let mut last = Duration::ZERO;
            done.iter()
                .map(move |&at| {
                    let gap = at - last;
                    last = at;
                    gap
                })
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap();
    println!(
        "pairs per task: {counts:?}; longest wait between two pairs of one task: {longest_gap:?}"
    );
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two holders at once");
    for (i, name) in names.iter().enumerate() {
        let n: Option<u64> = raws[server_of(i)]
            .get(format!("{name}:count"))
            .await
            .unwrap();
        assert_eq!(
            n.unwrap_or(0),
            expected[i].load(Ordering::SeqCst),
            "counter of {name}"
        );
        assert!(!exists(&raws[server_of(i)], name).await, "{name} left held");
    }
    for (task, done) in per_task.iter().enumerate() {
        assert!(
            done.len() >= 10,
            "task {task} made only {} pairs",
            done.len()
        );
        // Progress all along: the last pair is near the end of the run.
        assert!(
            *done.last().unwrap() >= RUN - Duration::from_secs(2),
            "task {task} stopped making progress at {:?}",
            done.last()
        );
    }
    assert!(
        longest_gap < Duration::from_secs(5),
        "a task waited {longest_gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_held_elsewhere_fails_after_the_wait_and_leaves_nothing_held() {
    let (servers, clients, raws) = three().await;
    let names: Vec<String> = (0..3).map(|i| key(&format!("held{i}"))).collect();
    // Another process holds the middle member (a Java one: `tests/java/locks.rs`).
    let elsewhere = servers[1].client().await;
    let holder = elsewhere
        .get_lock(names[1].clone())
        .with_owner(redisson_lock::LockOwner::from_raw(77));
    holder
        .lock_with_lease(Duration::from_secs(30))
        .await
        .unwrap();
    let java_field = format!("{}:77", elsewhere.id());
    let group = MultiLock::new((0..3).map(|i| clients[i].get_lock(names[i].clone()))).unwrap();

    let started = Instant::now();
    let taken = group
        .try_lock_with_lease(Duration::from_millis(300), Duration::from_secs(10))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(!taken);
    assert!(took >= Duration::from_millis(290), "gave up after {took:?}");
    assert!(took < Duration::from_millis(1300), "gave up after {took:?}");
    assert!(!exists(&raws[0], &names[0]).await);
    assert!(!exists(&raws[2], &names[2]).await);
    assert_eq!(
        hgetall(&raws[1], &names[1]).await,
        vec![(java_field, "1".to_string())]
    );
    assert!(!group.is_held_by_current_task().await.unwrap());

    // Once the holder lets go, the group is had.
    holder.unlock().await.unwrap();
    assert!(
        group
            .try_lock_for(Duration::from_millis(300))
            .await
            .unwrap()
    );
    assert!(group.is_held_by_current_task().await.unwrap());
    group.unlock().await.unwrap();
    for i in 0..3 {
        assert!(!exists(&raws[i], &names[i]).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_kinds_are_held_by_one_owner_and_get_the_lease() {
    let (_servers, clients, raws) = three().await;
    let n: Vec<String> = (0..6).map(|i| key(&format!("kind{i}"))).collect();
    let group = MultiLock::new([
        AnyLock::from(clients[0].get_lock(n[0].clone())),
        clients[0].get_fair_lock(n[1].clone()).into(),
        clients[1]
            .get_read_write_lock(n[2].clone())
            .read_lock()
            .into(),
        clients[1]
            .get_read_write_lock(n[3].clone())
            .write_lock()
            .into(),
        clients[2].get_fenced_lock(n[4].clone()).into(),
        clients[2].get_spin_lock(n[5].clone()).into(),
    ])
    .unwrap()
    .with_owner(LockOwner::from_raw(42));

    // Temporary lease 2 x 1 s, then PEXPIRE to the 5 s lease.
    let guard = group
        .try_acquire_with_lease(Duration::from_secs(1), Duration::from_secs(5))
        .await
        .unwrap()
        .expect("free members");
    assert_eq!(guard.held_count(), 6);
    let tokens = guard.tokens();
    assert!(tokens[4].is_some() && tokens.iter().filter(|t| t.is_some()).count() == 1);
    let server = [0, 0, 1, 1, 2, 2];
    for i in 0..6 {
        let raw = &raws[server[i]];
        let ttl = pttl(raw, &n[i]).await;
        assert!((4_000..=5_000).contains(&ttl), "{} PTTL {ttl}", n[i]);
        let field = format!("{}:42", clients[server[i]].id());
        let fields = hgetall(raw, &n[i]).await;
        let mut expect: Vec<(String, String)> = match i {
            2 => vec![("mode".into(), "read".into()), (field, "1".into())],
            3 => vec![
                ("mode".into(), "write".into()),
                (format!("{field}:write"), "1".into()),
            ],
            _ => vec![(field, "1".into())],
        };
        expect.sort();
        assert_eq!(fields, expect, "{}", n[i]);
    }
    assert!(!guard.is_lost());
    guard.unlock().await.unwrap();
    for i in 0..6 {
        assert!(!exists(&raws[server[i]], &n[i]).await, "{} left", n[i]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_typed_error_and_leaves_nothing_held() {
    let (servers, clients, raws) = three().await;
    let empty: Vec<AnyLock> = Vec::new();
    match MultiLock::new(empty) {
        Err(Error::InvalidArgument(text)) => assert_eq!(text, "Lock objects are not defined"),
        other => panic!("{other:?}"),
    }
    let a = key("dup");
    assert!(matches!(
        MultiLock::new([clients[0].get_lock(a.clone()), clients[0].get_lock(a.clone())]),
        Err(Error::DuplicateMember { name }) if name == a
    ));
    // The two halves of one read-write lock are one hash.
    let rw = clients[0].get_read_write_lock(a.clone());
    assert!(matches!(
        MultiLock::new([AnyLock::from(rw.read_lock()), rw.write_lock().into()]),
        Err(Error::DuplicateMember { .. })
    ));
    // A second client on the same server is the same server.
    let second = servers[0].client().await;
    assert!(matches!(
        MultiLock::new([clients[0].get_lock(a.clone()), second.get_lock(a.clone())]),
        Err(Error::DuplicateMember { .. })
    ));
    // The same name on two servers is two locks.
    assert!(
        MultiLock::new([
            clients[0].get_lock(a.clone()),
            clients[1].get_lock(a.clone())
        ])
        .is_ok()
    );

    // A member whose client was shut down.
    let doomed = servers[2].client().await;
    let names: Vec<String> = (0..3).map(|i| key(&format!("bad{i}"))).collect();
    let late = MultiLock::new([
        clients[0].get_lock(names[0].clone()),
        clients[1].get_lock(names[1].clone()),
        doomed.get_lock(names[2].clone()),
    ])
    .unwrap();
    doomed.shutdown().await.unwrap();
    assert!(matches!(late.lock().await, Err(Error::Shutdown)));
    assert!(matches!(late.try_lock().await, Err(Error::Shutdown)));
    assert!(matches!(late.unlock().await, Err(Error::Shutdown)));
    assert!(matches!(
        MultiLock::new([
            clients[0].get_lock(names[0].clone()),
            doomed.get_lock(names[2].clone())
        ]),
        Err(Error::Shutdown)
    ));
    assert!(!exists(&raws[0], &names[0]).await && !exists(&raws[1], &names[1]).await);

    // A lease shorter than taking the members took: one server is paused for 300 ms.
    let group = MultiLock::new((0..3).map(|i| clients[i].get_lock(names[i].clone()))).unwrap();
    pause(&raws[2], 300).await;
    let started = Instant::now();
    match group
        .try_lock_with_lease(Duration::ZERO, Duration::from_millis(100))
        .await
    {
        Err(Error::LeaseTooShort { lease, elapsed }) => {
            assert_eq!(lease, Duration::from_millis(100));
            assert!(elapsed >= Duration::from_millis(100), "{elapsed:?}");
        }
        other => panic!("{other:?} after {:?}", started.elapsed()),
    }
    for i in 0..3 {
        assert!(!exists(&raws[i], &names[i]).await, "{} left held", names[i]);
    }
    // A zero lease is rejected before any I/O.
    assert!(matches!(
        group
            .try_lock_with_lease(Duration::ZERO, Duration::ZERO)
            .await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_lock_futures_leave_no_member_held() {
    let (_servers, clients, raws) = three().await;
    let names: Vec<String> = (0..3).map(|i| key(&format!("cancel{i}"))).collect();
    let group = MultiLock::new((0..3).map(|i| clients[i].get_lock(names[i].clone()))).unwrap();
    // Someone else keeps taking the middle member for a few ms at a time.
    let stop = Arc::new(AtomicBool::new(false));
    let contender = {
        let lock = clients[1].get_lock(names[1].clone());
        keep_contending(stop.clone(), move || {
            let lock = lock.clone();
            async move {
                lock.lock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(3)).await;
                lock.unlock().await.unwrap();
            }
        })
    };
    let (taken, dropped) = drop_group_lock_futures(&group, 150).await;
    stop.store(true, Ordering::Relaxed);
    contender.await.unwrap();
    println!("150 rounds: {taken} taken, {dropped} dropped mid-way");
    assert!(dropped > 0);
    for i in 0..3 {
        let raw = &raws[i];
        assert!(
            gone_within(raw, &names[i], Duration::from_secs(5))
                .await
                .is_some(),
            "{} still held: {:?}",
            names[i],
            hgetall(raw, &names[i]).await
        );
    }
    let renewed: usize = clients.iter().map(|c| c.renewed_locks()).sum();
    assert_eq!(renewed, 0, "a dropped acquisition is still renewed");
}

/// The group's signal, its watch: at risk within moments of one member's connection kill
/// (a false alarm), held again once that member is confirmed, seen alike by the guard, a
/// clone of its watch in another task and every `state_changes()` receiver; lost once a
/// member is found gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_is_at_risk_then_held_again_at_a_member_connection_kill() {
    let Fleet {
        servers: _servers,
        clients,
        raws,
    } = Fleet::new(3, |c| c.watchdog_timeout(Duration::from_millis(900))).await;
    let names: Vec<String> = (0..3).map(|i| key(&format!("kill{i}"))).collect();
    let group = MultiLock::new((0..3).map(|i| clients[i].get_lock(names[i].clone()))).unwrap();
    let guard = group.acquire().await.unwrap();
    let watch = guard.watch().clone();
    let (mut changes, mut also) = (guard.state_changes(), watch.state_changes());
    assert_eq!(*changes.borrow_and_update(), HoldState::Held);
    let told = tokio::spawn(async move {
        let state = watch.at_risk().await;
        (state, Instant::now())
    });

    let fault = Instant::now();
    assert!(kill_clients(&raws[1], "normal").await >= 1);
    let (state, at) = tokio::time::timeout(Duration::from_secs(2), told)
        .await
        .expect("the group is at risk with one member's connection killed")
        .unwrap();
    assert_eq!(state, HoldState::AtRisk);
    assert!(at - fault < Duration::from_secs(1), "{:?}", at - fault);
    for receiver in [&mut changes, &mut also] {
        let seen = tokio::time::timeout(
            Duration::from_secs(2),
            receiver.wait_for(|s| *s == HoldState::AtRisk),
        )
        .await
        .is_ok_and(|seen| seen.is_ok());
        assert!(seen, "a receiver missed the risk");
    }
    tokio::time::timeout(Duration::from_secs(5), guard.held_again())
        .await
        .expect("held again once the member is confirmed after its reconnect");
    assert_eq!(guard.state(), HoldState::Held);
    for receiver in [&mut changes, &mut also] {
        let seen = tokio::time::timeout(
            Duration::from_secs(2),
            receiver.wait_for(|s| *s == HoldState::Held),
        )
        .await
        .is_ok_and(|seen| seen.is_ok());
        assert!(seen, "a receiver missed the recovery");
    }

    // Another member deleted behind its back: lost at its next renewal.
    let _: () = raws[0].del(&names[0]).await.unwrap();
    tokio::time::timeout(Duration::from_secs(3), guard.watch().lost())
        .await
        .expect("lost once a member is found gone");
    assert!(guard.is_lost());
    let seen = tokio::time::timeout(
        Duration::from_secs(2),
        changes.wait_for(|s| *s == HoldState::Lost),
    )
    .await
    .is_ok_and(|seen| seen.is_ok());
    assert!(seen, "the receiver missed the loss");
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner { .. })));
    for client in clients {
        // One client's connections were killed: closing may race its reconnect.
        let _ = client.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_is_lost_when_any_member_is() {
    let Fleet {
        servers: _servers,
        clients,
        raws,
    } = Fleet::new(3, |c| c.watchdog_timeout(Duration::from_millis(900))).await;
    let names: Vec<String> = (0..3).map(|i| key(&format!("lost{i}"))).collect();
    let group = MultiLock::new((0..3).map(|i| clients[i].get_lock(names[i].clone()))).unwrap();
    let guard = group.acquire().await.unwrap();
    // Every member renewed.
    for i in 0..3 {
        assert!(rearmed(&raws[i], &names[i]).await, "member {i} not renewed");
    }
    assert!(!guard.is_lost());
    for i in 0..3 {
        assert!(exists(&raws[i], &names[i]).await);
    }
    // Someone deletes one member: the guard learns it at the next renewal.
    let _: () = raws[2].del(&names[2]).await.unwrap();
    tokio::time::timeout(Duration::from_millis(1_500), guard.lost())
        .await
        .expect("lost() did not fire");
    assert!(guard.is_lost());
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner { .. })));
    // The other members were still released.
    assert!(!exists(&raws[0], &names[0]).await && !exists(&raws[1], &names[1]).await);

    // Re-entry: the same owner takes the group twice and needs two unlocks.
    group.lock().await.unwrap();
    group.lock().await.unwrap();
    let field = |i: usize| format!("{}:{}", clients[i].id(), group.owner());
    assert_eq!(
        hgetall(&raws[0], &names[0]).await,
        vec![(field(0), "2".to_string())]
    );
    group.unlock().await.unwrap();
    assert!(group.is_held_by_current_task().await.unwrap());
    group.unlock().await.unwrap();
    assert!(!group.is_held_by_current_task().await.unwrap());
    let counts: HashMap<usize, bool> = futures::future::join_all((0..3).map(|i| {
        let raw = raws[i].clone();
        let name = names[i].clone();
        async move { (i, exists(&raw, &name).await) }
    }))
    .await
    .into_iter()
    .collect();
    assert!(counts.values().all(|held| !held));
    assert!(matches!(group.unlock().await, Err(Error::NotOwner { .. })));
}
