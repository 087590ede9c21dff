//! `orphans`: the lock-family keys that no client will ever remove, found with `SCAN`
//! (never `KEYS`; every primary of a cluster), each classified by one read-only script and,
//! with `--clean`, removed by the same script, which checks the condition again in the same
//! atomic step.
//!
//! The keys looked at (N is the lock's name, T its hash tag: `{N}`, or N when it contains
//! `{`):
//!
//! | key | orphaned when |
//! |---|---|
//! | `redisson_lock_queue:T` (fair queue) | no lock N, and no waiter with a deadline still ahead |
//! | `redisson_lock_timeout:T` (fair deadlines) | no lock N, and every deadline passed |
//! | `redisson_lock_token:T` (fencing token) | no lock N (reported; removed only with `--clean-tokens --yes`) |
//! | `redisson_unlock_latch:T:<id>` (unlock latch) | it has no TTL (a latch lives one unlock's retry window) |
//! | `T:<client>:<owner>:rwlock_timeout:K` (read hold) | lock N no longer has K read holds of that owner |
//!
//! Lock hashes themselves are not reported: a lock always has a lease and ends by itself
//! (`list` and `inspect` show them).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use redisson_lock::fred::prelude::{Client as Redis, LuaInterface, Value};
use redisson_lock::fred::types::scan::Scanner;
use serde_json::json;

use crate::glob;
use crate::inspect::escape;
use crate::session::{EXIT_OK, Failure, Out, Session};

/// What `--clean` and `--clean-tokens` were asked to remove.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cleaning {
    /// Remove the provably dead keys other than token counters.
    pub(crate) dead: bool,
    /// Remove orphaned token counters too (`--clean-tokens --yes`).
    pub(crate) tokens: bool,
}

/// Why removing a token counter is refused by default (printed before it is done).
pub(crate) const TOKEN_WARNING: &str = "\
A fencing token counter (redisson_lock_token:{N}) holds the last token handed out for lock N.
Fenced resources accept only tokens above the highest they have seen. If the counter is
removed, Java Redisson starts the lock's tokens again at 1 (this crate starts them at the
server clock), so a new holder's writes can be refused as stale, or, if a resource keeps
its highest token elsewhere with a lower value, a stale holder's writes accepted. Remove a
counter only for a lock that will never be used again (docs/fencing.md).";

/// The kinds of lock-family keys this command classifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    FairQueue,
    FairTimeouts,
    Token,
    Latch,
    ReadTimeout,
}

impl Family {
    fn as_str(self) -> &'static str {
        match self {
            Family::FairQueue => "fair-queue",
            Family::FairTimeouts => "fair-deadlines",
            Family::Token => "fencing-token",
            Family::Latch => "unlock-latch",
            Family::ReadTimeout => "read-hold-timeout",
        }
    }

    fn script_kind(self) -> &'static str {
        match self {
            Family::FairQueue => "queue",
            Family::FairTimeouts => "timeouts",
            Family::Token => "token",
            Family::Latch => "latch",
            Family::ReadTimeout => "read",
        }
    }
}

/// A key recognised by its name as a lock-family key.
#[derive(Debug, PartialEq, Eq)]
struct Candidate {
    family: Family,
    /// The names of the lock it may belong to (two when `{x}` may be the tag of `x` or the
    /// name `{x}` itself), as stored in Redis.
    locks: Vec<String>,
    /// The fair queue of a deadline set, or the deadline set of a queue.
    companion: Option<String>,
    /// A read hold's owner field and hold number.
    read_hold: Option<(String, u64)>,
}

const QUEUE: &str = "redisson_lock_queue:";
const TIMEOUTS: &str = "redisson_lock_timeout:";
const TOKEN: &str = "redisson_lock_token:";
const LATCH: &str = "redisson_unlock_latch:";
const READ_TIMEOUT: &str = ":rwlock_timeout:";

/// The lock names a hash tag `T` may stand for: `{x}` is the tag of `x` (a name without
/// braces) or the name `{x}` itself; a tag with other braces is the name itself; a text
/// without `{` is not a Redisson tag.
fn names_of_tag(tag: &str) -> Vec<String> {
    if let Some(inner) = tag.strip_prefix('{').and_then(|t| t.strip_suffix('}'))
        && !inner.is_empty()
        && !inner.contains(['{', '}'])
    {
        return vec![inner.to_owned(), tag.to_owned()];
    }
    if tag.contains('{') {
        vec![tag.to_owned()]
    } else {
        Vec::new()
    }
}

/// Recognises a lock-family key by its name.
fn candidate(key: &str) -> Option<Candidate> {
    let plain = |family: Family, tag: &str, companion: Option<String>| {
        let locks = names_of_tag(tag);
        (!locks.is_empty()).then_some(Candidate {
            family,
            locks,
            companion,
            read_hold: None,
        })
    };
    if let Some(tag) = key.strip_prefix(QUEUE) {
        return plain(Family::FairQueue, tag, Some(format!("{TIMEOUTS}{tag}")));
    }
    if let Some(tag) = key.strip_prefix(TIMEOUTS) {
        return plain(Family::FairTimeouts, tag, Some(format!("{QUEUE}{tag}")));
    }
    if let Some(tag) = key.strip_prefix(TOKEN) {
        return plain(Family::Token, tag, None);
    }
    if let Some(rest) = key.strip_prefix(LATCH) {
        // `T:<request id>`: the tag ends at the last `:`.
        let (tag, id) = rest.rsplit_once(':')?;
        if id.is_empty() {
            return None;
        }
        return plain(Family::Latch, tag, None);
    }
    // `T:<client-uuid>:<owner>:rwlock_timeout:K`
    let at = key.rfind(READ_TIMEOUT)?;
    let hold: u64 = key[at + READ_TIMEOUT.len()..].parse().ok()?;
    let before = &key[..at];
    let (rest, owner) = before.rsplit_once(':')?;
    if owner.is_empty() || !owner.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (tag, client) = rest.rsplit_once(':')?;
    if client.len() != 36 || !client.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return None;
    }
    let locks = names_of_tag(tag);
    (!locks.is_empty()).then(|| Candidate {
        family: Family::ReadTimeout,
        locks,
        companion: None,
        read_hold: Some((format!("{client}:{owner}"), hold)),
    })
}

/// Classifies one key and, with `ARGV[2] == '1'`, deletes it when it is dead, in the same
/// atomic step. KEYS[1]: the key; KEYS[2]: its companion (a fair queue's deadline set or a
/// deadline set's queue; else the key again); KEYS[3..]: the lock hashes it may belong to
/// (one slot: they share the hash tag). ARGV[1]: the kind; ARGV[3], ARGV[4]: a read hold's
/// owner field and number. Returns {state, detail, detail}, state `live`, `dead`,
/// `deleted` or `gone` (no longer there, or of another type).
const CHECK_SCRIPT: &str = r#"
local kind = ARGV[1]
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kt = redis.call('TYPE', key)['ok']
local function locked()
  for i = 3, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then return true end
  end
  return false
end
local function dead(a, b)
  if ARGV[2] == '1' then
    redis.call('DEL', key)
    return {'deleted', a, b}
  end
  return {'dead', a, b}
end
if kind == 'queue' then
  if kt ~= 'list' then return {'gone', kt, ''} end
  if locked() then return {'live', 'locked', ''} end
  local waiters = redis.call('LRANGE', key, 0, -1)
  local latest = ''
  for _, w in ipairs(waiters) do
    local dl = redis.call('ZSCORE', KEYS[2], w)
    if dl and tonumber(dl) > now then return {'live', 'waiting', dl} end
    if dl and (latest == '' or tonumber(dl) > tonumber(latest)) then latest = dl end
  end
  return dead(tostring(#waiters), latest)
elseif kind == 'timeouts' then
  if kt ~= 'zset' then return {'gone', kt, ''} end
  if locked() then return {'live', 'locked', ''} end
  local ahead = redis.call('ZRANGEBYSCORE', key, '(' .. now, '+inf', 'LIMIT', 0, 1)
  if #ahead > 0 then return {'live', 'waiting', ''} end
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return dead(tostring(redis.call('ZCARD', key)), last[2] or '')
elseif kind == 'token' then
  if kt ~= 'string' then return {'gone', kt, ''} end
  if locked() then return {'live', 'locked', ''} end
  return dead(redis.call('GET', key), '')
elseif kind == 'latch' then
  if kt ~= 'string' then return {'gone', kt, ''} end
  local ttl = redis.call('PTTL', key)
  if ttl >= 0 then return {'live', tostring(ttl), ''} end
  return dead(redis.call('GET', key), '')
elseif kind == 'read' then
  if kt ~= 'string' then return {'gone', kt, ''} end
  local holds = 0
  for i = 3, #KEYS do
    if redis.call('TYPE', KEYS[i])['ok'] == 'hash' then
      local n = tonumber(redis.call('HGET', KEYS[i], ARGV[3]))
      if n and n > holds then holds = n end
    end
  end
  if holds >= tonumber(ARGV[4]) then return {'live', tostring(holds), ''} end
  return dead(tostring(holds), tostring(redis.call('PTTL', key)))
end
return {'gone', 'unknown kind', ''}
"#;

/// One key's verdict from [`CHECK_SCRIPT`].
struct Verdict {
    state: String,
    a: String,
    b: String,
}

async fn check(redis: &Redis, key: &str, c: &Candidate, delete: bool) -> Result<Verdict, String> {
    let mut keys = Vec::with_capacity(2 + c.locks.len());
    keys.push(key.to_owned());
    keys.push(c.companion.clone().unwrap_or_else(|| key.to_owned()));
    keys.extend(c.locks.iter().cloned());
    let (field, hold) = c
        .read_hold
        .clone()
        .map_or((String::new(), 0), |(f, k)| (f, k));
    let args = vec![
        c.family.script_kind().to_owned(),
        if delete { "1" } else { "0" }.to_owned(),
        field,
        hold.to_string(),
    ];
    let reply: Value = redis
        .eval(CHECK_SCRIPT, keys, args)
        .await
        .map_err(|e| format!("checking {}: {e}", escape(key)))?;
    let text = |v: Option<&Value>| v.and_then(|v| v.as_string()).unwrap_or_default();
    match reply {
        Value::Array(items) => Ok(Verdict {
            state: text(items.first()),
            a: text(items.get(1)),
            b: text(items.get(2)),
        }),
        other => Err(format!(
            "unexpected reply checking {}: {other:?}",
            escape(key)
        )),
    }
}

/// One orphaned key, as reported.
struct Orphan {
    key: String,
    family: Family,
    lock: String,
    reason: String,
    /// A token counter's value.
    value: Option<String>,
    /// `Some(true)` removed, `Some(false)` found live again when removing, `None` kept.
    cleaned: Option<bool>,
}

/// Why a dead key is dead, in words, from the script's details.
fn reason(family: Family, a: &str, b: &str) -> String {
    let deadline = |ms: &str| {
        ms.parse::<f64>()
            .map(|ms| crate::render::timestamp(ms as i64))
            .unwrap_or_else(|_| "none".to_owned())
    };
    match family {
        Family::FairQueue => format!(
            "no lock; {a} queued waiter(s), none with a deadline ahead (latest {}): waiters \
             that died",
            deadline(b)
        ),
        Family::FairTimeouts => format!(
            "no lock; {a} waiter deadline(s), every one passed (latest {}): waiters that died",
            deadline(b)
        ),
        Family::Token => format!("token counter with no lock (value {a}); kept"),
        Family::Latch => "unlock latch without a TTL: it outlived its retry window".to_owned(),
        Family::ReadTimeout => {
            format!("read-hold timeout key whose hold is gone (the owner holds {a}; ttl {b} ms)")
        }
    }
}

pub(crate) async fn run(
    session: &Session,
    out: &Out,
    pattern: &str,
    count: u32,
    cleaning: Cleaning,
) -> Result<u8, Failure> {
    let redis = session.client.redis();
    if cleaning.tokens {
        eprintln!("redisson-lock: --clean-tokens:\n{TOKEN_WARNING}");
    }
    let mut survey = Survey::default();
    let started = Instant::now();
    let mut last_progress = Instant::now();
    let mut pages = if session.clustered {
        redis.scan_cluster("*", Some(count), None).boxed()
    } else {
        redis.scan("*", Some(count), None).boxed()
    };
    // One page at a time: the next is asked for only when this one is done (bounded
    // memory and bounded work per SCAN call, whatever the size of the database).
    while let Some(page) = pages.next().await {
        let mut page = page.map_err(|e| session.failure(format!("SCAN failed: {e}")))?;
        let keys = page.take_results().unwrap_or_default();
        for key in &keys {
            survey.scanned += 1;
            let Some(key) = key.as_str() else { continue };
            let Some(candidate) = candidate(key) else {
                continue;
            };
            if candidate
                .locks
                .iter()
                .any(|lock| glob::matches(pattern.as_bytes(), lock.as_bytes()))
            {
                survey
                    .classify(redis, key, &candidate, cleaning)
                    .await
                    .map_err(|e| session.failure(e))?;
            }
        }
        drop(keys);
        page.next();
        if last_progress.elapsed() >= Duration::from_secs(2) {
            last_progress = Instant::now();
            eprintln!(
                "redisson-lock: orphans: {} keys scanned in {:.1}s, {} orphaned so far",
                survey.scanned,
                started.elapsed().as_secs_f64(),
                survey.orphans.len()
            );
        }
    }
    let elapsed = started.elapsed();
    if out.json() {
        out.write_json(&survey.json(elapsed), false);
    } else {
        out.write(&survey.text(elapsed));
    }
    Ok(EXIT_OK)
}

/// What a scan found.
#[derive(Default)]
struct Survey {
    scanned: u64,
    /// Live lock-family keys, per family.
    live: BTreeMap<&'static str, u64>,
    orphans: Vec<Orphan>,
}

impl Survey {
    /// Checks one candidate key: counted live, or reported orphaned (and removed when
    /// `cleaning` says so); a key gone meanwhile or of another type is not ours.
    async fn classify(
        &mut self,
        redis: &Redis,
        key: &str,
        candidate: &Candidate,
        cleaning: Cleaning,
    ) -> Result<(), String> {
        let verdict = check(redis, key, candidate, false).await?;
        match verdict.state.as_str() {
            "live" => *self.live.entry(candidate.family.as_str()).or_default() += 1,
            "dead" => {
                let remove = match candidate.family {
                    Family::Token => cleaning.tokens,
                    _ => cleaning.dead,
                };
                let cleaned = if remove {
                    let again = check(redis, key, candidate, true).await?;
                    Some(again.state == "deleted")
                } else {
                    None
                };
                let mut reason = reason(candidate.family, &verdict.a, &verdict.b);
                if candidate.family == Family::Token && cleaned.is_some() {
                    reason = reason.replace("; kept", "");
                }
                self.orphans.push(Orphan {
                    key: key.to_owned(),
                    family: candidate.family,
                    lock: candidate.locks[0].clone(),
                    reason,
                    value: (candidate.family == Family::Token).then(|| verdict.a.clone()),
                    cleaned,
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn removed(&self) -> usize {
        self.orphans
            .iter()
            .filter(|o| o.cleaned == Some(true))
            .count()
    }

    /// The JSON report.
    fn json(&self, elapsed: Duration) -> serde_json::Value {
        let list: Vec<_> = self
            .orphans
            .iter()
            .map(|o| {
                json!({
                    "key": o.key,
                    "kind": o.family.as_str(),
                    "lock": o.lock,
                    "reason": o.reason,
                    "value": o.value,
                    "cleaned": o.cleaned.unwrap_or(false),
                    "live_again": o.cleaned == Some(false),
                })
            })
            .collect();
        let removed = self.removed();
        json!({
            "scanned": self.scanned,
            "elapsed_ms": elapsed.as_millis() as u64,
            "orphans": list,
            "live": self.live,
            "cleaned": removed,
            "remaining": self.orphans.len() - removed,
        })
    }

    /// The text report: a table of the orphans, then the totals.
    fn text(&self, elapsed: Duration) -> String {
        let mut text = self.table();
        let live_total: u64 = self.live.values().sum();
        text.push_str(&format!(
            "{} keys scanned in {:.1}s: {} orphaned ({} removed), {live_total} live \
             lock-family keys\n",
            self.scanned,
            elapsed.as_secs_f64(),
            self.orphans.len(),
            self.removed()
        ));
        if self
            .orphans
            .iter()
            .any(|o| o.family == Family::Token && o.cleaned.is_none())
        {
            text.push_str(
                "token counters are kept: removing one lets Java Redisson restart that lock's \
                 tokens at 1 (see --clean-tokens)\n",
            );
        }
        text
    }

    fn table(&self) -> String {
        if self.orphans.is_empty() {
            return "no orphaned lock keys\n".to_owned();
        }
        let width = self
            .orphans
            .iter()
            .map(|o| o.key.len())
            .max()
            .unwrap_or(3)
            .max(3);
        let mut text = format!(
            "{:<width$}  {:<17}  {:<8}  REASON\n",
            "KEY", "KIND", "STATE"
        );
        for o in &self.orphans {
            let state = match o.cleaned {
                Some(true) => "removed",
                Some(false) => "live now",
                None => "orphaned",
            };
            text.push_str(&format!(
                "{:<width$}  {:<17}  {:<8}  {}\n",
                escape(&o.key),
                o.family.as_str(),
                state,
                o.reason
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_recognised_by_name() {
        let c = candidate("redisson_lock_queue:{orders}").unwrap();
        assert_eq!(c.family, Family::FairQueue);
        assert_eq!(c.locks, ["orders", "{orders}"]);
        assert_eq!(
            c.companion.as_deref(),
            Some("redisson_lock_timeout:{orders}")
        );
        let c = candidate("redisson_lock_token:a{b}c").unwrap();
        assert_eq!(c.locks, ["a{b}c"]);
        assert!(candidate("redisson_lock_token:plain").is_none());
        let c = candidate("redisson_unlock_latch:{x}:0123abcd").unwrap();
        assert_eq!((c.family, c.locks[0].as_str()), (Family::Latch, "x"));
        let c = candidate("{r}:6e3d30b7-83b1-433a-9335-5e8b9916d3ac:52:rwlock_timeout:2").unwrap();
        assert_eq!(c.family, Family::ReadTimeout);
        assert_eq!(c.locks[0], "r");
        assert_eq!(
            c.read_hold,
            Some(("6e3d30b7-83b1-433a-9335-5e8b9916d3ac:52".to_owned(), 2))
        );
        assert!(candidate("{r}:not-a-uuid:52:rwlock_timeout:2").is_none());
        assert!(candidate("orders").is_none());
    }
}
