//! [`PrimarySwitch`]: the gate that keeps lock commands off a primary the sentinels have
//! replaced.
//!
//! On a sentinel's `+switch-master` (see [`crate::engine::hold::failover_watch`]) the switch is
//! *announced*: the gate closes and its epoch moves on. Every lock command (acquire,
//! renewal, release, the reads that settle a lost reply, the batched deletes of unlock
//! latches) passes the gate before it is sent: while it is closed, the command waits for the data connection to reach the
//! announced primary (at most a response timeout; then it fails unsent). A command sent
//! before the announcement whose reply comes after it was in flight on the old
//! connection: its outcome on the new primary is unknown, and it fails with an error
//! [`outcome_unknown`](crate::connection::scripts::outcome_unknown) reads as a lost reply, which the
//! caller settles on the new primary (an acquire by reading its owner's count, a release
//! by asking again with the same latch).
//!
//! Invariants: the epoch is read before the gate is checked, and the announcement closes
//! the gate before it moves the epoch, so a command either waits or is caught by the
//! epoch check after its reply. The happy path costs three atomic loads (no lock, no
//! waiter registration) and its future carries no wait.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct PrimarySwitch {
    /// Moves on with every announced switch.
    epoch: AtomicU64,
    /// A switch was announced and the data connection has not reached it yet.
    moving: AtomicBool,
    /// The announced primary, `host:port`.
    to: Mutex<Option<String>>,
    /// Woken when the data connection reaches the announced primary.
    arrived: Notify,
}

impl PrimarySwitch {
    /// The current epoch.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether an announced switch has not been reached yet.
    pub(crate) fn is_moving(&self) -> bool {
        self.moving.load(Ordering::Acquire)
    }

    /// Closes the gate for a switch to `to` (`host:port`); returns the switch's epoch, or
    /// `None` when `to` is already the primary being moved to or reached (every sentinel
    /// announces the same switch).
    pub(crate) fn announce(&self, to: &str) -> Option<u64> {
        let mut target = self.to.lock().unwrap_or_else(|p| p.into_inner());
        if target.as_deref() == Some(to) {
            return None;
        }
        *target = Some(to.to_owned());
        self.moving.store(true, Ordering::Release);
        Some(self.epoch.fetch_add(1, Ordering::AcqRel) + 1)
    }

    /// The primary of the last announcement.
    pub(crate) fn target(&self) -> Option<String> {
        self.to.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The data connection reached the primary of switch `epoch`: the gate opens, unless
    /// another switch was announced since.
    pub(crate) fn arrive(&self, epoch: u64) {
        let _target = self.to.lock().unwrap_or_else(|p| p.into_inner());
        if self.epoch() == epoch {
            self.moving.store(false, Ordering::Release);
            self.arrived.notify_waiters();
        }
    }

    /// Waits (up to `limit`) until no switch is pending; returns the epoch to send under.
    /// Without a switch pending: two atomic loads, no wait's state in the caller's future.
    pub(crate) async fn ready(&self, limit: Duration) -> Result<u64, fred::error::Error> {
        let epoch = self.epoch();
        if !self.is_moving() {
            return Ok(epoch);
        }
        Box::pin(self.wait_for_arrival(limit)).await
    }

    /// The slow half of [`PrimarySwitch::ready`].
    async fn wait_for_arrival(&self, limit: Duration) -> Result<u64, fred::error::Error> {
        let deadline = Instant::now() + limit;
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let epoch = self.epoch();
            if !self.is_moving() {
                return Ok(epoch);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(fred::error::Error::new(
                    fred::error::ErrorKind::Routing,
                    format!(
                        "Sentinel failover: the announced primary {} was not reached in {limit:?}; \
                         the command was not sent",
                        self.target().unwrap_or_default()
                    ),
                ));
            }
        }
    }

    /// Runs `call` through the gate (see the module docs): it waits for a pending switch
    /// (up to `limit`), and its reply is an unknown outcome when a switch was announced
    /// while it was in flight.
    pub(crate) async fn guarded<T, F, Fut>(
        &self,
        limit: Duration,
        call: F,
    ) -> Result<T, fred::error::Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, fred::error::Error>>,
    {
        let epoch = self.ready(limit).await?;
        let reply = call().await;
        if self.epoch() != epoch {
            return Err(replaced());
        }
        reply
    }
}

/// The text of [`replaced`]'s error.
const REPLACED: &str = "Sentinel failover: the primary was replaced while the call was in flight";

/// The error of a call whose reply came from (or was lost with) a replaced primary.
pub(crate) fn replaced() -> fred::error::Error {
    fred::error::Error::new(fred::error::ErrorKind::IO, REPLACED)
}

/// Whether `error` is [`replaced`]'s.
pub(crate) fn is_replaced(error: &fred::error::Error) -> bool {
    error.details() == REPLACED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reply_across_a_switch_is_unknown() {
        let switch = PrimarySwitch::default();
        let reply = switch
            .guarded(Duration::from_millis(10), || async {
                let epoch = switch.announce("127.0.0.1:7001");
                assert_eq!(epoch, Some(1));
                Ok::<_, fred::error::Error>(1)
            })
            .await;
        assert!(reply.is_err_and(|e| crate::connection::scripts::outcome_unknown(&e)));
        // Closed: a new call waits, then fails unsent.
        let waited = switch.ready(Duration::from_millis(20)).await;
        assert!(waited.is_err_and(|e| crate::connection::scripts::not_sent(&e)));
        // The same announcement again changes nothing; arriving opens the gate.
        assert_eq!(switch.announce("127.0.0.1:7001"), None);
        switch.arrive(1);
        assert_eq!(switch.ready(Duration::from_millis(10)).await.ok(), Some(1));
    }
}
