//! [`Fenced`]: Redisson's `RFencedLock` (protocol §12): RLock's hash, channel, unlock and
//! renewal, plus a fencing token: `redisson_lock_token:{N}` is `INCR`ed on every
//! successful acquisition (first holds and re-entries, through any method), never reset,
//! and never expires. Pass the token to the protected resource with every write, and let
//! the resource refuse older tokens (see [`crate::client::fencing`]).
//!
//! Unlike Redisson, a missing counter (a new lock, or a Redis restarted without
//! persistence) is seeded from the server's `TIME` in µs before its first `INCR`, so
//! tokens stay above those handed out before a restart; [`Lock::ensure_token_floor`]
//! raises a counter that a Java client restarted from 1 (docs/fencing.md, "Across a
//! restart").

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::sync::LazyLock;
use std::time::Duration;

use fred::prelude::{KeysInterface, Value};

use super::acquiring::Wait;
use super::handle::Lock;
use super::kind::{Acquire, AcquireMode, Capabilities, Kind, ScriptCall, Target};
use super::running::unexpected;
use crate::connection::scripts::{Resend, Script, is_wrong_type};
use crate::error::{Error, Result};
use crate::names::fencing_token;

/// `lua/fenced_acquire.lua`: take or re-enter, and draw a token.
pub(crate) const FENCED_ACQUIRE: &str = include_str!("../../lua/fenced_acquire.lua");

/// `lua/fenced_token_floor.lua`: raise the token counter to the server clock.
pub(crate) const FENCED_TOKEN_FLOOR: &str = include_str!("../../lua/fenced_token_floor.lua");

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(FENCED_ACQUIRE));
static TOKEN_FLOOR: LazyLock<Script> = LazyLock::new(|| Script::new(FENCED_TOKEN_FLOOR));

/// The fenced kind: Redisson's `RFencedLock`. [`FencedLock`](crate::FencedLock) is
/// `Lock<Fenced>`.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock = client.get_fenced_lock("ledger");
/// let token = lock.lock_and_get_token().await?;
/// // write to the resource with `token`; it refuses anything older
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Fenced;

impl Kind for Fenced {
    const NAME: &'static str = "fenced";
    const CAPABILITIES: Capabilities = Capabilities {
        hands_out_tokens: true,
        ..Capabilities::NONE
    };

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        ScriptCall::new(
            &ACQUIRE,
            vec![target.name.to_owned(), fencing_token(target.name)],
            vec![Value::from(lease_ms as i64), target.owner_value()],
        )
    }

    /// `[-1, token]` when taken, `[pttl, -1]` when held by another owner.
    fn acquire_reply(&self, reply: Value) -> std::result::Result<Acquire, Value> {
        let pair = match &reply {
            Value::Array(items) if items.len() == 2 => (items[0].as_i64(), items[1].as_i64()),
            _ => return Err(reply),
        };
        match pair {
            (Some(-1), Some(token)) if token >= 0 => Ok(Acquire::Taken {
                token: Some(token as u64),
            }),
            (Some(ttl), Some(-1)) => Ok(Acquire::Held { ttl }),
            _ => Err(reply),
        }
    }

    /// The acquire script's `BAD_TOKEN` error reply: the token key cannot give a token.
    fn script_error(&self, target: &Target<'_>, error: &fred::error::Error) -> Option<Error> {
        error
            .details()
            .contains("BAD_TOKEN")
            .then(|| Error::BadToken {
                key: fencing_token(target.name),
            })
    }
}

impl Lock<Fenced> {
    /// Takes the lock like [`Lock::lock`] (watchdog mode) and returns its fencing token.
    ///
    /// # Errors
    /// As [`Lock::lock`], and [`Error::BadToken`] if the token key cannot give a token:
    /// it holds something other than a non-negative integer, or the largest one (nothing
    /// is written then). Every acquisition of a fenced lock (`lock`, `try_lock`, guards)
    /// fails the same way.
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#lockAndGetToken()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// let token = lock.lock_and_get_token().await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_and_get_token(&self) -> Result<u64> {
        let acquired = self.acquire_as(self.owner(), None, Wait::Forever).await?;
        acquired.and_then(|a| a.token).ok_or(Error::Shutdown)
    }

    /// Takes the lock like [`Lock::lock_with_lease`] and returns its fencing token.
    /// (Redisson's `lockAndGetToken(lease, unit)` ignores its lease; this one honours it.)
    ///
    /// # Errors
    /// As [`Lock::lock_with_lease`] and [`Lock::lock_and_get_token`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// let token = lock.lock_and_get_token_with_lease(std::time::Duration::from_secs(5)).await?;
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_and_get_token_with_lease(&self, lease: Duration) -> Result<u64> {
        let acquired = self
            .acquire_as(self.owner(), Some(lease), Wait::Forever)
            .await?;
        acquired.and_then(|a| a.token).ok_or(Error::Shutdown)
    }

    /// Like [`Lock::try_lock_with_lease`]: `Some(token)` when taken within `wait`, `None`
    /// when the wait ran out.
    ///
    /// # Errors
    /// As [`Lock::try_lock_with_lease`] and [`Lock::lock_and_get_token`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// let lock = client.get_fenced_lock("ledger");
    /// if let Some(token) = lock.try_lock_and_get_token(Duration::from_secs(1), Duration::from_secs(10)).await? {
    ///     lock.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_and_get_token(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<u64>> {
        let acquired = self
            .acquire_as(self.owner(), Some(lease), Wait::up_to(wait))
            .await?;
        Ok(acquired.and_then(|a| a.token))
    }

    /// Like [`Lock::try_lock_for`] (watchdog mode): `Some(token)` when taken within `wait`.
    /// A zero `wait` is a single attempt.
    ///
    /// Redisson's no-argument `tryLockAndGetToken()` is documented as that single attempt
    /// but waits without bound (it passes a wait of `-1`); this crate follows the
    /// documentation: `try_lock_and_get_token_for(Duration::ZERO)`. For what Java's call
    /// really does, use [`lock_and_get_token`](Lock::lock_and_get_token).
    ///
    /// # Errors
    /// As [`Lock::try_lock_for`] and [`Lock::lock_and_get_token`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#tryLockAndGetToken(long waitTime, TimeUnit unit)`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// if let Some(token) = lock.try_lock_and_get_token_for(std::time::Duration::ZERO).await? {
    ///     lock.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_and_get_token_for(&self, wait: Duration) -> Result<Option<u64>> {
        let acquired = self
            .acquire_as(self.owner(), None, Wait::up_to(wait))
            .await?;
        Ok(acquired.and_then(|a| a.token))
    }

    /// The last token handed out for this lock (`GET redisson_lock_token:{N}`), whoever
    /// drew it; `None` before the first acquisition.
    ///
    /// # Errors
    /// [`Error::BadToken`] if the key holds something other than a non-negative integer
    /// (another type included);
    /// [`Error::Redis`], [`Error::Shutdown`], [`Error::InvalidArgument`].
    ///
    /// # Redisson equivalent
    /// `RFencedLock#getToken()`
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// println!("last token: {:?}", lock.token().await?);
    /// # Ok(()) }
    /// ```
    pub async fn token(&self) -> Result<Option<u64>> {
        self.check()?;
        let key = fencing_token(&self.name);
        let raw: Option<String> = match self.context.redis.query(|r| r.get(&key)).await {
            Ok(raw) => raw,
            // A token key of another type holds no integer either.
            Err(error) if is_wrong_type(&error) => return Err(Error::BadToken { key }),
            Err(error) => return Err(self.redis_error(error)),
        };
        match raw {
            None => Ok(None),
            Some(text) => text
                .parse::<u64>()
                .map(Some)
                .map_err(|_| Error::BadToken { key }),
        }
    }

    /// Raises this lock's token counter to at least the Redis server's clock (`TIME`, in
    /// µs), so that every token drawn afterwards, by this crate or by a Java client, is
    /// above every token handed out from a counter seeded before now. Returns the
    /// counter afterwards; the next token is larger. The counter is never lowered, and
    /// calling this again is harmless.
    ///
    /// This crate's acquisitions seed a *missing* counter from the clock by themselves.
    /// Call this when a Java client may have drawn first after a Redis restart without
    /// persistence: Redisson only `INCR`s, so its counter restarted at 1, and resources
    /// that saw the tokens from before the restart refuse every holder until this runs
    /// (see docs/fencing.md, "Across a restart"). A service can also call it once at
    /// start-up, before its first acquisition.
    ///
    /// The raise needs the server clock not to have stepped back since the counter was
    /// last seeded, and fewer than a million tokens per second drawn on average since
    /// then (one Redis is far slower).
    ///
    /// # Errors
    /// [`Error::BadToken`] if the token key holds something other than a non-negative
    /// integer (nothing is written); [`Error::Redis`], [`Error::Shutdown`],
    /// [`Error::InvalidArgument`], [`Error::UnexpectedReply`].
    ///
    /// # Redisson equivalent
    /// None (Redisson never seeds its counter).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_fenced_lock("ledger");
    /// let floor = lock.ensure_token_floor().await?;
    /// let token = lock.lock_and_get_token().await?;
    /// assert!(token > floor);
    /// lock.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ensure_token_floor(&self) -> Result<u64> {
        self.check()?;
        let key = fencing_token(&self.name);
        let call = ScriptCall::new(&TOKEN_FLOOR, vec![key.clone()], Vec::new());
        let (reply, synced) = self
            .run_synced(&call, Resend::Allowed)
            .await
            .map_err(|e| self.redis_error(e))?;
        self.log_unsynced("token floor", &synced);
        let text = match &reply {
            Value::String(text) => Some(text.to_string()),
            Value::Bytes(bytes) => std::str::from_utf8(bytes).ok().map(str::to_owned),
            _ => None,
        };
        text.and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| unexpected("ensure_token_floor", reply))
    }
}
