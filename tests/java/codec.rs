//! Java's codec bytes and the names of a map key's (set value's) objects, against real
//! Redisson 3.23.3 and 4.7.0: every value through `JavaCodec::encode` must give the bytes
//! the driver's `encode` verb answers (`StringCodec`, `Kryo5Codec`, `JsonJacksonCodec`,
//! as map key and as set value), their hash the `hash128` answer, and every
//! `EntryObjectName` the key `mapobj` / `setobj` answer, without and (4.7.0, the driver
//! with `prefix=`) with a name mapper. Then a few objects real Java holds are seen by the
//! crate's handles through `EntryObjectName::name`.
//!
//! The driver splits its lines at whitespace, so a value cannot hold a space, a tab or a
//! line break, cannot be empty, and cannot start or end with a control character (Java's
//! `trim`): those escapes are unit tests (`src/codec/`), the empty key is checked through
//! a lock real Java holds on it.

use crate::support::real_java::{JavaClient, Version};
use crate::support::*;

use rand::{Rng, SeedableRng};
use redisson_lock::codec::Uuid;
use redisson_lock::codec::{CodecError, JavaCodec, JavaValue, JsonUuids};
use redisson_lock::kinds::FasterMulti;
use redisson_lock::names::{EntryObject, EntryObjectName};
use redisson_lock::{NameMapper, PrefixNameMapper};

/// One value as the driver's `encode` verb takes it: its type word and its literal.
#[derive(Clone, Debug)]
struct Case {
    ty: &'static str,
    literal: String,
}

impl Case {
    fn new(ty: &'static str, literal: impl ToString) -> Case {
        Case {
            ty,
            literal: literal.to_string(),
        }
    }

    /// The same value on the Rust side.
    fn value(&self) -> JavaValue<'_> {
        let literal = self.literal.as_str();
        match self.ty {
            "string" => JavaValue::String(literal),
            "int" => JavaValue::Integer(literal.parse().expect(literal)),
            "long" => JavaValue::Long(literal.parse().expect(literal)),
            "uuid" => JavaValue::Uuid(Uuid::parse_str(literal).expect(literal)),
            "bool" => JavaValue::Boolean(literal.parse().expect(literal)),
            "double" => JavaValue::Double(literal.parse().expect(literal)),
            other => panic!("unknown type {other}"),
        }
    }
}

/// The strings: ASCII at every Kryo layout boundary (1 char, 2..32, 33+, flag varints of
/// 1, 2 and 3 bytes), non-ASCII (2-, 3-byte UTF-8, beyond the BMP), controls and the
/// characters JSON escapes, long ones (> 127 bytes).
fn strings() -> Vec<String> {
    let x = |n: usize| "x".repeat(n);
    let mut out: Vec<String> = vec![
        "o-1".into(),
        "a".into(),
        "ab".into(),
        "Jack_001".into(),
        "-".into(),
        "{tag}".into(),
        "x=y".into(),
        "a/b+c:d".into(),
        "é".into(),
        "订单-42".into(),
        "a😀b".into(),
        "😀".into(),
        "Ω≈ç√∫".into(),
        "a\u{2028}b\u{a0}c".into(),
        "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}".into(),
        "a\u{0}b".into(),
        "a\u{1}b\u{8}c\u{1f}d\u{7f}e\"f\\g/h".into(),
        format!("{}é", x(31)),
        "é".repeat(40),
        "订".repeat(50),
        "😀".repeat(40),
        format!("{}😀{}", x(100), "订".repeat(30)),
    ];
    for n in [31, 32, 33, 62, 63, 64, 127, 128, 200, 8190, 8191, 20_000] {
        out.push(x(n));
    }
    out
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = strings()
        .into_iter()
        .map(|s| Case::new("string", s))
        .collect();
    let mut ints: Vec<i32> = vec![0, 7, -7, 123_456_789, -987_654_321, i32::MAX, i32::MIN];
    for bits in [6, 7, 13, 14, 20, 21, 27, 28, 30] {
        let v = 1i32 << bits;
        ints.extend([v, v - 1, -v, -v - 1]);
    }
    cases.extend(ints.into_iter().map(|n| Case::new("int", n)));
    let mut longs: Vec<i64> = vec![0, 42, -42, i64::MAX, i64::MIN, i64::MIN + 1];
    for bits in [
        6, 7, 13, 14, 20, 21, 27, 28, 31, 34, 35, 41, 42, 48, 49, 55, 56, 62,
    ] {
        let v = 1i64 << bits;
        longs.extend([v, v - 1, -v, -v - 1]);
    }
    cases.extend(longs.into_iter().map(|n| Case::new("long", n)));
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut uuids = vec![
        Uuid::nil(),
        Uuid::max(),
        Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap(),
        Uuid::parse_str("80000000-0000-0000-8000-000000000001").unwrap(),
    ];
    uuids.extend((0..6).map(|_| Uuid::from_u128(rng.r#gen())));
    uuids.push(Uuid::new_v4());
    cases.extend(uuids.into_iter().map(|u| Case::new("uuid", u)));
    cases.extend([Case::new("bool", true), Case::new("bool", false)]);
    for d in [
        "0.0",
        "-0.0",
        "1.5",
        "-2.25",
        "0.1",
        "NaN",
        "Infinity",
        "-Infinity",
        "4.9E-324",
        "2.2250738585072014E-308",
        "1.7976931348623157E308",
        "1.23456789E15",
    ] {
        cases.push(Case::new("double", d));
    }
    cases
}

const CODECS: [&str; 3] = ["string", "kryo5", "json"];

/// The Rust codec for the driver's codec word, as the Java side of `version` has it.
fn codec(word: &str, version: Version) -> JavaCodec {
    match word {
        "string" => JavaCodec::String,
        "kryo5" => JavaCodec::Kryo5,
        "json" => JavaCodec::JsonJackson {
            uuids: match version {
                Version::V3_23_3 => JsonUuids::Plain,
                Version::V4_7_0 => JsonUuids::Typed,
            },
        },
        other => panic!("unknown codec {other}"),
    }
}

/// The other JSON flavour than `version`'s.
fn wrong_json(version: Version) -> JavaCodec {
    JavaCodec::JsonJackson {
        uuids: match version {
            Version::V3_23_3 => JsonUuids::Typed,
            Version::V4_7_0 => JsonUuids::Plain,
        },
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What one version's checks found.
#[derive(Debug, Default)]
struct Tally {
    bytes: usize,
    refused: usize,
    hashes: usize,
    names: usize,
    mapped_names: usize,
    mismatches: Vec<String>,
    /// Mismatches by verb and its first two words (`encode kryo5 mapkey long`: `encode
    /// kryo5 mapkey`, the type is the fourth word), to see at once what broke.
    by_kind: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn check(&mut self, what: String, line: &str, ours: &str, java: &str) -> bool {
        if ours != java {
            let cut = |s: &str| s.chars().take(160).collect::<String>();
            let kind: Vec<&str> = line.split(' ').take(4).collect();
            let kind = match kind[0] {
                "encode" => kind.join(" "),
                verb => format!("{verb} ... {}", line.split(' ').nth(3).unwrap_or("")),
            };
            *self.by_kind.entry(kind).or_default() += 1;
            self.mismatches
                .push(format!("{what}: crate {} != Java {}", cut(ours), cut(java)));
            return false;
        }
        true
    }
}

/// Bytes and hashes: every case × codec × role.
async fn check_bytes(java: &JavaClient, tally: &mut Tally) {
    let version = java.version();
    let mut hashed = std::collections::BTreeSet::new();
    for case in cases() {
        for word in CODECS {
            let ours = codec(word, version).encode(case.value());
            for role in ["mapkey", "value"] {
                let line = format!("encode {word} {role} {} {}", case.ty, case.literal);
                let answer = java.call(&line).await;
                let what = format!("Redisson {version} `{}`", cut_line(&line));
                match &ours {
                    Ok(bytes) => {
                        if tally.check(what, &line, &hex(bytes), &answer) {
                            tally.bytes += 1;
                        }
                        hashed.insert(bytes.clone());
                    }
                    Err(CodecError::Unsupported { .. })
                        if case.ty == "double" && word != "kryo5" =>
                    {
                        // Java writes Double.toString text; the crate refuses, typed.
                        assert!(!answer.starts_with("ERR"), "{what}: {answer}");
                        tally.refused += 1;
                    }
                    Err(e) => tally.mismatches.push(format!("{what}: crate refused: {e}")),
                }
            }
            if word == "json" && case.ty == "uuid" {
                // The other Redisson series' bytes are not this one's.
                let other = hex(&wrong_json(version).encode(case.value()).unwrap());
                let answer = java
                    .call(&format!("encode json mapkey uuid {}", case.literal))
                    .await;
                assert_ne!(
                    other, answer,
                    "Redisson {version}: JSON UUID flavours alike"
                );
            }
        }
    }
    hashed.insert(Vec::new());
    for bytes in hashed {
        let arg = if bytes.is_empty() {
            "-".into()
        } else {
            hex(&bytes)
        };
        let line = format!("hash128 {arg}");
        let answer = java.call(&line).await;
        let what = format!("Redisson {version} `hash128 {}`", cut_line(&arg));
        if tally.check(what, &line, &FasterMulti::field_id(&bytes), &answer) {
            tally.hashes += 1;
        }
    }
}

fn cut_line(line: &str) -> String {
    if line.chars().count() > 90 {
        format!("{}…", line.chars().take(90).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// The string keys of the name checks (the verbs `mapobj` / `setobj` take strings).
fn name_keys() -> Vec<String> {
    let all = strings();
    let picks = [
        "o-1",
        "a",
        "Jack_001",
        "-",
        "{tag}",
        "x=y",
        "é",
        "订单-42",
        "a😀b",
        "Ω≈ç√∫",
    ];
    let mut keys: Vec<String> = picks.iter().map(|s| s.to_string()).collect();
    keys.extend(all.into_iter().filter(|s| s.len() > 127 && s.len() < 1000));
    keys
}

const MAPS: [&str; 5] = ["orders", "{tag}orders", "a}b", "a{b}c", "订单:1"];
/// The maps of the checks with a name mapper: with and without a `{` of their own.
const MAPPED_MAPS: [&str; 3] = ["orders", "{tag}orders", "订单:1"];

/// Names: map and set, every object, codec, key and map name; with `alias` the driver's
/// client whose mapper is `mapper`.
async fn check_names(java: &JavaClient, tally: &mut Tally, alias: Option<(&str, &dyn NameMapper)>) {
    let version = java.version();
    let maps: &[&str] = if alias.is_some() { &MAPPED_MAPS } else { &MAPS };
    for &map in maps {
        for key in name_keys() {
            for word in CODECS {
                let bytes = codec(word, version).encode(key.as_str()).unwrap();
                for object in EntryObject::ALL {
                    let ours = match alias {
                        None => EntryObjectName::new(map, &bytes, object),
                        Some((_, mapper)) => EntryObjectName::mapped(map, &bytes, object, mapper),
                    };
                    if let Some((_, mapper)) = alias {
                        // The contract: a handle maps `name()` once and lands on the key.
                        assert_eq!(mapper.map(ours.name()), ours.raw_name());
                    } else {
                        assert_eq!(ours.name(), ours.raw_name());
                    }
                    for verb in ["mapobj", "setobj"] {
                        let target = match alias {
                            None => map.to_owned(),
                            Some((alias, _)) => format!("{alias}/{map}"),
                        };
                        let line = format!("{verb} {target} {key} {object} {word}");
                        let answer = java.call(&line).await;
                        let what = format!("Redisson {version} `{}`", cut_line(&line));
                        if tally.check(what, &line, ours.raw_name(), &answer) {
                            if alias.is_some() {
                                tally.mapped_names += 1;
                            } else {
                                tally.names += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

async fn check_version(java: &JavaClient, url: &str) -> Tally {
    let mut tally = Tally::default();
    check_bytes(java, &mut tally).await;
    check_names(java, &mut tally, None).await;
    if java.version() == Version::V4_7_0 {
        // 3.23.3's driver has no `prefix=`; Redisson 3.23.3 builds these names alike
        // (README), which the crate cannot check here.
        for (alias, prefix) in [("jp", "app1:"), ("jb", "{app}:")] {
            let answer = java
                .call(&format!("client {alias} {url} prefix={prefix}"))
                .await;
            assert!(answer.starts_with("OK "), "{answer}");
            let mapper = PrefixNameMapper::new(prefix);
            check_names(java, &mut tally, Some((alias, &mapper))).await;
        }
    }
    tally
}

/// One pair of JVMs for everything: bytes, hashes and names first, then the objects real
/// Java holds seen through the crate's handles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn codec_bytes_and_entry_names_match_real_redisson() {
    let server = RedisServer::start();
    let url = server.url();
    let [old, new] = JavaClient::both(&url).await;
    let started = std::time::Instant::now();
    let (old_tally, new_tally) = tokio::join!(check_version(&old, &url), check_version(&new, &url));
    let mut failures = Vec::new();
    for (java, tally) in [(&old, &old_tally), (&new, &new_tally)] {
        eprintln!(
            "Redisson {}: {} byte strings equal, {} doubles refused (Java writes text), {} \
             hashes equal, {} names equal, {} mapped names equal ({:?})",
            java.version(),
            tally.bytes,
            tally.refused,
            tally.hashes,
            tally.names,
            tally.mapped_names,
            started.elapsed()
        );
        if !tally.mismatches.is_empty() {
            failures.push(format!(
                "Redisson {}: {} mismatches {:?}, first ones:\n{}",
                java.version(),
                tally.mismatches.len(),
                tally.by_kind,
                tally.mismatches[..tally.mismatches.len().min(12)].join("\n")
            ));
        }
        assert!(tally.bytes > 0 && tally.hashes > 0 && tally.names > 0);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(new_tally.mapped_names > 0);

    handles_see_java_objects(&server, &old, &new).await;
}

/// Objects real Java holds on map keys, seen through the crate's handles given
/// `EntryObjectName::name`: the empty key (which the `encode` verb cannot send), a
/// non-ASCII key, and with a name mapper (4.7.0's `jp` client, prefix `app1:`) the lock
/// and a semaphore.
async fn handles_see_java_objects(server: &RedisServer, old: &JavaClient, new: &JavaClient) {
    let raw = server.raw().await;
    let plain = server.client().await;
    let prefixed = server
        .client_with(server.config().name_mapper(PrefixNameMapper::new("app1:")))
        .await;
    // The same `jp` client again (`check_version` made it): the driver answers OK.
    let answer = new
        .call(&format!("client jp {} prefix=app1:", server.url()))
        .await;
    assert!(answer.starts_with("OK "), "{answer}");

    for java in [old, new] {
        let version = java.version();
        let map = format!("orders-{}", version.as_str().replace('.', "_"));
        for key in ["", "订单-42"] {
            java.ok(&format!("lock mapkey:{map}={key} -1 A")).await;
            let entry = EntryObjectName::with_config(
                &map,
                &JavaCodec::String.encode(key).unwrap(),
                EntryObject::Lock,
                plain.config(),
            );
            let lock = plain.get_lock(entry.name());
            assert_eq!(lock.raw_name(), entry.raw_name());
            assert!(
                lock.is_locked().await.unwrap(),
                "Redisson {version} key {key:?}"
            );
            let fields = hgetall(&raw, entry.raw_name()).await;
            assert_eq!(
                fields,
                vec![(java.field("A").await, "1".to_owned())],
                "Redisson {version}: the hash of key {key:?}"
            );
            java.ok(&format!("unlock mapkey:{map}={key} A")).await;
            assert!(!lock.is_locked().await.unwrap());
        }
    }

    // With a prefix mapper: Java's `jp` client (prefix app1:) and the crate's `prefixed`.
    let key = JavaCodec::String.encode("o-1").unwrap();
    new.ok("lock jp/mapkey:orders=o-1 -1 A").await;
    let entry = EntryObjectName::with_config("orders", &key, EntryObject::Lock, prefixed.config());
    assert_eq!(
        entry.raw_name(),
        "app1:{app1:orders}:SCr6VJrRQp772OGd8PWr8Q:lock"
    );
    let lock = prefixed.get_lock(entry.name());
    assert_eq!(lock.raw_name(), entry.raw_name());
    assert!(lock.is_locked().await.unwrap());
    // Mapped once too few or once too many, a handle names another key.
    assert!(!plain.get_lock(entry.name()).is_locked().await.unwrap());
    assert!(
        !prefixed
            .get_lock(entry.raw_name())
            .is_locked()
            .await
            .unwrap()
    );
    new.ok("unlock jp/mapkey:orders=o-1 A").await;

    assert_eq!(new.call("semset jp/mapkey:orders=o-1 3").await, "true");
    let entry =
        EntryObjectName::with_config("orders", &key, EntryObject::Semaphore, prefixed.config());
    let semaphore = prefixed.get_semaphore(entry.name());
    assert_eq!(semaphore.raw_name(), entry.raw_name());
    assert_eq!(semaphore.available_permits().await.unwrap(), 3);

    // Every kind's handle lands on the key Java names.
    for object in EntryObject::ALL {
        let entry = EntryObjectName::with_config("orders", &key, object, prefixed.config());
        let java_key = new.call(&format!("mapobj jp/orders o-1 {object}")).await;
        let handle_key = match object {
            EntryObject::Lock => prefixed.get_lock(entry.name()).raw_name().to_owned(),
            EntryObject::FairLock => prefixed.get_fair_lock(entry.name()).raw_name().to_owned(),
            EntryObject::ReadWriteLock => prefixed
                .get_read_write_lock(entry.name())
                .raw_name()
                .to_owned(),
            EntryObject::Semaphore => prefixed.get_semaphore(entry.name()).raw_name().to_owned(),
            EntryObject::PermitExpirableSemaphore => prefixed
                .get_permit_expirable_semaphore(entry.name())
                .raw_name()
                .to_owned(),
            EntryObject::CountDownLatch => prefixed
                .get_count_down_latch(entry.name())
                .raw_name()
                .to_owned(),
            other => panic!("new kind {other}"),
        };
        assert_eq!(handle_key, java_key, "{object}");
    }
    plain.shutdown().await.unwrap();
    prefixed.shutdown().await.unwrap();
}
