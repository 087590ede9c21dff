//! `RSemaphore`, `RPermitExpirableSemaphore` and `RCountDownLatch` beside real Redisson
//! 3.23.3 and 4.7.0 on one server: the same raw state whichever side wrote it, releases
//! and count-downs on one side waking waiters on the other, and (semaphores) no more
//! holders than permits across both. One test per object, both versions in it.

use crate::support::interop::*;
use crate::support::real_java::Version;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn semaphore() {
    let bed = Interop::start(&Version::ALL, 1).await;
    check_semaphore(&bed, PLAIN, "sem").await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn permit_expirable_semaphore() {
    let bed = Interop::start(&Version::ALL, 1).await;
    check_permit_expirable(&bed, PLAIN, "pes", true).await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real Redisson: REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored"]
async fn count_down_latch() {
    let bed = Interop::start(&Version::ALL, 1).await;
    check_latch(&bed, PLAIN, "latch").await;
    bed.shutdown().await;
}
