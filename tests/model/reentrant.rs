//! The exclusive locks' model (contract §4, §7, §8): one hash `N`, field
//! `<client>:<owner>` → hold count, its TTL, the per-object lease of partial unlocks, and
//! the operations every `Lock<K>` has. The reentrant lock is the plain case; the fair,
//! fenced, spin and non-reentrant kinds (their own files) switch on parts of it through
//! [`Variant`].
//!
//! The model, from the contract:
//! * acquire: free (no `N`) or already the caller's → `HINCRBY` the field, `PEXPIRE N` to
//!   the lease (watchdog mode: 30 s); re-entry always resets the TTL to the *new* lease;
//! * unlock: not the caller's → nil (`Error::NotOwner`); count > 0 after the decrement →
//!   `PEXPIRE N` to the object's last lease (`internalLockLeaseTime`: the lease of the
//!   object's last lease-mode acquire, reset to the watchdog's on a full unlock, a
//!   not-owner answer and a force unlock; 3.27.2+); 0 → `DEL N`, publish `0`;
//! * force unlock: `DEL N` → publish, `true`; nothing → `false`;
//! * a waiter (`try_lock_for` with a long budget) retries when a message reaches it;
//! * a guard's drop is an unlock by its owner (in the background).
//!
//! One "object" per client: every actor's handle is `with_owner` of one `get_*` handle.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

use proptest::prelude::*;
use redisson_lock::kinds::Reentrant;
use redisson_lock::{Client, Lock, LockGuard, LockKind};
use tokio::task::JoinHandle;

use super::*;

/// Which parts of the exclusive model a kind uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Variant {
    /// Fair queue (§10).
    pub fair: bool,
    /// Fencing token (§12).
    pub fenced: bool,
    /// Re-entry refused (§14.4; `try_*` answer `false`, `docs/protocol.md` §10.5).
    pub non_reentrant: bool,
    /// No publish; waiters poll (§13).
    pub spin: bool,
}

#[derive(Clone, Debug)]
pub enum Op {
    /// `try_lock()`.
    TryLock(Actor),
    /// `try_lock_for(0)`.
    TryLockFor0(Actor),
    /// `try_lock_with_lease(0, lease)`.
    TryLockLease(Actor, Lease),
    /// `try_acquire_for(0)` / `try_acquire_with_lease(0, lease)`: a guard.
    Acquire(Actor, Option<Lease>),
    Unlock(Actor),
    /// `unlock()` from another task through a `with_owner` handle moved there.
    HandOver(Actor),
    /// `guard.unlock()` of the n-th guard made.
    GuardUnlock(usize),
    /// Drops the n-th guard made.
    DropGuard(usize),
    ForceUnlock(Actor),
    HoldCount(Actor),
    IsLocked(Actor),
    /// `is_held_by(owner)` on the first actor's handle (the owner is of that client).
    IsHeldBy(Actor, u8),
    IsHeldByCurrent(Actor),
    /// `remain_time_to_live()`, as a class.
    Ttl(Actor),
    /// The lease runs out: `PEXPIRE N 1`.
    Expire,
    /// `CLIENT KILL` of a client's command connection.
    Kill(u8),
    /// A waiter: `try_lock_for(40 s)` in a task of its own.
    Wait(Actor),
    /// Fenced: `try_lock_and_get_token(0, lease)` / `try_lock_and_get_token_for(0)`.
    TryToken(Actor, Option<Lease>),
    /// Fenced: `token()`.
    Token(Actor),
}

/// The model of one exclusive lock.
#[derive(Clone, Debug, Default)]
pub struct Excl {
    pub v: Variant,
    /// The hash: actor → hold count (no entry: no field; empty: no key).
    pub holds: BTreeMap<Actor, u32>,
    pub ttl: Ttl,
    /// Each client's object's `internalLockLeaseTime`.
    pub ilt: [u64; 2],
    /// Waiters in order (fair: the queue; others: at most one).
    pub waiters: Vec<Actor>,
    /// The fencing counter (0: no key).
    pub token: u64,
    /// Watchdog registrations per actor (+1 per watchdog-mode acquisition, -1 per unlock
    /// whatever it answered, all of a client's gone at its force unlock): while a holder
    /// has one, a renewal may reset `N` to 30 s at any time.
    pub wd: BTreeMap<Actor, u32>,
    /// Guards made, by index: the owner, `None` once used.
    pub guards: Vec<Option<Actor>>,
    /// Waiters that took the lock in the last step.
    pub woken: Vec<Actor>,
    pub reply: Reply,
}

impl Excl {
    pub fn new(v: Variant) -> Excl {
        Excl {
            v,
            ilt: [WATCHDOG_MS; 2],
            ..Excl::default()
        }
    }

    /// One acquisition attempt; `blocking`: the waiting path (§10.2's blocking variant
    /// for the fair lock). `Err` only for a non-reentrant `lock()`, never generated.
    pub fn acquire(&mut self, a: Actor, lease: Option<Lease>, blocking: bool) -> bool {
        let _ = blocking;
        if self.holds.contains_key(&a) {
            if self.v.non_reentrant {
                return false; // try_* of a non-reentrant lock: false, nothing written
            }
            *self.holds.get_mut(&a).expect("held") += 1;
        } else if self.holds.is_empty() {
            if self.v.fair {
                // Free, but a queued waiter comes first (§10.2).
                if let Some(&head) = self.waiters.first() {
                    if head != a {
                        return false;
                    }
                    self.waiters.remove(0);
                }
            }
            self.holds.insert(a, 1);
        } else {
            return false;
        }
        self.ttl = Ttl::Ms(lease.map_or(WATCHDOG_MS, Lease::ms));
        match lease {
            Some(lease) => self.ilt[usize::from(a.c)] = lease.ms(),
            None => *self.wd.entry(a).or_default() += 1,
        }
        if self.v.fenced {
            self.token += 1;
        }
        true
    }

    /// An unlock by `a` (also a guard's drop): the reply.
    pub fn unlock(&mut self, a: Actor) -> Reply {
        let c = usize::from(a.c);
        if let Some(n) = self.wd.get_mut(&a) {
            *n = n.saturating_sub(1);
        }
        if self.holds.is_empty() && self.v.fair {
            // §10.3: a vanished fair lock wakes the head and answers "released".
            self.ilt[c] = WATCHDOG_MS;
            self.publish();
            return Reply::Done;
        }
        let Some(count) = self.holds.get_mut(&a) else {
            self.ilt[c] = WATCHDOG_MS;
            return Reply::NotOwner;
        };
        *count -= 1;
        if *count > 0 {
            self.ttl = Ttl::Ms(self.ilt[c]);
        } else {
            self.holds.remove(&a);
            self.ttl = Ttl::Gone;
            self.ilt[c] = WATCHDOG_MS;
            self.publish();
        }
        Reply::Done
    }

    pub fn force_unlock(&mut self, a: Actor) -> Reply {
        self.ilt[usize::from(a.c)] = WATCHDOG_MS;
        self.wd.retain(|w, _| w.c != a.c);
        if self.holds.is_empty() {
            return Reply::Bool(false);
        }
        self.holds.clear();
        self.ttl = Ttl::Gone;
        self.publish();
        Reply::Bool(true)
    }

    /// `0` on the channel (fair: the head's own channel): the waiter it reaches retries.
    fn publish(&mut self) {
        if self.v.spin {
            return; // spin waiters poll: see `after_step`
        }
        self.wake_first();
    }

    fn wake_first(&mut self) {
        if let Some(&w) = self.waiters.first() {
            let taken = if self.v.fair {
                self.acquire(w, None, true)
            } else if self.acquire(w, None, true) {
                self.waiters.remove(0);
                true
            } else {
                false
            };
            if taken {
                self.woken.push(w);
            }
        }
    }

    /// After every step: a spin waiter polls.
    fn after_step(&mut self) {
        if self.v.spin {
            self.wake_first();
        }
    }

    /// Whether a renewal may have reset `N` to 30 s.
    pub fn renewable(&self) -> bool {
        self.holds
            .keys()
            .any(|a| self.wd.get(a).is_some_and(|n| *n > 0))
    }

    pub fn held_by(&self, a: Actor) -> bool {
        self.holds.contains_key(&a)
    }

    pub fn ops(&self) -> BoxedStrategy<Op> {
        let guards = self.guards.len().max(1);
        let mut ops = vec![
            (4, actor().prop_map(Op::TryLock).boxed()),
            (1, actor().prop_map(Op::TryLockFor0).boxed()),
            (
                3,
                (actor(), lease())
                    .prop_map(|(a, l)| Op::TryLockLease(a, l))
                    .boxed(),
            ),
            (
                3,
                (actor(), lease_opt())
                    .prop_map(|(a, l)| Op::Acquire(a, l))
                    .boxed(),
            ),
            (4, actor().prop_map(Op::Unlock).boxed()),
            (1, actor().prop_map(Op::HandOver).boxed()),
            (2, (0..guards).prop_map(Op::GuardUnlock).boxed()),
            (2, (0..guards).prop_map(Op::DropGuard).boxed()),
            (1, actor().prop_map(Op::ForceUnlock).boxed()),
            (1, actor().prop_map(Op::HoldCount).boxed()),
            (1, actor().prop_map(Op::IsLocked).boxed()),
            (
                1,
                (actor(), 0..OWNERS)
                    .prop_map(|(a, o)| Op::IsHeldBy(a, o))
                    .boxed(),
            ),
            (1, actor().prop_map(Op::IsHeldByCurrent).boxed()),
            (1, actor().prop_map(Op::Ttl).boxed()),
            (1, Just(Op::Expire).boxed()),
            (1, (0u8..2).prop_map(Op::Kill).boxed()),
            (2, actor().prop_map(Op::Wait).boxed()),
        ];
        if self.v.fenced {
            ops.push((
                3,
                (actor(), lease_opt())
                    .prop_map(|(a, l)| Op::TryToken(a, l))
                    .boxed(),
            ));
            ops.push((1, actor().prop_map(Op::Token).boxed()));
        }
        proptest::strategy::Union::new_weighted(ops).boxed()
    }

    pub fn pre(&self, op: &Op) -> bool {
        match op {
            Op::GuardUnlock(i) | Op::DropGuard(i) => {
                self.guards.get(*i).is_some_and(Option::is_some)
            }
            // A lease running out is only waited for by polling: no waiters then.
            Op::Expire => self.waiters.is_empty(),
            Op::Wait(a) => {
                !self.holds.is_empty()
                    && !self.holds.contains_key(a)
                    && !self.waiters.contains(a)
                    && self.waiters.len() < if self.v.fair { 3 } else { 1 }
            }
            Op::TryToken(..) | Op::Token(_) => self.v.fenced,
            _ => true,
        }
    }

    pub fn step(&mut self, op: &Op) {
        self.woken.clear();
        // A renewal's 30 s stays until the next write of `N` (see `Ttl::renewable`).
        self.ttl = self.ttl.renewable(self.renewable());
        self.reply = match *op {
            Op::TryLock(a) | Op::TryLockFor0(a) => Reply::Bool(self.acquire(a, None, false)),
            Op::TryLockLease(a, l) => Reply::Bool(self.acquire(a, Some(l), false)),
            Op::Acquire(a, l) => {
                if self.acquire(a, l, false) {
                    self.guards.push(Some(a));
                    Reply::Guard(Some(self.v.fenced.then_some(self.token)))
                } else {
                    Reply::Guard(None)
                }
            }
            Op::TryToken(a, l) => Reply::Token(self.acquire(a, l, false).then_some(self.token)),
            Op::Token(_) => Reply::Token((self.token > 0).then_some(self.token)),
            Op::Unlock(a) | Op::HandOver(a) => self.unlock(a),
            Op::GuardUnlock(i) => {
                let a = self.guards[i].take().expect("pre");
                self.unlock(a)
            }
            Op::DropGuard(i) => {
                let a = self.guards[i].take().expect("pre");
                self.unlock(a);
                Reply::Done
            }
            Op::ForceUnlock(a) => self.force_unlock(a),
            Op::HoldCount(a) => Reply::Count(self.holds.get(&a).copied().unwrap_or(0)),
            Op::IsLocked(_) => Reply::Bool(!self.holds.is_empty()),
            Op::IsHeldBy(a, o) => Reply::Bool(self.held_by(Actor { c: a.c, o })),
            Op::IsHeldByCurrent(a) => Reply::Bool(self.held_by(a)),
            Op::Ttl(_) => Reply::Ttl(self.ttl.renewable(self.renewable())),
            Op::Expire => {
                self.holds.clear();
                self.ttl = Ttl::Gone;
                Reply::Done
            }
            Op::Kill(_) | Op::Wait(_) => Reply::Done,
        };
        if let Op::Wait(a) = *op {
            self.waiters.push(a);
        }
        self.after_step();
        self.ttl = self.ttl.renewable(self.renewable());
    }

    pub fn expected(&self) -> Raw {
        let mut raw = Raw::new();
        if !self.holds.is_empty() {
            raw.insert(
                "N".into(),
                (
                    hash(self.holds.iter().map(|(a, n)| (a.ln(), n))),
                    self.ttl.renewable(self.renewable()),
                ),
            );
        }
        if self.v.fair && !self.waiters.is_empty() {
            let names: Vec<String> = self.waiters.iter().map(|a| a.ln()).collect();
            raw.insert(
                "redisson_lock_queue:{N}".into(),
                (Content::List(names.clone()), Ttl::Persist),
            );
            raw.insert(
                "redisson_lock_timeout:{N}".into(),
                (Content::Zset(names), Ttl::Persist),
            );
        }
        if self.token > 0 {
            raw.insert(
                "redisson_lock_token:{N}".into(),
                (Content::Str(self.token.to_string()), Ttl::Persist),
            );
        }
        raw
    }
}

/// A kind the exclusive model covers.
pub trait ExclKind: LockKind + Sized + 'static {
    const LABEL: &'static str;
    const VARIANT: Variant;
    const CASES: u32;
    fn get(client: &Client, name: &str) -> Lock<Self>;
    /// The fenced lock's token operations (other kinds never get them).
    fn token_op(lock: &Lock<Self>, op: &Op) -> impl std::future::Future<Output = Reply> + Send {
        let _ = (lock, op);
        async { Reply::Error("no token operations".into()) }
    }
}

impl ExclKind for Reentrant {
    const LABEL: &'static str = "reentrant";
    const VARIANT: Variant = Variant {
        fair: false,
        fenced: false,
        non_reentrant: false,
        spin: false,
    };
    const CASES: u32 = 64;
    fn get(client: &Client, name: &str) -> Lock<Self> {
        client.get_lock(name)
    }
}

/// The crate's side of one case.
pub struct Sut<K: ExclKind> {
    handles: Vec<Vec<Lock<K>>>,
    guards: Vec<Option<LockGuard<K>>>,
    waiters: Vec<(Actor, JoinHandle<redisson_lock::Result<bool>>)>,
    /// The crate's first token minus the model's (`docs/protocol.md` §12).
    pub seed: Option<u64>,
}

/// The exclusive kind `K` under test.
pub struct ExclTest<K>(PhantomData<K>);

impl<K: ExclKind> Kind for ExclTest<K> {
    type State = Excl;
    type Op = Op;
    type Sut = Sut<K>;
    const LABEL: &'static str = K::LABEL;
    const CASES: u32 = K::CASES;

    fn init() -> Excl {
        Excl::new(K::VARIANT)
    }
    fn ops(state: &Excl) -> BoxedStrategy<Op> {
        state.ops()
    }
    fn pre(state: &Excl, op: &Op) -> bool {
        state.pre(op)
    }
    fn step(state: &mut Excl, op: &Op) {
        state.step(op)
    }
    fn reply(state: &Excl) -> &Reply {
        &state.reply
    }
    fn expected(state: &Excl) -> Raw {
        state.expected()
    }

    fn open(ctx: &Ctx) -> Sut<K> {
        let handles = ctx
            .clients
            .iter()
            .map(|client| {
                let base = K::get(client, &ctx.name);
                (0..OWNERS)
                    .map(|o| base.with_owner(Actor { c: 0, o }.owner()))
                    .collect()
            })
            .collect();
        Sut {
            handles,
            guards: Vec::new(),
            waiters: Vec::new(),
            seed: None,
        }
    }

    async fn exec(sut: &mut Sut<K>, ctx: &Ctx, op: Op, after: &Excl) -> Reply {
        let h = |a: Actor| sut.handles[usize::from(a.c)][usize::from(a.o)].clone();
        let zero = Duration::ZERO;
        let mut reply = match op {
            Op::TryLock(a) => Reply::of(h(a).try_lock().await, Reply::Bool),
            Op::TryLockFor0(a) => Reply::of(h(a).try_lock_for(zero).await, Reply::Bool),
            Op::TryLockLease(a, l) => Reply::of(
                h(a).try_lock_with_lease(zero, l.duration()).await,
                Reply::Bool,
            ),
            Op::Acquire(a, l) => {
                let got = match l {
                    None => h(a).try_acquire_for(zero).await,
                    Some(l) => h(a).try_acquire_with_lease(zero, l.duration()).await,
                };
                Reply::of(got, |g| match g {
                    Some(g) => {
                        let token = g.token();
                        sut.guards.push(Some(g));
                        Reply::Guard(Some(token))
                    }
                    None => Reply::Guard(None),
                })
            }
            Op::Unlock(a) => Reply::of(h(a).unlock().await, |()| Reply::Done),
            Op::HandOver(a) => {
                let moved = h(a);
                let result = tokio::spawn(async move { moved.unlock().await })
                    .await
                    .expect("hand-over task");
                Reply::of(result, |()| Reply::Done)
            }
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
            Op::ForceUnlock(a) => Reply::of(h(a).force_unlock().await, Reply::Bool),
            Op::HoldCount(a) => Reply::of(h(a).hold_count().await, Reply::Count),
            Op::IsLocked(a) => Reply::of(h(a).is_locked().await, Reply::Bool),
            Op::IsHeldBy(a, o) => Reply::of(
                h(a).is_held_by(Actor { c: a.c, o }.owner()).await,
                Reply::Bool,
            ),
            Op::IsHeldByCurrent(a) => Reply::of(h(a).is_held_by_current_task().await, Reply::Bool),
            Op::Ttl(a) => Reply::ttl(h(a).remain_time_to_live().await),
            Op::Expire => {
                ctx.expire_leased().await;
                Reply::Done
            }
            Op::Kill(c) => {
                ctx.kill(c).await;
                Reply::Done
            }
            Op::Wait(a) => {
                let lock = h(a);
                sut.waiters.push((
                    a,
                    tokio::spawn(async move { lock.try_lock_for(WAITER_BUDGET).await }),
                ));
                let field = ctx.field(a);
                let settled = if K::VARIANT.fair {
                    until(Duration::from_secs(2), || async {
                        let key = format!("redisson_lock_queue:{{{}}}", ctx.name);
                        let queue: Vec<String> = ctx.cmd("LRANGE", &[&key, "0", "-1"]).await;
                        queue.contains(&field)
                    })
                    .await
                } else if K::VARIANT.spin {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    true
                } else {
                    until(Duration::from_secs(2), || async {
                        ctx.numsub("redisson_lock__channel:{N}").await > 0
                    })
                    .await
                };
                if settled {
                    Reply::Done
                } else {
                    Reply::Error("the waiter did not start waiting within 2 s".into())
                }
            }
            Op::TryToken(..) | Op::Token(_) => {
                let lock = h(match op {
                    Op::TryToken(a, _) | Op::Token(a) => a,
                    _ => unreachable!(),
                });
                K::token_op(&lock, &op).await
            }
        };
        // The waiters this step let in must have taken the lock.
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
        if K::VARIANT.fenced {
            fenced::fix_tokens(sut, ctx, after, &mut reply).await;
        }
        reply
    }

    async fn close(sut: Sut<K>) {
        for (_, task) in sut.waiters {
            task.abort();
            let _ = task.await;
        }
        drop(sut.guards);
    }

    fn fix_raw(sut: &Sut<K>, _after: &Excl, raw: &mut Raw) {
        if K::VARIANT.fenced {
            fenced::fix_raw(sut.seed, raw);
        }
    }
}
