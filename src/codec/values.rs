//! The codec data: [`JavaCodec`] (which of Redisson's codecs), [`JsonUuids`],
//! [`JavaValue`] (a map key or set value as its Java type) and [`CodecError`]. The bytes
//! each codec writes are in `string.rs`, `kryo5.rs` and `json.rs`, chosen by
//! [`JavaCodec::encode`] in `mod.rs`.

/// The UUID type [`JavaValue::Uuid`] holds (the `uuid` crate's), re-exported so that a
/// caller needs no dependency of its own.
///
/// # Examples
/// ```
/// let id = redisson_lock::codec::Uuid::nil();
/// assert_eq!(redisson_lock::codec::JavaCodec::String.encode(id).unwrap().len(), 36);
/// ```
pub use uuid::Uuid;

/// One of Redisson's codecs, as far as map keys and set values go: the bytes
/// [`JavaCodec::encode`] returns are the bytes that codec writes in Java.
///
/// # Examples
/// ```
/// use redisson_lock::codec::JavaCodec;
/// // A Java app on Redisson's default configuration uses Kryo5Codec.
/// let codec = JavaCodec::Kryo5;
/// assert_eq!(codec.java_class(), "org.redisson.codec.Kryo5Codec");
/// assert_eq!(codec.encode("Jack_001")?, b"\x03Jack_00\xb1");
/// # Ok::<(), redisson_lock::codec::CodecError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum JavaCodec {
    /// `org.redisson.client.codec.StringCodec`: the value's `toString()` in UTF-8.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// assert_eq!(JavaCodec::String.encode("订单")?, "订单".as_bytes());
    /// assert_eq!(JavaCodec::String.encode(-7)?, b"-7");
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    String,
    /// `org.redisson.codec.Kryo5Codec`, Redisson's default codec: Kryo 5's class id, then
    /// the value.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// assert_eq!(JavaCodec::Kryo5.encode(7)?, [0x02, 0x0e]);
    /// assert_eq!(JavaCodec::Kryo5.encode(true)?, [0x05, 0x01]);
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    Kryo5,
    /// `org.redisson.codec.JsonJacksonCodec`: Jackson's JSON with Redisson's type
    /// information (every `Long` typed; a `UUID` as [`JsonUuids`] says).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::{JavaCodec, JsonUuids};
    /// let json = JavaCodec::JsonJackson { uuids: JsonUuids::Plain };
    /// assert_eq!(json.encode("o-1")?, br#""o-1""#);
    /// assert_eq!(json.encode(42i64)?, br#"["java.lang.Long",42]"#);
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    JsonJackson {
        /// How the Java side's Redisson version writes a `UUID`.
        uuids: JsonUuids,
    },
}

/// How `JsonJacksonCodec` writes a `java.util.UUID`: the one place where the Redisson
/// versions disagree on a key's bytes (and so on the name of its per-key objects).
///
/// There is no default: a UUID key under the JSON codec hashes differently in the two
/// series, and a wrong guess would name other objects than the Java app's without any
/// error, so the caller says which Redisson the Java side runs ([`JsonUuids::Unknown`]
/// refuses UUIDs). Keys of other types encode the same under both.
///
/// # Examples
/// ```
/// use redisson_lock::codec::Uuid;
/// use redisson_lock::codec::{JavaCodec, JsonUuids};
/// let id = Uuid::nil();
/// let old = JavaCodec::JsonJackson { uuids: JsonUuids::Plain }.encode(id)?;
/// let new = JavaCodec::JsonJackson { uuids: JsonUuids::Typed }.encode(id)?;
/// assert_eq!(old, br#""00000000-0000-0000-0000-000000000000""#);
/// assert_eq!(new, br#"["java.util.UUID","00000000-0000-0000-0000-000000000000"]"#);
/// // Any other key is the same in both.
/// assert_eq!(
///     JavaCodec::JsonJackson { uuids: JsonUuids::Plain }.encode(7)?,
///     JavaCodec::JsonJackson { uuids: JsonUuids::Typed }.encode(7)?,
/// );
/// # Ok::<(), redisson_lock::codec::CodecError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum JsonUuids {
    /// A JSON string, `"123e4567-e89b-12d3-a456-426614174000"`: Redisson before 3.55.0
    /// (checked with 3.23.3).
    Plain,
    /// A typed array, `["java.util.UUID","123e4567-e89b-12d3-a456-426614174000"]`: Redisson
    /// 3.55.0 and later, 4.x included (its `JsonJacksonCodec` adds a UUID mix-in; checked
    /// with 4.7.0).
    Typed,
    /// Not known: a UUID is refused ([`CodecError::Unsupported`]), every other value is
    /// encoded as both series encode it. What a `redisson.yaml` naming `JsonJacksonCodec`
    /// gives when the file does not tell the Java side's series (a file both series read,
    /// or one in 3.x's layout, which 3.55.0 and later read too); say which with
    /// [`ConfigBuilder::codec`](crate::ConfigBuilder::codec) to take UUID keys.
    Unknown,
}

/// A Java map key or set value of one of the types [`JavaCodec::encode`] can write: what
/// Java would box it as.
///
/// Made from Rust values with `From` (`&str`, `&String`, `i32`, `i64`, [`Uuid`], `bool`,
/// `f64`), so `encode` takes them directly. A Rust integer of another width has no
/// conversion on purpose: Java's `Integer` and `Long` encode differently, so say which.
///
/// # Examples
/// ```
/// use redisson_lock::codec::JavaValue;
/// assert_eq!(JavaValue::from("o-1"), JavaValue::String("o-1"));
/// assert_eq!(JavaValue::from(7), JavaValue::Integer(7));
/// assert_eq!(JavaValue::from(7i64), JavaValue::Long(7));
/// assert_eq!(JavaValue::Long(7).java_class(), "java.lang.Long");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum JavaValue<'a> {
    /// `java.lang.String`.
    String(&'a str),
    /// `java.lang.Integer` (an `int` key).
    Integer(i32),
    /// `java.lang.Long` (a `long` key).
    Long(i64),
    /// `java.util.UUID`.
    Uuid(Uuid),
    /// `java.lang.Boolean`.
    Boolean(bool),
    /// `java.lang.Double` (encoded by [`JavaCodec::Kryo5`] only).
    Double(f64),
}

impl JavaValue<'_> {
    /// The Java class this value is boxed as.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::codec::JavaValue::from(true).java_class(), "java.lang.Boolean");
    /// ```
    pub fn java_class(&self) -> &'static str {
        match self {
            JavaValue::String(_) => "java.lang.String",
            JavaValue::Integer(_) => "java.lang.Integer",
            JavaValue::Long(_) => "java.lang.Long",
            JavaValue::Uuid(_) => "java.util.UUID",
            JavaValue::Boolean(_) => "java.lang.Boolean",
            JavaValue::Double(_) => "java.lang.Double",
        }
    }
}

impl<'a> From<&'a str> for JavaValue<'a> {
    fn from(value: &'a str) -> Self {
        JavaValue::String(value)
    }
}

impl<'a> From<&'a String> for JavaValue<'a> {
    fn from(value: &'a String) -> Self {
        JavaValue::String(value)
    }
}

impl From<i32> for JavaValue<'_> {
    fn from(value: i32) -> Self {
        JavaValue::Integer(value)
    }
}

impl From<i64> for JavaValue<'_> {
    fn from(value: i64) -> Self {
        JavaValue::Long(value)
    }
}

impl From<Uuid> for JavaValue<'_> {
    fn from(value: Uuid) -> Self {
        JavaValue::Uuid(value)
    }
}

impl From<&Uuid> for JavaValue<'_> {
    fn from(value: &Uuid) -> Self {
        JavaValue::Uuid(*value)
    }
}

impl From<bool> for JavaValue<'_> {
    fn from(value: bool) -> Self {
        JavaValue::Boolean(value)
    }
}

impl From<f64> for JavaValue<'_> {
    fn from(value: f64) -> Self {
        JavaValue::Double(value)
    }
}

/// Why a value cannot be encoded as the Java codec would: nothing was produced.
///
/// Converts into [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) with `?` in
/// code that returns this crate's [`Result`](crate::Result).
///
/// # Examples
/// ```
/// use redisson_lock::codec::{CodecError, JavaCodec};
/// let error = JavaCodec::String.encode(1.5).unwrap_err();
/// assert!(matches!(error, CodecError::Unsupported { java_class: "java.lang.Double", .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The codec writes this type in a form this crate does not reproduce byte for byte
    /// (a `Double` under `StringCodec` or `JsonJacksonCodec`: Java's `Double.toString`).
    #[error("{codec} cannot encode a {java_class} byte for byte here: {reason}")]
    Unsupported {
        /// The codec's Java class name, e.g. `StringCodec`.
        codec: &'static str,
        /// The value's Java class, e.g. `java.lang.Double`.
        java_class: &'static str,
        /// Why, and what to use instead.
        reason: &'static str,
    },
    /// The encoded value would be longer than a Java buffer can hold (2^31 − 1 bytes), so
    /// no Java app can have such a key.
    #[error("a {java_class} of {len} encoded bytes is longer than Java can hold (2^31 - 1)")]
    TooLong {
        /// The value's Java class.
        java_class: &'static str,
        /// Its length in bytes (UTF-8 for a string that was refused before encoding).
        len: usize,
    },
}

impl From<CodecError> for crate::error::Error {
    fn from(error: CodecError) -> crate::error::Error {
        crate::error::Error::InvalidArgument(error.to_string())
    }
}

/// The refusal of a `Double` by a codec that writes Java's `Double.toString` text.
pub(super) fn double_as_text(codec: JavaCodec) -> CodecError {
    CodecError::Unsupported {
        codec: codec.simple_name(),
        java_class: "java.lang.Double",
        reason: "it writes Java's Double.toString text, whose digits differ from Rust's for \
                 some values and changed in JDK 19; use a String, Integer or Long key, or \
                 Kryo5Codec",
    }
}
