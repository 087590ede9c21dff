//! Every lock kind beside real Redisson 3.23.3 and 4.7.0 (the kinds a version has), on one
//! server: mutual exclusion with a witness, wake-ups both ways, the watchdog on both
//! sides, and the same raw state whichever side wrote it
//! (`support::interop::Interop::check_lock_kind`). One test per kind, both versions in
//! it, so that each starts its JVMs once.

use crate::support::interop::*;
use crate::support::real_java::Version;

use redisson_lock::Client;

const BOTH: &[Version] = &Version::ALL;
/// Kinds Redisson 3.23.3 does not have (the non-reentrant locks: 4.4+; the faster
/// multi-lock: 3.38+). Its driver would take `nonreentrant:x` for the plain lock of that
/// name.
const NEW_ONLY: &[Version] = &[Version::V4_7_0];

fn one(name: &str) -> Vec<(usize, String)> {
    vec![(0, name.to_string())]
}

fn index0(base: &str) -> String {
    format!("{base}0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn rlock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "rlock",
        ours: |c: &[Client], n| c[0].get_lock(n),
        java: |n| JavaLock::One(n.to_string()),
        keys: one,
        reentrant: true,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}
