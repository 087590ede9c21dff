//! How the Lua scripts of `lua/` are sent (each kind keeps its own scripts).
//!
//! Invariants: a script goes as `EVALSHA`; a `NOSCRIPT` answer (after a restart, a
//! failover or `SCRIPT FLUSH`) is answered by sending the same call once as `EVAL`, which
//! also puts the script back in the server's cache. Scripts that change a hold count
//! (acquire, unlock) are sent with [`Resend::Never`]: fred writes them at most once, so a
//! reconnect can never apply one twice; the caller gets an error instead. Only a call that
//! fred failed before writing it (no connection to route it to) is sent again. A script
//! sent with [`Script::run_synced`] carries its `WAIT` for the replicas in the same
//! pipeline (see [`ReplicaSync`]).

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::{ClientLike, Options, Value};
use fred::types::{ClusterHash, CustomCommand};

use crate::connection::replicas::{ReplicaSync, Synced};
use crate::connection::retry;

/// How many cluster redirections (`MOVED`, `ASK`) fred follows for a command it may write
/// up to three times (its default `max_command_attempts`): one fewer than its writes.
///
/// fred 10.1 answers an `ASK` by sending `ASKING` to the node the slot is moving to and
/// then writing the command by its slot map again, to the node it is leaving: another
/// `ASK`. Once a command's writes are used up that way, fred ends the client's routing
/// task, and every command on the client waits for its response timeout (seen with a
/// lock's check in a migrating slot: `tests/topology/cluster.rs`). With fewer
/// redirections than writes, the command fails first (`Too many redirections`, a routing
/// error: it did not run) and the client goes on; the scripts send it again until the
/// slot has moved (see [`not_sent`]).
pub(crate) const MAX_REDIRECTIONS: u32 = 2;

/// A key as a script call takes it: text (copied into the call) or a ready-made value
/// (cloned by reference count; see `lock::key_cache`).
pub(crate) trait ScriptKey {
    /// The key's bytes, for its hash slot.
    fn key_bytes(&self) -> &[u8];
    /// The key as an argument of the call.
    fn to_value(&self) -> Value;
}

impl ScriptKey for &str {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn to_value(&self) -> Value {
        Value::from(*self)
    }
}

impl ScriptKey for String {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn to_value(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl ScriptKey for Value {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes().unwrap_or_default()
    }
    fn to_value(&self) -> Value {
        self.clone()
    }
}

/// Whether fred may write a script again after a reconnect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resend {
    /// Written at most once: a connection lost after the write is an error for the
    /// caller. (A call fred failed *before* writing it never ran, and is sent again.)
    Never,
    /// fred's own retry policy applies (for idempotent scripts).
    Allowed,
}

/// One script with its keys and arguments: what a primitive builds and
/// [`Redis`](super::redis::Redis) sends.
pub(crate) struct ScriptCall {
    pub(crate) script: &'static Script,
    pub(crate) keys: Vec<Value>,
    pub(crate) args: Vec<Value>,
}

impl ScriptCall {
    /// A call with keys built for it (moved into values, not copied).
    pub(crate) fn new(script: &'static Script, keys: Vec<String>, args: Vec<Value>) -> Self {
        let keys = keys.into_iter().map(Value::from).collect();
        ScriptCall { script, keys, args }
    }

    /// A call with ready-made key values (cloned by reference count).
    pub(crate) fn with_values(script: &'static Script, keys: Vec<Value>, args: Vec<Value>) -> Self {
        ScriptCall { script, keys, args }
    }
}

/// One Lua script and its SHA-1.
#[derive(Debug)]
pub(crate) struct Script {
    sha: String,
    /// The SHA-1 and the body as ready-made (reference-counted) arguments.
    sha_arg: Value,
    body_arg: Value,
}

impl Script {
    pub(crate) fn new(body: &'static str) -> Self {
        let sha = fred::util::sha1_hash(body);
        Script {
            sha_arg: Value::from(sha.as_str()),
            body_arg: Value::from(body),
            sha,
        }
    }

    /// A script whose text is put together at run time (a fenced write around a body).
    pub(crate) fn from_string(body: String) -> Self {
        let sha = fred::util::sha1_hash(&body);
        Script {
            sha_arg: Value::from(sha.as_str()),
            body_arg: Value::from(body),
            sha,
        }
    }

    /// The script's SHA-1, as `EVALSHA` takes it.
    #[cfg(test)]
    pub(crate) fn sha(&self) -> &str {
        &self.sha
    }

    /// Runs the script: `EVALSHA`, and `EVAL` once if the server answers `NOSCRIPT`.
    ///
    /// `keys` must be non-empty and, on a cluster, in one hash slot: the call is routed by
    /// the slot of the first key.
    pub(crate) async fn run<S: ScriptKey>(
        &self,
        client: &fred::prelude::Client,
        keys: &[S],
        args: &[Value],
        resend: Resend,
        timeout: Duration,
    ) -> Result<Value, fred::error::Error> {
        let (slot, len, push_call) = keyed_call(keys, args);
        self.run_core(
            client,
            slot,
            (resend, false),
            timeout,
            (len, push_call),
            None,
        )
        .await
        .map(|(reply, _)| reply)
    }

    /// Runs the script in hash slot `slot`. `push_call` appends what follows the SHA-1 (or
    /// the body): the number of keys, the keys, the arguments. It runs once per attempt,
    /// so the common case builds the arguments once and copies nothing.
    pub(crate) async fn run_in_slot(
        &self,
        client: &fred::prelude::Client,
        slot: u16,
        resend: Resend,
        timeout: Duration,
        push_call: impl Fn(&mut Vec<Value>),
    ) -> Result<Value, fred::error::Error> {
        self.run_core(client, slot, (resend, false), timeout, (8, push_call), None)
            .await
            .map(|(reply, _)| reply)
    }

    /// [`Script::run_in_slot`] of a read-only script as `EVALSHA_RO` (`EVAL_RO` after a
    /// `NOSCRIPT`; Redis 7+): a read command, so a connection with `CLIENT TRACKING` on
    /// tracks its keys (a plain `EVALSHA` is a write command and tracks nothing).
    pub(crate) async fn run_read_only_in_slot(
        &self,
        client: &fred::prelude::Client,
        slot: u16,
        timeout: Duration,
        push_call: impl Fn(&mut Vec<Value>),
    ) -> Result<Value, fred::error::Error> {
        self.run_core(
            client,
            slot,
            (Resend::Allowed, true),
            timeout,
            (8, push_call),
            None,
        )
        .await
        .map(|(reply, _)| reply)
    }

    /// [`Script::run`] followed by `WAIT` for the replicas (see [`ReplicaSync`]): the
    /// `WAIT` goes in the same pipeline, right behind the script, to the same node.
    pub(crate) async fn run_synced<S: ScriptKey>(
        &self,
        client: &fred::prelude::Client,
        keys: &[S],
        args: &[Value],
        resend: Resend,
        timeout: Duration,
        sync: &Arc<ReplicaSync>,
    ) -> Result<(Value, Synced), fred::error::Error> {
        let (slot, len, push_call) = keyed_call(keys, args);
        self.run_core(
            client,
            slot,
            (resend, false),
            timeout,
            (len, push_call),
            Some(sync),
        )
        .await
    }

    /// One attempt's command in hash slot `slot`: `EVALSHA` with the SHA-1, or (after a
    /// `NOSCRIPT`) `EVAL` with the body, followed by what `push_call` appends.
    fn call(
        &self,
        (noscript, read_only): (bool, bool),
        slot: u16,
        len: usize,
        push_call: &impl Fn(&mut Vec<Value>),
    ) -> (CustomCommand, Vec<Value>) {
        let (command, script) = match (noscript, read_only) {
            (true, false) => ("EVAL", &self.body_arg),
            (false, false) => ("EVALSHA", &self.sha_arg),
            (true, true) => ("EVAL_RO", &self.body_arg),
            (false, true) => ("EVALSHA_RO", &self.sha_arg),
        };
        // `len`: the whole call (script, key count, keys, arguments), in one allocation.
        let mut args = Vec::with_capacity(len);
        args.push(script.clone());
        push_call(&mut args);
        let command = CustomCommand::new_static(command, ClusterHash::Custom(slot), false);
        (command, args)
    }

    async fn run_core(
        &self,
        client: &fred::prelude::Client,
        slot: u16,
        (resend, read_only): (Resend, bool),
        timeout: Duration,
        (len, push_call): (usize, impl Fn(&mut Vec<Value>)),
        sync: Option<&Arc<ReplicaSync>>,
    ) -> Result<(Value, Synced), fred::error::Error> {
        let wait = match sync {
            Some(sync) => sync.wait_for(client, slot).await.map(|w| (sync, w)),
            None => None,
        };
        let (options, wait_options) = call_options(
            resend,
            timeout,
            wait.as_ref().map(|(sync, _)| sync.timeout()),
        );
        let scripts = client.with_options(&options);
        // Only a call that waits for replicas needs a second handle.
        let waits = wait.as_ref().map(|_| client.with_options(&wait_options));
        let started = tokio::time::Instant::now();
        let mut unsent = 0u32;
        let mut not_sent_pauses = retry::NOT_SENT.pauses();
        // EVALSHA first; EVAL once after a NOSCRIPT. One await point for both, so that the
        // future holds one fred call (about 5 KB), not one per command.
        let mut noscript = false;
        loop {
            let (command, args) = self.call((noscript, read_only), slot, len, &push_call);
            // The script and its WAIT, handed to fred together, script first: fred writes
            // them in that order on the node's connection, in one pipeline. The WAIT
            // (Sentinel and Cluster only) is boxed: the common call carries no room for it.
            let waited = wait.as_ref().zip(waits.as_ref()).map(|((sync, w), waits)| {
                let (command, args) = sync.wait_command(slot, w);
                Box::pin(waits.custom::<Value, Value>(command, args))
            });
            let script_call = scripts.custom::<Value, Value>(command, args);
            let (reply, waited) = match waited {
                Some(waited) => {
                    let (reply, waited) = futures::join!(script_call, waited);
                    (reply, Some(waited))
                }
                None => (script_call.await, None),
            };
            match reply {
                Err(error) if is_noscript(&error) && !noscript => {
                    tracing::debug!(sha = %self.sha, "NOSCRIPT: sending the script with EVAL");
                    noscript = true;
                }
                // fred failed the call before writing it (no connection right after a
                // drop): it surely did not run, so even a never-resend script goes again.
                // A redirection it did not follow (a slot being migrated, see
                // [`MAX_REDIRECTIONS`]) goes again until the slot has moved, within the
                // call's time.
                Err(error)
                    if not_sent(&error)
                        && (unsent < 5 || redirected(&error))
                        && started.elapsed() < timeout =>
                {
                    unsent += 1;
                    tracing::debug!(%error, unsent, "script not sent; sending it again");
                    tokio::time::sleep(not_sent_pauses.next()).await;
                }
                Err(error) => return Err(error),
                Ok(reply) => {
                    let synced = match (wait.as_ref(), waited) {
                        (Some((sync, w)), Some(waited)) => sync.answered(client, slot, w, waited),
                        _ => Synced::Unchecked,
                    };
                    return Ok((reply, synced));
                }
            }
        }
    }
}

/// The options of a script call and of its `WAIT` (`wait_timeout`: how long the replicas
/// are waited for, when they are).
fn call_options(
    resend: Resend,
    timeout: Duration,
    wait_timeout: Option<Duration>,
) -> (Options, Options) {
    // A call fred writes once follows no redirection (see [`MAX_REDIRECTIONS`]).
    let once = resend == Resend::Never;
    let script = Options {
        max_attempts: once.then_some(1),
        max_redirections: once.then_some(0),
        timeout: Some(timeout),
        ..Options::default()
    };
    // A WAIT is never re-sent: on another connection it would wait for nothing.
    let wait = Options {
        max_attempts: Some(1),
        max_redirections: Some(0),
        timeout: Some(timeout + wait_timeout.unwrap_or(Duration::ZERO)),
        ..Options::default()
    };
    (script, wait)
}

/// The one place that reads `NOSCRIPT` out of an error's text.
fn is_noscript(error: &fred::error::Error) -> bool {
    error.details().starts_with("NOSCRIPT")
}

/// A Redis error of a call on `key` as the crate's: [`crate::error::Error::WrongType`] for a key
/// of another type, [`crate::error::Error::Shutdown`] once the client is `closed`, else the error
/// itself.
pub(crate) fn redis_error(
    key: &str,
    closed: bool,
    error: fred::error::Error,
) -> crate::error::Error {
    if is_wrong_type(&error) {
        crate::error::Error::WrongType {
            key: key.to_owned(),
        }
    } else if closed {
        crate::error::Error::Shutdown
    } else {
        crate::error::Error::Redis(error)
    }
}

/// Whether Redis answered `WRONGTYPE` (directly or from inside a script).
pub(crate) fn is_wrong_type(error: &fred::error::Error) -> bool {
    error.details().contains("WRONGTYPE")
}

/// Whether a failed call may or may not have run on the server: the connection dropped or
/// the reply did not come in time, after the command may have been written.
pub(crate) fn outcome_unknown(error: &fred::error::Error) -> bool {
    use fred::error::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::IO | ErrorKind::Timeout | ErrorKind::Canceled
    ) || error.details().contains("write attempts")
}

/// Whether fred failed a call before writing it: it found no connection to route it to
/// (the connection had just dropped and the reconnect had not started yet). The script
/// surely did not run, so sending it again is safe.
pub(crate) fn not_sent(error: &fred::error::Error) -> bool {
    error.kind() == &fred::error::ErrorKind::Routing
        || error.details().starts_with("Failed to route command")
}

/// Whether fred gave up following a cluster redirection (see [`MAX_REDIRECTIONS`]).
fn redirected(error: &fred::error::Error) -> bool {
    error.details().starts_with("Too many redirections")
}

/// A call with `keys` and `args`: the slot of its first key, its length with the SHA-1,
/// and the push of what follows the SHA-1 (the number of keys, the keys, the arguments).
fn keyed_call<'a, S: ScriptKey>(
    keys: &'a [S],
    args: &'a [Value],
) -> (u16, usize, impl Fn(&mut Vec<Value>) + 'a) {
    let slot = keys
        .first()
        .map(|key| fred::util::redis_keyslot(key.key_bytes()))
        .unwrap_or(0);
    let push_call = move |call: &mut Vec<Value>| {
        call.push(Value::from(keys.len() as i64));
        call.extend(keys.iter().map(ScriptKey::to_value));
        call.extend(args.iter().cloned());
    };
    (slot, 2 + keys.len() + args.len(), push_call)
}

/// Milliseconds since the Unix epoch on this machine, as the scripts that compare
/// client-clock deadlines take `now` (the fair lock's queue, the faster multi-lock's
/// values; Redisson passes `System.currentTimeMillis()`).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_have_distinct_shas() {
        // Every script the crate embeds is one of the files in `lua/`.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
        let mut bodies = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "lua") {
                // `Script::new` keeps the text for the program's life.
                let body: &'static str = Box::leak(std::fs::read_to_string(&path).unwrap().into());
                bodies.push(body);
            }
        }
        assert!(
            bodies.len() >= 54,
            "{} scripts in {}",
            bodies.len(),
            dir.display()
        );
        let shas: Vec<String> = bodies
            .iter()
            .map(|b| Script::new(b).sha().to_owned())
            .collect();
        for (i, a) in shas.iter().enumerate() {
            assert_eq!(a.len(), 40);
            for b in &shas[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
