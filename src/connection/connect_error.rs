//! The error of a client's first connection: one line that names what it tried to reach
//! (a server, a cluster's seed nodes, the Sentinels and the master's name) and why, never
//! a password and never fred's debug text; a failed TLS handshake as [`Error::Tls`].

use crate::config::Config;
use crate::error::Error;

/// The error of a first connection, in one line that names the address(es) tried (host
/// and port only: a fred `Server` holds no password) and the reason, without Rust debug
/// output: `Redis error: IO Error: cannot connect to Redis at 127.0.0.1:1: Connection
/// refused (os error 111)`. With TLS on, a failed handshake (a certificate not trusted, a
/// client certificate missing or refused: the server then resets the connection) is
/// [`Error::Tls`]; anything else stays [`Error::Redis`], of fred's kind.
pub(crate) fn connect_error(config: &Config, error: fred::error::Error) -> Error {
    let details = error.details();
    let handshake = config.uses_tls()
        && match error.kind() {
            #[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
            fred::error::ErrorKind::Tls => true,
            // fred keeps an I/O error's text only: rustls reports a refused certificate or
            // a fatal alert as invalid data, OpenSSL as an `Ssl` error; a server that
            // refuses the handshake may also just reset the connection.
            fred::error::ErrorKind::IO => [
                "InvalidData",
                "Ssl(",
                "ConnectionReset",
                "BrokenPipe",
                "UnexpectedEof",
            ]
            .iter()
            .any(|sign| details.contains(sign)),
            _ => false,
        };
    let target = connect_target(&config.redis.server);
    let reason = readable_reason(details);
    if handshake {
        Error::Tls {
            reason: format!(
                "{target}: {reason} (check the CA the client trusts, the host name in the URL \
                 against the server's certificate, and whether the server requires a client \
                 certificate)"
            ),
        }
    } else {
        Error::Redis(fred::error::Error::new(
            error.kind().clone(),
            format!("cannot connect to {target}: {reason}"),
        ))
    }
}

/// What a first connection tried to reach, for its error: `Redis at host:port`, the
/// cluster's or the Sentinels' listed addresses; an IPv6 host in brackets.
fn connect_target(server: &fred::types::config::ServerConfig) -> String {
    use fred::types::config::ServerConfig;
    let list = |hosts: &[fred::types::config::Server]| {
        hosts
            .iter()
            .map(|host| {
                if host.host.contains(':') && !host.host.starts_with('[') {
                    format!("[{}]:{}", host.host, host.port)
                } else {
                    format!("{}:{}", host.host, host.port)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match server {
        ServerConfig::Centralized { server } => {
            format!("Redis at {}", list(std::slice::from_ref(server)))
        }
        ServerConfig::Clustered { hosts, .. } => format!("Redis Cluster at {}", list(hosts)),
        ServerConfig::Sentinel {
            hosts,
            service_name,
            ..
        } => format!(
            "Redis master `{service_name}` through the Sentinels at {}",
            list(hosts)
        ),
        #[allow(unreachable_patterns)] // `Unix`, with fred's `unix-sockets` feature
        other => format!("Redis at {}", list(&other.hosts())),
    }
}

/// fred's error text, readable: fred keeps an I/O error as its `Debug` text
/// (`Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }`), shown
/// here as the I/O error's own message (`Connection refused (os error 111)`); any other
/// text is kept as it is.
fn readable_reason(details: &str) -> String {
    fn unquoted(text: &str) -> Option<String> {
        let inner = text.trim().strip_prefix('"')?.strip_suffix('"')?;
        Some(inner.replace("\\\"", "\"").replace("\\\\", "\\"))
    }
    if let Some(fields) = details
        .strip_prefix("Os {")
        .and_then(|r| r.strip_suffix('}'))
    {
        let code = fields
            .split_once("code: ")
            .and_then(|(_, rest)| rest.split(',').next());
        let message = fields
            .split_once("message: ")
            .and_then(|(_, rest)| unquoted(rest));
        if let (Some(code), Some(message)) = (code, message) {
            return format!("{message} (os error {})", code.trim());
        }
    }
    if let Some(fields) = details
        .strip_prefix("Custom {")
        .and_then(|r| r.strip_suffix('}'))
        && let Some((_, error)) = fields.split_once("error: ")
    {
        return unquoted(error).unwrap_or_else(|| error.trim().to_owned());
    }
    if let Some(kind) = details
        .strip_prefix("Kind(")
        .and_then(|r| r.strip_suffix(')'))
    {
        // `Kind(TimedOut)`: the kind's name, in words ("timed out").
        let mut words = String::new();
        for (i, c) in kind.char_indices() {
            if c.is_uppercase() && i > 0 {
                words.push(' ');
            }
            words.extend(c.to_lowercase());
        }
        return words;
    }
    details.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fred_io_errors_read_as_their_message() {
        for (details, shown) in [
            (
                r#"Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }"#,
                "Connection refused (os error 111)",
            ),
            (
                r#"Custom { kind: Uncategorized, error: "failed to lookup address information: Name or service not known" }"#,
                "failed to lookup address information: Name or service not known",
            ),
            ("Kind(TimedOut)", "timed out"),
            ("Failed to connect.", "Failed to connect."),
        ] {
            assert_eq!(readable_reason(details), shown, "{details}");
        }
    }

    #[test]
    fn targets_name_every_address() {
        let target = |url: &str| connect_target(&Config::from_url(url).unwrap().redis.server);
        assert_eq!(
            target("redis://:pw@10.0.0.5:6380/2"),
            "Redis at 10.0.0.5:6380"
        );
        let cluster = target("redis-cluster://a:7000?node=b:7001");
        assert!(cluster.starts_with("Redis Cluster at "), "{cluster}");
        assert!(
            cluster.contains("a:7000") && cluster.contains("b:7001"),
            "{cluster}"
        );
        assert_eq!(target("redis://[::1]:6379"), "Redis at [::1]:6379");
        assert_eq!(
            target("redis-sentinel://:pw@s1:26379?sentinelServiceName=m&sentinelPassword=x"),
            "Redis master `m` through the Sentinels at s1:26379"
        );
    }
}
