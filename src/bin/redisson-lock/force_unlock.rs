//! `force-unlock`: Redisson's `forceUnlock` for the kind found in Redis, through the
//! library's own lock handles, so waiters are woken the way that kind wakes them.

use redisson_lock::Client;
use redisson_lock::names::LockKeys;
use serde_json::json;

use crate::inspect::{self, Kind, Outcome, Report, escape};
use crate::render;
use crate::session::{EXIT_NOT_FOUND, EXIT_OK, Failure, Out, Session};

pub(crate) async fn run(session: &Session, out: &Out, name: &str) -> Result<u8, Failure> {
    let client = &session.client;
    let keys = session.keys(name);
    let outcome = inspect::inspect(client.redis(), &keys, name)
        .await
        .map_err(|e| session.failure(format!("reading lock {}: {e}", escape(name))))?;
    let report = match outcome {
        Outcome::Lock(report) if report.locked => report,
        other => {
            nothing_to_unlock(out, &other);
            return Ok(EXIT_NOT_FOUND);
        }
    };
    let (result, wakes) = force_unlock(client, &keys, name, &report).await;
    let deleted = result.map_err(|e| session.failure(format!("force-unlock failed: {e}")))?;
    let holders: Vec<String> = report
        .holders
        .iter()
        .map(|h| format!("{}:{} x{}", h.client_id, h.owner, h.holds))
        .collect();
    if out.json() {
        out.write_json(
            &json!({
                "name": name,
                "key": keys.name(),
                "kind": report.kind.as_str(),
                "mode": report.mode,
                "deleted": deleted,
                "holders": holders,
                "woke": if deleted { json!(wakes) } else { json!(null) },
            }),
            false,
        );
    } else if deleted {
        out.write(&format!(
            "force-unlocked {} ({}; held by {})\n{wakes}\n",
            escape(name),
            report.kind.as_str(),
            if holders.is_empty() {
                "nobody".to_owned()
            } else {
                holders.join(", ")
            }
        ));
    } else {
        out.write(&format!(
            "nothing deleted: {} changed between the read and the force-unlock (it was \
             released, or its mode changed); inspect it again\n",
            escape(name)
        ));
    }
    Ok(if deleted { EXIT_OK } else { EXIT_NOT_FOUND })
}

/// What was found instead of a held lock.
fn nothing_to_unlock(out: &Out, outcome: &Outcome) {
    if out.json() {
        let mut value = render::outcome_json(outcome);
        value["deleted"] = json!(false);
        out.write_json(&value, false);
    } else {
        out.write(&format!(
            "nothing to force-unlock: {}",
            render::outcome_text(outcome)
        ));
    }
}

/// Redisson's `forceUnlock` of the kind (and mode) `report` found: whether it deleted the
/// lock, and whom its message wakes.
async fn force_unlock(
    client: &Client,
    keys: &LockKeys,
    name: &str,
    report: &Report,
) -> (redisson_lock::Result<bool>, String) {
    match (report.kind, report.mode.as_deref()) {
        (Kind::ReadWrite, Some("write")) => (
            client
                .get_read_write_lock(name)
                .write_lock()
                .force_unlock()
                .await,
            format!(
                "published 1 on {}: every waiting reader and writer wakes",
                keys.rwlock_channel()
            ),
        ),
        (Kind::ReadWrite, _) => (
            client
                .get_read_write_lock(name)
                .read_lock()
                .force_unlock()
                .await,
            format!(
                "published 0 on {}: one waiter per subscribed client wakes",
                keys.rwlock_channel()
            ),
        ),
        (Kind::Fair, _) => (
            client.get_fair_lock(name).force_unlock().await,
            "stale waiters purged; published 0 on the queue head's own channel".to_owned(),
        ),
        (Kind::Fenced, _) => (
            client.get_fenced_lock(name).force_unlock().await,
            format!(
                "published 0 on {}; the token counter is kept",
                keys.channel()
            ),
        ),
        (Kind::Reentrant, _) => (
            client.get_lock(name).force_unlock().await,
            format!(
                "published 0 on {}: one waiter per subscribed client wakes (spin-lock \
                 waiters poll and notice on their next try)",
                keys.channel()
            ),
        ),
    }
}
