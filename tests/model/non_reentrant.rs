//! The non-reentrant locks (contract §14.4, and §10.6 for the fair one): the reentrant
//! (or fair) model, but a re-entry by the holder writes nothing. Redisson's script answers
//! `NON_REENTRANT_REACQUIRE`; the crate's `try_*` forms answer `false` at once
//! (`docs/protocol.md` §10.5), which is what the model predicts for them.

use redisson_lock::kinds::{NonReentrant, NonReentrantFair};
use redisson_lock::{Client, Lock};

use super::reentrant::{ExclKind, Variant};

impl ExclKind for NonReentrant {
    const LABEL: &'static str = "non-reentrant";
    const VARIANT: Variant = Variant {
        fair: false,
        fenced: false,
        non_reentrant: true,
        spin: false,
    };
    const CASES: u32 = 32;
    fn get(client: &Client, name: &str) -> Lock<Self> {
        client.get_non_reentrant_lock(name)
    }
}

impl ExclKind for NonReentrantFair {
    const LABEL: &'static str = "non-reentrant-fair";
    const VARIANT: Variant = Variant {
        fair: true,
        fenced: false,
        non_reentrant: true,
        spin: false,
    };
    const CASES: u32 = 32;
    fn get(client: &Client, name: &str) -> Lock<Self> {
        client.get_non_reentrant_fair_lock(name)
    }
}
