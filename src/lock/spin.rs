//! [`Spin`]: Redisson's `RSpinLock` (protocol §13): the reentrant lock's hash and field,
//! no pub/sub; a waiter polls with back-off, and unlock never publishes.
//!
//! Pick it where pub/sub is unavailable (some proxies and managed services) or too costly
//! (very many lock names with waiters at once: every waited-on name costs a channel
//! subscription on the other kinds). It costs more scripts per acquisition under
//! contention and hands over later: a waiter notices a release only at its next poll.

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use fred::prelude::Value;

use super::kind::{AcquireMode, Kind, ScriptCall, Target, Waiting};
use super::reentrant::{acquire_call, ACQUIRE};
use crate::error::{Error, Result};
use crate::scripts::Script;

/// `lua/spin_release.lua`: give back one hold, never publishing.
pub(crate) const SPIN_RELEASE: &str = include_str!("../../lua/spin_release.lua");
/// `lua/spin_force_release.lua`: delete the lock, never publishing.
pub(crate) const SPIN_FORCE_RELEASE: &str = include_str!("../../lua/spin_force_release.lua");

static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(SPIN_RELEASE));
static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(SPIN_FORCE_RELEASE));

/// The spin kind: Redisson's `RSpinLock`. [`SpinLock`](crate::SpinLock) is `Lock<Spin>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::Backoff;
/// let lock = client.get_spin_lock_with("jobs", Backoff::constant(std::time::Duration::from_millis(10))?);
/// lock.lock().await?;
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Spin {
    backoff: Backoff,
}

impl Spin {
    pub(crate) fn new(backoff: Backoff) -> Spin {
        Spin { backoff }
    }

    /// The back-off this spin lock polls with.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// use redisson_lock::Backoff;
    /// let lock = client.get_spin_lock("jobs");
    /// assert_eq!(lock.kind().backoff(), Backoff::default());
    /// # }
    /// ```
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }
}

impl Kind for Spin {
    const NAME: &'static str = "spin";

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        acquire_call(&ACQUIRE, target, lease_ms)
    }

    fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
        ScriptCall::new(
            &RELEASE,
            vec![target.name.to_owned(), latch.to_owned()],
            vec![
                Value::from(lease_ms as i64),
                Value::from(target.owner_field()),
                target.latch_ttl(),
            ],
        )
    }

    fn force_release(&self, target: &Target<'_>) -> ScriptCall {
        ScriptCall::new(&FORCE_RELEASE, vec![target.name.to_owned()], vec![])
    }

    fn waiting(&self, _target: &Target<'_>) -> Waiting {
        Waiting::Poll(self.backoff)
    }

    /// A back-off built through its variants is checked here, before any acquisition.
    fn check(&self) -> Result<()> {
        self.backoff.validated().map(drop)
    }
}

/// How a [`SpinLock`](crate::SpinLock) waits between attempts (Redisson's `LockOptions`
/// back-offs).
///
/// Build one with [`Backoff::default`], [`Backoff::exponential`] or
/// [`Backoff::constant`], which refuse delays that would make a waiter hammer Redis (a
/// delay under 1 ms, a `max` below `initial`, a multiplier of 0). A spin lock given such
/// a back-off through its variants answers every acquisition with
/// [`Error::InvalidArgument`] before any I/O.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use redisson_lock::Backoff;
/// // Redisson's default: 1 ms, doubling (plus jitter) up to 128 ms.
/// assert_eq!(Backoff::default(), Backoff::exponential(
///     Duration::from_millis(1), Duration::from_millis(128), 2).unwrap());
/// assert!(Backoff::constant(Duration::ZERO).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backoff {
    /// Redisson's `ExponentialBackOff`: the first delay is `initial`; each next one is
    /// `min(max, previous × multiplier + jitter)`, the jitter a random whole number of
    /// milliseconds below the number of failed attempts so far.
    Exponential {
        /// The first delay.
        initial: Duration,
        /// The largest delay.
        max: Duration,
        /// The growth factor.
        multiplier: u32,
    },
    /// Redisson's `ConstantBackOff`: the same delay every time.
    Constant(Duration),
}

impl Default for Backoff {
    /// Redisson's default `ExponentialBackOff`: 1 ms, ×2, at most 128 ms.
    fn default() -> Self {
        Backoff::Exponential {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(128),
            multiplier: 2,
        }
    }
}

impl Backoff {
    /// Redisson's `ConstantBackOff` default delay, 64 ms.
    pub const DEFAULT_CONSTANT: Duration = Duration::from_millis(64);

    /// An exponential back-off.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an `initial` under 1 ms (Redisson counts in whole
    /// milliseconds, so that is a delay of 0), a `max` below `initial`, or a `multiplier`
    /// of 0.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let b = redisson_lock::Backoff::exponential(
    ///     Duration::from_millis(2), Duration::from_millis(50), 3)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn exponential(initial: Duration, max: Duration, multiplier: u32) -> Result<Backoff> {
        Backoff::Exponential {
            initial,
            max,
            multiplier,
        }
        .validated()
    }

    /// A constant back-off.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a delay under 1 ms (0 in Redisson's milliseconds).
    ///
    /// # Examples
    /// ```
    /// let b = redisson_lock::Backoff::constant(redisson_lock::Backoff::DEFAULT_CONSTANT)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn constant(delay: Duration) -> Result<Backoff> {
        Backoff::Constant(delay).validated()
    }

    /// This back-off, or [`Error::InvalidArgument`] if a waiter could not use it.
    pub(crate) fn validated(self) -> Result<Backoff> {
        match self {
            Backoff::Exponential {
                initial,
                max,
                multiplier,
            } if initial < MIN_DELAY || max < initial || multiplier == 0 => {
                Err(Error::invalid(format!(
                    "exponential back-off needs 1 ms <= initial <= max and a multiplier >= 1 \
                     (got initial {initial:?}, max {max:?}, multiplier {multiplier})"
                )))
            }
            Backoff::Constant(delay) if delay < MIN_DELAY => Err(Error::invalid(format!(
                "constant back-off delay must be at least 1 ms (got {delay:?})"
            ))),
            valid => Ok(valid),
        }
    }

    /// The delays of one waiter, from its first failed attempt on.
    pub(crate) fn delays(self) -> Delays {
        Delays {
            backoff: self,
            previous: None,
            fails: 0,
        }
    }
}

/// The shortest back-off delay: Redisson's delays are whole milliseconds, and 0 would
/// make a waiter poll without pause.
const MIN_DELAY: Duration = Duration::from_millis(1);

/// The back-off delays of one waiter.
pub(crate) struct Delays {
    backoff: Backoff,
    previous: Option<Duration>,
    fails: u64,
}

impl Delays {
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = match self.backoff {
            Backoff::Constant(delay) => delay,
            Backoff::Exponential {
                initial,
                max,
                multiplier,
            } => match self.previous {
                None => initial,
                Some(previous) => {
                    let jitter = Duration::from_millis(random_below(self.fails));
                    previous
                        .saturating_mul(multiplier)
                        .saturating_add(jitter)
                        .min(max)
                }
            },
        };
        self.previous = Some(delay);
        self.fails += 1;
        delay
    }
}

/// A cheap random number in `0..bound` (0 for a bound of 0): good enough for jitter.
fn random_below(bound: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if bound == 0 {
        return 0;
    }
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish() % bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_delays_follow_redisson() {
        let mut delays = Backoff::default().delays();
        let got: Vec<u128> = (0..12).map(|_| delays.next_delay().as_millis()).collect();
        assert_eq!(got[0], 1);
        for pair in got.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(b >= (a * 2).min(128) && b <= 128, "{got:?}");
        }
        assert_eq!(*got.last().unwrap(), 128);
    }

    #[test]
    fn constant_delays_are_constant() {
        let mut delays = Backoff::constant(Duration::from_millis(5))
            .unwrap()
            .delays();
        assert!((0..5).all(|_| delays.next_delay() == Duration::from_millis(5)));
    }

    #[test]
    fn bad_backoffs_are_refused() {
        assert!(Backoff::constant(Duration::ZERO).is_err());
        assert!(Backoff::constant(Duration::from_micros(999)).is_err());
        assert!(Backoff::constant(Duration::from_millis(1)).is_ok());
        assert!(Backoff::exponential(Duration::ZERO, Duration::from_millis(1), 2).is_err());
        assert!(
            Backoff::exponential(Duration::from_micros(10), Duration::from_millis(1), 2).is_err()
        );
        assert!(
            Backoff::exponential(Duration::from_millis(5), Duration::from_millis(1), 2).is_err()
        );
        assert!(
            Backoff::exponential(Duration::from_millis(1), Duration::from_millis(1), 0).is_err()
        );
    }
}
