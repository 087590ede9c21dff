//! The expiry and existence of a synchronizer's keys: Redisson's `RExpirable` (`expire`,
//! `expireAt`, `clearExpire`, `remainTimeToLive`) and `RObject#isExists`, shared by the
//! semaphore (one key) and the permit-expirable semaphore (its count `N` and its
//! `{N}:timeout` set, changed together in one script: `lua/expire_keys.lua`).
//!
//! Semantics are Redisson's (docs/protocol.md §22): `expire*` and `clear_expire`
//! answer whether at least one key changed (so `false` for an object that does not exist,
//! or `clear_expire` on one without a TTL); the conditional ones (`expire_if_set`, ...)
//! send `PEXPIRE` / `PEXPIREAT` with Redis 7's `XX`, `NX`, `GT`, `LT` to every key, as
//! Redisson's `expireIfSet`, ...; `remain_time_to_live`, `expire_time` and `is_exists` read
//! the data key `N` only. Every call here is idempotent and may be re-sent by the
//! transport.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fred::interfaces::ClientLike;
use fred::prelude::{KeysInterface, Value};
use fred::types::{ClusterHash, CustomCommand};

use crate::connection::scripts::{Resend, Script, redis_error};
use crate::engine::Engine;
use crate::error::{Error, Result};

/// `lua/expire_keys.lua`.
pub(crate) const EXPIRE_KEYS: &str = include_str!("../../lua/expire_keys.lua");

static EXPIRE: LazyLock<Script> = LazyLock::new(|| Script::new(EXPIRE_KEYS));

/// When an object is to expire: after a time to live (Java's `Duration`) or at a
/// wall-clock time (Java's `Instant`), as the conditional expiry methods take it
/// (`Semaphore::expire_if_set`, ...). Made from either with `From`.
///
/// # Examples
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use redisson_lock::synchronizers::Expiration;
/// assert_eq!(Expiration::from(Duration::from_secs(60)), Expiration::After(Duration::from_secs(60)));
/// let at = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
/// assert_eq!(Expiration::from(at), Expiration::At(at));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expiration {
    /// `PEXPIRE`: gone after this long (at least 1 ms).
    After(Duration),
    /// `PEXPIREAT`: gone at this time, by the server's clock (one in the past deletes the
    /// keys, as in Redis and Redisson).
    At(SystemTime),
}

impl From<Duration> for Expiration {
    fn from(ttl: Duration) -> Expiration {
        Expiration::After(ttl)
    }
}

impl From<SystemTime> for Expiration {
    fn from(at: SystemTime) -> Expiration {
        Expiration::At(at)
    }
}

/// When an object's data key expires (Redisson's `getExpireTime()`, Redis's
/// `PEXPIRETIME`).
///
/// # Examples
/// ```no_run
/// # async fn demo(semaphore: redisson_lock::Semaphore) -> redisson_lock::Result<()> {
/// use redisson_lock::synchronizers::ExpireTime;
/// match semaphore.expire_time().await? {
///     ExpireTime::Missing => println!("no such semaphore"),
///     ExpireTime::Never => println!("never expires"),
///     ExpireTime::At(at) => println!("gone at {at:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireTime {
    /// The key does not exist (Redisson's `-2`).
    Missing,
    /// The key has no expiry (Redisson's `-1`).
    Never,
    /// The key expires at this time, by the server's clock (whole milliseconds).
    At(SystemTime),
}

/// Which keys a conditional expiry changes: Redis 7's `PEXPIRE` options, as Redisson's
/// `expireIf*` send them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum If {
    /// `XX` (`expireIfSet`): keys that have a TTL.
    Set,
    /// `NX` (`expireIfNotSet`): keys without one.
    NotSet,
    /// `GT` (`expireIfGreater`): keys whose TTL is shorter than the new one (a key
    /// without a TTL counts as never expiring: never changed).
    Greater,
    /// `LT` (`expireIfLess`): keys whose TTL is longer than the new one, or that have none.
    Less,
}

impl If {
    fn option(self) -> &'static str {
        match self {
            If::Set => "XX",
            If::NotSet => "NX",
            If::Greater => "GT",
            If::Less => "LT",
        }
    }
}

/// A change of an object's expiry.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expiry {
    /// `PEXPIRE` / `PEXPIREAT`, on every key or only on those `If` says.
    Set(Expiration, Option<If>),
    /// `PERSIST`: no expiry.
    Clear,
}

impl Expiry {
    /// `PEXPIRE`: gone after `ttl`.
    pub(crate) fn after(ttl: Duration) -> Expiry {
        Expiry::Set(Expiration::After(ttl), None)
    }

    /// `PEXPIREAT`: gone at `at`.
    pub(crate) fn at(at: SystemTime) -> Expiry {
        Expiry::Set(Expiration::At(at), None)
    }

    /// The script's arguments, or [`Error::InvalidArgument`] before any I/O.
    fn args(self) -> Result<[Value; 3]> {
        let (when, only) = match self {
            Expiry::Clear => {
                return Ok([
                    Value::from_static_str("persist"),
                    Value::from(0),
                    Value::from_static_str(""),
                ]);
            }
            Expiry::Set(when, only) => (when, only),
        };
        let only = Value::from_static_str(only.map_or("", If::option));
        Ok(match when {
            Expiration::After(ttl) => {
                let ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
                if ms < 1 {
                    return Err(Error::invalid("a time to live must be at least 1 ms"));
                }
                [Value::from_static_str("pexpire"), Value::from(ms), only]
            }
            Expiration::At(at) => {
                let ms = at
                    .duration_since(UNIX_EPOCH)
                    .map_err(|_| Error::invalid("an expiry time must not be before 1970"))?
                    .as_millis();
                let ms = i64::try_from(ms).unwrap_or(i64::MAX);
                [Value::from_static_str("pexpireat"), Value::from(ms), only]
            }
        })
    }
}

/// Applies `expiry` to every key in `keys` (the data key first; all in one hash slot) in
/// one script; whether any key changed (Redisson's boolean).
pub(crate) async fn change(context: &Engine, keys: &[&str], expiry: Expiry) -> Result<bool> {
    let args = expiry.args()?;
    let reply = context
        .redis
        .eval(&EXPIRE, keys, &args, Resend::Allowed)
        .await
        .map_err(|e| redis_error(keys[0], context.is_closed(), e))?;
    match reply.as_i64() {
        Some(changed) => Ok(changed == 1),
        None => Err(Error::UnexpectedReply {
            operation: "expire",
            reply: format!("{reply:?}"),
        }),
    }
}

/// `PTTL key`: `None` when the key does not exist (Redisson's `-2`), `Some(Duration::MAX)`
/// when it has no expiry (`-1`), else the time left.
pub(crate) async fn remaining(context: &Engine, key: &str) -> Result<Option<Duration>> {
    let ms: i64 = context
        .redis
        .query(|r| r.pttl(key))
        .await
        .map_err(|e| redis_error(key, context.is_closed(), e))?;
    Ok(match ms {
        -2 => None,
        ms if ms < 0 => Some(Duration::MAX),
        ms => Some(Duration::from_millis(ms as u64)),
    })
}

/// `PEXPIRETIME key` (Redis 7.0+): when the key expires.
pub(crate) async fn expire_time(context: &Engine, key: &str) -> Result<ExpireTime> {
    let ms: i64 = context
        .redis
        .query(|r| {
            let command = CustomCommand::new_static("PEXPIRETIME", ClusterHash::FirstKey, false);
            r.custom(command, vec![key])
        })
        .await
        .map_err(|e| redis_error(key, context.is_closed(), e))?;
    Ok(match ms {
        -2 => ExpireTime::Missing,
        ms if ms < 0 => ExpireTime::Never,
        ms => ExpireTime::At(UNIX_EPOCH + Duration::from_millis(ms.unsigned_abs())),
    })
}

/// `EXISTS key`.
pub(crate) async fn exists(context: &Engine, key: &str) -> Result<bool> {
    let count: i64 = context
        .redis
        .query(|r| r.exists(key))
        .await
        .map_err(|e| redis_error(key, context.is_closed(), e))?;
    Ok(count > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_before_any_io() {
        assert!(Expiry::after(Duration::ZERO).args().is_err());
        assert!(Expiry::after(Duration::from_micros(999)).args().is_err());
        let [command, ms, only] = Expiry::after(Duration::from_millis(1500)).args().unwrap();
        assert_eq!(command.as_str().as_deref(), Some("pexpire"));
        assert_eq!(ms.as_i64(), Some(1500));
        assert_eq!(only.as_str().as_deref(), Some(""));
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let [command, ms, _] = Expiry::at(at).args().unwrap();
        assert_eq!(command.as_str().as_deref(), Some("pexpireat"));
        assert_eq!(ms.as_i64(), Some(1_700_000_000_123));
        assert!(
            Expiry::at(UNIX_EPOCH - Duration::from_secs(1))
                .args()
                .is_err()
        );
        let [command, ..] = Expiry::Clear.args().unwrap();
        assert_eq!(command.as_str().as_deref(), Some("persist"));
        for (only, option) in [
            (If::Set, "XX"),
            (If::NotSet, "NX"),
            (If::Greater, "GT"),
            (If::Less, "LT"),
        ] {
            let when = Expiration::After(Duration::from_secs(2));
            let [_, _, sent] = Expiry::Set(when, Some(only)).args().unwrap();
            assert_eq!(sent.as_str().as_deref(), Some(option));
        }
        let zero = Expiry::Set(Expiration::After(Duration::ZERO), Some(If::Set));
        assert!(zero.args().is_err());
    }
}
