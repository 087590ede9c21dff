//! Reports as human tables or as JSON.

use serde_json::{Value as Json, json};

use crate::inspect::{HOLDER_CONNECTED, Holder, Kind, Outcome, Report, Waiter, escape};

/// `12.345s`, `4m 05.0s`, `2h 03m`; `-1` is "no expiry".
pub(crate) fn duration_ms(ms: i64) -> String {
    if ms < 0 {
        return format!("-{}", duration_ms(-ms));
    }
    let secs = ms / 1000;
    if secs < 60 {
        format!("{}.{:03}s", secs, ms % 1000)
    } else if secs < 3600 {
        format!("{}m {:02}.{}s", secs / 60, secs % 60, (ms % 1000) / 100)
    } else {
        format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

pub(crate) fn ttl_text(ttl_ms: Option<i64>) -> String {
    match ttl_ms {
        None => "-".to_owned(),
        Some(-1) => "no expiry".to_owned(),
        Some(ms) => duration_ms(ms),
    }
}

/// Epoch ms as `2026-05-01T03:00:12.345Z` (UTC).
pub(crate) fn timestamp(epoch_ms: i64) -> String {
    let days = epoch_ms.div_euclid(86_400_000);
    let ms_of_day = epoch_ms.rem_euclid(86_400_000);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms_of_day / 3_600_000,
        (ms_of_day / 60_000) % 60,
        (ms_of_day / 1000) % 60,
        ms_of_day % 1000
    )
}

/// Left-aligned columns, two spaces apart, each line prefixed by `indent`.
pub(crate) fn table(indent: &str, rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = indent.to_owned();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                let pad = widths[c] - cell.chars().count() + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn holder_row(holder: &Holder) -> Vec<String> {
    let mut row = vec![
        holder.client_id.clone(),
        holder.owner.clone(),
        holder.holds.to_string(),
    ];
    if let Some(role) = holder.role {
        row.push(role.to_owned());
        row.push(
            holder
                .read_hold_ttls_ms
                .iter()
                .map(|ttl| ttl.map_or_else(|| "gone".to_owned(), duration_ms))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    row
}

fn waiter_row(position: usize, waiter: &Waiter, now_ms: i64) -> Vec<String> {
    vec![
        (position + 1).to_string(),
        waiter.client_id.clone(),
        waiter.owner.clone(),
        waiter.deadline_ms.map_or_else(|| "-".to_owned(), timestamp),
        waiter.deadline_ms.map_or_else(
            || "-".to_owned(),
            |d| {
                if d > now_ms {
                    format!("in {}", duration_ms(d - now_ms))
                } else {
                    format!("{} ago (stale)", duration_ms(now_ms - d))
                }
            },
        ),
        waiter
            .subscribed
            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
    ]
}

/// The human form of one lookup.
pub(crate) fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::NotFound { name, .. } => {
            format!("{}: not locked (no such lock)\n", escape(name))
        }
        Outcome::NotALock {
            name,
            key_type,
            reason,
            ..
        } => format!("{}: not a lock ({key_type}): {reason}\n", escape(name)),
        Outcome::Lock(report) => report_text(report),
    }
}

fn report_text(report: &Report) -> String {
    let mut out = table("", &head_rows(report));
    out.push_str(&holders_text(report));
    if report.kind == Kind::Fair {
        out.push_str(&queue_text(report));
    }
    if let Some(subs) = &report.subscribers {
        out.push_str(&subs.waiters_line());
    }
    if !report.notes.is_empty() {
        out.push_str("notes:\n");
        for note in &report.notes {
            out.push_str(&format!("  - {note}\n"));
        }
    }
    out
}

/// The report's head: the lock, its key (with --prefix), kind, state, TTL, token, and
/// when it was read.
fn head_rows(report: &Report) -> Vec<Vec<String>> {
    let state = match (report.locked, report.mode.as_deref()) {
        (true, Some(mode)) => format!("locked ({mode} mode)"),
        (true, None) => "locked".to_owned(),
        (false, _) => "not locked".to_owned(),
    };
    let mut head = vec![
        vec!["lock".to_owned(), escape(&report.name)],
        vec!["kind".to_owned(), report.kind.as_str().to_owned()],
        vec!["state".to_owned(), state],
        vec!["ttl".to_owned(), ttl_text(report.ttl_ms)],
    ];
    if report.key != report.name {
        // With --prefix: the key as stored in Redis.
        head.insert(1, vec!["key".to_owned(), escape(&report.key)]);
    }
    if report.kind == Kind::Fenced || report.fencing_token.is_some() {
        head.push(vec![
            "token".to_owned(),
            report
                .fencing_token
                .clone()
                .unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    head.push(vec!["read at".to_owned(), timestamp(report.read_at_ms)]);
    head
}

/// The holders' table (a read-write lock's with each holder's role and read holds).
fn holders_text(report: &Report) -> String {
    if report.holders.is_empty() {
        return "holders: none\n".to_owned();
    }
    let mut rows = vec![vec![
        "CLIENT ID".to_owned(),
        "OWNER".to_owned(),
        "HOLDS".to_owned(),
    ]];
    if report.kind == Kind::ReadWrite {
        rows[0].push("ROLE".to_owned());
        rows[0].push("READ HOLD TTLS".to_owned());
    }
    rows.extend(report.holders.iter().map(holder_row));
    format!(
        "holders:\n{}  connected: {HOLDER_CONNECTED}\n",
        table("  ", &rows)
    )
}

/// A fair lock's queue, head first.
fn queue_text(report: &Report) -> String {
    if report.queue.is_empty() {
        return "waiters: none queued\n".to_owned();
    }
    let mut rows = vec![vec![
        "#".to_owned(),
        "CLIENT ID".to_owned(),
        "OWNER".to_owned(),
        "DEADLINE (UTC)".to_owned(),
        "DEADLINE".to_owned(),
        "SUBSCRIBED".to_owned(),
    ]];
    rows.extend(
        report
            .queue
            .iter()
            .enumerate()
            .map(|(i, w)| waiter_row(i, w, report.read_at_ms)),
    );
    format!(
        "waiters: {} queued, head first (SUBSCRIBED = connections on the waiter's own \
         channel; 0 means that waiter is not listening)\n{}",
        report.queue.len(),
        table("  ", &rows)
    )
}

fn holder_json(holder: &Holder) -> Json {
    let mut value = json!({
        "field": holder.field,
        "client_id": holder.client_id,
        "owner": holder.owner,
        "holds": holder.holds,
    });
    if let Some(role) = holder.role {
        value["mode"] = json!(role);
        if role == "read" {
            value["read_hold_ttls_ms"] = json!(holder.read_hold_ttls_ms);
        }
    }
    value
}

/// The JSON form of one lookup.
pub(crate) fn outcome_json(outcome: &Outcome) -> Json {
    match outcome {
        Outcome::NotFound { name, key } => json!({
            "name": name,
            "key": key,
            "found": false,
            "kind": Json::Null,
            "locked": false,
        }),
        Outcome::NotALock {
            name,
            key,
            key_type,
            reason,
        } => json!({
            "name": name,
            "key": key,
            "found": true,
            "kind": "not-a-lock",
            "key_type": key_type,
            "locked": false,
            "error": reason,
        }),
        Outcome::Lock(report) => {
            let queue: Vec<Json> = report
                .queue
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    json!({
                        "position": i + 1,
                        "field": w.field,
                        "client_id": w.client_id,
                        "owner": w.owner,
                        "deadline_ms": w.deadline_ms,
                        "deadline": w.deadline_ms.map(timestamp),
                        "deadline_in_ms": w.deadline_ms.map(|d| d - report.read_at_ms),
                        "subscribed": w.subscribed,
                    })
                })
                .collect();
            json!({
                "name": report.name,
                "key": report.key,
                "found": true,
                "kind": report.kind.as_str(),
                "locked": report.locked,
                "ttl_ms": report.ttl_ms,
                "mode": report.mode,
                "holders": report.holders.iter().map(holder_json).collect::<Vec<_>>(),
                "holder_connected": if report.holders.is_empty() {
                    Json::Null
                } else {
                    json!(HOLDER_CONNECTED)
                },
                "fencing_token": report.fencing_token.as_ref().map(|t| {
                    t.parse::<i64>().map_or_else(|_| json!(t), |n| json!(n))
                }),
                "queue": if report.kind == Kind::Fair { json!(queue) } else { Json::Null },
                "subscribers": report.subscribers.as_ref().map(|s| s.json()),
                "read_at_ms": report.read_at_ms,
                "notes": report.notes,
            })
        }
    }
}

/// `list`: one line per lock.
pub(crate) fn list_text(reports: &[Report]) -> String {
    let mut rows = vec![vec![
        "NAME".to_owned(),
        "KIND".to_owned(),
        "TTL".to_owned(),
        "WAITERS".to_owned(),
        "HOLDERS".to_owned(),
    ]];
    for report in reports {
        let holders = report
            .holders
            .iter()
            .map(|h| match h.role {
                Some(role) => format!("{}:{} x{} ({role})", h.client_id, h.owner, h.holds),
                None => format!("{}:{} x{}", h.client_id, h.owner, h.holds),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let waiters = match (&report.subscribers, report.kind) {
            (_, Kind::Fair) => format!("{} queued", report.queue.len()),
            (Some(s), _) => format!("{} sub", s.classic.unwrap_or(0) + s.sharded.unwrap_or(0)),
            (None, _) => "-".to_owned(),
        };
        let kind = match (&report.mode, report.kind) {
            (Some(mode), Kind::ReadWrite) => format!("read-write ({mode})"),
            _ => report.kind.as_str().to_owned(),
        };
        rows.push(vec![
            escape(&report.name),
            kind,
            ttl_text(report.ttl_ms),
            waiters,
            if holders.is_empty() {
                "-".to_owned()
            } else {
                holders
            },
        ]);
    }
    table("", &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(duration_ms(1_234), "1.234s");
        assert_eq!(duration_ms(65_000), "1m 05.0s");
        assert_eq!(duration_ms(7_380_000), "2h 03m");
        assert_eq!(
            table(
                "",
                &[
                    vec!["a".into(), "bb".into()],
                    vec!["ccc".into(), "d".into()]
                ]
            ),
            "a    bb\nccc  d\n"
        );
    }
}
