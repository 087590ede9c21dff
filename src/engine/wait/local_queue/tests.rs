//! The local line's bookkeeping, without Redis.

use super::*;

const A: LockOwner = LockOwner::from_raw(1);
const B: LockOwner = LockOwner::from_raw(2);
const C: LockOwner = LockOwner::from_raw(3);

fn limits(in_a_row: u32, count_listeners: bool) -> HandoffLimits {
    HandoffLimits {
        in_a_row,
        time: Duration::from_secs(60),
        count_listeners,
        mark_lines: count_listeners,
    }
}

fn line() -> (LocalQueues, Arc<Line>) {
    let queues = LocalQueues::default();
    let line = queues.get_or_make(&Arc::from("n"));
    (queues, line)
}

#[tokio::test]
async fn the_first_waiter_is_the_head_and_the_rest_queue_in_order() {
    let (queues, line) = line();
    assert!(queues.get("n").is_some());
    line.taken_by(A, None);
    assert!(line.should_queue(B));
    assert!(!line.should_queue(A), "a re-entry never queues");
    let b = line.join(B, None);
    let c = line.join(C, None);
    assert_eq!(b.stage(), Stage::Head);
    assert_eq!(c.stage(), Stage::Queued);
    assert_eq!(queues.waiting(), 2);
    // The head hands off; the next one becomes the head.
    let handoff = line.begin_handoff(A, &limits(8, true)).unwrap();
    assert_eq!((handoff.to, handoff.listeners), (B, -1));
    assert_eq!(b.stage(), Stage::Handing);
    assert!(
        !b.start_trying(),
        "no try while a hand-off to it is in flight"
    );
    assert!(line.handed(&handoff));
    assert!(matches!(b.stage(), Stage::Granted { .. }));
    assert_eq!(c.stage(), Stage::Head, "promoted, but not woken: B holds");
    assert_eq!(line.local_holder_other_than(C), Some(None));
    b.take_grant();
    assert_eq!(c.leave(None), Left::Nothing);
    queues.retire_if_idle(&line);
    assert!(queues.get("n").is_none());
}

#[tokio::test]
async fn a_waiter_that_leaves_during_its_hand_off_is_given_back() {
    let (_queues, line) = line();
    line.taken_by(A, None);
    let b = line.join(B, Some(1_000));
    let handoff = line.begin_handoff(A, &limits(8, true)).unwrap();
    assert_eq!(handoff.lease_ms, Some(1_000));
    drop(b);
    assert!(
        !line.handed(&handoff),
        "the releasing side must give it back"
    );
    // Granted, then dropped before taking it: the leaver gives it back.
    let c = line.join(C, None);
    let handoff = line.begin_handoff(B, &limits(8, true)).unwrap();
    assert!(line.handed(&handoff));
    assert!(matches!(c.leave(None), Left::GiveBack { .. }));
}

#[tokio::test]
async fn hand_offs_are_bounded() {
    let (_queues, line) = line();
    line.taken_by(A, None);
    let mut from = A;
    for (i, owner) in (10..13).map(LockOwner::from_raw).enumerate() {
        let ticket = line.join(owner, None);
        let handoff = line.begin_handoff(from, &limits(2, true)).unwrap();
        // Within the bound: -1; past it, on a single server: at most our listener.
        assert_eq!(handoff.listeners, if i < 2 { -1 } else { 0 });
        assert!(line.handed(&handoff));
        ticket.take_grant();
        from = owner;
    }
    // Past the bound on Sentinel or Cluster: no hand-off, a real release.
    let _ticket = line.join(C, None);
    assert!(line.begin_handoff(from, &limits(2, false)).is_none());
    // Off altogether.
    assert!(line.begin_handoff(from, &limits(0, true)).is_none());
}

#[tokio::test]
async fn a_release_that_yields_holds_the_head_back_until_another_release() {
    let (_queues, line) = line();
    line.taken_by(A, None);
    let b = line.join(B, None);
    // No turn counted yet: the bounds alone; within them the script counts nothing.
    let handoff = line.begin_handoff(A, &limits(1, true)).unwrap();
    assert!(handoff.turn_goes_on);
    assert!(
        !handoff.marked,
        "within the bounds and the turn: nothing to count"
    );
    line.not_handed(&handoff, true, Some(1));
    let published = line.take_published().unwrap();
    assert_eq!(published.yielded_until, Some(handoff.messages + 1 + 1));
    assert!(yield_time(published.round_trip) >= MIN_YIELD);
    // A hand-off past the bounds on a single server counts, with the mark.
    let handoff = line.begin_handoff(A, &limits(1, true)).unwrap();
    assert!(line.handed(&handoff));
    b.take_grant();
    let _c = line.join(C, None);
    let handoff = line.begin_handoff(B, &limits(1, true)).unwrap();
    assert_eq!(handoff.listeners, 0);
    assert!(handoff.marked);
    // Not on Sentinel or Cluster: a real release there, and nothing counted.
    line.not_handed(&handoff, false, None);
    assert!(line.begin_handoff(B, &limits(1, false)).is_none());
}

#[tokio::test]
async fn a_head_trying_itself_is_not_handed_the_lock() {
    let (_queues, line) = line();
    line.taken_by(A, None);
    let b = line.join(B, None);
    assert!(b.start_trying());
    assert!(line.begin_handoff(A, &limits(8, true)).is_none());
    b.stop_trying();
    let handoff = line.begin_handoff(A, &limits(8, true)).unwrap();
    // Released for real instead: the head is back to waiting, and nudged.
    line.not_handed(&handoff, true, None);
    assert_eq!(b.stage(), Stage::Head);
    assert_eq!(line.local_holder_other_than(B), None);
    assert!(line.take_published().is_some());
}

#[test]
fn patience_follows_the_other_clients_pace_within_bounds() {
    let rtt = Duration::from_micros(200);
    // Nothing learned: the round-trip bound (at least MIN_YIELD).
    assert_eq!(patience(rtt, None), MIN_YIELD);
    assert_eq!(
        patience(Duration::from_millis(3), None),
        Duration::from_millis(6)
    );
    // Twice their pace once it is longer, never past MAX_PATIENCE.
    assert_eq!(
        patience(rtt, Some(Duration::from_millis(4))),
        Duration::from_millis(8)
    );
    assert_eq!(patience(rtt, Some(Duration::from_secs(1))), MAX_PATIENCE);

    let (_queues, line) = line();
    assert_eq!(line.pace(), None);
    line.observe_pace(Duration::from_millis(8));
    assert_eq!(line.pace(), Some(Duration::from_millis(8)));
    // A moving mean: the newest gap is a quarter of it.
    line.observe_pace(Duration::from_millis(4));
    assert_eq!(line.pace(), Some(Duration::from_millis(7)));
}
