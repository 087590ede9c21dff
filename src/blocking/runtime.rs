//! The blocking client's runtime: starting and stopping it, and running one async call on
//! it while the calling thread waits ([`Shared::run`], used by every blocking method).

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// How many worker threads a blocking [`Client`](super::Client)'s runtime has.
///
/// # Examples
/// ```
/// assert_eq!(redisson_lock::blocking::WORKER_THREADS, 2);
/// ```
pub const WORKER_THREADS: usize = 2;

/// The name of a blocking [`Client`](super::Client)'s runtime threads (Linux shows its first 15 bytes,
/// `redisson-lock-b`, in `/proc/<pid>/task/*/comm`).
///
/// # Examples
/// ```
/// // What a profiler or `top -H` shows for the blocking client's threads on Linux.
/// let comm = &redisson_lock::blocking::THREAD_NAME[..15];
/// assert_eq!(comm, "redisson-lock-b");
/// ```
pub const THREAD_NAME: &str = "redisson-lock-blocking";

/// How long each of the two steps of stopping a blocking [`Client`](super::Client) may take: closing
/// (dropped guards' unlocks in flight, then the connections), then stopping the threads.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::blocking::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::blocking::SHUTDOWN_TIMEOUT;
/// let started = std::time::Instant::now();
/// client.shutdown()?;
/// assert!(started.elapsed() <= 2 * SHUTDOWN_TIMEOUT + std::time::Duration::from_millis(500));
/// # Ok(()) }
/// ```
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(1);

/// At most this many helper threads resolve host names.
const MAX_HELPER_THREADS: usize = 2;

/// What every handle of one blocking client shares: the async client and the runtime it
/// runs on. Never moved into a task of that runtime, so the runtime is never dropped by
/// one of its own threads.
pub(super) struct Shared {
    pub(super) client: crate::Client,
    pub(super) handle: Handle,
    /// `None` once stopped.
    pub(super) runtime: Mutex<Option<Runtime>>,
    /// Unlocks of dropped guards, still running (finished ones are pruned on each push).
    pub(super) releases: Mutex<Vec<JoinHandle<()>>>,
}

/// A poisoned mutex here guards a plain `Option` or `Vec`, which is consistent anyway.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) fn build_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .max_blocking_threads(MAX_HELPER_THREADS)
        .thread_name(THREAD_NAME)
        .enable_all()
        .build()
        .map_err(|error| {
            Error::Redis(fred::error::Error::new(
                fred::error::ErrorKind::IO,
                format!("could not start the blocking client's runtime: {error}"),
            ))
        })
}

/// Runs `future` on `handle`'s runtime and blocks the calling thread until it is done.
/// `None` if the runtime stopped (or had stopped) before the future finished. A panic of
/// the future is resumed on the caller. Never uses tokio's `block_on`, so it works on any
/// thread, inside a runtime too.
pub(super) fn run_on<T, F>(handle: &Handle, future: F) -> Option<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (done, outcome) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = done.send(AssertUnwindSafe(future).catch_unwind().await);
    });
    // A stopped runtime drops the task, and with it the sender: `recv` then fails.
    match outcome.recv() {
        Ok(Ok(value)) => Some(value),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => None,
    }
}

/// Stops the runtime: waits up to [`SHUTDOWN_TIMEOUT`] for its threads, unless the caller
/// is inside a runtime, where tokio forbids the wait.
pub(super) fn stop_runtime(runtime: Runtime) {
    if Handle::try_current().is_ok() {
        runtime.shutdown_background();
    } else {
        runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
    }
}

impl Shared {
    /// Runs `future` on the client's runtime and blocks the calling thread until it is
    /// done; [`Error::Shutdown`] once the client is shut down, or if it shuts down while
    /// the future runs. Works on any thread, inside a tokio runtime too (see [`run_on`]).
    pub(super) fn run<F>(&self, future: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.client.is_shutdown() {
            return Err(Error::Shutdown);
        }
        run_on(&self.handle, future).ok_or(Error::Shutdown)
    }

    /// A dropped guard's release (a lock's, a semaphore's, or any other background
    /// give-back): started on the runtime at once, tracked so that stopping the client
    /// waits for it.
    pub(super) fn track_in_background<F>(&self, release: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let task = self.handle.spawn(release);
        let mut releases = locked(&self.releases);
        releases.retain(|task| !task.is_finished());
        releases.push(task);
    }

    /// Stops the client once: dropped guards' unlocks, then the async shutdown (both
    /// within [`SHUTDOWN_TIMEOUT`]), then the runtime. `Ok` if it was already stopped.
    pub(super) fn stop(&self) -> Result<()> {
        let Some(runtime) = locked(&self.runtime).take() else {
            return Ok(());
        };
        let releases = std::mem::take(&mut *locked(&self.releases));
        let client = self.client.clone();
        let closed = run_on(&self.handle, async move {
            tokio::time::timeout(SHUTDOWN_TIMEOUT, async move {
                for release in releases {
                    let _ = release.await;
                }
                client.shutdown().await
            })
            .await
        });
        stop_runtime(runtime);
        match closed {
            Some(Ok(result)) => result,
            Some(Err(_elapsed)) => Err(Error::Timeout {
                what: "closing the blocking client's connections",
                after: SHUTDOWN_TIMEOUT,
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            tracing::debug!(%error, "dropping the blocking client");
        }
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("client_id", &self.client.id())
            .field("stopped", &locked(&self.runtime).is_none())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_stopped_runtime_answers_none_and_never_panics() {
        let runtime = build_runtime().unwrap();
        let handle = runtime.handle().clone();
        assert_eq!(run_on(&handle, async { 7 }), Some(7));
        stop_runtime(runtime);
        assert_eq!(run_on(&handle, async { 7 }), None);
    }

    #[test]
    fn a_panic_in_the_future_reaches_the_caller() {
        let runtime = build_runtime().unwrap();
        let handle = runtime.handle().clone();
        let caught = std::panic::catch_unwind(|| {
            run_on(&handle, async {
                panic!("boom");
            })
        });
        assert!(caught.is_err());
        assert_eq!(
            run_on(&handle, async { 1 }),
            Some(1),
            "the runtime survives"
        );
        stop_runtime(runtime);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn works_inside_a_current_thread_runtime() {
        let runtime = build_runtime().unwrap();
        let handle = runtime.handle().clone();
        let slept = run_on(&handle, async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            3
        });
        assert_eq!(slept, Some(3));
        stop_runtime(runtime); // inside a runtime: must not panic
    }
}
