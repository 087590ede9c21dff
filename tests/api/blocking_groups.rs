//! The blocking `MultiLock` and `RedLock` (Redisson's `RedissonMultiLock` /
//! `RedissonRedLock` over blocking locks): all or none, the calling thread as the owner,
//! guards that release on drop, a majority over independent servers, and the checks of
//! `new`. The algorithm itself is the async group's (tests/locks/multi_lock.rs, tests/locks/redlock.rs).
#![cfg(feature = "blocking")]

use crate::support;
use support::*;

use std::thread;
use std::time::{Duration, Instant};

use redisson_lock::blocking::{Client, MultiLock, RedLock};
use redisson_lock::{Error, HoldState, LockOwner};

fn connect(server: &RedisServer) -> Client {
    Client::connect(server.config().build().expect("config")).expect("connect")
}

#[test]
fn multi_lock_is_all_or_none_per_thread() {
    let server = RedisServer::start();
    let client = connect(&server);
    let (a, b) = (key("bm-a"), key("bm-b"));
    let group = MultiLock::new([client.get_lock(&a), client.get_lock(&b)]).unwrap();
    assert_eq!(group.names().collect::<Vec<_>>(), [a.as_str(), b.as_str()]);
    assert_eq!(group.required(), 2);
    assert_eq!(group.owner(), LockOwner::current_thread());

    group.lock().unwrap();
    assert!(group.is_held_by_current_thread().unwrap());
    assert!(client.get_lock(&a).is_held_by_current_thread().unwrap());
    // Another thread is another owner: it cannot have the group, nor a member.
    let (other_group, other_member) = (group.clone(), client.get_lock(&b));
    let other = thread::spawn(move || {
        let started = Instant::now();
        let got = other_group
            .try_lock_for(Duration::from_millis(200))
            .unwrap();
        (got, other_member.try_lock().unwrap(), started.elapsed())
    });
    let (got, member, waited) = other.join().unwrap();
    assert!(!got && !member, "held by this thread");
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    group.unlock().unwrap();
    assert!(!client.get_lock(&a).is_locked().unwrap());
    assert!(!client.get_lock(&b).is_locked().unwrap());

    // A member held elsewhere: nothing is taken.
    let blocker = client.get_lock(&b).with_owner(LockOwner::from_raw(7));
    blocker.lock().unwrap();
    assert!(!group.try_lock().unwrap());
    assert!(!client.get_lock(&a).is_locked().unwrap(), "all or none");
    blocker.unlock().unwrap();
    client.shutdown().unwrap();
    assert!(matches!(group.lock(), Err(Error::Shutdown)));
}

#[test]
fn guards_and_the_checks_of_new() {
    let server = RedisServer::start();
    let client = connect(&server);
    let (a, b) = (key("bg-a"), key("bg-b"));
    let group = MultiLock::new([client.get_lock(&a), client.get_lock(&b)]).unwrap();
    // Guards: held, then given back explicitly or on drop.
    let guard = group.acquire_with_lease(Duration::from_secs(10)).unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    assert!(!guard.is_lost());
    assert_eq!(guard.owner(), LockOwner::current_thread());
    guard.unlock().unwrap();
    assert!(!client.get_lock(&a).is_locked().unwrap());
    let guard = group
        .try_acquire_for(Duration::from_secs(1))
        .unwrap()
        .expect("free");
    let moved = thread::spawn(move || drop(guard));
    moved.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while client.get_lock(&a).is_locked().unwrap() || client.get_lock(&b).is_locked().unwrap() {
        assert!(
            Instant::now() < deadline,
            "a dropped guard releases its members"
        );
        thread::sleep(Duration::from_millis(10));
    }
    let guard = group
        .try_acquire_with_lease(Duration::ZERO, Duration::from_secs(5))
        .unwrap()
        .expect("free");
    let held_as = guard.owner();
    // A handle acting as the guard's owner can release from any thread.
    let handle = group.with_owner(held_as);
    std::mem::forget(guard);
    thread::spawn(move || handle.unlock())
        .join()
        .unwrap()
        .unwrap();
    assert!(!client.get_lock(&b).is_locked().unwrap());

    assert!(matches!(
        MultiLock::new(Vec::<redisson_lock::blocking::RLock>::new()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        MultiLock::new([client.get_lock(&a), client.get_lock(&a)]),
        Err(Error::DuplicateMember { .. })
    ));
    client.shutdown().unwrap();
}

#[test]
fn red_lock_holds_a_majority_of_servers() {
    let servers = [
        RedisServer::start(),
        RedisServer::start(),
        RedisServer::start(),
    ];
    let clients: Vec<Client> = servers.iter().map(connect).collect();
    let name = key("brl");
    let red = RedLock::new(clients.iter().map(|c| c.get_lock(&name))).unwrap();
    assert_eq!(red.required(), 2);
    // One server's lock is taken by someone else: a majority is still possible.
    let other = clients[2]
        .get_lock(&name)
        .with_owner(LockOwner::from_raw(9));
    other.lock().unwrap();
    let guard = red
        .try_acquire_for(Duration::from_secs(2))
        .unwrap()
        .expect("majority");
    assert_eq!(guard.held_count(), 2, "the two free members");
    assert_eq!(guard.members(), [0, 1]);
    assert_eq!(guard.tokens(), [None, None, None], "no fenced member");
    assert!(
        clients[0]
            .get_lock(&name)
            .is_held_by_current_thread()
            .unwrap()
    );
    assert!(
        clients[1]
            .get_lock(&name)
            .is_held_by_current_thread()
            .unwrap()
    );
    assert!(red.is_held_by_current_thread().unwrap());
    guard.unlock().unwrap();
    assert!(!clients[0].get_lock(&name).is_locked().unwrap());
    other.unlock().unwrap();
    red.lock_with_lease(Duration::from_secs(5)).unwrap();
    // Every member the group kept has the 5 s lease (a member whose `PEXPIRE` missed the
    // response timeout on a loaded machine is dropped from the group and released in the
    // background, with its temporary lease until then): at least a majority.
    let ttls: Vec<Option<Duration>> = clients
        .iter()
        .map(|c| c.get_lock(&name).remain_time_to_live().unwrap())
        .collect();
    let leased = ttls
        .iter()
        .filter(|t| t.is_some_and(|t| t <= Duration::from_secs(5)))
        .count();
    assert!(leased >= red.required(), "{ttls:?}");
    red.unlock().unwrap();
    for client in &clients {
        client.shutdown().unwrap();
    }
}
