//! Reading one lock's raw state from Redis into a typed [`Report`].
//!
//! The kind is read from Redis, never guessed from the name: a `mode` field means a
//! read-write lock; a wait queue or deadline set means a fair lock; a token counter means a
//! fenced lock; any other hash whose every field is `<uuid>:<digits>` with an integer value
//! is a reentrant lock (spin and non-reentrant locks write the very same hash).

mod holders;

use std::collections::HashMap;

use redisson_lock::fred::prelude::{
    Client as Redis, ClientLike, Error as RedisError, KeysInterface, Value,
};
use redisson_lock::fred::types::{ClusterHash, CustomCommand};
use redisson_lock::names::LockKeys;

use holders::{hash_fields, parse_holders, split_field};

/// The lock kinds that can be told apart from Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Reentrant,
    Fair,
    ReadWrite,
    Fenced,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Reentrant => "reentrant",
            Kind::Fair => "fair",
            Kind::ReadWrite => "read-write",
            Kind::Fenced => "fenced",
        }
    }
}

/// One hash field of a lock: who holds it and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Holder {
    /// The hash field as stored: `<client-id>:<owner>` (`:write` appended for a writer).
    pub(crate) field: String,
    /// The Redisson client id (a `RedissonClient`'s UUID, or this crate's `Client::id`).
    pub(crate) client_id: String,
    /// The Java thread id, or this crate's owner id.
    pub(crate) owner: String,
    /// The hold count (re-entries included).
    pub(crate) holds: i64,
    /// `read` or `write` for a read-write lock, `None` for the other kinds.
    pub(crate) role: Option<&'static str>,
    /// For a reader: the remaining TTL of each read hold (`rwlock_timeout:k`, k = 1..),
    /// in ms; `None` when that hold's timeout key is gone.
    pub(crate) read_hold_ttls_ms: Vec<Option<i64>>,
}

/// One queued fair-lock waiter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub(crate) field: String,
    pub(crate) client_id: String,
    pub(crate) owner: String,
    /// The absolute deadline (epoch ms) by which it must have taken the lock, as written
    /// by the waiter; `None` when the deadline set has no entry for it.
    pub(crate) deadline_ms: Option<i64>,
    /// Connections subscribed to this waiter's own channel (a live waiter listens there).
    pub(crate) subscribed: Option<i64>,
}

/// Subscriber counts of a lock's channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Subscribers {
    pub(crate) channel: String,
    /// `PUBSUB NUMSUB` (classic pub/sub); on a cluster only the slot owner's connections.
    pub(crate) classic: Option<i64>,
    /// `PUBSUB SHARDNUMSUB` (sharded pub/sub, Redis 7+).
    pub(crate) sharded: Option<i64>,
}

impl Subscribers {
    /// Reads both counts of `channel`.
    pub(crate) async fn read(redis: &Redis, channel: String) -> Subscribers {
        let (classic, sharded) = numsub(redis, &channel).await;
        Subscribers {
            channel,
            classic,
            sharded,
        }
    }

    /// Connections subscribed either way.
    pub(crate) fn total(&self) -> i64 {
        self.classic.unwrap_or(0) + self.sharded.unwrap_or(0)
    }

    /// As the inspector's JSON shows it.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({"channel": self.channel, "classic": self.classic, "sharded": self.sharded})
    }

    /// The inspector's text line.
    pub(crate) fn waiters_line(&self) -> String {
        let count = |n: Option<i64>| n.map_or_else(|| "n/a".to_owned(), |n| n.to_string());
        format!(
            "waiters: {} subscribed connection(s) on {} (sharded: {})\n",
            count(self.classic),
            self.channel,
            count(self.sharded)
        )
    }
}

/// What Redis holds for one lock name.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The name as the application gives it (unmapped, with `--prefix`).
    pub(crate) name: String,
    /// The lock hash's key: the name as stored in Redis (with `--prefix`, the prefix and
    /// the name).
    pub(crate) key: String,
    pub(crate) kind: Kind,
    /// Whether the lock hash exists (someone holds it).
    pub(crate) locked: bool,
    /// `PTTL` of the lock hash: ms left, -1 without expiry, `None` when not locked.
    pub(crate) ttl_ms: Option<i64>,
    /// The read-write lock's `mode` field.
    pub(crate) mode: Option<String>,
    pub(crate) holders: Vec<Holder>,
    /// The fenced lock's last token (`redisson_lock_token:{N}`).
    pub(crate) fencing_token: Option<String>,
    /// The fair lock's queue, head first.
    pub(crate) queue: Vec<Waiter>,
    /// Subscribers of the lock's channel (not for fair locks: their waiters each have a
    /// channel of their own).
    pub(crate) subscribers: Option<Subscribers>,
    /// Our clock when the state was read, epoch ms (fair deadlines are relative to it).
    pub(crate) read_at_ms: i64,
    pub(crate) notes: Vec<String>,
}

/// The result of looking up one name.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Lock(Box<Report>),
    /// No lock key and no auxiliary key.
    NotFound {
        name: String,
        key: String,
    },
    /// A key that exists but is not a lock.
    NotALock {
        name: String,
        key: String,
        key_type: String,
        reason: String,
    },
}

impl Outcome {
    /// Whether this is a lock that someone holds (exit code 0 for it).
    pub(crate) fn is_held(&self) -> bool {
        matches!(self, Outcome::Lock(report) if report.locked)
    }
}

/// What `CLIENT LIST` cannot tell: said once per report, in every output form.
pub(crate) const HOLDER_CONNECTED: &str = "unknown: Redisson client ids are not visible to the server (neither Java Redisson nor \
     this crate sends them to Redis, so CLIENT LIST cannot match a holder to a connection)";

/// Reads the state of the lock with `keys`, shown as `name` (the name as given, before any
/// name mapper).
pub(crate) async fn inspect(
    redis: &Redis,
    keys: &LockKeys,
    name: &str,
) -> Result<Outcome, RedisError> {
    let key = keys.name();
    let key_type: String = redis.r#type(key).await?;
    let mut notes = Vec::new();
    let beside = Beside::read(redis, keys, &mut notes).await?;
    let read_at_ms = now_ms();
    let (key_type, fields) = lock_hash(redis, key, key_type).await?;
    let not_a_lock = |key_type: String, reason: String| {
        Ok(Outcome::NotALock {
            name: name.to_owned(),
            key: key.to_owned(),
            key_type,
            reason,
        })
    };
    match key_type.as_str() {
        "none" if !beside.fair && beside.fencing_token.is_none() => {
            return Ok(Outcome::NotFound {
                name: name.to_owned(),
                key: key.to_owned(),
            });
        }
        "none" | "hash" => {}
        other => {
            let reason = format!("the key is a {other}; a Redisson lock is a hash");
            return not_a_lock(other.to_owned(), reason);
        }
    }
    let locked = key_type == "hash";
    let mode = fields
        .iter()
        .find(|(field, _)| field.as_slice() == b"mode")
        .map(|(_, value)| String::from_utf8_lossy(value).into_owned());
    let kind = beside.kind(mode.is_some());
    let mut holders = match parse_holders(kind, mode.as_deref(), &fields) {
        Ok(holders) => holders,
        Err(reason) => return not_a_lock(key_type, reason),
    };
    if kind == Kind::ReadWrite {
        read_hold_ttls(redis, keys, &mut holders).await?;
    }
    let ttl_ms = if locked {
        Some(redis.pttl::<i64, _>(key).await?)
    } else {
        None
    };
    let (queue, subscribers) = if kind == Kind::Fair {
        let queue = fair_queue(redis, keys, read_at_ms, locked, &mut notes).await?;
        (queue, None)
    } else {
        let subscribers = lock_channel(redis, keys, kind, &mut notes).await;
        (Vec::new(), Some(subscribers))
    };
    notes.extend(kind_note(kind, locked, queue.is_empty()));
    if ttl_ms == Some(-1) {
        notes.push(
            "the lock hash has no expiry: it stays until unlocked or force-unlocked".to_owned(),
        );
    }
    Ok(Outcome::Lock(Box::new(Report {
        name: name.to_owned(),
        key: key.to_owned(),
        kind,
        locked,
        ttl_ms,
        mode,
        holders,
        fencing_token: beside.fencing_token,
        queue,
        subscribers,
        read_at_ms,
        notes,
    })))
}

/// What a lock's other keys say: whether it has a fair lock's queue or deadline set, and
/// its fencing token.
struct Beside {
    fair: bool,
    fencing_token: Option<String>,
}

impl Beside {
    /// Reads the fair lock's keys and the token counter (a note when the counter's key
    /// is of another type).
    async fn read(
        redis: &Redis,
        keys: &LockKeys,
        notes: &mut Vec<String>,
    ) -> Result<Beside, RedisError> {
        let queue_exists: i64 = redis.exists(keys.fair_queue()).await?;
        let timeouts_exist: i64 = redis.exists(keys.fair_timeouts()).await?;
        let token_type: String = redis.r#type(keys.fencing_token()).await?;
        let fencing_token = match token_type.as_str() {
            "none" => None,
            "string" => redis.get::<Option<String>, _>(keys.fencing_token()).await?,
            other => {
                notes.push(format!(
                    "{} is a {other}, not a token counter",
                    keys.fencing_token()
                ));
                None
            }
        };
        Ok(Beside {
            fair: queue_exists + timeouts_exist > 0,
            fencing_token,
        })
    }

    /// The lock's kind: a `mode` field makes a read-write lock, then a fair lock's keys,
    /// then a token counter.
    fn kind(&self, has_mode: bool) -> Kind {
        if has_mode {
            Kind::ReadWrite
        } else if self.fair {
            Kind::Fair
        } else if self.fencing_token.is_some() {
            Kind::Fenced
        } else {
            Kind::Reentrant
        }
    }
}

/// The lock hash's fields when `key_type` says it is a hash, with the type as it turned
/// out (`none` when the hash was deleted between `TYPE` and `HGETALL`).
async fn lock_hash(
    redis: &Redis,
    key: &str,
    key_type: String,
) -> Result<(String, Vec<(Vec<u8>, Vec<u8>)>), RedisError> {
    if key_type != "hash" {
        return Ok((key_type, Vec::new()));
    }
    let fields = hash_fields(redis, key).await?;
    if fields.is_empty() {
        return Ok(("none".to_owned(), fields));
    }
    Ok((key_type, fields))
}

/// Each reader's read holds' TTLs (`rwlock_timeout:k`).
async fn read_hold_ttls(
    redis: &Redis,
    keys: &LockKeys,
    holders: &mut [Holder],
) -> Result<(), RedisError> {
    for holder in holders.iter_mut().filter(|h| h.role == Some("read")) {
        // A bounded look: a count in the thousands is a bug, not something to list.
        let shown = holder.holds.clamp(0, 64) as u64;
        for k in 1..=shown {
            let ttl: i64 = redis.pttl(keys.read_timeout_key(&holder.field, k)).await?;
            holder
                .read_hold_ttls_ms
                .push(if ttl == -2 { None } else { Some(ttl) });
        }
    }
    Ok(())
}

/// A fair lock's queue, head first, each waiter with its deadline and whether it listens;
/// notes on what is stale in it.
async fn fair_queue(
    redis: &Redis,
    keys: &LockKeys,
    read_at_ms: i64,
    locked: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Waiter>, RedisError> {
    let by_key = |name: &'static str| CustomCommand::new_static(name, ClusterHash::FirstKey, false);
    let fields: Vec<Value> = redis
        .custom(
            by_key("LRANGE"),
            vec![keys.fair_queue(), "0".into(), "-1".into()],
        )
        .await?;
    let scores: Vec<Value> = redis
        .custom(
            by_key("ZRANGE"),
            vec![
                keys.fair_timeouts(),
                "0".into(),
                "-1".into(),
                "WITHSCORES".into(),
            ],
        )
        .await?;
    let deadlines = pairs_to_scores(scores);
    let mut queue = Vec::new();
    for field in fields {
        let field = value_text(&field);
        let (client_id, owner) = split_field(&field);
        let subscribed = numsub(redis, &keys.fair_waiter_channel(&field)).await;
        queue.push(Waiter {
            deadline_ms: deadlines.get(&field).copied(),
            client_id: client_id.to_owned(),
            owner: owner.to_owned(),
            subscribed: match subscribed {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            },
            field,
        });
    }
    notes.extend(queue_notes(keys, &queue, &deadlines, read_at_ms, locked));
    Ok(queue)
}

/// What is stale in a fair lock's queue and deadline set.
fn queue_notes(
    keys: &LockKeys,
    queue: &[Waiter],
    deadlines: &HashMap<String, i64>,
    read_at_ms: i64,
    locked: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    let queued: Vec<&str> = queue.iter().map(|w| w.field.as_str()).collect();
    let orphans = deadlines
        .keys()
        .filter(|field| !queued.contains(&field.as_str()))
        .count();
    if orphans > 0 {
        notes.push(format!(
            "{orphans} deadline(s) in {} have no queue entry (left by a waiter that \
             gave up without acquireFailed; purged by the next acquire)",
            keys.fair_timeouts()
        ));
    }
    if queue
        .iter()
        .any(|w| w.deadline_ms.is_some_and(|d| d <= read_at_ms))
    {
        notes.push(
            "a waiter whose deadline has passed is stale: the next acquire, unlock or \
             force-unlock purges it"
                .to_owned(),
        );
    }
    if !queue.is_empty() && !locked {
        notes.push(
            "nobody holds the lock but waiters are queued: the head takes it on its next \
             try, or leaves at its deadline"
                .to_owned(),
        );
    }
    notes
}

/// The subscribers of the lock's channel (a read-write lock has its own).
async fn lock_channel(
    redis: &Redis,
    keys: &LockKeys,
    kind: Kind,
    notes: &mut Vec<String>,
) -> Subscribers {
    let channel = if kind == Kind::ReadWrite {
        keys.rwlock_channel()
    } else {
        keys.channel()
    };
    let subscribers = Subscribers::read(redis, channel).await;
    notes.push(
        "subscribers = connections subscribed to the channel (a Redisson client shares \
         one subscription among all its waiting threads), not waiting tasks"
            .to_owned(),
    );
    subscribers
}

/// What the kind (and state) leaves unsaid.
fn kind_note(kind: Kind, locked: bool, queue_empty: bool) -> Option<String> {
    let note = match kind {
        Kind::Reentrant => {
            "spin and non-reentrant locks write the same hash as the reentrant lock: they \
             cannot be told apart in Redis"
        }
        Kind::Fenced if !locked => {
            "free; the token counter outlives the lock (the next holder gets the next token)"
        }
        Kind::Fair if !locked && queue_empty => {
            "free; only an empty fair-lock bookkeeping key is left"
        }
        _ => return None,
    };
    Some(note.to_owned())
}

/// Escapes control characters (and quotes) so a name with odd bytes prints on one line.
pub(crate) fn escape(text: &str) -> String {
    if text
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        format!("\"{}\"", text.escape_debug())
    } else {
        text.to_owned()
    }
}

fn value_text(value: &Value) -> String {
    match value.as_bytes() {
        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        None => value.as_str().map(|s| s.into_owned()).unwrap_or_default(),
    }
}

/// `ZRANGE .. WITHSCORES` (a flat list or pairs, by protocol) as member → score.
fn pairs_to_scores(values: Vec<Value>) -> HashMap<String, i64> {
    let mut flat = Vec::new();
    for value in values {
        match value {
            Value::Array(pair) => flat.extend(pair),
            other => flat.push(other),
        }
    }
    flat.chunks(2)
        .filter_map(|pair| match pair {
            [member, score] => {
                let score = score
                    .as_f64()
                    .or_else(|| value_text(score).parse::<f64>().ok())?;
                Some((value_text(member), score as i64))
            }
            _ => None,
        })
        .collect()
}

/// `(PUBSUB NUMSUB, PUBSUB SHARDNUMSUB)` of one channel, each `None` when the server does
/// not answer it. Sent to the node of the channel's slot (cluster).
pub(crate) async fn numsub(redis: &Redis, channel: &str) -> (Option<i64>, Option<i64>) {
    let slot = redisson_lock::fred::util::redis_keyslot(channel.as_bytes());
    let mut counts = [None, None];
    for (i, sub) in ["NUMSUB", "SHARDNUMSUB"].into_iter().enumerate() {
        let command = CustomCommand::new_static("PUBSUB", ClusterHash::Custom(slot), false);
        if let Ok(reply) = redis
            .custom::<Vec<Value>, _>(command, vec![sub, channel])
            .await
        {
            counts[i] = reply.get(1).and_then(Value::as_i64);
        }
    }
    (counts[0], counts[1])
}

/// Our wall clock, epoch ms.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape("a\nb"), "\"a\\nb\"");
        assert_eq!(escape("plain"), "plain");
    }
}
