//! The file's text: Redisson's `${NAME:-default}` substitution, the YAML or JSON tree as
//! the reader walks it, and its scalars read as Redisson reads them.

use std::time::Duration;

use saphyr::{Scalar, Yaml};

use super::{bad_value, file_error};
use crate::error::{RedissonFileError, Result};

/// Redisson's substitution: `${NAME}` or `${NAME:-default}` where NAME is `[\w.]+` and the
/// default is at least one character other than a line break, up to the first `}`. An
/// unset NAME without a default stays as written; a set one (even empty) is pasted as is.
pub(crate) fn substitute(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match placeholder(after) {
            Some((name, default, used)) => {
                match env(name).or_else(|| default.map(str::to_owned)) {
                    Some(value) => out.push_str(&value),
                    None => out.push_str(&rest[start..start + 2 + used]),
                }
                rest = &after[used..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// After `${`: the name, the default, and the bytes up to and including the closing `}`.
fn placeholder(after: &str) -> Option<(&str, Option<&str>, usize)> {
    let name_len = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.')
        .count();
    if name_len == 0 {
        return None;
    }
    let name = &after[..name_len];
    let tail = &after[name_len..];
    if tail.starts_with('}') {
        return Some((name, None, name_len + 1));
    }
    let default_text = tail.strip_prefix(":-")?;
    // `.+?` then `}`: at least one character, no line break, the first `}` after it.
    let first = default_text.chars().next()?;
    if first == '\n' || first == '\r' {
        return None;
    }
    let from = first.len_utf8();
    let line_end = default_text[from..]
        .find(['\n', '\r'])
        .map_or(default_text.len(), |i| i + from);
    let close = default_text[from..line_end].find('}')? + from;
    let default = &default_text[..close];
    Some((name, Some(default), name_len + 2 + close + 1))
}

/// The file as a tree this reader walks: scalars as text (Redisson reads quoted and plain
/// numbers alike), classes as tags.
#[derive(Debug)]
pub(super) enum Node {
    Null,
    Scalar(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
    /// `!<class> {...}` in YAML, `{"class": "...", ...}` in JSON.
    /// (The class's own settings do not matter here: only which class it is.)
    Class(String),
}

pub(super) fn convert(yaml: &Yaml<'_>, json: bool) -> Result<Node> {
    Ok(match yaml {
        Yaml::Value(Scalar::Null) => Node::Null,
        Yaml::Value(Scalar::Boolean(b)) => Node::Scalar(b.to_string()),
        Yaml::Value(Scalar::Integer(i)) => Node::Scalar(i.to_string()),
        Yaml::Value(Scalar::FloatingPoint(f)) => Node::Scalar(f.to_string()),
        Yaml::Value(Scalar::String(s)) => Node::Scalar(s.to_string()),
        Yaml::Representation(text, _, _) => Node::Scalar(text.to_string()),
        Yaml::Sequence(items) => Node::Seq(
            items
                .iter()
                .map(|item| convert(item, json))
                .collect::<Result<_>>()?,
        ),
        Yaml::Mapping(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (key, value) in map {
                let key = match convert(key, json)? {
                    Node::Scalar(key) => key,
                    _ => {
                        return Err(file_error(
                            RedissonFileError::Syntax,
                            "<file>",
                            "a mapping key is not a plain name",
                        ))
                    }
                };
                entries.push((key, convert(value, json)?));
            }
            let class = json
                .then(|| entries.iter().position(|(key, _)| key == "class"))
                .flatten();
            match class {
                Some(at) => match entries.remove(at) {
                    (_, Node::Scalar(class)) => Node::Class(class),
                    _ => {
                        return Err(file_error(
                            RedissonFileError::Syntax,
                            "<file>",
                            "a `class` entry is not a class name",
                        ))
                    }
                },
                None => Node::Map(entries),
            }
        }
        Yaml::Tagged(tag, inner) => {
            let class = tag
                .suffix
                .strip_prefix("tag:yaml.org,2002:")
                .unwrap_or(&tag.suffix)
                .to_owned();
            {
                convert(inner, json)?;
                Node::Class(class)
            }
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(file_error(
                RedissonFileError::Syntax,
                "<file>",
                "an alias or a value that does not parse",
            ))
        }
    })
}

/// A scalar as text; `None` for null. A class or a list is refused.
pub(super) fn text(path: &str, value: &Node) -> Result<Option<String>> {
    match value {
        Node::Null => Ok(None),
        Node::Scalar(s) => Ok(Some(s.clone())),
        _ => Err(bad_value(path, "not a single value")),
    }
}

/// An integer as Redisson reads one (quoted or not, no unit); `None` for null.
pub(super) fn integer(path: &str, value: &Node) -> Result<Option<i64>> {
    let Some(text) = text(path, value)? else {
        return Ok(None);
    };
    text.trim().parse::<i64>().map(Some).map_err(|_| {
        bad_value(
            path,
            format!("`{text}` is not an integer (Redisson takes milliseconds and counts as plain numbers, no units)"),
        )
    })
}

/// Milliseconds, as Redisson's timeouts; `None` for null.
pub(super) fn millis(path: &str, value: &Node) -> Result<Option<Duration>> {
    match integer(path, value)? {
        None => Ok(None),
        Some(ms) => u64::try_from(ms)
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|_| bad_value(path, format!("{ms} ms is negative"))),
    }
}

pub(super) fn boolean(path: &str, value: &Node) -> Result<Option<bool>> {
    match text(path, value)?.as_deref() {
        None => Ok(None),
        Some(b) if b.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(b) if b.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(bad_value(path, format!("`{other}` is not true or false"))),
    }
}

/// `redis://host:port` (or `rediss://`, `valkey://`, `valkeys://`): whether TLS, the host,
/// the port (6379 when left out).
pub(super) fn parse_address(path: &str, address: &str) -> Result<(bool, String, u16)> {
    let Some((scheme, rest)) = address.split_once("://") else {
        return Err(bad_value(
            path,
            format!("`{address}` has no scheme; Redisson wants `redis://host:port`"),
        ));
    };
    let secure = match scheme.to_ascii_lowercase().as_str() {
        "redis" | "valkey" => false,
        "rediss" | "valkeys" => true,
        _ => {
            return Err(bad_value(
                path,
                format!("scheme `{scheme}` is not redis, rediss, valkey or valkeys"),
            ))
        }
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(bad_value(path, format!("`{address}`: unclosed `[`")));
        };
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad_value(path, format!("`{address}` has no host")));
    }
    let port = match port {
        None => 6379,
        Some(port) => port
            .parse::<u16>()
            .map_err(|_| bad_value(path, format!("`{address}`: `{port}` is not a port")))?,
    };
    Ok((secure, host.to_owned(), port))
}
