//! An HTTP service (axum) that guards each resource with a fenced lock: requests for one
//! resource run one at a time, a request that cannot get the lock soon answers
//! `409 Conflict`, work that outlives its lease is abandoned, and every write carries the
//! lock's fencing token, so a holder that was overtaken cannot overwrite a newer result.
//!
//! ```text
//! cargo run --example http_service                       # serves until Ctrl-C (PORT, or a free port)
//! cargo run --example http_service -- --demo 12          # drives itself with 12 concurrent requests, then exits
//! DEMO_REQUESTS=12 cargo run --example http_service      # the same
//! ```
//!
//! It uses `REDIS_URL`, or starts its own redis-server. The API:
//!
//! ```text
//! POST /resources/{id}/work   {"work_ms": 100}
//!     200  {"resource": "a", "token": 7, "value": 3}   the work ran under the lock and wrote
//!                                                      `value` with fencing token `token`
//!     409  Retry-After: 1    another request held the resource for longer than the wait
//!     503  Retry-After: 1    the lease ran out before the work was done, or a newer holder
//!                            wrote first: nothing was written
//!     400                    an id that is not [A-Za-z0-9_-]{1,64}, or a bad `work_ms`
//! GET /resources/{id}         {"resource": "a", "value": 3, "token": 7}
//!                            the value and the token of the write that made it
//! ```
//!
//! Why 409 and not 423: `423 Locked` is WebDAV's (RFC 4918), for locks the client itself
//! takes, sees and releases (`LOCK`, `UNLOCK`, lock tokens in `If` headers). This lock is
//! the service's own, held for the length of one request, and all a client can do about
//! it is to come back later: the request conflicts with the resource's current state,
//! which is what `409 Conflict` says and what every HTTP client understands, and
//! `Retry-After` says when.
//!
//! The work is a read-modify-write (read the value, take `work_ms` to compute the next
//! one, write it): if two requests for one resource ever overlapped, one of their
//! increments would be lost. `tests/api/http_service.rs` drives this router with concurrent
//! requests and checks exactly that.
mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use redisson_lock::fencing::FencedWriter;
use redisson_lock::fred::prelude::KeysInterface;
use redisson_lock::{Client, Config, Error, LockOwner};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The work a request asks for when its body names none.
const DEFAULT_WORK_MS: u64 = 100;
/// The most work one request may ask for.
const MAX_WORK_MS: u64 = 60_000;

/// How long requests wait for their resource and how long they may hold it.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// How long a request waits for a busy resource before it answers 409.
    pub wait: Duration,
    /// The lease: how long one request may hold its resource. It bounds the damage of a
    /// stuck handler or a paused process; work still running when it ends is abandoned
    /// (503), since another request may hold the resource from then on.
    pub lease: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            wait: Duration::from_millis(200),
            lease: Duration::from_secs(1),
        }
    }
}

/// What the handlers share; cheap to clone.
#[derive(Clone)]
struct App {
    client: Client,
    writer: FencedWriter,
    settings: Settings,
}

/// Lock owner ids, one per request (see [`work`]); process-wide, so that two routers on
/// one client never share one.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// The service's routes, on `client`'s connection.
pub fn router(client: &Client, settings: Settings) -> Router {
    let app = App {
        client: client.clone(),
        writer: FencedWriter::new(client),
        settings,
    };
    Router::new()
        .route("/resources/{id}", get(read))
        .route("/resources/{id}/work", post(work))
        .with_state(app)
}

/// The lock that guards resource `id`.
pub fn lock_name(id: &str) -> String {
    format!("resource:{id}")
}

/// Where resource `id`'s value lives (its fence key is `redisson_fence:{resource:<id>:value}`).
pub fn data_key(id: &str) -> String {
    format!("resource:{id}:value")
}

/// `POST /resources/{id}/work`: the resource's lock, the work raced against the lock's
/// loss, and a fenced write of the result.
async fn work(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, Refusal> {
    check_id(&id)?;
    let work = match body.get("work_ms") {
        None => Duration::from_millis(DEFAULT_WORK_MS),
        Some(ms) => ms
            .as_u64()
            .filter(|ms| *ms <= MAX_WORK_MS)
            .map(Duration::from_millis)
            .ok_or_else(|| Refusal::BadRequest(format!("work_ms must be 0 to {MAX_WORK_MS}")))?,
    };

    // Each request is an owner of its own. By default the owner is the calling tokio
    // task; hyper serves the requests of one connection in one task, one after another,
    // so that would do too, but an id per request does not depend on how the server
    // schedules its handlers.
    let owner = LockOwner::from_raw(NEXT_OWNER.fetch_add(1, Ordering::Relaxed));
    let lock = app.client.get_fenced_lock(lock_name(&id)).with_owner(owner);
    let guard = lock
        .try_acquire_with_lease(app.settings.wait, app.settings.lease)
        .await?
        .ok_or(Refusal::Busy)?;
    let token = guard
        .token()
        .ok_or_else(|| Refusal::Internal("a fenced lock's guard carries a token".into()))?;

    // The work runs only while the lock protects it. With a lease, `lost()` fires when the
    // lease runs out (or the client shuts down); the guard is then dropped on the way out
    // and releases what is left of the hold in the background. (So is it when the HTTP
    // client hangs up: hyper drops this future.) A lock deleted behind the holder's back
    // (`force_unlock`, a failover) goes unnoticed here; the fence below catches that.
    let key = data_key(&id);
    let next = tokio::select! {
        biased;
        () = guard.lost() => return Err(Refusal::LeaseRanOut),
        next = next_value(&app.client, &key, work) => next?,
    };

    // The write is not raced against `lost()`: a write already sent cannot be recalled.
    // The fence covers the gap instead: if the lock was lost (the lease ran out after the
    // check above, or the lock was deleted) and a newer holder has written since, its
    // higher token makes Redis refuse this write.
    match app.writer.set(&key, next, token).await {
        Ok(()) => {}
        Err(Error::StaleToken { .. }) => return Err(Refusal::Overtaken),
        Err(error) => return Err(error.into()),
    }
    if let Err(error) = guard.unlock().await {
        // The write was admitted, so no newer holder had written: the result stands. The
        // lease ran out between the write and the unlock; there is nothing to undo.
        eprintln!("unlock of {} after its write: {error}", lock.name());
    }
    Ok(Json(
        json!({ "resource": id, "token": token, "value": next }),
    ))
}

/// The protected work: read the resource's value, then take `work` to compute the next
/// one (a stand-in for a computation or a call to another service).
async fn next_value(client: &Client, key: &str, work: Duration) -> Result<i64, Error> {
    let current: Option<i64> = client.redis().get(key).await?;
    tokio::time::sleep(work).await;
    Ok(current.unwrap_or(0) + 1)
}

/// `GET /resources/{id}`: the value and the token it was written with (the highest token
/// the resource's fence has admitted).
async fn read(State(app): State<App>, Path(id): Path<String>) -> Result<Json<Value>, Refusal> {
    check_id(&id)?;
    let key = data_key(&id);
    let value: Option<i64> = app.client.redis().get(&key).await.map_err(Error::from)?;
    let token = app.writer.highest(&key).await?;
    Ok(Json(
        json!({ "resource": id, "value": value, "token": token }),
    ))
}

/// Ids become key names: plain characters only, and no `{`/`}` (hash tags).
fn check_id(id: &str) -> Result<(), Refusal> {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if (1..=64).contains(&id.len()) && id.chars().all(plain) {
        Ok(())
    } else {
        Err(Refusal::BadRequest(
            "a resource id is 1 to 64 of A-Z a-z 0-9 - _".into(),
        ))
    }
}

/// Why a request did not do its work.
#[derive(Debug)]
enum Refusal {
    BadRequest(String),
    /// The resource stayed locked for the whole wait.
    Busy,
    /// The lease ran out before the work was done; nothing was written.
    LeaseRanOut,
    /// A request that took the lock later wrote first; this write was refused.
    Overtaken,
    Internal(String),
    Lock(Error),
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Refusal {
        Refusal::Lock(error)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let retry_later = |status: StatusCode, message: &str| {
            let body = Json(json!({ "error": message }));
            (status, [(header::RETRY_AFTER, "1")], body).into_response()
        };
        let failed = |status: StatusCode, message: String| {
            eprintln!("{status}: {message}");
            (status, Json(json!({ "error": message }))).into_response()
        };
        match self {
            Refusal::BadRequest(message) => {
                (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
            }
            Refusal::Busy => retry_later(StatusCode::CONFLICT, "the resource is busy"),
            Refusal::LeaseRanOut => retry_later(
                StatusCode::SERVICE_UNAVAILABLE,
                "the work outlasted the lock's lease and was abandoned; nothing was written",
            ),
            Refusal::Overtaken => retry_later(
                StatusCode::SERVICE_UNAVAILABLE,
                "a newer holder of the lock wrote first; nothing was written",
            ),
            Refusal::Internal(message) => failed(StatusCode::INTERNAL_SERVER_ERROR, message),
            Refusal::Lock(error) => {
                let status = match error {
                    Error::Redis(_)
                    | Error::Timeout { .. }
                    | Error::OutcomeUnknown { .. }
                    | Error::Shutdown => StatusCode::SERVICE_UNAVAILABLE,
                    _ => StatusCode::INTERNAL_SERVER_ERROR,
                };
                failed(status, error.to_string())
            }
        }
    }
}

/// A reply as the small client below reads it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// The JSON body (`null` if there was none).
    pub body: Value,
}

/// `POST /resources/{id}/work` with `{"work_ms": work_ms}`.
pub async fn post_work(addr: SocketAddr, id: &str, work_ms: u64) -> std::io::Result<Reply> {
    let body = json!({ "work_ms": work_ms }).to_string();
    send(addr, "POST", &format!("/resources/{id}/work"), &body).await
}

/// `GET /resources/{id}`.
pub async fn get_resource(addr: SocketAddr, id: &str) -> std::io::Result<Reply> {
    send(addr, "GET", &format!("/resources/{id}"), "").await
}

/// One HTTP/1.1 request on a connection of its own (`Connection: close`, so the reply
/// ends where the stream does). Just enough of a client for the demo and the test.
async fn send(addr: SocketAddr, method: &str, path: &str, body: &str) -> std::io::Result<Reply> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;

    let text = String::from_utf8(raw).map_err(|_| invalid("a reply that is not UTF-8"))?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| invalid("a reply without a blank line after its head"))?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid("a reply without a status line"))?;
    let retry_after = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
        .map(|(_, value)| value.trim().to_owned());
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).map_err(|_| invalid("a reply body that is not JSON"))?
    };
    Ok(Reply {
        status,
        retry_after,
        body,
    })
}

/// Requests per resource in the demo, round robin.
const DEMO_RESOURCES: [&str; 3] = ["a", "b", "c"];

/// The demo: `requests` concurrent requests over three resources, and one whose work
/// outlasts its lease; then the resources' final values.
async fn demo(
    addr: SocketAddr,
    settings: Settings,
    requests: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let work_ms = 80;
    let slow_ms = u64::try_from(settings.lease.as_millis() * 3 / 2)?;
    println!(
        "{requests} concurrent requests over resources a, b and c, {work_ms} ms of work each \
         (a request waits {:?} for its resource), and one on `slow` whose work ({slow_ms} ms) \
         outlasts its lease ({:?}):",
        settings.wait, settings.lease
    );
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for i in 0..requests {
        let id = DEMO_RESOURCES[i % DEMO_RESOURCES.len()];
        running.spawn(async move { (id, post_work(addr, id, work_ms).await) });
    }
    running.spawn(async move { ("slow", post_work(addr, "slow", slow_ms).await) });
    while let Some(done) = running.join_next().await {
        let (id, reply) = done?;
        let reply = reply?;
        let retry = match &reply.retry_after {
            Some(seconds) => format!("  (retry after {seconds} s)"),
            None => String::new(),
        };
        println!(
            "  {:>5} ms  {id:<4}  {}  {}{retry}",
            started.elapsed().as_millis(),
            reply.status,
            reply.body
        );
    }
    println!("the resources now:");
    for id in DEMO_RESOURCES.into_iter().chain(["slow"]) {
        println!("  {}", get_resource(addr, id).await?.body);
    }
    Ok(())
}

/// `--demo [N]` or `DEMO_REQUESTS=N`: the number of demo requests, if a demo was asked for.
fn demo_requests() -> Result<Option<usize>, String> {
    let mut args = std::env::args().skip(1);
    let asked = match args.next().as_deref() {
        None => std::env::var("DEMO_REQUESTS").ok(),
        Some("--demo") => Some(args.next().unwrap_or_else(|| "12".to_owned())),
        Some(other) => return Err(format!("unknown argument `{other}` (try --demo 12)")),
    };
    asked
        .map(|n| {
            n.parse()
                .map_err(|_| format!("`{n}` is not a number of requests"))
        })
        .transpose()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let demo_requests = demo_requests()?;
    let redis = common::Redis::from_env_or_spawn()?;
    let client = Client::connect(Config::from_url(&redis.url)?).await?;
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port
            .parse()
            .map_err(|_| format!("PORT={port} is no port"))?,
        Err(_) => 0,
    };
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let settings = Settings::default();
    let app = router(&client, settings);
    println!("listening on http://{addr}");

    match demo_requests {
        None => {
            println!(
                "try: curl -i -X POST http://{addr}/resources/a/work \
                 -H 'content-type: application/json' -d '{{\"work_ms\": 300}}'\n\
                 Ctrl-C stops the service"
            );
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await?;
        }
        Some(requests) => {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
            });
            let shown = demo(addr, settings, requests).await;
            let _ = stop.send(());
            server.await??;
            shown?;
        }
    }
    client.shutdown().await?;
    Ok(())
}
