//! The read-write lock (contract §11): one hash `N` for both halves, field `mode`
//! (`read` / `write`), readers `<client>:<owner>` → count, the writer
//! `<client>:<owner>:write` → count; one key per read hold,
//! `{N}:<client>:<owner>:rwlock_timeout:<k>`, with that hold's own lease.
//!
//! * read acquire: no mode → `mode=read`, count 1, hold key 1, `N` to the lease; mode read,
//!   or mode write and the caller is the writer → count + 1, hold key k, `N` to
//!   max(PTTL, lease); otherwise refused;
//! * write acquire: no mode → `mode=write`, count 1, `N` to the lease; the writer again →
//!   count + 1 and `N` to PTTL + lease (a write re-entry *adds* its lease); otherwise
//!   refused;
//! * read unlock: not a reader → `NotOwner`; count − 1 (field gone at 0), hold key
//!   count+1 deleted; other fields left → `N` to the longest remaining read hold (in write
//!   mode only when that is longer: the crate's documented difference, `docs/protocol.md`
//!   §11.5), else in write mode nothing more; otherwise `DEL N` and publish `0`;
//! * write unlock: not the writer → `NotOwner`; count − 1 > 0 → `N` to the object's last
//!   lease; at 0 the field goes, and with nothing but `mode` left `DEL N` + publish `1`,
//!   else `mode=read` (a downgrade: no publish, TTL as it was);
//! * force unlock of a half: only when `mode` is that half: `DEL N` (the hold keys stay,
//!   to expire), publish;
//! * `is_locked`: write half `mode == write`; read half `mode == read`, or write with more
//!   than the writer's field (the writer's own read holds);
//! * the crate's documented difference (`docs/lock-engine.md`, `yields_to_writers`): a reader
//!   that holds nothing lets a write waiter of its own client go first, so its `try_*`
//!   answers `false` while one waits. "Holds nothing" is the client's own count of the
//!   owner's holds, which does not see another client's force unlock or an expiry.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;
use redisson_lock::kinds::{Read, Write};
use redisson_lock::{LockGuard, ReadLock, WriteLock};
use tokio::task::JoinHandle;

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Half {
    R,
    W,
}

fn half() -> impl Strategy<Value = Half> {
    prop_oneof![Just(Half::R), Just(Half::W)]
}

#[derive(Clone, Debug)]
pub enum Op {
    /// `try_lock()` of a half.
    TryLock(Half, Actor),
    /// `try_lock_with_lease(0, lease)`.
    TryLockLease(Half, Actor, Lease),
    /// `try_acquire_for(0)` / `try_acquire_with_lease(0, lease)`.
    Acquire(Half, Actor, Option<Lease>),
    Unlock(Half, Actor),
    /// `unlock()` from another task.
    HandOver(Half, Actor),
    GuardUnlock(usize),
    DropGuard(usize),
    ForceUnlock(Half, Actor),
    HoldCount(Half, Actor),
    IsLocked(Half, Actor),
    IsHeldBy(Half, Actor, u8),
    Ttl(Half, Actor),
    /// `PEXPIRE 1` on `N` and every read hold key.
    Expire,
    Kill(u8),
    /// `try_lock_for(40 s)` of a half in a task of its own.
    Wait(Half, Actor),
}

#[derive(Clone, Debug, Default)]
pub struct Rw {
    pub mode: Option<Half>,
    pub readers: BTreeMap<Actor, u32>,
    pub writers: BTreeMap<Actor, u32>,
    pub ttl: Ttl,
    /// Read hold keys (those a force unlock left included).
    pub hold_keys: BTreeMap<(Actor, u32), Ttl>,
    /// Per half, each client's object's last lease.
    pub ilt: BTreeMap<(Half, u8), u64>,
    /// Watchdog registrations per half and actor.
    pub wd: BTreeMap<(Half, Actor), u32>,
    pub waiters: Vec<(Half, Actor)>,
    /// What each client believes its owners hold, per half (its ledger: counted up by acquires,
    /// down by unlocks, ended by an unlock that answered `NotOwner` and by its own
    /// successful force unlock; a foreign force unlock or an expiry is not seen until
    /// then). The writers' yield reads it.
    pub known: BTreeMap<(Half, Actor), u32>,
    /// Owners whose watchdog hold an `Expire` deleted: their client learns it when a check
    /// or a renewal finds the field gone, at a moment the model cannot tell, and from then
    /// on counts them as holding nothing (see [`Rw`]'s `observe`).
    pub unseen: BTreeSet<Actor>,
    pub guards: Vec<Option<(Half, Actor)>>,
    pub woken: Vec<(Half, Actor)>,
    pub reply: Reply,
}

impl Rw {
    fn hlen(&self) -> usize {
        1 + self.readers.len() + self.writers.len()
    }

    fn ilt(&self, h: Half, c: u8) -> u64 {
        self.ilt.get(&(h, c)).copied().unwrap_or(WATCHDOG_MS)
    }

    fn renewable(&self, h: Half, a: Actor) -> bool {
        self.wd.get(&(h, a)).is_some_and(|n| *n > 0)
    }

    fn any_renewable(&self) -> bool {
        self.readers.keys().any(|a| self.renewable(Half::R, *a))
            || self.writers.keys().any(|a| self.renewable(Half::W, *a))
    }

    fn acquire(&mut self, h: Half, a: Actor, lease: Option<Lease>, waiter: bool) -> bool {
        let l = lease.map_or(WATCHDOG_MS, Lease::ms);
        match h {
            Half::R => {
                let holds_something = [Half::R, Half::W]
                    .iter()
                    .any(|h| self.known.get(&(*h, a)).is_some_and(|n| *n > 0));
                if !waiter
                    && !holds_something
                    && self
                        .waiters
                        .iter()
                        .any(|(wh, w)| *wh == Half::W && w.c == a.c)
                {
                    return false; // yields to its client's waiting writer
                }
                match self.mode {
                    None => {
                        self.mode = Some(Half::R);
                        self.readers.insert(a, 1);
                        self.hold_keys.insert((a, 1), Ttl::Ms(l));
                        self.ttl = Ttl::Ms(l);
                    }
                    Some(Half::R) => self.read_again(a, l),
                    Some(Half::W) if self.writers.contains_key(&a) => self.read_again(a, l),
                    Some(Half::W) => return false,
                }
            }
            Half::W => match self.mode {
                None => {
                    self.mode = Some(Half::W);
                    self.writers.insert(a, 1);
                    self.ttl = Ttl::Ms(l);
                }
                Some(Half::W) if self.writers.contains_key(&a) => {
                    *self.writers.get_mut(&a).expect("writer") += 1;
                    // PTTL + lease ("adds 0" to a key without expiry: docs/protocol.md §11.5).
                    self.ttl = match self.ttl {
                        Ttl::Gone | Ttl::Persist => Ttl::Ms(l),
                        t => t.renewable(self.any_renewable()).map(|x| x + l),
                    };
                }
                Some(_) => return false,
            },
        }
        *self.known.entry((h, a)).or_default() += 1;
        match lease {
            Some(lease) => {
                self.ilt.insert((h, a.c), lease.ms());
            }
            None => *self.wd.entry((h, a)).or_default() += 1,
        }
        true
    }

    fn read_again(&mut self, a: Actor, l: u64) {
        let k = self.readers.get(&a).copied().unwrap_or(0) + 1;
        self.readers.insert(a, k);
        self.hold_keys.insert((a, k), Ttl::Ms(l));
        self.ttl = self.ttl.map(|x| x.max(l));
    }

    fn unlock(&mut self, h: Half, a: Actor) -> Reply {
        if let Some(n) = self.wd.get_mut(&(h, a)) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = self.known.get_mut(&(h, a)) {
            *n = n.saturating_sub(1);
        }
        let reply = match h {
            Half::R => self.read_unlock(a),
            Half::W => self.write_unlock(a),
        };
        if reply == Reply::NotOwner {
            self.ilt.remove(&(h, a.c));
            // The client learns the owner holds nothing of that half: its count ends
            // (`Book::released` after `NotOwner`, src/lock/releasing.rs), whatever it was.
            self.known.remove(&(h, a));
        }
        reply
    }

    fn read_unlock(&mut self, a: Actor) -> Reply {
        if self.mode.is_none() || !self.readers.contains_key(&a) {
            return Reply::NotOwner;
        }
        let c = self.readers[&a] - 1;
        if c == 0 {
            self.readers.remove(&a);
        } else {
            self.readers.insert(a, c);
        }
        self.hold_keys.remove(&(a, c + 1));
        if self.hlen() > 1 {
            // `N` is re-armed to the longest PTTL of the read holds' keys left. A key a
            // renewal may have reset (`renewals`: every key of a renewed reader goes to
            // 30 s, §11.4) may be either, each independently of the others (a superset of
            // what the renewals can do together): the longest is any of a key's values,
            // but never below the highest lowest value of a key.
            let mut longest: i64 = -3;
            let mut floor = 0;
            let mut values = Vec::new();
            for (r, n) in &self.readers {
                for i in 1..=*n {
                    let t = self.hold_keys.get(&(*r, i)).copied().unwrap_or(Ttl::Gone);
                    longest = longest.max(t.first_ms());
                    let own = t.values();
                    floor = floor.max(own.iter().copied().min().unwrap_or(0));
                    values.extend(own);
                }
            }
            if longest > 0 {
                let longest = Ttl::one_of(
                    (longest as u64).max(floor),
                    values.into_iter().map(|x| x.max(floor)),
                );
                self.ttl = if self.mode == Some(Half::W) {
                    self.ttl.combine(longest, u64::max)
                } else {
                    longest
                };
                return Reply::Done;
            }
            if self.mode == Some(Half::W) {
                return Reply::Done;
            }
        }
        self.clear();
        self.publish();
        Reply::Done
    }

    fn write_unlock(&mut self, a: Actor) -> Reply {
        if self.mode != Some(Half::W) || !self.writers.contains_key(&a) {
            return Reply::NotOwner;
        }
        let c = self.writers[&a] - 1;
        if c > 0 {
            self.writers.insert(a, c);
            self.ttl = Ttl::Ms(self.ilt(Half::W, a.c));
            return Reply::Done;
        }
        self.writers.remove(&a);
        self.ilt.remove(&(Half::W, a.c));
        if self.hlen() == 1 {
            self.clear();
            self.publish();
        } else {
            self.mode = Some(Half::R);
        }
        Reply::Done
    }

    fn force_unlock(&mut self, h: Half, a: Actor) -> Reply {
        self.ilt.remove(&(h, a.c));
        self.wd.retain(|(wh, w), _| !(*wh == h && w.c == a.c));
        if self.mode != Some(h) {
            return Reply::Bool(false);
        }
        self.known.retain(|(_, w), _| w.c != a.c);
        self.clear();
        self.publish();
        Reply::Bool(true)
    }

    fn clear(&mut self) {
        self.mode = None;
        self.readers.clear();
        self.writers.clear();
        self.ttl = Ttl::Gone;
    }

    /// A message on `redisson_rwlock:{N}`: the (one) waiter retries.
    fn publish(&mut self) {
        if let Some(&(h, w)) = self.waiters.first()
            && self.acquire(h, w, None, true)
        {
            self.waiters.remove(0);
            self.woken.push((h, w));
        }
    }

    /// A renewal may run around any step while a holder has a watchdog registration (a
    /// reconnect renews at once), and its 30 s stays until the next write of that key.
    fn renewals(&mut self) {
        self.ttl = self.ttl.renewable(self.any_renewable());
        let readers: Vec<Actor> = self
            .readers
            .keys()
            .copied()
            .filter(|a| self.renewable(Half::R, *a))
            .collect();
        for ((a, _), t) in self.hold_keys.iter_mut() {
            if readers.contains(a) {
                *t = t.renewable(true);
            }
        }
    }

    fn is_locked(&self, h: Half) -> bool {
        match h {
            Half::W => self.mode == Some(Half::W),
            Half::R => {
                self.mode == Some(Half::R) || (self.mode == Some(Half::W) && self.hlen() > 2)
            }
        }
    }

    fn count(&self, h: Half, a: Actor) -> u32 {
        let map = if h == Half::R {
            &self.readers
        } else {
            &self.writers
        };
        map.get(&a).copied().unwrap_or(0)
    }
}

impl Kind for Rw {
    type State = Rw;
    type Op = Op;
    type Sut = Sut;
    const LABEL: &'static str = "read-write";
    const CASES: u32 = 64;

    fn init() -> Rw {
        Rw::default()
    }

    fn ops(state: &Rw) -> BoxedStrategy<Op> {
        let guards = state.guards.len().max(1);
        proptest::strategy::Union::new_weighted(vec![
            (
                4,
                (half(), actor())
                    .prop_map(|(h, a)| Op::TryLock(h, a))
                    .boxed(),
            ),
            (
                3,
                (half(), actor(), lease())
                    .prop_map(|(h, a, l)| Op::TryLockLease(h, a, l))
                    .boxed(),
            ),
            (
                2,
                (half(), actor(), lease_opt())
                    .prop_map(|(h, a, l)| Op::Acquire(h, a, l))
                    .boxed(),
            ),
            (
                5,
                (half(), actor())
                    .prop_map(|(h, a)| Op::Unlock(h, a))
                    .boxed(),
            ),
            (
                1,
                (half(), actor())
                    .prop_map(|(h, a)| Op::HandOver(h, a))
                    .boxed(),
            ),
            (1, (0..guards).prop_map(Op::GuardUnlock).boxed()),
            (1, (0..guards).prop_map(Op::DropGuard).boxed()),
            (
                1,
                (half(), actor())
                    .prop_map(|(h, a)| Op::ForceUnlock(h, a))
                    .boxed(),
            ),
            (
                1,
                (half(), actor())
                    .prop_map(|(h, a)| Op::HoldCount(h, a))
                    .boxed(),
            ),
            (
                1,
                (half(), actor())
                    .prop_map(|(h, a)| Op::IsLocked(h, a))
                    .boxed(),
            ),
            (
                1,
                (half(), actor(), 0..OWNERS)
                    .prop_map(|(h, a, o)| Op::IsHeldBy(h, a, o))
                    .boxed(),
            ),
            (
                1,
                (half(), actor()).prop_map(|(h, a)| Op::Ttl(h, a)).boxed(),
            ),
            (1, Just(Op::Expire).boxed()),
            (1, (0u8..2).prop_map(Op::Kill).boxed()),
            (
                5,
                (half(), actor()).prop_map(|(h, a)| Op::Wait(h, a)).boxed(),
            ),
        ])
        .boxed()
    }

    fn pre(state: &Rw, op: &Op) -> bool {
        match op {
            Op::GuardUnlock(i) | Op::DropGuard(i) => {
                state.guards.get(*i).is_some_and(Option::is_some)
            }
            Op::Expire => state.waiters.is_empty(),
            // One waiter, that cannot take its half now.
            Op::Wait(h, a) => {
                state.waiters.is_empty() && {
                    let mut probe = state.clone();
                    !probe.acquire(*h, *a, None, true)
                }
            }
            _ => true,
        }
    }

    fn step(s: &mut Rw, op: &Op) {
        s.woken.clear();
        s.renewals();
        s.reply = match *op {
            Op::TryLock(h, a) => Reply::Bool(s.acquire(h, a, None, false)),
            Op::TryLockLease(h, a, l) => Reply::Bool(s.acquire(h, a, Some(l), false)),
            Op::Acquire(h, a, l) => {
                if s.acquire(h, a, l, false) {
                    s.guards.push(Some((h, a)));
                    Reply::Guard(Some(None))
                } else {
                    Reply::Guard(None)
                }
            }
            Op::Unlock(h, a) | Op::HandOver(h, a) => s.unlock(h, a),
            Op::GuardUnlock(i) => {
                let (h, a) = s.guards[i].take().expect("pre");
                s.unlock(h, a)
            }
            Op::DropGuard(i) => {
                let (h, a) = s.guards[i].take().expect("pre");
                s.unlock(h, a);
                Reply::Done
            }
            Op::ForceUnlock(h, a) => s.force_unlock(h, a),
            Op::HoldCount(h, a) => Reply::Count(s.count(h, a)),
            Op::IsLocked(h, _) => Reply::Bool(s.is_locked(h)),
            Op::IsHeldBy(h, a, o) => Reply::Bool(s.count(h, Actor { c: a.c, o }) > 0),
            Op::Ttl(..) => Reply::Ttl(s.ttl.renewable(s.any_renewable())),
            Op::Expire => {
                let lost: Vec<Actor> = s
                    .known
                    .iter()
                    .filter(|(k, n)| **n > 0 && s.wd.get(k).is_some_and(|w| *w > 0))
                    .map(|((_, a), _)| *a)
                    .collect();
                s.unseen.extend(lost);
                s.clear();
                s.hold_keys.clear();
                Reply::Done
            }
            Op::Kill(_) => Reply::Done,
            Op::Wait(h, a) => {
                s.waiters.push((h, a));
                Reply::Done
            }
        };
        s.renewals();
    }

    fn reply(state: &Rw) -> &Reply {
        &state.reply
    }

    fn expected(s: &Rw) -> Raw {
        let mut raw = Raw::new();
        if let Some(mode) = s.mode {
            let mut fields: Vec<(String, String)> = vec![(
                "mode".into(),
                if mode == Half::R { "read" } else { "write" }.into(),
            )];
            fields.extend(s.readers.iter().map(|(a, n)| (a.ln(), n.to_string())));
            fields.extend(
                s.writers
                    .iter()
                    .map(|(a, n)| (format!("{}:write", a.ln()), n.to_string())),
            );
            raw.insert(
                "N".into(),
                (hash(fields), s.ttl.renewable(s.any_renewable())),
            );
        }
        for ((a, k), t) in &s.hold_keys {
            raw.insert(
                format!("{{N}}:{}:rwlock_timeout:{k}", a.ln()),
                (
                    Content::Str("1".into()),
                    t.renewable(s.renewable(Half::R, *a)),
                ),
            );
        }
        raw
    }

    fn open(ctx: &Ctx) -> Sut {
        let halves = ctx
            .clients
            .iter()
            .map(|client| {
                let rw = client.get_read_write_lock(&ctx.name);
                let (r, w) = (rw.read_lock(), rw.write_lock());
                (0..OWNERS)
                    .map(|o| {
                        let owner = Actor { c: 0, o }.owner();
                        (r.with_owner(owner), w.with_owner(owner))
                    })
                    .collect()
            })
            .collect();
        Sut {
            halves,
            guards: Vec::new(),
            waiters: Vec::new(),
            last: None,
        }
    }

    /// A reader whose lost watchdog hold its client may or may not have noticed yet
    /// ([`Rw::unseen`]) yields to its client's waiting writer only once it has: the
    /// crate's answer says which, and the model goes on from that.
    fn observe(state: &mut Rw, op: &Op, sut: &Sut) {
        let before = state.clone();
        Self::step(state, op);
        let (Op::TryLock(Half::R, a)
        | Op::TryLockLease(Half::R, a, _)
        | Op::Acquire(Half::R, a, _)) = *op
        else {
            return;
        };
        let Some(actual) = sut.last.as_ref() else {
            return;
        };
        if !before.unseen.contains(&a) || state.reply.admits(actual) {
            return;
        }
        let mut seen = before;
        seen.known.retain(|(_, w), _| *w != a);
        seen.unseen.remove(&a);
        Self::step(&mut seen, op);
        if seen.reply.admits(actual) {
            *state = seen;
        }
    }

    async fn exec(sut: &mut Sut, ctx: &Ctx, op: Op, after: &Rw) -> Reply {
        let reply = Self::exec_op(sut, ctx, op, after).await;
        sut.last = Some(reply.clone());
        reply
    }

    async fn close(sut: Sut) {
        for (_, task) in sut.waiters {
            task.abort();
            let _ = task.await;
        }
        drop(sut.guards);
    }
}

impl Rw {
    async fn exec_op(sut: &mut Sut, ctx: &Ctx, op: Op, after: &Rw) -> Reply {
        let r = |a: Actor| sut.halves[usize::from(a.c)][usize::from(a.o)].0.clone();
        let w = |a: Actor| sut.halves[usize::from(a.c)][usize::from(a.o)].1.clone();
        let zero = Duration::ZERO;
        macro_rules! on {
            ($h:expr_2021, $a:expr_2021, |$l:ident| $body:expr_2021) => {
                match $h {
                    Half::R => {
                        let $l = r($a);
                        $body
                    }
                    Half::W => {
                        let $l = w($a);
                        $body
                    }
                }
            };
        }
        let mut reply = match op {
            Op::TryLock(h, a) => on!(h, a, |l| Reply::of(l.try_lock().await, Reply::Bool)),
            Op::TryLockLease(h, a, lease) => on!(h, a, |l| Reply::of(
                l.try_lock_with_lease(zero, lease.duration()).await,
                Reply::Bool
            )),
            Op::Acquire(h, a, lease) => match h {
                Half::R => {
                    let got = match lease {
                        None => r(a).try_acquire_for(zero).await,
                        Some(x) => r(a).try_acquire_with_lease(zero, x.duration()).await,
                    };
                    Reply::of(got, |g| match g {
                        Some(g) => {
                            sut.guards.push(Some(RwGuard::R(g)));
                            Reply::Guard(Some(None))
                        }
                        None => Reply::Guard(None),
                    })
                }
                Half::W => {
                    let got = match lease {
                        None => w(a).try_acquire_for(zero).await,
                        Some(x) => w(a).try_acquire_with_lease(zero, x.duration()).await,
                    };
                    Reply::of(got, |g| match g {
                        Some(g) => {
                            sut.guards.push(Some(RwGuard::W(g)));
                            Reply::Guard(Some(None))
                        }
                        None => Reply::Guard(None),
                    })
                }
            },
            Op::Unlock(h, a) => on!(h, a, |l| Reply::of(l.unlock().await, |()| Reply::Done)),
            Op::HandOver(h, a) => on!(h, a, |l| {
                let result = tokio::spawn(async move { l.unlock().await })
                    .await
                    .expect("hand-over task");
                Reply::of(result, |()| Reply::Done)
            }),
            Op::GuardUnlock(i) => match take_guard(&mut sut.guards, i) {
                Some(RwGuard::R(g)) => Reply::of(g.unlock().await, |()| Reply::Done),
                Some(RwGuard::W(g)) => Reply::of(g.unlock().await, |()| Reply::Done),
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::DropGuard(i) => match take_guard(&mut sut.guards, i) {
                Some(g) => {
                    drop(g);
                    Reply::Done
                }
                None => Reply::Error(format!("no guard {i}")),
            },
            Op::ForceUnlock(h, a) => on!(h, a, |l| Reply::of(l.force_unlock().await, Reply::Bool)),
            Op::HoldCount(h, a) => on!(h, a, |l| Reply::of(l.hold_count().await, Reply::Count)),
            Op::IsLocked(h, a) => on!(h, a, |l| Reply::of(l.is_locked().await, Reply::Bool)),
            Op::IsHeldBy(h, a, o) => on!(h, a, |l| Reply::of(
                l.is_held_by(Actor { c: a.c, o }.owner()).await,
                Reply::Bool
            )),
            Op::Ttl(h, a) => on!(h, a, |l| Reply::ttl(l.remain_time_to_live().await)),
            Op::Expire => {
                ctx.expire_leased().await;
                Reply::Done
            }
            Op::Kill(c) => {
                ctx.kill(c).await;
                Reply::Done
            }
            Op::Wait(h, a) => {
                let task = on!(h, a, |l| tokio::spawn(async move {
                    l.try_lock_for(WAITER_BUDGET).await
                }));
                sut.waiters.push(((h, a), task));
                // The waiter's own client subscribed (another client's subscription may
                // linger half a second), then a moment for a writer to announce itself
                // to its client's readers (right after its first attempt).
                let client = &ctx.clients[usize::from(a.c)];
                let subscribed = until(Duration::from_secs(2), || async {
                    client.subscribed_channels() > 0 && ctx.numsub("redisson_rwlock:{N}").await > 0
                })
                .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                if subscribed {
                    Reply::Done
                } else {
                    Reply::Error("the waiter did not subscribe within 2 s".into())
                }
            }
        };
        for w in &after.woken {
            let Some(ix) = sut.waiters.iter().position(|(a, _)| a == w) else {
                continue;
            };
            let (_, task) = sut.waiters.remove(ix);
            match tokio::time::timeout(WAITER_TAKES, task).await {
                Ok(Ok(Ok(true))) => {}
                other => {
                    reply = Reply::Error(format!(
                        "waiter {w:?} should have taken the lock: {other:?} (reply was {reply:?})"
                    ))
                }
            }
        }
        reply
    }
}

pub enum RwGuard {
    R(LockGuard<Read>),
    W(LockGuard<Write>),
}

fn take_guard(guards: &mut [Option<RwGuard>], i: usize) -> Option<RwGuard> {
    guards.get_mut(i).and_then(Option::take)
}

type Waiter = ((Half, Actor), JoinHandle<redisson_lock::Result<bool>>);

pub struct Sut {
    halves: Vec<Vec<(ReadLock, WriteLock)>>,
    guards: Vec<Option<RwGuard>>,
    waiters: Vec<Waiter>,
    /// What the last step answered (for `observe`).
    last: Option<Reply>,
}
