//! The faster multi-lock (contract §14.3): one hash per group `G` (here the case's name,
//! `N`), values `a`, `b`, `c`, lock objects over the value sets {a, b}, {b, c} and {c}.
//! Per value: field `F` → owner `<client>:<owner>`, `F:<owner>:expire_time` → deadline
//! (client wall clock, read back as the ms left: `~10000`), `F:<owner>:lock_count` →
//! count. Field ids are read back as `#a`, `#b`, `#c`.
//!
//! * acquire: refused when another owner holds a value of the set with a deadline in the
//!   future; else every value: owner field set, deadline max(old, now + lease), count + 1;
//!   the key's TTL raised to the lease (never lowered; the crate's fix of the last
//!   millisecond, `docs/protocol.md` §18, re-arms it whenever `PTTL` is below the lease);
//! * unlock: a value not held by the caller → nil (`NotOwner`) after the others were
//!   handled (partial effects stay); a count reaching 0 deletes the value's three fields;
//!   a value still held gets deadline max(old, now + the object's last lease) and the key
//!   max(PTTL, that lease), also when the unlock fails on another value (the crate keeps
//!   the key alive as long as the deadlines it raised; Redisson re-arms it only on
//!   success); the object's last lease goes back to the watchdog's on a not-owner answer,
//!   a full release and a force unlock, as an `RLock`'s (Redisson never resets it: a
//!   client-side quirk, §14.3.11);
//! * force unlock: the values' owners' fields deleted;
//! * `is_locked`: a value of the set held by anyone; `is_held_by`: every value of the set
//!   held by that owner (the intended check, §14.3.8).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use redisson_lock::kinds::FasterMulti;
use redisson_lock::{FasterMultiLock, LockGuard};

use super::*;

const VALUES: [&str; 3] = ["a", "b", "c"];
/// The lock objects' value sets (indices into `VALUES`).
const SETS: [&[usize]; 3] = [&[0, 1], &[1, 2], &[2]];

fn set() -> impl Strategy<Value = usize> {
    0..SETS.len()
}

#[derive(Clone, Debug)]
pub enum Op {
    /// `try_lock()` of a value set.
    TryLock(Actor, usize),
    TryLockLease(Actor, usize, Lease),
    Acquire(Actor, usize, Option<Lease>),
    Unlock(Actor, usize),
    GuardUnlock(usize),
    DropGuard(usize),
    ForceUnlock(Actor, usize),
    IsLocked(Actor, usize),
    IsHeldBy(Actor, usize, u8),
    /// `PEXPIRE G 1`.
    Expire,
    Kill(u8),
}

#[derive(Clone, Debug, Default)]
pub struct Fm {
    pub owner: BTreeMap<usize, Actor>,
    /// (value, owner) → (count, deadline as ms left when written, whether a renewal may
    /// have raised it to 30 s since).
    pub holds: BTreeMap<(usize, Actor), (u32, u64, bool)>,
    pub ttl: Ttl,
    /// (client, set) → the object's last lease.
    pub ilt: BTreeMap<(u8, usize), u64>,
    /// Watchdog registrations per (actor, set).
    pub wd: BTreeMap<(Actor, usize), u32>,
    pub guards: Vec<Option<(Actor, usize)>>,
    pub reply: Reply,
}

impl Fm {
    fn live(&self, v: usize, a: Actor) -> bool {
        self.owner.get(&v) == Some(&a) && self.holds.contains_key(&(v, a))
    }

    fn acquire(&mut self, a: Actor, s: usize, lease: Option<Lease>) -> bool {
        let vs = SETS[s];
        if vs.iter().any(|v| {
            self.owner
                .get(v)
                .is_some_and(|b| *b != a && self.live(*v, *b))
        }) {
            return false;
        }
        let l = match lease {
            Some(lease) => {
                self.ilt.insert((a.c, s), lease.ms());
                lease.ms()
            }
            // Watchdog mode: the watchdog's lease. (Redisson sends the object's last
            // lease here, a client-side quirk §14.3.11 says not to copy.)
            None => {
                *self.wd.entry((a, s)).or_default() += 1;
                WATCHDOG_MS
            }
        };
        let existed = !self.owner.is_empty();
        for v in vs {
            let live = self.live(*v, a);
            self.owner.insert(*v, a);
            let entry = self.holds.entry((*v, a)).or_insert((0, 0, false));
            if !live {
                *entry = (0, 0, false);
            }
            entry.0 += 1;
            entry.1 = entry.1.max(l);
        }
        self.ttl = if existed {
            self.ttl.map(|t| t.max(l))
        } else {
            Ttl::Ms(l)
        };
        true
    }

    fn unlock(&mut self, a: Actor, s: usize) -> Reply {
        if let Some(n) = self.wd.get_mut(&(a, s)) {
            *n = n.saturating_sub(1);
        }
        if self.owner.is_empty() {
            self.ilt.remove(&(a.c, s));
            return Reply::NotOwner;
        }
        let ilt = self.ilt.get(&(a.c, s)).copied().unwrap_or(WATCHDOG_MS);
        let (mut failed, mut extended) = (false, false);
        for v in SETS[s] {
            if !self.live(*v, a) {
                failed = true;
                continue;
            }
            let hold = self.holds.get_mut(&(*v, a)).expect("live");
            hold.0 -= 1;
            if hold.0 == 0 {
                self.holds.remove(&(*v, a));
                self.owner.remove(v);
            } else {
                hold.1 = hold.1.max(ilt);
                extended = true;
            }
        }
        // The key lives at least as long as a deadline the unlock raised, also when the
        // unlock fails on another value (Redisson re-arms it only on success).
        if extended {
            self.ttl = self.ttl.map(|t| t.max(ilt));
        }
        // The object's last lease goes back to the watchdog's on a not-owner answer and
        // on a full release, as an `RLock`'s (§4.2); Redisson's faster multi-lock never
        // resets it, a client-side quirk (§14.3.11) the crate does not copy.
        if failed || !extended {
            self.ilt.remove(&(a.c, s));
        }
        if failed {
            self.settle();
            return Reply::NotOwner;
        }
        self.settle();
        Reply::Done
    }

    /// The hash goes with its last field.
    fn settle(&mut self) {
        if self.owner.is_empty() && self.holds.is_empty() {
            self.ttl = Ttl::Gone;
        }
    }

    fn force_unlock(&mut self, a: Actor, s: usize) -> Reply {
        self.wd.retain(|(w, _), _| w.c != a.c);
        self.ilt.remove(&(a.c, s));
        let mut removed = 0;
        for v in SETS[s] {
            if let Some(owner) = self.owner.remove(v) {
                self.holds.remove(&(*v, owner));
                removed += 1;
            }
        }
        self.settle();
        Reply::Bool(removed > 0)
    }

    /// Whether a renewal may raise `a`'s holds: it has a watchdog hold in the group. A
    /// renewal after a reconnect raises every value `a` holds in the group to 30 s, its
    /// lease-mode holds included (a difference from Redisson, which renews the values of
    /// watchdog holds only: docs/reliability.md, "Model tests").
    fn renewable(&self, a: Actor) -> bool {
        self.wd.iter().any(|((w, _), n)| *w == a && *n > 0)
    }

    /// A renewal's effects stay until the next write (deadlines only rise).
    fn renewals(&mut self) {
        let owners: Vec<Actor> = self
            .holds
            .keys()
            .map(|(_, a)| *a)
            .filter(|a| self.renewable(*a))
            .collect();
        for ((_, a), hold) in self.holds.iter_mut() {
            if owners.contains(a) {
                hold.2 = true;
            }
        }
        self.ttl = self.ttl.renewable(!owners.is_empty());
    }
}

impl Kind for Fm {
    type State = Fm;
    type Op = Op;
    type Sut = Sut;
    const LABEL: &'static str = "faster-multi";
    const CASES: u32 = 48;

    fn init() -> Fm {
        Fm::default()
    }

    fn ops(state: &Fm) -> BoxedStrategy<Op> {
        let guards = state.guards.len().max(1);
        proptest::strategy::Union::new_weighted(vec![
            (
                4,
                (actor(), set())
                    .prop_map(|(a, s)| Op::TryLock(a, s))
                    .boxed(),
            ),
            (
                3,
                (actor(), set(), lease())
                    .prop_map(|(a, s, l)| Op::TryLockLease(a, s, l))
                    .boxed(),
            ),
            (
                2,
                (actor(), set(), lease_opt())
                    .prop_map(|(a, s, l)| Op::Acquire(a, s, l))
                    .boxed(),
            ),
            (
                5,
                (actor(), set()).prop_map(|(a, s)| Op::Unlock(a, s)).boxed(),
            ),
            (1, (0..guards).prop_map(Op::GuardUnlock).boxed()),
            (1, (0..guards).prop_map(Op::DropGuard).boxed()),
            (
                1,
                (actor(), set())
                    .prop_map(|(a, s)| Op::ForceUnlock(a, s))
                    .boxed(),
            ),
            (
                1,
                (actor(), set())
                    .prop_map(|(a, s)| Op::IsLocked(a, s))
                    .boxed(),
            ),
            (
                1,
                (actor(), set(), 0..OWNERS)
                    .prop_map(|(a, s, o)| Op::IsHeldBy(a, s, o))
                    .boxed(),
            ),
            (1, Just(Op::Expire).boxed()),
            (1, (0u8..2).prop_map(Op::Kill).boxed()),
        ])
        .boxed()
    }

    fn pre(state: &Fm, op: &Op) -> bool {
        match op {
            Op::GuardUnlock(i) | Op::DropGuard(i) => {
                state.guards.get(*i).is_some_and(Option::is_some)
            }
            _ => true,
        }
    }

    fn step(s: &mut Fm, op: &Op) {
        s.renewals();
        s.reply = match *op {
            Op::TryLock(a, set) => Reply::Bool(s.acquire(a, set, None)),
            Op::TryLockLease(a, set, l) => Reply::Bool(s.acquire(a, set, Some(l))),
            Op::Acquire(a, set, l) => {
                if s.acquire(a, set, l) {
                    s.guards.push(Some((a, set)));
                    Reply::Guard(Some(None))
                } else {
                    Reply::Guard(None)
                }
            }
            Op::Unlock(a, set) => s.unlock(a, set),
            Op::GuardUnlock(i) => {
                let (a, set) = s.guards[i].take().expect("pre");
                s.unlock(a, set)
            }
            Op::DropGuard(i) => {
                let (a, set) = s.guards[i].take().expect("pre");
                s.unlock(a, set);
                Reply::Done
            }
            Op::ForceUnlock(a, set) => s.force_unlock(a, set),
            Op::IsLocked(_, set) => Reply::Bool(SETS[set].iter().any(|v| s.owner.contains_key(v))),
            Op::IsHeldBy(a, set, o) => {
                let who = Actor { c: a.c, o };
                Reply::Bool(SETS[set].iter().all(|v| s.live(*v, who)))
            }
            Op::Expire => {
                s.owner.clear();
                s.holds.clear();
                s.ttl = Ttl::Gone;
                Reply::Done
            }
            Op::Kill(_) => Reply::Done,
        };
        s.renewals();
    }

    fn reply(state: &Fm) -> &Reply {
        &state.reply
    }

    fn expected(s: &Fm) -> Raw {
        let mut raw = Raw::new();
        if s.owner.is_empty() && s.holds.is_empty() {
            return raw;
        }
        let mut fields = BTreeMap::new();
        for (v, a) in &s.owner {
            fields.insert(format!("#{}", VALUES[*v]), a.ln());
        }
        for ((v, a), (count, left, _)) in &s.holds {
            let id = format!("#{}:{}", VALUES[*v], a.ln());
            fields.insert(format!("{id}:lock_count"), count.to_string());
            fields.insert(format!("{id}:expire_time"), format!("~{left}"));
        }
        let renewable = s.holds.keys().any(|(_, a)| s.renewable(*a));
        raw.insert(
            "N".into(),
            (Content::Hash(fields), s.ttl.renewable(renewable)),
        );
        raw
    }

    fn open(ctx: &Ctx) -> Sut {
        let locks = ctx
            .clients
            .iter()
            .map(|client| {
                SETS.iter()
                    .map(|vs| {
                        let base = client
                            .get_multi_lock(ctx.name.clone(), vs.iter().map(|v| VALUES[*v]))
                            .expect("values");
                        (0..OWNERS)
                            .map(|o| base.with_owner(Actor { c: 0, o }.owner()))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        Sut {
            locks,
            guards: Vec::new(),
        }
    }

    async fn exec(sut: &mut Sut, ctx: &Ctx, op: Op, _after: &Fm) -> Reply {
        let h = |a: Actor, s: usize| sut.locks[usize::from(a.c)][s][usize::from(a.o)].clone();
        let zero = Duration::ZERO;
        match op {
            Op::TryLock(a, s) => Reply::of(h(a, s).try_lock().await, Reply::Bool),
            Op::TryLockLease(a, s, l) => Reply::of(
                h(a, s).try_lock_with_lease(zero, l.duration()).await,
                Reply::Bool,
            ),
            Op::Acquire(a, s, l) => {
                let got = match l {
                    None => h(a, s).try_acquire_for(zero).await,
                    Some(l) => h(a, s).try_acquire_with_lease(zero, l.duration()).await,
                };
                Reply::of(got, |g| match g {
                    Some(g) => {
                        sut.guards.push(Some(g));
                        Reply::Guard(Some(None))
                    }
                    None => Reply::Guard(None),
                })
            }
            Op::Unlock(a, s) => Reply::of(h(a, s).unlock().await, |()| Reply::Done),
            Op::GuardUnlock(i) => match sut.guards.get_mut(i).and_then(Option::take) {
                Some(g) => Reply::of(g.unlock().await, |()| Reply::Done),
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::DropGuard(i) => match sut.guards.get_mut(i).and_then(Option::take) {
                Some(g) => {
                    drop(g);
                    Reply::Done
                }
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::ForceUnlock(a, s) => Reply::of(h(a, s).force_unlock().await, Reply::Bool),
            Op::IsLocked(a, s) => Reply::of(h(a, s).is_locked().await, Reply::Bool),
            Op::IsHeldBy(a, s, o) => Reply::of(
                h(a, s).is_held_by(Actor { c: a.c, o }.owner()).await,
                Reply::Bool,
            ),
            Op::Expire => {
                ctx.expire_leased().await;
                Reply::Done
            }
            Op::Kill(c) => {
                ctx.kill(c).await;
                Reply::Done
            }
        }
    }

    async fn close(sut: Sut) {
        drop(sut.guards);
    }

    /// Field ids as `#a`; deadlines as the lease class they are within (`~30000`).
    fn fix_raw(_: &Sut, after: &Fm, raw: &mut Raw) {
        let Some((Content::Hash(fields), _)) = raw.get_mut("N") else {
            return;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let ids: Vec<(String, &str)> = VALUES
            .iter()
            .map(|v| (FasterMulti::field_id(v), *v))
            .collect();
        let old = std::mem::take(fields);
        for (mut k, mut v) in old {
            for (id, name) in &ids {
                k = k.replace(id.as_str(), &format!("#{name}"));
            }
            if k.ends_with(":expire_time")
                && let Ok(deadline) = v.parse::<u64>()
            {
                let left = deadline.saturating_sub(now);
                v = [10_000, WATCHDOG_MS, 60_000]
                    .into_iter()
                    .find(|c| Ttl::Ms(*c).admits(Ttl::Ms(left)))
                    .map_or(format!("?{left}"), |c| format!("~{c}"));
            }
            fields.insert(k, v);
        }
        // A deadline a renewal may have raised to 30 s reads as the model's.
        for ((v, a), (_, left, renewed)) in &after.holds {
            let key = format!("#{}:{}:expire_time", VALUES[*v], a.ln());
            if let Some(got) = fields.get_mut(&key)
                && *renewed
                && got == &format!("~{WATCHDOG_MS}")
            {
                *got = format!("~{left}");
            }
        }
    }
}

pub struct Sut {
    locks: Vec<Vec<Vec<FasterMultiLock>>>,
    guards: Vec<Option<LockGuard<FasterMulti>>>,
}
