//! The expiry and existence of a synchronizer's keys: Redisson's `RExpirable` (`expire`,
//! `expireAt`, `clearExpire`, `remainTimeToLive`) and `RObject#isExists`, shared by the
//! semaphore (one key) and the permit-expirable semaphore (its count `N` and its
//! `{N}:timeout` set, changed together in one script: `lua/expire_keys.lua`).
//!
//! Semantics are Redisson's (docs/protocol.md §22): `expire*` and `clear_expire`
//! answer whether at least one key changed (so `false` for an object that does not exist,
//! or `clear_expire` on one without a TTL); `remain_time_to_live` and `is_exists` read the
//! data key `N` only. Every call here is idempotent and may be re-sent by the transport.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fred::prelude::{KeysInterface, Value};

use crate::connection::scripts::{redis_error, Resend, Script};
use crate::engine::Engine;
use crate::error::{Error, Result};

/// `lua/expire_keys.lua`.
pub(crate) const EXPIRE_KEYS: &str = include_str!("../../lua/expire_keys.lua");

static EXPIRE: LazyLock<Script> = LazyLock::new(|| Script::new(EXPIRE_KEYS));

/// A change of an object's expiry.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expiry {
    /// `PEXPIRE`: gone after this long (at least 1 ms).
    After(Duration),
    /// `PEXPIREAT`: gone at this wall-clock time (one in the past deletes the keys, as
    /// in Redis and Redisson).
    At(SystemTime),
    /// `PERSIST`: no expiry.
    Clear,
}

impl Expiry {
    /// The script's arguments, or [`Error::InvalidArgument`] before any I/O.
    fn args(self) -> Result<[Value; 2]> {
        Ok(match self {
            Expiry::After(ttl) => {
                let ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
                if ms < 1 {
                    return Err(Error::invalid("a time to live must be at least 1 ms"));
                }
                [Value::from_static_str("pexpire"), Value::from(ms)]
            }
            Expiry::At(at) => {
                let ms = at
                    .duration_since(UNIX_EPOCH)
                    .map_err(|_| Error::invalid("an expiry time must not be before 1970"))?
                    .as_millis();
                let ms = i64::try_from(ms).unwrap_or(i64::MAX);
                [Value::from_static_str("pexpireat"), Value::from(ms)]
            }
            Expiry::Clear => [Value::from_static_str("persist"), Value::from(0)],
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
        assert!(Expiry::After(Duration::ZERO).args().is_err());
        assert!(Expiry::After(Duration::from_micros(999)).args().is_err());
        let [command, ms] = Expiry::After(Duration::from_millis(1500)).args().unwrap();
        assert_eq!(command.as_str().as_deref(), Some("pexpire"));
        assert_eq!(ms.as_i64(), Some(1500));
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let [command, ms] = Expiry::At(at).args().unwrap();
        assert_eq!(command.as_str().as_deref(), Some("pexpireat"));
        assert_eq!(ms.as_i64(), Some(1_700_000_000_123));
        assert!(Expiry::At(UNIX_EPOCH - Duration::from_secs(1))
            .args()
            .is_err());
        let [command, _] = Expiry::Clear.args().unwrap();
        assert_eq!(command.as_str().as_deref(), Some("persist"));
    }
}
