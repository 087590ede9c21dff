//! The faster multi-lock (`RedissonFasterMultiLock`, protocol §14.3) against real
//! `redis-server`s: field ids against Redisson 4.7.0's own vectors, the raw group hash
//! after each step, a Java client (its §14.3 scripts sent with raw `EVAL`) and this crate
//! excluding each other, overlapping value sets, cancel safety, and the watchdog renewing
//! every value of every owner.

use crate::support;
use support::*;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use redisson_lock::fred::prelude::*;
use redisson_lock::kinds::FasterMulti;
use redisson_lock::{Client as LockClient, Error, FasterMultiLock, LockOwner, PrefixNameMapper};

// ---- helpers ----------------------------------------------------------------------------

const J: &str = "Jack_001";
const M: &str = "Mary_002";
const B: &str = "Bob_003";

fn id(value: &str) -> String {
    FasterMulti::field_id(value)
}

fn ln(client: &LockClient, owner: LockOwner) -> String {
    format!("{}:{owner}", client.id())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// The group hash as a map.
async fn group(raw: &Client, name: &str) -> HashMap<String, String> {
    hgetall(raw, name).await.into_iter().collect()
}

/// Whether, within 5 s, every `expire_time` field of the group hash lies more than
/// `lease` (and 50 ms) after `since_ms`: each value was renewed after `since_ms`.
async fn deadlines_renewed_after(raw: &Client, name: &str, since_ms: i64, lease: Duration) -> bool {
    let lease = lease.as_millis() as i64;
    support::eventually(Duration::from_secs(5), || async {
        let hash = group(raw, name).await;
        let deadlines: Vec<i64> = hash
            .iter()
            .filter(|(field, _)| field.ends_with(":expire_time"))
            .map(|(_, deadline)| deadline.parse().expect("a decimal deadline"))
            .collect();
        !deadlines.is_empty() && deadlines.iter().all(|d| *d > since_ms + lease + 50)
    })
    .await
}

/// Asserts the three fields of `value` held by `owner` with `count`, and a deadline
/// `lease_ms` after about `at`.
fn assert_held(
    hash: &HashMap<String, String>,
    value: &str,
    owner: &str,
    count: u32,
    at: i64,
    lease_ms: i64,
) {
    let f = id(value);
    assert_eq!(
        hash.get(&f).map(String::as_str),
        Some(owner),
        "{value}'s owner"
    );
    assert_eq!(
        hash.get(&format!("{f}:{owner}:lock_count")),
        Some(&count.to_string()),
        "{value}'s count"
    );
    let deadline: i64 = hash
        .get(&format!("{f}:{owner}:expire_time"))
        .expect("an expire_time field")
        .parse()
        .expect("a decimal deadline");
    assert!(
        (at + lease_ms - 50..=now_ms() + lease_ms).contains(&deadline),
        "{value}'s deadline {deadline} is not now + {lease_ms}"
    );
}

// Redisson's scripts (protocol §14.3.3 and §14.3.5), as a Java client sends them: written
// from the protocol's pseudo-code, with Redisson's argument order.

const JAVA_ACQUIRE: &str = r#"
local existed = redis.call('exists', KEYS[1]) == 1
if existed then
    local latest = -1
    for i = 4, #ARGV do
        local owner = redis.call('hget', KEYS[1], ARGV[i])
        if owner and owner ~= ARGV[3] then
            local e = redis.call('hget', KEYS[1], ARGV[i] .. ':' .. owner .. ':expire_time')
            if e and tonumber(e) > tonumber(ARGV[2]) and tonumber(e) > latest then
                latest = tonumber(e)
            end
        end
    end
    if latest ~= -1 then return latest - tonumber(ARGV[2]) end
end
local deadline = tonumber(ARGV[2]) + tonumber(ARGV[1])
for i = 4, #ARGV do
    redis.call('hset', KEYS[1], ARGV[i], ARGV[3])
    local ef = ARGV[i] .. ':' .. ARGV[3] .. ':expire_time'
    local e = redis.call('hget', KEYS[1], ef)
    if e == false or tonumber(e) < deadline then redis.call('hset', KEYS[1], ef, deadline) end
    redis.call('hincrby', KEYS[1], ARGV[i] .. ':' .. ARGV[3] .. ':lock_count', 1)
end
if existed then
    local t = redis.call('pttl', KEYS[1])
    if t > 0 and tonumber(ARGV[1]) > t then redis.call('pexpire', KEYS[1], ARGV[1]) end
else
    redis.call('pexpire', KEYS[1], ARGV[1])
end
return nil
"#;

const JAVA_UNLOCK: &str = r#"
local v = redis.call('get', KEYS[3])
if v then return tonumber(v) end
if redis.call('exists', KEYS[1]) == 0 then
    redis.call(ARGV[4], KEYS[2], ARGV[2])
    return nil
end
local failed = false
local all = true
local extend_to = tonumber(ARGV[3]) + tonumber(ARGV[6])
for i = 7, #ARGV do
    local ef = ARGV[i] .. ':' .. ARGV[1] .. ':expire_time'
    local cf = ARGV[i] .. ':' .. ARGV[1] .. ':lock_count'
    local e = redis.call('hget', KEYS[1], ef)
    if e and tonumber(e) >= tonumber(ARGV[6]) then
        if redis.call('hincrby', KEYS[1], cf, -1) <= 0 then
            redis.call('hdel', KEYS[1], ef)
            redis.call('hdel', KEYS[1], cf)
            redis.call('hdel', KEYS[1], ARGV[i])
        else
            if tonumber(e) < extend_to then redis.call('hset', KEYS[1], ef, extend_to) end
            all = false
        end
    else
        failed = true
        all = false
    end
end
if failed then return nil end
redis.call(ARGV[4], KEYS[2], ARGV[2])
if all then
    redis.call('set', KEYS[3], '1', 'px', ARGV[5])
    return 1
end
redis.call('set', KEYS[3], '0', 'px', ARGV[5])
if tonumber(ARGV[3]) > redis.call('pttl', KEYS[1]) then redis.call('pexpire', KEYS[1], ARGV[3]) end
return 0
"#;

/// The Java thread's owner, `<uuid>:<thread id>`.
const JAVA_LN: &str = "62e06509-1919-4ddb-95ff-ac3593afa343:1";

/// A Java `lock(lease)` attempt on `values`: nil (taken) or the ms to wait.
async fn java_acquire(raw: &Client, group: &str, lease_ms: i64, values: &[&str]) -> Option<i64> {
    let mut args = vec![
        Value::from(lease_ms),
        Value::from(now_ms()),
        Value::from(JAVA_LN),
    ];
    args.extend(values.iter().map(|v| Value::from(id(v))));
    raw.eval(JAVA_ACQUIRE, vec![group.to_owned()], args)
        .await
        .expect("java acquire")
}

/// A Java `unlock()` on `values`: 1, 0 or nil.
async fn java_unlock(raw: &Client, group: &str, values: &[&str]) -> Option<i64> {
    let mut args = vec![
        Value::from(JAVA_LN),
        Value::from("0"),
        Value::from(30_000),
        Value::from("PUBLISH"),
        Value::from(60_000),
        Value::from(now_ms()),
    ];
    args.extend(values.iter().map(|v| Value::from(id(v))));
    // A request id of its own per call, as Java's: one made of the clock repeated the
    // answer of an earlier unlock in the same millisecond (its latch).
    let latch = format!(
        "redisson_unlock_latch:{{{group}}}:{}",
        uuid::Uuid::new_v4().simple()
    );
    raw.eval(
        JAVA_UNLOCK,
        vec![group.to_owned(), channel(group), latch],
        args,
    )
    .await
    .expect("java unlock")
}

// ---- 1. field ids: Redisson 4.7.0's own `Hash.hash128toBase64` -------------------------

/// `faster-multilock-vectors.md` §1: UTF-8 bytes (`StringCodec`).
const UTF8_VECTORS: &[(&str, &str)] = &[
    ("", "t6rZwibGo2uy1OSmNVe8pg"),
    ("a", "qwvAS12pR0CgRitaypEjUw"),
    ("Jack_001", "7pNoDdizVy2xY792MaFv+w"),
    ("Mary_002", "kIX2DFOX4IWct7G7K6tV9A"),
    ("order:1", "VohkkMHNiudvq57uOYf+SQ"),
    ("order:2", "wsdHIECfzxNBmapZ564z4Q"),
    ("订单-42", "G3qeKUayL7kyniBufJ0aug"),
];

/// Rows 8–13 of §1: (letter or digits, repeat, field).
const REPEATED_VECTORS: &[(&str, usize, &str)] = &[
    ("x", 31, "1omFCAk+GBQpap37/rKLeQ"),
    ("x", 32, "oog9enxT89k7nsZ/uTkmfw"),
    ("x", 33, "cJuuy+d4tHkkrsjaNAk7Bw"),
    ("x", 64, "Yf7BT79iRm/v41FnUYzF2Q"),
    ("x", 100, "xLlhhuMBl4Bc0rU9DXx5Mw"),
    ("0123456789", 10, "PGTC5lRDfW8pXFXiC1Jzbg"),
];

/// §2: the Kryo5Codec bytes of the same strings (hex), and their fields.
fn kryo_vectors() -> Vec<(Vec<u8>, &'static str)> {
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    };
    let x = |n: usize| vec![b'x'; n];
    let cat = |parts: &[&[u8]]| parts.concat();
    vec![
        (hex("0381"), "8kZ0F42HzoQfW3jDxQ6f4g"),
        (hex("038261"), "Jon6GCcO+0QSJkhre5wXYA"),
        (hex("034a61636b5f3030b1"), "DScHoUUqdQJ9J7Ux220rcQ"),
        (hex("034d6172795f3030b2"), "+ZZbsYCpCEvhG9irFt/3NQ"),
        (hex("036f726465723ab1"), "gvGEhXIvnlUlbBHY8YXUOA"),
        (hex("036f726465723ab2"), "n0V3+4cerPW3sn5YQdAKzg"),
        (hex("0386e8aea2e58d952d3432"), "P3qB9uYMeVqyGQaC4VqirQ"),
        (cat(&[&[0x03], &x(30), &[0xf8]]), "BzTMKSuziXWGj9li2P2Lsg"),
        (cat(&[&[0x03], &x(31), &[0xf8]]), "0UUk8uVNEOXl9hsMj/fNEQ"),
        (cat(&[&[0x03, 0xa2], &x(33)]), "eJfv05+bxLxhUVWN6o5g5Q"),
        (
            cat(&[&[0x03, 0xc1, 0x01], &x(64)]),
            "Bekkp6AkMLV+JUofb7pueQ",
        ),
        (
            cat(&[&[0x03, 0xe5, 0x01], &x(100)]),
            "XSHFXVYtfpU5h2jFO5b1jw",
        ),
        (
            cat(&[&[0x03, 0xe5, 0x01], "0123456789".repeat(10).as_bytes()]),
            "o3aOzcpqcTXGxogEtpK+8w",
        ),
    ]
}

#[test]
fn field_ids_are_redissons() {
    for (input, field) in UTF8_VECTORS {
        assert_eq!(&FasterMulti::field_id(input), field, "{input:?}");
    }
    for (unit, times, field) in REPEATED_VECTORS {
        let input = unit.repeat(*times);
        assert_eq!(&FasterMulti::field_id(&input), field, "{unit} x {times}");
    }
    for (bytes, field) in kryo_vectors() {
        assert_eq!(FasterMulti::field_id(&bytes), field, "{bytes:02x?}");
    }
}

#[test]
fn highway_reproduces_the_reference_vectors() {
    // Google's reference 128-bit vectors (key bytes 00..1f, data 00 01 02 ...), as quoted
    // in the vectors file: lengths 0 and 33.
    use highway::{HighwayHash, HighwayHasher, Key};
    let mut key = [0u64; 4];
    for (i, word) in key.iter_mut().enumerate() {
        let bytes: Vec<u8> = (0..8).map(|b| (i * 8 + b) as u8).collect();
        *word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
    }
    let data: Vec<u8> = (0..64u8).collect();
    let hash = |len: usize| HighwayHasher::new(Key(key)).hash128(&data[..len]);
    assert_eq!(hash(0), [0x0FED268F9D8FFEC7, 0x33565E767F093E6F]);
    assert_eq!(hash(33), [0x111678AFE0C6C36C, 0xF958B59DE5A2849D]);
}

#[test]
fn the_shared_vectors_file_agrees_when_present() {
    // The contract's own table, when the workspace has it beside the crate.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/faster-multilock-vectors.md"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut checked = 0;
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | # | `"Jack_001"` | 8 | `7pNoDdizVy2xY792MaFv+w` | ...
        if cells.len() >= 6 && cells[1].parse::<u32>().is_ok() && cells[2].starts_with("`\"") {
            let input = cells[2].trim_matches('`').trim_matches('"');
            if cells[3].parse::<usize>().is_ok() && !cells[2].contains('×') {
                let field = cells[4].trim_matches('`');
                assert_eq!(FasterMulti::field_id(input), field, "{input:?}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 7, "only {checked} rows read from {path}");
}

// ---- 2. the raw hash after each step ----------------------------------------------------

#[tokio::test]
async fn raw_hash_after_each_step_is_the_protocols() {
    let Bed(server, client, raw, name) = Bed::new("fml-raw").await;
    let (_subscriber, mut rx) = listen(&server, &channel(&name)).await;
    let owner = LockOwner::from_raw(7);
    let both = client
        .get_multi_lock(&name, [J, M, J])
        .unwrap()
        .with_owner(owner);
    let me = ln(&client, owner);
    assert_eq!(both.kind().field_ids(), [id(J), id(M)]);
    assert_eq!(both.name(), name);

    // lock(): three fields per value, deadline now + 30 s, key TTL 30 s.
    let at = now_ms();
    both.lock().await.unwrap();
    let hash = group(&raw, &name).await;
    assert_eq!(hash.len(), 6, "{hash:?}");
    assert_held(&hash, J, &me, 1, at, 30_000);
    assert_held(&hash, M, &me, 1, at, 30_000);
    assert!((29_000..=30_000).contains(&pttl(&raw, &name).await));
    assert!(both.is_locked().await.unwrap());
    assert!(both.is_held_by(owner).await.unwrap());
    assert!(!both.is_held_by(LockOwner::from_raw(8)).await.unwrap());
    assert_eq!(both.hold_count().await.unwrap(), 1);
    let ttl = both.remain_time_to_live().await.unwrap().unwrap();
    assert!(ttl > Duration::from_secs(29) && ttl <= Duration::from_secs(30));

    // Re-entry on a subset through another object: M's count 2.
    let mary = client.get_multi_lock(&name, [M]).unwrap().with_owner(owner);
    let at = now_ms();
    mary.lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let hash = group(&raw, &name).await;
    assert_held(&hash, M, &me, 2, at, 60_000);
    assert!(
        pttl(&raw, &name).await > 59_000,
        "TTL raised to the longer lease"
    );
    assert_eq!(both.hold_count().await.unwrap(), 1, "the smallest count");
    assert_eq!(mary.hold_count().await.unwrap(), 2);

    // unlock {J, M}: J released, M still held (count 1): still held, no error; `0`
    // published all the same.
    both.unlock().await.unwrap();
    let hash = group(&raw, &name).await;
    assert_eq!(hash.len(), 3, "{hash:?}");
    assert!(!hash.contains_key(&id(J)));
    assert_eq!(
        hash.get(&format!("{}:{me}:lock_count", id(M))).unwrap(),
        "1"
    );
    assert!(!both.is_held_by(owner).await.unwrap());
    assert!(mary.is_held_by(owner).await.unwrap());
    let seen = messages(&mut rx, Duration::from_secs(2)).await;
    assert_eq!(seen, vec![(channel(&name), b"0".to_vec())]);

    // unlock {M}: the hash is gone, `0` published.
    mary.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);
    assert_eq!(
        messages(&mut rx, Duration::from_secs(2)).await,
        vec![(channel(&name), b"0".to_vec())]
    );
    assert!(!both.is_locked().await.unwrap());
    assert_eq!(both.remain_time_to_live().await.unwrap(), None);

    // Another unlock: not the owner (Redisson's IMSE), nothing published.
    assert!(matches!(both.unlock().await, Err(Error::NotOwner { .. })));
    assert!(drain(&mut rx, Duration::from_millis(300)).await.is_empty());

    // A lease: deadline now + 5 s and TTL 5 s; force_unlock clears every value.
    let at = now_ms();
    both.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    assert_held(&group(&raw, &name).await, J, &me, 1, at, 5_000);
    assert!((4_000..=5_000).contains(&pttl(&raw, &name).await));
    assert!(both.force_unlock().await.unwrap());
    assert!(!exists(&raw, &name).await);
    assert!(!both.force_unlock().await.unwrap());
}

#[tokio::test]
async fn empty_values_are_refused_and_the_group_name_is_mapped() {
    let Bed(server, client, raw, name) = Bed::new("fml-names").await;
    assert!(matches!(
        client.get_multi_lock(&name, Vec::<String>::new()),
        Err(Error::InvalidArgument(_))
    ));
    // Raw bytes (e.g. a Kryo encoding) work as values too.
    let lock = client
        .get_multi_lock(&name, [vec![0x03u8, 0x81], b"a".to_vec()])
        .unwrap();
    assert_eq!(
        lock.kind().field_ids(),
        ["8kZ0F42HzoQfW3jDxQ6f4g", "qwvAS12pR0CgRitaypEjUw"]
    );

    let mapped = server
        .client_with(server.config().name_mapper(PrefixNameMapper::new("app1:")))
        .await;
    let lock = mapped.get_multi_lock(&name, [J]).unwrap();
    assert_eq!(lock.name(), name);
    assert_eq!(lock.raw_name(), format!("app1:{name}"));
    lock.lock().await.unwrap();
    assert!(exists(&raw, &format!("app1:{name}")).await);
    assert!(!exists(&raw, &name).await);
    lock.unlock().await.unwrap();
    mapped.shutdown().await.unwrap();
}

// ---- 3. a Java client and this crate ------------------------------------------------------

#[tokio::test]
async fn java_and_rust_exclude_each_other_and_wake_each_other() {
    let Bed(_server, client, raw, name) = Bed::new("fml-java").await;

    // Java holds {J, M}: we cannot take {M, B}, but {B} alone is free.
    assert_eq!(java_acquire(&raw, &name, 30_000, &[J, M]).await, None);
    let overlapping = client.get_multi_lock(&name, [M, B]).unwrap();
    assert!(!overlapping.try_lock().await.unwrap());
    let bob = client.get_multi_lock(&name, [B]).unwrap();
    assert!(bob.try_lock().await.unwrap());
    bob.unlock().await.unwrap();

    // A waiter wakes on Java's unlock message, long before Java's 30 s deadline.
    let waiter = {
        let lock = overlapping.clone();
        tokio::spawn(async move {
            lock.lock().await.unwrap();
            Instant::now()
        })
    };
    assert!(
        waiter_subscribed(&raw, &name).await,
        "the waiter never subscribed"
    );
    assert!(!waiter.is_finished());
    let unlocked = Instant::now();
    assert_eq!(java_unlock(&raw, &name, &[J, M]).await, Some(1));
    let taken = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken by Java's unlock")
        .unwrap();
    assert!(taken.duration_since(unlocked) < Duration::from_secs(2));

    // Now Java waits for us: its acquire answers the ms until our deadline.
    let ttl = java_acquire(&raw, &name, 30_000, &[B, J]).await;
    assert!(
        matches!(ttl, Some(ms) if (29_000..=30_000).contains(&ms)),
        "{ttl:?}"
    );
    // Java's unlock of values it does not hold fails (nil) and leaves ours alone.
    assert_eq!(java_unlock(&raw, &name, &[M]).await, None);
    let (_, mut rx) = listen(&_server, &channel(&name)).await;
    overlapping
        .with_owner(overlapping.owner())
        .force_unlock()
        .await
        .unwrap();
    assert_eq!(
        messages(&mut rx, Duration::from_secs(2)).await,
        vec![(channel(&name), b"0".to_vec())]
    );
    assert_eq!(java_acquire(&raw, &name, 30_000, &[B, J]).await, None);
    // Java's fields are what ours are: our probes read them.
    let java_view = client.get_multi_lock(&name, [B, J]).unwrap();
    assert!(java_view.is_locked().await.unwrap());
    assert!(!java_view.try_lock().await.unwrap());
    assert_eq!(java_unlock(&raw, &name, &[B, J]).await, Some(1));
    assert!(java_view.try_lock().await.unwrap());
    java_view.unlock().await.unwrap();
}

// ---- 4. mutual exclusion with overlapping value sets --------------------------------------

#[tokio::test]
async fn overlapping_sets_exclude_each_other_disjoint_ones_do_not() {
    let Bed(server, _client, raw, name) = Bed::new("fml-mutex").await;
    // Values 0..4 in a ring: task i locks {i, i+1}; neighbours share a value.
    let values: Vec<String> = (0..4).map(|i| format!("v{i}")).collect();
    let in_use: Arc<Vec<AtomicBool>> = Arc::new((0..4).map(|_| AtomicBool::new(false)).collect());
    let rounds = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..4 {
        // One client per task: each hears every unlock message.
        let client = server.client().await;
        let mine = [i, (i + 1) % 4];
        let lock = client
            .get_multi_lock(&name, mine.iter().map(|&v| values[v].clone()))
            .unwrap();
        let (in_use, rounds) = (in_use.clone(), rounds.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..15 {
                let guard = lock.acquire().await.unwrap();
                for &v in &mine {
                    assert!(
                        !in_use[v].swap(true, Ordering::SeqCst),
                        "value {v} held twice"
                    );
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                for &v in &mine {
                    in_use[v].store(false, Ordering::SeqCst);
                }
                guard.unlock().await.unwrap();
                rounds.fetch_add(1, Ordering::Relaxed);
            }
            client.shutdown().await.unwrap();
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("no waiter stranded")
            .unwrap();
    }
    assert_eq!(rounds.load(Ordering::Relaxed), 60);
    assert!(
        !exists(&raw, &name).await,
        "{:?}",
        hgetall(&raw, &name).await
    );

    // Disjoint sets of one group are independent; the same value in another group too.
    let client = server.client().await;
    let a = client.get_multi_lock(&name, ["v0", "v1"]).unwrap();
    let b = client
        .get_multi_lock(&name, ["v2", "v3"])
        .unwrap()
        .with_owner(LockOwner::from_raw(2));
    let c = client
        .get_multi_lock(&name, ["v1", "v2"])
        .unwrap()
        .with_owner(LockOwner::from_raw(3));
    let other_group = client
        .get_multi_lock(format!("{name}-other"), ["v0"])
        .unwrap()
        .with_owner(LockOwner::from_raw(4));
    assert!(a.try_lock().await.unwrap());
    assert!(b.try_lock().await.unwrap());
    assert!(!c.try_lock().await.unwrap());
    assert!(other_group.try_lock().await.unwrap());
    let started = Instant::now();
    assert!(!c.try_lock_for(Duration::from_millis(300)).await.unwrap());
    assert!(started.elapsed() >= Duration::from_millis(290));
}

// ---- 5. cancel safety ---------------------------------------------------------------------

#[tokio::test]
async fn dropped_acquisitions_leave_nothing_behind() {
    let Bed(_server, client, raw, name) = Bed::new("fml-cancel").await;
    let holder = client
        .get_multi_lock(&name, [J, M])
        .unwrap()
        .with_owner(LockOwner::from_raw(1));
    holder.lock().await.unwrap();

    // A waiter given up by a timeout: no subscription, no fields of its own.
    let waiter = client
        .get_multi_lock(&name, [M, B])
        .unwrap()
        .with_owner(LockOwner::from_raw(2));
    let gave_up = tokio::time::timeout(Duration::from_millis(300), waiter.lock()).await;
    assert!(gave_up.is_err());
    assert!(
        eventually(Duration::from_secs(3), || async {
            client.subscribed_channels() == 0
        })
        .await
    );
    let waiter_ln = ln(&client, LockOwner::from_raw(2));
    assert!(
        !group(&raw, &name)
            .await
            .keys()
            .any(|k| k.contains(&waiter_ln)),
        "the dropped waiter wrote something"
    );
    holder.unlock().await.unwrap();
    assert!(!exists(&raw, &name).await);

    // Acquires dropped after one poll, many times: whatever they took is given back.
    for i in 0..30u64 {
        let lock = client
            .get_multi_lock(&name, [J, M, B])
            .unwrap()
            .with_owner(LockOwner::from_raw(100 + i));
        let mut future = Box::pin(lock.lock());
        let _ = (&mut future).now_or_never();
        drop(future);
        if i % 3 == 0 {
            tokio::task::yield_now().await;
        }
    }
    let empty = eventually(Duration::from_secs(5), || async {
        !exists(&raw, &name).await
    })
    .await;
    assert!(empty, "left behind: {:?}", hgetall(&raw, &name).await);
    let free = client.get_multi_lock(&name, [J, M, B]).unwrap();
    assert!(free.try_lock().await.unwrap());
    free.unlock().await.unwrap();
    assert_eq!(client.renewed_locks(), 0);
}

// ---- 6. the watchdog renews every value of every owner ------------------------------------

#[tokio::test]
async fn the_watchdog_renews_every_value_of_every_owner() {
    const TIMEOUT: Duration = Duration::from_millis(900);
    let Bed(server, client, raw, name) =
        Bed::with_config("fml-watchdog", |c| c.watchdog_timeout(TIMEOUT)).await;
    let other = server.client().await;
    let lock = |values: &[&str], owner: u64| -> FasterMultiLock {
        client
            .get_multi_lock(&name, values.iter().copied())
            .unwrap()
            .with_owner(LockOwner::from_raw(owner))
    };
    // Redisson renews only the first of these (Q7): two owners, and one owner holding
    // two objects of the group.
    let first = lock(&[J], 1);
    let second = lock(&[M], 2);
    let third_a = lock(&[B], 3);
    let third_b = lock(&["Carl_004", B], 3);
    let guard = first.acquire().await.unwrap();
    second.lock().await.unwrap();
    third_a.lock().await.unwrap();
    third_b.lock().await.unwrap();
    assert_eq!(client.renewed_locks(), 3, "one entry per (group, owner)");

    // Every value's deadline renewed (moved past where its acquisition put it).
    let taken = now_ms();
    assert!(
        deadlines_renewed_after(&raw, &name, taken, TIMEOUT).await,
        "not every value was renewed: {:?}",
        group(&raw, &name).await
    );
    for value in [J, M, B, "Carl_004"] {
        let taker = other.get_multi_lock(&name, [value]).unwrap();
        assert!(!taker.try_lock().await.unwrap(), "{value} lapsed");
    }
    assert!(!guard.is_lost());

    // One of the owner's two objects released: its other values still renewed.
    third_a.unlock().await.unwrap();
    let released = now_ms();
    assert!(
        deadlines_renewed_after(&raw, &name, released, TIMEOUT).await,
        "not every value left was renewed: {:?}",
        group(&raw, &name).await
    );
    let carl = other.get_multi_lock(&name, ["Carl_004"]).unwrap();
    assert!(!carl.try_lock().await.unwrap(), "Carl_004 lapsed");
    assert!(third_b.is_held_by(LockOwner::from_raw(3)).await.unwrap());

    // A value taken away (deleted by hand) is a loss: the guard hears it.
    let j_owner = ln(&client, LockOwner::from_raw(1));
    let _: i64 = raw
        .hdel(&name, format!("{}:{j_owner}:expire_time", id(J)))
        .await
        .unwrap();
    let heard = tokio::time::timeout(TIMEOUT * 3, guard.lost()).await;
    assert!(heard.is_ok(), "the loss was not reported");

    second.unlock().await.unwrap();
    third_b.unlock().await.unwrap();
    let leftover = group(&raw, &name).await;
    assert!(
        leftover.keys().all(|k| k.contains(&j_owner) || *k == id(J)),
        "{leftover:?}"
    );
    drop(guard);
    assert!(
        eventually(Duration::from_secs(3), || async {
            client.renewed_locks() == 0
        })
        .await
    );
    other.shutdown().await.unwrap();
}

// ---- 7. a group's last millisecond ----------------------------------------------------------

/// The group's absolute expiry in epoch ms (`PEXPIRETIME`, Redis 7.0+), the server clock,
/// which on this machine is the clock the crate reads for `now`.
async fn expiry_ms(raw: &Client, name: &str) -> i64 {
    raw.custom(
        redisson_lock::fred::types::CustomCommand::new_static(
            "PEXPIRETIME",
            redisson_lock::fred::types::ClusterHash::FirstKey,
            false,
        ),
        vec![name.to_owned()],
    )
    .await
    .expect("PEXPIRETIME")
}

/// Who owns `value` in the group and the group's PTTL, read in one step (two separate
/// reads can straddle the group's expiry and a new owner's write).
async fn owner_and_pttl(raw: &Client, name: &str, value: &str) -> (Option<String>, i64) {
    raw.eval(
        "return {redis.call('hget', KEYS[1], ARGV[1]), redis.call('pttl', KEYS[1])}",
        vec![name.to_owned()],
        vec![id(value)],
    )
    .await
    .expect("owner and PTTL")
}

/// What one round of [`try_at_expiry`] saw: the winner's attempt was sent in `before` and
/// answered in `after` (epoch ms), and the group expired at `expiry` by then.
struct Win {
    before: i64,
    after: i64,
    expiry: i64,
}

impl Win {
    /// The attempt ran in the group's last millisecond: it was sent and answered within
    /// the millisecond the group's key expired after (Redis keeps a key while its expiry
    /// is not past, answering `EXISTS` 1 and `PTTL` 0 in that millisecond).
    fn in_last_ms(&self) -> bool {
        self.before == self.expiry && self.after == self.expiry
    }
}

/// Tries `taker` in a tight loop (single attempts, as many waiters retrying at once)
/// until it answers `true`, starting a few ms before `deadline`; returns the winning
/// attempt's timing.
async fn try_at_expiry(taker: &FasterMultiLock, deadline: i64, expiry: i64) -> Win {
    let start = Instant::now();
    while now_ms() < deadline - 3 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    loop {
        let before = now_ms();
        if taker.try_lock().await.unwrap() {
            return Win {
                before,
                after: now_ms(),
                expiry,
            };
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the group was never free"
        );
    }
}

/// Issue 28: an acquire that answers `true` in the group key's last millisecond must
/// hold what it answered. Redisson's acquire (and the crate's, before the fix) wrote its
/// fields into the expiring key and skipped the `PEXPIRE` (`PTTL` is 0 there), so the key
/// expired a millisecond later with them: the caller believed it held a lock nobody held.
///
/// Each round a holder takes {J, M} with a short lease and a taker on another client
/// retries {M, B} in a tight loop across the holder's expiry; every win is checked in
/// Redis (the taker's fields, a TTL, its unlock accepted). The rounds go on until the
/// window was hit `HITS` times (a win sent and answered within the key's last
/// millisecond), so the test proves it made the window happen.
#[tokio::test]
async fn a_win_in_the_groups_last_millisecond_is_held() {
    const HITS: u32 = 5;
    const LEASE: Duration = Duration::from_millis(30);
    let Bed(server, client, raw, name) = Bed::new("fml-last-ms").await;
    let other = server.client().await;
    let holder = client.get_multi_lock(&name, [J, M]).unwrap();
    let taker = other.get_multi_lock(&name, [M, B]).unwrap();
    let taker_ln = ln(&other, taker.owner());
    let (mut rounds, mut hits, mut wrong) = (0u32, 0u32, Vec::new());
    while hits < HITS && rounds < 400 {
        rounds += 1;
        let _: i64 = raw.del(&name).await.unwrap();
        let sent = now_ms();
        assert!(
            holder
                .try_lock_with_lease(Duration::ZERO, LEASE)
                .await
                .unwrap()
        );
        let expiry = expiry_ms(&raw, &name).await;
        let win = try_at_expiry(&taker, sent + LEASE.as_millis() as i64, expiry).await;
        let (owner, ttl) = owner_and_pttl(&raw, &name, M).await;
        let held = owner.as_ref() == Some(&taker_ln) && ttl > 0;
        if win.in_last_ms() {
            hits += 1;
        }
        if !held {
            wrong.push(format!(
                "round {rounds}: sent {} answered {} expiry {}: PTTL {ttl}, owner {owner:?}",
                win.before, win.after, win.expiry
            ));
            // The crate believes it holds: its unlock is refused, which ends that belief.
            let _ = taker.unlock().await;
        } else {
            taker.unlock().await.unwrap();
        }
    }
    println!("{rounds} rounds, the last millisecond hit {hits} times");
    assert!(
        wrong.is_empty(),
        "{} of {rounds} wins held nothing (the window hit {hits} times):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(
        hits, HITS,
        "the window was hit {hits} times in {rounds} rounds"
    );
    other.shutdown().await.unwrap();
}

/// Issue 28, with Redisson beside the crate: Redisson's own acquire has the flaw (it
/// answers nil in the group's last millisecond and its fields expire a millisecond
/// later). A Java client and the crate retry at the holder's expiry on the same values;
/// Java's phantom wins are counted, and the crate must answer `true` only for what it
/// holds, whether it came first in that millisecond or after Java's phantom.
#[tokio::test]
async fn javas_phantom_wins_never_make_the_crate_answer_wrongly() {
    const LEASE: Duration = Duration::from_millis(30);
    let Bed(server, client, raw, name) = Bed::new("fml-java-last-ms").await;
    let other = server.client().await;
    let holder = client.get_multi_lock(&name, [J, M]).unwrap();
    let taker = other.get_multi_lock(&name, [M, B]).unwrap();
    let taker_ln = ln(&other, taker.owner());
    let (mut rounds, mut phantoms, mut crate_wins, mut wrong) = (0u32, 0u32, 0u32, Vec::new());
    while (phantoms < 2 || rounds < 20) && rounds < 300 {
        rounds += 1;
        let _: i64 = raw.del(&name).await.unwrap();
        let sent = now_ms();
        assert!(
            holder
                .try_lock_with_lease(Duration::ZERO, LEASE)
                .await
                .unwrap()
        );
        let deadline = sent + LEASE.as_millis() as i64;
        while now_ms() < deadline - 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let started = Instant::now();
        // Java: retries until its acquire answers nil, then looks whether it holds.
        let java = async {
            while java_acquire(&raw, &name, 30_000, &[M, B]).await.is_some() {
                assert!(started.elapsed() < Duration::from_secs(5));
            }
            let (owner, ttl) = owner_and_pttl(&raw, &name, M).await;
            let held = owner.as_deref() == Some(JAVA_LN) && ttl > 0;
            if held {
                let unlocked = java_unlock(&raw, &name, &[M, B]).await;
                assert_eq!(unlocked, Some(1), "{:?}", group(&raw, &name).await);
            }
            held
        };
        // The crate: the same, with single attempts.
        let rust = async {
            while !taker.try_lock().await.unwrap() {
                assert!(started.elapsed() < Duration::from_secs(5));
            }
            let (owner, ttl) = owner_and_pttl(&raw, &name, M).await;
            let held = owner.as_ref() == Some(&taker_ln) && ttl > 0;
            let _ = taker.unlock().await;
            (held, ttl, owner)
        };
        let (java_held, (rust_held, ttl, owner)) = tokio::join!(java, rust);
        crate_wins += 1;
        if !java_held {
            phantoms += 1;
        }
        if !rust_held {
            wrong.push(format!("round {rounds}: PTTL {ttl}, owner {owner:?}"));
        }
    }
    println!("{rounds} rounds: Java's phantom wins {phantoms}, the crate's wins {crate_wins}");
    assert!(
        wrong.is_empty(),
        "{} of {crate_wins} crate wins held nothing (Java's phantoms: {phantoms}):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        phantoms >= 2,
        "Java's flaw was hit {phantoms} times in {rounds} rounds"
    );
    other.shutdown().await.unwrap();
}

/// Issue 28: fields left in an expiring group (what a Java acquire in the group's last
/// millisecond writes) name a deadline far beyond the group's own end. A waiter of the
/// crate is not held back by them past the group's expiry: it takes the values within
/// milliseconds of it, not at the phantom deadline.
#[tokio::test]
async fn a_waiter_is_not_held_past_the_groups_expiry_by_fields_that_die_with_it() {
    let Bed(_server, client, raw, name) = Bed::new("fml-phantom-wait").await;
    // Java's fields with a 30 s deadline, in a group that expires in 200 ms.
    assert_eq!(java_acquire(&raw, &name, 30_000, &[M]).await, None);
    let _: bool = raw.pexpire(&name, 200, None).await.unwrap();
    let taker = client.get_multi_lock(&name, [M, B]).unwrap();
    assert!(!taker.try_lock().await.unwrap(), "Java's fields are live");
    let started = Instant::now();
    assert!(taker.try_lock_for(Duration::from_secs(3)).await.unwrap());
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_millis(1_000),
        "waited {waited:?} for a group that expired after 200 ms"
    );
    let hash = group(&raw, &name).await;
    assert_eq!(hash.get(&id(M)), Some(&ln(&client, taker.owner())));
    assert!(pttl(&raw, &name).await > 1_000);
    taker.unlock().await.unwrap();
}

/// Issue 28's audit: at `deadline == now` a value is free, and every script of the kind
/// says so (Redisson's acquire takes it there, while its unlock and `isLocked` still count
/// it held). One millisecond earlier every script counts it held. The scripts run with raw
/// `EVAL` and a chosen `now`, so the millisecond is exact.
#[tokio::test]
async fn every_script_agrees_a_deadline_equal_to_now_is_free() {
    mod lua {
        pub(super) const FASTER_MULTI_IS_LOCKED: &str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/faster_multi_is_locked.lua"
        ));
        pub(super) const FASTER_MULTI_HOLDS: &str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/faster_multi_holds.lua"
        ));
        pub(super) const FASTER_MULTI_RENEW: &str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/faster_multi_renew.lua"
        ));
        pub(super) const FASTER_MULTI_RELEASE: &str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/faster_multi_release.lua"
        ));
        pub(super) const FASTER_MULTI_ACQUIRE: &str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/lua/faster_multi_acquire.lua"
        ));
    }
    let Bed(_server, _client, raw, name) = Bed::new("fml-deadline-now").await;
    let (a, b, f) = ("a-client:1", "b-client:1", id(M));
    let deadline = now_ms() + 60_000;
    let seed = || async {
        let _: i64 = raw.del(&name).await.unwrap();
        let _: i64 = raw
            .hset(
                &name,
                [
                    (f.clone(), a.to_owned()),
                    (format!("{f}:{a}:expire_time"), deadline.to_string()),
                    (format!("{f}:{a}:lock_count"), "1".to_owned()),
                ],
            )
            .await
            .unwrap();
        let _: bool = raw.pexpire(&name, 120_000, None).await.unwrap();
    };
    let eval = |script: &'static str, keys: Vec<String>, args: Vec<Value>| {
        let raw = raw.clone();
        async move {
            raw.eval::<Value, _, _, _>(script, keys, args)
                .await
                .unwrap()
        }
    };
    let g = || vec![name.clone()];
    for (now, held) in [(deadline - 1, true), (deadline, false)] {
        seed().await;
        let locked = eval(
            lua::FASTER_MULTI_IS_LOCKED,
            g(),
            vec![now.into(), f.clone().into()],
        );
        assert_eq!(
            locked.await.as_i64(),
            Some(held as i64),
            "is_locked at {now}"
        );
        let holds = eval(
            lua::FASTER_MULTI_HOLDS,
            g(),
            vec![now.into(), a.into(), f.clone().into()],
        )
        .await;
        let flags: Vec<i64> = holds
            .into_array()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert_eq!(flags[0], held as i64, "holds at {now}: {flags:?}");
        let renew = eval(
            lua::FASTER_MULTI_RENEW,
            g(),
            vec![
                30_000.into(),
                now.into(),
                a.into(),
                1.into(),
                f.clone().into(),
            ],
        )
        .await;
        assert_eq!(
            renew.into_array()[0].as_i64(),
            Some(held as i64),
            "renew at {now}"
        );
        seed().await;
        let latch = format!("redisson_unlock_latch:{{{name}}}:{now}");
        let release = eval(
            lua::FASTER_MULTI_RELEASE,
            vec![name.clone(), channel(&name), latch],
            vec![
                a.into(),
                "0".into(),
                30_000.into(),
                "PUBLISH".into(),
                1_000.into(),
                now.into(),
                f.clone().into(),
            ],
        )
        .await;
        assert_eq!(
            release.as_i64(),
            if held { Some(1) } else { None },
            "release at {now}"
        );
        seed().await;
        let acquire = eval(
            lua::FASTER_MULTI_ACQUIRE,
            g(),
            vec![30_000.into(), now.into(), b.into(), f.clone().into()],
        )
        .await;
        assert_eq!(
            acquire.as_i64(),
            if held { Some(1) } else { None },
            "another owner's acquire at {now}"
        );
        // Redisson's own acquire draws the line at the same millisecond.
        seed().await;
        let java = eval(
            JAVA_ACQUIRE,
            g(),
            vec![30_000.into(), now.into(), JAVA_LN.into(), f.clone().into()],
        )
        .await;
        assert_eq!(
            java.as_i64(),
            if held { Some(1) } else { None },
            "Java at {now}"
        );
    }
}
