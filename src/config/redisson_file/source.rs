//! Where a file's text comes from (a path, the environment), and the error a setting of
//! it gives.

use std::path::Path;

use crate::error::{Error, RedissonFileError, Result};

pub(super) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The file's text, and whether it is JSON (by its name's extension).
pub(super) fn read_file(path: &Path) -> Result<(String, bool)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid(format!("cannot read {}: {e}", path.display())))?;
    let json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    Ok((text, json))
}

pub(super) fn file_error(
    kind: RedissonFileError,
    setting: impl Into<String>,
    reason: impl Into<String>,
) -> Error {
    Error::RedissonFile {
        kind,
        setting: setting.into(),
        reason: reason.into(),
    }
}
