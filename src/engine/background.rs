//! [`BackgroundWork`]: what a client finishes in the background for calls that have
//! already returned (a dropped guard's release, a dropped permit's give-back, the undoing
//! of an acquisition whose caller went away), counted so that a stop waits for it.
//!
//! `Client::shutdown()` waits (up to the response timeout) until none runs before it
//! closes the connections: a guard dropped just before the stop is released by it, not
//! left for its lease to end. Each piece of work holds a [`WorkToken`] from the moment it
//! is handed over (synchronously, in a `Drop`) until it ends or is dropped unrun.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// See the module docs. One per client, shared by its engine and hold ledger.
#[derive(Debug, Default)]
pub(crate) struct BackgroundWork {
    running: AtomicUsize,
    idle: Notify,
}

/// One piece of background work running (or queued to run): counted until dropped.
#[derive(Debug)]
pub(crate) struct WorkToken(Arc<BackgroundWork>);

impl Drop for WorkToken {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl BackgroundWork {
    /// One more piece of work, counted until the returned token is dropped.
    pub(crate) fn start(self: &Arc<Self>) -> WorkToken {
        self.running.fetch_add(1, Ordering::AcqRel);
        WorkToken(self.clone())
    }

    /// How many pieces run now.
    pub(crate) fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Waits until no work runs, or `limit` passed; returns how many still run.
    pub(crate) async fn finished_within(&self, limit: Duration) -> usize {
        let _ = tokio::time::timeout(limit, async {
            loop {
                let idle = self.idle.notified();
                tokio::pin!(idle);
                idle.as_mut().enable();
                if self.running() == 0 {
                    return;
                }
                idle.await;
            }
        })
        .await;
        self.running()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_the_last_token() {
        let work = Arc::new(BackgroundWork::default());
        assert_eq!(work.finished_within(Duration::from_secs(1)).await, 0);
        let (a, b) = (work.start(), work.start());
        let ending = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(a);
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(b);
        });
        let started = tokio::time::Instant::now();
        assert_eq!(work.finished_within(Duration::from_secs(5)).await, 0);
        assert!(started.elapsed() >= Duration::from_millis(40));
        ending.await.unwrap();
        let _stuck = work.start();
        assert_eq!(work.finished_within(Duration::from_millis(30)).await, 1);
    }
}
