//! The spin lock (contract §13): the reentrant model's hash, TTL and answers, but no
//! publish at all; a waiter polls with back-off, so the model lets it in after any step
//! that leaves the lock free.

use redisson_lock::kinds::Spin;
use redisson_lock::{Client, Lock};

use super::reentrant::{ExclKind, Variant};

impl ExclKind for Spin {
    const LABEL: &'static str = "spin";
    const VARIANT: Variant = Variant {
        fair: false,
        fenced: false,
        non_reentrant: false,
        spin: true,
    };
    const CASES: u32 = 32;
    fn get(client: &Client, name: &str) -> Lock<Self> {
        client.get_spin_lock(name)
    }
}
