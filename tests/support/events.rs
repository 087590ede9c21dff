//! The crate's own tracing events, captured with the wall-clock time they happened: a
//! test can tell when the *client* saw something (a sentinel's `+switch-master`, a lock
//! going at risk), not only when the test did. Installed by [`super::init_tracing`].

use std::fmt::Write as _;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

static SEEN: Mutex<Vec<(f64, String)>> = Mutex::new(Vec::new());

/// The layer that records the crate's events that [`captured`] lets through: its message
/// and fields as one line, with [`super::epoch_secs`].
pub struct Capture;

/// What [`Capture`] records: every event of the crate (`redisson_lock` targets) at `INFO`
/// and above, and the failover watch's `DEBUG` too (rare: where each reconnection after a
/// sentinel failover landed).
pub fn captured() -> tracing_subscriber::filter::Targets {
    tracing_subscriber::filter::Targets::new()
        .with_target("redisson_lock", tracing::Level::INFO)
        .with_target(
            "redisson_lock::engine::hold::failover_watch",
            tracing::Level::DEBUG,
        )
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if !event.metadata().target().starts_with("redisson_lock") {
            return;
        }
        let mut line = Line(String::new());
        event.record(&mut line);
        SEEN.lock().unwrap().push((super::epoch_secs(), line.0));
    }
}

/// When (seconds since the epoch) the crate logged an event whose line holds every one
/// of `words`, the first such, if any.
pub fn first(words: &[&str]) -> Option<f64> {
    all(words).first().copied()
}

/// When (seconds since the epoch) the crate logged each event whose line holds every one
/// of `words`, in order.
pub fn all(words: &[&str]) -> Vec<f64> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|(_, line)| words.iter().all(|w| line.contains(w)))
        .map(|(at, _)| *at)
        .collect()
}

/// How many events of the crate so far hold every one of `words`.
pub fn count(words: &[&str]) -> usize {
    all(words).len()
}

/// Waits (polling every 5 ms, at most `limit`) for the first event whose line holds every
/// one of `words`, and answers when it was logged; panics naming `what` after `limit`.
pub async fn wait_first(words: &[&str], limit: std::time::Duration, what: &str) -> f64 {
    let started = std::time::Instant::now();
    loop {
        if let Some(at) = first(words) {
            return at;
        }
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
