//! The crate's `PrefixNameMapper` beside real Redisson 4.7.0 with the same mapper (the
//! driver's `client jp <url> prefix=app1:`; Redisson 3.23.3's driver has no `prefix=`):
//! the lock, the fair lock (its queue and deadline set use the mapped name, as 3.52+
//! does), the semaphores and the latch are one object on both sides, under the
//! prefixed keys and channels.

use crate::support::interop::*;
use crate::support::real_java::Version;

use redisson_lock::Client;

const PREFIX: &str = "app1:";

fn mapped(name: &str) -> Vec<(usize, String)> {
    vec![(0, format!("{PREFIX}{name}"))]
}

const MAPPED: Naming = Naming {
    java: |n| format!("jp/{n}"),
    redis: |n| format!("{PREFIX}{n}"),
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn prefix_name_mapper() {
    let bed = Interop::start_mapped(&[Version::V4_7_0], PREFIX).await;
    bed.check_lock_kind(&LockCase {
        label: "mapped",
        ours: |c: &[Client], n| c[0].get_lock(n),
        java: |n| JavaLock::One(format!("jp/{n}")),
        keys: mapped,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: false,
        stress: true,
        stress_name: |base| format!("{base}0"),
        before_state: None,
    })
    .await;
    bed.check_lock_state_and_wake_ups(&LockCase {
        label: "mapped-fair",
        ours: |c: &[Client], n| c[0].get_fair_lock(n),
        java: |n| JavaLock::One(format!("jp/fair:{n}")),
        keys: mapped,
        reentrant: true,
        quorum: false,
        wake_bound: WAKE_BOUND,
        listens: true,
        queues: true,
        stress: true,
        stress_name: |base| format!("{base}0"),
        before_state: None,
    })
    .await;
    check_semaphore(&bed, MAPPED, "mapped-sem").await;
    check_permit_expirable(&bed, MAPPED, "mapped-pes", false).await;
    check_latch(&bed, MAPPED, "mapped-latch").await;
    bed.shutdown().await;
}
