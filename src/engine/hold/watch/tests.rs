//! Tests of `HoldWatch`: states, waits and the rules of groups.

use super::*;
use crate::engine::hold::state::Cause;

fn held(lease_ms: u64) -> Arc<HoldSignal> {
    Arc::new(HoldSignal::new(
        Instant::now(),
        lease_ms,
        lease_ms / 50 + 10,
    ))
}

fn confirm(signal: &HoldSignal) {
    signal.confirm(Instant::now(), 30_000, 610, false, true);
}

#[test]
fn a_watch_is_small() {
    // A lock guard's watch is its signal's `Arc` and its lease end: no allocation.
    assert!(std::mem::size_of::<HoldWatch>() <= 32);
}

/// A risk that begins and ends before the waiting task runs still completes
/// `at_risk()` (the channel then holds `Held` again), as it does the blocking wait; a
/// risk seen before the call does not; a Redlock member's is not the group's.
#[tokio::test]
async fn a_risk_shorter_than_a_wake_up_still_completes_at_risk() {
    let short_risk = |signal: &HoldSignal| {
        signal.suspend(Cause::ConnectionLost, Instant::now());
        confirm(signal);
        assert_eq!(signal.state(), HoldState::Held);
    };
    let within = Duration::from_secs(2);
    let signal = held(30_000);
    let watch = HoldWatch::one(signal.clone(), None);
    let waiting = watch.at_risk();
    short_risk(&signal);
    let state = tokio::time::timeout(within, waiting).await;
    assert_eq!(state, Ok(HoldState::AtRisk), "the short risk was missed");
    let later = watch.at_risk();
    assert!(
        tokio::time::timeout(Duration::from_millis(50), later)
            .await
            .is_err(),
        "a risk seen before the call"
    );

    let members: Vec<_> = (0..2).map(|_| held(30_000)).collect();
    let multi = HoldWatch::group(members.clone(), 0, None);
    let waiting = multi.at_risk();
    short_risk(&members[1]);
    assert_eq!(
        tokio::time::timeout(within, waiting).await,
        Ok(HoldState::AtRisk)
    );
    let members: Vec<_> = (0..3).map(|_| held(30_000)).collect();
    let redlock = HoldWatch::group(members.clone(), 1, None);
    let waiting = redlock.at_risk();
    short_risk(&members[0]);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), waiting)
            .await
            .is_err(),
        "one member of three at risk is not the Redlock's risk"
    );

    // The blocking wait, on a thread of its own.
    let blocking = watch.clone();
    let waiter = std::thread::spawn(move || blocking.wait_at_risk(Duration::from_secs(5)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    short_risk(&signal);
    assert_eq!(waiter.join().unwrap(), Some(HoldState::AtRisk));
}

#[tokio::test(start_paused = true)]
async fn a_redlock_of_three_tolerates_one_member() {
    let members: Vec<_> = (0..3).map(|_| held(30_000)).collect();
    let watch = HoldWatch::group(members.clone(), 1, None);
    members[0].suspend(Cause::ConnectionLost, Instant::now());
    assert_eq!(watch.state(), HoldState::Held);
    members[1].suspend(Cause::ConnectionLost, Instant::now());
    assert_eq!(watch.state(), HoldState::AtRisk);
    assert_eq!(watch.at_risk().await, HoldState::AtRisk);
    tokio::time::advance(Duration::from_millis(5)).await;
    confirm(&members[1]);
    assert_eq!(watch.state(), HoldState::Held);
    members[0].lose(Cause::FieldGone);
    assert_eq!(watch.state(), HoldState::Held);
    members[2].lose(Cause::FieldGone);
    assert_eq!(watch.state(), HoldState::Lost);
    watch.lost().await;
    // A multi-lock tolerates none.
    let members: Vec<_> = (0..2).map(|_| held(30_000)).collect();
    let multi = HoldWatch::group(members.clone(), 0, None);
    members[1].suspend(Cause::ConnectionLost, Instant::now());
    assert_eq!(multi.state(), HoldState::AtRisk);
}

#[tokio::test(start_paused = true)]
async fn waits_follow_the_clock_and_the_lease_end() {
    // A member's deadline and expiry, read from the clock, wake the waits.
    let signal = held(1_000);
    let watch = HoldWatch::one(signal.clone(), None);
    let start = Instant::now();
    let around = |ms: u64| {
        let elapsed = start.elapsed().as_millis() as u64;
        assert!(
            elapsed + 2 >= ms && elapsed <= ms + 2,
            "{elapsed} ms, not {ms}"
        );
    };
    assert_eq!(watch.at_risk().await, HoldState::AtRisk);
    around(970);
    watch.lost().await;
    around(1_001);
    // A guard's lease end makes it lost, whatever its signal says.
    let end = Instant::now() + Duration::from_secs(2);
    let lease = HoldWatch::one(held(30_000), Some(end));
    assert_eq!(lease.at_risk().await, HoldState::Lost);
    around(3_001);
    // A group's lease end too.
    let group = HoldWatch::group(vec![held(30_000), held(30_000)], 0, Some(end));
    assert_eq!(group.state(), HoldState::Lost);
    let end = Instant::now() + Duration::from_secs(1);
    let group = HoldWatch::group(vec![held(30_000), held(30_000)], 0, Some(end));
    group.lost().await;
    around(4_001);
}

#[tokio::test(start_paused = true)]
async fn held_again_comes_back_and_never_once_lost() {
    let members: Vec<_> = (0..2).map(|_| held(30_000)).collect();
    let watch = HoldWatch::group(members.clone(), 0, None);
    watch.held_again().await;
    members[0].suspend(Cause::ConnectionLost, Instant::now());
    let again = tokio::spawn({
        let watch = watch.clone();
        async move { watch.held_again().await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!again.is_finished());
    confirm(&members[0]);
    tokio::time::timeout(Duration::from_millis(10), again)
        .await
        .expect("held again once the member is confirmed")
        .unwrap();
    members[1].lose(Cause::FieldGone);
    let never = tokio::time::timeout(Duration::from_secs(60), watch.held_again()).await;
    assert!(never.is_err(), "held_again completed once lost");
}

#[tokio::test(start_paused = true)]
async fn a_group_feeds_every_receiver_from_one_task() {
    let members: Vec<_> = (0..3).map(|_| held(30_000)).collect();
    let watch = HoldWatch::group(members.clone(), 1, None);
    let Watched::Group(group) = &watch.0 else {
        unreachable!()
    };
    let mut first = watch.state_changes();
    let mut second = watch.state_changes();
    tokio::task::yield_now().await;
    assert_eq!(Arc::strong_count(group), 2, "one feeder for both receivers");
    members[0].suspend(Cause::ConnectionLost, Instant::now());
    members[1].suspend(Cause::ConnectionLost, Instant::now());
    first.changed().await.unwrap();
    assert_eq!(*first.borrow_and_update(), HoldState::AtRisk);
    second.changed().await.unwrap();
    assert_eq!(*second.borrow_and_update(), HoldState::AtRisk);
    tokio::time::advance(Duration::from_millis(5)).await;
    confirm(&members[0]);
    first.changed().await.unwrap();
    assert_eq!(*first.borrow_and_update(), HoldState::Held);
    // Nobody listens: the feeder ends; a new receiver starts another.
    drop((first, second));
    settle(group).await;
    assert_eq!(Arc::strong_count(group), 1, "the feeder ended");
    let mut third = watch.state_changes();
    assert_eq!(*third.borrow_and_update(), HoldState::Held);
    members[0].lose(Cause::FieldGone);
    members[2].lose(Cause::FieldGone);
    third.changed().await.unwrap();
    assert_eq!(*third.borrow_and_update(), HoldState::Lost);
    // Lost: the feeder is done; later receivers see `Lost` at once.
    settle(group).await;
    assert_eq!(Arc::strong_count(group), 1);
    assert_eq!(*watch.state_changes().borrow(), HoldState::Lost);
}

/// Lets the feeder run until it is the group's only other owner, or gone.
async fn settle(group: &Arc<Group>) {
    for _ in 0..100 {
        if Arc::strong_count(group) == 1 {
            return;
        }
        tokio::task::yield_now().await;
    }
}

#[test]
fn blocking_waits_need_no_runtime() {
    // Outside any runtime: the deadline by the clock, then the expiry.
    let watch = HoldWatch::one(held(400), None);
    let start = std::time::Instant::now();
    assert_eq!(watch.wait_at_risk(Duration::from_millis(10)), None);
    assert_eq!(
        watch.wait_at_risk(Duration::from_secs(5)),
        Some(HoldState::AtRisk)
    );
    assert!(start.elapsed() >= Duration::from_millis(350));
    assert!(!watch.wait_held_again(Duration::from_millis(10)));
    assert!(watch.wait_lost(Duration::from_secs(5)));
    assert!(start.elapsed() >= Duration::from_millis(400));
    assert!(start.elapsed() < Duration::from_secs(4));
    // A published change wakes a blocked thread at once: a fault, then a confirmation.
    let signal = held(30_000);
    let group = HoldWatch::group(vec![signal.clone(), held(30_000)], 0, None);
    let (told, at_risk) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn({
        let group = group.clone();
        move || {
            told.send(group.wait_at_risk(Duration::from_secs(20)))
                .unwrap();
            group.wait_held_again(Duration::from_secs(20))
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    let fault = std::time::Instant::now();
    signal.suspend(Cause::ConnectionLost, Instant::now());
    assert_eq!(
        at_risk.recv_timeout(Duration::from_secs(10)).unwrap(),
        Some(HoldState::AtRisk)
    );
    assert!(
        fault.elapsed() < Duration::from_secs(5),
        "{:?}",
        fault.elapsed()
    );
    confirm(&signal);
    assert!(waiter.join().unwrap(), "held again once confirmed");
    assert!(fault.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_waits_inside_a_runtime_do_not_panic() {
    let watch = HoldWatch::one(held(30_000), None);
    assert_eq!(watch.wait_at_risk(Duration::from_millis(20)), None);
    assert!(watch.wait_held_again(Duration::ZERO));
    assert!(!watch.wait_lost(Duration::from_millis(20)));
    let group = HoldWatch::group(vec![held(30_000)], 0, None);
    assert_eq!(group.wait_at_risk(Duration::from_millis(20)), None);
    let in_task = tokio::spawn(async move { group.wait_lost(Duration::from_millis(20)) });
    assert!(!in_task.await.unwrap());
}
