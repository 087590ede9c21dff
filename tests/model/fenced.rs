//! The fenced lock (contract §12): the reentrant model plus the token key
//! `redisson_lock_token:{N}`, `INCR`ed by every successful acquisition (re-entries
//! included), without TTL, never reset by an unlock or a force unlock. Tokens are read
//! relative to the counter's seed: the crate's first token of a fresh counter is the
//! server time in µs, not 1 (a documented difference, `docs/protocol.md` §12).

use std::time::Duration;

use redisson_lock::fred::prelude::*;
use redisson_lock::kinds::Fenced;
use redisson_lock::{Client, Lock};

use super::reentrant::{Excl, ExclKind, Op, Sut, Variant};
use super::{Content, Ctx, Raw, Reply};

impl ExclKind for Fenced {
    const LABEL: &'static str = "fenced";
    const VARIANT: Variant = Variant {
        fair: false,
        fenced: true,
        non_reentrant: false,
        spin: false,
    };
    const CASES: u32 = 48;
    fn get(client: &Client, name: &str) -> Lock<Self> {
        client.get_fenced_lock(name)
    }
    async fn token_op(lock: &Lock<Self>, op: &Op) -> Reply {
        match *op {
            Op::TryToken(_, None) => Reply::of(
                lock.try_lock_and_get_token_for(Duration::ZERO).await,
                Reply::Token,
            ),
            Op::TryToken(_, Some(l)) => Reply::of(
                lock.try_lock_and_get_token(Duration::ZERO, l.duration())
                    .await,
                Reply::Token,
            ),
            Op::Token(_) => Reply::of(lock.token().await, Reply::Token),
            _ => Reply::Error("not a token operation".into()),
        }
    }
}

/// Learns the seed once the counter exists, and reads the reply's token relative to it.
pub async fn fix_tokens<K: ExclKind>(sut: &mut Sut<K>, ctx: &Ctx, after: &Excl, reply: &mut Reply) {
    if sut.seed.is_none() {
        let key = format!("redisson_lock_token:{{{}}}", ctx.name);
        if let Ok(Some(v)) = ctx.raw.get::<Option<u64>, _>(key).await {
            sut.seed = Some(v.saturating_sub(after.token));
        }
    }
    let seed = sut.seed.unwrap_or(0);
    if let Reply::Token(Some(t)) | Reply::Guard(Some(Some(t))) = reply {
        *t = t.saturating_sub(seed);
    }
}

/// The token key's value relative to the seed.
pub fn fix_raw(seed: Option<u64>, raw: &mut Raw) {
    if let Some((Content::Str(v), _)) = raw.get_mut("redisson_lock_token:{N}")
        && let (Ok(n), Some(seed)) = (v.parse::<u64>(), seed)
    {
        *v = n.saturating_sub(seed).to_string();
    }
}
