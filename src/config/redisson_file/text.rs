//! Redisson's `${NAME:-default}` substitution, on the file's raw text before parsing.

/// Redisson's substitution: `${NAME}` or `${NAME:-default}` where NAME is `[\w.]+` and the
/// default is at least one character other than a line break, up to the first `}`. An
/// unset NAME without a default stays as written; a set one (even empty) is pasted as is.
/// Also returns each variable whose value was pasted, with it.
pub(super) fn substitute_tracked(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> (String, Vec<(String, String)>) {
    let mut out = String::with_capacity(text.len());
    let mut pasted = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match placeholder(after) {
            Some((name, default, used)) => {
                match env(name) {
                    Some(value) => {
                        out.push_str(&value);
                        pasted.push((name.to_owned(), value));
                    }
                    None => match default {
                        Some(default) => out.push_str(default),
                        None => out.push_str(&rest[start..start + 2 + used]),
                    },
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
    (out, pasted)
}

/// What Java's `.` does not match (a line terminator).
fn line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
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
    if line_terminator(first) {
        return None;
    }
    let from = first.len_utf8();
    let line_end = default_text[from..]
        .find(line_terminator)
        .map_or(default_text.len(), |i| i + from);
    let close = default_text[from..line_end].find('}')? + from;
    let default = &default_text[..close];
    Some((name, Some(default), name_len + 2 + close + 1))
}
