//! An acquire whose reply is lost (Redis paused past the response timeout) never leaves a
//! hold nobody knows about: the crate reads the owner's count once Redis answers again and
//! either reports the acquisition or undoes it, for every lock kind. Where Redis cannot
//! be asked in time, the caller gets `Error::OutcomeUnknown` and the next call of this
//! client on that lock and owner undoes the hold if the acquire ran.
use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, Error, LockKind, LockOwner};
use tokio::time::Instant;

const RESPONSE_TIMEOUT: Duration = Duration::from_millis(300);

/// A server that accepts `DEBUG SLEEP` from the tests.
fn pausable_server() -> RedisServer {
    RedisServer::start_with(&["--enable-debug-command", "yes"])
}

async fn client(server: &RedisServer) -> Client {
    server
        .client_with(server.config().response_timeout(RESPONSE_TIMEOUT))
        .await
}

/// Pauses the whole server for `secs` (like a stalled Redis), from a connection of its
/// own; returns once the pause has begun.
async fn pause(server: &RedisServer, secs: f64) -> tokio::task::JoinHandle<()> {
    let raw = server.raw().await;
    let handle = tokio::spawn(async move {
        let _: Value = raw
            .custom(
                redisson_lock::fred::cmd!("DEBUG"),
                vec!["SLEEP".to_string(), secs.to_string()],
            )
            .await
            .expect("DEBUG SLEEP");
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle
}

/// The scenario of the issue, for one kind: `lock()` runs while Redis is paused longer
/// than the response timeout. It must return Ok with exactly one hold, and the lock
/// must be free for others once unlocked.
async fn lock_through_a_pause<K: LockKind>(
    server: &RedisServer,
    label: &str,
    lock: redisson_lock::Lock<K>,
    field: String,
) {
    let raw = server.raw().await;
    let name = lock.name().to_string();
    let paused = pause(server, 0.8).await;
    let started = Instant::now();
    let outcome = lock.lock().await;
    assert!(
        outcome.is_ok(),
        "{}: lock() through a pause must be settled, got {outcome:?}",
        label
    );
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "the pause was not felt"
    );
    paused.await.unwrap();
    let count: Option<i64> = raw.hget(&name, &field).await.unwrap();
    assert_eq!(count, Some(1), "{}: one hold, not zero or two", label);
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    lock.unlock().await.unwrap();
    let count: Option<i64> = raw.hget(&name, &field).await.unwrap();
    assert_eq!(count, None, "{}: the hold stayed behind", label);
}

fn field(client: &Client, owner: LockOwner) -> String {
    format!("{}:{owner}", client.id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_settles_an_acquire_whose_reply_was_lost() {
    let server = pausable_server();
    let client = client(&server).await;
    let owner = LockOwner::from_raw(11);
    let f = field(&client, owner);
    let plain = client.get_lock(key("lost-rlock")).with_owner(owner);
    lock_through_a_pause(&server, "reentrant", plain, f.clone()).await;
    let fair = client.get_fair_lock(key("lost-fair")).with_owner(owner);
    lock_through_a_pause(&server, "fair", fair, f.clone()).await;
    let rw = client.get_read_write_lock(key("lost-rw"));
    lock_through_a_pause(&server, "read", rw.read_lock().with_owner(owner), f.clone()).await;
    let write_field = format!("{f}:write");
    lock_through_a_pause(
        &server,
        "write",
        rw.write_lock().with_owner(owner),
        write_field,
    )
    .await;
    let fenced = client.get_fenced_lock(key("lost-fenced")).with_owner(owner);
    lock_through_a_pause(&server, "fenced", fenced, f.clone()).await;
    let spin = client.get_spin_lock(key("lost-spin")).with_owner(owner);
    lock_through_a_pause(&server, "spin", spin, f.clone()).await;
    let once = client
        .get_non_reentrant_lock(key("lost-nr"))
        .with_owner(owner);
    lock_through_a_pause(&server, "non-reentrant", once, f.clone()).await;
    assert_eq!(client.renewed_locks(), 0);
    client.shutdown().await.unwrap();
}

/// The fenced lock's token went with the lost reply: the crate gives that hold back and
/// draws again, so the caller gets a token that really is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_lock_returns_a_token_it_really_drew() {
    let server = pausable_server();
    let client = client(&server).await;
    let raw = server.raw().await;
    let name = key("lost-token");
    let lock = client.get_fenced_lock(&name);
    let paused = pause(&server, 0.8).await;
    let token = lock.lock_and_get_token().await.unwrap();
    paused.await.unwrap();
    assert_eq!(
        lock.token().await.unwrap(),
        Some(token),
        "the returned token is the last drawn"
    );
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    client.shutdown().await.unwrap();
}

/// The story: A's acquire runs during a pause, but Redis cannot even be asked in
/// time (a single `try_lock()` has no wait budget). A hears `OutcomeUnknown`; the client
/// gives the hold that ran back in the background once Redis answers; A's next `lock()`
/// takes a fresh one (count 1, not 2); after its `unlock()` the lock is free for B at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_in_doubt_is_given_back_without_waiting_for_a_call() {
    let server = pausable_server();
    let a = client(&server).await;
    let b = client(&server).await;
    let raw = server.raw().await;
    let name = key("in-doubt");
    let a_lock = a.get_lock(&name);
    // Warm: the script is in the server's cache (a cold EVALSHA would only get NOSCRIPT).
    a_lock.lock().await.unwrap();
    a_lock.unlock().await.unwrap();

    let paused = pause(&server, 1.5).await;
    let outcome = a_lock.try_lock().await;
    assert!(
        matches!(
            &outcome,
            Err(Error::OutcomeUnknown {
                operation: "acquire",
                ..
            })
        ),
        "got {outcome:?}"
    );
    let text = outcome.unwrap_err().to_string();
    assert!(text.contains("undoes it at its next call"), "{text}");
    paused.await.unwrap();
    // The acquire did run on the server: a hold nobody was told about, which the client
    // gives back in the background as soon as Redis answers, before any call of A's.
    assert!(
        gone_within(&raw, &name, Duration::from_secs(5))
            .await
            .is_some(),
        "the hold in doubt was not given back in the background"
    );

    a_lock.lock().await.unwrap();
    assert_eq!(
        a_lock.hold_count().await.unwrap(),
        1,
        "the ghost hold was not undone"
    );
    a_lock.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    let b_lock = b.get_lock(&name);
    assert!(
        b_lock
            .try_lock_for(Duration::from_millis(200))
            .await
            .unwrap()
    );
    b_lock.unlock().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// After an in-doubt acquire, an `unlock()` (a caller unsure whether it holds) undoes the
/// ghost hold and answers NotOwner: the caller holds nothing, and nothing stays held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_after_a_hold_in_doubt_says_not_owner_and_frees_the_lock() {
    let server = pausable_server();
    let a = client(&server).await;
    let raw = server.raw().await;
    let name = key("in-doubt-unlock");
    let lock = a.get_lock(&name);
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    let paused = pause(&server, 1.5).await;
    assert!(matches!(
        lock.try_lock().await,
        Err(Error::OutcomeUnknown { .. })
    ));
    paused.await.unwrap();
    assert!(matches!(lock.unlock().await, Err(Error::NotOwner { .. })));
    assert!(!exists(&raw, &name).await, "the ghost hold stayed behind");
    a.shutdown().await.unwrap();
}

/// When the count in Redis is neither "before" nor "before + 1", another task or process
/// acts as the same owner: the crate cannot know, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_changed_by_someone_else_is_reported_as_unknown() {
    let server = pausable_server();
    let a = client(&server).await;
    let raw = server.raw().await;
    let name = key("shared-owner");
    let owner = LockOwner::from_raw(99);
    let lock = a.get_lock(&name).with_owner(owner);
    // Another process with the same client id and owner already holds it 4 times.
    let _: () = raw.hset(&name, (field(&a, owner), 4)).await.unwrap();
    let paused = pause(&server, 0.8).await;
    let outcome = lock.lock().await;
    paused.await.unwrap();
    match outcome {
        Err(Error::OutcomeUnknown { reason, .. }) => {
            assert!(reason.contains("same owner"), "{reason}")
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    a.shutdown().await.unwrap();
}
