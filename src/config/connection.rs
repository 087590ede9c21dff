//! What a URL, the TLS options and the credentials put into fred's configuration: the
//! scheme check, TLS refused without a TLS feature (never a plaintext connection), and
//! the credentials of data nodes and sentinels.

use crate::config::secrets::redacted_url;
use crate::config::tls::TlsOptions;
use crate::error::{Error, Result};

use super::defaults::URL_SCHEMES;

/// The scheme of `url` when it asks for TLS (`rediss*`, `valkeys*`).
pub(super) fn tls_scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once("://")?;
    let lower = scheme.to_ascii_lowercase();
    (lower.starts_with("rediss") || lower.starts_with("valkeys")).then_some(scheme)
}

/// Puts the TLS connector built from `options` into fred's config (for a TLS URL, in
/// place of fred's default, which picks its library by its own rule). A fred config given
/// with its own TLS settings and no `ConfigBuilder::tls` keeps them: this is not called.
#[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
pub(super) fn apply_tls(
    redis: &mut fred::prelude::Config,
    options: &TlsOptions,
    backend: crate::config::tls::TlsBackend,
) -> Result<()> {
    redis.tls = Some(crate::config::tls::fred_tls(options, backend)?);
    Ok(())
}

/// Without a TLS feature [`TlsOptions::check_enabled`] has already refused.
#[cfg(not(any(feature = "tls-rustls", feature = "tls-native-tls")))]
pub(super) fn apply_tls(
    _redis: &mut fred::prelude::Config,
    _options: &TlsOptions,
    _backend: crate::config::tls::TlsBackend,
) -> Result<()> {
    Ok(())
}

/// Credentials given to the builder win over the URL's; sentinels without their own are
/// sent the data nodes' (as before fred's `sentinel-auth`).
pub(super) fn apply_credentials(
    redis: &mut fred::prelude::Config,
    username: Option<String>,
    password: Option<String>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
) {
    if username.is_some() {
        redis.username = username;
    }
    if password.is_some() {
        redis.password = password;
    }
    if let fred::types::config::ServerConfig::Sentinel {
        username: s_user,
        password: s_pass,
        ..
    } = &mut redis.server
    {
        if sentinel_password.is_some() {
            *s_user = sentinel_username;
            *s_pass = sentinel_password;
        } else if s_pass.is_none() && s_user.is_none() {
            s_user.clone_from(&redis.username);
            s_pass.clone_from(&redis.password);
        }
    }
}

/// Refuses a URL whose scheme is not a Redis one, naming the scheme (fred reads any other
/// scheme as a plain server).
pub(super) fn check_scheme(url: &str) -> Result<()> {
    let Some((scheme, _)) = url.split_once("://") else {
        return Err(Error::invalid(format!(
            "Redis URL `{}` has no scheme; expected one of {}",
            shorten(&redacted_url(url)),
            URL_SCHEMES.join(", ")
        )));
    };
    if URL_SCHEMES
        .iter()
        .any(|known| known.eq_ignore_ascii_case(scheme))
    {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "Redis URL scheme `{}` is not supported; expected one of {}",
        shorten(scheme),
        URL_SCHEMES.join(", ")
    )))
}

/// At most 64 characters of `text`, for error messages.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::built::Config;
    use std::time::Duration;

    #[test]
    fn url_schemes_are_checked() {
        for scheme in URL_SCHEMES {
            if scheme.ends_with("+unix") {
                continue; // fred needs its unix-sockets feature for these
            }
            let url = if scheme.ends_with("-sentinel") {
                format!("{scheme}://h:26379?sentinelServiceName=m")
            } else {
                format!("{scheme}://h:6379")
            };
            let tls = scheme.starts_with("rediss") || scheme.starts_with("valkeys");
            let tls_built = cfg!(any(feature = "tls-rustls", feature = "tls-native-tls"));
            // Without a TLS feature a TLS URL is refused, never connected in plaintext.
            assert_eq!(Config::from_url(&url).is_ok(), !tls || tls_built, "{url}");
        }
        let refused = Config::from_url("http://nope").unwrap_err().to_string();
        assert!(refused.contains("`http`"), "{refused}");
        assert!(Config::from_url("REDIS://h").is_ok());
        assert!(Config::from_url("h:6379").is_err());
        let sentinel = Config::from_url("redis-sentinel://h:1?sentinelServiceName=m").unwrap();
        assert!(sentinel.waits_for_replicas());
        assert!(!Config::from_url("redis://h").unwrap().waits_for_replicas());
        let off = Config::builder()
            .url("redis-cluster://h:1")
            .check_lock_synced_replicas(false)
            .build()
            .unwrap();
        assert!(!off.waits_for_replicas());
        let bad = Config::builder()
            .url("redis://h")
            .replicas_sync_timeout(Duration::ZERO)
            .build();
        assert!(matches!(bad, Err(Error::InvalidArgument(_))));
    }
}
