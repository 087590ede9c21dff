//! [`EntryKey`]: what can name a map key or a set value, and [`KeyBytes`], a key already
//! encoded by the Java side's codec.

use crate::codec::{CodecError, JavaCodec, JavaValue};

/// A map key or set value as [`EntryObjects`](crate::EntryObjects) takes it: anything
/// [`JavaCodec::encode`] takes (`&str`, `i32`, `i64`, `Uuid`, `bool`, `f64`: the Java
/// `String`, `Integer`, `Long`, `UUID`, `Boolean`, `Double`), encoded with the map's
/// codec, or [`KeyBytes`], bytes encoded already.
///
/// Implement it for a key type of your own to write `map.get_lock(order_id)`: encode what
/// the Java side's key is.
///
/// # Examples
/// ```
/// use redisson_lock::names::{EntryKey, KeyBytes};
/// use redisson_lock::codec::{CodecError, JavaCodec};
///
/// // Java's key is a `Long` order id.
/// struct OrderId(i64);
///
/// impl EntryKey for OrderId {
///     fn encode_with(self, codec: JavaCodec) -> Result<Vec<u8>, CodecError> {
///         codec.encode(self.0)
///     }
/// }
///
/// assert_eq!(OrderId(42).encode_with(JavaCodec::Kryo5)?, [0x09, 0x54]);
/// assert_eq!("o-1".encode_with(JavaCodec::String)?, b"o-1");
/// assert_eq!(KeyBytes(b"\x03o-\xb1").encode_with(JavaCodec::String)?, b"\x03o-\xb1");
/// # Ok::<(), CodecError>(())
/// ```
pub trait EntryKey {
    /// The key's bytes as `codec` writes them in Java (the map's key encoder, or the
    /// set's value encoder: the same bytes for every [`JavaCodec`]).
    ///
    /// # Errors
    /// [`CodecError`] when `codec` cannot write this value byte for byte.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// use redisson_lock::names::EntryKey;
    /// assert_eq!("o-1".encode_with(JavaCodec::String)?, b"o-1");
    /// # Ok::<(), redisson_lock::codec::CodecError>(())
    /// ```
    fn encode_with(self, codec: JavaCodec) -> Result<Vec<u8>, CodecError>;
}

impl<'a, T: Into<JavaValue<'a>>> EntryKey for T {
    fn encode_with(self, codec: JavaCodec) -> Result<Vec<u8>, CodecError> {
        codec.encode(self)
    }
}

/// A key given as the bytes the Java side's codec wrote for it, used as they are
/// (whatever the map's codec): for a codec or a key type [`JavaCodec`] does not cover,
/// e.g. bytes read from Java's own `codec.getMapKeyEncoder().encode(key)`.
///
/// # Examples
/// ```no_run
/// # fn demo(client: redisson_lock::Client) -> Result<(), redisson_lock::codec::CodecError> {
/// use redisson_lock::names::KeyBytes;
/// // Kryo5Codec's bytes of the String "o-1", from elsewhere.
/// let lock = client.map("orders").get_lock(KeyBytes([0x03, 0x6f, 0x2d, 0xb1]))?;
/// assert_eq!(lock.raw_name(), "{orders}:SqBMO/H/ZbaHHTFor61/4A:lock");
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyBytes<B: AsRef<[u8]>>(pub B);

impl<B: AsRef<[u8]>> EntryKey for KeyBytes<B> {
    fn encode_with(self, _codec: JavaCodec) -> Result<Vec<u8>, CodecError> {
        Ok(self.0.as_ref().to_vec())
    }
}
