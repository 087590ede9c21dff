//! [`FasterMulti`]: Redisson's `RedissonFasterMultiLock` (3.38.0+, protocol §14.3), a
//! lock on many values of one group at once: one Redis hash per group, one script per
//! operation however many values.
//!
//! Layout of the group hash `G` (the group name through the client's name mapper, no
//! braces added): for each value, field `F` (its 22-character field id, see
//! [`FasterMulti::field_id`]) names the value's last owner `LN` (`<client-id>:<owner>`);
//! `F:LN:expire_time` is that owner's deadline in epoch ms of the acquiring client's
//! clock, and `F:LN:lock_count` its hold count. A value is held while its owner field names
//! its owner and that owner's deadline is later than now (at `deadline == now` it is free,
//! for every script; docs/protocol.md §18); the key's TTL only collects garbage, and is
//! re-armed to the lease even in the key's last millisecond. Unlocks publish `0` on
//! `redisson_lock__channel:{G}`, the channel of an `RLock` named `G`.
//!
//! What differs from Redisson 4.7.0 on purpose (its client-side bugs, §14.3.11): the
//! watchdog renews every value of every owner (Redisson renews only the first thread's
//! first value set per group); `is_held_by` checks every value (Redisson skips one); each
//! call uses its own lease (Redisson carries a lease-mode lease into later watchdog-mode
//! calls); acquire and unlock are never re-sent blind (Redisson resends them, counting
//! twice). The scripts' own deviations are listed in their headers (`lua/faster_multi_*`).

// The sealed `Kind` trait takes crate-private types; nothing here reaches a user.
#![allow(private_interfaces)]

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use fred::prelude::Value;

use super::kind::{AcquireMode, Kind, LockedProbe, ScriptCall, Target, now_ms};
use crate::connection::scripts::Script;
use crate::error::{Error, Result};
use crate::names::lock_channel;

/// `lua/faster_multi_acquire.lua`: take or re-enter every value, all or nothing.
pub(crate) const FASTER_MULTI_ACQUIRE: &str = include_str!("../../lua/faster_multi_acquire.lua");
/// `lua/faster_multi_release.lua`: give back one hold of every value, with the latch.
pub(crate) const FASTER_MULTI_RELEASE: &str = include_str!("../../lua/faster_multi_release.lua");
/// `lua/faster_multi_force_release.lua`: release the values whoever holds them.
pub(crate) const FASTER_MULTI_FORCE_RELEASE: &str =
    include_str!("../../lua/faster_multi_force_release.lua");
/// `lua/faster_multi_is_locked.lua`: whether any value is held.
pub(crate) const FASTER_MULTI_IS_LOCKED: &str =
    include_str!("../../lua/faster_multi_is_locked.lua");
/// `lua/faster_multi_holds.lua`: what one owner holds, and until when.
pub(crate) const FASTER_MULTI_HOLDS: &str = include_str!("../../lua/faster_multi_holds.lua");

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_ACQUIRE));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_RELEASE));
static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_FORCE_RELEASE));
static IS_LOCKED: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_IS_LOCKED));
static HOLDS: LazyLock<Script> = LazyLock::new(|| Script::new(FASTER_MULTI_HOLDS));

/// The faster multi-lock kind: Redisson's `RedissonFasterMultiLock`, the lock
/// `RedissonClient#getMultiLock(String group, Collection<Object> values)` hands out.
/// [`FasterMultiLock`](crate::FasterMultiLock) is `Lock<FasterMulti>`; make one with
/// [`Client::get_multi_lock`](crate::Client::get_multi_lock).
///
/// It holds the field ids of its values, deduplicated and sorted (a value given twice is
/// one value, as in Java's `HashSet`).
///
/// # Values and codecs
///
/// A value's field id hashes the bytes the Java application's codec makes of it. This
/// crate takes those bytes as they are: a Rust `&str` or `String` is its UTF-8, which is
/// what Redisson's `StringCodec` writes, so string values interoperate when the Java side
/// runs with `Config.setCodec(StringCodec.INSTANCE)`. Under Redisson's default codec
/// (`Kryo5Codec`) the bytes differ (`"Jack_001"` is `03 4a 61 63 6b 5f 30 30 b1` there):
/// pass those encoded bytes instead (`&[u8]`, `Vec<u8>`; [`JavaCodec::encode`](crate::codec::JavaCodec::encode)
/// writes them), or the two sides lock different fields and never exclude each other.
///
/// # Waiting
///
/// Waiters listen on the group's channel (`redisson_lock__channel:{G}`), where every
/// unlock of any value set of the group publishes `0`. As in Redisson, a `0` wakes one
/// waiter per client: with several waiters of one client on different value sets of a
/// group, the one woken may not be the one the freed values let in; the other retries
/// when the deadline its last attempt reported runs out. Waiters on separate clients each
/// hear every message.
///
/// # Examples
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// let lock = client.get_multi_lock("orders_100", ["order:1", "order:2"])?;
/// assert_eq!(lock.kind().field_ids().len(), 2);
/// lock.lock().await?;
/// lock.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FasterMulti {
    fields: Arc<[String]>,
}

impl FasterMulti {
    /// Redisson's HighwayHash key for field ids (`misc.Hash`), as four 64-bit words.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::kinds::FasterMulti::HASH_KEY[0], 0x9e37_79b9_7f4a_7c15);
    /// ```
    pub const HASH_KEY: [u64; 4] = crate::names::hash::HASH_KEY;

    /// The field id of one value's encoded bytes (Redisson's
    /// `Hash.hash128toBase64`): HighwayHash-128 with [`FasterMulti::HASH_KEY`], its two
    /// 64-bit halves written big-endian, standard Base64 without the trailing `==`;
    /// always 22 characters.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::kinds::FasterMulti;
    /// assert_eq!(FasterMulti::field_id("Jack_001"), "7pNoDdizVy2xY792MaFv+w");
    /// assert_eq!(FasterMulti::field_id(b""), "t6rZwibGo2uy1OSmNVe8pg");
    /// ```
    pub fn field_id(value: impl AsRef<[u8]>) -> String {
        crate::names::hash::hash128_base64(value.as_ref())
    }

    /// The kind for these values; [`Error::InvalidArgument`] when there are none.
    pub(crate) fn new<I>(values: I) -> Result<FasterMulti>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let fields: BTreeSet<String> = values.into_iter().map(Self::field_id).collect();
        if fields.is_empty() {
            return Err(Error::invalid(
                "a faster multi-lock needs at least one value",
            ));
        }
        Ok(FasterMulti {
            fields: fields.into_iter().collect(),
        })
    }

    /// The field ids of this lock's values, sorted, without duplicates: the order the
    /// scripts get them in.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
    /// let lock = client.get_multi_lock("grp", ["Mary_002", "Jack_001", "Jack_001"])?;
    /// assert_eq!(
    ///     lock.kind().field_ids(),
    ///     ["7pNoDdizVy2xY792MaFv+w", "kIX2DFOX4IWct7G7K6tV9A"]
    /// );
    /// # Ok(()) }
    /// ```
    pub fn field_ids(&self) -> &[String] {
        &self.fields
    }

    fn field_args(&self) -> impl Iterator<Item = Value> + '_ {
        self.fields.iter().map(|f| Value::from(f.as_str()))
    }

    /// The three keys and leading arguments of a script that names the owner, then the
    /// values.
    fn owner_call(
        &self,
        script: &'static Script,
        keys: Vec<String>,
        head: Vec<Value>,
    ) -> ScriptCall {
        let mut args = head;
        args.reserve(self.fields.len());
        args.extend(self.field_args());
        ScriptCall::new(script, keys, args)
    }

    /// `{held, count, remaining}` for `target`'s owner (`lua/faster_multi_holds.lua`).
    pub(crate) fn holds_call(&self, target: &Target<'_>) -> ScriptCall {
        self.owner_call(
            &HOLDS,
            vec![target.name.to_owned()],
            vec![Value::from(now_ms()), target.owner_value()],
        )
    }
}

impl Kind for FasterMulti {
    const NAME: &'static str = "faster_multi";

    /// The first value's count field of `owner` (`F1:LN:lock_count`): what an acquire
    /// whose reply was lost is settled by (each acquire adds one to every value's count).
    fn field(
        &self,
        context: &crate::engine::Engine,
        owner: crate::names::owner::LockOwner,
    ) -> String {
        let first = self.fields.first().map(String::as_str).unwrap_or_default();
        format!(
            "{first}:{}:lock_count",
            crate::names::owner_field(&context.id, owner)
        )
    }

    fn check(&self) -> Result<()> {
        if self.fields.is_empty() {
            return Err(Error::invalid(
                "a faster multi-lock needs at least one value",
            ));
        }
        Ok(())
    }

    fn acquire(&self, target: &Target<'_>, lease_ms: u64, _mode: AcquireMode) -> ScriptCall {
        self.owner_call(
            &ACQUIRE,
            vec![target.name.to_owned()],
            vec![
                Value::from(lease_ms as i64),
                Value::from(now_ms()),
                target.owner_value(),
            ],
        )
    }

    fn release(&self, target: &Target<'_>, lease_ms: u64, latch: &str) -> ScriptCall {
        self.owner_call(
            &RELEASE,
            vec![
                target.name.to_owned(),
                lock_channel(target.name),
                latch.to_owned(),
            ],
            vec![
                target.owner_value(),
                Value::from_static_str("0"),
                Value::from(lease_ms as i64),
                target.publish(),
                target.latch_ttl(),
                Value::from(now_ms()),
            ],
        )
    }

    fn force_release(&self, target: &Target<'_>) -> ScriptCall {
        self.owner_call(
            &FORCE_RELEASE,
            vec![target.name.to_owned(), lock_channel(target.name)],
            vec![Value::from_static_str("0"), target.publish()],
        )
    }

    fn held(&self, target: &Target<'_>) -> Arc<dyn crate::engine::hold::held::Held> {
        Arc::new(super::holds::Values::new(
            target.owner_str(),
            self.fields.clone(),
        ))
    }

    fn renewal_values(&self) -> Option<&Arc<[String]>> {
        Some(&self.fields)
    }

    fn locked_probe(&self, name: &str) -> LockedProbe {
        let mut args = Vec::with_capacity(1 + self.fields.len());
        args.push(Value::from(now_ms()));
        args.extend(self.field_args());
        LockedProbe::Script(ScriptCall::new(&IS_LOCKED, vec![name.to_owned()], args))
    }

    fn holds_probe(&self, target: &Target<'_>) -> Option<ScriptCall> {
        Some(self.holds_call(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_duplicate_values() {
        assert!(matches!(
            FasterMulti::new(Vec::<&str>::new()),
            Err(Error::InvalidArgument(_))
        ));
        let kind = FasterMulti::new(["a", "a", "b"]).expect("two values");
        assert_eq!(kind.field_ids().len(), 2);
    }
}
