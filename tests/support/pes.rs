//! Reading a permit-expirable semaphore's raw state the way another program would:
//! the held permits (`ZRANGE {N}:timeout WITHSCORES`, 16-byte members), `GET N`, the
//! channel's payloads, and the names of its keys (names without braces).

use redisson_lock::fred::prelude::*;

/// `ZRANGE key 0 -1 WITHSCORES` as (member bytes, score).
pub async fn zrange(raw: &Client, key: &str) -> Vec<(Vec<u8>, i64)> {
    let reply: Value = raw
        .custom(
            redisson_lock::fred::cmd!("ZRANGE"),
            vec![key, "0", "-1", "WITHSCORES"],
        )
        .await
        .unwrap();
    let items = match reply {
        Value::Array(items) => items,
        other => panic!("ZRANGE answered {other:?}"),
    };
    items
        .chunks(2)
        .map(|pair| {
            let member = pair[0].as_bytes().unwrap().to_vec();
            let score = pair[1]
                .as_f64()
                .or_else(|| pair[1].as_string().and_then(|s| s.parse().ok()))
                .unwrap() as i64;
            (member, score)
        })
        .collect()
}

pub async fn get(raw: &Client, key: &str) -> Option<String> {
    raw.get(key).await.unwrap()
}

pub fn texts(messages: &[(String, Vec<u8>)]) -> Vec<String> {
    messages
        .iter()
        .map(|(_, p)| String::from_utf8_lossy(p).into_owned())
        .collect()
}

pub fn timeouts(name: &str) -> String {
    format!("{{{name}}}:timeout")
}

pub fn sc(name: &str) -> String {
    format!("redisson_sc:{{{name}}}")
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Redisson's score of a permit without a lease (docs/protocol.md §20.1).
pub const NO_LEASE: i64 = 922_337_203_685_477;
