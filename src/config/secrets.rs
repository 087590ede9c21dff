//! Keeping passwords out of what the crate shows: URLs, `Debug` output and error
//! messages print `<redacted>` where a password was.

/// What stands where a password was.
pub(crate) const REDACTED: &str = "<redacted>";

/// `url` with the password of its user part and the value of a `sentinelPassword` query
/// parameter replaced by `<redacted>`, safe to log or print. A URL without them is
/// returned as it is.
///
/// # Examples
/// ```
/// use redisson_lock::config::redacted_url;
/// assert_eq!(redacted_url("rediss://app:s3cret@redis:6380/0"), "rediss://app:<redacted>@redis:6380/0");
/// assert_eq!(redacted_url("redis://:s3cret@redis"), "redis://:<redacted>@redis");
/// assert_eq!(redacted_url("redis://redis:6379"), "redis://redis:6379");
/// assert_eq!(
///     redacted_url("redis-sentinel://s:26379?sentinelServiceName=m&sentinelPassword=pw"),
///     "redis-sentinel://s:26379?sentinelServiceName=m&sentinelPassword=<redacted>"
/// );
/// ```
pub fn redacted_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let rest = match url.split_once("://") {
        Some((scheme, rest)) => {
            out.push_str(scheme);
            out.push_str("://");
            rest
        }
        None => url,
    };
    // The authority ends at the first '/', '?' or '#'; its user part at its last '@'.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            match user_info.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(REDACTED);
                }
                // A lone user part may be a password given without a user name.
                None if !user_info.is_empty() => out.push_str(REDACTED),
                None => {}
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    out.push_str(&redact_query(tail));
    out
}

/// The query's secret parameters' values redacted.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((query, fragment)) => (query, Some(fragment)),
        None => (query, None),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("sentinelPassword") => {
                format!("{key}={REDACTED}")
            }
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{path}?{}", pairs.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// The passwords a URL carries (user part, `sentinelPassword`), as written.
fn url_passwords(url: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if let Some((user_info, _)) = rest[..authority_end].rsplit_once('@') {
        let password = user_info.split_once(':').map_or(user_info, |(_, p)| p);
        if !password.is_empty() {
            found.push(password);
        }
    }
    if let Some((_, query)) = rest.split_once('?') {
        for pair in query.split(['&', '#']) {
            if let Some((key, value)) = pair.split_once('=')
                && key.eq_ignore_ascii_case("sentinelPassword")
                && !value.is_empty()
            {
                found.push(value);
            }
        }
    }
    found
}

/// `message` with every password of `url` in it replaced (for errors that quote input).
pub(crate) fn redact_error(message: &str, url: &str) -> String {
    url_passwords(url)
        .into_iter()
        .fold(message.to_owned(), |text, password| {
            text.replace(password, REDACTED)
        })
}

/// A copy of fred's config whose passwords read `<redacted>`, for `Debug`.
pub(crate) fn redacted_fred_config(config: &fred::prelude::Config) -> fred::prelude::Config {
    let mut shown = config.clone();
    if shown.password.is_some() {
        shown.password = Some(REDACTED.to_owned());
    }
    if let fred::types::config::ServerConfig::Sentinel { password, .. } = &mut shown.server
        && password.is_some()
    {
        *password = Some(REDACTED.to_owned());
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords() {
        for (url, shown) in [
            ("redis://u:p@h:1/2?x=y", "redis://u:<redacted>@h:1/2?x=y"),
            ("rediss://p@h", "rediss://<redacted>@h"),
            ("redis://h", "redis://h"),
            ("redis://u:p:q@h", "redis://u:<redacted>@h"),
            ("redis://u:p@w@h", "redis://u:<redacted>@h"),
            ("h:6379", "h:6379"),
            (
                "redis-sentinel://u:a@h?sentinelServiceName=m&sentinelPassword=b#f",
                "redis-sentinel://u:<redacted>@h?sentinelServiceName=m&sentinelPassword=<redacted>#f",
            ),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
    }

    #[test]
    fn errors_lose_every_password_of_the_url() {
        let url = "redis-sentinel://u:first@h?sentinelPassword=second";
        let message = redact_error("bad first and second", url);
        assert_eq!(message, "bad <redacted> and <redacted>");
    }
}
