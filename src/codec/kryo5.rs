//! `org.redisson.codec.Kryo5Codec`: Kryo 5's `writeClassAndObject`, as Redisson's default
//! codec configures it (checked against Redisson 3.23.3 and 4.7.0).
//!
//! The first bytes name the class: a registered class is its id + 2 as a varint (`02`
//! `int`, `03` `String`, `05` `boolean`, `09` `long`, `0a` `double`); `java.util.UUID` is
//! not registered, so it is `01` (by name), `00` (the first name of this write), then the
//! class name as a Kryo string. Then the value:
//!
//! * `String`: empty is `81`; 2 to 32 UTF-16 units, all ASCII, are the ASCII bytes with the
//!   high bit set on the last one; anything else is a flag varint of the UTF-16 length + 1
//!   (first byte `0x80 | low 6 bits`, `0x40` set when more groups of 7 bits follow), then
//!   each UTF-16 unit as 1, 2 or 3 bytes of UTF-8, so a character beyond the BMP is two
//!   3-byte surrogates, not one 4-byte sequence;
//! * `int`: zigzag, then a varint of up to 5 bytes (7 bits each, low first);
//! * `long`: zigzag, then a varint of up to 9 bytes where the ninth holds 8 bits;
//! * `boolean`: `01` or `00`;
//! * `double`: Java's `doubleToLongBits` (one NaN), 8 bytes little-endian;
//! * `UUID`: the most, then the least significant 64 bits, each 8 bytes little-endian.

use super::values::{CodecError, JavaValue};

/// Kryo's class ids + 2 (`writeClass`) of the registered types used here.
const INT: u8 = 0x02;
const STRING: u8 = 0x03;
const BOOLEAN: u8 = 0x05;
const LONG: u8 = 0x09;
const DOUBLE: u8 = 0x0a;
/// An unregistered class, written by name (`NAME + 2`), name id 0, then
/// `"java.util.UUID"` as a Kryo ASCII string (the last byte `'D' | 0x80`).
const UUID_CLASS: &[u8] = b"\x01\x00java.util.UUI\xc4";

/// Appends `Kryo5Codec`'s bytes of `value` to `out`.
pub(super) fn encode(value: JavaValue<'_>, out: &mut Vec<u8>) -> Result<(), CodecError> {
    match value {
        JavaValue::String(text) => {
            out.push(STRING);
            write_string(text, out)?;
        }
        JavaValue::Integer(n) => {
            out.push(INT);
            write_varint(((n << 1) ^ (n >> 31)) as u32, out);
        }
        JavaValue::Long(n) => {
            out.push(LONG);
            write_varlong(((n << 1) ^ (n >> 63)) as u64, out);
        }
        JavaValue::Boolean(b) => out.extend_from_slice(&[BOOLEAN, u8::from(b)]),
        JavaValue::Double(x) => {
            out.push(DOUBLE);
            let bits = if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            };
            out.extend_from_slice(&bits.to_le_bytes());
        }
        JavaValue::Uuid(id) => {
            out.extend_from_slice(UUID_CLASS);
            let (most, least) = id.as_u64_pair();
            out.extend_from_slice(&most.to_le_bytes());
            out.extend_from_slice(&least.to_le_bytes());
        }
    }
    Ok(())
}

/// Kryo 5's `Output.writeString`.
fn write_string(text: &str, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let units = text.encode_utf16().count();
    if units == 0 {
        out.push(0x81);
        return Ok(());
    }
    if (2..=32).contains(&units) && text.is_ascii() {
        out.extend_from_slice(text.as_bytes());
        if let Some(last) = out.last_mut() {
            *last |= 0x80;
        }
        return Ok(());
    }
    let length = u32::try_from(units + 1).map_err(|_| CodecError::TooLong {
        java_class: "java.lang.String",
        len: text.len(),
    })?;
    write_flag_varint(length, out);
    out.reserve(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0..=0x7f => out.push(unit as u8),
            0x80..=0x7ff => {
                out.extend_from_slice(&[0xc0 | (unit >> 6) as u8, 0x80 | (unit & 0x3f) as u8])
            }
            _ => out.extend_from_slice(&[
                0xe0 | (unit >> 12) as u8,
                0x80 | ((unit >> 6) & 0x3f) as u8,
                0x80 | (unit & 0x3f) as u8,
            ]),
        }
    }
    Ok(())
}

/// Kryo's `writeVarIntFlag(true, value, true)`: the flag in bit 7 of the first byte, 6
/// bits of the value beside it (bit 6 says more follow), then 7 bits a byte.
fn write_flag_varint(value: u32, out: &mut Vec<u8>) {
    let first = 0x80 | (value & 0x3f) as u8;
    let rest = value >> 6;
    if rest == 0 {
        out.push(first);
    } else {
        out.push(first | 0x40);
        write_varint(rest, out);
    }
}

/// Kryo's `writeVarInt(value, true)`: 7 bits a byte, low first, bit 7 = more follow.
fn write_varint(mut value: u32, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push(0x80 | (value & 0x7f) as u8);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Kryo's `writeVarLong(value, true)`: as [`write_varint`] for up to 8 bytes; a value
/// wider than 56 bits takes a ninth byte with all its top 8 bits.
fn write_varlong(mut value: u64, out: &mut Vec<u8>) {
    for _ in 0..8 {
        if value < 0x80 {
            out.push(value as u8);
            return;
        }
        out.push(0x80 | (value & 0x7f) as u8);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(value: u32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(value, &mut out);
        out
    }

    fn varlong(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varlong(value, &mut out);
        out
    }

    fn flag(value: u32) -> Vec<u8> {
        let mut out = Vec::new();
        write_flag_varint(value, &mut out);
        out
    }

    #[test]
    fn varint_widths() {
        assert_eq!(varint(0), [0]);
        assert_eq!(varint(0x7f), [0x7f]);
        assert_eq!(varint(0x80), [0x80, 0x01]);
        assert_eq!(varint(u32::MAX), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(
            varlong((1 << 56) - 1),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]
        );
        assert_eq!(
            varlong(1 << 56),
            [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
        );
        assert_eq!(varlong(u64::MAX), [0xff; 9]);
        assert_eq!(flag(1), [0x81]);
        assert_eq!(flag(63), [0xbf]);
        assert_eq!(flag(64), [0xc0, 0x01]);
        assert_eq!(flag(65), [0xc1, 0x01]);
        assert_eq!(flag(8192), [0xc0, 0x80, 0x01]);
    }
}
