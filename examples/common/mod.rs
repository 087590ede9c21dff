//! Shared by the examples: use `REDIS_URL` when set, otherwise start a throwaway
//! `redis-server` on a free loopback port and stop it when the guard is dropped, or when
//! the example is stopped by SIGTERM or SIGHUP (`timeout 5 cargo run --example ...`,
//! `kill`, a closed terminal), which end a process without running its destructors.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A Redis to talk to; stops the throwaway server (if any) when dropped.
pub struct Redis {
    pub url: String,
    server: Option<Arc<Mutex<Child>>>,
}

/// Stops the throwaway server and waits for it.
fn stop(server: &Mutex<Child>) {
    // A poisoned lock still holds the child: stop it all the same.
    let mut child = server
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = child.kill();
    let _ = child.wait();
}

/// The signals that stop an example without its destructors running, listened for
/// before the server starts (so that none arrives unheard). `None` outside a tokio
/// runtime or when they cannot be listened for; Ctrl-C (SIGINT) is left to the example
/// (a terminal sends it to the server as well).
#[cfg(unix)]
fn stop_signals() -> Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)> {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::runtime::Handle::try_current().ok()?;
    Some((
        signal(SignalKind::terminate()).ok()?,
        signal(SignalKind::hangup()).ok()?,
    ))
}

/// On SIGTERM or SIGHUP: stop the server, then end the process as that signal would
/// (exit status 128 + its number).
#[cfg(unix)]
fn stop_on_signals(
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
    server: &Arc<Mutex<Child>>,
) {
    let Some((mut term, mut hup)) = signals else {
        return;
    };
    let server = Arc::clone(server);
    tokio::spawn(async move {
        let code = tokio::select! {
            _ = term.recv() => 128 + 15,
            _ = hup.recv() => 128 + 1,
        };
        stop(&server);
        eprintln!("(stopped the throwaway redis-server)");
        std::process::exit(code);
    });
}

impl Redis {
    pub fn from_env_or_spawn() -> Result<Redis, Box<dyn std::error::Error>> {
        if let Ok(url) = std::env::var("REDIS_URL") {
            return Ok(Redis { url, server: None });
        }
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let bin = std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into());
        #[cfg(unix)]
        let signals = stop_signals();
        let mut child = Command::new(&bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "REDIS_URL is not set and `{bin}` could not be started ({e}).\n\
                     Install Redis (Debian/Ubuntu: apt-get install -y redis-server) \
                     or set REDIS_URL=redis://host:port"
                )
            })?;
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                return Err("the throwaway redis-server did not start within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("(started a throwaway redis-server on 127.0.0.1:{port})");
        let server = Arc::new(Mutex::new(child));
        #[cfg(unix)]
        stop_on_signals(signals, &server);
        Ok(Redis {
            url: format!("redis://127.0.0.1:{port}"),
            server: Some(server),
        })
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            stop(server);
        }
    }
}
