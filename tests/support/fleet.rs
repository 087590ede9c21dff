//! The fleet race: a hot `RLock` shared by real Redisson 3.23.3, real Redisson 4.7.0 and
//! this crate, three "threads" each (the crate: three tasks of one client), lock / hold
//! 0–5 ms / unlock, 200 rounds each, one name: who gets what share of the acquisitions.
//! Used by `tests/java/fleet_share.rs` and the bench's `fleet_share`.
//!
//! Each process counts its own acquisitions in a counter key of its own (a `GET` and a
//! `SET` inside every hold, as Redisson's `stress` verb does), so that when the first
//! process finishes, the counts of all three are read from Redis at that moment.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use redisson_lock::Client as LockClient;
use redisson_lock::fred::prelude::*;

use super::real_java::{JavaClient, Version};

const THREADS: usize = 3;
/// The rounds each thread makes in the full race (the figures); tests in CI run
/// shorter races.
pub const ROUNDS: usize = 200;
const HOLD_MAX_MS: u64 = 5;

/// The shares when the first process finished, and the whole race's rate.
#[derive(Debug)]
pub struct Race {
    pub first: &'static str,
    pub shares: Vec<(&'static str, u64)>,
    pub elapsed: Duration,
    pub total: u64,
}

impl Race {
    /// `who`'s share of the acquisitions made when the first process finished.
    pub fn share_of(&self, who: &str) -> f64 {
        let all: u64 = self.shares.iter().map(|(_, n)| n).sum();
        let mine = self
            .shares
            .iter()
            .find(|(w, _)| *w == who)
            .map_or(0, |(_, n)| *n);
        mine as f64 / all.max(1) as f64
    }

    /// Acquisitions per second over the whole race.
    pub fn rate(&self) -> f64 {
        self.total as f64 / self.elapsed.as_secs_f64()
    }
}

async fn counter(raw: &RawClient, key: &str) -> u64 {
    let v: Option<u64> = raw.get(key).await.unwrap();
    v.unwrap_or(0)
}

type RawClient = redisson_lock::fred::prelude::Client;

/// One crate "process": `THREADS` tasks of `client`, each `ROUNDS` rounds of lock, GET
/// and SET of its counter with a random hold, unlock.
async fn crate_side(
    client: LockClient,
    raw: RawClient,
    name: String,
    counter_key: String,
    rounds: usize,
) {
    let mut tasks = Vec::new();
    for _ in 0..THREADS {
        let lock = client.get_lock(&name);
        let raw = raw.clone();
        let counter_key = counter_key.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                lock.lock().await.unwrap();
                let n = counter(&raw, &counter_key).await;
                let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                if hold > 0 {
                    tokio::time::sleep(Duration::from_millis(hold)).await;
                }
                let _: () = raw
                    .set(&counter_key, n + 1, None, None, false)
                    .await
                    .unwrap();
                lock.unlock().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// The race on `url` (Redisson's form), `rounds` per thread: Java 3.23.3, Java 4.7.0 and
/// the crate's `client`, or without a client three Java processes (two 3.23.3, one
/// 4.7.0).
pub async fn race(
    url: &str,
    client: Option<LockClient>,
    raw: RawClient,
    tag: &str,
    rounds: usize,
) -> Race {
    let name = format!("share:{tag}");
    let prefix = format!("cnt:{tag}");
    let mut javas: Vec<(&'static str, JavaClient)> = vec![
        (
            "java-3.23.3",
            JavaClient::start(Version::V3_23_3, url).await,
        ),
        ("java-4.7.0", JavaClient::start(Version::V4_7_0, url).await),
    ];
    if client.is_none() {
        javas.push((
            "java-3.23.3-b",
            JavaClient::start(Version::V3_23_3, url).await,
        ));
    }
    // The stress verb locks `<prefix><index>`: one name, index 0.
    let keys: Vec<(&'static str, String)> = javas
        .iter()
        .map(|(who, _)| (*who, format!("{prefix}:{who}:{name}0")))
        .chain(
            client
                .as_ref()
                .map(|_| ("crate", format!("{prefix}:crate"))),
        )
        .collect();
    let started = Instant::now();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let mut handles = Vec::new();
    let javas = Arc::new(javas);
    for i in 0..javas.len() {
        let javas = javas.clone();
        let done = done_tx.clone();
        let line = format!(
            "stress {name} 1 {THREADS} {rounds} {HOLD_MAX_MS} {prefix}:{who} {url}",
            who = javas[i].0
        );
        handles.push(tokio::spawn(async move {
            let (who, java) = &javas[i];
            let answer = java.call(&line).await;
            assert_eq!(answer, format!("OK {} 0", THREADS * rounds), "{who}");
            let _ = done.send(who);
        }));
    }
    if let Some(client) = client {
        let raw = raw.clone();
        let done = done_tx.clone();
        let (name, key) = (format!("{name}0"), format!("{prefix}:crate"));
        handles.push(tokio::spawn(async move {
            crate_side(client, raw, name, key, rounds).await;
            let _ = done.send("crate");
        }));
    }
    let first = done_rx.recv().await.unwrap();
    let mut shares = Vec::new();
    for (who, key) in &keys {
        shares.push((*who, counter(&raw, key).await));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let elapsed = started.elapsed();
    let mut total = 0;
    for (_, key) in &keys {
        total += counter(&raw, key).await;
    }
    Race {
        first,
        shares,
        elapsed,
        total,
    }
}

/// One line for a race: who finished first, the shares by then, the total rate.
pub fn report(what: &str, race: &Race) -> String {
    let shares: Vec<String> = race
        .shares
        .iter()
        .map(|(who, n)| format!("{who} {n} ({:.0}%)", 100.0 * race.share_of(who)))
        .collect();
    format!(
        "{what}: first {} | by then: {} | total {} in {:.2?} = {:.0}/s",
        race.first,
        shares.join(", "),
        race.total,
        race.elapsed,
        race.rate()
    )
}
