//! Shared by the examples: use `REDIS_URL` when set, otherwise start a throwaway
//! `redis-server` on a free loopback port and stop it when the guard is dropped.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Redis to talk to; stops the throwaway server (if any) when dropped.
pub struct Redis {
    pub url: String,
    server: Option<Child>,
}

impl Redis {
    pub fn from_env_or_spawn() -> Result<Redis, Box<dyn std::error::Error>> {
        if let Ok(url) = std::env::var("REDIS_URL") {
            return Ok(Redis { url, server: None });
        }
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let bin = std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into());
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
        Ok(Redis {
            url: format!("redis://127.0.0.1:{port}"),
            server: Some(child),
        })
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(child) = &mut self.server {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
