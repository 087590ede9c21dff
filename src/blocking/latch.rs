//! The blocking [`CountDownLatch`]: the async latch's methods, each run on the client's
//! runtime while the calling thread waits.

use std::sync::Arc;
use std::time::Duration;

use super::runtime::Shared;
use crate::error::Result;

/// Redisson's `RCountDownLatch`, blocking: the same latch as
/// [`crate::CountDownLatch`] (same key, channel, scripts and waiting), for code that is not
/// async. A cheap `Clone` handle; no I/O until used.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// let latch = client.get_count_down_latch("jobs:batch-7");
/// latch.try_set_count(2)?;
/// let worker = {
///     let latch = latch.clone();
///     std::thread::spawn(move || latch.count_down())
/// };
/// latch.count_down()?;
/// latch.wait()?;                            // returns once both counted down
/// worker.join().unwrap()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CountDownLatch {
    pub(super) shared: Arc<Shared>,
    pub(super) inner: crate::CountDownLatch,
}

impl CountDownLatch {
    /// Runs `call` on the async latch, on the client's runtime.
    fn run<T, F, Fut>(&self, call: F) -> Result<T>
    where
        F: FnOnce(crate::CountDownLatch) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.shared.run(call(self.inner.clone()))?
    }

    /// The latch's name, as given to the client.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// assert_eq!(client.get_count_down_latch("jobs").name(), "jobs");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The latch's name as stored in Redis (see [`crate::CountDownLatch::raw_name`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) {
    /// println!("{}", client.get_count_down_latch("jobs").raw_name());
    /// # }
    /// ```
    pub fn raw_name(&self) -> &str {
        self.inner.raw_name()
    }

    /// Sets the count if the latch has none; see [`crate::CountDownLatch::try_set_count`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#trySetCount(long count)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// assert!(client.get_count_down_latch("jobs").try_set_count(3)?);
    /// # Ok(()) }
    /// ```
    pub fn try_set_count(&self, count: i64) -> Result<bool> {
        self.run(move |latch| async move { latch.try_set_count(count).await })
    }

    /// Counts down by one; see [`crate::CountDownLatch::count_down`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#countDown()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// client.get_count_down_latch("jobs").count_down()?;
    /// # Ok(()) }
    /// ```
    pub fn count_down(&self) -> Result<()> {
        self.run(|latch| async move { latch.count_down().await })
    }

    /// The count (0 when open); see [`crate::CountDownLatch::get_count`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#getCount()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// println!("{}", client.get_count_down_latch("jobs").get_count()?);
    /// # Ok(()) }
    /// ```
    pub fn get_count(&self) -> Result<i64> {
        self.run(|latch| async move { latch.get_count().await })
    }

    /// Deletes the count and releases the waiters; see [`crate::CountDownLatch::delete`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#delete()` (which publishes `1` and leaves its waiters asleep)
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// client.get_count_down_latch("jobs").delete()?;
    /// # Ok(()) }
    /// ```
    pub fn delete(&self) -> Result<bool> {
        self.run(|latch| async move { latch.delete().await })
    }

    /// Whether the latch's count key exists; see [`crate::CountDownLatch::is_exists`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// let there = client.get_count_down_latch("jobs").is_exists()?;
    /// # Ok(()) }
    /// ```
    pub fn is_exists(&self) -> Result<bool> {
        self.run(|latch| async move { latch.is_exists().await })
    }

    /// Blocks until the latch is open; see [`crate::CountDownLatch::wait`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#await()`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// client.get_count_down_latch("jobs").wait()?;
    /// # Ok(()) }
    /// ```
    pub fn wait(&self) -> Result<()> {
        self.run(|latch| async move { latch.wait().await })
    }

    /// Blocks until the latch is open, at most `timeout`; returns whether it opened. See
    /// [`crate::CountDownLatch::wait_for`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// `RCountDownLatch#await(long time, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let opened = client.get_count_down_latch("jobs").wait_for(Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn wait_for(&self, timeout: Duration) -> Result<bool> {
        self.run(move |latch| async move { latch.wait_for(timeout).await })
    }

    /// Counts down, then blocks until the latch is open; see
    /// [`crate::CountDownLatch::count_down_and_wait`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// None (redisson#6060).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// client.get_count_down_latch("stage-1").count_down_and_wait()?;
    /// # Ok(()) }
    /// ```
    pub fn count_down_and_wait(&self) -> Result<()> {
        self.run(|latch| async move { latch.count_down_and_wait().await })
    }

    /// [`count_down_and_wait`](CountDownLatch::count_down_and_wait), at most `timeout`;
    /// see [`crate::CountDownLatch::count_down_and_wait_for`].
    ///
    /// # Errors
    /// As the async method.
    ///
    /// # Redisson equivalent
    /// None (redisson#6060).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let latch = client.get_count_down_latch("stage-1");
    /// let opened = latch.count_down_and_wait_for(Duration::from_secs(60))?;
    /// # Ok(()) }
    /// ```
    pub fn count_down_and_wait_for(&self, timeout: Duration) -> Result<bool> {
        self.run(move |latch| async move { latch.count_down_and_wait_for(timeout).await })
    }
}
