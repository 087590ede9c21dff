//! `watch`: follows one lock live until Ctrl-C: the messages on its channels as they are
//! published, and the changes of its holders, TTL, token and queue, read every
//! `--interval`. One line per event, each with a UTC timestamp.

use std::collections::BTreeMap;
use std::time::Duration;

use redisson_lock::fred::prelude::{
    Builder, Client as Redis, ClientLike, Error as RedisError, EventInterface, PubsubInterface,
};
use redisson_lock::fred::types::{Message, MessageKind};
use redisson_lock::names::LockKeys;
use serde_json::{Value as Json, json};
use tokio::sync::broadcast::error::RecvError;

use crate::glob;
use crate::inspect::{self, Outcome, escape, now_ms};
use crate::render::{duration_ms, timestamp};
use crate::session::{EXIT_OK, Failure, Out, Session};

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
    events.extend(changed("kind", Some(&old.kind), Some(&new.kind)));
    events.extend(changed("mode", old.mode.as_deref(), new.mode.as_deref()));
    events.extend(holder_events(&old.holders, &new.holders));
    events.extend(rearmed(old.ttl_ms, new.ttl_ms, elapsed_ms));
    events.extend(changed("token", old.token.as_deref(), new.token.as_deref()));
    events.extend(queue_events(&old.queue, &new.queue));
    events
}

/// A value that changed (`-` for none).
fn changed(name: &'static str, old: Option<&str>, new: Option<&str>) -> Option<Event> {
    (old != new).then(|| {
        event(
            name,
            format!("{} -> {}", old.unwrap_or("-"), new.unwrap_or("-")),
            json!({"from": old, "to": new}),
        )
    })
}

/// Holders that came, went, or changed their hold count.
fn holder_events(old: &BTreeMap<String, i64>, new: &BTreeMap<String, i64>) -> Vec<Event> {
    let mut events = Vec::new();
    for (field, holds) in new {
        match old.get(field) {
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
    for field in old.keys() {
        if !new.contains_key(field) {
            events.push(event(
                "released",
                format!("{field} (unlocked, force-unlocked or expired)"),
                json!({"field": field}),
            ));
        }
    }
    events
}

/// A TTL that rose: left alone it only falls, so a rise of more than the noise is a
/// re-arm (the holder's watchdog, a re-entry or a new lease).
fn rearmed(before: Option<i64>, now: Option<i64>, elapsed_ms: i64) -> Option<Event> {
    let (Some(before), Some(now)) = (before, now) else {
        return None;
    };
    let expected = before - elapsed_ms;
    (before >= 0 && now > expected + 300).then(|| {
        event(
            "ttl",
            format!(
                "re-armed {} -> {} (a renewal by the holder's watchdog, or a re-entry)",
                ttl_text(before),
                ttl_text(now)
            ),
            json!({"from_ms": before, "to_ms": now}),
        )
    })
}

/// Fair-lock waiters that joined or left the queue.
fn queue_events(old: &[String], new: &[String]) -> Vec<Event> {
    let mut events = Vec::new();
    for (i, field) in new.iter().enumerate() {
        if !old.contains(field) {
            events.push(event(
                "queued",
                format!("{field} at #{}", i + 1),
                json!({"field": field, "position": i + 1}),
            ));
        }
    }
    for field in old {
        if !new.contains(field) {
            events.push(event(
                "dequeued",
                format!("{field} (took the lock, gave up, or was purged)"),
                json!({"field": field}),
            ));
        }
    }
    events
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
    // Our own subscriber connection: a subscribed RESP2 connection can run nothing else.
    let subscriber = connect_subscriber(session).await?;
    let mut messages = subscriber.message_rx();
    let channels = vec![keys.channel(), keys.rwlock_channel()];
    subscribe(session, &subscriber, &keys, &channels)
        .await
        .map_err(|e| session.failure(format!("cannot subscribe: {e}")))?;
    let mut watcher = Watcher {
        session,
        out,
        name,
        keys: &keys,
        subscriber: &subscriber,
        waiter_channels: Vec::new(),
        last: Snapshot::default(),
        last_at: 0,
    };
    watcher.last = Snapshot::of(&watcher.read().await?);
    watcher.last_at = now_ms();
    if !watcher.announce(&channels) {
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
        let done = tokio::select! {
            _ = &mut ctrl_c => Some(Ok(EXIT_OK)),
            () = &mut stop => Some(Ok(EXIT_OK)),
            message = messages.recv() => watcher.message(message),
            _ = ticker.tick() => watcher.tick().await,
        };
        if let Some(result) = done {
            break result;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), subscriber.quit()).await;
    result
}

/// A connected subscriber of its own (within 10 s).
async fn connect_subscriber(session: &Session) -> Result<Redis, Failure> {
    let subscriber = Builder::from_config(session.client.config().redis().clone())
        .build()
        .map_err(|e| session.failure(format!("cannot build a subscriber: {e}")))?;
    match tokio::time::timeout(Duration::from_secs(10), subscriber.init()).await {
        Ok(Ok(_)) => Ok(subscriber),
        Ok(Err(e)) => Err(session.failure(format!("subscriber cannot connect: {e}"))),
        Err(_) => Err(session.failure("subscriber cannot connect within 10 s")),
    }
}

/// Subscribes to the lock's `channels`: classic and (cluster) sharded; elsewhere, every
/// fair waiter's own channel `<lock channel>:<field>` by pattern.
async fn subscribe(
    session: &Session,
    subscriber: &Redis,
    keys: &LockKeys,
    channels: &[String],
) -> Result<(), RedisError> {
    subscriber.subscribe(channels.to_vec()).await?;
    if session.clustered {
        subscriber.ssubscribe(channels.to_vec()).await?;
    } else {
        subscriber
            .psubscribe(format!("{}:*", glob::literal(&keys.channel())))
            .await?;
    }
    Ok(())
}

/// One `watch`: what it prints to, and the lock's state as last read.
struct Watcher<'w> {
    session: &'w Session,
    out: &'w Out,
    name: &'w str,
    keys: &'w LockKeys,
    subscriber: &'w Redis,
    /// Fair waiters' channels subscribed one by one (a cluster has no patterns).
    waiter_channels: Vec<String>,
    last: Snapshot,
    /// When `last` was read, epoch ms.
    last_at: i64,
}

impl Watcher<'_> {
    /// Prints one event; `false` when stdout is gone.
    fn emit(&self, e: Event) -> bool {
        let at = now_ms();
        if self.out.json() {
            let mut value = json!({
                "at": timestamp(at),
                "at_ms": at,
                "lock": self.name,
                "event": e.event,
                "detail": e.detail,
            });
            if let (Json::Object(target), Json::Object(extra)) = (&mut value, e.data) {
                target.extend(extra);
            }
            self.out.write_json(&value, true)
        } else {
            self.out.write(&format!(
                "{}  {:<13} {}\n",
                timestamp(at),
                e.event,
                e.detail
            ))
        }
    }

    async fn read(&self) -> Result<Outcome, Failure> {
        inspect::inspect(self.session.client.redis(), self.keys, self.name)
            .await
            .map_err(|e| {
                self.session
                    .failure(format!("reading lock {}: {e}", escape(self.name)))
            })
    }

    /// The first lines: what is listened to, and the state as first read.
    fn announce(&self, channels: &[String]) -> bool {
        let listening: Vec<String> = if self.session.clustered {
            channels.to_vec()
        } else {
            vec![
                channels[0].clone(),
                channels[1].clone(),
                format!("{}:*", channels[0]),
            ]
        };
        let last = &self.last;
        self.emit(event(
            "watching",
            format!(
                "{} on {}; Ctrl-C to stop",
                escape(self.name),
                listening.join(", ")
            ),
            json!({"channels": listening, "key": self.keys.name()}),
        )) && self.emit(event(
            "state",
            last.summary(),
            json!({"kind": last.kind, "holders": last.holders, "ttl_ms": last.ttl_ms,
                   "token": last.token, "queue": last.queue}),
        ))
    }

    /// A message on a channel (or the loss of some). `Some`: the watch is over.
    fn message(&self, message: Result<Message, RecvError>) -> Option<Result<u8, Failure>> {
        let shown = match message {
            Ok(message) => {
                let payload = match message.value.as_bytes() {
                    Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                    None => message
                        .value
                        .as_str()
                        .map(|s| s.into_owned())
                        .unwrap_or_default(),
                };
                let channel = message.channel.to_string();
                let sharded = matches!(message.kind, MessageKind::SMessage);
                self.emit(event(
                    "message",
                    format!(
                        "{channel} {} ({}){}",
                        escape(&payload),
                        message_meaning(&payload),
                        if sharded { " [sharded]" } else { "" }
                    ),
                    json!({"channel": channel, "payload": payload, "sharded": sharded}),
                ))
            }
            Err(RecvError::Lagged(n)) => self.emit(event(
                "lagged",
                format!("{n} message(s) were lost"),
                json!({"lost": n}),
            )),
            Err(RecvError::Closed) => {
                return Some(Err(self
                    .session
                    .failure("the subscriber connection closed")));
            }
        };
        (!shown).then_some(Ok(EXIT_OK))
    }

    /// Reads the lock again and prints what changed. `Some`: the watch is over.
    async fn tick(&mut self) -> Option<Result<u8, Failure>> {
        let outcome = match self.read().await {
            Ok(outcome) => outcome,
            Err(failure) => return Some(Err(failure)),
        };
        let now = Snapshot::of(&outcome);
        let at = now_ms();
        let mut alive = true;
        for e in diff(&self.last, &now, at - self.last_at) {
            alive &= self.emit(e);
        }
        if !alive {
            return Some(Ok(EXIT_OK));
        }
        if self.session.clustered {
            self.follow_waiters(&now.queue).await;
        }
        self.last = now;
        self.last_at = at;
        None
    }

    /// No pattern subscriptions in sharded pub/sub: follows each waiter's channel.
    async fn follow_waiters(&mut self, queue: &[String]) {
        for field in queue {
            let channel = self.keys.fair_waiter_channel(field);
            if !self.waiter_channels.contains(&channel) {
                let _ = self.subscriber.subscribe(channel.clone()).await;
                let _ = self.subscriber.ssubscribe(channel.clone()).await;
                self.waiter_channels.push(channel);
            }
        }
    }
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
    }
}
