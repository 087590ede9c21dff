//! The `redisson-lock` inspector binary, run as a user runs it (`std::process::Command`
//! on the built binary) against a real redis-server holding locks of every kind: taken
//! with this crate, and written raw the way Java Redisson writes them.
#![cfg(feature = "cli")]

use crate::support;
use support::cli::*;
use support::*;

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use redisson_lock::LockOwner;
use redisson_lock::fred::prelude::*;
use serde_json::Value as Json;

const JAVA_UUID: &str = "6e3d30b7-83b1-433a-9335-5e8b9916d3ac";

/// A Java Redisson holder: its hash field, count and lease, written raw.
async fn java_hold(raw: &Client, name: &str, thread: u64, holds: i64, lease_ms: i64) {
    let _: () = raw
        .hset(name, (format!("{JAVA_UUID}:{thread}"), holds))
        .await
        .unwrap();
    let _: () = raw.pexpire(name, lease_ms, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reports_every_kind_in_json_and_text() {
    let server = RedisServer::start();
    let url = server.url();
    let client = server.client().await;
    let raw = server.raw().await;
    let lease = Duration::from_secs(60);
    let owner = LockOwner::from_raw(7);

    // Reentrant, held twice by this crate.
    let plain = key("plain");
    let lock = client.get_lock(&plain).with_owner(owner);
    assert!(
        lock.try_lock_with_lease(Duration::ZERO, lease)
            .await
            .unwrap()
    );
    assert!(
        lock.try_lock_with_lease(Duration::ZERO, lease)
            .await
            .unwrap()
    );
    // Reentrant, held by "Java".
    let java = key("java");
    java_hold(&raw, &java, 731, 3, 45_000).await;
    // Fenced: two acquisitions; the first token is the server clock in µs, then one more.
    let fenced = key("fenced");
    let fenced_lock = client.get_fenced_lock(&fenced).with_owner(owner);
    let before = server_time_us(&raw).await;
    let first = fenced_lock
        .lock_and_get_token_with_lease(lease)
        .await
        .unwrap();
    assert_seeded(first, before, server_time_us(&raw).await);
    fenced_lock.unlock().await.unwrap();
    let token = fenced_lock
        .lock_and_get_token_with_lease(lease)
        .await
        .unwrap();
    assert_eq!(token, first + 1);
    // Read-write: two readers (one with two holds), and a write lock elsewhere.
    let read = key("read");
    let rw = client.get_read_write_lock(&read);
    rw.read_lock()
        .with_owner(owner)
        .lock_with_lease(lease)
        .await
        .unwrap();
    rw.read_lock()
        .with_owner(owner)
        .lock_with_lease(lease)
        .await
        .unwrap();
    rw.read_lock()
        .with_owner(LockOwner::from_raw(8))
        .lock_with_lease(lease)
        .await
        .unwrap();
    let write = key("write");
    client
        .get_read_write_lock(&write)
        .write_lock()
        .with_owner(owner)
        .lock_with_lease(lease)
        .await
        .unwrap();
    // Fair: held by this crate; a second client queued; then a "Java" waiter queued raw.
    let fair = key("fair");
    client
        .get_fair_lock(&fair)
        .with_owner(owner)
        .lock_with_lease(lease)
        .await
        .unwrap();
    let other = server.client().await;
    let waiter = {
        let lock = other
            .get_fair_lock(&fair)
            .with_owner(LockOwner::from_raw(9));
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(30)).await })
    };
    let queue = format!("redisson_lock_queue:{{{fair}}}");
    assert!(
        eventually(Duration::from_secs(5), || async {
            let n: i64 = raw
                .custom(fred::cmd!("LLEN"), vec![queue.as_str()])
                .await
                .unwrap();
            n == 1
        })
        .await
    );
    let java_waiter = format!("{JAVA_UUID}:12");
    let deadline = 4_102_444_800_000i64; // 2100-01-01
    let _: i64 = raw
        .custom(
            fred::cmd!("RPUSH"),
            vec![queue.clone(), java_waiter.clone()],
        )
        .await
        .unwrap();
    let _: i64 = raw
        .custom(
            fred::cmd!("ZADD"),
            vec![
                format!("redisson_lock_timeout:{{{fair}}}"),
                deadline.to_string(),
                java_waiter.clone(),
            ],
        )
        .await
        .unwrap();

    let names = [&plain, &java, &fenced, &read, &write, &fair];
    let mut args = vec!["--json".to_owned(), "inspect".to_owned()];
    args.extend(names.iter().map(|n| n.to_string()));
    let out = cli(&url, &args).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let all = json(&out);
    let all = all.as_array().expect("an array, one entry per name");
    assert_eq!(all.len(), names.len());
    let by_name = |n: &str| {
        all.iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("{n} missing"))
            .clone()
    };

    let r = by_name(&plain);
    assert_eq!(r["kind"], "reentrant");
    assert_eq!(r["locked"], true);
    assert_eq!(r["holders"][0]["client_id"], client.id());
    assert_eq!(r["holders"][0]["owner"], "7");
    assert_eq!(r["holders"][0]["holds"], 2);
    let ttl = r["ttl_ms"].as_i64().unwrap();
    assert!(ttl > 50_000 && ttl <= 60_000, "{ttl}");
    assert_eq!(r["subscribers"]["classic"], 0);
    assert!(
        r["holder_connected"]
            .as_str()
            .unwrap()
            .starts_with("unknown")
    );
    assert!(r["notes"].to_string().contains("spin and non-reentrant"));

    let r = by_name(&java);
    assert_eq!(r["kind"], "reentrant");
    assert_eq!(r["holders"][0]["field"], format!("{JAVA_UUID}:731"));
    assert_eq!(r["holders"][0]["holds"], 3);
    assert!(r["ttl_ms"].as_i64().unwrap() <= 45_000);

    let r = by_name(&fenced);
    assert_eq!(r["kind"], "fenced");
    assert_eq!(r["fencing_token"], token);
    assert_eq!(r["holders"][0]["holds"], 1);

    let r = by_name(&read);
    assert_eq!(r["kind"], "read-write");
    assert_eq!(r["mode"], "read");
    let holders = r["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 2);
    let mine = holders.iter().find(|h| h["owner"] == "7").unwrap();
    assert_eq!(mine["mode"], "read");
    assert_eq!(mine["holds"], 2);
    let ttls = mine["read_hold_ttls_ms"].as_array().unwrap();
    assert_eq!(ttls.len(), 2);
    assert!(
        ttls.iter().all(|t| t.as_i64().unwrap() > 50_000),
        "{ttls:?}"
    );
    assert_eq!(
        r["subscribers"]["channel"],
        format!("redisson_rwlock:{{{read}}}")
    );

    let r = by_name(&write);
    assert_eq!(r["mode"], "write");
    assert_eq!(r["holders"][0]["mode"], "write");
    assert_eq!(r["holders"][0]["field"], format!("{}:7:write", client.id()));

    let r = by_name(&fair);
    assert_eq!(r["kind"], "fair");
    assert_eq!(r["holders"][0]["owner"], "7");
    let queue_json = r["queue"].as_array().unwrap();
    assert_eq!(queue_json.len(), 2);
    assert_eq!(queue_json[0]["position"], 1);
    assert_eq!(queue_json[0]["client_id"], other.id());
    assert_eq!(queue_json[0]["owner"], "9");
    assert_eq!(queue_json[0]["subscribed"], 1, "the waiting client listens");
    assert!(queue_json[0]["deadline_in_ms"].as_i64().unwrap() > 0);
    assert_eq!(queue_json[1]["field"], java_waiter);
    assert_eq!(queue_json[1]["deadline_ms"], deadline);
    assert_eq!(queue_json[1]["deadline"], "2100-01-01T00:00:00.000Z");
    assert_eq!(
        queue_json[1]["subscribed"], 0,
        "nobody listens for the raw waiter"
    );

    // The human table says the same.
    let out = cli(&url, ["inspect", fair.as_str()]).await;
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.contains("kind     fair"), "{text}");
    assert!(text.contains(client.id()), "{text}");
    assert!(text.contains("2100-01-01T00:00:00.000Z"), "{text}");
    assert!(text.contains("waiters: 2 queued"), "{text}");
    assert!(text.contains("connected: unknown"), "{text}");
    let out = cli(&url, ["inspect", fenced.as_str(), read.as_str()]).await;
    let text = stdout(&out);
    assert!(text.contains(&format!("token    {token}")), "{text}");
    assert!(text.contains("locked (read mode)"), "{text}");
    assert!(text.contains("READ HOLD TTLS"), "{text}");

    waiter.abort();
    other.shutdown().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_and_bad_input() {
    let server = RedisServer::start();
    let url = server.url();
    let raw = server.raw().await;
    let held = key("held");
    java_hold(&raw, &held, 1, 1, 60_000).await;
    let string = key("string");
    let _: () = raw.set(&string, "x", None, None, false).await.unwrap();
    let hash = key("user");
    let _: () = raw.hset(&hash, ("name", "bob")).await.unwrap();
    let bad_field = key("badfield");
    let _: () = raw.hset(&bad_field, ("not-a-uuid:1", "1")).await.unwrap();

    let out = cli(&url, ["inspect", held.as_str()]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = cli(&url, ["inspect", "no-such-lock"]).await;
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains("not locked"), "{}", stdout(&out));
    let out = cli(&url, ["--json", "inspect", held.as_str(), "no-such-lock"]).await;
    assert_eq!(code(&out), 1, "one name not locked: 1");
    assert_eq!(json(&out)[1]["found"], false);

    let out = cli(&url, ["inspect", string.as_str()]).await;
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains("not a lock (string)"),
        "{}",
        stdout(&out)
    );
    no_panic(&out);
    let out = cli(
        &url,
        ["--json", "inspect", hash.as_str(), bad_field.as_str()],
    )
    .await;
    assert_eq!(code(&out), 1);
    let reports = json(&out);
    assert_eq!(reports[0]["kind"], "not-a-lock");
    assert_eq!(reports[0]["key_type"], "hash");
    assert!(reports[0]["error"].as_str().unwrap().contains("bob"));
    assert!(
        reports[1]["error"]
            .as_str()
            .unwrap()
            .contains("not-a-uuid:1")
    );

    // Bytes that are not UTF-8 cannot name a Redisson lock.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let name = OsStr::from_bytes(b"lock\xff\xfe");
        let out = cli(&url, [OsStr::new("inspect"), name]).await;
        assert_eq!(code(&out), 2);
        assert!(stderr(&out).contains("not valid UTF-8"), "{}", stderr(&out));
        no_panic(&out);
    }
    // Control characters are a valid (if odd) name: found, and printed escaped.
    let odd = format!("{}\u{1}\n", key("odd"));
    java_hold(&raw, &odd, 1, 1, 60_000).await;
    let out = cli(&url, ["inspect", odd.as_str()]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("\\u{1}\\n"), "{}", stdout(&out));
    let out = cli(&url, ["--json", "inspect", odd.as_str()]).await;
    assert_eq!(json(&out)[0]["name"], odd.as_str());

    // Usage errors.
    let out = cli(&url, ["inspect"]).await;
    assert_eq!(code(&out), 2);
    let out = cli(&url, ["frobnicate"]).await;
    assert_eq!(code(&out), 2);
    let out = cli(&url, ["force-unlock", held.as_str()]).await;
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert!(exists(&raw, &held).await, "refused: nothing deleted");

    // A server that is not there: exit 2, the URL and the cause, no panic.
    let mut gone = RedisServer::start();
    let gone_url = gone.url();
    gone.kill();
    let started = Instant::now();
    let out = cli(&gone_url, ["inspect", "x"]).await;
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains(&gone_url), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(8));
    no_panic(&out);
    let out = cli("not a url", ["list"]).await;
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("not a url"), "{}", stderr(&out));
    no_panic(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_scans_every_lock_and_nothing_else() {
    let server = RedisServer::start();
    let url = server.url();
    let client = server.client().await;
    let raw = server.raw().await;
    let lease = Duration::from_secs(60);
    let a = "app:a".to_owned();
    let b = "app:b".to_owned();
    let c = "other:c".to_owned();
    client.get_lock(&a).lock_with_lease(lease).await.unwrap();
    client
        .get_read_write_lock(&b)
        .write_lock()
        .lock_with_lease(lease)
        .await
        .unwrap();
    java_hold(&raw, &c, 4, 1, 60_000).await;
    let _: () = raw.set("app:string", "x", None, None, false).await.unwrap();
    let _: () = raw.hset("app:user", ("name", "bob")).await.unwrap();
    // Enough other keys that SCAN needs several calls with a small COUNT.
    for i in 0..200 {
        let _: () = raw
            .set(format!("filler:{i}"), i, None, None, false)
            .await
            .unwrap();
    }

    let out = cli(&url, ["list", "--count", "10"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("NAME"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.contains("app:a") && text.contains("other:c"), "{text}");
    assert!(text.contains("read-write (write)"), "{text}");
    assert!(
        !text.contains("app:user") && !text.contains("app:string"),
        "{text}"
    );

    let out = cli(&url, ["--json", "list", "--match", "app:*"]).await;
    assert_eq!(code(&out), 0);
    let listed = json(&out);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app:a", "app:b"]);
    assert_eq!(listed[1]["kind"], "read-write");
    assert_eq!(listed[0]["holders"][0]["client_id"], client.id());

    let out = cli(&url, ["list", "--match", "nothing:*"]).await;
    assert_eq!(code(&out), 1);
    client.shutdown().await.unwrap();
}

/// Starts `watch` and returns the child; its stdout is read line by line.
fn spawn_watch(url: &str, name: &str, extra: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .args(["--url", url, "--json", "watch", name, "--interval", "50"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start watch")
}

/// A running `watch`'s stdout, read line by line by a thread as it comes.
struct WatchLines {
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
}

impl WatchLines {
    fn read(child: &mut std::process::Child) -> WatchLines {
        let stdout = child.stdout.take().expect("piped stdout");
        let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let reader = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
                    seen.lock().unwrap().push(line.unwrap());
                }
            })
        };
        WatchLines { seen, reader }
    }

    /// Blocks until a line holds `text` (20 s at most).
    async fn wait_for(&self, text: &str) {
        let started = Instant::now();
        while !self.seen.lock().unwrap().iter().any(|l| l.contains(text)) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "watch never printed {text}: {:?}",
                self.seen.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// SIGINT, then the finished process's output, stdout as read.
    #[cfg(unix)]
    async fn interrupt(self, child: std::process::Child) -> Output {
        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        self.finish(child).await
    }

    async fn finish(self, child: std::process::Child) -> Output {
        let mut out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        self.reader.join().unwrap();
        out.stdout = (self.seen.lock().unwrap().join("\n") + "\n").into_bytes();
        out
    }
}

/// Events of a finished `watch --json`, as (event, line).
fn events(out: &Output) -> Vec<Json> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_follows_messages_and_holders_until_stopped() {
    let server = RedisServer::start();
    let url = server.url();
    let client = server.client().await;
    let name = key("watched");
    let lock = client.get_lock(&name);

    // Until stopped (Ctrl-C), its lines read as they come: each step waits for the watch
    // to report the last one.
    let mut child = spawn_watch(&url, &name, &[]);
    let lines = WatchLines::read(&mut child);
    lines.wait_for(r#""event":"state""#).await;
    // It is subscribed to the lock's channel (it reports the messages).
    let raw = server.raw().await;
    let lock_channel = channel(&name);
    assert!(
        eventually(Duration::from_secs(20), || async {
            numsub(&raw, &lock_channel).await >= 1
        })
        .await,
        "watch never subscribed to {lock_channel}"
    );
    lock.lock_with_lease(Duration::from_secs(60)).await.unwrap();
    lines.wait_for(r#""event":"acquired""#).await;
    lock.lock_with_lease(Duration::from_secs(60)).await.unwrap();
    lines.wait_for(r#""event":"re-entered""#).await;
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    lines.wait_for(r#""event":"released""#).await;
    lines.wait_for(r#""event":"message""#).await;
    #[cfg(unix)]
    let out = lines.interrupt(child).await;
    #[cfg(not(unix))]
    let out = {
        child.kill().unwrap();
        lines.finish(child).await
    };
    #[cfg(unix)]
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = events(&out);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[..2], ["watching", "state"], "{kinds:?}");
    let field = format!("{}:{}", client.id(), LockOwner::current());
    let find = |kind: &str| {
        events
            .iter()
            .find(|e| e["event"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
    };
    assert_eq!(find("acquired")["field"], field);
    assert_eq!(find("re-entered")["to"], 2);
    assert_eq!(find("released")["field"], field);
    let message = find("message");
    assert_eq!(
        message["channel"],
        format!("redisson_lock__channel:{{{name}}}")
    );
    assert_eq!(message["payload"], "0");
    assert!(
        events
            .iter()
            .all(|e| e["at"].as_str().unwrap().ends_with('Z'))
    );

    // `--duration` ends it on its own, with exit code 0.
    let started = Instant::now();
    let child = spawn_watch(&url, &name, &["--duration", "0.5"]);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let kinds: Vec<String> = self::events(&out)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds[..2], ["watching", "state"], "{kinds:?}");
    assert!(started.elapsed() >= Duration::from_millis(500));

    // Ctrl-C (SIGINT) right after its first state ends it with exit code 0.
    #[cfg(unix)]
    {
        let mut child = spawn_watch(&url, &name, &[]);
        // Running: its first state is out (Ctrl-C is handled from then on: 100 ms for the
        // watch loop to start). Its output is read to the end.
        let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let (started, running) = tokio::sync::oneshot::channel();
        let reader = std::thread::spawn(move || {
            let mut started = Some(started);
            let mut out = String::new();
            for line in lines {
                let line = line.unwrap();
                if line.contains(r#""event":"state""#)
                    && let Some(started) = started.take()
                {
                    let _ = started.send(());
                }
                out.push_str(&line);
                out.push('\n');
            }
            out
        });
        tokio::time::timeout(Duration::from_secs(20), running)
            .await
            .expect("watch printed its state within 20 s")
            .expect("watch ended before printing its state");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let mut out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        out.stdout = reader.join().unwrap().into_bytes();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        no_panic(&out);
    }
    client.shutdown().await.unwrap();
}

/// Holds `name` in a way that `start_waiter` waits for; force-unlocks it with the CLI and
/// requires the waiter to get the lock long before the holder's lease would run out.
async fn force_unlock_wakes(
    server: &RedisServer,
    name: &str,
    kind: &str,
    waiter: tokio::task::JoinHandle<bool>,
) {
    // The waiter subscribed (after its first try, which queued it) before the lock goes.
    let raw = server.raw().await;
    assert!(
        waiter_subscribed(&raw, name).await,
        "{kind}: the waiter never subscribed"
    );
    assert!(!waiter.is_finished(), "{kind}: the waiter must be waiting");
    let started = Instant::now();
    let out = cli(&server.url(), ["--json", "force-unlock", name, "--yes"]).await;
    assert_eq!(code(&out), 0, "{kind}: {}{}", stdout(&out), stderr(&out));
    let report = json(&out);
    assert_eq!(report["deleted"], true, "{kind}");
    assert_eq!(report["kind"], kind);
    let woke = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap_or_else(|_| panic!("{kind}: the waiter was not woken"))
        .unwrap();
    assert!(woke, "{kind}: the waiter got the lock");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{kind}: woken by the message, not by the 60 s lease"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_unlock_wakes_a_waiter_of_every_kind() {
    let server = RedisServer::start();
    let holder = server.client().await;
    let waiter_client = server.client().await;
    let lease = Duration::from_secs(60);
    let wait = Duration::from_secs(30);

    let name = key("reentrant");
    holder.get_lock(&name).lock_with_lease(lease).await.unwrap();
    let lock = waiter_client.get_lock(&name);
    force_unlock_wakes(
        &server,
        &name,
        "reentrant",
        tokio::spawn(async move { lock.try_lock_with_lease(wait, lease).await.unwrap() }),
    )
    .await;

    let name = key("fair");
    holder
        .get_fair_lock(&name)
        .lock_with_lease(lease)
        .await
        .unwrap();
    let lock = waiter_client.get_fair_lock(&name);
    force_unlock_wakes(
        &server,
        &name,
        "fair",
        tokio::spawn(async move { lock.try_lock_with_lease(wait, lease).await.unwrap() }),
    )
    .await;

    let name = key("fenced");
    holder
        .get_fenced_lock(&name)
        .lock_with_lease(lease)
        .await
        .unwrap();
    let lock = waiter_client.get_fenced_lock(&name);
    force_unlock_wakes(
        &server,
        &name,
        "fenced",
        tokio::spawn(async move { lock.try_lock_with_lease(wait, lease).await.unwrap() }),
    )
    .await;

    // A write hold force-unlocked wakes a reader (message 1).
    let name = key("rw-write");
    holder
        .get_read_write_lock(&name)
        .write_lock()
        .lock_with_lease(lease)
        .await
        .unwrap();
    let lock = waiter_client.get_read_write_lock(&name).read_lock();
    force_unlock_wakes(
        &server,
        &name,
        "read-write",
        tokio::spawn(async move { lock.try_lock_with_lease(wait, lease).await.unwrap() }),
    )
    .await;

    // A read hold force-unlocked wakes a writer (message 0).
    let name = key("rw-read");
    holder
        .get_read_write_lock(&name)
        .read_lock()
        .lock_with_lease(lease)
        .await
        .unwrap();
    let lock = waiter_client.get_read_write_lock(&name).write_lock();
    force_unlock_wakes(
        &server,
        &name,
        "read-write",
        tokio::spawn(async move { lock.try_lock_with_lease(wait, lease).await.unwrap() }),
    )
    .await;

    // Nothing left to unlock: exit 1.
    let out = cli(&server.url(), ["force-unlock", "nothing-here", "--yes"]).await;
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains("nothing to force-unlock"),
        "{}",
        stdout(&out)
    );

    holder.shutdown().await.unwrap();
    waiter_client.shutdown().await.unwrap();
}

/// Redisson's synchronizers: a semaphore's permits and a latch's count are an integer in a
/// string key (ambiguous until waiters or `--kind` tell), an expirable semaphore's holders
/// are a sorted set of 16-byte ids (shown as 32 hex) with their expiry or "no lease".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_and_list_show_semaphores_expirable_semaphores_and_latches() {
    let server = RedisServer::start();
    let url = server.url();
    let client = server.client().await;
    let raw = server.raw().await;

    // A bare integer: a semaphore with 3 permits, or a latch with count 3.
    let _: () = raw.set("sync:sem", 3, None, None, false).await.unwrap();
    // An expirable semaphore (raw, as Java writes it): 2 available, three holders.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let _: () = raw.set("sync:pes", 2, None, None, false).await.unwrap();
    let leased: Vec<u8> = (1..=16).collect();
    let forever = vec![
        0x1e, 0xb2, 0x48, 0x8e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb9,
    ];
    let expired = vec![0xff; 16];
    for (score, member) in [
        (now + 60_000, leased),
        (922_337_203_685_477, forever),
        (now - 5_000, expired),
    ] {
        let _: i64 = raw
            .custom(
                redisson_lock::fred::cmd!("ZADD"),
                vec![
                    Value::from("{sync:pes}:timeout"),
                    Value::from(score),
                    Value::Bytes(member.into()),
                ],
            )
            .await
            .unwrap();
    }
    // A latch with a waiter of this crate.
    let latch = client.get_count_down_latch("sync:latch");
    assert!(latch.try_set_count(2).await.unwrap());
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_secs(60)).await }
    });
    assert!(
        eventually(Duration::from_secs(10), || async {
            numsub(&raw, "redisson_countdownlatch__channel__{sync:latch}").await == 1
        })
        .await
    );

    let out = cli(
        &url,
        ["--json", "inspect", "sync:sem", "sync:pes", "sync:latch"],
    )
    .await;
    no_panic(&out);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reports = json(&out);
    let sem = &reports[0];
    assert_eq!(sem["kind"], "semaphore-or-latch", "{sem}");
    assert_eq!(sem["value"], 3);
    assert_eq!(
        sem["candidates"],
        serde_json::json!(["semaphore", "count-down-latch"])
    );
    assert!(
        sem["notes"][0].as_str().unwrap().contains("ambiguous"),
        "{sem}"
    );
    let pes = &reports[1];
    assert_eq!(pes["kind"], "permit-expirable-semaphore", "{pes}");
    assert_eq!(pes["available_permits"], 2);
    assert_eq!(pes["expired_permits"], 1);
    let holders = pes["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 3);
    assert_eq!(holders[0]["permit_id"], "f".repeat(32));
    assert!(holders[0]["lease_left_ms"].as_i64().unwrap() < 0);
    assert_eq!(holders[1]["permit_id"], "0102030405060708090a0b0c0d0e0f10");
    let left = holders[1]["lease_left_ms"].as_i64().unwrap();
    assert!((50_000..=60_000).contains(&left), "{left}");
    assert_eq!(holders[2]["permit_id"], "1eb2488e0000000000000000000000b9");
    assert_eq!(holders[2]["no_lease"], true);
    assert_eq!(holders[2]["lease_left_ms"], Json::Null);
    let lat = &reports[2];
    assert_eq!(lat["kind"], "count-down-latch", "{lat}");
    assert_eq!(lat["count"], 2);
    assert_eq!(lat["open"], false);
    assert_eq!(lat["subscribers"]["classic"], 1);

    // Text; --kind settles the ambiguous key, and never overrides what Redis shows.
    let out = cli(
        &url,
        ["inspect", "--kind", "semaphore", "sync:sem", "sync:pes"],
    )
    .await;
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.contains("3 available permit(s)"), "{text}");
    assert!(text.contains("evidence  --kind semaphore"), "{text}");
    assert!(
        text.contains("no lease") && text.contains("expired"),
        "{text}"
    );
    assert!(text.contains("1eb2488e0000000000000000000000b9"), "{text}");
    assert!(text.contains("--kind semaphore ignored"), "{text}");
    let out = cli(&url, ["inspect", "sync:sem"]).await;
    assert!(stdout(&out).contains("ambiguous"), "{}", stdout(&out));

    // list: what Redis can tell (the expirable semaphore, the latch with a waiter); the
    // bare integer only with --kind.
    let out = cli(&url, ["--json", "list", "--match", "sync:*"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = json(&out);
    let kinds: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("sync:latch", "count-down-latch"),
            ("sync:pes", "permit-expirable-semaphore")
        ]
    );
    let out = cli(&url, ["list", "--match", "sync:*"]).await;
    assert!(stderr(&out).contains("--kind"), "{}", stderr(&out));
    let out = cli(&url, ["list", "--match", "sync:*", "--kind", "latch"]).await;
    let text = stdout(&out);
    assert!(
        text.contains("sync:sem") && text.contains("count 3"),
        "{text}"
    );

    // orphans does not take any of them for lock-family keys.
    let out = cli(&url, ["--json", "orphans"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        json(&out)["orphans"],
        serde_json::json!([]),
        "{}",
        stdout(&out)
    );

    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    assert!(waiter.await.unwrap().unwrap());
    client.shutdown().await.unwrap();
}

/// On a cluster `list` asks every primary: a latch with a waiter (sharded subscription,
/// found by `PUBSUB SHARDCHANNELS`) and an expirable semaphore's permit set (`SCAN`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_finds_synchronizers_on_every_primary_of_a_cluster() {
    let cluster = support::cluster::Cluster::start();
    let url = cluster.url();
    let client = redisson_lock::Client::connect(redisson_lock::Config::from_url(&url).unwrap())
        .await
        .unwrap();
    let raw = cluster.raw().await;
    let mut waiters = Vec::new();
    for name in ["c:latch-a", "c:latch-b", "c:latch-c"] {
        let latch = client.get_count_down_latch(name);
        assert!(latch.try_set_count(1).await.unwrap());
        waiters.push(tokio::spawn(async move {
            latch.wait_for(Duration::from_secs(30)).await
        }));
    }
    let _: () = raw.set("c:pes", 1, None, None, false).await.unwrap();
    let _: i64 = raw
        .custom(
            redisson_lock::fred::cmd!("ZADD"),
            vec![
                Value::from("{c:pes}:timeout"),
                Value::from(922_337_203_685_477i64),
                Value::Bytes(vec![7u8; 16].into()),
            ],
        )
        .await
        .unwrap();
    // Every latch's waiter is subscribed (sharded, on its slot's owner).
    let subscribed = || async {
        let mut channels = 0;
        for node in &cluster.nodes {
            let raw = node.raw().await;
            let names: Vec<String> = raw
                .custom(
                    redisson_lock::fred::cmd!("PUBSUB"),
                    vec!["SHARDCHANNELS", "*c:latch-*"],
                )
                .await
                .unwrap();
            let _ = raw.quit().await;
            channels += names.len();
        }
        channels == 3
    };
    assert!(
        eventually(Duration::from_secs(10), subscribed).await,
        "the latch waiters never subscribed"
    );
    let out = cli(&url, ["--json", "list", "--match", "c:*"]).await;
    no_panic(&out);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = json(&out);
    let kinds: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("c:latch-a", "count-down-latch"),
            ("c:latch-b", "count-down-latch"),
            ("c:latch-c", "count-down-latch"),
            ("c:pes", "permit-expirable-semaphore"),
        ]
    );
    assert_eq!(listed[3]["holders"][0]["permit_id"], "07".repeat(16));
    for name in ["c:latch-a", "c:latch-b", "c:latch-c"] {
        client
            .get_count_down_latch(name)
            .count_down()
            .await
            .unwrap();
    }
    for waiter in waiters {
        assert!(waiter.await.unwrap().unwrap());
    }
    client.shutdown().await.unwrap();
}
