//! `org.redisson.client.codec.StringCodec`: the value's `toString()`, in UTF-8.
//!
//! Java's `toString()` of the supported types: a `String` itself, an `Integer` or `Long`
//! in decimal (`-7`), a `UUID` as 36 lower-case hex digits and hyphens, a `Boolean` as
//! `true` / `false`. A `Double` is refused (see the module docs of `codec`).

use super::values::{CodecError, JavaCodec, JavaValue, Uuid, double_as_text};

/// Appends `StringCodec`'s bytes of `value` to `out`.
pub(super) fn encode(value: JavaValue<'_>, out: &mut Vec<u8>) -> Result<(), CodecError> {
    match value {
        JavaValue::String(text) => out.extend_from_slice(text.as_bytes()),
        JavaValue::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        JavaValue::Long(n) => out.extend_from_slice(n.to_string().as_bytes()),
        JavaValue::Uuid(id) => push_uuid_text(id, out),
        JavaValue::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        JavaValue::Double(_) => return Err(double_as_text(JavaCodec::String)),
    }
    Ok(())
}

/// Java's `UUID.toString()`: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower case.
pub(super) fn push_uuid_text(id: Uuid, out: &mut Vec<u8>) {
    let mut buffer = Uuid::encode_buffer();
    out.extend_from_slice(id.hyphenated().encode_lower(&mut buffer).as_bytes());
}
