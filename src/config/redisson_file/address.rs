//! A server address as Redisson's `RedisURI` reads it when it connects (the file's loader
//! keeps the text as is): `redis://` or `rediss://` (4.x also `valkey://`, `valkeys://`),
//! a port, and credentials in the address (`rediss://user:pass@host:6380`), which
//! Redisson prefers to the `username` / `password` settings. 3.x takes `user:pass` as
//! written; 4.x URL-decodes both and reads a lone `secret@` as the password.

use super::scalar::Redisson;

/// An address, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Address {
    pub(super) tls: bool,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
}

/// Why an address cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AddressError {
    /// Redisson itself refuses it when it connects.
    Refused(String),
    /// Redisson takes it; this crate cannot (a Unix socket).
    Unsupported(String),
}

/// Parses `text` as `version`'s `RedisURI` does. Messages quote the address with its
/// password hidden ([`redact`]).
pub(super) fn parse(text: &str, version: Redisson) -> Result<Address, AddressError> {
    let refused = |why: &str| {
        AddressError::Refused(format!(
            "`{}`: {why} ({} refuses it when it connects)",
            redact(text),
            version.name()
        ))
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err(refused("not `redis://host:port`"));
    };
    let tls = match (scheme, version) {
        ("redis", _) | ("valkey", Redisson::V4) => false,
        ("rediss", _) | ("valkeys", Redisson::V4) => true,
        ("redis+uds" | "valkey+uds", Redisson::V4) => {
            return Err(AddressError::Unsupported(format!(
                "`{}`: a Unix socket; give the crate a `redis+unix://` URL in code",
                redact(text)
            )));
        }
        _ => {
            return Err(refused(match version {
                Redisson::V3 => "the scheme must be `redis://` or `rediss://` (lower case)",
                Redisson::V4 => {
                    "the scheme must be `redis://`, `rediss://`, `valkey://` or `valkeys://` \
                     (lower case)"
                }
            }));
        }
    };
    // `RedisURI`: fewer than three `:`-separated parts (Java's split drops trailing
    // empty ones) is "Redis url doesn't contain a port".
    if text.trim_end_matches(':').split(':').count() < 3 {
        return Err(refused("no port (Redisson needs `host:port`)"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (userinfo, host_port) = match authority.split_once('@') {
        Some((_, after)) if after.contains('@') => {
            return Err(refused(
                "more than one `@` (a password with `@` belongs in the `password` setting)",
            ));
        }
        Some((userinfo, after)) => (Some(userinfo), after),
        None => (None, authority),
    };
    let (username, password) = match userinfo {
        None => (None, None),
        Some(userinfo) => credentials(userinfo, version).map_err(|why| refused(&why))?,
    };
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once("]:") {
            Some((host, port)) => (host, port),
            None => return Err(refused("no port after the IPv6 address")),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, port),
            None => return Err(refused("no port")),
        }
    };
    if host.is_empty() {
        return Err(refused("no host"));
    }
    let port = match port.parse::<u16>() {
        Ok(port) if port > 0 => port,
        _ => return Err(refused("the port is not a number from 1 to 65535")),
    };
    Ok(Address {
        tls,
        host: host.to_owned(),
        port,
        username,
        password,
    })
}

type Credentials = (Option<String>, Option<String>);

/// `user:pass` (or 4.x's lone `pass`) as the version reads it.
fn credentials(userinfo: &str, version: Redisson) -> Result<Credentials, String> {
    match version {
        Redisson::V3 => Ok(match userinfo.split_once(':') {
            Some((user, pass)) => (
                (!user.is_empty()).then(|| user.to_owned()),
                Some(pass.to_owned()),
            ),
            None => (None, None),
        }),
        Redisson::V4 => match userinfo.split_once(':') {
            Some((user, pass)) => Ok((
                if user.is_empty() {
                    None
                } else {
                    Some(url_decode(user)?)
                },
                Some(url_decode(pass)?),
            )),
            None => Ok((None, Some(url_decode(userinfo)?))),
        },
    }
}

/// Java's `URLDecoder.decode(text, "UTF-8")`: `+` is a space, `%XX` a byte.
fn url_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or("a `%` in the credentials is not followed by two hex digits")?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `text` with the password of any `user:pass@` (or `pass@`) replaced by `***`.
pub(super) fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return text.to_owned();
    };
    let userinfo = &rest[..at];
    let shown = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_owned(),
    };
    format!("{scheme}://{shown}{}", &rest[at..])
}

/// The passwords an address may carry, as either version reads them (for masking).
pub(super) fn secrets(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for version in Redisson::ALL {
        if let Ok(Address {
            password: Some(p), ..
        }) = parse(text, version)
        {
            found.push(p);
        }
    }
    if let Some((_, rest)) = text.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            found.push(
                userinfo
                    .split_once(':')
                    .map_or(userinfo, |(_, p)| p)
                    .to_owned(),
            );
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use Redisson::*;

    fn ok(text: &str, version: Redisson) -> Address {
        parse(text, version).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    #[test]
    fn credentials_in_the_address() {
        for v in [V3, V4] {
            let a = ok("rediss://app:s3cret@redis.example.com:6380", v);
            assert_eq!(
                a,
                Address {
                    tls: true,
                    host: "redis.example.com".into(),
                    port: 6380,
                    username: Some("app".into()),
                    password: Some("s3cret".into()),
                }
            );
            let a = ok("redis://:pw@127.0.0.1:6379", v);
            assert_eq!((a.username, a.password.as_deref()), (None, Some("pw")));
        }
        // A lone `secret@`: 4.x's password, nothing for 3.x.
        assert_eq!(ok("redis://pw@h:1", V4).password.as_deref(), Some("pw"));
        assert_eq!(ok("redis://pw@h:1", V3).password, None);
        // %-escapes: decoded by 4.x only.
        assert_eq!(
            ok("redis://u:p%40ss@h:1", V4).password.as_deref(),
            Some("p@ss")
        );
        assert_eq!(
            ok("redis://u:p%40ss@h:1", V3).password.as_deref(),
            Some("p%40ss")
        );
        assert!(parse("redis://u:p@ss@h:1", V4).is_err());
    }

    #[test]
    fn what_redisson_refuses_when_it_connects() {
        for v in [V3, V4] {
            assert!(matches!(
                parse("redis://h", v),
                Err(AddressError::Refused(_))
            ));
            assert!(matches!(
                parse("redis://h:", v),
                Err(AddressError::Refused(_))
            ));
            assert!(matches!(
                parse("127.0.0.1:6379", v),
                Err(AddressError::Refused(_))
            ));
            assert!(matches!(
                parse("REDIS://h:1", v),
                Err(AddressError::Refused(_))
            ));
            assert!(matches!(
                parse("redis://u:p@h", v),
                Err(AddressError::Refused(_))
            ));
            assert_eq!(ok("redis://[::1]:7000", v).host, "::1");
        }
        assert!(parse("valkeys://h:1", V3).is_err());
        assert!(ok("valkeys://h:1", V4).tls);
        assert!(matches!(
            parse("redis+uds:///tmp/r.sock", V4),
            Err(AddressError::Unsupported(_))
        ));
    }

    #[test]
    fn errors_hide_the_password() {
        assert_eq!(redact("rediss://u:s3cret@h:1"), "rediss://u:***@h:1");
        assert_eq!(redact("redis://s3cret@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        let Err(AddressError::Refused(message)) = parse("redis://u:s3cret@h", V4) else {
            panic!()
        };
        assert!(!message.contains("s3cret"), "{message}");
    }
}
