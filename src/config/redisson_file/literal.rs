//! The literal grammars behind the readings: YAML 1.1's implicit types (snakeyaml 1.x's
//! resolver, which 3.x's Jackson uses), Jackson's number and boolean words, Java's
//! `Long.parseLong`, `Double.parseDouble` and `String.trim`, and snakeyaml's integer forms
//! (4.x). Each function answers for one text; [`super::scalar::Lens`] picks which apply to
//! a setting, per version.

use super::tree::NodeTag;

/// How 3.x's parser typed a scalar: its text is the scalar's own (`Int` is `-`? digits).
#[derive(Debug)]
pub(super) enum Token<'t> {
    Null,
    Bool(bool),
    Int,
    Float(&'t str),
    Str,
}

/// How 3.x's parser types a scalar before databind converts it (`json`: Jackson's strict
/// JSON, where plain scalars are JSON numbers and literals).
pub(super) fn jackson_token<'t>(
    json: bool,
    text: &'t str,
    plain: bool,
    tag: Option<&NodeTag>,
) -> Token<'t> {
    if json {
        if !plain {
            return Token::Str;
        }
        return match text {
            "null" => Token::Null,
            "true" => Token::Bool(true),
            "false" => Token::Bool(false),
            _ if text.contains(['.', 'e', 'E']) => Token::Float(text),
            _ => Token::Int,
        };
    }
    let implicit = match tag {
        Some(NodeTag::Core(core)) => match core.as_str() {
            "bool" => Implicit::Bool,
            "int" => Implicit::Int,
            "float" => Implicit::Float,
            "null" => Implicit::Null,
            _ => Implicit::Str,
        },
        Some(_) => Implicit::Str,
        None if !plain => Implicit::Str,
        None => yaml11_implicit(text),
    };
    match implicit {
        Implicit::Null => Token::Null,
        Implicit::Bool => match jackson_yaml_boolean(text) {
            Some(b) => Token::Bool(b),
            None => Token::Str,
        },
        Implicit::Int => jackson_number(text),
        Implicit::Float => Token::Float(text),
        Implicit::Str => Token::Str,
    }
}

/// YAML 1.1's implicit type of a plain scalar, before Jackson decodes it.
#[derive(Debug, PartialEq, Eq)]
enum Implicit {
    Null,
    Bool,
    Int,
    Float,
    Str,
}

/// YAML 1.1's null: empty, `~` or `null` in three cases.
pub(super) fn is_yaml11_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// YAML 1.1's implicit type of a plain scalar (snakeyaml 1.x's resolver, as 3.x's
/// Jackson uses it).
fn yaml11_implicit(text: &str) -> Implicit {
    if is_yaml11_null(text) {
        Implicit::Null
    } else if matches!(
        text,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) {
        Implicit::Bool
    } else if is_yaml11_int(text) {
        Implicit::Int
    } else if is_yaml11_float(text) {
        Implicit::Float
    } else {
        Implicit::Str
    }
}

fn unsigned(text: &str) -> &str {
    text.strip_prefix(['-', '+']).unwrap_or(text)
}

fn all(text: &str, allowed: impl Fn(char) -> bool) -> bool {
    !text.is_empty() && text.chars().all(allowed)
}

/// `[-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ |
/// [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`
fn is_yaml11_int(text: &str) -> bool {
    let t = unsigned(text);
    if let Some(bin) = t.strip_prefix("0b") {
        return all(bin, |c| matches!(c, '0' | '1' | '_'));
    }
    if let Some(hex) = t.strip_prefix("0x") {
        return all(hex, |c| c.is_ascii_hexdigit() || c == '_');
    }
    if t == "0" {
        return true;
    }
    if let Some(oct) = t.strip_prefix('0') {
        return all(oct, |c| matches!(c, '0'..='7' | '_'));
    }
    let mut parts = t.split(':');
    let head = parts.next().unwrap_or_default();
    if !head.starts_with(|c: char| matches!(c, '1'..='9'))
        || !all(head, |c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    parts.all(is_sexagesimal_part)
}

fn is_sexagesimal_part(part: &str) -> bool {
    match part.as_bytes() {
        [d] => d.is_ascii_digit(),
        [a, b] => matches!(a, b'0'..=b'5') && b.is_ascii_digit(),
        _ => false,
    }
}

/// `[-+]?(\.[0-9]+|[0-9_]+(\.[0-9_]*)?)([eE][-+]?[0-9]+)? |
/// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)`
fn is_yaml11_float(text: &str) -> bool {
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let t = unsigned(text);
    if matches!(t, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    // Sexagesimal: digits, `:` parts, a fraction.
    if let Some((whole, fraction)) = t.split_once('.')
        && whole.contains(':')
    {
        let mut parts = whole.split(':');
        let head = parts.next().unwrap_or_default();
        return head.starts_with(|c: char| c.is_ascii_digit())
            && all(head, |c| c.is_ascii_digit() || c == '_')
            && parts.all(is_sexagesimal_part)
            && fraction.chars().all(|c| c.is_ascii_digit() || c == '_');
    }
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let mantissa_ok = if let Some(fraction) = mantissa.strip_prefix('.') {
        all(fraction, |c| c.is_ascii_digit())
    } else {
        match mantissa.split_once('.') {
            Some((whole, fraction)) => {
                all(whole, |c| c.is_ascii_digit() || c == '_')
                    && fraction.chars().all(|c| c.is_ascii_digit() || c == '_')
            }
            None => all(mantissa, |c| c.is_ascii_digit() || c == '_'),
        }
    };
    mantissa_ok && exponent.is_none_or(|e| all(unsigned(e), |c| c.is_ascii_digit()))
}

/// Jackson's number decoding of a scalar the resolver took for an integer: `-`? digits
/// is an integer, a `.` form a float, anything else (`+42`, `0x2A`, `1_000`) a string.
fn jackson_number(text: &str) -> Token<'_> {
    if all(text.strip_prefix('-').unwrap_or(text), |c| {
        c.is_ascii_digit()
    }) {
        return Token::Int;
    }
    // `[-+]?([0-9][0-9_]*)?\.[0-9]*([eE][-+][0-9]+)?`
    let t = unsigned(text);
    if let Some((whole, rest)) = t.split_once('.') {
        let whole_ok = whole.is_empty()
            || (whole.starts_with(|c: char| c.is_ascii_digit())
                && whole.chars().all(|c| c.is_ascii_digit() || c == '_'));
        let (fraction, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let exponent_ok = exponent
            .is_none_or(|e| e.starts_with(['-', '+']) && all(&e[1..], |c| c.is_ascii_digit()));
        if whole_ok && fraction.chars().all(|c| c.is_ascii_digit()) && exponent_ok {
            return Token::Float(text);
        }
    }
    Token::Str
}

/// Jackson's YAML boolean words (`y`, `n` and any case of the others).
fn jackson_yaml_boolean(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "y" | "yes" | "on" | "true" => Some(true),
        "n" | "no" | "off" | "false" => Some(false),
        _ => None,
    }
}

/// Jackson's boolean from a string: `true`/`True`/`TRUE`, `false`/..., blank is false.
pub(super) fn jackson_string_boolean(text: &str) -> Option<bool> {
    match text.trim_matches(java_space) {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" | "" | "null" => Some(false),
        _ => None,
    }
}

/// What Java's `String.trim()` removes.
pub(super) fn java_space(c: char) -> bool {
    c <= ' '
}

/// Java's `Long.parseLong`: an optional sign and decimal digits (leading zeros are
/// decimal). Wide enough to tell an overflow.
pub(super) fn java_integer(text: &str) -> Option<i128> {
    let digits = unsigned(text);
    if !all(digits, |c| c.is_ascii_digit()) || digits.len() > 30 {
        return None;
    }
    text.parse::<i128>().ok()
}

/// Java's `Double.parseDouble` of a YAML 1.1 float (no `_`, no `.inf`/`.nan`, no `:`).
pub(super) fn java_double(text: &str) -> Option<f64> {
    if text.contains(['_', ':'])
        || text
            .chars()
            .any(|c| c.is_alphabetic() && c != 'e' && c != 'E')
    {
        return None;
    }
    text.parse::<f64>().ok()
}

/// snakeyaml's integer (YAML 1.1, as 4.x reads an `int`/`long` setting): `_` dropped, a
/// sign, then `0b` binary, `0x` hex, a leading `0` octal, `a:b:c` base 60, or decimal.
pub(super) fn yaml11_integer(text: &str) -> Option<i128> {
    let cleaned: String = text.chars().filter(|c| *c != '_').collect();
    let (negative, body) = match cleaned.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, cleaned.strip_prefix('+').unwrap_or(&cleaned)),
    };
    let radix_digits = |digits: &str, radix: u32| -> Option<i128> {
        if digits.is_empty() || digits.len() > 40 || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        i128::from_str_radix(digits, radix).ok()
    };
    let magnitude = if body == "0" {
        Some(0)
    } else if let Some(bin) = body.strip_prefix("0b") {
        radix_digits(bin, 2)
    } else if let Some(hex) = body.strip_prefix("0x") {
        radix_digits(hex, 16)
    } else if let Some(oct) = body.strip_prefix('0') {
        radix_digits(oct, 8)
    } else if body.contains(':') {
        let mut value: i128 = 0;
        for part in body.split(':') {
            value = value
                .checked_mul(60)?
                .checked_add(radix_digits(part, 10)?)?;
        }
        Some(value)
    } else {
        radix_digits(body, 10)
    }?;
    Some(if negative { -magnitude } else { magnitude })
}
