//! [`RedissonFileOptions`]: how a Redisson configuration file is read, for what the file
//! itself cannot settle.

use std::path::Path;

use super::file::RedissonFile;
use super::reading::read_text;
use super::source::{env_var, read_file};
use crate::codec::JavaCodec;
use crate::error::Result;

/// Options for reading a `redisson.yaml` ([`RedissonFile::options`]); the plain
/// constructors ([`RedissonFile::read`], ...) read with the defaults.
///
/// # Examples
/// ```
/// use redisson_lock::codec::{JavaCodec, JsonUuids};
/// use redisson_lock::config::RedissonFile;
/// // The fleet runs Redisson 3.60 with JsonJacksonCodec, in 3.x's layout: the file does
/// // not tell how its UUID keys are written, so say it.
/// let yaml = "codec: !<org.redisson.codec.JsonJacksonCodec> {}\n\
///             singleServerConfig:\n  address: redis://h:6379\n";
/// let json = JavaCodec::JsonJackson { uuids: JsonUuids::Typed };
/// let config = RedissonFile::options().codec(json).from_yaml(yaml)?.build()?;
/// assert_eq!(config.codec(), json);
/// # Ok::<(), redisson_lock::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
#[must_use = "options do nothing until a file is read with them"]
pub struct RedissonFileOptions {
    codec: Option<JavaCodec>,
}

impl RedissonFileOptions {
    /// The codec [`Client::map`](crate::Client::map) and [`Client::set`](crate::Client::set)
    /// encode keys with, instead of the file's `codec`: for a file naming a codec whose
    /// bytes the crate does not write (a compressing codec, Java serialization; read as
    /// it is, such a file is refused), or to say how the Java services' `JsonJacksonCodec`
    /// writes UUIDs. Give the codec whose bytes the Java maps' keys have: another one
    /// names other objects, with no error. A service that takes no per-key objects of maps
    /// and sets may give any.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// let yaml = "codec: !<org.redisson.codec.SnappyCodecV2> {}\nsingleServerConfig:\n  address: redis://h:6379\n";
    /// let file = redisson_lock::config::RedissonFile::options()
    ///     .codec(JavaCodec::Kryo5)
    ///     .from_yaml(yaml)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn codec(mut self, codec: JavaCodec) -> Self {
        self.codec = Some(codec);
        self
    }

    /// [`RedissonFile::read`] with these options.
    ///
    /// # Errors
    /// As [`RedissonFile::read`].
    ///
    /// # Examples
    /// ```no_run
    /// use redisson_lock::codec::JavaCodec;
    /// let file = redisson_lock::config::RedissonFile::options()
    ///     .codec(JavaCodec::String)
    ///     .read("/etc/app/redisson.yaml")?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn read(self, path: impl AsRef<Path>) -> Result<RedissonFile> {
        let (text, json) = read_file(path.as_ref())?;
        read_text(&text, json, &env_var, self.codec)
    }

    /// [`RedissonFile::from_yaml`] with these options.
    ///
    /// # Errors
    /// As [`RedissonFile::from_yaml`].
    ///
    /// # Examples
    /// ```
    /// let yaml = "singleServerConfig:\n  address: redis://h:6379\n";
    /// let file = redisson_lock::config::RedissonFile::options().from_yaml(yaml)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_yaml(self, text: &str) -> Result<RedissonFile> {
        read_text(text, false, &env_var, self.codec)
    }

    /// [`RedissonFile::from_yaml_with_env`] with these options.
    ///
    /// # Errors
    /// As [`RedissonFile::from_yaml`].
    ///
    /// # Examples
    /// ```
    /// let yaml = "singleServerConfig:\n  address: redis://h:${PORT}\n";
    /// let env = |_: &str| Some("6380".to_owned());
    /// let file = redisson_lock::config::RedissonFile::options().from_yaml_with_env(yaml, env)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_yaml_with_env(
        self,
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RedissonFile> {
        read_text(text, false, &env, self.codec)
    }

    /// [`RedissonFile::from_json`] with these options.
    ///
    /// # Errors
    /// As [`RedissonFile::from_yaml`].
    ///
    /// # Examples
    /// ```
    /// let json = r#"{"singleServerConfig": {"address": "redis://h:6379"}}"#;
    /// let file = redisson_lock::config::RedissonFile::options().from_json(json)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_json(self, text: &str) -> Result<RedissonFile> {
        read_text(text, true, &env_var, self.codec)
    }

    /// [`RedissonFile::from_json_with_env`] with these options.
    ///
    /// # Errors
    /// As [`RedissonFile::from_yaml`].
    ///
    /// # Examples
    /// ```
    /// let json = r#"{"singleServerConfig": {"address": "redis://h:${PORT}"}}"#;
    /// let env = |_: &str| Some("6380".to_owned());
    /// let file = redisson_lock::config::RedissonFile::options().from_json_with_env(json, env)?;
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn from_json_with_env(
        self,
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RedissonFile> {
        read_text(text, true, &env, self.codec)
    }
}

impl RedissonFile {
    /// Options for reading a file: [`RedissonFileOptions`] (the codec of `client.map(..)`
    /// and `client.set(..)` given in code instead of the file's).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::codec::JavaCodec;
    /// use redisson_lock::config::RedissonFile;
    /// let yaml = "codec: !<org.redisson.codec.LZ4CodecV2> {}\nsingleServerConfig:\n  address: redis://h:6379\n";
    /// assert!(RedissonFile::from_yaml(yaml).is_err()); // bytes this crate does not write
    /// let file = RedissonFile::options().codec(JavaCodec::String).from_yaml(yaml)?;
    /// assert_eq!(file.build()?.codec(), JavaCodec::String);
    /// # Ok::<(), redisson_lock::Error>(())
    /// ```
    pub fn options() -> RedissonFileOptions {
        RedissonFileOptions::default()
    }
}
