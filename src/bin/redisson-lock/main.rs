//! `redisson-lock`: inspect, list, watch and force-unlock Redisson locks (Java Redisson's
//! and this crate's) in Redis.
//!
//! Exit codes: 0 found / done; 1 not found, not locked or not a lock; 2 usage or
//! connection error (the message names the URL and the cause).

mod args;
mod force_unlock;
mod glob;
mod inspect;
mod list;
mod orphans;
mod render;
mod session;
mod synchronizers;
mod watch;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use redisson_lock::config::{FairQueueNames, redacted_url};
use redisson_lock::fred::prelude::ReconnectPolicy;
use redisson_lock::{Client, Config, PrefixNameMapper};

use crate::args::{Cli, Command};
use crate::session::{EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, Failure, Out, Session};

/// The default when neither `--url` nor `REDIS_URL` is given.
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version print and exit 0; usage errors exit 2.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { EXIT_ERROR } else { 0 });
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("redisson-lock: error: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("redisson-lock: error: {failure}");
            EXIT_ERROR
        }
    };
    ExitCode::from(code)
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    let out = Out { json: cli.json };
    let url = cli.url.clone().unwrap_or_else(|| DEFAULT_URL.to_owned());
    let timeout = Duration::from_secs(cli.connect_timeout);
    let access = Access::of(&cli);
    // Usage errors first: nothing connects for a command that cannot run.
    let task = Task::of(cli.command)?;
    let session = connect(&url, &access, timeout).await?;
    let code = task.run(&session, &out).await;
    shutdown(&session).await;
    code
}

/// A command, checked: what it runs once connected.
enum Task {
    Inspect {
        names: Vec<String>,
        kind: Option<synchronizers::KindArg>,
    },
    List {
        pattern: String,
        count: u32,
        kind: Option<synchronizers::KindArg>,
    },
    Watch {
        name: String,
        interval: Duration,
        duration: Option<Duration>,
    },
    Orphans {
        pattern: String,
        count: u32,
        cleaning: orphans::Cleaning,
    },
    ForceUnlock {
        name: String,
    },
}

impl Task {
    /// The command's arguments checked, or the usage error.
    fn of(command: Command) -> Result<Task, Failure> {
        Ok(match command {
            Command::Inspect { names, kind } => Task::Inspect {
                names: names.iter().map(lock_name).collect::<Result<Vec<_>, _>>()?,
                kind,
            },
            Command::List {
                pattern,
                count,
                kind,
            } => Task::List {
                pattern,
                count,
                kind,
            },
            Command::Watch {
                name,
                interval,
                duration,
            } => Task::Watch {
                name: lock_name(&name)?,
                interval: Duration::from_millis(interval),
                duration: watch_duration(duration)?,
            },
            Command::Orphans {
                pattern,
                count,
                clean,
                clean_tokens,
                yes,
            } => {
                if clean_tokens && !yes {
                    return Err(Failure::Usage(format!(
                        "refusing --clean-tokens without --yes:\n{}",
                        orphans::TOKEN_WARNING
                    )));
                }
                let cleaning = orphans::Cleaning {
                    dead: clean,
                    tokens: clean_tokens,
                };
                Task::Orphans {
                    pattern,
                    count,
                    cleaning,
                }
            }
            Command::ForceUnlock { name, yes } => {
                let name = lock_name(&name)?;
                if !yes {
                    return Err(Failure::Usage(format!(
                        "refusing to force-unlock {} without --yes: it deletes the lock \
                         whoever holds it (check first with `redisson-lock inspect`)",
                        inspect::escape(&name)
                    )));
                }
                Task::ForceUnlock { name }
            }
        })
    }

    async fn run(&self, session: &Session, out: &Out) -> Result<u8, Failure> {
        match self {
            Task::Inspect { names, kind } => run_inspect(session, out, names, *kind).await,
            Task::List {
                pattern,
                count,
                kind,
            } => list::run(session, out, pattern, *count, *kind).await,
            Task::Watch {
                name,
                interval,
                duration,
            } => watch::run(session, out, name, *interval, *duration).await,
            Task::Orphans {
                pattern,
                count,
                cleaning,
            } => orphans::run(session, out, pattern, *count, *cleaning).await,
            Task::ForceUnlock { name } => force_unlock::run(session, out, name).await,
        }
    }
}

/// `--duration`: a positive number of seconds.
fn watch_duration(duration: Option<f64>) -> Result<Option<Duration>, Failure> {
    match duration {
        Some(secs) if !(secs.is_finite() && secs > 0.0 && secs < 1e9) => Err(Failure::Usage(
            format!("--duration must be a positive number of seconds, not {secs}"),
        )),
        Some(secs) => Ok(Some(Duration::from_secs_f64(secs))),
        None => Ok(None),
    }
}

/// What one name turned out to be: a lock (or nothing), or a synchronizer.
enum Found {
    Lock(inspect::Outcome),
    Sync(Box<synchronizers::SyncReport>),
}

async fn run_inspect(
    session: &Session,
    out: &Out,
    names: &[String],
    kind: Option<synchronizers::KindArg>,
) -> Result<u8, Failure> {
    let redis = session.client.redis();
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        let failure = |e| session.failure(format!("reading {}: {e}", inspect::escape(name)));
        let keys = session.keys(name);
        let outcome = inspect::inspect(redis, &keys, name)
            .await
            .map_err(failure)?;
        // A string key (or a permit set without its key) may be a synchronizer.
        let maybe_sync = match &outcome {
            inspect::Outcome::NotFound { .. } => true,
            inspect::Outcome::NotALock { key_type, .. } => key_type == "string",
            inspect::Outcome::Lock(_) => false,
        };
        let sync = if maybe_sync {
            synchronizers::inspect(redis, keys.name(), name, kind)
                .await
                .map_err(failure)?
        } else {
            None
        };
        found.push(match sync {
            Some(report) => Found::Sync(Box::new(report)),
            None => Found::Lock(outcome),
        });
    }
    if out.json() {
        let all: Vec<_> = found
            .iter()
            .map(|f| match f {
                Found::Lock(outcome) => render::outcome_json(outcome),
                Found::Sync(report) => synchronizers::json(report),
            })
            .collect();
        out.write_json(&serde_json::Value::Array(all), false);
    } else {
        let text: Vec<String> = found
            .iter()
            .map(|f| match f {
                Found::Lock(outcome) => render::outcome_text(outcome),
                Found::Sync(report) => synchronizers::text(report),
            })
            .collect();
        out.write(&text.join("\n"));
    }
    // Found: a held lock, or a synchronizer (its key or its permit set exists).
    Ok(
        if found.iter().all(|f| match f {
            Found::Lock(outcome) => outcome.is_held(),
            Found::Sync(_) => true,
        }) {
            EXIT_OK
        } else {
            EXIT_NOT_FOUND
        },
    )
}

/// A lock name from the command line. Redisson lock names are strings, so the bytes must
/// be UTF-8; control characters are fine (they are shown escaped).
fn lock_name(raw: &OsString) -> Result<String, Failure> {
    match raw.to_str() {
        Some("") => Err(Failure::Usage("a lock name cannot be empty".to_owned())),
        Some(name) => Ok(name.to_owned()),
        None => Err(Failure::Usage(format!(
            "the lock name {raw:?} is not valid UTF-8: Redisson (Java and this crate) names \
             locks with strings, so no lock can have this name"
        ))),
    }
}

/// How to authenticate and encrypt: the flags, and the password from `REDIS_PASSWORD`.
struct Access {
    user: Option<String>,
    password: Option<String>,
    tls: Option<redisson_lock::config::TlsOptions>,
    /// `--prefix`: the apps' name mapper.
    prefix: Option<String>,
    fair_queue_names: FairQueueNames,
}

impl Access {
    fn of(cli: &Cli) -> Access {
        Access {
            user: cli.user.clone(),
            password: std::env::var("REDIS_PASSWORD")
                .ok()
                .filter(|password| !password.is_empty()),
            tls: cli.tls_options(),
            prefix: cli.prefix.clone().filter(|prefix| !prefix.is_empty()),
            fair_queue_names: if cli.fair_queue_unmapped {
                FairQueueNames::Unmapped
            } else {
                FairQueueNames::Mapped
            },
        }
    }
}

/// Connects with the library's client; gives up after `timeout` and does not keep
/// reconnecting (an inspector should fail fast and say why).
async fn connect(url: &str, access: &Access, timeout: Duration) -> Result<Session, Failure> {
    let shown = redacted_url(url);
    let mut builder = Config::builder()
        .url(url)
        .reconnect_policy(ReconnectPolicy::new_constant(1, 100))
        .response_timeout(timeout);
    if let Some(user) = &access.user {
        builder = builder.username(user);
    }
    if let Some(password) = &access.password {
        builder = builder.password(password);
    }
    if let Some(tls) = &access.tls {
        builder = builder.tls(tls.clone());
    }
    if let Some(prefix) = &access.prefix {
        builder = builder
            .name_mapper(PrefixNameMapper::new(prefix.as_str()))
            .fair_queue_names(access.fair_queue_names);
    }
    let config = builder
        .build()
        .map_err(|e| Failure::Usage(format!("cannot connect to {shown}: {e}")))?;
    let clustered = config.redis().server.is_clustered();
    let client = match tokio::time::timeout(timeout, Client::connect(config)).await {
        Ok(Ok(client)) => client,
        Ok(Err(error)) => {
            return Err(Failure::Redis {
                url: shown,
                // The error names what it tried to reach and why ("cannot connect to ...").
                cause: error.to_string(),
            });
        }
        Err(_) => {
            return Err(Failure::Redis {
                url: shown,
                cause: format!("cannot connect: no connection within {timeout:?}"),
            });
        }
    };
    Ok(Session {
        client,
        url: shown,
        clustered,
    })
}

async fn shutdown(session: &Session) {
    let _ = tokio::time::timeout(Duration::from_secs(2), session.client.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_passwords() {
        assert_eq!(
            redacted_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        assert_eq!(
            redacted_url("redis://u:p@h:1/0?x=y"),
            "redis://u:<redacted>@h:1/0?x=y"
        );
        assert_eq!(redacted_url("redis://p@h"), "redis://<redacted>@h");
    }
}
