//! Fencing tokens: the resource side. Writes that a stale lock holder cannot make.
//!
//! # What a lock can and cannot promise
//!
//! A Redis lock is a lease. While the lease runs nobody else gets the lock, but the holder
//! can be paused past it (a long GC or allocator stall, swap, a stopped VM, a slow
//! network), the lock expires, another client takes it, and the first holder wakes up
//! still believing it holds the lock. No check made *before* the write closes this gap: the
//! pause can fall between the check and the write. Only the resource can refuse the write.
//!
//! # Fencing tokens
//!
//! A fenced lock (Redisson's `RFencedLock`) gives every acquisition a token that grows with
//! each acquisition (an `INCR` of `redisson_lock_token:{N}`). The holder sends its token
//! with every write; the resource remembers the highest token it has seen and refuses a
//! write that carries a lower one. Once the new holder has written with token 34, the
//! paused holder's write with 33 is refused. An equal token is admitted: one holder writes
//! as often as it likes. Tokens of different locks are not comparable: guard each resource
//! with one lock.
//!
//! A fresh counter starts at the lock server's clock in microseconds rather than at 1, so
//! after a Redis restart that lost the counter the new tokens are still above the ones a
//! resource has seen, and it keeps accepting new holders (docs/fencing.md, "Across a
//! restart"; [`FencedLock::ensure_token_floor`](crate::Lock::ensure_token_floor) for a counter a Java
//! client restarted at 1).
//!
//! # Resources in Redis: [`FencedWriter`]
//!
//! [`FencedWriter`] makes fenced `SET`, `SET … PX`, `HSET`, `DEL`, and runs Lua bodies of
//! your own. Each call is one script, atomic on the server: it reads the resource's
//! highest token, refuses a lower one with [`Error::StaleToken`], otherwise does the write
//! and then records the token.
//!
//! ```no_run
//! # async fn demo(client: redisson_lock::Client, token: u64) -> redisson_lock::Result<()> {
//! use redisson_lock::Error;
//! use redisson_lock::fencing::FencedWriter;
//!
//! let writer = FencedWriter::new(&client);
//! // `token` came with the lock acquisition (a fenced lock hands it out).
//! match writer.set("stock:product_101", "41", token).await {
//!     Ok(()) => {}
//!     Err(Error::StaleToken { seen, presented }) => {
//!         // Someone took the lock after us (token `seen`): our hold is stale. Stop.
//!         eprintln!("refused: token {presented} is older than {seen}");
//!     }
//!     Err(other) => return Err(other),
//! }
//! # Ok(()) }
//! ```
//!
//! ## Where the highest token lives
//!
//! For a data key `K` it is a plain string key, `redisson_fence:{K}` (see [`fence_key`]),
//! holding the token in decimal. The braces are Redisson's hash-tag rule (a `K` that
//! already contains `{` is used as it is), so on a cluster the fence lives in `K`'s hash
//! slot and one script can touch both.
//!
//! The fence key has **no expiry**, and neither `DEL` of `K` nor `K`'s expiry touches it: a
//! fence that disappeared with its data would let a paused holder write again (its token
//! would be compared with nothing). So one small key per fenced data key stays behind.
//! Delete it yourself only when you retire `K` for good and no holder of an old token can
//! still be running.
//!
//! Tokens are any `u64`, 0 included. The scripts compare them exactly, as decimal digits:
//! Lua numbers are doubles, which cannot tell 2^53 from 2^53 + 1.
//!
//! # Other resources: [`FencingGate`], SQL, HTTP
//!
//! The rule is the same everywhere: the resource stores the highest token next to the data
//! and, in the same atomic step as the write, refuses a lower one.
//!
//! * **SQL:** keep a `fence_token` column on the row and make the write conditional:
//!   `UPDATE stock SET qty = $qty, fence_token = $t WHERE id = $id AND fence_token <= $t`.
//!   Zero rows affected means a newer holder got there first (or the row is missing):
//!   treat it as [`Error::StaleToken`]. Use a 64-bit column (`BIGINT`; tokens come from
//!   Redis `INCR`, so they fit a signed one) and give new rows `fence_token = 0`.
//! * **HTTP services and object or file storage:** send the token with the request (for
//!   example a `Fencing-Token` header) and have the service compare it with the highest
//!   it has stored for the object, in the same transaction as the write, answering
//!   `409 Conflict` for a lower one. Where the storage offers only compare-and-swap
//!   (an ETag with `If-Match`, a generation number), store the token inside the object
//!   or its metadata and write with `If-Match` on the version you read, so that the
//!   read-compare-write cannot interleave with another writer.
//! * **In this process:** a [`FencingGate`] in front of the resource, when every write goes
//!   through this process (one writer service in front of a file or a device). Its memory
//!   ends with the process; see [`FencingGate::with_highest`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use fred::prelude::{KeysInterface, Value};

use crate::client::Client;
use crate::config::MAX_LEASE;
use crate::connection::scripts::{Resend, Script, is_wrong_type};
use crate::error::{Error, Result};
use crate::names::hash_tag;

/// `lua/fencing_guard.lua`: the check and the token record around a fenced write.
pub(crate) const FENCING_GUARD: &str = include_str!("../../lua/fencing_guard.lua");
/// `lua/fencing_ops.lua`: the fixed writes (`set`, `set_px`, `hset`, `del`).
pub(crate) const FENCING_OPS: &str = include_str!("../../lua/fencing_ops.lua");

/// What comes before a write's Lua in a fenced script: the guard calls it as
/// `fenced_write(KEYS, ARGV)` with the write's own keys and arguments.
const WRITE_OPEN: &str = "local function fenced_write(KEYS, ARGV)\n";
/// What closes a write's Lua; the guard follows.
const WRITE_CLOSE: &str = "\nend\n";

/// The guard around the fixed writes, assembled and hashed once per process.
static OPS_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::from_string(guarded(FENCING_OPS)));

/// Error reply code of a refused (stale) token: `REDISSON_FENCE_STALE <seen>`.
const STALE_REPLY: &str = "REDISSON_FENCE_STALE ";
/// Error reply code of a fence key that holds no token: `REDISSON_FENCE_CORRUPT <found>`.
const CORRUPT_REPLY: &str = "REDISSON_FENCE_CORRUPT ";

/// The key that holds the highest token seen for data key `key`: `redisson_fence:{key}`,
/// or `redisson_fence:key` when `key` already contains `{` (Redisson's hash-tag rule).
///
/// The fence key always hashes to `key`'s cluster slot; a key for which the rule cannot
/// give that (a `}` without a `{`, or a `{` without a well-formed `{tag}`, such as `a}b`,
/// `a{b` or `{}x`) is refused, on every topology, so a key that works on one Redis works
/// on a cluster too.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty key or one whose fence would land in another
/// hash slot.
///
/// # Examples
/// ```
/// use redisson_lock::fencing::fence_key;
/// assert_eq!(fence_key("stock:101")?, "redisson_fence:{stock:101}");
/// assert_eq!(fence_key("{user:7}:cart")?, "redisson_fence:{user:7}:cart");
/// assert!(fence_key("a}b").is_err());
/// # Ok::<(), redisson_lock::Error>(())
/// ```
pub fn fence_key(key: &str) -> Result<String> {
    if key.is_empty() {
        return Err(Error::invalid("a fenced key must not be empty"));
    }
    let fence = format!("redisson_fence:{}", hash_tag(key));
    let slot = fred::util::redis_keyslot(key.as_bytes());
    if fred::util::redis_keyslot(fence.as_bytes()) != slot {
        return Err(Error::invalid(format!(
            "key `{key}` cannot be fenced: its fence key `{fence}` would hash to another \
             cluster slot (use a key without `}}`, or one with a `{{tag}}`)"
        )));
    }
    Ok(fence)
}

/// Fenced writes to data in Redis: each refuses a token below the highest its key has
/// seen, atomically with the write.
///
/// A cheap `Clone` handle on a [`Client`]'s connection (it keeps the client alive like an
/// [`RLock`](crate::RLock) does). Every call is one Lua script that, on the server and in
/// one step:
///
/// 1. reads the highest token recorded in the data key's [`fence_key`];
/// 2. refuses a token below it with [`Error::StaleToken`] (an equal one is admitted: the
///    same holder writing again), writing nothing;
/// 3. does the write;
/// 4. records the token, so the fence holds the highest token admitted.
///
/// The token is recorded after the write, so a write that fails (say `HSET` on a key that
/// holds a string) leaves the fence as it was. See the [module documentation](self) for
/// where the fence lives and why it outlives the data.
///
/// # Sent at most once
/// A fenced write is written to the connection at most once. If the connection drops
/// after that, the call fails with [`Error::Redis`] and the write may or may not have
/// happened; sending the same `set`/`set_with_ttl`/`hset`/`del` again with the same token
/// is safe (an equal token is admitted, and the write is the same).
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::fencing::FencedWriter;
/// let writer = FencedWriter::new(&client);
/// writer.hset("order:42", "status", "paid", 34).await?;
/// assert_eq!(writer.highest("order:42").await?, Some(34));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FencedWriter {
    client: Client,
}

impl FencedWriter {
    /// A writer on `client`'s connection; its calls use the client's response timeout.
    /// No I/O.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let writer = redisson_lock::fencing::FencedWriter::new(&client);
    /// # }
    /// ```
    pub fn new(client: &Client) -> FencedWriter {
        FencedWriter {
            client: client.clone(),
        }
    }

    /// `SET key value` (no expiry; like `SET`, it replaces a value of any type and drops an
    /// existing TTL), if `token` is not below the highest `key` has seen.
    ///
    /// # Errors
    /// [`Error::StaleToken`] if a higher token was seen (nothing written);
    /// [`Error::CorruptFence`] if the fence key holds no token; [`Error::InvalidArgument`]
    /// for a key [`fence_key`] refuses; [`Error::Redis`]; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Dropping the future does not recall a write already sent: it may have happened.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(writer: redisson_lock::fencing::FencedWriter, token: u64) -> redisson_lock::Result<()> {
    /// writer.set("stock:product_101", "41", token).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set(&self, key: &str, value: impl Into<Value>, token: u64) -> Result<()> {
        let args = vec![Value::from_static_str("set"), value.into()];
        self.run_ops(key, args, token).await.map(|_| ())
    }

    /// `SET key value PX ttl`, if `token` is not below the highest `key` has seen. The TTL
    /// is in whole milliseconds (a fraction is dropped). When `key` expires, its fence
    /// stays: a stale holder cannot write it again afterwards.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `ttl` under 1 ms or above
    /// [`MAX_LEASE`], before any I/O; otherwise those of
    /// [`set`](Self::set).
    ///
    /// # Cancel safety
    /// Dropping the future does not recall a write already sent: it may have happened.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(writer: redisson_lock::fencing::FencedWriter, token: u64) -> redisson_lock::Result<()> {
    /// use std::time::Duration;
    /// writer.set_with_ttl("session:9", "alive", Duration::from_secs(30), token).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_with_ttl(
        &self,
        key: &str,
        value: impl Into<Value>,
        ttl: Duration,
        token: u64,
    ) -> Result<()> {
        if ttl < Duration::from_millis(1) || ttl > MAX_LEASE {
            return Err(Error::invalid(format!(
                "ttl {ttl:?} is outside 1 ms ..= {MAX_LEASE:?}"
            )));
        }
        // Bounded by MAX_LEASE (2^52 ms), so the cast cannot truncate.
        let millis = ttl.as_millis() as i64;
        let args = vec![
            Value::from_static_str("set_px"),
            value.into(),
            Value::from(millis),
        ];
        self.run_ops(key, args, token).await.map(|_| ())
    }

    /// `HSET key field value`, if `token` is not below the highest `key` has seen. Returns
    /// whether the field is new.
    ///
    /// # Errors
    /// [`Error::WrongType`] if `key` holds something other than a hash (neither the data
    /// nor the fence is changed); otherwise those of [`set`](Self::set).
    ///
    /// # Cancel safety
    /// Dropping the future does not recall a write already sent: it may have happened.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(writer: redisson_lock::fencing::FencedWriter, token: u64) -> redisson_lock::Result<()> {
    /// let created = writer.hset("order:42", "status", "paid", token).await?;
    /// # Ok(()) }
    /// ```
    pub async fn hset(
        &self,
        key: &str,
        field: impl Into<Value>,
        value: impl Into<Value>,
        token: u64,
    ) -> Result<bool> {
        let args = vec![Value::from_static_str("hset"), field.into(), value.into()];
        let reply = self.run_ops(key, args, token).await?;
        as_flag("fenced hset", reply)
    }

    /// `DEL key`, if `token` is not below the highest `key` has seen. Returns whether the
    /// key existed. The fence stays (and records `token`): after a delete, a holder with
    /// an older token still cannot write the key.
    ///
    /// # Errors
    /// Those of [`set`](Self::set).
    ///
    /// # Cancel safety
    /// Dropping the future does not recall a write already sent: it may have happened.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(writer: redisson_lock::fencing::FencedWriter, token: u64) -> redisson_lock::Result<()> {
    /// let existed = writer.del("session:9", token).await?;
    /// # Ok(()) }
    /// ```
    pub async fn del(&self, key: &str, token: u64) -> Result<bool> {
        let reply = self
            .run_ops(key, vec![Value::from_static_str("del")], token)
            .await?;
        as_flag("fenced del", reply)
    }

    /// Runs your Lua `body` as a fenced write, if `token` is not below the highest
    /// `keys[0]` has seen, and returns the body's reply.
    ///
    /// The fence is `keys[0]`'s: the same one [`set`](Self::set) and the others use for
    /// that key. The body is a Lua chunk as you would give `EVAL` (without a `#!lua`
    /// line): it reads `KEYS` and `ARGV` exactly as they would be for
    /// `EVAL body keys.len() keys… args…`, and its `return` value is the reply. The crate
    /// wraps it in a function that runs after the check; the token is recorded only if the
    /// body returns. If the body raises an error (a failing `redis.call`), the fence stays
    /// as it was, but, as with any script, writes the body made before the error stay too:
    /// check first, write last. A body's `WRONGTYPE` error comes back as
    /// [`Error::WrongType`] naming `keys[0]`.
    ///
    /// On a cluster all `keys` must share `keys[0]`'s hash slot (use a `{tag}`). Each
    /// distinct body is one more script in the server's cache, as with `EVAL`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `keys` is empty or [`fence_key`] refuses `keys[0]`;
    /// [`Error::StaleToken`]; [`Error::CorruptFence`]; [`Error::WrongType`];
    /// [`Error::Redis`] for any other error, the body's own included; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Dropping the future does not recall a write already sent: it may have happened.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(writer: redisson_lock::fencing::FencedWriter, token: u64) -> redisson_lock::Result<()> {
    /// // Move stock between two keys of one hash slot, fenced by the first key.
    /// let body = "
    ///     local left = redis.call('decrby', KEYS[1], ARGV[1])
    ///     redis.call('incrby', KEYS[2], ARGV[1])
    ///     return left
    /// ";
    /// let left = writer
    ///     .eval(body, &["{stock}:free", "{stock}:held"], &["3".into()], token)
    ///     .await?;
    /// assert!(left.as_i64().is_some());
    /// # Ok(()) }
    /// ```
    pub async fn eval(
        &self,
        body: &str,
        keys: &[&str],
        args: &[Value],
        token: u64,
    ) -> Result<Value> {
        let Some(resource) = keys.first() else {
            return Err(Error::invalid(
                "a fenced eval needs at least one key: the first names the fenced resource",
            ));
        };
        let script = Script::from_string(guarded(body));
        self.run(&script, resource, keys, args.to_vec(), token)
            .await
    }

    /// The highest token `key` has admitted (`GET` of its [`fence_key`]), or `None` if no
    /// fenced write has reached it (or its fence key was deleted).
    ///
    /// # Errors
    /// [`Error::CorruptFence`] if the fence key holds no token; [`Error::InvalidArgument`]
    /// for a key [`fence_key`] refuses; [`Error::Redis`]; [`Error::Shutdown`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(writer: redisson_lock::fencing::FencedWriter) -> redisson_lock::Result<()> {
    /// if let Some(token) = writer.highest("stock:product_101").await? {
    ///     println!("last written under token {token}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn highest(&self, key: &str) -> Result<Option<u64>> {
        let fence = fence_key(key)?;
        if self.client.is_shutdown() {
            return Err(Error::Shutdown);
        }
        let reply: Value = match self
            .client
            .transport()
            .query(|r| r.get(fence.as_str()))
            .await
        {
            Ok(reply) => reply,
            Err(error) if is_wrong_type(&error) => {
                return Err(Error::CorruptFence {
                    key: fence,
                    found: "<not a string>".to_owned(),
                });
            }
            Err(error) => return Err(self.other_error(error)),
        };
        let bytes = match &reply {
            Value::Null => return Ok(None),
            Value::Integer(n) => {
                return u64::try_from(*n)
                    .map(Some)
                    .map_err(|_| Error::CorruptFence {
                        key: fence.clone(),
                        found: n.to_string(),
                    });
            }
            other => other.as_bytes().unwrap_or_default(),
        };
        match parse_token(bytes) {
            Some(token) => Ok(Some(token)),
            None => Err(Error::CorruptFence {
                key: fence,
                found: shown(bytes),
            }),
        }
    }

    async fn run_ops(&self, key: &str, args: Vec<Value>, token: u64) -> Result<Value> {
        self.run(&OPS_SCRIPT, key, &[key], args, token).await
    }

    /// Runs a guarded script: KEYS = `keys` + the fence key, ARGV = `args` + the token.
    async fn run(
        &self,
        script: &Script,
        resource: &str,
        keys: &[&str],
        mut args: Vec<Value>,
        token: u64,
    ) -> Result<Value> {
        let fence = fence_key(resource)?;
        if self.client.is_shutdown() {
            return Err(Error::Shutdown);
        }
        let mut all_keys = Vec::with_capacity(keys.len() + 1);
        all_keys.extend_from_slice(keys);
        all_keys.push(fence.as_str());
        args.push(Value::from(token.to_string()));
        self.client
            .transport()
            .eval(script, &all_keys, &args, Resend::Never)
            .await
            .map_err(|error| self.script_error(error, resource, &fence, token))
    }

    /// The crate's error for a failed guarded script.
    fn script_error(
        &self,
        error: fred::error::Error,
        resource: &str,
        fence: &str,
        presented: u64,
    ) -> Error {
        let details = error.details();
        if let Some(seen) = details
            .strip_prefix(STALE_REPLY)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|seen| parse_token(seen.as_bytes()))
        {
            return Error::StaleToken { seen, presented };
        }
        if let Some(found) = details.strip_prefix(CORRUPT_REPLY) {
            return Error::CorruptFence {
                key: fence.to_owned(),
                found: found.to_owned(),
            };
        }
        if is_wrong_type(&error) {
            return Error::WrongType {
                key: resource.to_owned(),
            };
        }
        self.other_error(error)
    }

    fn other_error(&self, error: fred::error::Error) -> Error {
        if self.client.is_shutdown() {
            Error::Shutdown
        } else {
            Error::Redis(error)
        }
    }
}

/// A caller's Lua body inside the guard (see `lua/fencing_guard.lua`).
fn guarded(body: &str) -> String {
    let mut script = String::with_capacity(
        WRITE_OPEN.len() + body.len() + WRITE_CLOSE.len() + FENCING_GUARD.len(),
    );
    script.push_str(WRITE_OPEN);
    script.push_str(body);
    script.push_str(WRITE_CLOSE);
    script.push_str(FENCING_GUARD);
    script
}

/// A token as the scripts accept it: 1 to 20 ASCII digits with a value that fits a `u64`.
fn parse_token(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// A foreign fence value for an error message, as the guard script shows it: at most 64
/// bytes, control characters as `?`.
fn shown(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(64)];
    String::from_utf8_lossy(head)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn as_flag(operation: &'static str, reply: Value) -> Result<bool> {
    match reply {
        Value::Integer(0) => Ok(false),
        Value::Integer(1) => Ok(true),
        other => Err(Error::UnexpectedReply {
            operation,
            reply: format!("{other:?}"),
        }),
    }
}

/// An in-process fence: admits a token not below the highest it has admitted, and
/// remembers the highest.
///
/// For a resource that only this process writes (a file, a device, an in-memory table
/// behind one service): [`check`](Self::check) the writer's token before each write.
/// `FencingGate` is a cheap `Clone` handle (clones share one record) and lock-free: a
/// check is one atomic `fetch_max`.
///
/// A check admits a token at one instant. If writes can run concurrently, do the check
/// and the write under the resource's own lock, as below: otherwise a newer holder's
/// write can fall between an older holder's check and its write, which is the very race
/// the token is there to stop.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> redisson_lock::Result<()> {
/// use redisson_lock::fencing::FencingGate;
/// let ledger = tokio::sync::Mutex::new(Vec::<String>::new());
/// let gate = FencingGate::new();
/// # let token = 34;
/// {
///     let mut entries = ledger.lock().await;   // the write's critical section
///     gate.check(token)?;                      // refused: nothing appended
///     entries.push("reserved 5".to_owned());
/// }
/// # Ok(()) }
/// ```
///
/// The record lives in memory: a new gate (after a restart, say) admits any token. Seed
/// it with [`with_highest`](Self::with_highest) from wherever you persist the highest
/// token, or store the token with the data and compare there (see the
/// [module documentation](self) for SQL and HTTP recipes).
///
/// # Memory ordering
/// Checks are totally ordered (one read-modify-write on one atomic): every admitted token
/// is at least every token admitted before it. An admitted check synchronises with
/// (`AcqRel`) the checks before it.
///
/// # Examples
/// ```
/// use redisson_lock::Error;
/// use redisson_lock::fencing::FencingGate;
/// let gate = FencingGate::new();
/// gate.check(33)?;                  // holder A
/// gate.check(34)?;                  // holder B took the lock after A's lease ran out
/// assert!(matches!(gate.check(33), Err(Error::StaleToken { seen: 34, presented: 33 })));
/// assert_eq!(gate.highest(), Some(34));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct FencingGate {
    state: Arc<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    /// The highest admitted token (0 also before any check).
    highest: AtomicU64,
    /// Whether any token was admitted, which tells "admitted 0" from "nothing yet".
    admitted: AtomicBool,
}

impl FencingGate {
    /// A gate that has seen no token: it admits any.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::fencing::FencingGate::new().highest(), None);
    /// ```
    pub fn new() -> FencingGate {
        FencingGate::default()
    }

    /// A gate that has already seen `highest`, for a record restored after a restart.
    ///
    /// # Examples
    /// ```
    /// let gate = redisson_lock::fencing::FencingGate::with_highest(40);
    /// assert!(gate.check(39).is_err());
    /// assert!(gate.check(40).is_ok());
    /// ```
    pub fn with_highest(highest: u64) -> FencingGate {
        FencingGate {
            state: Arc::new(GateState {
                highest: AtomicU64::new(highest),
                admitted: AtomicBool::new(true),
            }),
        }
    }

    /// Admits `token` if it is not below the highest token admitted so far, and records
    /// it; an equal token is admitted (the same holder writing again).
    ///
    /// # Errors
    /// [`Error::StaleToken`] with the highest token seen, if `token` is below it; nothing
    /// is recorded.
    ///
    /// # Examples
    /// ```
    /// let gate = redisson_lock::fencing::FencingGate::new();
    /// gate.check(7)?;
    /// gate.check(7)?;
    /// assert!(gate.check(6).is_err());
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn check(&self, token: u64) -> Result<()> {
        let seen = self.state.highest.fetch_max(token, Ordering::AcqRel);
        if token < seen {
            return Err(Error::StaleToken {
                seen,
                presented: token,
            });
        }
        if !self.state.admitted.load(Ordering::Relaxed) {
            self.state.admitted.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// The highest token admitted so far, `None` before the first. A check that runs
    /// concurrently may or may not be counted yet.
    ///
    /// # Examples
    /// ```
    /// let gate = redisson_lock::fencing::FencingGate::new();
    /// gate.check(0)?;
    /// assert_eq!(gate.highest(), Some(0));
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn highest(&self) -> Option<u64> {
        let highest = self.state.highest.load(Ordering::Acquire);
        if highest == 0 && !self.state.admitted.load(Ordering::Acquire) {
            None
        } else {
            Some(highest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_keys_share_the_data_slot() {
        for key in ["orders", "stock:101", "{user:7}:cart", "a{b}c", "x:{}{y}"] {
            let fence = fence_key(key);
            if key == "x:{}{y}" {
                assert!(fence.is_err(), "{key}");
                continue;
            }
            let fence = fence.unwrap();
            assert_eq!(
                fred::util::redis_keyslot(fence.as_bytes()),
                fred::util::redis_keyslot(key.as_bytes()),
                "{key}"
            );
        }
        assert_eq!(fence_key("orders").unwrap(), "redisson_fence:{orders}");
        assert_eq!(fence_key("a{b}c").unwrap(), "redisson_fence:a{b}c");
        for bad in ["", "a}b", "a{b", "{}x"] {
            assert!(
                matches!(fence_key(bad), Err(Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn tokens_parse_like_the_script_reads_them() {
        assert_eq!(parse_token(b"0"), Some(0));
        assert_eq!(parse_token(b"007"), Some(7));
        assert_eq!(parse_token(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"18446744073709551616",
            b"000000000000000000001",
            b"+5",
            b"-1",
            b"1.0",
            b" 1",
            b"abc",
        ] {
            assert_eq!(parse_token(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn scripts_wrap_the_write_before_the_guard() {
        let script = guarded("return 1");
        assert!(script.starts_with("local function fenced_write(KEYS, ARGV)\nreturn 1\nend\n"));
        assert!(script.ends_with(FENCING_GUARD));
        // The guard only calls the write; a definition of its own would replace it.
        let code = FENCING_GUARD
            .lines()
            .filter(|line| !line.trim_start().starts_with("--"));
        for line in code {
            assert!(!line.contains("function fenced_write"), "{line}");
        }
    }

    #[test]
    fn gate_admits_equal_and_higher() {
        let gate = FencingGate::new();
        assert_eq!(gate.highest(), None);
        gate.check(0).unwrap();
        assert_eq!(gate.highest(), Some(0));
        gate.check(u64::MAX).unwrap();
        assert!(matches!(
            gate.check(u64::MAX - 1),
            Err(Error::StaleToken {
                seen: u64::MAX,
                presented
            }) if presented == u64::MAX - 1
        ));
        let clone = gate.clone();
        clone.check(u64::MAX).unwrap();
        assert_eq!(gate.highest(), Some(u64::MAX));
    }

    #[allow(dead_code, clippy::let_underscore_future)]
    fn futures_are_send(writer: FencedWriter) {
        fn send<T: Send>(_: &T) {}
        fn sync<T: Send + Sync>() {}
        sync::<FencedWriter>();
        sync::<FencingGate>();
        send(&writer.set("k", "v", 1));
        send(&writer.set_with_ttl("k", "v", Duration::from_secs(1), 1));
        send(&writer.hset("k", "f", "v", 1));
        send(&writer.del("k", 1));
        send(&writer.eval("return 1", &["k"], &[], 1));
        send(&writer.highest("k"));
    }
}
