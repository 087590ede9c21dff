//! The fair lock (`FairLock` = `Lock<Fair>`, and the non-reentrant fair lock) against real
//! redis-server processes: the raw state after each step (protocol §10), Redisson's
//! `RedissonFairLockTest` scenarios, FIFO order across clients, mutual exclusion, cancel
//! safety, non-reentrancy, bad input, the watchdog, and Redisson's quirks. Real Redisson
//! in the same queue (FIFO across languages, the raw state either side writes):
//! `tests/java/locks.rs`.
//!
//! Two tests need a queue entry that no live client keeps still: a waiter whose process
//! died (`an_abandoned_waiter_is_purged_after_its_slot`) and a waiter queued but not yet
//! back for its next attempt (`try_lock_never_enqueues`). A Redisson waiter cannot be
//! frozen there (a killed JVM cannot be timed inside a 500 ms slot, and a live one retries
//! at once), so they write it with one acquire script of Redisson's, as protocol §10
//! describes it, from a raw connection (`Ghost`), and must run without Java.

use crate::support;
use support::*;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use redisson_lock::fred::prelude::{Client as RawClient, *};
use redisson_lock::{Client, Error, FairLock, LockOwner};

// ---- names and raw reads ------------------------------------------------------------------

fn queue_key(name: &str) -> String {
    format!("redisson_lock_queue:{{{name}}}")
}

fn zset_key(name: &str) -> String {
    format!("redisson_lock_timeout:{{{name}}}")
}

/// A waiter's own channel: `redisson_lock__channel:{N}:<client-id>:<owner>`.
fn waiter_channel(name: &str, field: &str) -> String {
    format!("{}:{field}", channel(name))
}

fn field(client: &Client, owner: u64) -> String {
    format!("{}:{owner}", client.id())
}

/// A fair lock of `client` acting as owner `owner`.
fn fair(client: &Client, name: &str, owner: u64) -> FairLock {
    client
        .get_fair_lock(name)
        .with_owner(LockOwner::from_raw(owner))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// The wait queue, head first.
async fn queue(raw: &RawClient, name: &str) -> Vec<String> {
    strings(
        raw,
        vec!["LRANGE".into(), queue_key(name), "0".into(), "-1".into()],
    )
    .await
}

/// The waiters' deadlines (member, epoch-ms score), lowest first.
async fn deadlines(raw: &RawClient, name: &str) -> Vec<(String, i64)> {
    let flat = strings(
        raw,
        vec![
            "ZRANGE".into(),
            zset_key(name),
            "0".into(),
            "-1".into(),
            "WITHSCORES".into(),
        ],
    )
    .await;
    flat.chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].parse::<f64>().unwrap() as i64))
        .collect()
}

async fn deadline_of(raw: &RawClient, name: &str, member: &str) -> i64 {
    deadlines(raw, name)
        .await
        .into_iter()
        .find(|(m, _)| m == member)
        .unwrap_or_else(|| panic!("{member} has no deadline"))
        .1
}

/// Waits until `member` is in the raw queue (so the next waiter queues behind it).
async fn until_queued(raw: &RawClient, name: &str, member: &str) {
    let queued = eventually(Duration::from_secs(5), || async {
        queue(raw, name).await.iter().any(|m| m == member)
    })
    .await;
    assert!(
        queued,
        "{member} never appeared in {:?}",
        queue(raw, name).await
    );
}

/// Owner `owner` of `client` waiting in `lock()` on a task of its own, returned once it
/// stands in the queue of `name`.
async fn queued_waiter(
    raw: &RawClient,
    client: &Client,
    name: &str,
    owner: u64,
) -> tokio::task::JoinHandle<Result<(), Error>> {
    let lock = fair(client, name, owner);
    let waiter = tokio::spawn(async move { lock.lock().await });
    until_queued(raw, name, &field(client, owner)).await;
    waiter
}

/// Waits until `member` is queued, subscribed to its channel, and past the retry that
/// follows its subscription (so it sleeps until a message or its ttl).
async fn until_waiting(raw: &RawClient, name: &str, member: &str) {
    until_queued(raw, name, member).await;
    let channel = waiter_channel(name, member);
    let subscribed = eventually(Duration::from_secs(5), || async {
        numsub(raw, &channel).await == 1
    })
    .await;
    assert!(subscribed, "{member} never subscribed");
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Neither the lock hash nor the queue nor the deadlines exist.
async fn assert_nothing_left(raw: &RawClient, name: &str) {
    for k in [name.to_string(), queue_key(name), zset_key(name)] {
        assert!(!exists(raw, &k).await, "{k} was left behind");
    }
}

/// `|actual - expected| <= slack`, with a readable message.
fn assert_near(what: &str, actual: i64, expected: i64, slack: i64) {
    assert!(
        (actual - expected).abs() <= slack,
        "{what}: {actual} is not within {slack} of {expected} (off by {})",
        actual - expected
    );
}

/// A raw subscriber on several channels at once; `PING` proves the subscriptions are live.
async fn listen_all(
    server: &RedisServer,
    channels: &[String],
) -> (
    RawClient,
    tokio::sync::broadcast::Receiver<fred::types::Message>,
) {
    let subscriber = server.raw().await;
    let rx = subscriber.message_rx();
    subscriber.subscribe(channels.to_vec()).await.unwrap();
    let _: Value = subscriber.ping(None).await.unwrap();
    (subscriber, rx)
}

async fn client_with_wait(server: &RedisServer, wait: Duration) -> Client {
    server
        .client_with(server.config().fair_lock_wait_timeout(wait))
        .await
}

/// The set-up of [`Bed`] with [`client_with_wait`]'s client.
async fn bed_with_wait(what: &str, wait: Duration) -> Bed {
    Bed::with_config(what, |c| c.fair_lock_wait_timeout(wait)).await
}

// ---- a queue entry no live client keeps still: Redisson's §10 scripts, raw ---------------

/// The stale-waiter purge every fair script starts with (§10.2), nil-safe as in HEAD.
const JAVA_PURGE: &str = r#"
local now = tonumber(ARGV[4])
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then break end
  local dl = redis.call('zscore', KEYS[3], head)
  if dl ~= false and tonumber(dl) <= now then
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
"#;

/// §10.2 blocking acquire. KEYS [N, queue, zset]; ARGV [lease, LN, wait, now].
const JAVA_ACQUIRE: &str = r#"
local wait = tonumber(ARGV[3])
if redis.call('exists', KEYS[1]) == 0 and (redis.call('exists', KEYS[2]) == 0
    or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  for _, m in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -wait, m)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local ttl
local last = redis.call('lindex', KEYS[2], -1)
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
"#;

/// §10.3 unlock (the latch left out). KEYS [N, queue, zset, channel prefix];
/// ARGV ["0", lease, LN, now].
const JAVA_UNLOCK: &str = r#"
if redis.call('exists', KEYS[1]) == 0 then
  local nxt = redis.call('lindex', KEYS[2], 0)
  if nxt ~= false then redis.call('publish', KEYS[4] .. ':' .. nxt, ARGV[1]) end
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
local nxt = redis.call('lindex', KEYS[2], 0)
if nxt ~= false then redis.call('publish', KEYS[4] .. ':' .. nxt, ARGV[1]) end
return 1
"#;

/// The id of the client whose waiter the `Ghost` stands for (never this crate's).
const GHOST_CLIENT: &str = "6e3d30b7-83b1-433a-9335-5e8b9916d3ac";

/// One Redisson thread on a fair lock that makes single acquire calls (never waits): the
/// queue entry of a waiter that died, or is not back yet.
struct Ghost {
    raw: RawClient,
    name: String,
    thread: u64,
    wait_ms: i64,
}

impl Ghost {
    fn field(&self) -> String {
        format!("{GHOST_CLIENT}:{}", self.thread)
    }

    /// One acquire call: `None` when taken, else the ttl it answered.
    async fn try_acquire(&self) -> Option<i64> {
        let keys = vec![
            self.name.clone(),
            queue_key(&self.name),
            zset_key(&self.name),
        ];
        let args = vec![
            Value::from(30_000),
            Value::from(self.field()),
            Value::from(self.wait_ms),
            Value::from(now_ms()),
        ];
        let reply: Value = self
            .raw
            .eval(format!("{JAVA_PURGE}{JAVA_ACQUIRE}"), keys, args)
            .await
            .unwrap();
        reply.as_i64()
    }

    async fn unlock(&self) -> Value {
        let keys = vec![
            self.name.clone(),
            queue_key(&self.name),
            zset_key(&self.name),
            channel(&self.name),
        ];
        let args = vec![
            Value::from("0"),
            Value::from(30_000),
            Value::from(self.field()),
            Value::from(now_ms()),
        ];
        self.raw
            .eval(format!("{JAVA_PURGE}{JAVA_UNLOCK}"), keys, args)
            .await
            .unwrap()
    }
}

async fn ghost(server: &RedisServer, name: &str, thread: u64, wait_ms: i64) -> Ghost {
    Ghost {
        raw: server.raw().await,
        name: name.to_string(),
        thread,
        wait_ms,
    }
}

// ---- waiters that log the order they got the lock in ---------------------------------------

/// (label, when acquired, when released), in acquisition order.
type Log = Arc<Mutex<Vec<(usize, Instant, Instant)>>>;

/// Takes `lock` with `lock()`, logs it, holds it `hold`, unlocks.
fn spawn_rust_waiter(
    lock: FairLock,
    label: usize,
    hold: Duration,
    log: Log,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        lock.lock().await.unwrap();
        let taken = Instant::now();
        tokio::time::sleep(hold).await;
        let released = Instant::now();
        log.lock().unwrap().push((label, taken, released));
        lock.unlock().await.unwrap();
    })
}

fn order(log: &Log) -> Vec<usize> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(label, _, _)| *label)
        .collect()
}

/// Time from one waiter's release to the next one's acquisition.
fn hand_offs(log: &Log) -> Vec<Duration> {
    let log = log.lock().unwrap();
    log.windows(2)
        .map(|pair| pair[1].1.saturating_duration_since(pair[0].2))
        .collect()
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() - 1) * p / 100]
}

// ---- 1. raw state against protocol §10 ------------------------------------------------------

/// Every step of a holder, two unbounded waiters and one with a budget, compared with
/// §10: keys, fields, TTLs, queue order, deadlines (ttl + wait + now, shifted by -wait when
/// the head acquires or a waiter leaves), and where each `0` is published. With hand-offs
/// turned off, every step is Redisson's, messages included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_state_follows_the_protocol() {
    raw_state_steps(false).await;
}

/// The same steps with the hand-off within the queue (protocol §16): every key, field,
/// TTL, queue and deadline is as Redisson's at every step, but an unlock whose queue head
/// is a waiter of the same client hands it the lock and publishes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_state_with_hand_offs_is_the_protocols_without_the_messages() {
    raw_state_steps(true).await;
}

async fn raw_state_steps(hand_offs: bool) {
    const WAIT: i64 = 10_000; // fair_lock_wait_timeout: the slot of an unbounded waiter
    const BUDGET: i64 = 1_500; // C's try_lock_for budget: the slot C reserves
    let Bed(server, client, raw, name) = Bed::with_config("fair-raw", |c| {
        let c = c.fair_lock_wait_timeout(Duration::from_millis(WAIT as u64));
        if hand_offs { c } else { c.local_handoffs(0) }
    })
    .await;
    let (a, b, c, d) = (
        fair(&client, &name, 1),
        fair(&client, &name, 2),
        fair(&client, &name, 3),
        fair(&client, &name, 4),
    );
    let [fa, fb, fc, fd] = [1, 2, 3, 4].map(|o| field(&client, o));
    let plain = channel(&name);
    let waiter_channels: Vec<String> = [&fb, &fc, &fd]
        .iter()
        .map(|f| waiter_channel(&name, f))
        .collect();
    let mut all = waiter_channels.clone();
    all.push(plain.clone());
    let (_subscriber, mut rx) = listen_all(&server, &all).await;

    // A takes the free lock: only the hash, with A's field and the lease; no queue.
    a.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    assert_eq!(hgetall(&raw, &name).await, vec![(fa.clone(), "1".into())]);
    assert_near("A's PTTL", pttl(&raw, &name).await, 30_000, 2_000);
    assert!(!exists(&raw, &queue_key(&name)).await);
    assert!(!exists(&raw, &zset_key(&name)).await);

    // B queues behind A: deadline = A's ttl + WAIT + now = A's expiry + WAIT.
    let wb = tokio::spawn({
        let b = b.clone();
        async move { b.lock().await }
    });
    until_queued(&raw, &name, &fb).await;
    let a_expiry = now_ms() + pttl(&raw, &name).await;
    let dl_b = deadline_of(&raw, &name, &fb).await;
    assert_near("B's deadline", dl_b, a_expiry + WAIT, 300);

    // C queues with a budget: it reserves its budget, behind B's deadline.
    let wc = tokio::spawn({
        let c = c.clone();
        async move { c.try_lock_for(Duration::from_millis(BUDGET as u64)).await }
    });
    until_queued(&raw, &name, &fc).await;
    // D queues without a bound: WAIT behind C.
    let wd = tokio::spawn({
        let d = d.clone();
        async move { d.lock().await }
    });
    until_queued(&raw, &name, &fd).await;
    assert_eq!(
        queue(&raw, &name).await,
        vec![fb.clone(), fc.clone(), fd.clone()]
    );
    assert_eq!(
        deadlines(&raw, &name).await,
        vec![
            (fb.clone(), dl_b),
            (fc.clone(), dl_b + BUDGET),
            (fd.clone(), dl_b + BUDGET + WAIT),
        ]
    );
    // The queue and the zset never expire; the hash keeps its lease.
    assert_eq!(pttl(&raw, &queue_key(&name)).await, -1);
    assert_eq!(pttl(&raw, &zset_key(&name)).await, -1);
    assert_eq!(hgetall(&raw, &name).await, vec![(fa.clone(), "1".into())]);

    // C's budget runs out: it leaves (acquireFailed) and D moves up by C's budget.
    assert!(!wc.await.unwrap().unwrap(), "C had to time out");
    assert_eq!(queue(&raw, &name).await, vec![fb.clone(), fd.clone()]);
    assert_eq!(
        deadlines(&raw, &name).await,
        vec![(fb.clone(), dl_b), (fd.clone(), dl_b + WAIT)]
    );
    assert!(
        drain(&mut rx, Duration::from_millis(200)).await.is_empty(),
        "leaving the queue behind the head publishes nothing"
    );

    // A unlocks: `0` on B's channel only (handed: nothing); B takes it and D moves up by
    // B's slot.
    a.unlock().await.unwrap();
    if hand_offs {
        assert_eq!(hgetall(&raw, &name).await, vec![(fb.clone(), "1".into())]);
        assert!(drain(&mut rx, Duration::from_millis(200)).await.is_empty());
    } else {
        assert_eq!(
            messages(&mut rx, Duration::from_secs(2)).await,
            vec![(waiter_channels[0].clone(), b"0".to_vec())]
        );
    }
    wb.await.unwrap().unwrap();
    assert_eq!(hgetall(&raw, &name).await, vec![(fb.clone(), "1".into())]);
    assert_near("B's watchdog PTTL", pttl(&raw, &name).await, 30_000, 2_000);
    assert_eq!(queue(&raw, &name).await, vec![fd.clone()]);
    assert_eq!(deadlines(&raw, &name).await, vec![(fd.clone(), dl_b)]);

    // B unlocks: `0` on D's channel only (handed: nothing); D takes it; the queue and
    // zset disappear.
    b.unlock().await.unwrap();
    if hand_offs {
        assert_eq!(hgetall(&raw, &name).await, vec![(fd.clone(), "1".into())]);
        assert!(drain(&mut rx, Duration::from_millis(200)).await.is_empty());
    } else {
        assert_eq!(
            messages(&mut rx, Duration::from_secs(2)).await,
            vec![(waiter_channels[2].clone(), b"0".to_vec())]
        );
    }
    wd.await.unwrap().unwrap();
    assert_eq!(hgetall(&raw, &name).await, vec![(fd.clone(), "1".into())]);
    assert!(!exists(&raw, &queue_key(&name)).await);
    assert!(!exists(&raw, &zset_key(&name)).await);

    // D unlocks with nobody queued: nothing is published, nothing is left.
    d.unlock().await.unwrap();
    assert!(drain(&mut rx, Duration::from_millis(300)).await.is_empty());
    assert_nothing_left(&raw, &name).await;
    let leftovers = strings(&raw, vec!["KEYS".into(), format!("*{name}*")]).await;
    let latch = |k: &String| k.starts_with("redisson_unlock_latch:");
    assert!(
        eventually(Duration::from_secs(2), || async {
            strings(&raw, vec!["KEYS".into(), format!("*{name}*")])
                .await
                .iter()
                .all(latch)
        })
        .await,
        "keys left: {leftovers:?}"
    );
    client.shutdown().await.unwrap();
}

// ---- 2. ports of RedissonFairLockTest -------------------------------------------------------

/// testFairness: waiters acquire in the order they queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_acquire_in_queue_order() {
    let Bed(_server, client, raw, name) = Bed::new("fair-order").await;
    let holder = fair(&client, &name, 100);
    holder.lock().await.unwrap();
    let log = Log::default();
    let mut tasks = Vec::new();
    for i in 0..5 {
        let lock = fair(&client, &name, i as u64);
        tasks.push(spawn_rust_waiter(lock, i, Duration::ZERO, log.clone()));
        until_queued(&raw, &name, &field(&client, i as u64)).await;
    }
    holder.unlock().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(order(&log), vec![0, 1, 2, 3, 4]);
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

/// testAbandonedTimeoutDrift / testFirstThreadDeathTimeoutDrift: a waiter whose process
/// is gone (a raw enqueue that never comes back) keeps its reserved slot, then is purged;
/// the waiter behind it gets the lock right after that slot, not later, and does not
/// hammer Redis while it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_waiter_is_purged_after_its_slot() {
    const WAIT: i64 = 500;
    let Bed(server, client, raw, name) =
        bed_with_wait("fair-abandoned", Duration::from_millis(WAIT as u64)).await;
    let holder = fair(&client, &name, 1);
    holder
        .lock_with_lease(Duration::from_millis(1_000))
        .await
        .unwrap();

    // The ghost: one Redisson acquire from a Java thread that then dies (see the module's
    // doc for why it is written raw).
    let ghost = ghost(&server, &name, 66, WAIT).await;
    assert!(ghost.try_acquire().await.is_some());
    until_queued(&raw, &name, &ghost.field()).await;
    let ghost_deadline = deadline_of(&raw, &name, &ghost.field()).await;

    let waiter = fair(&client, &name, 2);
    let w = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.lock().await }
    });
    until_queued(&raw, &name, &field(&client, 2)).await;
    holder.unlock().await.unwrap();
    reset_stats(&raw).await;

    w.await.unwrap().unwrap();
    let acquired_at = now_ms();
    let scripts = script_calls(&raw).await;
    println!(
        "abandoned head: acquired {} ms after its deadline, {scripts} scripts while waiting",
        acquired_at - ghost_deadline
    );
    assert!(
        acquired_at >= ghost_deadline - 20,
        "took the lock {} ms before the abandoned waiter's slot ended",
        ghost_deadline - acquired_at
    );
    assert!(
        acquired_at - ghost_deadline <= 500,
        "waited {} ms past the abandoned waiter's slot",
        acquired_at - ghost_deadline
    );
    assert!(
        scripts <= 60,
        "{scripts} script calls while waiting ~1.3 s for a dead head: it polls hot"
    );
    assert!(queue(&raw, &name).await.is_empty(), "the ghost was purged");
    waiter.unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

/// The same with a Rust waiter whose client is shut down while it waits: the next waiter
/// is not held up past the slot the gone waiter reserved (the holder's TTL at the time it
/// queued, plus `fair_lock_wait_timeout`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_of_a_shut_down_client_does_not_block_the_queue() {
    let wait = Duration::from_millis(500);
    let Bed(server, client, raw, name) = bed_with_wait("fair-shutdown", wait).await;
    let doomed = client_with_wait(&server, wait).await;
    let holder = fair(&client, &name, 1);
    holder
        .lock_with_lease(Duration::from_millis(1_000))
        .await
        .unwrap();

    let gone = queued_waiter(&raw, &doomed, &name, 9).await;
    let slot_end = deadline_of(&raw, &name, &field(&doomed, 9)).await;
    let next = queued_waiter(&raw, &client, &name, 2).await;

    doomed.shutdown().await.unwrap();
    assert!(matches!(gone.await.unwrap(), Err(Error::Shutdown)));
    holder.unlock().await.unwrap();
    next.await.unwrap().unwrap();
    let late = now_ms() - slot_end;
    println!("next waiter after a shut-down one: {late} ms after the gone waiter's slot end");
    assert!(late <= 500, "waited {late} ms past the gone waiter's slot");
    fair(&client, &name, 2).unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

/// testTimeoutDrift (acquireFailed): a `try_lock_for` that times out leaves the queue at
/// once, so the waiter behind it gets the lock as soon as the holder lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_try_lock_leaves_the_queue() {
    // default 5 min slot for unbounded waiters
    let Bed(_server, client, raw, name) = Bed::new("fair-timeout").await;
    let holder = fair(&client, &name, 1);
    holder
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();

    let quitter = tokio::spawn({
        let lock = fair(&client, &name, 2);
        async move { lock.try_lock_for(Duration::from_millis(300)).await }
    });
    until_queued(&raw, &name, &field(&client, 2)).await;
    let patient = queued_waiter(&raw, &client, &name, 3).await;
    let before = deadline_of(&raw, &name, &field(&client, 3)).await;

    assert!(!quitter.await.unwrap().unwrap());
    assert_eq!(queue(&raw, &name).await, vec![field(&client, 3)]);
    assert_eq!(
        deadline_of(&raw, &name, &field(&client, 3)).await,
        before - 300,
        "the patient waiter moved up by the quitter's budget"
    );
    let released = Instant::now();
    holder.unlock().await.unwrap();
    patient.await.unwrap().unwrap();
    println!(
        "hand-off behind a timed-out waiter: {} ms",
        ms(released.elapsed())
    );
    assert!(released.elapsed() < Duration::from_secs(1));
    fair(&client, &name, 3).unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

/// testTryLockNonDelayed: `try_lock()` (and a zero wait) is one attempt that never queues,
/// neither when the lock is held nor when it is free but others are queued.
#[tokio::test]
async fn try_lock_never_enqueues() {
    let Bed(server, client, raw, name) = Bed::new("fair-try").await;
    let holder = fair(&client, &name, 1);
    holder.lock().await.unwrap();
    let other = fair(&client, &name, 2);
    assert!(!other.try_lock().await.unwrap());
    assert!(!other.try_lock_for(Duration::ZERO).await.unwrap());
    assert!(!exists(&raw, &queue_key(&name)).await);
    assert!(!exists(&raw, &zset_key(&name)).await);
    holder.unlock().await.unwrap();

    // Free, but a waiter (of a Java client, not back yet for its next attempt: see the
    // module's doc) is queued: a non-blocking try must not jump the queue.
    let queued = ghost(&server, &name, 7, 60_000).await;
    fair(&client, &name, 1).lock().await.unwrap();
    assert!(queued.try_acquire().await.is_some());
    fair(&client, &name, 1).force_unlock().await.unwrap();
    let snapshot = (queue(&raw, &name).await, deadlines(&raw, &name).await);
    assert!(!other.try_lock().await.unwrap());
    assert_eq!(
        (queue(&raw, &name).await, deadlines(&raw, &name).await),
        snapshot
    );
    assert!(!exists(&raw, &name).await);
    // The queued waiter is not passed over.
    assert_eq!(queued.try_acquire().await, None);
    assert_eq!(queued.unlock().await.as_i64(), Some(1));
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

/// testWaitTimeoutDrift: a waiter with a wait budget reserves exactly its budget behind
/// the waiter before it; an unbounded one reserves `fair_lock_wait_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_with_a_budget_reserves_its_budget() {
    let Bed(_server, client, raw, name) =
        bed_with_wait("fair-budget", Duration::from_secs(7)).await;
    let holder = fair(&client, &name, 1);
    holder
        .lock_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    let budgets = [Some(4_000u64), None, Some(2_500), Some(3_000)];
    let mut tasks = Vec::new();
    for (i, budget) in budgets.iter().enumerate() {
        let lock = fair(&client, &name, 10 + i as u64);
        let budget = *budget;
        tasks.push(tokio::spawn(async move {
            let taken = match budget {
                Some(b) => lock.try_lock_for(Duration::from_millis(b)).await?,
                None => lock.lock().await.map(|()| true)?,
            };
            if taken {
                lock.unlock().await?;
            }
            Ok::<_, Error>(())
        }));
        until_queued(&raw, &name, &field(&client, 10 + i as u64)).await;
    }
    let scores: Vec<i64> = deadlines(&raw, &name).await.iter().map(|d| d.1).collect();
    let gaps: Vec<i64> = scores.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        gaps,
        vec![7_000, 2_500, 3_000],
        "each reserves its own budget"
    );
    holder.force_unlock().await.unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

// ---- 3. FIFO ---------------------------------------------------------------------------------

/// 10 waiters on 2 clients, queued one at a time in a known order, take the lock in that
/// order, 20 rounds over: zero out-of-order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_across_two_clients_for_twenty_rounds() {
    const WAITERS: usize = 10;
    const ROUNDS: usize = 20;
    let Duo(_server, clients, raw, name) = Duo::new("fair-fifo").await;
    let mut out_of_order = 0;
    let mut all_hand_offs = Vec::new();
    let started = Instant::now();
    for round in 0..ROUNDS {
        let holder = fair(&clients[0], &name, 1_000_000);
        holder.lock().await.unwrap();
        let log = Log::default();
        let mut tasks = Vec::new();
        for i in 0..WAITERS {
            let client = &clients[i % 2];
            let owner = (round * 100 + i) as u64;
            let lock = fair(client, &name, owner);
            tasks.push(spawn_rust_waiter(lock, i, Duration::ZERO, log.clone()));
            until_queued(&raw, &name, &field(client, owner)).await;
        }
        holder.unlock().await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        let got = order(&log);
        if got != (0..WAITERS).collect::<Vec<_>>() {
            out_of_order += 1;
            println!("round {round}: order {got:?}");
        }
        all_hand_offs.extend(hand_offs(&log));
    }
    all_hand_offs.sort();
    println!(
        "FIFO: {ROUNDS} rounds x {WAITERS} waiters in {} ms; hand-off p50 {:?}, p90 {:?}, max {:?}",
        ms(started.elapsed()),
        percentile(&all_hand_offs, 50),
        percentile(&all_hand_offs, 90),
        all_hand_offs.last().unwrap()
    );
    assert_eq!(out_of_order, 0);
    assert_nothing_left(&raw, &name).await;
    for c in clients {
        c.shutdown().await.unwrap();
    }
}

/// A waiter dropped while an unlock that hands it the lock is in flight (the server is
/// paused with `DEBUG SLEEP`, so the drop lands inside the round trip): the hold handed
/// to it is given back at once, and the next waiter gets the lock without waiting for
/// the dropped waiter's lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_handed_to_a_dropped_waiter_is_given_back() {
    let server = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let client = server.client_with(server.config()).await;
    let raw = server.raw().await;
    let name = key("fair-handoff-dropped");
    // Loaded beforehand: a NOSCRIPT reply would re-send the unlock after the waiter left.
    let _: String = raw
        .script_load(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/fair_handoff.lua"
        )))
        .await
        .unwrap();
    let (holder, dropped) = (fair(&client, &name, 1), fair(&client, &name, 2));
    holder.lock().await.unwrap();
    let waiting = tokio::spawn({
        let dropped = dropped.clone();
        async move { dropped.lock().await }
    });
    until_waiting(&raw, &name, &field(&client, 2)).await;
    // A waiter of another client behind it, which must get the lock next.
    let other = server.client().await;
    let next = fair(&other, &name, 50);
    let next_waiting = tokio::spawn({
        let next = next.clone();
        async move {
            next.lock().await.unwrap();
            Instant::now()
        }
    });
    until_waiting(&raw, &name, &field(&other, 50)).await;

    let sleeper = server.raw().await;
    let pause = tokio::spawn(async move {
        let _: Value = sleeper
            .custom(redisson_lock::fred::cmd!("DEBUG"), vec!["SLEEP", "0.3"])
            .await
            .unwrap();
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let unlock = tokio::spawn({
        let holder = holder.clone();
        async move { holder.unlock().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    waiting.abort();
    let _ = waiting.await;
    pause.await.unwrap();
    unlock.await.unwrap().unwrap();
    let started = Instant::now();
    let taken_at = tokio::time::timeout(Duration::from_secs(5), next_waiting)
        .await
        .expect("the other client's waiter got the lock within 5 s (the dropped waiter's lease is 30 s)")
        .unwrap();
    let waited = taken_at.saturating_duration_since(started);
    println!("the other client's waiter got the lock {waited:?} after the unlock returned");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field(&other, 50), "1".into())],
        "held by the other client's waiter only"
    );
    next.unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

// ---- 4. mutual exclusion ---------------------------------------------------------------------

/// 2 clients x 8 tasks x ROUNDS on a counter updated as read, sleep, write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_on_a_non_atomic_counter() {
    const TASKS: usize = 8;
    const ROUNDS: u64 = 6;
    let Duo(_server, clients, raw, name) = Duo::new("fair-mutex").await;
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in &clients {
        for _ in 0..TASKS {
            let lock = client.get_fair_lock(&name);
            let (counter, inside) = (counter.clone(), inside.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    lock.lock().await.unwrap();
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    let seen = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    counter.store(seen + 1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    lock.unlock().await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total = 2 * TASKS as u64 * ROUNDS;
    println!(
        "mutual exclusion: {total} holds in {} ms",
        ms(started.elapsed())
    );
    assert_eq!(counter.load(Ordering::SeqCst), total);
    assert_nothing_left(&raw, &name).await;
    for c in clients {
        c.shutdown().await.unwrap();
    }
}

/// Under steady contention a waiter finds its channel still subscribed from its previous
/// wait (channels linger half a second): it takes the channel before its first attempt,
/// and channels are not subscribed and unsubscribed per acquisition. The head of the
/// queue is always a waiter of this client, so each unlock hands it the lock (§16): an
/// acquisition costs two scripts with its unlock (queue, the unlock that hands over;
/// without the hand-off, three: the attempt after the head's message; Redisson needs a
/// fourth, the retry after subscribing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contended_acquisition_costs_two_scripts_and_keeps_its_channel() {
    const TASKS: usize = 8;
    let Bed(_server, client, raw, name) = Bed::new("fair-scripts").await;
    let counter = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Warm-up: every task subscribes its channel once.
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let lock = client.get_fair_lock(&name);
        tasks.push(spawn_counting(lock, counter.clone(), stop.clone()));
    }
    let warm = eventually(Duration::from_secs(10), || async {
        client.subscribed_channels() >= TASKS
    })
    .await;
    assert!(
        warm,
        "{} of {TASKS} channels subscribed",
        client.subscribed_channels()
    );
    reset_stats(&raw).await;
    let before = counter.load(Ordering::SeqCst);
    // A window of 500 acquisitions (under a second on 2 shared cores), not a fixed time:
    // enough that the acquisitions in flight at its two ends weigh little.
    eventually(Duration::from_secs(30), || async {
        counter.load(Ordering::SeqCst) - before >= 500
    })
    .await;
    let scripts = script_calls(&raw).await;
    let subscribes = command_calls(&raw, "subscribe").await;
    let acquired = counter.load(Ordering::SeqCst) - before;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    let per = scripts as f64 / acquired as f64;
    println!("{acquired} acquisitions: {per:.2} scripts each, {subscribes} SUBSCRIBEs");
    assert_eq!(counter.load(Ordering::SeqCst), total, "no lost update");
    assert!(acquired > 50, "progress: {acquired}");
    // 2 each, and a little for the acquisitions in flight at both ends of the window.
    assert!(per <= 2.1, "{per:.2} scripts per acquisition (Redisson: 4)");
    assert!(
        subscribes * 10 < acquired,
        "{subscribes} SUBSCRIBEs for {acquired} acquisitions: channels are not kept"
    );
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

// ---- 5. cancel safety ------------------------------------------------------------------------

/// How a cancelled round waits: `lock()` or `try_lock_for(random budget)`.
#[derive(Clone, Copy, Debug)]
enum Waiter {
    Lock,
    TryLockFor,
}

async fn cancel_rounds(waiter: Waiter) {
    const TASKS: u64 = 4;
    const ROUNDS_PER_TASK: usize = 50; // 200 rounds in all
    let Bed(_server, client, raw, name) = Bed::new("fair-cancel").await;

    // Another owner holds the lock part of the time: a few ms held, a few ms free.
    let stop = Arc::new(AtomicBool::new(false));
    let contender = tokio::spawn({
        let lock = fair(&client, &name, 999);
        let stop = stop.clone();
        async move {
            while !stop.load(Ordering::Relaxed) {
                lock.lock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(3)).await;
                lock.unlock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(4)).await;
            }
        }
    });

    let acquired = Arc::new(AtomicU64::new(0));
    let cancelled = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let lock = fair(&client, &name, t);
            let (acquired, cancelled) = (acquired.clone(), cancelled.clone());
            tokio::spawn(async move {
                for _ in 0..ROUNDS_PER_TASK {
                    let (limit, budget) = {
                        let mut rng = rand::thread_rng();
                        (
                            Duration::from_millis(rng.gen_range(0..=20)),
                            Duration::from_millis(rng.gen_range(0..=20)),
                        )
                    };
                    let taken = match waiter {
                        Waiter::Lock => tokio::time::timeout(limit, lock.lock())
                            .await
                            .map(|r| r.map(|()| true)),
                        Waiter::TryLockFor => {
                            tokio::time::timeout(limit, lock.try_lock_for(budget)).await
                        }
                    };
                    match taken {
                        Ok(Ok(true)) => {
                            acquired.fetch_add(1, Ordering::Relaxed);
                            lock.unlock().await.unwrap();
                        }
                        Ok(Ok(false)) => {}
                        Ok(Err(e)) => panic!("{e}"),
                        Err(_) => {
                            cancelled.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    contender.await.unwrap();
    let (acquired, cancelled) = (
        acquired.load(Ordering::Relaxed),
        cancelled.load(Ordering::Relaxed),
    );
    println!("{waiter:?}: 200 rounds, {acquired} acquired, {cancelled} cancelled");
    assert!(
        cancelled > 0,
        "no round was cancelled: the test proves nothing"
    );

    let channels: Vec<String> = (0..TASKS)
        .chain([999])
        .map(|o| waiter_channel(&name, &field(&client, o)))
        .collect();
    let clean = eventually(Duration::from_secs(3), || async {
        let mut subscribed = 0;
        for c in &channels {
            subscribed += numsub(&raw, c).await;
        }
        !exists(&raw, &name).await
            && !exists(&raw, &queue_key(&name)).await
            && !exists(&raw, &zset_key(&name)).await
            && subscribed == 0
            && client.subscribed_channels() == 0
            && client.renewed_locks() == 0
    })
    .await;
    assert!(
        clean,
        "left behind: hash {:?}, queue {:?}, deadlines {:?}, local channels {}, renewed {}",
        hgetall(&raw, &name).await,
        queue(&raw, &name).await,
        deadlines(&raw, &name).await,
        client.subscribed_channels(),
        client.renewed_locks()
    );
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_lock_calls_leave_nothing_behind() {
    cancel_rounds(Waiter::Lock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_try_lock_for_calls_leave_nothing_behind() {
    cancel_rounds(Waiter::TryLockFor).await;
}

/// A waiter dropped while queued leaves the queue, so the waiter behind it gets the lock
/// as soon as the holder lets go, not after the dropped waiter's slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_waiter_does_not_delay_the_next() {
    let Bed(_server, client, raw, name) =
        bed_with_wait("fair-dropped", Duration::from_secs(20)).await;
    let holder = fair(&client, &name, 1);
    holder
        .lock_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    let dropped = queued_waiter(&raw, &client, &name, 2).await;
    let next = queued_waiter(&raw, &client, &name, 3).await;
    dropped.abort();
    assert!(dropped.await.unwrap_err().is_cancelled());
    assert!(
        eventually(Duration::from_secs(2), || async {
            queue(&raw, &name).await == vec![field(&client, 3)]
        })
        .await,
        "the dropped waiter left the queue"
    );
    let released = Instant::now();
    holder.unlock().await.unwrap();
    next.await.unwrap().unwrap();
    let hand_off = released.elapsed();
    println!("hand-off past a dropped waiter: {} ms", ms(hand_off));
    assert!(hand_off < Duration::from_secs(1), "{hand_off:?}");
    fair(&client, &name, 3).unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

/// The head waiter is dropped right as the holder lets go (the `0` may already be on its
/// channel): the next waiter is still woken at once, not at the holder's old TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_dropped_at_the_hand_off_does_not_stall_the_next() {
    let Bed(_server, client, raw, _) = bed_with_wait("bed", Duration::from_secs(20)).await;
    let mut slowest = Duration::ZERO;
    for round in 0..10 {
        let name = key("fair-head-dropped");
        let holder = fair(&client, &name, 1);
        holder
            .lock_with_lease(Duration::from_secs(10))
            .await
            .unwrap();
        let head = queued_waiter(&raw, &client, &name, 2).await;
        let next = queued_waiter(&raw, &client, &name, 3).await;
        let released = Instant::now();
        holder.unlock().await.unwrap();
        head.abort();
        if let Ok(taken) = head.await {
            // The head won the race and took the lock before the abort: let it go.
            taken.unwrap();
            fair(&client, &name, 2).unlock().await.unwrap();
        }
        tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the next waiter stalled"))
            .unwrap()
            .unwrap();
        slowest = slowest.max(released.elapsed());
        fair(&client, &name, 3).unlock().await.unwrap();
        assert!(
            eventually(Duration::from_secs(2), || async {
                !exists(&raw, &name).await
                    && !exists(&raw, &queue_key(&name)).await
                    && !exists(&raw, &zset_key(&name)).await
            })
            .await
        );
    }
    println!(
        "head dropped at hand-off: slowest next acquisition {} ms",
        ms(slowest)
    );
    assert!(slowest < Duration::from_secs(1), "{slowest:?}");
    client.shutdown().await.unwrap();
}

/// A `try_lock_for` dropped while it is leaving the queue (its budget ran out) still
/// leaves it. Made deterministic on a current-thread runtime by polling by hand: the
/// leave's `EVALSHA` meets `NOSCRIPT` (scripts flushed), and the future is dropped before
/// it can send the `EVAL`.
#[tokio::test]
async fn a_try_lock_dropped_while_leaving_the_queue_still_leaves() {
    use futures::FutureExt;
    let Bed(_server, client, raw, name) = Bed::new("fair-drop-leaving").await;
    let holder = fair(&client, &name, 1);
    holder.lock().await.unwrap();
    let lock = fair(&client, &name, 2);
    let mut waiter = Box::pin(lock.try_lock_for(Duration::from_millis(50)));
    assert!(waiter.as_mut().now_or_never().is_none()); // acquire sent
    tokio::time::sleep(Duration::from_millis(100)).await; // reply in, budget over
    assert_eq!(queue(&raw, &name).await, vec![field(&client, 2)]);
    raw.script_flush(false).await.unwrap();
    assert!(waiter.as_mut().now_or_never().is_none()); // queue exit sent
    tokio::time::sleep(Duration::from_millis(50)).await; // NOSCRIPT in
    drop(waiter);
    let left = eventually(Duration::from_secs(2), || async {
        queue(&raw, &name).await.is_empty()
    })
    .await;
    assert!(left, "still queued: {:?}", queue(&raw, &name).await);
    holder.unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

// ---- 6. non-reentrant fair lock --------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_reentrant_fair_lock_refuses_the_holder_at_once() {
    let Bed(_server, client, raw, name) = Bed::new("fair-nonreentrant").await;
    let owner = LockOwner::from_raw(5);
    let holder = client.get_non_reentrant_fair_lock(&name).with_owner(owner);
    holder.lock().await.unwrap();

    // Another owner queues, so there is queue state to keep intact.
    let other = client
        .get_non_reentrant_fair_lock(&name)
        .with_owner(LockOwner::from_raw(6));
    let waiting = tokio::spawn({
        let other = other.clone();
        async move { other.lock().await }
    });
    until_queued(&raw, &name, &field(&client, 6)).await;
    let snapshot = (
        hgetall(&raw, &name).await,
        queue(&raw, &name).await,
        deadlines(&raw, &name).await,
    );

    let started = Instant::now();
    let err = holder.lock().await.unwrap_err();
    assert!(matches!(err, Error::NonReentrant { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("Lock '{name}' is non-reentrant and is already held by thread {owner}")
    );
    assert!(!holder.try_lock().await.unwrap());
    assert!(!holder.try_lock_for(Duration::from_secs(5)).await.unwrap());
    assert!(
        !holder
            .try_lock_with_lease(Duration::from_secs(5), Duration::from_secs(5))
            .await
            .unwrap()
    );
    let err = holder
        .lock_with_lease(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NonReentrant { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "answered at once"
    );
    tokio::time::sleep(Duration::from_millis(100)).await; // any background clean-up
    assert_eq!(
        (
            hgetall(&raw, &name).await,
            queue(&raw, &name).await,
            deadlines(&raw, &name).await,
        ),
        snapshot,
        "nothing half-written"
    );
    assert_eq!(holder.hold_count().await.unwrap(), 1);

    // The other owner waits as usual and gets it on unlock.
    assert!(!waiting.is_finished());
    holder.unlock().await.unwrap();
    waiting.await.unwrap().unwrap();
    other.unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

// ---- 7. mixing kinds and bad input -----------------------------------------------------------

/// A fair waiter on a key an RLock holds queues (Redisson does the same): the RLock's
/// unlock is published on the plain channel, which a fair waiter does not hear, so it
/// takes the lock when the TTL it was told runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_lock_on_an_rlock_queues_and_waits() {
    let Bed(_server, client, raw, name) = Bed::new("fair-on-rlock").await;
    let rlock = client.get_lock(&name).with_owner(LockOwner::from_raw(1));
    rlock
        .lock_with_lease(Duration::from_millis(1_000))
        .await
        .unwrap();
    let started = Instant::now();
    let waiter = queued_waiter(&raw, &client, &name, 2).await;
    let channel = waiter_channel(&name, &field(&client, 2));
    assert!(
        eventually(Duration::from_secs(5), || async {
            numsub(&raw, &channel).await == 1
        })
        .await,
        "the fair waiter never subscribed"
    );
    rlock.unlock().await.unwrap();
    waiter.await.unwrap().unwrap();
    let waited = started.elapsed();
    println!("fair waiter behind an RLock: {} ms", ms(waited));
    assert!(waited < Duration::from_millis(2_500), "{waited:?}");
    assert_eq!(
        hgetall(&raw, &name).await,
        vec![(field(&client, 2), "1".into())]
    );
    fair(&client, &name, 2).unlock().await.unwrap();
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_fair_lock_on_a_string_key_is_wrong_type_and_writes_nothing() {
    let Bed(_server, client, raw, name) = Bed::new("fair-string").await;
    let _: () = raw
        .set(&name, "not a lock", None, None, false)
        .await
        .unwrap();
    let lock = fair(&client, &name, 1);
    let wrong = |r: Result<bool, Error>| matches!(r, Err(Error::WrongType { key }) if key == name);
    assert!(wrong(lock.lock().await.map(|()| true)));
    assert!(wrong(lock.try_lock().await));
    assert!(wrong(lock.try_lock_for(Duration::from_millis(200)).await));
    assert!(wrong(
        lock.lock_with_lease(Duration::from_secs(1))
            .await
            .map(|()| true)
    ));
    let nr = client
        .get_non_reentrant_fair_lock(&name)
        .with_owner(LockOwner::from_raw(1));
    assert!(wrong(nr.lock().await.map(|()| true)));
    tokio::time::sleep(Duration::from_millis(100)).await; // any background clean-up
    assert!(!exists(&raw, &queue_key(&name)).await, "queue written");
    assert!(!exists(&raw, &zset_key(&name)).await, "deadlines written");
    let value: String = raw.get(&name).await.unwrap();
    assert_eq!(value, "not a lock");
    assert_eq!(client.subscribed_channels(), 0);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_rejected_before_any_io() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;
    reset_stats(&raw).await;
    let empty = client.get_fair_lock("");
    let invalid = |r: Result<bool, Error>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(invalid(empty.lock().await.map(|()| true)));
    assert!(invalid(empty.try_lock().await));
    assert!(invalid(empty.try_lock_for(Duration::from_secs(1)).await));
    assert!(invalid(empty.unlock().await.map(|()| true)));
    let lock = client.get_fair_lock(key("fair-zero-lease"));
    assert!(invalid(
        lock.lock_with_lease(Duration::ZERO).await.map(|()| true)
    ));
    assert!(invalid(
        lock.try_lock_with_lease(Duration::from_secs(1), Duration::ZERO)
            .await
    ));
    let nr = client.get_non_reentrant_fair_lock("");
    assert!(invalid(nr.lock().await.map(|()| true)));
    assert_eq!(script_calls(&raw).await, 0, "a script was sent");
    client.shutdown().await.unwrap();
}

// ---- 8. watchdog -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_a_fair_lock_and_reports_its_loss() {
    let Bed(_server, client, raw, name) = Bed::with_config("fair-watchdog", |c| {
        c.watchdog_timeout(Duration::from_millis(600))
    })
    .await;
    let guard = fair(&client, &name, 1).acquire().await.unwrap();
    assert!(rearmed(&raw, &name).await, "not renewed");
    assert!(exists(&raw, &name).await, "renewed past its lease");
    assert!(pttl(&raw, &name).await > 100);
    assert!(!guard.is_lost());

    let _: i64 = raw.del(&name).await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), guard.lost())
        .await
        .expect("lost() fires when the hash is deleted");
    assert!(guard.is_lost());
    drop(guard);
    assert!(
        eventually(Duration::from_secs(2), || async {
            client.renewed_locks() == 0
        })
        .await
    );
    client.shutdown().await.unwrap();
}

// ---- 9. Redisson's quirks --------------------------------------------------------------------

/// Redisson quirk (§10.3): when the lock hash no longer exists, the fair unlock script
/// wakes the queue head and answers 1 ("released"), owner or not, so `unlock()` of a
/// vanished (expired, deleted) or never-taken fair lock is `Ok(())`, where an RLock says
/// `NotOwner`. Kept for wire compatibility; the head is woken either way. (Without key
/// tracking: with it, the waiter may hear the DEL and take the lock before the holder's
/// unlock runs, which then rightly says `NotOwner`; seen in a run.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlocking_a_vanished_fair_lock_is_ok_and_wakes_the_head() {
    let Bed(_server, client, raw, name) =
        Bed::with_config("fair-vanished", |c| c.key_tracking(false)).await;
    let holder = fair(&client, &name, 1);
    holder.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = fair(&client, &name, 2);
        async move { lock.lock().await }
    });
    until_waiting(&raw, &name, &field(&client, 2)).await;
    let _: i64 = raw.del(&name).await.unwrap(); // the hash vanishes behind the holder
    let woken = Instant::now();
    holder.unlock().await.unwrap();
    waiter.await.unwrap().unwrap();
    // Woken by the unlock's message, not by the waiter's 2 s re-check. (This failed in
    // about 1 run in 4, at 2.005 s: the release's answer woke the waiter with no try
    // due, and the message that came next was spent as "stored" without a try.)
    let took = woken.elapsed();
    assert!(
        took < Duration::from_millis(1_800),
        "the head was woken by the message, not by its re-check: took {took:?}"
    );
    fair(&client, &name, 2).unlock().await.unwrap();

    // Never taken at all: still Ok (an RLock answers NotOwner).
    assert!(fair(&client, &name, 3).unlock().await.is_ok());
    assert!(matches!(
        client.get_lock(&name).unlock().await,
        Err(Error::NotOwner { .. })
    ));
    assert_nothing_left(&raw, &name).await;
    client.shutdown().await.unwrap();
}
