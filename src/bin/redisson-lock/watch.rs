//! `watch`: follows one lock live until Ctrl-C: the messages on its channels as they are
//! published, and the changes of its holders, TTL, token and queue, read every
//! `--interval`. One line per event, each with a UTC timestamp.

use std::collections::BTreeMap;
use std::time::Duration;

use redisson_lock::fred::prelude::{Builder, ClientLike, EventInterface, PubsubInterface};
use serde_json::{json, Value as Json};
use tokio::sync::broadcast::error::RecvError;

use crate::inspect::{self, escape, now_ms, Outcome};
use crate::render::{duration_ms, timestamp};
use crate::{Failure, Out, Session, EXIT_OK};

/// What `watch` compares from one read to the next.
#[derive(Clone, Debug, Default, PartialEq)]
struct Snapshot {
    /// `reentrant`, `fair`, ..., `not-a-lock: ...`, or `none`.
    kind: String,
    mode: Option<String>,
    ttl_ms: Option<i64>,
    holders: BTreeMap<String, i64>,
    token: Option<String>,
    queue: Vec<String>,
}

impl Snapshot {
    fn of(outcome: &Outcome) -> Snapshot {
        match outcome {
            Outcome::NotFound { .. } => Snapshot {
                kind: "none".to_owned(),
                ..Snapshot::default()
            },
            Outcome::NotALock {
                key_type, reason, ..
            } => Snapshot {
                kind: format!("not a lock ({key_type}): {reason}"),
                ..Snapshot::default()
            },
            Outcome::Lock(report) => Snapshot {
                kind: report.kind.as_str().to_owned(),
                mode: report.mode.clone(),
                ttl_ms: report.ttl_ms,
                holders: report
                    .holders
                    .iter()
                    .map(|h| (h.field.clone(), h.holds))
                    .collect(),
                token: report.fencing_token.clone(),
                queue: report.queue.iter().map(|w| w.field.clone()).collect(),
            },
        }
    }

    fn summary(&self) -> String {
        if self.kind == "none" {
            return "not locked (no such lock)".to_owned();
        }
        if self.kind.starts_with("not a lock") {
            return self.kind.clone();
        }
        let mut parts = vec![self.kind.clone()];
        if let Some(mode) = &self.mode {
            parts.push(format!("mode {mode}"));
        }
        if self.holders.is_empty() {
            parts.push("not locked".to_owned());
        } else {
            let holders: Vec<String> = self
                .holders
                .iter()
                .map(|(field, holds)| format!("{field} x{holds}"))
                .collect();
            parts.push(format!("held by {}", holders.join(", ")));
        }
        if let Some(ttl) = self.ttl_ms {
            parts.push(format!("ttl {}", ttl_text(ttl)));
        }
        if let Some(token) = &self.token {
            parts.push(format!("token {token}"));
        }
        if !self.queue.is_empty() {
            parts.push(format!("{} queued", self.queue.len()));
        }
        parts.join(", ")
    }
}

fn ttl_text(ttl: i64) -> String {
    if ttl < 0 {
        "no expiry".to_owned()
    } else {
        duration_ms(ttl)
    }
}

/// One line of output.
struct Event {
    event: &'static str,
    detail: String,
    data: Json,
}

fn event(event: &'static str, detail: String, data: Json) -> Event {
    Event {
        event,
        detail,
        data,
    }
}

/// The events that lead from `old` to `new`, read `elapsed_ms` apart.
fn diff(old: &Snapshot, new: &Snapshot, elapsed_ms: i64) -> Vec<Event> {
    let mut events = Vec::new();
    if old.kind != new.kind {
        events.push(event(
            "kind",
            format!("{} -> {}", old.kind, new.kind),
            json!({"from": old.kind, "to": new.kind}),
        ));
    }
    if old.mode != new.mode {
        events.push(event(
            "mode",
            format!(
                "{} -> {}",
                old.mode.as_deref().unwrap_or("-"),
                new.mode.as_deref().unwrap_or("-")
            ),
            json!({"from": old.mode, "to": new.mode}),
        ));
    }
    for (field, holds) in &new.holders {
        match old.holders.get(field) {
            None => events.push(event(
                "acquired",
                format!("{field} (holds {holds})"),
                json!({"field": field, "holds": holds}),
            )),
            Some(before) if before != holds => events.push(event(
                if holds > before {
                    "re-entered"
                } else {
                    "unlocked-once"
                },
                format!("{field} holds {before} -> {holds}"),
                json!({"field": field, "from": before, "to": holds}),
            )),
            Some(_) => {}
        }
    }
    for field in old.holders.keys() {
        if !new.holders.contains_key(field) {
            events.push(event(
                "released",
                format!("{field} (unlocked, force-unlocked or expired)"),
                json!({"field": field}),
            ));
        }
    }
    if let (Some(before), Some(now)) = (old.ttl_ms, new.ttl_ms) {
        // Left alone, the TTL only falls; a rise of more than the noise is a re-arm
        // (the holder's watchdog, a re-entry or a new lease).
        let expected = before - elapsed_ms;
        if before >= 0 && now > expected + 300 {
            events.push(event(
                "ttl",
                format!(
                    "re-armed {} -> {} (a renewal by the holder's watchdog, or a re-entry)",
                    ttl_text(before),
                    ttl_text(now)
                ),
                json!({"from_ms": before, "to_ms": now}),
            ));
        }
    }
    if old.token != new.token {
        events.push(event(
            "token",
            format!(
                "{} -> {}",
                old.token.as_deref().unwrap_or("-"),
                new.token.as_deref().unwrap_or("-")
            ),
            json!({"from": old.token, "to": new.token}),
        ));
    }
    for (i, field) in new.queue.iter().enumerate() {
        if !old.queue.contains(field) {
            events.push(event(
                "queued",
                format!("{field} at #{}", i + 1),
                json!({"field": field, "position": i + 1}),
            ));
        }
    }
    for field in &old.queue {
        if !new.queue.contains(field) {
            events.push(event(
                "dequeued",
                format!("{field} (took the lock, gave up, or was purged)"),
                json!({"field": field}),
            ));
        }
    }
    events
}

/// A glob pattern that matches `text` literally.
pub(crate) fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn message_meaning(payload: &str) -> &'static str {
    match payload {
        "0" => "unlock: wakes one waiter per subscribed client",
        "1" => "write unlock: wakes every waiter",
        _ => "not a Redisson lock message (Redisson ignores it)",
    }
}

pub(crate) async fn run(
    session: &Session,
    out: &Out,
    name: &str,
    interval: Duration,
    duration: Option<Duration>,
) -> Result<u8, Failure> {
    let keys = session.keys(name);
    let redis = session.client.redis();

    // Our own subscriber connection: a subscribed RESP2 connection can run nothing else.
    let subscriber = Builder::from_config(session.client.config().redis().clone())
        .build()
        .map_err(|e| session.failure(format!("cannot build a subscriber: {e}")))?;
    match tokio::time::timeout(Duration::from_secs(10), subscriber.init()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(session.failure(format!("subscriber cannot connect: {e}"))),
        Err(_) => return Err(session.failure("subscriber cannot connect within 10 s")),
    }
    let mut messages = subscriber.message_rx();
    let channels = vec![keys.channel(), keys.rwlock_channel()];
    let subscribed = async {
        subscriber.subscribe(channels.clone()).await?;
        if session.clustered {
            subscriber.ssubscribe(channels.clone()).await?;
        } else {
            // Every fair waiter's own channel: `<lock channel>:<field>`.
            subscriber
                .psubscribe(format!("{}:*", glob_literal(&keys.channel())))
                .await?;
        }
        Ok::<(), redisson_lock::fred::error::Error>(())
    };
    subscribed
        .await
        .map_err(|e| session.failure(format!("cannot subscribe: {e}")))?;
    let mut waiter_channels: Vec<String> = Vec::new();

    let emit = |e: Event| -> bool {
        let at = now_ms();
        if out.json() {
            let mut value = json!({
                "at": timestamp(at),
                "at_ms": at,
                "lock": name,
                "event": e.event,
                "detail": e.detail,
            });
            if let (Json::Object(target), Json::Object(extra)) = (&mut value, e.data) {
                target.extend(extra);
            }
            out.write_json(&value, true)
        } else {
            out.write(&format!(
                "{}  {:<13} {}\n",
                timestamp(at),
                e.event,
                e.detail
            ))
        }
    };

    let keys_ref = &keys;
    let read = |name: String| async move {
        inspect::inspect(redis, keys_ref, &name)
            .await
            .map_err(|e| session.failure(format!("reading lock {}: {e}", escape(&name))))
    };
    let mut last = Snapshot::of(&read(name.to_owned()).await?);
    let mut last_at = now_ms();
    let listening: Vec<String> = if session.clustered {
        channels.clone()
    } else {
        vec![
            channels[0].clone(),
            channels[1].clone(),
            format!("{}:*", channels[0]),
        ]
    };
    if !emit(event(
        "watching",
        format!(
            "{} on {}; Ctrl-C to stop",
            escape(name),
            listening.join(", ")
        ),
        json!({"channels": listening, "key": keys.name()}),
    )) || !emit(event(
        "state",
        last.summary(),
        json!({"kind": last.kind, "holders": last.holders, "ttl_ms": last.ttl_ms,
               "token": last.token, "queue": last.queue}),
    )) {
        return Ok(EXIT_OK);
    }

    let stop_at = duration.map(|d| tokio::time::Instant::now() + d);
    let stop = async {
        match stop_at {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    let result = loop {
        tokio::select! {
            _ = &mut ctrl_c => break Ok(EXIT_OK),
            () = &mut stop => break Ok(EXIT_OK),
            message = messages.recv() => match message {
                Ok(message) => {
                    let payload = match message.value.as_bytes() {
                        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                        None => message.value.as_str().map(|s| s.into_owned()).unwrap_or_default(),
                    };
                    let channel = message.channel.to_string();
                    let sharded = matches!(message.kind, redisson_lock::fred::types::MessageKind::SMessage);
                    let ok = emit(event(
                        "message",
                        format!("{channel} {} ({}){}", escape(&payload), message_meaning(&payload),
                            if sharded { " [sharded]" } else { "" }),
                        json!({"channel": channel, "payload": payload, "sharded": sharded}),
                    ));
                    if !ok { break Ok(EXIT_OK); }
                }
                Err(RecvError::Lagged(n)) => {
                    if !emit(event("lagged", format!("{n} message(s) were lost"), json!({"lost": n}))) {
                        break Ok(EXIT_OK);
                    }
                }
                Err(RecvError::Closed) => break Err(session.failure("the subscriber connection closed")),
            },
            _ = ticker.tick() => {
                let outcome = match read(name.to_owned()).await {
                    Ok(outcome) => outcome,
                    Err(failure) => break Err(failure),
                };
                let now = Snapshot::of(&outcome);
                let at = now_ms();
                let mut alive = true;
                for e in diff(&last, &now, at - last_at) {
                    alive &= emit(e);
                }
                if !alive { break Ok(EXIT_OK); }
                if session.clustered {
                    // No pattern subscriptions in sharded pub/sub: follow each waiter's channel.
                    for field in &now.queue {
                        let channel = keys.fair_waiter_channel(field);
                        if !waiter_channels.contains(&channel) {
                            let _ = subscriber.subscribe(channel.clone()).await;
                            let _ = subscriber.ssubscribe(channel.clone()).await;
                            waiter_channels.push(channel);
                        }
                    }
                }
                last = now;
                last_at = at;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), subscriber.quit()).await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs() {
        let mut old = Snapshot {
            kind: "reentrant".into(),
            ttl_ms: Some(20_000),
            ..Snapshot::default()
        };
        old.holders.insert("a:1".into(), 1);
        let mut new = old.clone();
        new.holders.insert("a:1".into(), 2);
        new.ttl_ms = Some(30_000);
        let events: Vec<_> = diff(&old, &new, 200).into_iter().map(|e| e.event).collect();
        assert_eq!(events, ["re-entered", "ttl"]);
        let gone = Snapshot {
            kind: "none".into(),
            ..Snapshot::default()
        };
        let events: Vec<_> = diff(&old, &gone, 200)
            .into_iter()
            .map(|e| e.event)
            .collect();
        assert_eq!(events, ["kind", "released"]);
        assert_eq!(glob_literal("a*b[c]"), "a\\*b\\[c\\]");
    }
}
