//! Raw state in Redis, normalised so that two writers' states compare: [`Snapshot`],
//! [`Norm`], [`assert_same_state`].

use std::collections::BTreeMap;
use std::time::Duration;

use redisson_lock::fred::prelude::*;

use super::*;

type RawClient = redisson_lock::fred::prelude::Client;

// ---- raw state -----------------------------------------------------------------------

/// Replacements that make two writers' states comparable: each client's hash field (or
/// any other text) by its role, each name by `N`. A text is replaced only where it ends
/// at the end of the string or before a `:`, `}` or `,` (so `<id>:4` is not found in
/// `<id>:45`).
#[derive(Clone, Debug, Default)]
pub struct Norm(Vec<(String, String)>);

impl Norm {
    pub fn new() -> Norm {
        Norm::default()
    }

    /// Replace `from` by `to`.
    pub fn with(mut self, from: impl Into<String>, to: impl Into<String>) -> Norm {
        self.0.push((from.into(), to.into()));
        // Longest first: a name that holds another one is replaced whole.
        self.0.sort_by_key(|r| std::cmp::Reverse(r.0.len()));
        self
    }

    pub fn apply(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (from, to) in &self.0 {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(from.as_str()) {
                let after = &rest[at + from.len()..];
                let bounded = after.is_empty()
                    || after.starts_with(':')
                    || after.starts_with('}')
                    || after.starts_with(',');
                out.push_str(&rest[..at]);
                out.push_str(if bounded { to } else { from });
                rest = after;
            }
            out.push_str(rest);
            text = out;
        }
        text
    }
}

/// One key: its type, its content as (field or member or index, value) pairs, sorted,
/// and its PTTL (-1: none).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub kind: String,
    pub content: Vec<(String, String)>,
    pub pttl: i64,
}

/// Every key of one object, by normalised key name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot(pub BTreeMap<String, Entry>);

/// Bytes as text: UTF-8 printable as is, 16 raw bytes (a permit id) as `<16 bytes>`,
/// anything else as hex.
pub(crate) fn show(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
        _ if bytes.len() == 16 => "<16 bytes>".to_string(),
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

pub(crate) fn bytes_of(v: &Value) -> Vec<u8> {
    match v {
        Value::Bytes(b) => b.to_vec(),
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Integer(i) => i.to_string().into_bytes(),
        Value::Double(d) => d.to_string().into_bytes(),
        other => format!("{other:?}").into_bytes(),
    }
}

/// A number that reads as an epoch-ms deadline (2001..2286) becomes `~<ms from now>`
/// (compared with a tolerance by [`assert_same_state`]).
pub(crate) fn relative(value: String, now: i64) -> String {
    match value.parse::<f64>() {
        Ok(v) if (1e12..1e13).contains(&v) => format!("~{}", v as i64 - now),
        _ => value,
    }
}

/// The keys matching `*<name>*` on `raw` (never the unlock latches, which each side
/// removes right after its reply), normalised by `norm`.
pub async fn snapshot(raw: &RawClient, name: &str, norm: &Norm) -> Snapshot {
    let keys: Vec<Value> = raw
        .custom(
            redisson_lock::fred::cmd!("KEYS"),
            vec![format!("*{}*", glob_escape(name))],
        )
        .await
        .expect("KEYS");
    let now = now_ms();
    let mut out = BTreeMap::new();
    for key in keys {
        let key = String::from_utf8(bytes_of(&key)).expect("utf-8 key");
        if key.starts_with("redisson_unlock_latch:") {
            continue;
        }
        let kind: String = raw
            .custom(redisson_lock::fred::cmd!("TYPE"), vec![key.clone()])
            .await
            .unwrap();
        let mut content: Vec<(String, String)> = match kind.as_str() {
            "hash" => {
                let flat: Vec<Value> = raw
                    .custom(redisson_lock::fred::cmd!("HGETALL"), vec![key.clone()])
                    .await
                    .unwrap();
                flat.chunks(2)
                    .map(|p| {
                        (
                            norm.apply(&show(&bytes_of(&p[0]))),
                            relative(norm.apply(&show(&bytes_of(&p[1]))), now),
                        )
                    })
                    .collect()
            }
            "zset" => {
                let flat: Vec<Value> = raw
                    .custom(
                        redisson_lock::fred::cmd!("ZRANGE"),
                        vec![key.clone(), "0".into(), "-1".into(), "WITHSCORES".into()],
                    )
                    .await
                    .unwrap();
                flat.chunks(2)
                    .map(|p| {
                        (
                            norm.apply(&show(&bytes_of(&p[0]))),
                            relative(show(&bytes_of(&p[1])), now),
                        )
                    })
                    .collect()
            }
            "list" => {
                let items: Vec<Value> = raw
                    .custom(
                        redisson_lock::fred::cmd!("LRANGE"),
                        vec![key.clone(), "0".into(), "-1".into()],
                    )
                    .await
                    .unwrap();
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i.to_string(), norm.apply(&show(&bytes_of(v)))))
                    .collect()
            }
            "string" => {
                let v: Value = raw
                    .custom(redisson_lock::fred::cmd!("GET"), vec![key.clone()])
                    .await
                    .unwrap();
                vec![(
                    String::new(),
                    relative(norm.apply(&show(&bytes_of(&v))), now),
                )]
            }
            "none" => continue, // gone since KEYS
            other => panic!("{key}: unexpected type {other}"),
        };
        content.sort();
        let pttl: i64 = raw.pttl(&key).await.unwrap();
        if pttl == -2 {
            continue;
        }
        out.insert(
            norm.apply(&key),
            Entry {
                kind,
                content,
                pttl,
            },
        );
    }
    Snapshot(out)
}

pub(crate) fn close(a: &str, b: &str, tolerance: i64) -> bool {
    match (a.strip_prefix('~'), b.strip_prefix('~')) {
        (Some(x), Some(y)) => match (x.parse::<i64>(), y.parse::<i64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= tolerance,
            _ => false,
        },
        _ => a == b,
    }
}

/// The crate's state and Java's after the same operation: the same keys, types, fields
/// and values (deadlines within `tolerance` ms of each other), and TTLs both absent or
/// both within `tolerance` ms.
pub fn assert_same_state(what: &str, ours: &Snapshot, java: &Snapshot, tolerance: Duration) {
    let tol = tolerance.as_millis() as i64;
    let mismatch = || {
        format!(
            "{what}: the crate's state and Redisson's differ\n  crate: {:#?}\n  java:  {:#?}",
            ours.0, java.0
        )
    };
    assert_eq!(
        ours.0.keys().collect::<Vec<_>>(),
        java.0.keys().collect::<Vec<_>>(),
        "{}",
        mismatch()
    );
    for (key, a) in &ours.0 {
        let b = &java.0[key];
        assert_eq!(a.kind, b.kind, "{key}: {}", mismatch());
        assert_eq!(a.content.len(), b.content.len(), "{key}: {}", mismatch());
        for (x, y) in a.content.iter().zip(&b.content) {
            assert!(
                x.0 == y.0 && close(&x.1, &y.1, tol),
                "{key}: {x:?} vs {y:?}: {}",
                mismatch()
            );
        }
        let ttls_match = (a.pttl == -1 && b.pttl == -1)
            || (a.pttl > 0 && b.pttl > 0 && (a.pttl - b.pttl).abs() <= tol);
        assert!(
            ttls_match,
            "{key}: PTTL {} vs {}: {}",
            a.pttl,
            b.pttl,
            mismatch()
        );
    }
}

/// A snapshot of every server, by server index (for objects spread over servers).
pub async fn snapshot_all(raws: &[RawClient], name: &str, norm: &Norm) -> Snapshot {
    let mut out = BTreeMap::new();
    for (i, raw) in raws.iter().enumerate() {
        for (key, entry) in snapshot(raw, name, norm).await.0 {
            out.insert(format!("s{i}/{key}"), entry);
        }
    }
    Snapshot(out)
}
