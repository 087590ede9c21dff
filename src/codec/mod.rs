//! Java's codec bytes: what Redisson's codecs write for a map key or a set value, byte for
//! byte, so that a Rust service can name the objects a Java service keys by them.
//!
//! Redisson never stores a map key's text in a per-key object's name: it encodes the key
//! with the map's codec and hashes those bytes (`RMap#getLock(key)` lives at
//! `{<map>}:<hash of the key's bytes>:lock`, see [`EntryObjectName`](crate::names::EntryObjectName)).
//! The faster multi-lock hashes its values' bytes the same way
//! ([`FasterMulti`](crate::kinds::FasterMulti#values-and-codecs)). Agreeing with a Java app
//! therefore means producing the bytes its codec produces: [`JavaCodec::encode`] does, for
//! the codecs and value types below. Nothing here talks to Redis.
//!
//! # Codecs
//!
//! | Java (Redisson) | Rust |
//! |---|---|
//! | `StringCodec.INSTANCE` | [`JavaCodec::String`] |
//! | `new Kryo5Codec()`, Redisson's default when `Config.setCodec` is not called | [`JavaCodec::Kryo5`] |
//! | `new JsonJacksonCodec()`, Redisson before 3.55.0 | [`JavaCodec::JsonJackson`] `{ uuids: JsonUuids::Plain }` |
//! | `new JsonJacksonCodec()`, Redisson 3.55.0 and later (4.x) | [`JavaCodec::JsonJackson`] `{ uuids: JsonUuids::Typed }` |
//!
//! A map's codec is the one given to `getMap(name, codec)` / `getSet(name, codec)`, else
//! the client's `Config.getCodec()`. For these codecs a map key and a set value are encoded
//! alike (`getMapKeyEncoder()` and `getValueEncoder()` write the same bytes), so one
//! [`JavaCodec::encode`] serves both.
//!
//! # Values
//!
//! | Java key or value | Rust ([`JavaValue`]) | `StringCodec` | `Kryo5Codec` | `JsonJacksonCodec` |
//! |---|---|---|---|---|
//! | `String` `"o-1"` | `&str`, `&String` | UTF-8: `6f 2d 31` | `03 6f 2d b1` | `"o-1"` |
//! | `Integer` `7` (an `int` key) | `i32` (a bare literal `7`) | `7` | `02 0e` | `7` |
//! | `Long` `42L` | `i64` (`42i64`) | `42` | `09 54` | `["java.lang.Long",42]` |
//! | `UUID` | [`Uuid`] | `123e4567-e89b-…` | `01 00 "java.util.UUID"` + 16 bytes | `"123e4567-…"` or `["java.util.UUID","123e4567-…"]` ([`JsonUuids`]) |
//! | `Boolean` `true` | `bool` | `true` | `05 01` | `true` |
//! | `Double` `1.5` | `f64` | refused | `0a` + 8 bytes | refused |
//!
//! An integer literal without a suffix is an `i32` in Rust and an `int` in Java, so
//! `encode(7)` is Java's `map.getLock(7)`; write `7i64` for Java's `7L`, which encodes
//! differently under every codec but `StringCodec`.
//!
//! Refused ([`CodecError::Unsupported`]): a `Double` under `StringCodec` or
//! `JsonJacksonCodec`, which write Java's `Double.toString` text; its digits differ from
//! Rust's float formatting for some values and changed between JDK versions (JDK 19), so
//! no byte-exact promise can be made. A value Java could not encode at all (more than
//! 2^31 − 1 bytes) is [`CodecError::TooLong`]. Nothing here panics.
//!
//! The bytes of each codec are laid out in `docs/codecs.md`; they were checked against
//! real Redisson 3.23.3 and 4.7.0 (`tests/java/codec.rs`).
//!
//! # Examples
//! ```
//! use redisson_lock::codec::Uuid;
//! use redisson_lock::codec::{JavaCodec, JsonUuids};
//!
//! // Java: `new Kryo5Codec().getMapKeyEncoder().encode("o-1")`
//! assert_eq!(JavaCodec::Kryo5.encode("o-1")?, [0x03, 0x6f, 0x2d, 0xb1]);
//! assert_eq!(JavaCodec::String.encode(7)?, b"7");
//! assert_eq!(JavaCodec::Kryo5.encode(42i64)?, [0x09, 0x54]);
//!
//! // The JSON codec writes UUIDs differently in Redisson 3.x and 4.x: say which.
//! let id = Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap();
//! let json = JavaCodec::JsonJackson { uuids: JsonUuids::Typed };
//! assert_eq!(
//!     json.encode(id)?,
//!     br#"["java.util.UUID","123e4567-e89b-12d3-a456-426614174000"]"#
//! );
//! # Ok::<(), redisson_lock::codec::CodecError>(())
//! ```

mod json;
mod kryo5;
mod string;
mod values;

pub use values::{CodecError, JavaCodec, JavaValue, JsonUuids, Uuid};

/// The most bytes a Netty `ByteBuf`, and so a Java codec's output, can hold.
const JAVA_MAX_BYTES: usize = i32::MAX as usize;

/// [`CodecError::TooLong`] when `len` bytes are more than Java can hold.
fn check_len(java_class: &'static str, len: usize) -> Result<(), CodecError> {
    if len > JAVA_MAX_BYTES {
        return Err(CodecError::TooLong { java_class, len });
    }
    Ok(())
}

impl JavaCodec {
    /// The bytes this codec writes in Java for `value` as a map key
    /// (`codec.getMapKeyEncoder().encode(value)`) or a set value
    /// (`codec.getValueEncoder().encode(value)`): the same bytes for these codecs. No I/O.
    ///
    /// # Errors
    /// [`CodecError::Unsupported`] for a `f64` under [`JavaCodec::String`] or
    /// [`JavaCodec::JsonJackson`]; [`CodecError::TooLong`] for a value longer than Java
    /// can hold.
    ///
    /// # Redisson equivalent
    /// `Codec#getMapKeyEncoder().encode(Object)`, `Codec#getValueEncoder().encode(Object)`
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// let key = JavaCodec::Kryo5.encode("order:1")?;
    /// assert_eq!(key, b"\x03order:\xb1");
    ///
    /// // Values of a faster multi-lock shared with a Java app on Kryo5Codec:
    /// let values = ["Jack_001", "Mary_002"]
    ///     .into_iter()
    ///     .map(|v| JavaCodec::Kryo5.encode(v))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// assert_eq!(values[0], b"\x03Jack_00\xb1");
    /// // client.get_multi_lock("grp", values)?;
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    pub fn encode<'a>(&self, value: impl Into<JavaValue<'a>>) -> Result<Vec<u8>, CodecError> {
        let value = value.into();
        if let JavaValue::String(text) = value {
            // Every codec writes at least the text's UTF-8 length: refuse before copying.
            check_len(value.java_class(), text.len())?;
        }
        let mut out = Vec::new();
        match self {
            JavaCodec::String => string::encode(value, &mut out)?,
            JavaCodec::Kryo5 => kryo5::encode(value, &mut out)?,
            JavaCodec::JsonJackson { uuids } => json::encode(value, *uuids, &mut out)?,
        }
        check_len(value.java_class(), out.len())?;
        Ok(out)
    }

    /// The codec's Java class, as a `redisson.yaml` names it (`codec: !<...> {}`).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// assert_eq!(JavaCodec::String.java_class(), "org.redisson.client.codec.StringCodec");
    /// ```
    pub fn java_class(&self) -> &'static str {
        match self {
            JavaCodec::String => "org.redisson.client.codec.StringCodec",
            JavaCodec::Kryo5 => "org.redisson.codec.Kryo5Codec",
            JavaCodec::JsonJackson { .. } => "org.redisson.codec.JsonJacksonCodec",
        }
    }

    /// The codec whose map-key bytes are those of the Java codec class `class` (a name
    /// as a `redisson.yaml` gives it, `org.redisson.client.codec.StringCodec`), with
    /// `uuids` for `JsonJacksonCodec`; `None` for a codec whose bytes this crate does
    /// not write (a compressing codec, Java serialization, Protobuf, ...).
    /// `LongCodec`, `IntegerCodec` and `DoubleCodec` extend `StringCodec` and keep its
    /// encoders, so they are [`JavaCodec::String`].
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::{JavaCodec, JsonUuids};
    /// let string = JavaCodec::from_java_class("org.redisson.client.codec.LongCodec", JsonUuids::Typed);
    /// assert_eq!(string, Some(JavaCodec::String));
    /// assert_eq!(JavaCodec::from_java_class("org.redisson.codec.LZ4CodecV2", JsonUuids::Typed), None);
    /// ```
    pub fn from_java_class(class: &str, uuids: JsonUuids) -> Option<JavaCodec> {
        match class {
            "org.redisson.client.codec.StringCodec"
            | "org.redisson.client.codec.LongCodec"
            | "org.redisson.client.codec.IntegerCodec"
            | "org.redisson.client.codec.DoubleCodec" => Some(JavaCodec::String),
            "org.redisson.codec.Kryo5Codec" => Some(JavaCodec::Kryo5),
            "org.redisson.codec.JsonJacksonCodec" => Some(JavaCodec::JsonJackson { uuids }),
            _ => None,
        }
    }

    /// The class's simple name, for messages.
    fn simple_name(&self) -> &'static str {
        let class = self.java_class();
        class.rsplit('.').next().unwrap_or(class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    const PLAIN: JavaCodec = JavaCodec::JsonJackson {
        uuids: JsonUuids::Plain,
    };
    const TYPED: JavaCodec = JavaCodec::JsonJackson {
        uuids: JsonUuids::Typed,
    };

    /// The README table of the real drivers (`encode` verb, 3.23.3 and 4.7.0).
    #[test]
    fn readme_vectors() {
        let id = Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap();
        let cases: Vec<(JavaCodec, JavaValue<'_>, &str)> = vec![
            (JavaCodec::String, "o-1".into(), "6f2d31"),
            (JavaCodec::Kryo5, "o-1".into(), "036f2db1"),
            (PLAIN, "o-1".into(), "226f2d3122"),
            (JavaCodec::Kryo5, 7.into(), "020e"),
            (JavaCodec::Kryo5, 42i64.into(), "0954"),
            (JavaCodec::Kryo5, true.into(), "0501"),
            (JavaCodec::Kryo5, 1.5.into(), "0a000000000000f83f"),
            (
                JavaCodec::Kryo5,
                id.into(),
                "01006a6176612e7574696c2e555549c4d3129be867453e1200401714664256a4",
            ),
            (PLAIN, 7.into(), "37"),
            (
                PLAIN,
                42i64.into(),
                "5b226a6176612e6c616e672e4c6f6e67222c34325d",
            ),
            (
                PLAIN,
                id.into(),
                "2231323365343536372d653839622d313264332d613435362d34323636313431373430303022",
            ),
            (
                TYPED,
                id.into(),
                "5b226a6176612e7574696c2e55554944222c2231323365343536372d653839622d313264332d\
                 613435362d343236363134313734303030225d",
            ),
        ];
        for (codec, value, expected) in cases {
            assert_eq!(
                hex(&codec.encode(value).unwrap()),
                expected,
                "{codec:?} {value:?}"
            );
        }
    }

    /// Answers of the real drivers (`encode` verb), both versions alike.
    #[test]
    fn driver_vectors() {
        let cases: Vec<(JavaCodec, JavaValue<'_>, &str)> = vec![
            (JavaCodec::Kryo5, "é".into(), "0382c3a9"),
            (JavaCodec::Kryo5, "a😀b".into(), "038561eda0bdedb88062"),
            (JavaCodec::String, "a😀b".into(), "61f09f988062"),
            (PLAIN, "a😀b".into(), "22615c75443833445c75444530306222"),
            (
                PLAIN,
                "a\u{1}b\u{8}c\u{1f}d\u{7f}e\"f\\g/h".into(),
                "22615c7530303031625c62635c7530303146647f655c22665c5c672f6822",
            ),
            (JavaCodec::Kryo5, "a\0b".into(), "036100e2"),
            (JavaCodec::String, (-7).into(), "2d37"),
            (JavaCodec::String, true.into(), "74727565"),
            (PLAIN, false.into(), "66616c7365"),
            (
                PLAIN,
                i64::MIN.into(),
                "5b226a6176612e6c616e672e4c6f6e67222c2d393232333337323033363835343737353830385d",
            ),
            (JavaCodec::Kryo5, i64::MIN.into(), "09ffffffffffffffffff"),
            (JavaCodec::Kryo5, i64::MAX.into(), "09feffffffffffffffff"),
            (JavaCodec::Kryo5, i32::MIN.into(), "02ffffffff0f"),
            (JavaCodec::Kryo5, f64::NAN.into(), "0a000000000000f87f"),
            (JavaCodec::Kryo5, (-0.0).into(), "0a0000000000000080"),
            (
                JavaCodec::Kryo5,
                Uuid::nil().into(),
                "01006a6176612e7574696c2e555549c400000000000000000000000000000000",
            ),
        ];
        for (codec, value, expected) in cases {
            assert_eq!(
                hex(&codec.encode(value).unwrap()),
                expected,
                "{codec:?} {value:?}"
            );
        }
    }

    /// docs: faster-multilock-vectors.md §2, Kryo5Codec bytes of real Redisson 4.7.0.
    #[test]
    fn kryo_string_layouts() {
        let x = |n: usize| "x".repeat(n);
        let digits = "0123456789".repeat(10);
        let cases: Vec<(String, String)> = vec![
            (String::new(), "0381".into()),
            ("a".into(), "038261".into()),
            ("Jack_001".into(), "034a61636b5f3030b1".into()),
            ("订单-42".into(), "0386e8aea2e58d952d3432".into()),
            (x(31), format!("03{}f8", "78".repeat(30))),
            (x(32), format!("03{}f8", "78".repeat(31))),
            (x(33), format!("03a2{}", "78".repeat(33))),
            (x(64), format!("03c101{}", "78".repeat(64))),
            (x(100), format!("03e501{}", "78".repeat(100))),
            (digits.clone(), format!("03e501{}", hex(digits.as_bytes()))),
        ];
        for (text, expected) in cases {
            assert_eq!(
                hex(&JavaCodec::Kryo5.encode(&text).unwrap()),
                expected,
                "{text:?}"
            );
        }
    }

    #[test]
    fn doubles_only_under_kryo() {
        for codec in [JavaCodec::String, PLAIN, TYPED] {
            let error = codec.encode(1.5).unwrap_err();
            assert!(
                matches!(
                    error,
                    CodecError::Unsupported {
                        java_class: "java.lang.Double",
                        ..
                    }
                ),
                "{codec:?}: {error}"
            );
            assert!(matches!(
                crate::error::Error::from(error),
                crate::error::Error::InvalidArgument(_)
            ));
        }
        // Java's doubleToLongBits: every NaN is the canonical one.
        let odd_nan = f64::from_bits(0x7ff0_0000_0000_0001);
        assert_eq!(
            JavaCodec::Kryo5.encode(odd_nan).unwrap(),
            JavaCodec::Kryo5.encode(f64::NAN).unwrap()
        );
    }

    #[test]
    fn too_long_is_refused_without_encoding() {
        assert_eq!(check_len("java.lang.String", JAVA_MAX_BYTES), Ok(()));
        assert_eq!(
            check_len("java.lang.String", JAVA_MAX_BYTES + 1),
            Err(CodecError::TooLong {
                java_class: "java.lang.String",
                len: JAVA_MAX_BYTES + 1
            })
        );
    }

    #[test]
    fn json_escapes_like_jackson() {
        // Jackson's standard escapes (the driver cannot send \t, \n, \f, \r: its words
        // are split at whitespace), \u00XX with upper-case hex for the other controls.
        assert_eq!(
            PLAIN.encode("\t\n\u{c}\r\u{0}\u{1b}").unwrap(),
            br#""\t\n\f\r\u0000\u001B""#
        );
        // BMP characters as UTF-8, U+2028 included.
        assert_eq!(
            PLAIN.encode("é\u{2028}").unwrap(),
            "\"é\u{2028}\"".as_bytes()
        );
    }

    #[test]
    fn class_names() {
        assert_eq!(JavaCodec::String.simple_name(), "StringCodec");
        assert_eq!(TYPED.simple_name(), "JsonJacksonCodec");
        assert_eq!(JavaValue::from(&Uuid::nil()).java_class(), "java.util.UUID");
        assert_eq!(JavaValue::from(&String::from("a")), JavaValue::String("a"));
    }
}
