//! What every command shares: the exit codes, [`Failure`], where output goes ([`Out`]) and
//! the connection with what the commands need to talk about it ([`Session`]).

use std::io::Write;

use redisson_lock::Client;
use redisson_lock::names::LockKeys;

/// Exit code for a lock that was found (and held) or a command that did its work.
pub(crate) const EXIT_OK: u8 = 0;
/// Exit code for a name that is not locked, not found, or not a lock.
pub(crate) const EXIT_NOT_FOUND: u8 = 1;
/// Exit code for bad usage or a Redis that cannot be reached.
pub(crate) const EXIT_ERROR: u8 = 2;

/// Why a command could not do its work (exit code 2).
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad input.
    Usage(String),
    /// Redis could not be reached or answered with an error.
    Redis { url: String, cause: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Usage(message) => f.write_str(message),
            Failure::Redis { url, cause } => write!(f, "Redis at {url}: {cause}"),
        }
    }
}

/// Where output goes; a closed pipe (`| head`) ends the program quietly.
pub(crate) struct Out {
    pub(crate) json: bool,
}

impl Out {
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// Writes `text` to stdout. `false` when stdout is gone.
    pub(crate) fn write(&self, text: &str) -> bool {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .is_ok()
    }

    /// Writes a JSON value, pretty, or one line when `line` is set.
    pub(crate) fn write_json(&self, value: &serde_json::Value, line: bool) -> bool {
        let text = if line {
            serde_json::to_string(value)
        } else {
            serde_json::to_string_pretty(value)
        };
        match text {
            Ok(text) => self.write(&(text + "\n")),
            Err(_) => false,
        }
    }
}

/// The connection and what the commands need to talk about it.
pub(crate) struct Session {
    pub(crate) client: Client,
    /// The URL with any password masked, for messages.
    pub(crate) url: String,
    pub(crate) clustered: bool,
}

impl Session {
    /// The keys of the lock the apps call `name` (through `--prefix`, if given).
    pub(crate) fn keys(&self, name: &str) -> LockKeys {
        LockKeys::with_config(name, self.client.config())
    }

    /// The name the apps give the lock stored as `key` (without `--prefix`); `None` for a
    /// key outside the prefix.
    pub(crate) fn unmapped(&self, key: &str) -> Option<String> {
        match self.client.config().name_mapper() {
            None => Some(key.to_owned()),
            Some(mapper) => {
                let name = mapper.unmap(key);
                (mapper.map(&name) == key).then_some(name)
            }
        }
    }

    /// A Redis error as a [`Failure`] that names the URL.
    pub(crate) fn failure(&self, cause: impl std::fmt::Display) -> Failure {
        Failure::Redis {
            url: self.url.clone(),
            cause: cause.to_string(),
        }
    }
}
