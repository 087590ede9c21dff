//! Told at once: the measurement every topology's test shares. A guard is held, another
//! connection (or the CLI) changes its key on the server that holds it, and the time to
//! the guard's first signal (`at_risk()`, which a loss completes too) is taken.

use std::collections::HashMap;
use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::{Client, HoldState, HoldWatch};
use tokio::time::Instant;

use super::key;

/// How long a hold is kept before the change.
pub const HELD_FIRST: Duration = Duration::from_millis(40);
/// How long a test waits for a signal: far below the renewal period (10 s), far above
/// the round trip.
pub const TOLD_WITHIN: Duration = Duration::from_secs(2);

/// The time from `change` to the first signal of a guard held for [`HELD_FIRST`], over
/// `rounds` rounds of a fresh name each; sorted.
pub async fn times_to_signal<F, Fut>(
    client: &Client,
    what: &str,
    rounds: usize,
    mut change: F,
) -> Vec<Duration>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::new();
    for round in 0..rounds {
        let name = key(&format!("{what}-{round}"));
        let guard = client.get_lock(&name).acquire().await.unwrap();
        tokio::time::sleep(HELD_FIRST).await;
        assert_eq!(
            guard.state(),
            HoldState::Held,
            "{what}: held before the change"
        );
        let changed = Instant::now();
        change(name.clone()).await;
        let signal = tokio::time::timeout(TOLD_WITHIN, guard.at_risk()).await;
        assert!(
            signal.is_ok(),
            "{what}: no signal within {TOLD_WITHIN:?} of the change (round {round})"
        );
        times.push(changed.elapsed());
        drop(guard);
    }
    times.sort();
    times
}

/// Deletes `key` (on the server `raw` talks to) and waits for `watch`'s first signal
/// (`at_risk()`, which a loss completes too): the time it took, or `None` when nothing
/// came within [`TOLD_WITHIN`].
pub async fn deleted_and_told(
    raw: &fred::prelude::Client,
    what: &str,
    key: &str,
    watch: &HoldWatch,
) -> Option<Duration> {
    assert_eq!(
        watch.state(),
        HoldState::Held,
        "{what}: held before the delete"
    );
    let deleted = Instant::now();
    let removed: i64 = raw.del(key).await.unwrap();
    assert_eq!(removed, 1, "{what}: {key} was there");
    tokio::time::timeout(TOLD_WITHIN, watch.at_risk())
        .await
        .ok()
        .map(|_| deleted.elapsed())
}

/// Prints p50 and max of `times`.
pub fn report(what: &str, times: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "told at once: {what}: first signal p50 {:.1} ms, max {:.1} ms ({} rounds)",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        times.len()
    );
}

/// The 99th percentile of sorted `times`.
pub fn p99(times: &[Duration]) -> Duration {
    times[(times.len() * 99).div_ceil(100) - 1]
}

/// A command on `raw`, as words.
pub async fn command(raw: &fred::prelude::Client, args: Vec<String>) {
    let (name, rest) = args.split_first().unwrap();
    let cmd =
        fred::types::CustomCommand::new(name.clone(), fred::types::ClusterHash::FirstKey, false);
    let _: Value = raw.custom(cmd, rest.to_vec()).await.unwrap();
}

/// Connections to the servers that hold keys, and which one holds a name.
pub struct Servers {
    raws: HashMap<u16, fred::prelude::Client>,
    owner: Box<dyn Fn(&str) -> u16 + Send + Sync>,
}

impl Servers {
    /// One connection per port; `owner` names the port that holds a key.
    pub async fn connect(
        ports: &[u16],
        owner: impl Fn(&str) -> u16 + Send + Sync + 'static,
    ) -> Servers {
        let mut raws = HashMap::new();
        for &port in ports {
            raws.insert(port, super::RedisServer::raw_at(port).await);
        }
        Servers {
            raws,
            owner: Box::new(owner),
        }
    }

    /// The connection to the server holding `name`.
    pub fn of(&self, name: &str) -> fred::prelude::Client {
        self.raws[&self.port_of(name)].clone()
    }

    /// The port of the server holding `name`.
    pub fn port_of(&self, name: &str) -> u16 {
        (self.owner)(name)
    }

    /// Waits until every server has run the tracker's first check (tracking is set up
    /// in the background).
    pub async fn wait_key_tracking(&self) {
        for raw in self.raws.values() {
            super::wait_key_tracking(raw).await;
        }
    }
}

/// Every foreign change, `rounds` times each, each on the server that holds the key:
/// `DEL`, `UNLINK`, `FLUSHDB`, `FLUSHALL`, `PEXPIRE` 100, `HDEL` of the owner's field,
/// and the CLI's `force-unlock` through `url`. Returns every time, sorted, after printing
/// each change's figures.
pub async fn every_foreign_change(
    client: &Client,
    servers: &Servers,
    url: &str,
    rounds: usize,
) -> Vec<Duration> {
    let mut all = Vec::new();
    for (what, verb) in [
        ("del", "DEL"),
        ("unlink", "UNLINK"),
        ("flushdb", "FLUSHDB"),
        ("flushall", "FLUSHALL"),
    ] {
        let times = times_to_signal(client, what, rounds, |name| {
            let raw = servers.of(&name);
            async move {
                let args = if verb.starts_with("FLUSH") {
                    vec![verb.to_owned()]
                } else {
                    vec![verb.to_owned(), name]
                };
                command(&raw, args).await;
            }
        })
        .await;
        report(what, &times);
        all.extend(times);
    }
    let times = times_to_signal(client, "pexpire", rounds, |name| {
        let raw = servers.of(&name);
        async move { command(&raw, vec!["PEXPIRE".into(), name, "100".into()]).await }
    })
    .await;
    report("pexpire 100", &times);
    all.extend(times);
    let times = times_to_signal(client, "hdel", rounds, |name| {
        let raw = servers.of(&name);
        async move {
            let fields: Vec<String> = raw.hkeys(&name).await.unwrap();
            command(&raw, vec!["HDEL".into(), name, fields[0].clone()]).await;
        }
    })
    .await;
    report("hdel", &times);
    all.extend(times);
    // The inspector's `force-unlock` (built with the `cli` feature).
    #[cfg(feature = "cli")]
    {
        let times = times_to_signal(client, "force-unlock", rounds, |name| {
            let url = url.to_owned();
            async move {
                let out = super::cli::cli(&url, ["force-unlock", name.as_str(), "--yes"]).await;
                assert_eq!(super::cli::code(&out), 0, "{}", super::cli::stderr(&out));
            }
        })
        .await;
        report("cli force-unlock", &times);
        all.extend(times);
    }
    #[cfg(not(feature = "cli"))]
    let _ = url;
    all.sort();
    eprintln!(
        "told at once: every change: p99 {:?} over {} rounds",
        p99(&all),
        all.len()
    );
    all
}
