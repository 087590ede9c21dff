//! How a [`Config`] is made: from a URL ([`Config::from_url`]), from the builder
//! ([`Config::builder`]), from plain [`Settings`] ([`Config::from_settings`]). Beside
//! neither the struct (`built.rs`) nor the builder (`builder.rs`), so that neither imports
//! the other.

use super::builder::ConfigBuilder;
use super::built::Config;
use super::settings::Settings;
use crate::error::Result;

/// How a [`Config`] is made: from a URL, from the builder, from plain [`Settings`].
impl Config {
    /// A configuration for the Redis at `url` with Redisson's defaults.
    ///
    /// Accepts every URL fred accepts: `redis://`, `rediss://`, `redis-cluster://`,
    /// `redis-sentinel://`, `redis+unix://` and their `valkey` twins.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the scheme is not one of [`URL_SCHEMES`](crate::config::URL_SCHEMES) (the
    /// message names it), or fred cannot parse the URL (no host, a bad port).
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::from_url("redis://127.0.0.1:6379/0").unwrap();
    /// assert!(redisson_lock::Config::from_url("not a url").is_err());
    /// let refused = redisson_lock::Config::from_url("http://nope").unwrap_err();
    /// assert!(refused.to_string().contains("`http`"));
    /// ```
    pub fn from_url(url: &str) -> Result<Config> {
        Config::builder().url(url).build()
    }

    /// A builder that starts from Redisson's defaults.
    ///
    /// # Examples
    /// ```
    /// let config = redisson_lock::Config::builder().url("redis://127.0.0.1").build().unwrap();
    /// ```
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }

    /// A configuration from the plain [`Settings`] a service keeps (with the `serde`
    /// feature, deserialized from its configuration file or environment).
    ///
    /// # Errors
    /// As [`ConfigBuilder::build`].
    ///
    /// # Examples
    /// ```
    /// let mut settings = redisson_lock::config::Settings::default();
    /// settings.url = Some("redis://127.0.0.1:6379".to_owned());
    /// let config = redisson_lock::Config::from_settings(settings)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_settings(settings: Settings) -> Result<Config> {
        ConfigBuilder::from_settings(settings).build()
    }
}
