//! A Redisson-like client for the bench `contended_vs_redisson_like`: Redisson's RLock
//! scripts (protocol §4.1, §4.2, written from the protocol, not copied) and its way of
//! waiting (§6–§7), from raw fred connections, each thread an OS thread. The bench keeps
//! this model rather than a JVM so that the waiting policy it measures the crate against
//! is exactly the one described; the crate beside real Redisson on a hot lock is measured
//! by `tests/java/fleet_share.rs` and checked by `tests/java/shares.rs`.

#![allow(dead_code)]

use redisson_lock::fred::prelude::*;

/// Redisson's RLock acquire (`tryLockInnerAsync`, §4.1): nil when taken or re-entered,
/// else PTTL.
pub const RLOCK_ACQUIRE: &str = r#"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
"#;

/// Redisson's RLock unlock (`unlockInnerAsync`, §4.2, 3.24+ with the latch): nil not
/// owner, 0 still held, 1 released and `ARGV[1]` published.
pub const RLOCK_UNLOCK: &str = r#"
local v = redis.call('get', KEYS[3])
if v ~= false then return tonumber(v) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local c = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if c > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
"#;

/// The keys and arguments of [`RLOCK_UNLOCK`] for `field`, with a fresh latch.
fn unlock_call(name: &str, field: &str) -> (Vec<String>, Vec<Value>) {
    let latch = format!(
        "redisson_unlock_latch:{{{name}}}:{}",
        uuid::Uuid::new_v4().simple()
    );
    (
        vec![name.to_string(), crate::support::channel(name), latch],
        vec![
            Value::from("0"),
            Value::from(30_000),
            Value::from(field),
            Value::from("PUBLISH"),
            Value::from(13_500),
        ],
    )
}

/// A Redisson-like client: one `RedissonClient` of a JVM whose threads wait for an `RLock`
/// the way Redisson does (protocol §6–§7), so that the tests and the bench can show how
/// the crate shares a contended lock with Java without a JVM.
///
/// * One command connection and one subscriber connection, a random client id.
/// * A thread is an OS thread ([`RedissonLike::thread`]), blocked while it waits, so that
///   a wake-up costs what it costs a JVM: a scheduler hop.
/// * `lock()`: try; if held, take a share of the client's one subscription to the lock
///   channel (the first share subscribes, confirmed by a `PING`), then try again and
///   wait on the client's semaphore up to the holder's TTL, and again, until taken; then
///   give the share back (the last one unsubscribes, in the background).
/// * A `0` on the channel releases one permit (wakes one waiting thread; a permit that
///   finds nobody waiting stays for the next), a `1` as many as threads wait.
///
/// Not simulated: the watchdog (holds get a 30 s lease and are not renewed).
#[derive(Clone)]
pub struct RedissonLike(std::sync::Arc<Shared>);

pub struct Shared {
    id: String,
    commands: Client,
    subscriber: Client,
    acquire_sha: String,
    unlock_sha: String,
    /// Lock entries by channel (`RedissonLockEntry`): the semaphore and its share count.
    entries: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Entry>>>,
    /// Subscribing and unsubscribing are serialised (one of Redisson's `AsyncSemaphore`s).
    serial: tokio::sync::Mutex<()>,
    next_thread: std::sync::atomic::AtomicU64,
    runtime: tokio::runtime::Handle,
}

struct Entry {
    latch: tokio::sync::Semaphore,
    /// Threads holding a share of the subscription.
    shares: std::sync::atomic::AtomicUsize,
}

impl RedissonLike {
    /// A client connected to `url` (on the current tokio runtime).
    pub async fn connect(url: &str) -> RedissonLike {
        let connect = || async {
            let config = Config::from_url(url).expect("url");
            let client = Builder::from_config(config).build().expect("client");
            client.init().await.expect("redisson-like client connects");
            client
        };
        let (commands, subscriber) = (connect().await, connect().await);
        let acquire_sha: String = commands.script_load(RLOCK_ACQUIRE).await.expect("load");
        let unlock_sha: String = commands.script_load(RLOCK_UNLOCK).await.expect("load");
        let shared = std::sync::Arc::new(Shared {
            id: uuid::Uuid::new_v4().to_string(),
            commands,
            subscriber,
            acquire_sha,
            unlock_sha,
            entries: Default::default(),
            serial: tokio::sync::Mutex::new(()),
            next_thread: std::sync::atomic::AtomicU64::new(1),
            runtime: tokio::runtime::Handle::current(),
        });
        let mut messages = shared.subscriber.message_rx();
        let weak = std::sync::Arc::downgrade(&shared);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let message = match messages.recv().await {
                    Ok(message) => message,
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                let Some(shared) = weak.upgrade() else { return };
                let entry = shared.entries().get(&*message.channel).cloned();
                if let Some(entry) = entry {
                    match message.value.as_bytes() {
                        Some(b"0") => entry.latch.add_permits(1),
                        Some(b"1") => entry
                            .latch
                            .add_permits(entry.shares.load(std::sync::atomic::Ordering::Acquire)),
                        _ => {}
                    }
                }
            }
        });
        RedissonLike(shared)
    }

    /// The client id (`UUID` of the hash fields).
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// Starts a Java thread of this client running `body` on an OS thread of its own.
    pub fn thread<T, F, Fut>(&self, body: F) -> std::thread::JoinHandle<T>
    where
        F: FnOnce(JavaThread) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = T>,
        T: Send + 'static,
    {
        let id = self
            .0
            .next_thread
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let thread = JavaThread {
            client: self.clone(),
            id,
        };
        let runtime = self.0.runtime.clone();
        std::thread::Builder::new()
            .name(format!("java-{id}"))
            .spawn(move || runtime.block_on(body(thread)))
            .expect("thread")
    }

    /// Closes both connections.
    pub async fn quit(&self) {
        let _ = self.0.subscriber.quit().await;
        let _ = self.0.commands.quit().await;
    }
}

impl Shared {
    fn entries(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, std::sync::Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A share of `channel`'s subscription (the first subscribes).
    async fn subscribe(&self, channel: &str) -> std::sync::Arc<Entry> {
        let _serial = self.serial.lock().await;
        let entry = self
            .entries()
            .entry(channel.to_owned())
            .or_insert_with(|| {
                std::sync::Arc::new(Entry {
                    latch: tokio::sync::Semaphore::new(0),
                    shares: Default::default(),
                })
            })
            .clone();
        if entry
            .shares
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            == 0
        {
            self.subscriber.subscribe(channel).await.expect("SUBSCRIBE");
            let _: Value = self.subscriber.ping(None).await.expect("PING");
        }
        entry
    }

    /// Gives a share back (the last one unsubscribes and drops the entry).
    async fn unsubscribe(&self, channel: &str, entry: &Entry) {
        let _serial = self.serial.lock().await;
        if entry
            .shares
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            self.entries().remove(channel);
            let _ = self.subscriber.unsubscribe(channel).await;
        }
    }
}

/// One thread of a [`RedissonLike`] client (owner field `<client id>:<thread id>`).
pub struct JavaThread {
    client: RedissonLike,
    id: u64,
}

impl JavaThread {
    /// This thread's hash field.
    pub fn field(&self) -> String {
        format!("{}:{}", self.client.0.id, self.id)
    }

    /// One acquire script (lease 30 s): `None` when taken, else the holder's PTTL.
    async fn try_acquire(&self, name: &str) -> Option<i64> {
        let shared = &self.client.0;
        let reply: Value = shared
            .commands
            .evalsha(
                &shared.acquire_sha,
                vec![name],
                vec![Value::from(30_000), Value::from(self.field())],
            )
            .await
            .expect("java acquire");
        match reply {
            Value::Null => None,
            Value::Integer(ttl) => Some(ttl),
            other => panic!("unexpected acquire reply {other:?}"),
        }
    }

    /// `lock.lock()`: Redisson's wait (see [`RedissonLike`]).
    pub async fn lock(&self, name: &str) {
        if self.try_acquire(name).await.is_none() {
            return;
        }
        let shared = self.client.0.clone();
        let channel = crate::support::channel(name);
        let entry = shared.subscribe(&channel).await;
        loop {
            match self.try_acquire(name).await {
                None => break,
                Some(ttl) if ttl >= 0 => {
                    let wait = std::time::Duration::from_millis(ttl as u64);
                    if let Ok(permit) = tokio::time::timeout(wait, entry.latch.acquire()).await {
                        permit.expect("latch").forget();
                    }
                }
                Some(_) => entry.latch.acquire().await.expect("latch").forget(),
            }
        }
        // Redisson unsubscribes asynchronously: the thread goes on at once.
        let runtime = shared.runtime.clone();
        runtime.spawn(async move { shared.unsubscribe(&channel, &entry).await });
    }

    /// `lock.unlock()`: 1 released (and `0` published), 0 still held, nil not the owner.
    pub async fn unlock(&self, name: &str) -> Value {
        let shared = &self.client.0;
        let (keys, args) = unlock_call(name, &self.field());
        shared
            .commands
            .evalsha(&shared.unlock_sha, keys, args)
            .await
            .expect("java unlock")
    }
}
