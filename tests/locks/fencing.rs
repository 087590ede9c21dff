//! Fencing tokens on the resource side: `FencedWriter` against a real Redis, read back
//! with plain commands by a separate fred client, and `FencingGate` under contention.

use crate::support;
use support::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use redisson_lock::Error;
use redisson_lock::fencing::{FencedWriter, FencingGate};
use redisson_lock::fred::prelude::*;

/// The fence key of a test key (test keys contain no braces).
fn fence(key: &str) -> String {
    format!("redisson_fence:{{{key}}}")
}

async fn get(raw: &fred::prelude::Client, key: &str) -> Option<String> {
    raw.get(key).await.unwrap()
}

async fn hget(raw: &fred::prelude::Client, key: &str, field: &str) -> Option<String> {
    raw.hget(key, field).await.unwrap()
}

fn assert_stale<T: std::fmt::Debug>(result: redisson_lock::Result<T>, seen: u64, presented: u64) {
    match result {
        Err(Error::StaleToken {
            seen: s,
            presented: p,
        }) => assert_eq!((s, p), (seen, presented)),
        other => {
            panic!("expected StaleToken {{ seen: {seen}, presented: {presented} }}, got {other:?}")
        }
    }
}

#[tokio::test]
async fn each_op_writes_and_records_its_token() {
    let Bed(_server, client, raw, k) = Bed::new("set").await;
    let writer = FencedWriter::new(&client);

    // set
    writer.set(&k, "v1", 5).await.unwrap();
    assert_eq!(get(&raw, &k).await.as_deref(), Some("v1"));
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("5"));
    assert_eq!(pttl(&raw, &k).await, -1, "a plain set has no expiry");
    assert_eq!(pttl(&raw, &fence(&k)).await, -1, "the fence has no expiry");
    assert_eq!(writer.highest(&k).await.unwrap(), Some(5));

    // set_with_ttl
    let k = key("set-ttl");
    writer
        .set_with_ttl(&k, "v2", Duration::from_secs(60), 6)
        .await
        .unwrap();
    assert_eq!(get(&raw, &k).await.as_deref(), Some("v2"));
    let ttl = pttl(&raw, &k).await;
    assert!((50_000..=60_000).contains(&ttl), "PTTL {ttl}");
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("6"));
    assert_eq!(pttl(&raw, &fence(&k)).await, -1, "the fence has no expiry");
    assert!(matches!(
        writer.set_with_ttl(&k, "v", Duration::ZERO, 7).await,
        Err(Error::InvalidArgument(_))
    ));

    // hset: new field, then an update of it
    let k = key("hset");
    assert!(writer.hset(&k, "status", "new", 7).await.unwrap());
    assert!(!writer.hset(&k, "status", "paid", 8).await.unwrap());
    assert_eq!(hget(&raw, &k, "status").await.as_deref(), Some("paid"));
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("8"));

    // del
    let k = key("del");
    let _: () = raw.set(&k, "doomed", None, None, false).await.unwrap();
    assert!(writer.del(&k, 9).await.unwrap());
    assert!(!exists(&raw, &k).await);
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("9"));
    assert!(!writer.del(&k, 10).await.unwrap(), "nothing left to delete");
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("10"));

    // A key never written has no fence.
    assert_eq!(writer.highest(&key("untouched")).await.unwrap(), None);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn lower_token_is_refused_and_nothing_changes() {
    let Bed(_server, client, raw, k) = Bed::new("stale-set").await;
    let writer = FencedWriter::new(&client);

    writer.set(&k, "new", 10).await.unwrap();
    assert_stale(writer.set(&k, "old", 9).await, 10, 9);
    assert_stale(
        writer
            .set_with_ttl(&k, "old", Duration::from_secs(5), 9)
            .await,
        10,
        9,
    );
    assert_stale(writer.del(&k, 9).await, 10, 9);
    assert_stale(writer.del(&k, 0).await, 10, 0);
    assert_eq!(get(&raw, &k).await.as_deref(), Some("new"));
    assert_eq!(
        pttl(&raw, &k).await,
        -1,
        "the refused set_with_ttl set no TTL"
    );
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("10"));

    let h = key("stale-hset");
    writer.hset(&h, "f", "new", 10).await.unwrap();
    assert_stale(writer.hset(&h, "f", "old", 3).await, 10, 3);
    assert_stale(writer.hset(&h, "g", "old", 3).await, 10, 3);
    assert_eq!(
        hgetall(&raw, &h).await,
        vec![("f".to_string(), "new".to_string())]
    );
    assert_eq!(get(&raw, &fence(&h)).await.as_deref(), Some("10"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn equal_token_is_admitted() {
    let Bed(_server, client, raw, k) = Bed::new("equal").await;
    let writer = FencedWriter::new(&client);
    writer.set(&k, "first", 21).await.unwrap();
    writer.set(&k, "second", 21).await.unwrap();
    writer.hset(&key("equal-h"), "f", "v", 21).await.unwrap();
    assert_eq!(get(&raw, &k).await.as_deref(), Some("second"));
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("21"));
    writer.del(&k, 21).await.unwrap();
    assert!(!exists(&raw, &k).await);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn delete_and_expiry_do_not_reset_the_fence() {
    let Bed(_server, client, raw, k) = Bed::new("del-keeps").await;
    let writer = FencedWriter::new(&client);

    // A fenced DEL keeps (and raises) the fence.
    writer.set(&k, "v", 10).await.unwrap();
    writer.del(&k, 11).await.unwrap();
    assert_stale(writer.set(&k, "stale", 10).await, 11, 10);
    assert!(
        !exists(&raw, &k).await,
        "the stale holder did not recreate the key"
    );

    // A plain DEL of the data (by anyone) leaves the fence alone too.
    let k = key("raw-del");
    writer.set(&k, "v", 10).await.unwrap();
    let _: i64 = raw.del(&k).await.unwrap();
    assert_stale(writer.set(&k, "stale", 9).await, 10, 9);
    assert!(!exists(&raw, &k).await);

    // Expiry of the data leaves the fence.
    let k = key("expired");
    writer
        .set_with_ttl(&k, "v", Duration::from_millis(50), 10)
        .await
        .unwrap();
    assert!(
        gone_within(&raw, &k, Duration::from_secs(5))
            .await
            .is_some()
    );
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("10"));
    assert_stale(writer.set(&k, "stale", 9).await, 10, 9);
    assert!(!exists(&raw, &k).await);
    writer.set(&k, "next holder", 11).await.unwrap();
    assert_eq!(get(&raw, &k).await.as_deref(), Some("next holder"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn wrong_type_data_key_changes_nothing() {
    let Bed(_server, client, raw, k) = Bed::new("wrong-type").await;
    let writer = FencedWriter::new(&client);

    // A fence at 5, data that is a string: HSET cannot apply.
    writer.set(&k, "a string", 5).await.unwrap();
    match writer.hset(&k, "f", "v", 7).await {
        Err(Error::WrongType { key }) => assert_eq!(key, k),
        other => panic!("expected WrongType, got {other:?}"),
    }
    assert_eq!(get(&raw, &k).await.as_deref(), Some("a string"));
    assert_eq!(
        get(&raw, &fence(&k)).await.as_deref(),
        Some("5"),
        "fence unchanged"
    );

    // No fence yet: the failed write does not create one.
    let k = key("wrong-type-fresh");
    let _: () = raw.set(&k, "a string", None, None, false).await.unwrap();
    assert!(matches!(
        writer.hset(&k, "f", "v", 7).await,
        Err(Error::WrongType { .. })
    ));
    assert!(!exists(&raw, &fence(&k)).await, "no fence was created");

    // A custom body's WRONGTYPE: same, the fence stays.
    let k = key("wrong-type-eval");
    writer.set(&k, "a string", 5).await.unwrap();
    let body = "return redis.call('lpush', KEYS[1], ARGV[1])";
    match writer.eval(body, &[&k], &["x".into()], 8).await {
        Err(Error::WrongType { key }) => assert_eq!(key, k),
        other => panic!("expected WrongType, got {other:?}"),
    }
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("5"));
    assert_eq!(get(&raw, &k).await.as_deref(), Some("a string"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn corrupt_fence_is_refused_and_nothing_changes() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;
    let writer = FencedWriter::new(&client);

    for bad in [
        "abc",
        "",
        "-1",
        "1.5",
        " 7",
        "18446744073709551616",
        "line\nbreak",
    ] {
        let k = key("corrupt");
        let f = fence(&k);
        let _: () = raw.set(&k, "data", None, None, false).await.unwrap();
        let _: () = raw.set(&f, bad, None, None, false).await.unwrap();
        let shown = bad.replace('\n', "?");
        for result in [
            writer.set(&k, "new", 1).await,
            writer.del(&k, 1).await.map(|_| ()),
            writer
                .eval("return redis.call('set', KEYS[1], 'x')", &[&k], &[], 1)
                .await
                .map(|_| ()),
        ] {
            match result {
                Err(Error::CorruptFence { key, found }) => {
                    assert_eq!(key, f);
                    assert_eq!(found, shown, "{bad:?}");
                }
                other => panic!("expected CorruptFence for {bad:?}, got {other:?}"),
            }
        }
        assert!(matches!(
            writer.highest(&k).await,
            Err(Error::CorruptFence { .. })
        ));
        assert_eq!(get(&raw, &k).await.as_deref(), Some("data"), "{bad:?}");
        assert_eq!(get(&raw, &f).await.as_deref(), Some(bad), "{bad:?}");
    }

    // A fence key that is not a string at all.
    let k = key("corrupt-type");
    let f = fence(&k);
    let _: () = raw.set(&k, "data", None, None, false).await.unwrap();
    let _: i64 = raw.hset(&f, ("x", "1")).await.unwrap();
    match writer.set(&k, "new", 1).await {
        Err(Error::CorruptFence { key, found }) => {
            assert_eq!(key, f);
            assert_eq!(found, "<hash>");
        }
        other => panic!("expected CorruptFence, got {other:?}"),
    }
    assert!(matches!(
        writer.highest(&k).await,
        Err(Error::CorruptFence { .. })
    ));
    assert_eq!(get(&raw, &k).await.as_deref(), Some("data"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn tokens_compare_exactly_over_the_whole_u64_range() {
    let Bed(_server, client, raw, k) = Bed::new("zero").await;
    let writer = FencedWriter::new(&client);

    // Token 0 is a token.
    writer.set(&k, "zero", 0).await.unwrap();
    assert_eq!(writer.highest(&k).await.unwrap(), Some(0));
    writer.set(&k, "zero again", 0).await.unwrap();

    // 2^53 + 1 and 2^53 are the same double; the fence tells them apart.
    let k = key("big");
    let above = (1u64 << 53) + 1;
    writer.set(&k, "above", above).await.unwrap();
    assert_stale(writer.set(&k, "below", above - 1).await, above, above - 1);
    assert_eq!(get(&raw, &k).await.as_deref(), Some("above"));

    // Digits of different lengths, and the top of the range.
    writer.set(&k, "max", u64::MAX).await.unwrap();
    assert_eq!(
        get(&raw, &fence(&k)).await.as_deref(),
        Some("18446744073709551615")
    );
    assert_stale(
        writer.set(&k, "x", u64::MAX - 1).await,
        u64::MAX,
        u64::MAX - 1,
    );
    assert_stale(writer.set(&k, "x", 9).await, u64::MAX, 9);
    writer.set(&k, "max again", u64::MAX).await.unwrap();
    assert_eq!(writer.highest(&k).await.unwrap(), Some(u64::MAX));

    // A shorter number is smaller even where its digits compare higher as text.
    let k = key("lengths");
    writer.set(&k, "100", 100).await.unwrap();
    assert_stale(writer.set(&k, "99", 99).await, 100, 99);

    // A fence written by hand with leading zeros is read by value.
    let k = key("zeros");
    let _: () = raw.set(fence(&k), "007", None, None, false).await.unwrap();
    assert_stale(writer.set(&k, "x", 6).await, 7, 6);
    writer.set(&k, "x", 7).await.unwrap();
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("7"));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn custom_body_sees_its_own_keys_and_args() {
    let Bed(_server, client, raw, tag) = Bed::new("eval").await;
    let writer = FencedWriter::new(&client);
    let (a, b) = (format!("{{{tag}}}:a"), format!("{{{tag}}}:b"));
    let fence_a = format!("redisson_fence:{a}");

    // KEYS and ARGV are exactly the caller's; the reply is the body's.
    let body = "
        redis.call('set', KEYS[1], ARGV[1])
        redis.call('set', KEYS[2], ARGV[2])
        return {#KEYS, #ARGV, KEYS[1], KEYS[2], ARGV[1], ARGV[2]}
    ";
    let reply = writer
        .eval(body, &[&a, &b], &["x".into(), "y".into()], 40)
        .await
        .unwrap();
    let reply: Vec<Value> = reply.convert().unwrap();
    let reply: Vec<String> = reply
        .into_iter()
        .map(|v| v.convert::<String>().unwrap())
        .collect();
    assert_eq!(reply, ["2", "2", a.as_str(), b.as_str(), "x", "y"]);
    assert_eq!(get(&raw, &a).await.as_deref(), Some("x"));
    assert_eq!(get(&raw, &b).await.as_deref(), Some("y"));
    assert_eq!(get(&raw, &fence_a).await.as_deref(), Some("40"));
    assert!(
        !exists(&raw, &format!("redisson_fence:{b}")).await,
        "only the first key is fenced"
    );

    // A body with no return gives nil; no arguments is fine.
    let reply = writer
        .eval(
            "redis.call('incr', KEYS[1])",
            &[&format!("{{{tag}}}:n")],
            &[],
            1,
        )
        .await
        .unwrap();
    assert_eq!(reply, Value::Null);

    // The fence is shared with the fixed writes of the same key.
    assert_stale(writer.set(&a, "stale", 39).await, 40, 39);
    writer.set(&a, "newer", 41).await.unwrap();

    // A stale body does not run at all.
    let counter = "redis.call('incr', KEYS[2]) return redis.call('get', KEYS[2])";
    assert_stale(writer.eval(counter, &[&a, &b], &[], 40).await, 41, 40);
    assert_eq!(get(&raw, &b).await.as_deref(), Some("y"));

    // A body that raises an error leaves the fence alone.
    let failing = "redis.call('set', KEYS[1], 'partial') error('body failed')";
    match writer.eval(failing, &[&a], &[], 50).await {
        Err(Error::Redis(e)) => assert!(e.details().contains("body failed"), "{e}"),
        other => panic!("expected the body's error, got {other:?}"),
    }
    assert_eq!(get(&raw, &fence_a).await.as_deref(), Some("41"));

    // The body cannot reach the guard's locals (it is compiled before them): assigning
    // `token` cannot change what is recorded. (Redis 7 refuses the global assignment;
    // older servers run it, and record the presented 42.)
    let sneaky = "token = '999' return 1";
    let _ = writer.eval(sneaky, &[&a], &[], 42).await;
    let recorded = get(&raw, &fence_a).await;
    assert!(
        matches!(recorded.as_deref(), Some("41") | Some("42")),
        "{recorded:?}"
    );

    // A key is required: the first names the resource.
    assert!(matches!(
        writer.eval("return 1", &[], &[], 1).await,
        Err(Error::InvalidArgument(_))
    ));
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn keys_whose_fence_would_leave_the_slot_are_refused() {
    let Bed(_server, client, raw, _) = Bed::new("bed").await;
    let writer = FencedWriter::new(&client);
    for bad in ["a}b", "a{b", "{}x", ""] {
        assert!(
            matches!(
                writer.set(bad, "v", 1).await,
                Err(Error::InvalidArgument(_))
            ),
            "{bad:?}"
        );
        if !bad.is_empty() {
            assert!(!exists(&raw, bad).await);
        }
    }
    // A key with its own hash tag keeps it: the fence is `redisson_fence:<key>`.
    let tagged = format!("{{{}}}:cart", key("tagged"));
    writer.set(&tagged, "v", 3).await.unwrap();
    assert_eq!(
        get(&raw, &format!("redisson_fence:{tagged}"))
            .await
            .as_deref(),
        Some("3")
    );
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn noscript_falls_back_to_eval() {
    let Bed(_server, client, raw, k) = Bed::new("noscript").await;
    let writer = FencedWriter::new(&client);
    writer.set(&k, "before", 1).await.unwrap();
    writer.eval("return 1", &[&k], &[], 1).await.unwrap();

    raw.script_flush(false).await.unwrap();
    reset_stats(&raw).await;
    writer.set(&k, "after", 2).await.unwrap();
    writer.eval("return 1", &[&k], &[], 2).await.unwrap();
    assert_eq!(command_calls(&raw, "eval").await, 2, "one EVAL per script");
    assert_eq!(get(&raw, &k).await.as_deref(), Some("after"));
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("2"));

    // Both scripts are cached again: the next calls are EVALSHA only.
    reset_stats(&raw).await;
    writer.hset(&key("noscript-h"), "f", "v", 3).await.unwrap();
    writer.eval("return 1", &[&k], &[], 3).await.unwrap();
    assert_eq!(command_calls(&raw, "eval").await, 0);
    assert_eq!(command_calls(&raw, "evalsha").await, 2);
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn after_shutdown_writes_fail_with_shutdown() {
    let server = RedisServer::start();
    let client = server.client().await;
    let writer = FencedWriter::new(&client);
    client.shutdown().await.unwrap();
    assert!(matches!(
        writer.set(&key("shut"), "v", 1).await,
        Err(Error::Shutdown)
    ));
    assert!(matches!(
        writer.highest(&key("shut")).await,
        Err(Error::Shutdown)
    ));
}

/// The story fencing exists for, with raw tokens: A holds token 33 and stalls past its
/// lease; B takes the lock (token 34) and writes; A wakes up and writes with 33.
#[tokio::test]
async fn stalled_holder_is_refused_after_a_newer_holder_wrote() {
    let Bed(server, a_client, raw, k) = Bed::new("story").await;
    let b_client = server.client().await;
    let a = FencedWriter::new(&a_client);
    let b = FencedWriter::new(&b_client);

    a.set(&k, "A: reserved 3", 33).await.unwrap();
    // ... A stalls; its lease runs out; B takes the lock with token 34 ...
    b.set(&k, "B: reserved 5", 34).await.unwrap();
    // ... A wakes up, still believing it holds the lock.
    assert_stale(a.set(&k, "A: reserved 4", 33).await, 34, 33);
    assert_stale(a.hset(&k, "f", "v", 33).await, 34, 33);
    assert_stale(a.del(&k, 33).await, 34, 33);
    assert_eq!(get(&raw, &k).await.as_deref(), Some("B: reserved 5"));
    assert_eq!(get(&raw, &fence(&k)).await.as_deref(), Some("34"));

    // The same story through an in-process gate.
    let gate = FencingGate::new();
    gate.check(33).unwrap();
    gate.check(34).unwrap();
    assert_stale(gate.check(33), 34, 33);
    a_client.shutdown().await.unwrap();
    b_client.shutdown().await.unwrap();
}

/// One check as seen from outside: when it started and ended on a global clock, the
/// token, and the outcome.
#[derive(Debug, Clone, Copy)]
struct Check {
    start: u64,
    end: u64,
    token: u64,
    refused_by: Option<u64>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gate_under_concurrent_checks_admits_in_order() {
    const TASKS: u64 = 16;
    const CHECKS: usize = 2_000;
    let gate = FencingGate::new();
    let clock = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for seed in 0..TASKS {
        let gate = gate.clone();
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut log = Vec::with_capacity(CHECKS);
            for i in 0..CHECKS {
                // Mostly rising tokens (as a lock hands them out), with stale ones mixed in.
                let token = (i as u64) * 4 + rng.gen_range(0..64);
                let start = clock.fetch_add(1, Ordering::SeqCst);
                let outcome = gate.check(token);
                let end = clock.fetch_add(1, Ordering::SeqCst);
                let refused_by = match outcome {
                    Ok(()) => None,
                    Err(Error::StaleToken { seen, presented }) => {
                        assert_eq!(presented, token);
                        Some(seen)
                    }
                    Err(other) => panic!("unexpected {other:?}"),
                };
                log.push(Check {
                    start,
                    end,
                    token,
                    refused_by,
                });
                if i % 8 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            log
        }));
    }
    let mut checks = Vec::new();
    for task in tasks {
        checks.extend(task.await.unwrap());
    }

    let max = checks.iter().map(|c| c.token).max().unwrap();
    assert_eq!(
        gate.highest(),
        Some(max),
        "the highest is the largest presented"
    );

    let mut admitted: Vec<Check> = checks
        .iter()
        .copied()
        .filter(|c| c.refused_by.is_none())
        .collect();
    let refused = checks.len() - admitted.len();
    assert!(refused > 0 && !admitted.is_empty(), "both outcomes occur");

    // Every admitted token is at least every token admitted by a check that ended
    // before it started (admission order as an observer can see it).
    admitted.sort_by_key(|c| c.end);
    let mut prefix_max = Vec::with_capacity(admitted.len());
    let mut running = 0;
    for c in &admitted {
        running = running.max(c.token);
        prefix_max.push(running);
    }
    let highest_admitted_before = |t: u64| -> Option<u64> {
        let n = admitted.partition_point(|c| c.end < t);
        n.checked_sub(1).map(|i| prefix_max[i])
    };
    for c in &admitted {
        if let Some(before) = highest_admitted_before(c.start) {
            assert!(
                c.token >= before,
                "token {} admitted after {before} had been admitted",
                c.token
            );
        }
    }

    // Every refusal names a higher token that really was admitted, by a check that had
    // started before the refused one ended; and anything admitted before it was lower.
    let mut first_start = std::collections::HashMap::new();
    for c in &admitted {
        let start = first_start.entry(c.token).or_insert(c.start);
        *start = (*start).min(c.start);
    }
    for c in checks.iter().filter(|c| c.refused_by.is_some()) {
        let seen = c.refused_by.unwrap();
        assert!(seen > c.token, "refused {} citing {seen}", c.token);
        let started = first_start
            .get(&seen)
            .unwrap_or_else(|| panic!("refusal cites {seen}, which was never admitted"));
        assert!(
            *started < c.end,
            "refusal cites {seen}, admitted only later"
        );
    }
}

/// The story with a real fenced lock and a real pause: A takes the lock with a 200 ms
/// lease and stalls past it; B takes the lock (a newer token) and writes; A wakes up and
/// writes with its old token: the resource refuses it, and the data is B's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_fenced_lock_holder_is_refused_by_the_resource() {
    let Bed(server, a_client, raw, name) = Bed::new("story-lock").await;
    let b_client = server.client().await;
    let data = key("story-data");
    // Tokens as a long-lived lock would have them: start the counter at 32.
    let _: () = raw
        .set(
            format!("redisson_lock_token:{{{name}}}"),
            32,
            None,
            None,
            false,
        )
        .await
        .unwrap();

    let a_lock = a_client.get_fenced_lock(&name);
    let a_token = a_lock
        .try_lock_and_get_token(Duration::ZERO, Duration::from_millis(200))
        .await
        .unwrap()
        .expect("A takes the free lock");
    assert_eq!(a_token, 33);
    let a_writer = FencedWriter::new(&a_client);
    a_writer.set(&data, "A: first", a_token).await.unwrap();

    // A stalls (a GC pause, a stopped VM) past its 200 ms lease; meanwhile B waits for
    // the lock, gets it when A's lease runs out, and writes.
    let b = {
        let b_lock = b_client.get_fenced_lock(&name);
        let b_writer = FencedWriter::new(&b_client);
        let data = data.clone();
        tokio::spawn(async move {
            let token = b_lock
                .try_lock_and_get_token(Duration::from_secs(5), Duration::from_secs(5))
                .await
                .unwrap()
                .expect("B gets the lock after A's lease ran out");
            b_writer.set(&data, "B: wrote", token).await.unwrap();
            b_lock.unlock().await.unwrap();
            token
        })
    };
    // A's stall lasts until B has written (B can only get the lock once A's lease ran out).
    let b_token = tokio::time::timeout(Duration::from_secs(5), b)
        .await
        .expect("B finished")
        .unwrap();
    assert_eq!(b_token, 34);

    // A wakes up, still believing it holds the lock, and writes with token 33.
    assert_stale(a_writer.set(&data, "A: stale", a_token).await, 34, 33);
    assert_eq!(get(&raw, &data).await.as_deref(), Some("B: wrote"));
    // And its unlock tells it the lock was no longer its own.
    assert!(matches!(a_lock.unlock().await, Err(Error::NotOwner { .. })));
    a_client.shutdown().await.unwrap();
    b_client.shutdown().await.unwrap();
}

/// Takes `lock` with a 10 s lease, waiting out a lock server that is still coming back
/// from a restart (the client reconnects on its own): the token.
async fn take_through_restart(lock: &redisson_lock::FencedLock) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match lock
            .try_lock_and_get_token(Duration::from_secs(5), Duration::from_secs(10))
            .await
        {
            Ok(Some(token)) => return token,
            Ok(None) => panic!("the lock is free: nobody else holds it"),
            Err(Error::Redis(error)) if std::time::Instant::now() < deadline => {
                eprintln!("lock server not back yet: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("acquire failed: {other:?}"),
        }
    }
}

/// Issue 19: fencing that survives a restart. The lock's Redis is restarted without
/// persistence (`SHUTDOWN NOSAVE`, started again on its port, empty) three times; the
/// resource is a `FencedWriter` on a *separate* Redis that keeps its fences, plus an
/// in-process `FencingGate`. Each restart wipes the token counter, yet every new holder's
/// token is above every earlier one (the counter is seeded from the server's `TIME` in
/// µs), so the resource keeps accepting: never blocked, never a token handed out twice.
/// A holder from before a restart that writes afterwards is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_tokens_strictly_increase_across_a_restart_with_a_fenced_writer_that_keeps_accepting()
 {
    const RESTARTS: usize = 3;
    const HOLDERS_PER_LIFE: usize = 4;
    let mut lock_server = RedisServer::start();
    let resource_server = RedisServer::start();
    let clients = [lock_server.client().await, lock_server.client().await];
    let mut lock_raw = lock_server.raw().await;
    let resource_client = resource_server.client().await;
    let resource_raw = resource_server.raw().await;
    let writer = FencedWriter::new(&resource_client);
    let gate = FencingGate::new();
    let name = key("restart-lock");
    let data = key("restart-data");
    let token_key = format!("redisson_lock_token:{{{name}}}");

    let mut drawn: Vec<u64> = Vec::new();
    let mut last_before_restart = None;
    for life in 0..=RESTARTS {
        for holder in 0..HOLDERS_PER_LIFE {
            let lock = clients[holder % 2].get_fenced_lock(&name);
            let before = server_time_us(&lock_raw).await;
            let token = take_through_restart(&lock).await;
            if holder == 0 {
                // A fresh counter (the restart wiped it): seeded from the server clock.
                assert_seeded(token, before, server_time_us(&lock_raw).await);
            } else {
                assert_eq!(Some(&(token - 1)), drawn.last(), "the counter goes on by 1");
            }
            let value = format!("life {life}, holder {holder}");
            writer
                .set(&data, value.as_str(), token)
                .await
                .unwrap_or_else(|e| panic!("the resource refused token {token}: {e:?}"));
            gate.check(token)
                .unwrap_or_else(|e| panic!("the gate refused token {token}: {e:?}"));
            assert_eq!(get(&resource_raw, &data).await, Some(value));
            assert_eq!(writer.highest(&data).await.unwrap(), Some(token));
            lock.unlock().await.unwrap();
            drawn.push(token);

            // The last holder of the previous life wakes up and writes: refused.
            if holder == 0
                && let Some(stale) = last_before_restart
            {
                assert_stale(writer.set(&data, "stale", stale).await, token, stale);
                assert_stale(gate.check(stale), token, stale);
            }
        }
        last_before_restart = drawn.last().copied();
        if life < RESTARTS {
            lock_server.restart_empty();
            // The restart really lost the counter (and the resource kept its fence).
            lock_raw = lock_server.raw().await;
            let counter: Option<String> = lock_raw.get(&token_key).await.unwrap();
            assert_eq!(counter, None, "the restart lost the token counter");
            assert_eq!(
                writer.highest(&data).await.unwrap(),
                last_before_restart,
                "the resource keeps its fence"
            );
        }
    }

    assert_eq!(drawn.len(), (RESTARTS + 1) * HOLDERS_PER_LIFE);
    assert!(
        drawn.windows(2).all(|w| w[0] < w[1]),
        "tokens strictly increase across restarts: {drawn:?}"
    );
    assert_eq!(gate.highest(), drawn.last().copied());
    for client in &clients {
        // Closing connections that lived through restarts may time out on a loaded
        // machine; the client is shut down either way, and that is not what this tests.
        if let Err(error) = client.shutdown().await {
            eprintln!("shutdown after restarts: {error}");
        }
    }
    resource_client.shutdown().await.unwrap();
}
