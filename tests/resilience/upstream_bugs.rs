//! The bugs Redisson's users still report, one named test each, with its upstream number
//! in the test's doc. Each test fails on the bug; where this crate never had it, the test
//! stays as a guard (docs/reliability.md, "Upstream bugs, as regression tests", says
//! how each was shown to fail with the code broken on purpose).
//!
//! The watchdog timeout is short (900 ms: a renewal every 300 ms) so that "renewed
//! forever" and "never renewed" show within a second or two.

use crate::support;
use support::*;

use std::time::Duration;

use rand::{Rng, SeedableRng};
use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Error, LockOwner};
use tokio::time::Instant;

/// The watchdog timeout (the lease of a watchdog hold).
const TIMEOUT: Duration = Duration::from_millis(900);
/// The renewal period: a third of the timeout.
const PERIOD: Duration = Duration::from_millis(300);

async fn client(server: &RedisServer) -> Client {
    server
        .client_with(server.config().watchdog_timeout(TIMEOUT))
        .await
}

/// A seeded RNG; the seed is printed so that a failing run can be replayed
/// (`UPSTREAM_SEED=<n>`).
fn rng(test: &str) -> rand::rngs::StdRng {
    let seed = std::env::var("UPSTREAM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().r#gen::<u64>());
    println!("{test}: seed {seed} (UPSTREAM_SEED={seed} replays it)");
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn field(client: &Client, owner: LockOwner) -> String {
    format!("{}:{owner}", client.id())
}

/// Puts every key of `fields` back as the lock hash `name -> field: 1` with a 60 s TTL
/// (another program re-creating an orphan, or a hold the client forgot), then watches
/// two renewal periods: no script may run on the server, and no TTL may be re-armed to
/// the watchdog's 900 ms. A leaked renewal entry would re-arm every one of them in the
/// next round, within a period.
async fn assert_never_renewed_again(raw: &fred::prelude::Client, fields: &[(String, String)]) {
    for (name, field) in fields {
        let _: () = raw.hset(name, (field.as_str(), 1)).await.unwrap();
        let _: bool = raw.pexpire(name, 60_000, None).await.unwrap();
    }
    reset_stats(raw).await;
    tokio::time::sleep(PERIOD * 2).await;
    for (name, _) in fields {
        let ttl = pttl(raw, name).await;
        assert!(
            ttl > 50_000,
            "{name}: its TTL was re-armed to {ttl} ms after the unlock: a renewal outlived it"
        );
    }
    assert_eq!(
        script_calls(raw).await,
        0,
        "scripts ran on the server after every hold was given back"
    );
    for (name, _) in fields {
        let _: i64 = raw.del(name).await.unwrap();
    }
}

/// redisson#7272 (open upstream: the renewal's cancel races the acquire path's
/// scheduling, and an orphan key is renewed forever). Here, an unlock while a renewal
/// batch is in flight: Redis is stalled for 500 ms (longer than the 300 ms period, so a
/// renewal of the hold is sent into the stall), and the unlock is sent at a random
/// moment of the stall, before or after the renewal. Once the unlock has answered,
/// nothing is renewed: the client renews no lock, the key is gone, and keys put back with
/// the same owner field are never touched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_with_a_renewal_batch_in_flight_stops_every_renewal() {
    let server = RedisServer::start_pausable();
    let client = client(&server).await;
    let raw = server.raw().await;
    let mut rng = rng("renewal in flight");
    let mut released = Vec::new();
    for round in 0..4 {
        let name = key(&format!("7272-in-flight-{round}"));
        let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(1));
        lock.lock().await.unwrap();
        if round % 2 == 1 {
            lock.lock().await.unwrap(); // a re-entered hold: two unlocks
        }
        let stalled = server.stall(0.5).await;
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..=420))).await;
        lock.unlock().await.unwrap();
        if round % 2 == 1 {
            lock.unlock().await.unwrap();
        }
        stalled.await.unwrap();
        assert!(!exists(&raw, &name).await, "round {round}: the lock stayed");
        assert_eq!(client.renewed_locks(), 0, "round {round}: still renewed");
        released.push((name, field(&client, LockOwner::from_raw(1))));
    }
    assert_never_renewed_again(&raw, &released).await;
    client.shutdown().await.unwrap();
}

/// redisson#7272, the acquire side: an unlock while an acquire of the same lock by the
/// same owner is completing (a re-entry racing the unlock of the first hold), and
/// acquires dropped at random points (Redisson's interrupted `lockInterruptibly`) with
/// an `unlock()` after them, as a `finally` would. When everything is given back, no
/// renewal is left: none registered, nothing in Redis, and keys put back with the owner
/// field never re-armed. It found a defect of this crate (docs/reliability.md, "Found
/// and fixed"): the unlock after a dropped acquire gave back that acquire's hold, and
/// the client's background undoing of it then the owner's next hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_racing_an_acquire_of_the_same_lock_leaves_no_renewal() {
    let server = RedisServer::start();
    let client = client(&server).await;
    let raw = server.raw().await;
    let mut rng = rng("unlock racing an acquire");
    let owner = LockOwner::from_raw(1);
    let name = key("7272-racing-acquire");
    let lock = client.get_lock(&name).with_owner(owner);
    let (mut dropped, mut raced) = (0, 0);
    for round in 0..60 {
        if round % 2 == 0 {
            // A re-entry completing while the first hold is unlocked.
            lock.lock().await.unwrap();
            let again = {
                let lock = lock.clone();
                tokio::spawn(async move { lock.lock().await })
            };
            tokio::time::sleep(Duration::from_micros(rng.gen_range(0..3_000))).await;
            lock.unlock().await.unwrap();
            again.await.unwrap().unwrap();
            lock.unlock().await.unwrap();
            raced += 1;
        } else {
            // An acquire dropped at a random point (after 1 to 3 polls, 0-200 µs apart:
            // before its script is written, while it runs, or once it answered), then an
            // unlock "in finally" (Redisson's interrupted `lockInterruptibly`). The
            // client finishes the dropped acquire and gives back what it took before any
            // other call of the owner: the unlock gives back a hold the caller was told
            // about, or answers NotOwner, and never the dropped acquire's hold (whose
            // own undoing would then give back the owner's next hold, as it did before
            // the fix: the next round's last unlock answered NotOwner).
            let mut acquire = Box::pin(lock.lock());
            let mut taken = None;
            for _ in 0..rng.gen_range(1..=3) {
                if let std::task::Poll::Ready(result) = futures::poll!(acquire.as_mut()) {
                    taken = Some(result);
                    break;
                }
                tokio::time::sleep(Duration::from_micros(rng.gen_range(0..200))).await;
            }
            drop(acquire);
            match (lock.unlock().await, &taken) {
                (Ok(()), Some(_)) | (Err(Error::NotOwner { .. }), None) => {}
                (outcome, taken) => {
                    panic!("round {round}: unlock answered {outcome:?} after acquire {taken:?}")
                }
            }
            match taken {
                None => dropped += 1,
                Some(result) => result.unwrap(),
            }
        }
    }
    println!("{raced} re-entries raced an unlock, {dropped} acquires dropped");
    assert!(
        gone_within(&raw, &name, Duration::from_secs(5))
            .await
            .is_some(),
        "the lock stayed held"
    );
    assert_eq!(client.renewed_locks(), 0, "a renewal outlived the unlocks");
    assert_never_renewed_again(&raw, &[(name, field(&client, owner))]).await;
    client.shutdown().await.unwrap();
}

/// redisson#6844 (open upstream: "attempt to unlock lock, not locked by current thread"
/// with no second unlock in the caller's code). Redis stalls for 600 ms, past the 150 ms
/// response timeout, while the holder unlocks (its first send times out, runs later,
/// and is asked again) or acquires (the acquire's outcome is settled from the owner's
/// count). An unlock of a hold the caller was given never answers `NotOwner`, and gives
/// back exactly one hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_and_resent_unlocks_never_say_not_owner() {
    let server = RedisServer::start_pausable();
    let client = server
        .client_with(
            server
                .config()
                .watchdog_timeout(TIMEOUT)
                .response_timeout(Duration::from_millis(150)),
        )
        .await;
    let raw = server.raw().await;
    let mut rng = rng("resent unlocks");
    let owner = LockOwner::from_raw(3);
    let name = key("6844-resent-unlock");
    let lock = client.get_lock(&name).with_owner(owner);
    let (mut unknown, mut unlocks) = (0, 0);
    for round in 0..6 {
        let reentered = round % 2 == 1;
        if round % 3 == 2 {
            // The acquire goes through the stall.
            let stalled = server.stall(0.6).await;
            assert!(lock.try_lock_for(Duration::from_secs(5)).await.unwrap());
            stalled.await.unwrap();
        } else {
            lock.lock().await.unwrap();
        }
        if reentered {
            lock.lock().await.unwrap();
        }
        let holds = if reentered { 2 } else { 1 };
        for left in (0..holds).rev() {
            let stalled = server.stall(0.6).await;
            tokio::time::sleep(Duration::from_millis(rng.gen_range(0..100))).await;
            let outcome = lock.unlock().await;
            stalled.await.unwrap();
            unlocks += 1;
            match outcome {
                Ok(()) => {}
                Err(Error::OutcomeUnknown { .. }) => unknown += 1,
                Err(error) => panic!("round {round}: a held lock's unlock failed: {error}"),
            }
            let count: Option<i64> = raw.hget(&name, field(&client, owner)).await.unwrap();
            let expected = (left > 0).then_some(left as i64);
            assert_eq!(
                count, expected,
                "round {round}: not exactly one hold given back"
            );
        }
        assert!(!exists(&raw, &name).await);
    }
    println!("{unlocks} unlocks through a stall, {unknown} answered OutcomeUnknown");
    assert_eq!(unknown, 0, "the stall is shorter than the latch lives");
    client.shutdown().await.unwrap();
}

/// redisson#7251 (fixed upstream in 4.x: a read lock's renewal entry leaked after a
/// reentrant read unlock, and the watchdog kept renewing a lock nobody held). A read
/// lock taken three times (two of them by a second owner of the same client as well)
/// and given back fully leaves no renewal: none registered, no script sent over two
/// periods, no hold key, and keys put back by hand never re-armed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fully_released_reentrant_read_lock_leaves_no_renewal() {
    let server = RedisServer::start();
    let client = client(&server).await;
    let raw = server.raw().await;
    let name = key("7251-read-reentry");
    let rw = client.get_read_write_lock(&name);
    let first = rw.read_lock().with_owner(LockOwner::from_raw(1));
    let second = rw.read_lock().with_owner(LockOwner::from_raw(2));
    for _ in 0..3 {
        first.lock().await.unwrap();
    }
    second.lock().await.unwrap();
    second.lock().await.unwrap();
    // Renewed while held.
    assert!(
        rearmed(&raw, &name).await,
        "the read holds were not renewed"
    );
    assert!(exists(&raw, &name).await, "the read holds were not renewed");
    for _ in 0..3 {
        first.unlock().await.unwrap();
    }
    assert_eq!(
        client.renewed_locks(),
        1,
        "after the first owner's three read unlocks only the second owner may be renewed"
    );
    second.unlock().await.unwrap();
    second.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0, "a read renewal entry leaked");
    assert!(!exists(&raw, &name).await);
    let holds = strings(&raw, ["KEYS", "*rwlock_timeout*"]).await;
    assert!(holds.is_empty(), "hold keys left: {holds:?}");

    // Keys put back as the read holds were: never touched.
    let tag = format!("{{{name}}}");
    let mut put_back = Vec::new();
    for owner in [1, 2] {
        let field = field(&client, LockOwner::from_raw(owner));
        let _: () = raw.hset(&name, ("mode", "read")).await.unwrap();
        let hold = format!("{tag}:{field}:rwlock_timeout:1");
        let _: () = raw
            .set(&hold, 1, Some(Expiration::PX(60_000)), None, false)
            .await
            .unwrap();
        put_back.push(hold);
        put_back.push(name.clone());
        let _: () = raw.hset(&name, (field.as_str(), 1)).await.unwrap();
    }
    let _: bool = raw.pexpire(&name, 60_000, None).await.unwrap();
    // A leaked entry would re-arm them in the next round, within a period.
    reset_stats(&raw).await;
    tokio::time::sleep(PERIOD * 2).await;
    for key in &put_back {
        let ttl = pttl(&raw, key).await;
        assert!(ttl > 50_000, "{key} re-armed to {ttl} ms");
    }
    assert_eq!(script_calls(&raw).await, 0, "a renewal was sent");
    client.shutdown().await.unwrap();
}

/// redisson#7098 (fixed upstream: one instance's read-lock watchdog renewed every
/// reader's hold keys, keeping a crashed instance's read hold alive, so a writer waited
/// for nothing). Client A reads and goes away without unlocking (shut down: its renewal
/// stops); client B reads the same lock and keeps renewing it. A's hold key must run out
/// at its own lease (B never re-arms it), and once B unlocks, a writer gets in at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_read_renewal_never_keeps_another_clients_read_hold_alive() {
    let server = RedisServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let c = client(&server).await;
    let raw = server.raw().await;
    let name = key("7098-zombie-reader");
    let a_read = a
        .get_read_write_lock(&name)
        .read_lock()
        .with_owner(LockOwner::from_raw(1));
    let b_read = b
        .get_read_write_lock(&name)
        .read_lock()
        .with_owner(LockOwner::from_raw(1));
    a_read.lock().await.unwrap();
    b_read.lock().await.unwrap();
    let a_hold = format!("{{{name}}}:{}:rwlock_timeout:1", field(&a, a_read.owner()));
    let b_hold = format!("{{{name}}}:{}:rwlock_timeout:1", field(&b, b_read.owner()));
    a.shutdown().await.unwrap(); // a crash, as far as renewal goes: A never unlocks

    let gone = gone_within(&raw, &a_hold, TIMEOUT * 4).await;
    assert!(
        gone.is_some(),
        "A's hold key {a_hold} was kept alive by B's renewal (PTTL {})",
        pttl(&raw, &a_hold).await
    );
    println!("A's hold key ran out {gone:?} after A stopped");
    // B is still renewed.
    assert!(rearmed(&raw, &b_hold).await, "B's own hold was not renewed");
    assert!(
        pttl(&raw, &b_hold).await > 0,
        "B's own hold was not renewed"
    );

    b_read.unlock().await.unwrap();
    let writer = c.get_read_write_lock(&name).write_lock();
    let started = Instant::now();
    assert!(
        writer.try_lock().await.unwrap(),
        "the writer was kept out by A's expired read hold"
    );
    println!("the writer got in {:?} after B's unlock", started.elapsed());
    writer.unlock().await.unwrap();
    b.shutdown().await.unwrap();
    c.shutdown().await.unwrap();
}

/// redisson#7224 (fixed upstream, the fix of #5019) and #4323: a fair lock's `tryLock`
/// that times out (or whose exit from the queue itself timed out) left its queue entry
/// and deadline behind, and the next waiter waited on a ghost. Three ways to give up:
/// the wait budget running out, the caller dropping the future, and the budget running
/// out while Redis stalls past the response timeout (the queue exit is sent into the
/// stall). After each, the queue and the deadlines hold no entry of the waiter, and the
/// next waiter is served at once when the holder unlocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_try_lock_that_gives_up_leaves_no_queue_entry_or_deadline() {
    let server = RedisServer::start_pausable();
    let holder_client = client(&server).await;
    let waiter_client = server
        .client_with(
            server
                .config()
                .watchdog_timeout(TIMEOUT)
                .response_timeout(Duration::from_millis(200)),
        )
        .await;
    let raw = server.raw().await;
    for way in ["budget", "dropped", "stalled exit"] {
        let name = key(&format!("7224-fair-{}", way.replace(' ', "-")));
        let queue = format!("redisson_lock_queue:{{{name}}}");
        let deadlines = format!("redisson_lock_timeout:{{{name}}}");
        let holder = holder_client
            .get_fair_lock(&name)
            .with_owner(LockOwner::from_raw(1));
        holder.lock().await.unwrap();
        let waiter = waiter_client
            .get_fair_lock(&name)
            .with_owner(LockOwner::from_raw(2));
        let member = field(&waiter_client, waiter.owner());
        match way {
            "budget" => {
                assert!(
                    !waiter
                        .try_lock_for(Duration::from_millis(300))
                        .await
                        .unwrap()
                );
            }
            "dropped" => {
                let wait = waiter.try_lock_for(Duration::from_secs(10));
                tokio::select! {
                    _ = wait => panic!("the held fair lock was taken"),
                    _ = async {
                        while !queued_now(&raw, &queue, &member).await {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    } => {}
                }
            }
            _ => {
                let wait = {
                    let waiter = waiter.clone();
                    tokio::spawn(
                        async move { waiter.try_lock_for(Duration::from_millis(400)).await },
                    )
                };
                // Stall Redis across the moment the budget ends.
                tokio::time::sleep(Duration::from_millis(300)).await;
                let stalled = server.stall(0.6).await;
                let outcome = wait.await.unwrap();
                assert!(!matches!(outcome, Ok(true)), "{outcome:?}");
                stalled.await.unwrap();
            }
        }
        let left = eventually(Duration::from_secs(3), || async {
            !queued_now(&raw, &queue, &member).await
                && !has_deadline(&raw, &deadlines, &member).await
        })
        .await;
        assert!(
            left,
            "{way}: the waiter's queue entry or deadline stayed: queue {:?}, deadlines {:?}",
            strings(&raw, ["LRANGE", queue.as_str(), "0", "-1"]).await,
            strings(
                &raw,
                ["ZRANGE", deadlines.as_str(), "0", "-1", "WITHSCORES"]
            )
            .await
        );
        // The next waiter is not kept waiting by a ghost ahead of it.
        let next = waiter_client
            .get_fair_lock(&name)
            .with_owner(LockOwner::from_raw(3));
        let next_wait = {
            let next = next.clone();
            tokio::spawn(async move { next.try_lock_for(Duration::from_secs(20)).await })
        };
        let next_member = field(&waiter_client, next.owner());
        assert!(
            eventually(Duration::from_secs(3), || queued_now(
                &raw,
                &queue,
                &next_member
            ))
            .await,
            "{way}: the next waiter never queued"
        );
        holder.unlock().await.unwrap();
        let unlocked = Instant::now();
        assert!(next_wait.await.unwrap().unwrap());
        let waited = unlocked.elapsed();
        println!("{way}: the next waiter was served {waited:?} after the unlock");
        assert!(
            waited < Duration::from_secs(3),
            "{way}: the next waiter waited {waited:?}: a ghost's slot was ahead of it"
        );
        next.unlock().await.unwrap();
        assert!(
            eventually(Duration::from_secs(3), || async {
                strings(&raw, ["KEYS", &format!("*{name}*")])
                    .await
                    .is_empty()
            })
            .await,
            "{way}: keys left: {:?}",
            strings(&raw, ["KEYS", &format!("*{name}*")]).await
        );
    }
    holder_client.shutdown().await.unwrap();
    waiter_client.shutdown().await.unwrap();
}

async fn queued_now(raw: &fred::prelude::Client, queue: &str, member: &str) -> bool {
    strings(raw, ["LRANGE", queue, "0", "-1"])
        .await
        .iter()
        .any(|m| m == member)
}

async fn has_deadline(raw: &fred::prelude::Client, deadlines: &str, member: &str) -> bool {
    strings(raw, ["ZRANGE", deadlines, "0", "-1"])
        .await
        .iter()
        .any(|m| m == member)
}

/// redisson#5762 (fixed upstream in 3.28.0, issue #5761: RLock, RFencedLock and
/// RReadWriteLock missed unlock messages and waited out their whole wait). A waiter on
/// client B is asleep on the lock's channel; its subscription's connection is killed
/// (`CLIENT KILL TYPE pubsub`) at a random moment around the holder's unlock on client A,
/// so the release message can be published while nobody listens. The waiter must get the
/// lock within seconds, not at the end of its 20 s wait (the holder's lease is 30 s: no
/// TTL would wake it either).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_missed_while_the_subscription_was_down_does_not_cost_the_wait() {
    let server = RedisServer::start();
    let a = server.client().await;
    let b = server.client().await;
    let raw = server.raw().await;
    let mut rng = rng("missed release");
    const WAIT: Duration = Duration::from_secs(20);
    for round in 0..6 {
        let name = key(&format!("5762-missed-{round}"));
        // Half the rounds kill while the waiter is between its attempt and its wait
        // (within 15 ms of its start, subscribed or not yet), half once it is asleep on
        // the channel; the unlock follows 0-60 ms after the kill, while the subscriber
        // reconnects (fred waits about 100 ms before reconnecting).
        let early = round % 2 == 0;
        let kill_at = Duration::from_micros(rng.gen_range(0..15_000));
        let unlock_after = Duration::from_millis(rng.gen_range(0..60));
        let (label, channel, holder, waiter) = match round % 3 {
            0 => (
                "lock",
                channel(&name),
                holding(a.get_lock(&name)).await,
                waiting_for(b.get_lock(&name), WAIT),
            ),
            1 => (
                "fenced lock",
                channel(&name),
                holding(a.get_fenced_lock(&name)).await,
                waiting_for(b.get_fenced_lock(&name), WAIT),
            ),
            _ => (
                "write lock after a read lock",
                format!("redisson_rwlock:{{{name}}}"),
                holding(a.get_read_write_lock(&name).read_lock()).await,
                waiting_for(b.get_read_write_lock(&name).write_lock(), WAIT),
            ),
        };
        let unlock = holder;
        let waiting = tokio::spawn(waiter);
        if early {
            tokio::time::sleep(kill_at).await;
        } else {
            assert!(
                eventually(Duration::from_secs(5), || async {
                    numsub(&raw, &channel).await == 1
                })
                .await,
                "{label}: the waiter never subscribed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        kill_clients(&raw, "pubsub").await;
        tokio::time::sleep(unlock_after).await;
        let started = Instant::now();
        unlock.await;
        let taken = tokio::time::timeout(WAIT + Duration::from_secs(5), waiting)
            .await
            .expect("the waiter hung")
            .unwrap();
        let waited = started.elapsed();
        let when = if early {
            format!("{kill_at:?} after the waiter started")
        } else {
            "while the waiter slept".to_string()
        };
        println!(
            "{label}: subscription killed {when}, unlock {unlock_after:?} later; \
             the waiter got the lock {waited:?} after the unlock"
        );
        assert!(taken, "{label}: the waiter never got the lock");
        assert!(
            waited < Duration::from_secs(5),
            "{label}: the waiter waited {waited:?} after a missed release message"
        );
    }
    // Let the last kill's reconnection finish before shutting down.
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

type Boxed<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Takes `lock`; returns the future of its unlock (as the same owner, whichever task
/// runs it).
async fn holding<K: redisson_lock::LockKind>(lock: redisson_lock::Lock<K>) -> Boxed<()> {
    let lock = lock.with_owner(LockOwner::from_raw(1));
    lock.lock().await.unwrap();
    Box::pin(async move { lock.unlock().await.unwrap() })
}

/// A waiter's `try_lock_for(wait)`: whether it got the lock (given back at once).
fn waiting_for<K: redisson_lock::LockKind>(
    lock: redisson_lock::Lock<K>,
    wait: Duration,
) -> Boxed<bool> {
    Box::pin(async move {
        let taken = lock.try_lock_for(wait).await.unwrap();
        if taken {
            lock.unlock().await.unwrap();
        }
        taken
    })
}

/// Redisson 3.46.0's fix (#6516, issue #6144: the watchdog did not renew a lock re-entered
/// and released, then taken again). A lock held twice and unlocked once stays renewed
/// past its lease; taken twice, released twice and taken again by the same owner, the
/// new hold is renewed too (the old entry's count did not swallow it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_a_re_entered_lock() {
    let server = RedisServer::start();
    let client = client(&server).await;
    let raw = server.raw().await;
    let name = key("3-46-reentry");
    let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(1));

    async fn kept_alive(raw: &fred::prelude::Client, name: &str, what: &str) {
        let start = Instant::now();
        let mut lowest = i64::MAX;
        while start.elapsed() < TIMEOUT * 3 {
            let ttl = pttl(raw, name).await;
            assert!(
                ttl > 0,
                "{what}: not renewed, the lock expired {:?} into three leases (PTTL {ttl})",
                start.elapsed()
            );
            lowest = lowest.min(ttl);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!("{what}: lowest PTTL over three leases {lowest} ms");
    }

    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    kept_alive(&raw, &name, "re-entered, unlocked once").await;
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);

    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    lock.lock().await.unwrap();
    kept_alive(&raw, &name, "taken again after a full reentrant release").await;
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    lock.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}
