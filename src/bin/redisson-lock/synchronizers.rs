//! Redisson's synchronizers in Redis (docs/protocol.md §19 to §21): a semaphore's permits and a
//! count-down latch's count (each a string key holding an integer), and a
//! permit-expirable semaphore's holders (the sorted set `T:timeout`, T = `{N}`, or N when
//! it has braces; members the permit ids as 16 raw bytes, scores their expiry in epoch
//! ms, `922337203685477` for "no lease").
//!
//! The kind is read from Redis where Redis can tell: a `T:timeout` sorted set makes a
//! permit-expirable semaphore; connections subscribed to `redisson_sc:T` or to
//! `redisson_countdownlatch__channel__{N}` are waiters of a semaphore or of a latch. A
//! bare integer string key with neither is ambiguous (the same bytes are a semaphore's
//! permits and a latch's count), and is reported as such unless `--kind` says which.

use clap::ValueEnum;
use redisson_lock::fred::prelude::{
    Client as Redis, ClientLike, Error as RedisError, KeysInterface, Value,
};
use redisson_lock::fred::types::{ClusterHash, CustomCommand};
use serde_json::{Value as Json, json};

use crate::inspect::{Subscribers, escape, now_ms};
use crate::render::{duration_ms, table, timestamp, ttl_text};

/// A permit-expirable semaphore's "no lease" score (docs/protocol.md §20.1).
pub(crate) const NO_LEASE: i64 = 922_337_203_685_477;

/// What `--kind` may say a string key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum KindArg {
    /// An `RSemaphore` (its permits).
    Semaphore,
    /// An `RCountDownLatch` (its count).
    Latch,
    /// An `RPermitExpirableSemaphore` (its available permits and holders).
    PermitExpirableSemaphore,
}

/// The kinds of synchronizer the inspector reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncKind {
    Semaphore,
    PermitExpirable,
    Latch,
    /// A bare integer string: a semaphore or a latch, Redis cannot tell.
    SemaphoreOrLatch,
}

impl SyncKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SyncKind::Semaphore => "semaphore",
            SyncKind::PermitExpirable => "permit-expirable-semaphore",
            SyncKind::Latch => "count-down-latch",
            SyncKind::SemaphoreOrLatch => "semaphore-or-latch",
        }
    }
}

/// One held permit of a permit-expirable semaphore.
#[derive(Clone, Debug)]
pub(crate) struct Permit {
    /// The id as Java shows it: the member's bytes in lowercase hex (32 characters for
    /// Redisson's 16-byte ids).
    pub(crate) id: String,
    /// The score: the expiry in epoch ms of the acquiring client's clock; `None` for "no
    /// lease".
    pub(crate) expires_ms: Option<i64>,
}

/// What Redis holds for one synchronizer name.
#[derive(Clone, Debug)]
pub(crate) struct SyncReport {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) kind: SyncKind,
    /// Why this kind: what was seen in Redis, or `--kind`.
    pub(crate) evidence: String,
    /// The string key's integer (`None`: the key is missing).
    pub(crate) value: Option<i64>,
    pub(crate) ttl_ms: Option<i64>,
    /// The permit-expirable semaphore's sorted set, its TTL and its permits (earliest
    /// expiry first, "no lease" last).
    pub(crate) timeouts_key: String,
    pub(crate) timeouts_ttl_ms: Option<i64>,
    pub(crate) permits: Vec<Permit>,
    pub(crate) semaphore_channel: Subscribers,
    pub(crate) latch_channel: Subscribers,
    pub(crate) read_at_ms: i64,
    pub(crate) notes: Vec<String>,
}

impl SyncReport {
    /// Held permits whose lease has run out (by our clock): available again once any
    /// client's next operation reclaims them.
    fn expired(&self) -> usize {
        self.permits
            .iter()
            .filter(|p| p.expires_ms.is_some_and(|e| e <= self.read_at_ms))
            .count()
    }
}

/// `T`: `{N}`, or N when it contains `{` (Redisson's `prefixName`/`suffixName`).
fn tag(key: &str) -> String {
    if key.contains('{') {
        key.to_owned()
    } else {
        format!("{{{key}}}")
    }
}

/// Reads `key` (shown as `name`) as a synchronizer. `None` when it is not one: the string
/// key holds something other than an integer, or neither the key nor a permit set exists.
pub(crate) async fn inspect(
    redis: &Redis,
    key: &str,
    name: &str,
    asked: Option<KindArg>,
) -> Result<Option<SyncReport>, RedisError> {
    let timeouts_key = format!("{}:timeout", tag(key));
    let key_type: String = redis.r#type(key).await?;
    let timeouts_type: String = redis.r#type(timeouts_key.as_str()).await?;
    let value = match key_type.as_str() {
        "string" => {
            let text: Option<String> = redis.get(key).await?;
            match text.and_then(|t| t.parse::<i64>().ok()) {
                Some(n) => Some(n),
                None => return Ok(None),
            }
        }
        "none" => None,
        _ => return Ok(None),
    };
    let pes_set = timeouts_type == "zset";
    if value.is_none() && !pes_set {
        return Ok(None);
    }
    let read_at_ms = now_ms();
    let semaphore_channel = Subscribers::read(redis, format!("redisson_sc:{}", tag(key))).await;
    let latch_channel = Subscribers::read(
        redis,
        format!("redisson_countdownlatch__channel__{{{key}}}"),
    )
    .await;
    let mut notes = Vec::new();
    let (seen, seen_because) = if pes_set {
        (
            SyncKind::PermitExpirable,
            format!("the sorted set {timeouts_key} of held permits exists"),
        )
    } else {
        kind_by_waiters(&semaphore_channel, &latch_channel)
    };
    let (kind, evidence) = settle_kind(seen, seen_because, asked, &mut notes);
    let ttl_ms = ttl(redis, key).await?;
    let (timeouts_ttl_ms, permits) = if pes_set {
        permit_set(redis, &timeouts_key).await?
    } else {
        (None, Vec::new())
    };
    let mut report = SyncReport {
        name: name.to_owned(),
        key: key.to_owned(),
        kind,
        evidence,
        value,
        ttl_ms,
        timeouts_key,
        timeouts_ttl_ms,
        permits,
        semaphore_channel,
        latch_channel,
        read_at_ms,
        notes,
    };
    report.explain();
    Ok(Some(report))
}

/// The kind an integer string key has by who waits on it, and why.
fn kind_by_waiters(semaphore: &Subscribers, latch: &Subscribers) -> (SyncKind, String) {
    match (semaphore.total() > 0, latch.total() > 0) {
        (true, false) => (
            SyncKind::Semaphore,
            format!("waiters subscribed to {}", semaphore.channel),
        ),
        (false, true) => (
            SyncKind::Latch,
            format!("waiters subscribed to {}", latch.channel),
        ),
        (true, true) => (
            SyncKind::SemaphoreOrLatch,
            "waiters subscribed to both the semaphore's and the latch's channel".to_owned(),
        ),
        (false, false) => (
            SyncKind::SemaphoreOrLatch,
            "an integer in a string key, and nobody waiting on it".to_owned(),
        ),
    }
}

/// The kind reported, and why: `--kind` settles what Redis cannot tell; it never
/// overrides what Redis shows (a note says so).
fn settle_kind(
    seen: SyncKind,
    seen_because: String,
    asked: Option<KindArg>,
    notes: &mut Vec<String>,
) -> (SyncKind, String) {
    let asked_kind = asked.map(|a| match a {
        KindArg::Semaphore => SyncKind::Semaphore,
        KindArg::Latch => SyncKind::Latch,
        KindArg::PermitExpirableSemaphore => SyncKind::PermitExpirable,
    });
    let flag = asked
        .and_then(|a| a.to_possible_value())
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default();
    let (kind, evidence) = match asked_kind {
        Some(asked) if seen == SyncKind::SemaphoreOrLatch => (asked, format!("--kind {flag}")),
        Some(asked) if asked != seen => {
            notes.push(format!(
                "--kind {flag} ignored: Redis shows a {} ({seen_because})",
                seen.as_str()
            ));
            (seen, seen_because)
        }
        _ => (seen, seen_because),
    };
    if kind == SyncKind::SemaphoreOrLatch {
        notes.push(
            "ambiguous: a semaphore's permits and a count-down latch's count are the same \
             bytes in Redis (an integer in a string key), and without waiters nothing tells \
             them apart (any counter looks the same); pass --kind semaphore or --kind latch"
                .to_owned(),
        );
    }
    (kind, evidence)
}

/// `PTTL` of `key`: `None` when the key is gone.
async fn ttl(redis: &Redis, key: &str) -> Result<Option<i64>, RedisError> {
    let ttl: i64 = redis.pttl(key).await?;
    Ok((ttl != -2).then_some(ttl))
}

/// A permit-expirable semaphore's permit set: its TTL and its permits.
async fn permit_set(
    redis: &Redis,
    timeouts_key: &str,
) -> Result<(Option<i64>, Vec<Permit>), RedisError> {
    let command = CustomCommand::new_static("ZRANGE", ClusterHash::FirstKey, false);
    let reply: Vec<Value> = redis
        .custom(
            command,
            vec![
                Value::from(timeouts_key),
                "0".into(),
                "-1".into(),
                "WITHSCORES".into(),
            ],
        )
        .await?;
    Ok((ttl(redis, timeouts_key).await?, permits_of(reply)))
}

impl SyncReport {
    /// The notes that follow from what was read.
    fn explain(&mut self) {
        if self.kind == SyncKind::PermitExpirable {
            if self.permits.iter().any(|p| p.id.len() != 32) {
                self.notes.push(
                    "a member of the permit set is not 16 bytes: Redisson's permit ids are 16 \
                     random bytes"
                        .to_owned(),
                );
            }
            self.notes.push(
                "lease left is the holder's expiry (written from the acquiring client's clock) \
                 less this machine's clock: clock skew between them shifts it"
                    .to_owned(),
            );
            let expired = self.expired();
            if expired > 0 {
                self.notes.push(format!(
                    "{expired} permit(s) past their lease: Redis publishes nothing on expiry; \
                     the next operation of any client on this semaphore reclaims them \
                     (available then: {})",
                    self.value.unwrap_or(0) + expired as i64
                ));
            }
        }
        if self.kind == SyncKind::Latch && self.value.is_none() {
            self.notes
                .push("no count key: the latch is open (count 0)".to_owned());
        }
    }
}

/// `ZRANGE .. WITHSCORES` (flat, or pairs under RESP3) as permits, members in hex.
fn permits_of(reply: Vec<Value>) -> Vec<Permit> {
    let mut flat = Vec::new();
    for value in reply {
        match value {
            Value::Array(pair) => flat.extend(pair),
            other => flat.push(other),
        }
    }
    let mut permits: Vec<Permit> = flat
        .chunks(2)
        .filter_map(|pair| match pair {
            [member, score] => {
                let bytes = member.as_bytes().map(<[u8]>::to_vec).unwrap_or_else(|| {
                    member
                        .as_str()
                        .map(|s| s.as_bytes().to_vec())
                        .unwrap_or_default()
                });
                let score = score
                    .as_f64()
                    .or_else(|| score.as_str().and_then(|s| s.parse::<f64>().ok()))?
                    as i64;
                Some(Permit {
                    id: bytes.iter().map(|b| format!("{b:02x}")).collect(),
                    expires_ms: (score != NO_LEASE).then_some(score),
                })
            }
            _ => None,
        })
        .collect();
    permits.sort_by_key(|p| (p.expires_ms.is_none(), p.expires_ms));
    permits
}

fn lease_text(permit: &Permit, now_ms: i64) -> String {
    match permit.expires_ms {
        None => "no lease".to_owned(),
        Some(e) if e > now_ms => duration_ms(e - now_ms),
        Some(e) => format!("expired {} ago", duration_ms(now_ms - e)),
    }
}

/// What the string key's value means for the report's kind, for humans.
fn state_text(report: &SyncReport) -> String {
    let v = report.value;
    match report.kind {
        SyncKind::Semaphore => format!("{} available permit(s)", v.unwrap_or(0)),
        SyncKind::PermitExpirable => format!(
            "{} available permit(s), {} held",
            v.unwrap_or(0),
            report.permits.len()
        ),
        SyncKind::Latch => match v.unwrap_or(0) {
            n if n > 0 => format!("count {n} (closed: waiters wait)"),
            n => format!("count {n} (open)"),
        },
        SyncKind::SemaphoreOrLatch => match v {
            Some(n) => format!(
                "{n}: as a semaphore, {n} available permit(s); as a latch, count {n} ({})",
                if n > 0 { "closed" } else { "open" }
            ),
            None => "-".to_owned(),
        },
    }
}

/// The human form of one synchronizer.
pub(crate) fn text(report: &SyncReport) -> String {
    let mut rows = vec![
        vec!["name".to_owned(), escape(&report.name)],
        vec!["kind".to_owned(), report.kind.as_str().to_owned()],
        vec!["evidence".to_owned(), report.evidence.clone()],
        vec!["state".to_owned(), state_text(report)],
        vec!["ttl".to_owned(), ttl_text(report.ttl_ms)],
    ];
    if report.key != report.name {
        rows.insert(1, vec!["key".to_owned(), escape(&report.key)]);
    }
    if report.kind == SyncKind::PermitExpirable {
        rows.push(vec![
            "permit set".to_owned(),
            format!(
                "{} (ttl {})",
                report.timeouts_key,
                ttl_text(report.timeouts_ttl_ms)
            ),
        ]);
    }
    rows.push(vec!["read at".to_owned(), timestamp(report.read_at_ms)]);
    let mut out = table("", &rows);
    if report.kind == SyncKind::PermitExpirable {
        if report.permits.is_empty() {
            out.push_str("holders: none\n");
        } else {
            out.push_str("holders:\n");
            let mut rows = vec![vec![
                "PERMIT ID".to_owned(),
                "LEASE LEFT".to_owned(),
                "EXPIRES (UTC)".to_owned(),
            ]];
            for permit in &report.permits {
                rows.push(vec![
                    permit.id.clone(),
                    lease_text(permit, report.read_at_ms),
                    permit.expires_ms.map_or_else(|| "-".to_owned(), timestamp),
                ]);
            }
            out.push_str(&table("  ", &rows));
        }
    }
    let show_sem = report.kind != SyncKind::Latch;
    let show_latch = matches!(report.kind, SyncKind::Latch | SyncKind::SemaphoreOrLatch);
    for (shown, subs) in [
        (show_sem, &report.semaphore_channel),
        (show_latch, &report.latch_channel),
    ] {
        if shown {
            out.push_str(&subs.waiters_line());
        }
    }
    if !report.notes.is_empty() {
        out.push_str("notes:\n");
        for note in &report.notes {
            out.push_str(&format!("  - {note}\n"));
        }
    }
    out
}

/// The JSON form of one synchronizer, in the shape of a lock's (`name`, `key`, `found`,
/// `kind`, `locked`, `ttl_ms`, `subscribers`, `read_at_ms`, `notes`) with the
/// synchronizer's own fields.
pub(crate) fn json(report: &SyncReport) -> Json {
    let now = report.read_at_ms;
    let mut value = json!({
        "name": report.name,
        "key": report.key,
        "found": true,
        "kind": report.kind.as_str(),
        "evidence": report.evidence,
        "locked": false,
        "ttl_ms": report.ttl_ms,
        "value": report.value,
        "read_at_ms": now,
        "notes": report.notes,
    });
    match report.kind {
        SyncKind::Semaphore => {
            value["permits"] = json!(report.value.unwrap_or(0));
            value["subscribers"] = report.semaphore_channel.json();
        }
        SyncKind::Latch => {
            value["count"] = json!(report.value.unwrap_or(0));
            value["open"] = json!(report.value.unwrap_or(0) <= 0);
            value["subscribers"] = report.latch_channel.json();
        }
        SyncKind::SemaphoreOrLatch => {
            value["candidates"] = json!(["semaphore", "count-down-latch"]);
            value["subscribers"] = json!({
                "semaphore": report.semaphore_channel.json(),
                "latch": report.latch_channel.json(),
            });
        }
        SyncKind::PermitExpirable => {
            value["available_permits"] = json!(report.value.unwrap_or(0));
            value["expired_permits"] = json!(report.expired());
            value["permit_set"] = json!({
                "key": report.timeouts_key,
                "ttl_ms": report.timeouts_ttl_ms,
            });
            value["holders"] = report
                .permits
                .iter()
                .map(|p| {
                    json!({
                        "permit_id": p.id,
                        "expires_ms": p.expires_ms,
                        "expires": p.expires_ms.map(timestamp),
                        "lease_left_ms": p.expires_ms.map(|e| e - now),
                        "no_lease": p.expires_ms.is_none(),
                    })
                })
                .collect();
            value["subscribers"] = report.semaphore_channel.json();
        }
    }
    value
}

/// `list`: one row per synchronizer, in the lock table's columns (NAME, KIND, TTL,
/// WAITERS, HOLDERS/STATE).
pub(crate) fn list_row(report: &SyncReport) -> Vec<String> {
    let waiters = match report.kind {
        SyncKind::Latch => report.latch_channel.total(),
        SyncKind::SemaphoreOrLatch => {
            report.semaphore_channel.total() + report.latch_channel.total()
        }
        _ => report.semaphore_channel.total(),
    };
    vec![
        escape(&report.name),
        report.kind.as_str().to_owned(),
        ttl_text(report.ttl_ms),
        format!("{waiters} sub"),
        state_text(report),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_permit_ids() {
        assert_eq!(tag("sem"), "{sem}");
        assert_eq!(tag("sem{x}"), "sem{x}");
        let reply = vec![
            Value::Bytes(
                vec![
                    0x1e, 0xb2, 0x48, 0x8e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb9,
                ]
                .into(),
            ),
            Value::Double(NO_LEASE as f64),
            Value::Bytes(vec![0xff; 16].into()),
            Value::Double(1_000.0),
        ];
        let permits = permits_of(reply);
        assert_eq!(permits[0].id, "f".repeat(32));
        assert_eq!(permits[0].expires_ms, Some(1_000));
        assert_eq!(permits[1].id, "1eb2488e0000000000000000000000b9");
        assert_eq!(permits[1].expires_ms, None);
    }
}
