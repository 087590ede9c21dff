//! The multi and red locks over reentrant locks (contract §14.1, §14.2): a group of three
//! `RLock`s `N:0`, `N:1`, `N:2` on one server, with no keys of its own: each member is the
//! reentrant model ([`Excl`]), and the group's operations are the members' own scripts
//! with the group's owner.
//!
//! * `try_lock` (no wait) of a `MultiLock` takes every member or none: when one member is
//!   held by another owner, the members it took are given back (an unlock each, so a
//!   member it had re-entered keeps its hold, with `N` re-armed to that object's last
//!   lease); a `RedLock` needs a majority (2 of 3) and keeps what it took when it has one;
//! * which members a `RedLock` acquisition keeps is the crate's to choose: once a majority
//!   answered, a member that answers later (a loaded machine) is released again (taken
//!   and given back, like a member of a failed try). The model cannot predict it, so it
//!   records what the guard reports (`GroupGuard::members`, through [`Kind::observe`]):
//!   every member it names must be one the owner could take, at least a majority, and
//!   every other member it could take was taken and given back; every later check (the
//!   raw hashes, what other owners can take, the unlocks) follows from that. A group's
//!   guardless `try_lock` cannot say which members it kept: the red model reads them
//!   from the members' hold counts of the owner before and after (those that went up),
//!   and checks them the same way;
//! * with a lease, every member taken gets it;
//! * `unlock`: every member at once (the crate's documented order, `docs/multi-and-redlock.md`);
//!   a `MultiLock` answers `NotOwner` when a member was not held (after releasing the
//!   others), a `RedLock` ignores members that fail; a guard's unlock (or drop) releases
//!   the members that guard took (Redisson's `RedLock` sends an unlock to every member,
//!   whose not-owner answer also resets that object's last lease);
//! * `is_held_by`: every member (multi) or a majority (red);
//! * other owners work on single members to make conflicts; a member's lease runs out by
//!   `PEXPIRE 1` on its key.

use std::marker::PhantomData;
use std::time::Duration;

use proptest::prelude::*;
use redisson_lock::kinds::{AllMembers, GroupRule, LockGroup, Majority};
use redisson_lock::{GroupGuard, RLock};

use super::reentrant::{Excl, Variant};
use super::*;

const MEMBERS: usize = 3;

/// The group rule under test.
pub trait Rule: GroupRule + 'static {
    const LABEL: &'static str;
    const RED: bool;
}

impl Rule for AllMembers {
    const LABEL: &'static str = "multi";
    const RED: bool = false;
}

impl Rule for Majority {
    const LABEL: &'static str = "red";
    const RED: bool = true;
}

#[derive(Clone, Debug)]
pub enum Op {
    /// The group's `try_lock()`.
    TryLock(Actor),
    /// The group's `try_lock_with_lease(0, lease)`.
    TryLockLease(Actor, Lease),
    /// The group's `try_acquire_for(0)` / `try_acquire_with_lease(0, lease)`.
    Acquire(Actor, Option<Lease>),
    Unlock(Actor),
    GuardUnlock(usize),
    DropGuard(usize),
    IsHeldBy(Actor, u8),
    IsHeldByCurrent(Actor),
    /// One member's `try_lock()` / `try_lock_with_lease(0, lease)` by an owner.
    MemberLock(usize, Actor, Option<Lease>),
    MemberUnlock(usize, Actor),
    MemberForceUnlock(usize, Actor),
    MemberHoldCount(usize, Actor),
    MemberTtl(usize, Actor),
    /// `PEXPIRE 1` on one member's key.
    Expire(usize),
    Kill(u8),
}

#[derive(Clone, Debug)]
pub struct Group {
    pub red: bool,
    pub members: Vec<Excl>,
    /// Guards made: the owner and the members it took.
    pub guards: Vec<Option<(Actor, Vec<usize>)>>,
    pub reply: Reply,
}

impl Group {
    fn try_lock(&mut self, a: Actor, lease: Option<Lease>) -> bool {
        self.try_take(a, lease).is_some()
    }

    /// The members taken, or `None` (and nothing taken).
    fn try_take(&mut self, a: Actor, lease: Option<Lease>) -> Option<Vec<usize>> {
        let before = self.members.clone();
        let mut taken = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            if m.acquire(a, lease, false) {
                taken.push(i);
            }
        }
        let needed = if self.red { MEMBERS / 2 + 1 } else { MEMBERS };
        if taken.len() >= needed {
            return Some(taken);
        }
        // Give back what was taken: an unlock of each (the objects' last leases as the
        // acquires just left them).
        for i in taken {
            self.members[i].unlock(a);
        }
        // Only the members' hashes, TTLs and leases tell; the watchdog registrations of
        // the undone acquires are gone again.
        for (m, b) in self.members.iter_mut().zip(before) {
            m.wd = b.wd;
        }
        None
    }

    /// An acquisition that the crate reports took exactly `reported` (ascending indices):
    /// those members are taken; any other member `a` could take was taken and given back
    /// (it answered after the majority). `Err` when the model could not give `a` that.
    fn take_reported(
        &mut self,
        a: Actor,
        lease: Option<Lease>,
        reported: &[usize],
    ) -> Result<(), String> {
        let needed = if self.red { MEMBERS / 2 + 1 } else { MEMBERS };
        if reported.len() < needed || reported.iter().any(|i| *i >= MEMBERS) {
            return Err(format!(
                "the guard reports members {reported:?}: fewer than the {needed} required"
            ));
        }
        for (i, m) in self.members.iter_mut().enumerate() {
            let before = m.clone();
            let took = m.acquire(a, lease, false);
            if reported.contains(&i) {
                if !took {
                    return Err(format!(
                        "the guard reports member {i}, which {a:?} cannot take: {:?}",
                        before.holds
                    ));
                }
            } else if took {
                // Taken after the majority answered: given back, its watchdog
                // registration undone.
                m.unlock(a);
                m.wd = before.wd;
            }
        }
        Ok(())
    }

    /// A guard's unlock: only the members it took (a `RedLock` guard may hold a
    /// majority); the group handle's `unlock` tries every member.
    fn unlock_members(&mut self, a: Actor, members: &[usize]) -> Reply {
        let mut not_owner = false;
        for i in members {
            if self.members[*i].unlock(a) == Reply::NotOwner {
                not_owner = true;
            }
        }
        if not_owner && !self.red {
            Reply::NotOwner
        } else {
            Reply::Done
        }
    }

    fn unlock(&mut self, a: Actor) -> Reply {
        let mut not_owner = false;
        for m in &mut self.members {
            if m.unlock(a) == Reply::NotOwner {
                not_owner = true;
            }
        }
        if not_owner && !self.red {
            Reply::NotOwner
        } else {
            Reply::Done
        }
    }

    fn held_by(&self, a: Actor) -> bool {
        let held = self.members.iter().filter(|m| m.held_by(a)).count();
        if self.red {
            held > MEMBERS / 2
        } else {
            held == MEMBERS
        }
    }
}

pub struct GroupTest<R>(PhantomData<R>);

pub struct Sut<R: Rule> {
    /// Per client, per owner: the group, and its members' handles.
    groups: Vec<Vec<(LockGroup<R>, Vec<RLock>)>>,
    guards: Vec<Option<GroupGuard<R>>>,
    /// What the last step's guard said it holds (`GroupGuard::members`).
    reported: Option<Vec<usize>>,
}

impl<R: Rule> Sut<R> {
    /// The members the last step's acquisition reported (its guard's), if it made one.
    fn reported(&self) -> Option<&[usize]> {
        self.reported.as_deref()
    }

    /// A RedLock's guardless `try_lock` (with a lease or not): when it answers true, the
    /// members it kept are those whose hold count of the owner went up (read from Redis
    /// before and after), reported as a guard's would be.
    async fn red_try_lock(&mut self, op: Op) -> Reply {
        let (a, lease) = match op {
            Op::TryLock(a) => (a, None),
            Op::TryLockLease(a, l) => (a, Some(l.duration())),
            _ => return Reply::Error(format!("not a try_lock: {op:?}")),
        };
        let (group, members) = &self.groups[usize::from(a.c)][usize::from(a.o)];
        let mut before = Vec::with_capacity(members.len());
        for member in members {
            match member.hold_count().await {
                Ok(count) => before.push(count),
                Err(error) => return Reply::Error(format!("hold count before: {error}")),
            }
        }
        let took = match lease {
            None => group.try_lock().await,
            Some(lease) => group.try_lock_with_lease(Duration::ZERO, lease).await,
        };
        if let Ok(true) = took {
            let mut kept = Vec::new();
            for (i, member) in members.iter().enumerate() {
                match member.hold_count().await {
                    Ok(count) if count > before[i] => kept.push(i),
                    Ok(_) => {}
                    Err(error) => return Reply::Error(format!("hold count after: {error}")),
                }
            }
            self.reported = Some(kept);
        }
        Reply::of(took, Reply::Bool)
    }
}

impl<R: Rule> Kind for GroupTest<R> {
    type State = Group;
    type Op = Op;
    type Sut = Sut<R>;
    const LABEL: &'static str = R::LABEL;
    const CASES: u32 = 48;

    fn init() -> Group {
        Group {
            red: R::RED,
            members: vec![Excl::new(Variant::default()); MEMBERS],
            guards: Vec::new(),
            reply: Reply::Start,
        }
    }

    fn ops(state: &Group) -> BoxedStrategy<Op> {
        let guards = state.guards.len().max(1);
        let member = 0..MEMBERS;
        // A RedLock's guardless try_lock reports the members it kept through their hold
        // counts (see the module docs); its guards through `GroupGuard::members`.
        let guarded = if state.red { 4 } else { 2 };
        let takes: Vec<(u32, BoxedStrategy<Op>)> = vec![
            (4, actor().prop_map(Op::TryLock).boxed()),
            (
                2,
                (actor(), lease())
                    .prop_map(|(a, l)| Op::TryLockLease(a, l))
                    .boxed(),
            ),
            (
                guarded,
                (actor(), lease_opt())
                    .prop_map(|(a, l)| Op::Acquire(a, l))
                    .boxed(),
            ),
        ];
        proptest::strategy::Union::new_weighted(
            takes
                .into_iter()
                .chain(vec![
                    (3, actor().prop_map(Op::Unlock).boxed()),
                    (1, (0..guards).prop_map(Op::GuardUnlock).boxed()),
                    (1, (0..guards).prop_map(Op::DropGuard).boxed()),
                    (
                        1,
                        (actor(), 0..OWNERS)
                            .prop_map(|(a, o)| Op::IsHeldBy(a, o))
                            .boxed(),
                    ),
                    (1, actor().prop_map(Op::IsHeldByCurrent).boxed()),
                    (
                        4,
                        (member.clone(), actor(), lease_opt())
                            .prop_map(|(m, a, l)| Op::MemberLock(m, a, l))
                            .boxed(),
                    ),
                    (
                        2,
                        (member.clone(), actor())
                            .prop_map(|(m, a)| Op::MemberUnlock(m, a))
                            .boxed(),
                    ),
                    (
                        1,
                        (member.clone(), actor())
                            .prop_map(|(m, a)| Op::MemberForceUnlock(m, a))
                            .boxed(),
                    ),
                    (
                        1,
                        (member.clone(), actor())
                            .prop_map(|(m, a)| Op::MemberHoldCount(m, a))
                            .boxed(),
                    ),
                    (
                        1,
                        (member.clone(), actor())
                            .prop_map(|(m, a)| Op::MemberTtl(m, a))
                            .boxed(),
                    ),
                    (1, member.prop_map(Op::Expire).boxed()),
                    (1, (0u8..2).prop_map(Op::Kill).boxed()),
                ])
                .collect(),
        )
        .boxed()
    }

    fn pre(state: &Group, op: &Op) -> bool {
        match op {
            Op::GuardUnlock(i) | Op::DropGuard(i) => {
                state.guards.get(*i).is_some_and(Option::is_some)
            }
            _ => true,
        }
    }

    fn step(s: &mut Group, op: &Op) {
        s.reply = match *op {
            Op::TryLock(a) => Reply::Bool(s.try_lock(a, None)),
            Op::TryLockLease(a, l) => Reply::Bool(s.try_lock(a, Some(l))),
            Op::Acquire(a, l) => match s.try_take(a, l) {
                Some(taken) => {
                    s.guards.push(Some((a, taken)));
                    Reply::Guard(Some(None))
                }
                None => Reply::Guard(None),
            },
            Op::Unlock(a) => s.unlock(a),
            // The generated state chose the operation; the observed one (which may have
            // made other guards) may not have this guard: the crate answers as below.
            Op::GuardUnlock(i) => match s.guards.get_mut(i).and_then(Option::take) {
                Some((a, taken)) => s.unlock_members(a, &taken),
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::DropGuard(i) => match s.guards.get_mut(i).and_then(Option::take) {
                Some((a, taken)) => {
                    s.unlock_members(a, &taken);
                    Reply::Done
                }
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::IsHeldBy(a, o) => Reply::Bool(s.held_by(Actor { c: a.c, o })),
            Op::IsHeldByCurrent(a) => Reply::Bool(s.held_by(a)),
            Op::MemberLock(m, a, l) => Reply::Bool(s.members[m].acquire(a, l, false)),
            Op::MemberUnlock(m, a) => s.members[m].unlock(a),
            Op::MemberForceUnlock(m, a) => s.members[m].force_unlock(a),
            Op::MemberHoldCount(m, a) => {
                Reply::Count(s.members[m].holds.get(&a).copied().unwrap_or(0))
            }
            Op::MemberTtl(m, _) => {
                let member = &s.members[m];
                Reply::Ttl(member.ttl.renewable(member.renewable()))
            }
            Op::Expire(m) => {
                s.members[m].holds.clear();
                s.members[m].ttl = Ttl::Gone;
                Reply::Done
            }
            Op::Kill(_) => Reply::Done,
        };
    }

    /// An acquisition that made a guard, or a RedLock's guardless `try_lock` that
    /// answered true: the members it reports, as they are.
    fn observe(s: &mut Group, op: &Op, sut: &Sut<R>) {
        let (a, l, guard) = match *op {
            Op::Acquire(a, l) => (a, l, true),
            Op::TryLock(a) => (a, None, false),
            Op::TryLockLease(a, l) => (a, Some(l), false),
            _ => return Self::step(s, op),
        };
        let Some(reported) = sut.reported() else {
            return Self::step(s, op);
        };
        s.reply = match s.take_reported(a, l, reported) {
            Ok(()) if guard => {
                s.guards.push(Some((a, reported.to_vec())));
                Reply::Guard(Some(None))
            }
            Ok(()) => Reply::Bool(true),
            Err(why) => Reply::Error(why),
        };
    }

    fn reply(state: &Group) -> &Reply {
        &state.reply
    }

    fn expected(s: &Group) -> Raw {
        let mut raw = Raw::new();
        for (i, m) in s.members.iter().enumerate() {
            for (key, value) in m.expected() {
                raw.insert(key.replace('N', &format!("N:{i}")), value);
            }
        }
        raw
    }

    fn open(ctx: &Ctx) -> Sut<R> {
        let groups = ctx
            .clients
            .iter()
            .map(|client| {
                let bases: Vec<RLock> = (0..MEMBERS)
                    .map(|i| client.get_lock(format!("{}:{i}", ctx.name)))
                    .collect();
                (0..OWNERS)
                    .map(|o| {
                        let owner = Actor { c: 0, o }.owner();
                        let members: Vec<RLock> =
                            bases.iter().map(|b| b.with_owner(owner)).collect();
                        let group = LockGroup::<R>::new(bases.iter().cloned())
                            .expect("group")
                            .with_owner(owner);
                        (group, members)
                    })
                    .collect()
            })
            .collect();
        Sut {
            groups,
            guards: Vec::new(),
            reported: None,
        }
    }

    async fn exec(sut: &mut Sut<R>, ctx: &Ctx, op: Op, _after: &Group) -> Reply {
        let g = |a: Actor| sut.groups[usize::from(a.c)][usize::from(a.o)].0.clone();
        let m = |i: usize, a: Actor| sut.groups[usize::from(a.c)][usize::from(a.o)].1[i].clone();
        let zero = Duration::ZERO;
        sut.reported = None;
        match op {
            Op::TryLock(_) | Op::TryLockLease(..) if R::RED => sut.red_try_lock(op).await,
            Op::TryLock(a) => Reply::of(g(a).try_lock().await, Reply::Bool),
            Op::TryLockLease(a, l) => Reply::of(
                g(a).try_lock_with_lease(zero, l.duration()).await,
                Reply::Bool,
            ),
            Op::Acquire(a, l) => {
                let got = match l {
                    None => g(a).try_acquire_for(zero).await,
                    Some(l) => g(a).try_acquire_with_lease(zero, l.duration()).await,
                };
                Reply::of(got, |guard| match guard {
                    Some(guard) => {
                        sut.reported = Some(guard.members());
                        sut.guards.push(Some(guard));
                        Reply::Guard(Some(None))
                    }
                    None => Reply::Guard(None),
                })
            }
            Op::Unlock(a) => Reply::of(g(a).unlock().await, |()| Reply::Done),
            Op::GuardUnlock(i) => match sut.guards.get_mut(i).and_then(Option::take) {
                Some(guard) => Reply::of(guard.unlock().await, |()| Reply::Done),
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::DropGuard(i) => match sut.guards.get_mut(i).and_then(Option::take) {
                Some(guard) => {
                    drop(guard);
                    Reply::Done
                }
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::IsHeldBy(a, o) => Reply::of(
                g(a).is_held_by(Actor { c: a.c, o }.owner()).await,
                Reply::Bool,
            ),
            Op::IsHeldByCurrent(a) => Reply::of(g(a).is_held_by_current_task().await, Reply::Bool),
            Op::MemberLock(i, a, None) => Reply::of(m(i, a).try_lock().await, Reply::Bool),
            Op::MemberLock(i, a, Some(l)) => Reply::of(
                m(i, a).try_lock_with_lease(zero, l.duration()).await,
                Reply::Bool,
            ),
            Op::MemberUnlock(i, a) => Reply::of(m(i, a).unlock().await, |()| Reply::Done),
            Op::MemberForceUnlock(i, a) => Reply::of(m(i, a).force_unlock().await, Reply::Bool),
            Op::MemberHoldCount(i, a) => Reply::of(m(i, a).hold_count().await, Reply::Count),
            Op::MemberTtl(i, a) => Reply::ttl(m(i, a).remain_time_to_live().await),
            Op::Expire(i) => {
                let key = format!("{}:{i}", ctx.name);
                let _: i64 = ctx.raw.pexpire(&key, 1, None).await.unwrap_or(0);
                until(Duration::from_secs(2), || async {
                    ctx.raw.exists::<i64, _>(&key).await.unwrap_or(1) == 0
                })
                .await;
                Reply::Done
            }
            Op::Kill(c) => {
                ctx.kill(c).await;
                Reply::Done
            }
        }
    }

    async fn close(sut: Sut<R>) {
        drop(sut.guards);
    }
}
