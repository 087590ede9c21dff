//! A lock hash's fields read as its holders: `<client-uuid>:<thread-id>` fields (`:write`
//! appended for a read-write lock's writer) holding hold counts; anything else is not a
//! lock.

use redisson_lock::fred::prelude::{Client as Redis, Error as RedisError, HashesInterface, Value};

use super::{Holder, Kind, escape, value_text};

/// `HGETALL` as raw (field, value) pairs, sorted by field.
pub(super) async fn hash_fields(
    redis: &Redis,
    name: &str,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>, RedisError> {
    let map = redis.hgetall::<Value, _>(name).await?.into_map()?;
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = map
        .inner()
        .into_iter()
        .map(|(field, value)| {
            let value = value
                .as_bytes()
                .map(<[u8]>::to_vec)
                .unwrap_or_else(|| value_text(&value).into_bytes());
            (field.as_bytes().to_vec(), value)
        })
        .collect();
    fields.sort();
    Ok(fields)
}

/// The holders of a lock hash, or why the hash is not a lock.
pub(super) fn parse_holders(
    kind: Kind,
    mode: Option<&str>,
    fields: &[(Vec<u8>, Vec<u8>)],
) -> Result<Vec<Holder>, String> {
    if let Some(mode) = mode
        && mode != "read"
        && mode != "write"
    {
        return Err(format!(
            "a hash with a `mode` field of {mode:?}: a read-write lock's mode is \"read\" \
                 or \"write\""
        ));
    }
    let mut holders = Vec::new();
    for (field, value) in fields {
        if kind == Kind::ReadWrite && field.as_slice() == b"mode" {
            continue;
        }
        let shown = String::from_utf8_lossy(field).into_owned();
        let holds = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| {
                format!(
                    "a hash whose field {} has the value {}, not a hold count",
                    escape(&shown),
                    escape(&String::from_utf8_lossy(value))
                )
            })?;
        let (base, role) = match shown.strip_suffix(":write") {
            Some(base) if kind == Kind::ReadWrite => (base, Some("write")),
            _ if kind == Kind::ReadWrite => (shown.as_str(), Some("read")),
            _ => (shown.as_str(), None),
        };
        if !is_owner_field(base) {
            return Err(format!(
                "a hash with the field {}: lock fields are <client-uuid>:<thread-id>{}",
                escape(&shown),
                if kind == Kind::ReadWrite {
                    " (\":write\" appended for the writer)"
                } else {
                    ""
                }
            ));
        }
        let (client_id, owner) = split_field(base);
        holders.push(Holder {
            field: shown.clone(),
            client_id: client_id.to_owned(),
            owner: owner.to_owned(),
            holds,
            role,
            read_hold_ttls_ms: Vec::new(),
        });
    }
    // Writer first, then readers.
    holders.sort_by_key(|h| (h.role != Some("write"), h.field.clone()));
    Ok(holders)
}

/// `<uuid>:<digits>`: a Redisson client id and a thread (or owner) id.
pub(super) fn is_owner_field(field: &str) -> bool {
    let Some((uuid, owner)) = field.rsplit_once(':') else {
        return false;
    };
    let owner_ok = !owner.is_empty() && owner.bytes().all(|b| b.is_ascii_digit());
    owner_ok && is_uuid(uuid)
}

fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// `(client id, owner)` of a field `<uuid>:<owner>`; the whole field as client id when it
/// has no `:`.
pub(super) fn split_field(field: &str) -> (&str, &str) {
    field.rsplit_once(':').unwrap_or((field, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_fields() {
        assert!(is_owner_field("6e3d30b7-83b1-433a-9335-5e8b9916d3ac:731"));
        assert!(!is_owner_field("6e3d30b7-83b1-433a-9335-5e8b9916d3ac:x"));
        assert!(!is_owner_field("6e3d30b7-83b1-433a-9335-5e8b9916d3ac"));
        assert!(!is_owner_field("name:1"));
        assert_eq!(split_field("u:1:2"), ("u:1", "2"));
    }
}
