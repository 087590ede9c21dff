//! The examples' throwaway `redis-server` stops with the example when the example is
//! stopped by SIGTERM (`timeout 5 cargo run --example http_service`, `kill`) or SIGHUP (a
//! closed terminal), signals that end a process without running its destructors.
//!
//! The example is this test binary run again as a child (`example_child`, ignored in a
//! normal run: it is no test of its own), which starts the server the way every example
//! does (`examples/common`) and waits to be stopped.

// The examples' own module: the `http_service` module (the example it loads) has its
// copy as well.
#[allow(clippy::duplicate_mod)]
#[path = "../../examples/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child's environment only.
const CHILD: &str = "REDISSON_LOCK_EXAMPLE_SIGNAL_CHILD";

/// The "example": the child process of the tests below, which run it with
/// `--ignored --exact example_signals::example_child` and [`CHILD`] set. It runs until a signal stops it.
#[tokio::test]
#[ignore = "not a test: the child process that the signal tests below start and stop"]
async fn example_child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "example_child is the child process of sigterm_stops_the_throwaway_server and \
         sighup_stops_the_throwaway_server, not a test: they run it with {CHILD} set"
    );
    let redis = common::Redis::from_env_or_spawn().unwrap();
    println!("using {}", redis.url);
    // Until the parent's signal ends the process.
    std::future::pending::<()>().await;
}

fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Starts the child, stops it with `signal`, and checks that its server went with it.
fn stopped_by(signal: &str, status: i32) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "example_signals::example_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port: u16 = loop {
        let line = lines
            .next()
            .expect("the child ended before starting its server")
            .unwrap();
        if let Some(rest) = line.strip_prefix("(started a throwaway redis-server on 127.0.0.1:") {
            break rest.trim_end_matches(')').parse().unwrap();
        }
    };
    assert!(listening(port));
    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let started = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the child did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let started = Instant::now();
    while listening(port) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left_running = listening(port);
    if left_running {
        // Do not leave it behind for the next test run.
        let _ = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "shutdown", "nosave"])
            .output();
    }
    assert!(
        !left_running,
        "SIG{signal} stopped the example ({exit:?}) but left its redis-server on port {port} running"
    );
    assert_eq!(exit.code(), Some(status), "{exit:?}");
}

#[test]
fn sigterm_stops_the_throwaway_server() {
    stopped_by("TERM", 128 + 15);
}

#[test]
fn sighup_stops_the_throwaway_server() {
    stopped_by("HUP", 128 + 1);
}
