//! [`PermitId`]: a permit's id, 16 bytes in Redis, 32 lowercase hex digits to people (as
//! Redisson shows it).

use std::fmt;
use std::str::FromStr;

/// The id of one permit of a [`PermitExpirableSemaphore`](crate::PermitExpirableSemaphore).
///
/// In Redis it is the permit's member in the sorted set `{N}:timeout`: 16 raw bytes, as
/// Redisson stores its ids (docs/protocol.md §20.1). People and Java code see it as 32
/// lowercase hex digits, which is what [`Display`](fmt::Display) writes and
/// [`FromStr`] reads: an id printed by this crate can be handed to a Java app's
/// `release(String)`, and the other way round.
///
/// # Examples
/// ```
/// use redisson_lock::synchronizers::PermitId;
/// let id: PermitId = "1eb2488e6f9d590b9cc83be240eff4b9".parse()?;
/// assert_eq!(id.as_bytes()[..2], [0x1e, 0xb2]);
/// assert_eq!(id.to_string(), "1eb2488e6f9d590b9cc83be240eff4b9");
/// assert!("not-an-id".parse::<PermitId>().is_err());
/// # Ok::<(), redisson_lock::synchronizers::PermitIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PermitId([u8; 16]);

impl PermitId {
    /// The id with these 16 bytes (the member stored in Redis).
    ///
    /// # Examples
    /// ```
    /// let id = redisson_lock::synchronizers::PermitId::from_bytes([0xab; 16]);
    /// assert_eq!(id.to_string(), "ab".repeat(16));
    /// ```
    pub const fn from_bytes(bytes: [u8; 16]) -> PermitId {
        PermitId(bytes)
    }

    /// The 16 bytes stored in Redis.
    ///
    /// # Examples
    /// ```
    /// let id = redisson_lock::synchronizers::PermitId::from_bytes([7; 16]);
    /// assert_eq!(id.as_bytes(), &[7; 16]);
    /// ```
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The id as a script argument (the raw bytes).
    pub(crate) fn value(&self) -> fred::prelude::Value {
        fred::prelude::Value::Bytes(fred::bytes::Bytes::copy_from_slice(&self.0))
    }

    /// A 64-bit digest of the id, unique among this client's ids (they share their first
    /// half and differ in the second): the owner a watchdog-kept permit is registered as.
    pub(crate) fn digest(&self) -> u64 {
        let (a, b) = self.0.split_at(8);
        let a = u64::from_be_bytes(a.try_into().unwrap_or_default());
        let b = u64::from_be_bytes(b.try_into().unwrap_or_default());
        a ^ b
    }
}

impl fmt::Display for PermitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for PermitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PermitId({self})")
    }
}

/// A permit id that is not 32 hex digits, from [`PermitId::from_str`].
///
/// # Examples
/// ```
/// let error = "abc".parse::<redisson_lock::synchronizers::PermitId>().unwrap_err();
/// assert!(error.to_string().contains("32 hex digits"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a permit id: a permit id is 32 hex digits (16 bytes)")]
pub struct PermitIdError {
    /// What was given (at most 64 characters of it).
    pub given: String,
}

impl FromStr for PermitId {
    type Err = PermitIdError;

    /// Reads 32 hex digits (either case; Redisson writes lowercase).
    fn from_str(text: &str) -> Result<PermitId, PermitIdError> {
        let error = || PermitIdError {
            given: text.chars().take(64).collect(),
        };
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(error());
        }
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let high = (pair[0] as char).to_digit(16).ok_or_else(error)?;
            let low = (pair[1] as char).to_digit(16).ok_or_else(error)?;
            *byte = (high * 16 + low) as u8;
        }
        Ok(PermitId(bytes))
    }
}

impl From<PermitIdError> for crate::error::Error {
    fn from(error: PermitIdError) -> crate::error::Error {
        crate::error::Error::InvalidArgument(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_malformed_ids() {
        let id: PermitId = "1EB2488E6F9D590B9CC83BE240EFF4B9".parse().unwrap();
        assert_eq!(id.to_string(), "1eb2488e6f9d590b9cc83be240eff4b9");
        assert_eq!(id.as_bytes()[15], 0xb9);
        for bad in [
            "",
            "1eb2",
            "1eb2488e6f9d590b9cc83be240eff4bz",
            "é".repeat(16).as_str(),
        ] {
            assert!(bad.parse::<PermitId>().is_err(), "{bad}");
        }
        assert_eq!(
            format!("{:?}", PermitId::from_bytes([0; 16])),
            format!("PermitId({})", "0".repeat(32))
        );
    }
}
