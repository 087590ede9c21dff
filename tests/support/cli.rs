//! Running the `redisson-lock` inspector binary the way a user runs it, for the CLI tests.

use std::ffi::{OsStr, OsString};
use std::process::{Command, Output};

/// The built inspector binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_redisson-lock");

/// Runs the binary with `args` against `url` (off the async runtime).
pub async fn cli<I, S>(url: &str, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .arg("--url")
            .arg(url)
            .args(args)
            .env_remove("REDIS_URL")
            .output()
            .expect("run redisson-lock")
    })
    .await
    .expect("join")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code, not a signal")
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(out), stderr(out)))
}

/// No Rust panic message, ever.
pub fn no_panic(out: &Output) {
    let all = stdout(out) + &stderr(out);
    assert!(!all.contains("panicked"), "{all}");
    assert!(!all.contains("RUST_BACKTRACE"), "{all}");
}
