//! Redisson's `NameMapper` (`ConfigBuilder::name_mapper`) against a real redis-server: the
//! raw keys and channels of every kind carry the mapped name, as protocol.md §2 says; the
//! fair lock's queue and deadline set follow `FairQueueNames` (§10.1: mapped since
//! Redisson 3.52.0, unmapped before); groups, the blocking API and the watchdog see the
//! mapped keys; `Lock::name` stays the name given; the CLI's `--prefix`. A mapped Rust
//! client and real Redisson 4.7.0 with the same prefix as one lock, synchronizers too:
//! `tests/java/name_mapper.rs`.

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::config::FairQueueNames;
use redisson_lock::fred::prelude::*;
use redisson_lock::names::LockKeys;
use redisson_lock::{ConfigBuilder, Error, LockOwner, MultiLock, PrefixNameMapper};

const PREFIX: &str = "app1:";

/// The client settings of an app whose Redisson `NameMapper` puts [`PREFIX`] first.
fn mapped(config: ConfigBuilder) -> ConfigBuilder {
    config.name_mapper(PrefixNameMapper::new(PREFIX))
}

/// `name` as that app stores it.
fn raw_name(name: &str) -> String {
    format!("{PREFIX}{name}")
}

async fn lrange(raw: &Client, key: &str) -> Vec<String> {
    strings(raw, ["LRANGE", key, "0", "-1"]).await
}

async fn zmembers(raw: &Client, key: &str) -> Vec<String> {
    strings(raw, ["ZRANGE", key, "0", "-1"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrant_lock_keys_and_channel_are_mapped() {
    let Bed(server, client, raw, name) = Bed::with_config("nm_plain", mapped).await;
    let mapped_name = raw_name(&name);
    let lock = client.get_lock(&name).with_owner(LockOwner::from_raw(3));
    assert_eq!(lock.name(), name, "Lock::name is the name as given");
    assert_eq!(lock.raw_name(), mapped_name);
    assert!(format!("{lock:?}").contains(&mapped_name));

    lock.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        hgetall(&raw, &mapped_name).await,
        [(format!("{}:3", client.id()), "1".to_owned())]
    );
    assert!(
        !exists(&raw, &name).await,
        "nothing under the unmapped name"
    );
    assert!(lock.is_locked().await.unwrap());
    assert!(lock.is_held_by(LockOwner::from_raw(3)).await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    assert!(lock.remain_time_to_live().await.unwrap().is_some());

    // The unlock message goes to `redisson_lock__channel:{N}` with N the mapped name.
    let channel = format!("redisson_lock__channel:{{{mapped_name}}}");
    assert_eq!(LockKeys::new(mapped_name.as_str()).channel(), channel);
    let (_subscriber, mut rx) = listen(&server, "redisson_lock__channel:*").await;
    lock.unlock().await.unwrap();
    let seen = messages(&mut rx, Duration::from_secs(2)).await;
    assert_eq!(seen, [(channel, b"0".to_vec())]);
    assert!(!exists(&raw, &mapped_name).await);

    // force_unlock deletes the mapped key.
    lock.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    assert!(client.get_lock(&name).force_unlock().await.unwrap());
    assert!(!exists(&raw, &mapped_name).await);

    // An empty name stays refused, although the mapper would make it `app1:`.
    assert!(matches!(
        client.get_lock("").lock().await,
        Err(Error::InvalidArgument(_))
    ));
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_and_read_write_keys_are_mapped() {
    let Bed(server, client, raw, name) = Bed::with_config("nm_kinds", mapped).await;
    let mapped_name = raw_name(&name);

    let fenced = client.get_fenced_lock(&name);
    let token = fenced.lock_and_get_token().await.unwrap();
    let counter: Option<String> = raw
        .get(format!("redisson_lock_token:{{{mapped_name}}}"))
        .await
        .unwrap();
    assert_eq!(counter, Some(token.to_string()));
    assert_eq!(fenced.token().await.unwrap(), Some(token));
    fenced.unlock().await.unwrap();

    let rw_name = format!("{name}:rw");
    let rw_mapped = raw_name(&rw_name);
    let rw = client.get_read_write_lock(&rw_name);
    assert_eq!(
        (rw.name(), rw.raw_name()),
        (rw_name.as_str(), rw_mapped.as_str())
    );
    let read = rw.read_lock().with_owner(LockOwner::from_raw(5));
    read.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    let field = format!("{}:5", client.id());
    assert_eq!(
        hgetall(&raw, &rw_mapped).await,
        [
            (field.clone(), "1".to_owned()),
            ("mode".to_owned(), "read".to_owned())
        ]
    );
    // §11.1: `{N}:<field>:rwlock_timeout:1`, with N mapped.
    let hold_key = format!("{{{rw_mapped}}}:{field}:rwlock_timeout:1");
    assert!(exists(&raw, &hold_key).await, "{hold_key}");
    assert_eq!(
        LockKeys::new(rw_mapped.as_str()).read_timeout_key(&field, 1),
        hold_key
    );
    read.unlock().await.unwrap();
    assert!(!exists(&raw, &rw_mapped).await);

    let write = rw.write_lock().with_owner(LockOwner::from_raw(6));
    write
        .lock_with_lease(Duration::from_secs(30))
        .await
        .unwrap();
    let (_subscriber, mut rx) = listen(&server, "redisson_rwlock:*").await;
    write.unlock().await.unwrap();
    let seen = messages(&mut rx, Duration::from_secs(2)).await;
    assert_eq!(
        seen,
        [(format!("redisson_rwlock:{{{rw_mapped}}}"), b"1".to_vec())]
    );
    client.shutdown().await.unwrap();
}

/// A fair lock held by one client and waited for by another: the hash, the waiter's
/// channel and (per `names`) the queue and deadline set, as protocol.md §2 and §10.1 say.
async fn fair_names_are(names: FairQueueNames, queue_base: impl Fn(&str) -> String) {
    let server = RedisServer::start();
    let config = |c: ConfigBuilder| mapped(c).fair_queue_names(names);
    let holder = server.client_with(config(server.config())).await;
    let waiter = server.client_with(config(server.config())).await;
    assert_eq!(holder.config().fair_queue_names(), names);
    let raw = server.raw().await;
    let name = key("nm_fair");
    let mapped_name = raw_name(&name);
    let base = queue_base(&name);
    let (queue, timeouts) = (
        format!("redisson_lock_queue:{{{base}}}"),
        format!("redisson_lock_timeout:{{{base}}}"),
    );
    let keys = LockKeys::with_config(&name, holder.config());
    assert_eq!(
        (keys.fair_queue(), keys.fair_timeouts()),
        (queue.clone(), timeouts.clone())
    );

    let held = holder
        .get_fair_lock(&name)
        .with_owner(LockOwner::from_raw(1));
    held.lock_with_lease(Duration::from_secs(30)).await.unwrap();
    assert!(exists(&raw, &mapped_name).await);

    let waiting = waiter
        .get_fair_lock(&name)
        .with_owner(LockOwner::from_raw(7));
    let field = format!("{}:7", waiter.id());
    let task = tokio::spawn({
        let waiting = waiting.clone();
        async move {
            waiting
                .try_lock_with_lease(Duration::from_secs(10), Duration::from_secs(30))
                .await
        }
    });
    assert!(
        eventually(Duration::from_secs(3), || async {
            lrange(&raw, &queue).await == [field.as_str()]
        })
        .await,
        "the waiter queues in {queue}"
    );
    assert_eq!(zmembers(&raw, &timeouts).await, [field.as_str()]);
    // Nothing under the other naming.
    let other = if base == name {
        mapped_name.clone()
    } else {
        name.clone()
    };
    assert!(!exists(&raw, &format!("redisson_lock_queue:{{{other}}}")).await);
    assert!(!exists(&raw, &format!("redisson_lock_timeout:{{{other}}}")).await);
    // The waiter's own channel is built from the mapped name in every version.
    let own = format!("redisson_lock__channel:{{{mapped_name}}}:{field}");
    assert!(
        eventually(Duration::from_secs(3), || async {
            numsub(&raw, &own).await == 1
        })
        .await,
        "the waiter listens on {own}"
    );

    held.unlock().await.unwrap();
    assert!(task.await.unwrap().unwrap(), "the waiter gets the lock");
    assert_eq!(
        hgetall(&raw, &mapped_name).await,
        [(field.clone(), "1".to_owned())]
    );
    assert!(lrange(&raw, &queue).await.is_empty());
    waiting.unlock().await.unwrap();
    holder.shutdown().await.unwrap();
    waiter.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_queue_names_are_mapped_by_default_as_redisson_3_52() {
    fair_names_are(FairQueueNames::default(), raw_name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_queue_names_can_be_unmapped_as_redisson_before_3_52() {
    fair_names_are(FairQueueNames::Unmapped, str::to_owned).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_mapped_keys() {
    let timeout = Duration::from_millis(600);
    let Bed(_server, client, raw, name) =
        Bed::with_config("nm_watchdog", |c| mapped(c).watchdog_timeout(timeout)).await;
    let lock = client.get_lock(&name);
    let guard = lock.acquire().await.unwrap();
    let rw_name = format!("{name}:rw");
    let read = client.get_read_write_lock(&rw_name).read_lock();
    let read_guard = read.acquire().await.unwrap();
    let field = format!("{}:{}", client.id(), read.owner());
    let hold_key = format!("{{{}}}:{field}:rwlock_timeout:1", raw_name(&rw_name));

    tokio::time::sleep(timeout * 3).await;
    assert!(
        pttl(&raw, &raw_name(&name)).await > 0,
        "renewed past its lease"
    );
    assert!(pttl(&raw, &raw_name(&rw_name)).await > 0);
    assert!(
        pttl(&raw, &hold_key).await > 0,
        "the read hold's key is renewed too"
    );
    guard.unlock().await.unwrap();
    read_guard.unlock().await.unwrap();
    assert!(!exists(&raw, &raw_name(&name)).await);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_take_the_mapped_locks_and_tell_duplicates_by_them() {
    let server = RedisServer::start();
    let client = server.client_with(mapped(server.config())).await;
    let plain = server.client().await;
    let raw = server.raw().await;
    let (a, b) = (key("nm_group_a"), key("nm_group_b"));

    let group = MultiLock::new([client.get_lock(&a), client.get_lock(&b)]).unwrap();
    assert_eq!(group.names().collect::<Vec<_>>(), [a.as_str(), b.as_str()]);
    group.lock().await.unwrap();
    assert!(exists(&raw, &raw_name(&a)).await && exists(&raw, &raw_name(&b)).await);
    assert!(!exists(&raw, &a).await && !exists(&raw, &b).await);
    group.unlock().await.unwrap();
    assert!(!exists(&raw, &raw_name(&a)).await);

    assert!(matches!(
        MultiLock::new([client.get_lock(&a), client.get_lock(&a)]),
        Err(Error::DuplicateMember { name }) if name == a
    ));
    // The same given name on an unmapped client is another lock in Redis...
    assert!(MultiLock::new([client.get_lock(&a), plain.get_lock(&a)]).is_ok());
    // ...and the mapped name on it is the same one.
    assert!(matches!(
        MultiLock::new([client.get_lock(&a), plain.get_lock(raw_name(&a))]),
        Err(Error::DuplicateMember { .. })
    ));
    client.shutdown().await.unwrap();
    plain.shutdown().await.unwrap();
}

#[cfg(feature = "blocking")]
#[test]
fn the_blocking_api_uses_the_mapped_keys() {
    let server = RedisServer::start();
    let config = mapped(server.config()).build().unwrap();
    let client = redisson_lock::blocking::Client::connect(config).unwrap();
    let name = key("nm_blocking");
    let lock = client.get_lock(&name);
    assert_eq!(
        (lock.name(), lock.raw_name()),
        (name.as_str(), raw_name(&name).as_str())
    );
    lock.lock().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let held = runtime.block_on(async {
        let raw = server.raw().await;
        (
            exists(&raw, &raw_name(&name)).await,
            exists(&raw, &name).await,
        )
    });
    assert_eq!(held, (true, false));
    lock.unlock().unwrap();
    client.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_mapper_names_are_stored_as_given() {
    let Bed(_server, client, raw, name) = Bed::new("nm_none").await;
    assert!(client.config().name_mapper().is_none());
    let lock = client.get_fair_lock(&name);
    assert_eq!(lock.raw_name(), lock.name());
    lock.lock().await.unwrap();
    assert!(exists(&raw, &name).await);
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}

#[cfg(feature = "cli")]
mod cli {
    use super::support::cli::{cli as run, json};
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_cli_maps_names_with_prefix() {
        let server = RedisServer::start();
        let url = server.url();
        let client = server.client_with(mapped(server.config())).await;
        let plain = server.client().await;
        let raw = server.raw().await;
        let lease = Duration::from_secs(60);
        client
            .get_lock("orders")
            .lock_with_lease(lease)
            .await
            .unwrap();
        client
            .get_read_write_lock("rates")
            .write_lock()
            .lock_with_lease(lease)
            .await
            .unwrap();
        // Another app's lock, outside the prefix.
        plain
            .get_lock("orders")
            .lock_with_lease(lease)
            .await
            .unwrap();

        let out = run(&url, &["--prefix", PREFIX, "--json", "inspect", "orders"]).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let all = json(&out);
        let report = &all[0];
        assert_eq!(report["name"], "orders");
        assert_eq!(report["key"], "app1:orders");
        assert_eq!(report["holders"][0]["client_id"], client.id());

        let out = run(&url, &["--prefix", PREFIX, "inspect", "orders"]).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.contains("app1:orders"),
            "the text shows the key: {text}"
        );

        let out = run(&url, &["--prefix", PREFIX, "--json", "list"]).await;
        assert_eq!(out.status.code(), Some(0));
        let listed = json(&out);
        let shown: Vec<(&str, &str)> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["name"].as_str().unwrap(), r["key"].as_str().unwrap()))
            .collect();
        assert_eq!(shown, [("orders", "app1:orders"), ("rates", "app1:rates")]);
        let out = run(
            &url,
            &["--prefix", PREFIX, "--json", "list", "--match", "r*"],
        )
        .await;
        assert_eq!(json(&out).as_array().unwrap().len(), 1);

        let out = run(
            &url,
            &["--prefix", PREFIX, "force-unlock", "orders", "--yes"],
        )
        .await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!exists(&raw, "app1:orders").await);
        assert!(
            exists(&raw, "orders").await,
            "the unprefixed lock is another one"
        );

        // A fair waiter queued under the unmapped name (Redisson before 3.52.0).
        let old = |c: ConfigBuilder| mapped(c).fair_queue_names(FairQueueNames::Unmapped);
        let holder = server.client_with(old(server.config())).await;
        let waiter = server.client_with(old(server.config())).await;
        holder
            .get_fair_lock("tickets")
            .lock_with_lease(lease)
            .await
            .unwrap();
        let waiting = waiter.get_fair_lock("tickets");
        let task = tokio::spawn(async move { waiting.try_lock_for(Duration::from_secs(5)).await });
        assert!(
            eventually(Duration::from_secs(3), || async {
                exists(&raw, "redisson_lock_queue:{tickets}").await
            })
            .await
        );
        let args = [
            "--prefix",
            PREFIX,
            "--fair-queue-unmapped",
            "--json",
            "inspect",
            "tickets",
        ];
        let all = json(&run(&url, &args).await);
        let report = &all[0];
        assert_eq!(report["kind"], "fair");
        assert_eq!(report["queue"].as_array().unwrap().len(), 1);
        assert_eq!(report["queue"][0]["client_id"], waiter.id());
        let out = run(&url, &["--fair-queue-unmapped", "list"]).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "--fair-queue-unmapped needs --prefix"
        );

        task.abort();
        for c in [client, plain, holder, waiter] {
            c.shutdown().await.unwrap();
        }
    }
}
