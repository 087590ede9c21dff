//! `list`: every lock-shaped key, found with `SCAN` (never `KEYS`), on every primary of a
//! cluster. With `--prefix`, only keys under the prefix, shown without it.
//!
//! Synchronizers are listed when Redis tells what they are: a permit-expirable
//! semaphore by its `{N}:timeout` set, a semaphore or a latch by the waiters on its
//! channel (`PUBSUB CHANNELS`: no per-key work). A string key holding an integer with no
//! waiters could be either, or any counter: it is listed only with `--kind` (every
//! string key is then scanned, as that kind).

use futures::StreamExt;
use redisson_lock::fred::prelude::{ClientLike, ClusterInterface, Value};
use redisson_lock::fred::types::scan::ScanType;
use redisson_lock::fred::types::{ClusterHash, CustomCommand};

use crate::inspect::{self, Outcome, Report};
use crate::render;
use crate::session::{EXIT_NOT_FOUND, EXIT_OK, Failure, Out, Session};
use crate::synchronizers::{self, KindArg, SyncKind, SyncReport};

pub(crate) async fn run(
    session: &Session,
    out: &Out,
    pattern: &str,
    count: u32,
    kind: Option<KindArg>,
) -> Result<u8, Failure> {
    // With --prefix the names live under it: match the prefix literally, then the pattern.
    let scanned = match session.client.config().name_mapper() {
        Some(mapper) => format!("{}{pattern}", crate::glob::literal(&mapper.map(""))),
        None => pattern.to_owned(),
    };
    let (reports, skipped_locks) = held_locks(session, &scanned, count).await?;
    let found = synchronizers_found(session, &scanned, count, kind).await?;
    if out.json() {
        let mut all: Vec<_> = reports
            .iter()
            .map(|r| render::outcome_json(&Outcome::Lock(Box::new(r.clone()))))
            .collect();
        all.extend(found.reports.iter().map(synchronizers::json));
        out.write_json(&serde_json::Value::Array(all), false);
    } else {
        out.write(&listing_text(&reports, &found.reports, pattern));
        warn(skipped_locks + found.skipped, found.ambiguous, kind);
    }
    Ok(if reports.is_empty() && found.reports.is_empty() {
        EXIT_NOT_FOUND
    } else {
        EXIT_OK
    })
}

/// The held locks whose key matches `scanned`, and how many keys were not UTF-8.
async fn held_locks(
    session: &Session,
    scanned: &str,
    count: u32,
) -> Result<(Vec<Report>, usize), Failure> {
    // Lock hashes: every kind keeps its holders in a hash named after the lock.
    let (hashes, skipped) = scan(session, scanned, count, ScanType::Hash).await?;
    let mut names: Vec<String> = hashes
        .iter()
        .filter_map(|key| session.unmapped(key))
        .collect();
    names.sort();
    names.dedup();
    let mut reports = Vec::new();
    for name in &names {
        let outcome = inspect::inspect(session.client.redis(), &session.keys(name), name)
            .await
            .map_err(|e| session.failure(format!("reading lock {}: {e}", inspect::escape(name))))?;
        if let Outcome::Lock(report) = outcome
            && report.locked
        {
            reports.push(*report);
        }
    }
    Ok((reports, skipped))
}

/// The synchronizers `list` found.
struct Found {
    reports: Vec<SyncReport>,
    /// Keys with waiters on both a semaphore's and a latch's channel (not listed).
    ambiguous: usize,
    /// Keys that were not UTF-8.
    skipped: usize,
}

/// The synchronizers whose key matches `scanned`: the permit sets `T:timeout` of
/// expirable semaphores, the keys whose semaphore or latch channel has subscribers, and
/// with --kind every string key.
async fn synchronizers_found(
    session: &Session,
    scanned: &str,
    count: u32,
    kind: Option<KindArg>,
) -> Result<Found, Failure> {
    let (sets, mut skipped) = scan(session, "*:timeout", count, ScanType::ZSet).await?;
    let mut sync_keys: Vec<String> = sets
        .iter()
        .filter_map(|set| key_of_tag(set.strip_suffix(":timeout")?))
        .collect();
    sync_keys.extend(waited_on(session).await);
    sync_keys.retain(|key| crate::glob::matches(scanned.as_bytes(), key.as_bytes()));
    if kind.is_some() {
        let (strings, skipped_strings) = scan(session, scanned, count, ScanType::String).await?;
        skipped += skipped_strings;
        sync_keys.extend(strings);
    }
    sync_keys.sort();
    sync_keys.dedup();
    let mut found = Found {
        reports: Vec::new(),
        ambiguous: 0,
        skipped,
    };
    for key in &sync_keys {
        let Some(name) = session.unmapped(key) else {
            continue;
        };
        let report = synchronizers::inspect(session.client.redis(), key, &name, kind)
            .await
            .map_err(|e| session.failure(format!("reading {}: {e}", inspect::escape(&name))))?;
        match report {
            Some(report) if report.kind == SyncKind::SemaphoreOrLatch => found.ambiguous += 1,
            Some(report) => found.reports.push(report),
            None => {}
        }
    }
    Ok(found)
}

/// The text listing: the locks' table, then the synchronizers'.
fn listing_text(reports: &[Report], syncs: &[SyncReport], pattern: &str) -> String {
    if reports.is_empty() && syncs.is_empty() {
        return format!("no locks match {pattern:?}\n");
    }
    let mut text = String::new();
    if !reports.is_empty() {
        text.push_str(&render::list_text(reports));
    }
    if !syncs.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        let mut rows = vec![vec![
            "NAME".to_owned(),
            "KIND".to_owned(),
            "TTL".to_owned(),
            "WAITERS".to_owned(),
            "STATE".to_owned(),
        ]];
        rows.extend(syncs.iter().map(synchronizers::list_row));
        text.push_str(&render::table("", &rows));
    }
    text
}

/// What the text listing leaves out, on stderr.
fn warn(skipped: usize, ambiguous: usize, kind: Option<KindArg>) {
    if skipped > 0 {
        eprintln!("redisson-lock: skipped {skipped} key(s) whose names are not UTF-8");
    }
    if ambiguous > 0 {
        eprintln!(
            "redisson-lock: {ambiguous} key(s) have waiters on both a semaphore's and a \
             latch's channel: inspect them, or list with --kind"
        );
    }
    if kind.is_none() {
        eprintln!(
            "redisson-lock: semaphores and latches nobody waits on are not listed (a string \
             key holding an integer could be either, or any counter): list them with \
             --kind semaphore or --kind latch"
        );
    }
}

/// The UTF-8 keys of `kind` matching `pattern` on every primary, and how many keys were
/// not UTF-8 (Redisson names objects with strings: such a key is none of theirs).
async fn scan(
    session: &Session,
    pattern: &str,
    count: u32,
    kind: ScanType,
) -> Result<(Vec<String>, usize), Failure> {
    let redis = session.client.redis();
    let keys: Vec<_> = if session.clustered {
        redis
            .scan_cluster_buffered(pattern, Some(count), Some(kind))
            .collect()
            .await
    } else {
        redis
            .scan_buffered(pattern, Some(count), Some(kind))
            .collect()
            .await
    };
    let mut found = Vec::new();
    let mut skipped = 0usize;
    for key in keys {
        let key = key.map_err(|e| session.failure(format!("SCAN failed: {e}")))?;
        match key.as_str() {
            Some(key) => found.push(key.to_owned()),
            None => skipped += 1,
        }
    }
    Ok((found, skipped))
}

/// The key `N` of a hash tag `T` (`{N}`, or N itself when it has braces); `None` for a
/// text that is no Redisson tag.
fn key_of_tag(tag: &str) -> Option<String> {
    match tag.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        Some(inner) if !inner.is_empty() && !inner.contains(['{', '}']) => Some(inner.to_owned()),
        _ if tag.contains('{') => Some(tag.to_owned()),
        _ => None,
    }
}

/// The keys whose semaphore channel (`redisson_sc:T`) or latch channel
/// (`redisson_countdownlatch__channel__{N}`) has subscribers: `PUBSUB CHANNELS` and
/// `SHARDCHANNELS` on the server, or on every primary of a cluster (a subscriber
/// connected to a replica is not seen).
async fn waited_on(session: &Session) -> Vec<String> {
    const SEMAPHORE: &str = "redisson_sc:";
    const LATCH: &str = "redisson_countdownlatch__channel__";
    let redis = session.client.redis();
    let targets: Vec<ClusterHash> = if session.clustered {
        let mut firsts: Vec<(String, u16)> = Vec::new();
        if let Some(routing) = redis.cached_cluster_state() {
            for range in routing.slots() {
                if !firsts.iter().any(|(p, _)| *p == range.id) {
                    firsts.push((range.id.to_string(), range.start));
                }
            }
        }
        firsts
            .into_iter()
            .map(|(_, slot)| ClusterHash::Custom(slot))
            .collect()
    } else {
        vec![ClusterHash::Random]
    };
    let mut keys = Vec::new();
    for target in targets {
        for sub in ["CHANNELS", "SHARDCHANNELS"] {
            for pattern in [format!("{SEMAPHORE}*"), format!("{LATCH}*")] {
                let command = CustomCommand::new_static("PUBSUB", target.clone(), false);
                let Ok(channels) = redis
                    .custom::<Vec<Value>, _>(command, vec![sub, pattern.as_str()])
                    .await
                else {
                    continue; // SHARDCHANNELS before Redis 7
                };
                for channel in channels {
                    let Some(channel) = channel.as_str() else {
                        continue;
                    };
                    let key = if let Some(tag) = channel.strip_prefix(SEMAPHORE) {
                        key_of_tag(tag)
                    } else {
                        channel
                            .strip_prefix(LATCH)
                            .and_then(|c| c.strip_prefix('{'))
                            .and_then(|c| c.strip_suffix('}'))
                            .map(str::to_owned)
                    };
                    keys.extend(key);
                }
            }
        }
    }
    keys
}
