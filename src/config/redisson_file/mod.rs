//! [`RedissonFile`]: the Java fleet's own `redisson.yaml` (or 3.x `redisson.json`) read into
//! a [`ConfigBuilder`] (feature `redisson-yaml`), as real Redisson reads it
//! (docs/redisson-yaml.md).
//!
//! The file is read twice, as Redisson 3.x reads it (Jackson, modelled on 3.23.3) and as
//! 4.x does (snakeyaml 2, modelled on 4.7.0):
//!
//! * `${NAME}` / `${NAME:-default}` are replaced in the raw text before parsing (comments
//!   included), with Redisson's pattern `\$\{([\w\.]+(:-.+?)?)\}` ([`text`]);
//! * the text becomes a tree that keeps what Redisson's readers look at: scalars as written
//!   with their style and tag, anchors and aliases ([`tree`]);
//! * each version walks it ([`reader`]): every key must be one that version reads there
//!   ([`schema`]), every value one it reads as the setting's Java type ([`scalar`]:
//!   YAML 1.1 booleans, text kept as written, each version's numbers), and then what it
//!   would connect with is resolved (which section, the addresses' credentials
//!   ([`address`]), its defaults);
//! * the crate loads the file when at least one version loads it, as that version reads
//!   it; when both do they must agree ([`agreement`]), else the setting is refused as
//!   [`RedissonFileError::Unsupported`].
//!
//! What matters to locks is used (the `codec` too: the bytes the per-key objects of maps
//! and sets are named by); what does not (thread and connection pools, retries, load
//! balancer) is listed by [`RedissonFile::ignored`]; what matters and cannot be honoured (a
//! codec whose bytes the crate does not write, a Java keystore, a custom name mapper or
//! NAT mapper, a replicated or master/slave topology) is an [`Error::RedissonFile`] of
//! kind [`RedissonFileError::Unsupported`] naming the setting.
//!
//! Where it lives: `file.rs` (the file as read), `reading.rs` (how: the constructors and
//! the pipeline above), `options.rs` ([`RedissonFileOptions`]), `source.rs` (the text's
//! source and the setting errors), `secret_values.rs` (what is masked).

mod address;
mod agreement;
mod file;
mod literal;
mod options;
mod reader;
mod reading;
mod scalar;
mod schema;
mod secret_values;
mod source;
mod text;
mod tree;

pub use file::{RedissonFile, RedissonTopology};
pub use options::RedissonFileOptions;

#[cfg(test)]
mod tests;
