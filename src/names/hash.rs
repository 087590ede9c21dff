//! Redisson's name hash (`org.redisson.misc.Hash.hash128toBase64`): HighwayHash-128 with
//! Redisson's fixed key, its two 64-bit halves big-endian, standard Base64 without the
//! trailing `==`: 22 characters of `A-Za-z0-9+/`. It names the faster multi-lock's
//! values (their field ids) and the per-key objects of maps and sets (the middle part of
//! `{map}:<hash>:lock`).

use highway::{HighwayHash, HighwayHasher, Key};

/// Redisson's HighwayHash key (`misc.Hash`), as four 64-bit words.
pub(crate) const HASH_KEY: [u64; 4] = [
    0x9e37_79b9_7f4a_7c15,
    0xf39c_c060_5ced_c834,
    0x1082_276b_f3a2_7251,
    0xf86c_6a11_d0c1_8e95,
];

/// The hash of `bytes` as Redisson writes it into names (see the module docs).
pub(crate) fn hash128_base64(bytes: &[u8]) -> String {
    let [h0, h1] = HighwayHasher::new(Key(HASH_KEY)).hash128(bytes);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&h0.to_be_bytes());
    out[8..].copy_from_slice(&h1.to_be_bytes());
    base64_16(&out)
}

/// Standard Base64 of 16 bytes, without padding (22 characters).
fn base64_16(bytes: &[u8; 16]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(22);
    let sextet = |n: u32| char::from(ALPHABET[(n & 0x3f) as usize]);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(sextet(n >> 18));
        out.push(sextet(n >> 12));
        if chunk.len() > 1 {
            out.push(sextet(n >> 6));
        }
        if chunk.len() > 2 {
            out.push(sextet(n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_of_sixteen_bytes() {
        // h0/h1 of "Jack_001" from the Redisson vectors.
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&0xee93680dd8b3572du64.to_be_bytes());
        bytes[8..].copy_from_slice(&0xb163bf7631a16ffbu64.to_be_bytes());
        assert_eq!(base64_16(&bytes), "7pNoDdizVy2xY792MaFv+w");
        assert_eq!(base64_16(&[0xff; 16]), "/////////////////////w");
    }

    #[test]
    fn redisson_vectors() {
        assert_eq!(hash128_base64(b"Jack_001"), "7pNoDdizVy2xY792MaFv+w");
        assert_eq!(hash128_base64(b""), "t6rZwibGo2uy1OSmNVe8pg");
        assert_eq!(hash128_base64(b"o-1"), "SCr6VJrRQp772OGd8PWr8Q");
    }
}
