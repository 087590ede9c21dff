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
        quorum: false,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn fair_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "fair",
        ours: |c: &[Client], n| c[0].get_fair_lock(n),
        java: |n| JavaLock::One(format!("fair:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        listens: true,
        queues: true,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

/// The token counter: both sides start from the same value in the raw-state steps.
fn token_at_41(name: &str) -> Vec<(String, String)> {
    vec![(format!("redisson_lock_token:{{{name}}}"), "41".to_string())]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn fenced_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "fenced",
        ours: |c: &[Client], n| c[0].get_fenced_lock(n),
        java: |n| JavaLock::One(format!("fenced:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: Some(token_at_41),
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn spin_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "spin",
        ours: |c: &[Client], n| c[0].get_spin_lock(n),
        java: |n| JavaLock::One(format!("spin:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        listens: false,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn non_reentrant_lock() {
    let bed = Interop::start(NEW_ONLY, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "nonreentrant",
        ours: |c: &[Client], n| c[0].get_non_reentrant_lock(n),
        java: |n| JavaLock::One(format!("nonreentrant:{n}")),
        keys: one,
        reentrant: false,
        quorum: false,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn non_reentrant_fair_lock() {
    let bed = Interop::start(NEW_ONLY, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "nonreentrantfair",
        ours: |c: &[Client], n| c[0].get_non_reentrant_fair_lock(n),
        java: |n| JavaLock::One(format!("nonreentrantfair:{n}")),
        keys: one,
        reentrant: false,
        quorum: false,
        listens: true,
        queues: true,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

/// A faster multi-lock's base name is `<group>` (values `a`, `b`) or `<group>=<v1>|<v2>...`.
fn faster_parts(name: &str) -> (String, Vec<String>) {
    match name.split_once('=') {
        Some((group, values)) => (
            group.to_string(),
            values.split('|').map(str::to_string).collect(),
        ),
        None => (name.to_string(), vec!["a".into(), "b".into()]),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn faster_multi_lock() {
    let bed = Interop::start(NEW_ONLY, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "fastermulti",
        ours: |c: &[Client], n| {
            let (group, values) = faster_parts(n);
            c[0].get_multi_lock(group, values).unwrap()
        },
        java: |n| {
            let (group, values) = faster_parts(n);
            JavaLock::One(format!("fastermulti:{group}={}", values.join("|")))
        },
        keys: |n| one(&faster_parts(n).0),
        reentrant: true,
        quorum: false,
        listens: true,
        queues: false,
        stress: true,
        // `stress` appends the index to the last value.
        stress_name: |base| format!("{base}=a|b0"),
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn multi_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "multi",
        ours: |c: &[Client], n| {
            redisson_lock::MultiLock::new([
                c[0].get_lock(format!("{n}:1")),
                c[0].get_lock(format!("{n}:2")),
            ])
            .unwrap()
        },
        java: |n| JavaLock::Group("multi", vec![format!("{n}:1"), format!("{n}:2")]),
        keys: |n| vec![(0, format!("{n}:1")), (0, format!("{n}:2"))],
        reentrant: true,
        quorum: false,
        listens: true,
        queues: false,
        stress: false,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn red_lock() {
    let bed = Interop::start(BOTH, 3).await;
    bed.check_lock_kind(&LockCase {
        label: "red",
        ours: |c: &[Client], n| {
            redisson_lock::RedLock::new([c[0].get_lock(n), c[1].get_lock(n), c[2].get_lock(n)])
                .unwrap()
        },
        java: |n| JavaLock::Group("red", vec![n.to_string(), format!("s1/{n}"), format!("s2/{n}")]),
        keys: |n| (0..3).map(|i| (i, n.to_string())).collect(),
        reentrant: true,
        quorum: true,
        listens: true,
        queues: false,
        stress: false,
        stress_name: index0,
        before_state: None,
    })
    .await;
    bed.shutdown().await;
}

/// The write half as any exclusive kind, then the two halves together
/// (`check_read_write_halves`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn read_write_lock() {
    let bed = Interop::start(BOTH, 1).await;
    bed.check_lock_kind(&LockCase {
        label: "rw-write",
        ours: |c: &[Client], n| c[0].get_read_write_lock(n).write_lock(),
        java: |n| JavaLock::One(format!("write:{n}")),
        keys: one,
        reentrant: true,
        quorum: false,
        listens: true,
        queues: false,
        stress: true,
        stress_name: index0,
        before_state: None,
    })
    .await;
    check_read_write_halves(&bed).await;
    bed.shutdown().await;
}
