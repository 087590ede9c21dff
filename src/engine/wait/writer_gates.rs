//! [`WriterGates`]: writer preference for read-write locks within one client.
//!
//! Redisson's read-write lock lets a reader in whenever the lock is in read mode, so a
//! steady stream of readers can keep a writer waiting for ever. Nothing in the wire
//! protocol tells a reader that a writer waits, but within one client the engine knows:
//! a write waiter announces itself here while it waits, and a reader of the same client
//! that holds nothing on that lock waits for the announcement to end before it tries.
//! Readers that already hold (re-entries, a writer's own downgrade) never wait here, so
//! this cannot deadlock a holder. Readers of other processes, and Java's, are not slowed:
//! what goes over the wire does not change.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dashmap::DashMap;
use tokio::sync::Notify;
use tokio::time::Instant;

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct WriterGates {
    gates: DashMap<Arc<str>, Arc<Gate>>,
}

/// The waiting writers of one lock.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    waiting: AtomicUsize,
    cleared: Notify,
}

/// One announced write waiter; the announcement ends when this is dropped.
#[derive(Debug)]
pub(crate) struct WaitingWriter {
    gates: Arc<WriterGates>,
    name: Arc<str>,
    gate: Arc<Gate>,
}

impl WriterGates {
    /// Announces a write waiter of `name` for as long as the returned value lives.
    pub(crate) fn announce(self: &Arc<Self>, name: &Arc<str>) -> WaitingWriter {
        let gate = self.gates.entry(name.clone()).or_default().value().clone();
        gate.waiting.fetch_add(1, Ordering::AcqRel);
        WaitingWriter {
            gates: self.clone(),
            name: name.clone(),
            gate,
        }
    }

    /// The gate of `name` if a writer waits on it now.
    pub(crate) fn waiting(&self, name: &str) -> Option<Arc<Gate>> {
        self.gates
            .get(name)
            .filter(|g| g.waiting.load(Ordering::Acquire) > 0)
            .map(|g| g.value().clone())
    }
}

impl Gate {
    /// Waits until no writer is announced, or `deadline`; returns whether it cleared.
    pub(crate) async fn cleared_by(&self, deadline: Option<Instant>) -> bool {
        loop {
            let cleared = self.cleared.notified();
            tokio::pin!(cleared);
            cleared.as_mut().enable();
            if self.waiting.load(Ordering::Acquire) == 0 {
                return true;
            }
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, cleared).await.is_err() {
                        return self.waiting.load(Ordering::Acquire) == 0;
                    }
                }
                None => cleared.await,
            }
        }
    }
}

impl Drop for WaitingWriter {
    fn drop(&mut self) {
        if self.gate.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.gate.cleared.notify_waiters();
            self.gates.gates.remove_if(&self.name, |_, gate| {
                Arc::ptr_eq(gate, &self.gate) && gate.waiting.load(Ordering::Acquire) == 0
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn readers_wait_for_announced_writers() {
        let gates = Arc::new(WriterGates::default());
        let name: Arc<str> = Arc::from("n");
        assert!(gates.waiting("n").is_none());
        let writer = gates.announce(&name);
        let gate = gates.waiting("n").expect("announced");
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(!gate.cleared_by(Some(soon)).await);
        let reader = tokio::spawn(async move { gate.cleared_by(None).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(writer);
        assert!(reader.await.unwrap());
        assert!(gates.waiting("n").is_none());
        assert!(gates.gates.is_empty());
    }
}
