//! `Client::map` / `Client::set` (`EntryObjects`): the handles of a map key's (set
//! value's) lock, fair lock, read-write lock, semaphore, permit-expirable semaphore and
//! latch land on the names Redisson gives them (`EntryObjectName`, checked against real
//! Redisson in tests/java/codec.rs and tests/java/map_entries.rs), with and without a
//! name mapper, through every key form (a value and its codec, `KeyBytes`, a key type of
//! one's own); a codec that cannot write a key is a typed error; the handles are ordinary
//! ones (an entry lock excludes and wakes as any lock does, in Redis under its raw name);
//! the blocking twins name the same keys.

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::codec::{CodecError, JavaCodec};
use redisson_lock::names::{EntryKey, EntryObject, EntryObjectName, KeyBytes};
use redisson_lock::{EntryObjects, Error, PrefixNameMapper};

/// The raw name of every kind of handle `map` gives for `key`, in `EntryObject::ALL`'s
/// order, and their names as given.
fn handle_names(map: &EntryObjects, key: &str) -> Vec<(String, String)> {
    let lock = map.get_lock(key).unwrap();
    let fair = map.get_fair_lock(key).unwrap();
    let rw = map.get_read_write_lock(key).unwrap();
    let sem = map.get_semaphore(key).unwrap();
    let pes = map.get_permit_expirable_semaphore(key).unwrap();
    let latch = map.get_count_down_latch(key).unwrap();
    vec![
        (lock.name().into(), lock.raw_name().into()),
        (fair.name().into(), fair.raw_name().into()),
        (rw.name().into(), rw.raw_name().into()),
        (sem.name().into(), sem.raw_name().into()),
        (pes.name().into(), pes.raw_name().into()),
        (latch.name().into(), latch.raw_name().into()),
    ]
}

/// A key type of the application's own: Java's key is a `Long`.
struct OrderId(i64);

impl EntryKey for OrderId {
    fn encode_with(self, codec: JavaCodec) -> Result<Vec<u8>, CodecError> {
        codec.encode(self.0)
    }
}

#[tokio::test]
async fn handles_land_on_redissons_names_with_and_without_a_mapper() {
    let server = RedisServer::start();
    let plain = server.client().await;
    let prefixed = server
        .client_with(server.config().name_mapper(PrefixNameMapper::new("app1:")))
        .await;

    // Redisson's default codec (Kryo5Codec) unless told otherwise (driver README).
    let map = plain.map("orders");
    assert_eq!(map.codec(), JavaCodec::Kryo5);
    assert_eq!(map.name(), "orders");
    assert_eq!(
        map.get_lock("o-1").unwrap().raw_name(),
        "{orders}:SqBMO/H/ZbaHHTFor61/4A:lock"
    );
    let strings = plain.map_with_codec("orders", JavaCodec::String);
    assert_eq!(
        strings.get_lock("o-1").unwrap().raw_name(),
        "{orders}:SCr6VJrRQp772OGd8PWr8Q:lock"
    );
    assert_eq!(map.with_codec(JavaCodec::String).codec(), JavaCodec::String);
    // Twice mapped with a mapper: `getName()` once, the key twice (driver README).
    let mapped = prefixed.map_with_codec("orders", JavaCodec::String);
    let lock = mapped.get_lock("o-1").unwrap();
    assert_eq!(lock.name(), "{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock");
    assert_eq!(
        lock.raw_name(),
        "app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock"
    );

    for (client, codec) in [
        (&plain, JavaCodec::Kryo5),
        (&plain, JavaCodec::String),
        (&prefixed, JavaCodec::Kryo5),
        (&prefixed, JavaCodec::String),
    ] {
        for key in ["o-1", "", "订单-42"] {
            let names = handle_names(&client.map_with_codec("orders", codec), key);
            let set_names = handle_names(&client.set_with_codec("orders", codec), key);
            assert_eq!(names, set_names, "a set value's objects are the map key's");
            let bytes = codec.encode(key).unwrap();
            for (object, (name, raw)) in EntryObject::ALL.into_iter().zip(&names) {
                let entry = EntryObjectName::with_config("orders", &bytes, object, client.config());
                assert_eq!(
                    (name.as_str(), raw.as_str()),
                    (entry.name(), entry.raw_name())
                );
                assert!(raw.ends_with(&format!(":{object}")), "{raw}");
                let by_bytes = client.map("orders").entry_name(KeyBytes(&bytes), object);
                assert_eq!(by_bytes.unwrap(), entry, "pre-encoded bytes, any codec");
            }
        }
    }

    // Keys of other Java types, and of the application's own.
    let longs = plain.map("stock");
    assert_eq!(
        longs.get_semaphore(OrderId(42)).unwrap().raw_name(),
        longs.get_semaphore(42i64).unwrap().raw_name()
    );
    assert_ne!(
        longs.get_semaphore(42i64).unwrap().raw_name(),
        longs.get_semaphore(42).unwrap().raw_name(),
        "Integer and Long are different keys"
    );
    // A braced map name is its own hash tag (no second pair of braces).
    assert_eq!(
        strings.with_codec(JavaCodec::String).name(),
        "orders",
        "with_codec keeps the map"
    );
    let tagged = plain.map_with_codec("{tag}orders", JavaCodec::String);
    assert_eq!(
        tagged.get_count_down_latch("o-1").unwrap().raw_name(),
        "{tag}orders:SCr6VJrRQp772OGd8PWr8Q:countdownlatch"
    );
    plain.shutdown().await.unwrap();
    prefixed.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_key_the_codec_cannot_write_is_a_typed_error() {
    let server = RedisServer::start();
    let client = server.client().await;
    let strings = client.map_with_codec("orders", JavaCodec::String);
    let error = strings.get_lock(1.5).unwrap_err();
    assert!(
        matches!(
            error,
            CodecError::Unsupported {
                java_class: "java.lang.Double",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(matches!(Error::from(error), Error::InvalidArgument(_)));
    assert!(strings.get_semaphore(1.5).is_err());
    assert!(strings.entry_name(1.5, EntryObject::FairLock).is_err());
    // Kryo5Codec writes a Double byte for byte.
    assert!(client.map("orders").get_lock(1.5).is_ok());
    // `?` in a function returning the crate's Result.
    async fn through_question_mark(map: &EntryObjects) -> redisson_lock::Result<()> {
        map.get_lock(f64::NAN)?.lock().await?;
        Ok(())
    }
    assert!(matches!(
        through_question_mark(&strings).await,
        Err(Error::InvalidArgument(_))
    ));
    client.shutdown().await.unwrap();
}

/// Two clients on one map key: the entry lock excludes and wakes like any lock, and
/// Redis holds it under its raw name with the holder's field; the entry semaphore's
/// permits are at its raw name too.
#[tokio::test]
async fn entry_handles_are_ordinary_handles_on_the_raw_keys() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let (a, b) = (server.client().await, server.client().await);
    let lock_a = a.map("orders").get_lock("o-1").unwrap();
    let lock_b = b.map("orders").get_lock("o-1").unwrap();
    lock_a.lock().await.unwrap();
    let fields = hgetall(&raw, "{orders}:SqBMO/H/ZbaHHTFor61/4A:lock").await;
    assert_eq!(fields.len(), 1);
    assert!(fields[0].0.starts_with(a.id()), "{fields:?}");
    assert!(!lock_b.try_lock().await.unwrap(), "one holder");
    let waiter = tokio::spawn(async move {
        lock_b.lock().await.unwrap();
        lock_b
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished());
    lock_a.unlock().await.unwrap();
    let lock_b = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken by the unlock")
        .unwrap();
    assert!(lock_b.is_held_by_current_task().await.is_ok());
    lock_b.force_unlock().await.unwrap();

    let sem = a.map("orders").get_semaphore("o-1").unwrap();
    assert!(sem.try_set_permits(2).await.unwrap());
    let count: Option<String> = redisson_lock::fred::prelude::KeysInterface::get(
        &raw,
        "{orders}:SqBMO/H/ZbaHHTFor61/4A:semaphore",
    )
    .await
    .unwrap();
    assert_eq!(count.as_deref(), Some("2"));
    let latch = b.set("orders").get_count_down_latch("o-1").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    assert!(exists(&raw, "{orders}:SqBMO/H/ZbaHHTFor61/4A:countdownlatch").await);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[cfg(feature = "blocking")]
#[test]
fn blocking_handles_name_the_same_keys() {
    let server = RedisServer::start();
    let config = || {
        server
            .config()
            .name_mapper(PrefixNameMapper::new("app1:"))
            .build()
            .unwrap()
    };
    let client = redisson_lock::blocking::Client::connect(config()).unwrap();
    let map = client.map_with_codec("orders", JavaCodec::String);
    assert_eq!(map.name(), "orders");
    assert_eq!(map.codec(), JavaCodec::String);
    let key = JavaCodec::String.encode("o-1").unwrap();
    let name = |object| EntryObjectName::with_config("orders", &key, object, &config());
    let lock = map.get_lock("o-1").unwrap();
    assert_eq!(lock.raw_name(), name(EntryObject::Lock).raw_name());
    assert_eq!(
        client
            .set("orders")
            .with_codec(JavaCodec::String)
            .get_fair_lock("o-1")
            .unwrap()
            .raw_name(),
        name(EntryObject::FairLock).raw_name()
    );
    assert_eq!(
        map.get_read_write_lock("o-1")
            .unwrap()
            .write_lock()
            .raw_name(),
        name(EntryObject::ReadWriteLock).raw_name()
    );
    assert_eq!(
        map.get_semaphore("o-1").unwrap().name(),
        name(EntryObject::Semaphore).name()
    );
    assert_eq!(
        map.entry_name("o-1", EntryObject::PermitExpirableSemaphore)
            .unwrap(),
        name(EntryObject::PermitExpirableSemaphore)
    );
    let latch = map.get_count_down_latch("o-1").unwrap();
    assert!(latch.try_set_count(1).unwrap());
    assert!(latch.is_exists().unwrap());
    assert!(
        map.get_permit_expirable_semaphore("o-1")
            .unwrap()
            .try_set_permits(1)
            .unwrap()
    );
    lock.lock().unwrap();
    assert!(lock.is_held_by_current_thread().unwrap());
    lock.unlock().unwrap();
    client.shutdown().unwrap();
}

/// `Client::map` / `Client::set` (async and blocking) take the configuration's codec, as
/// Java's `getMap(name)` takes its `Config.getCodec()`; `map_with_codec` still wins.
#[tokio::test]
async fn map_and_set_take_the_configured_codec() {
    let server = RedisServer::start();
    let string = server.config().codec(JavaCodec::String).build().unwrap();
    assert_eq!(string.codec(), JavaCodec::String);
    let client = redisson_lock::Client::connect(string.clone())
        .await
        .unwrap();
    let strings = "{orders}:SCr6VJrRQp772OGd8PWr8Q:lock";
    assert_eq!(client.map("orders").codec(), JavaCodec::String);
    assert_eq!(
        client.map("orders").get_lock("o-1").unwrap().raw_name(),
        strings
    );
    assert_eq!(
        client.set("orders").get_lock("o-1").unwrap().raw_name(),
        strings
    );
    let kryo = client.map_with_codec("orders", JavaCodec::Kryo5);
    assert_eq!(
        kryo.get_lock("o-1").unwrap().raw_name(),
        "{orders}:SqBMO/H/ZbaHHTFor61/4A:lock"
    );
    client.shutdown().await.unwrap();
    #[cfg(feature = "blocking")]
    {
        let blocking = tokio::task::spawn_blocking(move || {
            let client = redisson_lock::blocking::Client::connect(string).unwrap();
            let name = client
                .map("orders")
                .get_lock("o-1")
                .unwrap()
                .raw_name()
                .to_owned();
            client.shutdown().unwrap();
            name
        });
        assert_eq!(blocking.await.unwrap(), strings);
    }
}
