//! Generated operation sequences checked against a model of each lock kind (issue 31,
//! part 1). After every step the reply and the raw keys must be the model's; a failure is
//! shrunk to the shortest sequence that still fails and printed numbered.
//!
//! `MODEL_CASES=N` runs N sequences per kind instead of the CI default (each kind's
//! `CASES`). The models and the harness are in `tests/model/`.

mod model;
mod support;

use model::reentrant::{ExclTest, Op};
use model::{Actor, Lease};
use redisson_lock::kinds::{Fair, Fenced, NonReentrant, NonReentrantFair, Reentrant, Spin};

#[test]
fn reentrant_lock_follows_the_model() {
    model::run::<ExclTest<Reentrant>>();
}

#[test]
fn fair_lock_follows_the_model() {
    model::run::<ExclTest<Fair>>();
}

#[test]
fn fenced_lock_follows_the_model() {
    model::run::<ExclTest<Fenced>>();
}

#[test]
fn spin_lock_follows_the_model() {
    model::run::<ExclTest<Spin>>();
}

#[test]
fn non_reentrant_lock_follows_the_model() {
    model::run::<ExclTest<NonReentrant>>();
}

#[test]
fn non_reentrant_fair_lock_follows_the_model() {
    model::run::<ExclTest<NonReentrantFair>>();
}

#[test]
fn read_write_lock_follows_the_model() {
    model::run::<model::read_write::Rw>();
}

#[test]
fn multi_lock_follows_the_model() {
    model::run::<model::group::GroupTest<redisson_lock::kinds::AllMembers>>();
}

#[test]
fn red_lock_follows_the_model() {
    model::run::<model::group::GroupTest<redisson_lock::kinds::Majority>>();
}

#[test]
fn faster_multi_lock_follows_the_model() {
    model::run::<model::faster_multi::Fm>();
}

/// The shortest sequences the deliberate breakages shrank to (docs/reliability.md, "Model
/// tests"): a re-entry that did not re-arm the TTL (`lua/lock_acquire.lua` without its
/// `PEXPIRE` on re-entry) and an unlock that published nothing (`lua/lock_release.lua`
/// without its `PUBLISH`). Kept as plain regressions: both pass on the real scripts.
#[test]
fn the_deliberate_breakages_shrunk_sequences_pass() {
    let c0o1 = Actor { c: 0, o: 0 };
    let c1o1 = Actor { c: 1, o: 0 };
    model::replay::<ExclTest<Reentrant>>(vec![
        Op::TryLockLease(c1o1, Lease::S10),
        Op::TryLock(c1o1),
    ]);
    model::replay::<ExclTest<Reentrant>>(vec![Op::TryLock(c0o1), Op::Wait(c1o1), Op::Unlock(c0o1)]);
}

/// The shortest sequences the loops of 20 runs shrank to, kept as plain regressions (each
/// failed about one run in ten, on a race the `Kill` opens; replayed here they mostly
/// pass either way: the deterministic tests are `tests/locks/read_write_lock.rs`'s
/// `a_renewal_round_in_flight_never_lands_after_a_partial_unlock` and
/// `model::expire_outlasts_renewals_in_the_last_millisecond`).
/// * read-write: a read unlock re-arms `N` to a read hold's key the reconnect's renewal
///   had set to 30 s (the model said 10 s); a write re-entry adds its lease to the 30 s
///   of that renewal (the model had room for three TTLs and dropped that one);
/// * fair: the `Expire` after a `Kill` hung when the sentry's check re-armed `N` in its
///   last millisecond.
#[test]
fn the_kill_sequences_that_failed_pass() {
    use model::read_write::{Half, Op as RwOp};
    use model::reentrant::Op::*;
    let a = |c: u8, o: u8| Actor { c, o: o - 1 };
    // CI run 26 (2026-12-07): a read try of client 0's write holder, with a write waiter
    // of its own client, answered false where the model said true. The holder was a
    // waiter woken by step 4's force unlock, and had taken the lock before that call's
    // reply was read, which then made the client forget every hold of the lock, its new
    // one too; the read try, holding nothing as far as the client knew, yielded to the
    // writer. Fixed (the force unlock forgets only what was taken before it ran), and
    // made to happen every time in `read_write_lock::a_waiter_woken_by_a_force_unlock_..`.
    model::replay::<model::read_write::Rw>(vec![
        RwOp::Kill(0),
        RwOp::TryLockLease(Half::W, a(1, 3), Lease::S60),
        RwOp::Wait(Half::W, a(0, 3)),
        RwOp::ForceUnlock(Half::W, a(0, 2)),
        RwOp::Wait(Half::W, a(0, 2)),
        RwOp::Ttl(Half::W, a(1, 3)),
        RwOp::Unlock(Half::R, a(1, 2)),
        RwOp::TryLock(Half::R, a(1, 2)),
        RwOp::ForceUnlock(Half::R, a(1, 1)),
        RwOp::TryLock(Half::R, a(0, 3)),
    ]);
    model::replay::<model::read_write::Rw>(vec![
        RwOp::Acquire(Half::R, a(0, 3), Some(Lease::S10)),
        RwOp::TryLock(Half::R, a(0, 3)),
        RwOp::Kill(0),
        RwOp::Unlock(Half::W, a(0, 1)),
        RwOp::Unlock(Half::R, a(0, 3)),
    ]);
    model::replay::<model::read_write::Rw>(vec![
        RwOp::TryLock(Half::W, a(1, 3)),
        RwOp::TryLock(Half::W, a(1, 3)),
        RwOp::Acquire(Half::W, a(1, 3), None),
        RwOp::Kill(1),
        RwOp::TryLockLease(Half::R, a(1, 1), Lease::S10),
        RwOp::Acquire(Half::W, a(1, 3), None),
    ]);
    model::replay::<ExclTest<Fair>>(vec![
        HandOver(a(0, 2)),
        Ttl(a(1, 1)),
        TryLockLease(a(0, 3), Lease::S60),
        Expire,
        TryLock(a(0, 1)),
        Acquire(a(1, 3), None),
        Kill(0),
        Acquire(a(1, 1), Some(Lease::S60)),
        TryLock(a(1, 2)),
        TryLock(a(1, 3)),
        Unlock(a(0, 2)),
        Expire,
    ]);
}

/// A `NotOwner` unlock ends the client's count of the owner's holds of that half, so the
/// owner, holding nothing as far as its client knows, yields to a write waiter of its
/// client (the model decremented the count by one and expected `true` at step 7).
#[test]
fn a_not_owner_unlock_ends_the_count_the_yield_reads() {
    use model::read_write::{Half, Op::*};
    let a = |c: u8, o: u8| Actor { c, o: o - 1 };
    model::replay::<model::read_write::Rw>(vec![
        TryLock(Half::W, a(0, 3)),
        Wait(Half::R, a(0, 1)),
        TryLockLease(Half::W, a(0, 3), Lease::S10),
        ForceUnlock(Half::W, a(1, 3)),
        Unlock(Half::W, a(0, 3)),
        Wait(Half::W, a(0, 1)),
        TryLock(Half::R, a(0, 3)),
    ]);
}
