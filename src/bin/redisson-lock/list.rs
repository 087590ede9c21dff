//! `list`: every lock-shaped key, found with `SCAN` (never `KEYS`), on every primary of a
//! cluster. With `--prefix`, only keys under the prefix, shown without it.

use futures::StreamExt;
use redisson_lock::fred::types::scan::ScanType;

use crate::inspect::{self, Outcome};
use crate::{render, Failure, Out, Session, EXIT_NOT_FOUND, EXIT_OK};

pub(crate) async fn run(
    session: &Session,
    out: &Out,
    pattern: &str,
    count: u32,
) -> Result<u8, Failure> {
    let redis = session.client.redis();
    // With --prefix the names live under it: match the prefix literally, then the pattern.
    let scanned = match session.client.config().name_mapper() {
        Some(mapper) => format!("{}{pattern}", crate::watch::glob_literal(&mapper.map(""))),
        None => pattern.to_owned(),
    };
    // Lock hashes only: every kind keeps its holders in a hash named after the lock.
    let keys: Vec<_> = if session.clustered {
        redis
            .scan_cluster_buffered(scanned.as_str(), Some(count), Some(ScanType::Hash))
            .collect()
            .await
    } else {
        redis
            .scan_buffered(scanned.as_str(), Some(count), Some(ScanType::Hash))
            .collect()
            .await
    };
    let mut names = Vec::new();
    let mut skipped = 0usize;
    for key in keys {
        let key = key.map_err(|e| session.failure(format!("SCAN failed: {e}")))?;
        match key.as_str() {
            // Shown as the apps name it: without --prefix's prefix.
            Some(key) => names.extend(session.unmapped(key)),
            // Redisson names locks with strings: a key that is not UTF-8 is not one.
            None => skipped += 1,
        }
    }
    names.sort();
    names.dedup();

    let mut reports = Vec::new();
    for name in &names {
        let outcome = inspect::inspect(redis, &session.keys(name), name)
            .await
            .map_err(|e| session.failure(format!("reading lock {}: {e}", inspect::escape(name))))?;
        if let Outcome::Lock(report) = outcome {
            if report.locked {
                reports.push(*report);
            }
        }
    }

    if out.json() {
        let all: Vec<_> = reports
            .iter()
            .map(|r| render::outcome_json(&Outcome::Lock(Box::new(r.clone()))))
            .collect();
        out.write_json(&serde_json::Value::Array(all), false);
    } else if reports.is_empty() {
        out.write(&format!("no locks match {pattern:?}\n"));
    } else {
        out.write(&render::list_text(&reports));
    }
    if skipped > 0 && !out.json() {
        eprintln!("redisson-lock: skipped {skipped} hash key(s) whose names are not UTF-8");
    }
    Ok(if reports.is_empty() {
        EXIT_NOT_FOUND
    } else {
        EXIT_OK
    })
}
