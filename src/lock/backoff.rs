//! [`Backoff`]: how a polling waiter (the spin lock) spaces its attempts, as Redisson's
//! `LockOptions` back-offs do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};

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
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::Backoff;
    /// assert_eq!(Backoff::DEFAULT_CONSTANT, std::time::Duration::from_millis(64));
    /// ```
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
