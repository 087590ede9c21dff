//! Map entries' locks, semaphores and latches (`Client::map` / `Client::set`) beside real
//! Redisson 3.23.3 and 4.7.0 (`RMap#getLock(key)` and its siblings, the driver's `mapkey:`
//! names, `getMap(map, StringCodec.INSTANCE)`), on a single server and on a Redis 7
//! Cluster:
//!
//! * names: for every object, the key `mapobj` / `setobj` answer (`StringCodec`, and
//!   `Kryo5Codec` for `Client::map`'s default) is the raw name of the crate's handle, and
//!   with a name mapper (4.7.0's client `jp`, prefix `app1:`) too;
//! * locks: Java holds a map entry's lock (reentrant, fair, write) and the crate's twin
//!   waits and is woken by Java's unlock; the crate holds and leaves the same raw state,
//!   and Java's waiter is woken by the crate's unlock; the same through a set value's
//!   handle and through the name mapper;
//! * a map entry's semaphore: each side's release wakes the other's waiter; its
//!   permit-expirable semaphore and latch read each other's writes;
//! * the codec of the fleet's `redisson.yaml`: a client built from a file per codec
//!   (none, Kryo5Codec, StringCodec, JsonJacksonCodec) waits on Java's lock of a map
//!   entry and is woken by Java's unlock, on Java's key; a set value and an entry
//!   semaphore too under StringCodec;
//! * on the cluster every key and channel of an entry's lock, semaphore and permit
//!   semaphore is in the map's slot, and the entry latch fails on both sides: Java with
//!   `CROSSSLOT`, the crate with `InvalidArgument` before any I/O.
//!
//! One JVM per version per test, both versions at once.

use std::sync::Arc;
use std::time::Instant;

use crate::support::RedisServer;
use crate::support::cluster::Cluster;
use crate::support::real_java::{JavaClient, Version};
use crate::support::topo_interop::*;

use redisson_lock::codec::JavaCodec;
use redisson_lock::fred::util::redis_keyslot;
use redisson_lock::names::EntryObject;
use redisson_lock::{EntryObjects, Error};

const KEY: &str = "o-1";

/// The raw name of `key`'s `object` through the crate's handle of that kind.
fn handle_raw_name(map: &EntryObjects, object: EntryObject) -> String {
    match object {
        EntryObject::Lock => map.get_lock(KEY).unwrap().raw_name().into(),
        EntryObject::FairLock => map.get_fair_lock(KEY).unwrap().raw_name().into(),
        EntryObject::ReadWriteLock => map.get_read_write_lock(KEY).unwrap().raw_name().into(),
        EntryObject::Semaphore => map.get_semaphore(KEY).unwrap().raw_name().into(),
        EntryObject::PermitExpirableSemaphore => map
            .get_permit_expirable_semaphore(KEY)
            .unwrap()
            .raw_name()
            .into(),
        EntryObject::CountDownLatch => map.get_count_down_latch(KEY).unwrap().raw_name().into(),
        other => panic!("new object {other}"),
    }
}

/// Every object's key as Java names it (`mapobj` / `setobj`) against the crate's handle;
/// the number of names compared.
async fn names_agree(
    java: &JavaClient,
    plain: &LockClient,
    mapped: &LockClient,
    map: &str,
) -> usize {
    let mut compared = 0;
    let mut cases: Vec<(String, EntryObjects)> = vec![
        (
            format!("mapobj {map}"),
            plain.map_with_codec(map, JavaCodec::String),
        ),
        (
            format!("setobj {map}"),
            plain.set_with_codec(map, JavaCodec::String),
        ),
    ];
    if java.version() == Version::V4_7_0 {
        cases.push((
            format!("mapobj {ALIAS}/{map}"),
            mapped.map_with_codec(map, JavaCodec::String),
        ));
        cases.push((
            format!("setobj {ALIAS}/{map}"),
            mapped.set_with_codec(map, JavaCodec::String),
        ));
    }
    for (verb, entries) in &cases {
        for object in EntryObject::ALL {
            let java_key = java.call(&format!("{verb} {KEY} {object}")).await;
            assert_eq!(
                handle_raw_name(entries, object),
                java_key,
                "Redisson {}: `{verb} {KEY} {object}`",
                java.version()
            );
            compared += 1;
        }
    }
    // `Client::map` without a codec is Redisson's default, Kryo5Codec.
    let kryo = java.call(&format!("mapobj {map} {KEY} lock kryo5")).await;
    assert_eq!(plain.map(map).get_lock(KEY).unwrap().raw_name(), kryo);
    compared + 1
}

/// A lock of a map entry, as the driver and the crate name it.
struct EntryLock {
    kind: Kind,
    /// The driver's name of the holder's and the contender's lock.
    java_holder: String,
    java_contender: String,
    raw: String,
    holder: Arc<dyn DynLock>,
    contender: Arc<dyn DynLock>,
    alias: Option<&'static str>,
}

impl EntryLock {
    /// `kind` of `map`'s key [`KEY`] through `entries` (a map's or a set's handles); the
    /// driver's names on client `alias`.
    fn new(kind: Kind, entries: &EntryObjects, alias: Option<&'static str>) -> EntryLock {
        let java = |kind: Kind| {
            let word = match kind {
                Kind::Reentrant => "mapkey",
                Kind::Fair => "fairmapkey",
                Kind::Read => "rwreadmapkey",
                Kind::Write => "rwwritemapkey",
                other => panic!("no map-key verb for {other:?}"),
            };
            let alias = alias.map(|a| format!("{a}/")).unwrap_or_default();
            format!("{alias}{word}:{}={KEY}", entries.name())
        };
        let handle = |kind: Kind| -> Arc<dyn DynLock> {
            match kind {
                Kind::Reentrant => Arc::new(entries.get_lock(KEY).unwrap()),
                Kind::Fair => Arc::new(entries.get_fair_lock(KEY).unwrap()),
                Kind::Read => Arc::new(entries.get_read_write_lock(KEY).unwrap().read_lock()),
                Kind::Write => Arc::new(entries.get_read_write_lock(KEY).unwrap().write_lock()),
                other => panic!("no entry handle for {other:?}"),
            }
        };
        let raw = match kind {
            Kind::Fair => entries.get_fair_lock(KEY).unwrap().raw_name().to_owned(),
            Kind::Read | Kind::Write => entries
                .get_read_write_lock(KEY)
                .unwrap()
                .raw_name()
                .to_owned(),
            _ => entries.get_lock(KEY).unwrap().raw_name().to_owned(),
        };
        EntryLock {
            kind,
            java_holder: java(kind),
            java_contender: java(kind.contender()),
            raw,
            holder: handle(kind).with_owner(1),
            contender: handle(kind.contender()).with_owner(2),
            alias,
        }
    }
}

/// Java holds and the crate's waiter is woken by Java's unlock; the crate holds (the
/// same raw state) and Java's waiter is woken by the crate's unlock; nothing is left.
async fn entry_lock_cross(
    topo: &Topo,
    java: &JavaClient,
    client: &LockClient,
    e: &EntryLock,
    what: &str,
) {
    let what = format!("Redisson {} {what}", java.version());
    let lease = LEASE.as_millis();
    java.ok(&format!("lock {} {lease} A", e.java_holder)).await;
    let java_a = java_field(java, "A", e.alias).await;
    let java_state = topo.snapshot(&e.raw, &[&java_a]).await;
    assert!(
        java_state.iter().any(|l| l.contains("<owner>")),
        "{what}: Java's hold is not at {}: {java_state:?}",
        e.raw
    );
    assert!(!e.contender.try_lock().await.unwrap(), "{what}: both hold");

    let channel = e
        .kind
        .contender()
        .channel(&e.raw, &format!("{}:2", client.id()))
        .unwrap();
    let before = topo.quiet(&channel).await;
    let waiting = {
        let contender = e.contender.clone();
        tokio::spawn(async move { contender.lock_with_lease(LEASE).await.unwrap() })
    };
    topo.await_listener(&channel, before, &what).await;
    assert!(
        !waiting.is_finished(),
        "{what}: the crate took what Java holds"
    );
    java.ok(&format!("unlock {} A", e.java_holder)).await;
    tokio::time::timeout(WAKE_LIMIT, waiting)
        .await
        .unwrap_or_else(|_| panic!("{what}: Java's unlock did not wake the crate's waiter"))
        .unwrap();
    e.contender.unlock().await.unwrap();

    e.holder.lock_with_lease(LEASE).await.unwrap();
    let crate_state = topo
        .snapshot(&e.raw, &[&format!("{}:1", client.id())])
        .await;
    assert_eq!(
        crate_state, java_state,
        "{what}: raw state (left: the crate's, right: Java's)"
    );
    let java_b = java_field(java, "B", e.alias).await;
    let channel = e.kind.contender().channel(&e.raw, &java_b).unwrap();
    let before = topo.quiet(&channel).await;
    let pending = java
        .spawn(&format!("lock {} {lease} B", e.java_contender))
        .await;
    topo.await_listener(&channel, before, &what).await;
    assert_eq!(
        pending.poll().await,
        None,
        "{what}: Java took what the crate holds"
    );
    let released = Instant::now();
    e.holder.unlock().await.unwrap();
    let answer = pending.wait(WAKE_LIMIT).await;
    assert_eq!(
        answer.as_deref(),
        Some("OK"),
        "{what}: Java's waiter after {:?}",
        released.elapsed()
    );
    java.ok(&format!("unlock {} B", e.java_contender)).await;
    let left = topo.snapshot(&e.raw, &[]).await;
    assert!(left.is_empty(), "{what}: left behind: {left:?}");
}

/// A map entry's semaphore: Java's release wakes the crate's waiter and the crate's
/// release wakes Java's.
async fn semaphore_cross(topo: &Topo, java: &JavaClient, entries: &EntryObjects) {
    let what = format!("Redisson {} entry semaphore", java.version());
    let java_name = format!("mapkey:{}={KEY}", entries.name());
    let sem = entries.get_semaphore(KEY).unwrap();
    let channel = format!("redisson_sc:{}", sem.raw_name());
    assert!(java.bool(&format!("semset {java_name} 0")).await, "{what}");
    assert_eq!(
        topo.get(sem.raw_name()).await.as_deref(),
        Some("0"),
        "{what}"
    );
    assert!(
        !sem.try_set_permits(5).await.unwrap(),
        "{what}: Java set it"
    );

    let before = topo.quiet(&channel).await;
    let waiting = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.unwrap().forget() })
    };
    topo.await_listener(&channel, before, &what).await;
    assert!(!waiting.is_finished(), "{what}: a permit out of nothing");
    java.ok(&format!("semrelease {java_name} 1")).await;
    let taken = tokio::time::timeout(WAKE_LIMIT, waiting).await;
    assert_eq!(
        taken.expect("Java's release wakes the crate").unwrap(),
        1,
        "{what}"
    );

    let before = topo.quiet(&channel).await;
    let pending = java.spawn(&format!("semacquire {java_name} 1 A")).await;
    topo.await_listener(&channel, before, &what).await;
    assert_eq!(
        pending.poll().await,
        None,
        "{what}: Java took a permit out of nothing"
    );
    sem.release(1).await.unwrap();
    assert_eq!(
        pending.wait(WAKE_LIMIT).await.as_deref(),
        Some("OK"),
        "{what}"
    );
    assert_eq!(sem.available_permits().await.unwrap(), 0, "{what}");
    assert!(sem.delete().await.unwrap());
}

/// Every check of one version on a single server; `map` is this version's own.
async fn single_server_checks(
    topo: &Topo,
    java: &JavaClient,
    plain: &LockClient,
    mapped: &LockClient,
    map: &str,
) -> usize {
    let names = names_agree(java, plain, mapped, map).await;
    let strings = plain.map_with_codec(map, JavaCodec::String);
    let set = plain.set_with_codec(map, JavaCodec::String);
    entry_lock_cross(
        topo,
        java,
        plain,
        &EntryLock::new(Kind::Reentrant, &strings, None),
        "map entry lock",
    )
    .await;
    entry_lock_cross(
        topo,
        java,
        plain,
        &EntryLock::new(Kind::Reentrant, &set, None),
        "set value lock",
    )
    .await;
    entry_lock_cross(
        topo,
        java,
        plain,
        &EntryLock::new(Kind::Fair, &strings, None),
        "map entry fair lock",
    )
    .await;
    entry_lock_cross(
        topo,
        java,
        plain,
        &EntryLock::new(Kind::Write, &strings, None),
        "map entry write lock (a reader waits)",
    )
    .await;
    if java.version() == Version::V4_7_0 {
        let mapped_map = mapped.map_with_codec(map, JavaCodec::String);
        let lock = EntryLock::new(Kind::Reentrant, &mapped_map, Some(ALIAS));
        assert!(
            lock.raw.starts_with(&format!("{PREFIX}{{{PREFIX}{map}}}:")),
            "{}",
            lock.raw
        );
        entry_lock_cross(topo, java, mapped, &lock, "map entry lock, name mapper").await;
    }
    semaphore_cross(topo, java, &plain.map_with_codec(map, JavaCodec::String)).await;

    // The permit-expirable semaphore and the latch read each other's writes.
    let pes = strings.get_permit_expirable_semaphore(KEY).unwrap();
    assert!(java.bool(&format!("pesset mapkey:{map}={KEY} 2")).await);
    assert_eq!(pes.available_permits().await.unwrap(), 2);
    let id = pes.acquire(None).await.unwrap();
    assert_eq!(
        java.int(&format!("pesacquired mapkey:{map}={KEY}")).await,
        1
    );
    java.ok(&format!("pesrelease mapkey:{map}={KEY} {id}"))
        .await;
    assert_eq!(pes.acquired_permits().await.unwrap(), 0);
    let latch = strings.get_count_down_latch(KEY).unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    assert_eq!(java.int(&format!("latchcount mapkey:{map}={KEY}")).await, 2);
    java.ok(&format!("latchdown mapkey:{map}={KEY}")).await;
    latch.count_down().await.unwrap();
    assert!(latch.wait_for(WAKE_LIMIT).await.unwrap());
    assert_eq!(java.int(&format!("latchcount mapkey:{map}={KEY}")).await, 0);
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn map_entries_beside_java_on_a_single_server() {
    let server = RedisServer::start();
    let topo = Topo::sentinel_primary(server.url(), server.port).await;
    let ([old, new], plain, mapped) = tokio::join!(
        java_pair(&topo.url),
        crate_client(&topo, false),
        crate_client(&topo, true)
    );
    let started = Instant::now();
    let (n3, n4) = tokio::join!(
        single_server_checks(&topo, &old, &plain, &mapped, "ord3"),
        single_server_checks(&topo, &new, &plain, &mapped, "ord4")
    );
    eprintln!(
        "single server: {n3} names (3.23.3) and {n4} (4.7.0) equal; 4 entry locks each way \
         per version (+1 mapped on 4.7.0), the semaphore both ways, PES and latch ({:?})",
        started.elapsed()
    );
    // A client built from the fleet's `redisson.yaml` takes the map-entry lock Java takes,
    // for every codec the file may name (none, Kryo5Codec, StringCodec,
    // JsonJacksonCodec): it waits on Java's hold and is woken by Java's unlock, on the
    // raw key Java wrote.
    let started = Instant::now();
    let (n3, n4) = tokio::join!(
        fleet_codec_checks(&topo, &old, server.port, "orders-3"),
        fleet_codec_checks(&topo, &new, server.port, "orders")
    );
    eprintln!(
        "fleet codecs: {n3} cross checks (3.23.3) and {n4} (4.7.0) passed ({:?})",
        started.elapsed()
    );
    plain.shutdown().await.unwrap();
    mapped.shutdown().await.unwrap();
}

/// On a cluster: the entry's keys and channels in the map's slot, the names, a lock both
/// ways (plain and, on 4.7.0, mapped), the semaphore both ways, and the latch refused on
/// both sides.
async fn cluster_checks(
    topo: &Topo,
    java: &JavaClient,
    plain: &LockClient,
    mapped: &LockClient,
    map: &str,
) {
    let what = format!("Redisson {} cluster", java.version());
    for (client, map_raw) in [(plain, map.to_owned()), (mapped, format!("{PREFIX}{map}"))] {
        let entries = client.map_with_codec(map, JavaCodec::String);
        let slot = redis_keyslot(map_raw.as_bytes());
        let lock = entries.get_lock(KEY).unwrap();
        let fair = entries.get_fair_lock(KEY).unwrap();
        let sem = entries.get_semaphore(KEY).unwrap();
        let pes = entries.get_permit_expirable_semaphore(KEY).unwrap();
        for key in [
            lock.raw_name().to_owned(),
            format!("redisson_lock__channel:{}", lock.raw_name()),
            format!("redisson_lock_queue:{}", fair.raw_name()),
            sem.raw_name().to_owned(),
            format!("redisson_sc:{}", sem.raw_name()),
            format!("{}:timeout", pes.raw_name()),
        ] {
            assert_eq!(
                redis_keyslot(key.as_bytes()),
                slot,
                "{what}: {key} is not in {map_raw}'s slot"
            );
        }
    }
    names_agree(java, plain, mapped, map).await;
    let strings = plain.map_with_codec(map, JavaCodec::String);
    entry_lock_cross(
        topo,
        java,
        plain,
        &EntryLock::new(Kind::Reentrant, &strings, None),
        "cluster map entry lock",
    )
    .await;
    if java.version() == Version::V4_7_0 {
        let mapped_map = mapped.map_with_codec(map, JavaCodec::String);
        let lock = EntryLock::new(Kind::Reentrant, &mapped_map, Some(ALIAS));
        entry_lock_cross(
            topo,
            java,
            mapped,
            &lock,
            "cluster map entry lock, name mapper",
        )
        .await;
    }
    semaphore_cross(topo, java, &plain.map_with_codec(map, JavaCodec::String)).await;

    // The latch's channel wraps its braced name again: another slot. Java fails on the
    // server, the crate before any I/O.
    let answer = java.call(&format!("latchset mapkey:{map}={KEY} 1")).await;
    assert!(
        answer.starts_with("ERR") && answer.contains("CROSSSLOT"),
        "{what}: Java's latch: {answer}"
    );
    let latch = strings.get_count_down_latch(KEY).unwrap();
    let refused = latch.try_set_count(1).await;
    assert!(
        matches!(refused, Err(Error::InvalidArgument(_))),
        "{what}: {refused:?}"
    );
    assert!(latch.count_down().await.is_err() && latch.is_exists().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn map_entries_beside_java_on_a_cluster() {
    let cluster = Cluster::start();
    let topo = Topo::cluster(&cluster).await;
    let ([old, new], plain, mapped) = tokio::join!(
        java_pair(&topo.url),
        crate_client(&topo, false),
        crate_client(&topo, true)
    );
    let started = Instant::now();
    tokio::join!(
        cluster_checks(&topo, &old, &plain, &mapped, "cord3"),
        cluster_checks(&topo, &new, &plain, &mapped, "cord4")
    );
    eprintln!("cluster: every check passed ({:?})", started.elapsed());
    plain.shutdown().await.unwrap();
    mapped.shutdown().await.unwrap();
}

/// A `redisson.yaml` naming `codec` (or none) for a client on `port`, in a file of
/// `map`'s own.
fn fleet_file(codec: Option<&str>, port: u16, map: &str) -> std::path::PathBuf {
    let codec = codec
        .map(|class| format!("codec: !<{class}> {{}}\n"))
        .unwrap_or_default();
    let yaml = format!(
        "{codec}lockWatchdogTimeout: {WATCHDOG_MS}\nthreads: 16\nsingleServerConfig:\n  \
         address: \"redis://127.0.0.1:{port}\"\n  connectionPoolSize: 8\n"
    );
    let path = std::env::temp_dir().join(format!(
        "redisson-lock-codec-{}-{port}-{map}-{}.yaml",
        std::process::id(),
        class_word(&codec)
    ));
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A file-name word for a `codec:` line: its class's simple name, `none` without one.
fn class_word(codec_line: &str) -> &str {
    codec_line
        .rsplit('.')
        .next()
        .and_then(|tail| tail.split('>').next())
        .filter(|word| !word.is_empty())
        .unwrap_or("none")
}

/// The first key `o-<n>` whose lock in `map` is named without a `/` under every codec in
/// `codecs` (the driver reads a name with `/` as an alias's).
fn key_without_slash(client: &LockClient, map: &str, codecs: &[JavaCodec]) -> String {
    (1..1000)
        .map(|n| format!("o-{n}"))
        .find(|key| {
            codecs.iter().all(|codec| {
                let lock = client.map_with_codec(map, *codec).get_lock(key.as_str());
                !lock.unwrap().raw_name().contains('/')
            })
        })
        .unwrap()
}

/// One version's checks of `client.map(..)` / `client.set(..)` on clients built from a
/// `redisson.yaml` per codec: the names are Java's, and Java's hold makes the crate wait
/// until Java's unlock wakes it.
async fn fleet_codec_checks(topo: &Topo, java: &JavaClient, port: u16, map: &str) -> usize {
    let json = JavaCodec::JsonJackson {
        uuids: redisson_lock::codec::JsonUuids::Unknown,
    };
    let mut checked = 0;
    for (class, codec, word) in [
        (None, JavaCodec::Kryo5, "kryo5"),
        (
            Some("org.redisson.codec.Kryo5Codec"),
            JavaCodec::Kryo5,
            "kryo5",
        ),
        (
            Some("org.redisson.client.codec.StringCodec"),
            JavaCodec::String,
            "string",
        ),
        (Some("org.redisson.codec.JsonJacksonCodec"), json, "json"),
    ] {
        let what = format!("codec {}", class.unwrap_or("none"));
        let path = fleet_file(class, port, map);
        let config = redisson_lock::config::RedissonFile::read(&path)
            .unwrap()
            .build()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(config.codec(), codec, "{what}");
        let client = LockClient::connect(config).await.unwrap();
        let entries = client.map(map);
        assert_eq!(entries.codec(), codec, "{what}");
        // The driver names a StringCodec entry `mapkey:`; another codec's entry lock is
        // Java's plain lock of the raw name `mapobj` answers.
        let key = if word == "string" {
            KEY.to_owned()
        } else {
            key_without_slash(&client, map, &[codec])
        };
        let lock = entries.get_lock(key.as_str()).unwrap();
        let java_raw = java.call(&format!("mapobj {map} {key} lock {word}")).await;
        assert_eq!(
            lock.raw_name(),
            java_raw,
            "Redisson {} {what}",
            java.version()
        );
        let java_name = if word == "string" {
            format!("mapkey:{map}={key}")
        } else {
            java_raw.clone()
        };
        let handle: Arc<dyn DynLock> = Arc::new(lock);
        let entry = EntryLock {
            kind: Kind::Reentrant,
            java_holder: java_name.clone(),
            java_contender: java_name,
            raw: java_raw,
            holder: handle.with_owner(1),
            contender: handle.with_owner(2),
            alias: None,
        };
        entry_lock_cross(
            topo,
            java,
            &client,
            &entry,
            &format!("map entry lock, {what}"),
        )
        .await;
        checked += 1;
        if word == "string" {
            // A set value's lock and a map entry's semaphore, through the same codec.
            let set = client.set(map);
            let set_lock = EntryLock::new(Kind::Reentrant, &set, None);
            let java_raw = java.call(&format!("setobj {map} {KEY} lock")).await;
            assert_eq!(set_lock.raw, java_raw, "{what}");
            entry_lock_cross(
                topo,
                java,
                &client,
                &set_lock,
                "set value lock, StringCodec",
            )
            .await;
            semaphore_cross(topo, java, &entries).await;
            checked += 2;
        }
        client.shutdown().await.unwrap();
    }
    checked
}
