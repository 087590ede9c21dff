//! `org.redisson.codec.JsonJacksonCodec`: Jackson 2's JSON, with Redisson's default typing.
//!
//! Redisson types every non-final class and every `Long` as a two-element array
//! `["<class>",<value>]`; `String`, `Integer` and `Boolean` are final, so they are plain
//! JSON. A `UUID` is a plain string before Redisson 3.55.0 and typed from then on
//! ([`JsonUuids`]).
//!
//! Strings follow Jackson's `UTF8JsonGenerator` with its defaults: `"` and `\` escaped
//! with a backslash; `\b \t \n \f \r` by name; the other controls below U+0020 as `\u00XX`
//! with upper-case hex; DEL and everything else below U+10000 as UTF-8 (U+2028 too); a
//! character beyond the BMP as its two surrogates escaped (`😀` is `\uD83D\uDE00`).

use super::string::push_uuid_text;
use super::values::{CodecError, JavaCodec, JavaValue, JsonUuids, double_as_text};

/// Appends `JsonJacksonCodec`'s bytes of `value` to `out`.
pub(super) fn encode(
    value: JavaValue<'_>,
    uuids: JsonUuids,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    match value {
        JavaValue::String(text) => write_string(text, out),
        JavaValue::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        JavaValue::Long(n) => {
            out.extend_from_slice(br#"["java.lang.Long","#);
            out.extend_from_slice(n.to_string().as_bytes());
            out.push(b']');
        }
        JavaValue::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        JavaValue::Uuid(_) if uuids == JsonUuids::Unknown => {
            return Err(CodecError::Unsupported {
                codec: "JsonJacksonCodec",
                java_class: "java.util.UUID",
                reason: "Redisson before 3.55.0 writes a UUID as a JSON string, 3.55.0 and \
                         later (4.x) as a typed array, and the configuration does not say \
                         which the Java side runs; give JsonUuids::Plain or JsonUuids::Typed \
                         (ConfigBuilder::codec, Client::map_with_codec)",
            });
        }
        JavaValue::Uuid(id) => {
            if uuids == JsonUuids::Typed {
                out.extend_from_slice(br#"["java.util.UUID","#);
            }
            out.push(b'"');
            push_uuid_text(id, out);
            out.push(b'"');
            if uuids == JsonUuids::Typed {
                out.push(b']');
            }
        }
        JavaValue::Double(_) => {
            return Err(double_as_text(JavaCodec::JsonJackson { uuids }));
        }
    }
    Ok(())
}

/// A JSON string as Jackson writes it.
fn write_string(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let escape_unit = |unit: u16, out: &mut Vec<u8>| {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from((unit >> shift) & 0xf)]);
        }
    };
    out.reserve(text.len() + 2);
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\0'..='\u{1f}' => escape_unit(c as u16, out),
            '\u{10000}'.. => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    escape_unit(*unit, out);
                }
            }
            _ => {
                let mut bytes = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut bytes).as_bytes());
            }
        }
    }
    out.push(b'"');
}
