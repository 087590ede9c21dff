//! `RSemaphore`, `RPermitExpirableSemaphore` and `RCountDownLatch` against real
//! Redisson: [`check_semaphore`], [`check_permit_expirable`], [`check_latch`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use redisson_lock::fred::prelude::*;

use super::*;
use crate::support::real_java::Version;

type RawClient = redisson_lock::fred::prelude::Client;

// ---- synchronizers ---------------------------------------------------------------------

/// How the two sides name one synchronizer of base name `name`: the driver's name
/// (`name`, or `jp/name` on a client with a name mapper) and the key in Redis.
#[derive(Clone, Copy)]
pub struct Naming {
    pub java: fn(&str) -> String,
    pub redis: fn(&str) -> String,
}

/// The same name on both sides, no mapper.
pub const PLAIN: Naming = Naming {
    java: plain_name,
    redis: plain_name,
};

pub(crate) fn plain_name(name: &str) -> String {
    name.to_string()
}

/// Runs `ours` (the crate's steps on its name) and, for each Java client, `theirs` (the
/// same steps on its own name): after step `i` of each, the normalised states must
/// match. Steps are (what, crate future, Java verb lines with `{n}` for the name).
pub struct StepCompare<'a> {
    bed: &'a Interop,
    naming: Naming,
    label: String,
}

impl<'a> StepCompare<'a> {
    pub fn new(bed: &'a Interop, naming: Naming, label: &str) -> StepCompare<'a> {
        StepCompare {
            bed,
            naming,
            label: label.to_string(),
        }
    }

    /// The crate's name for this comparison, and its Redis key.
    pub fn ours(&self) -> (String, String) {
        let name = format!("{}-state-rs", self.label);
        let key = (self.naming.redis)(&name);
        (name, key)
    }

    /// The snapshot of the crate's object now.
    pub async fn snap_ours(&self) -> Snapshot {
        let (_, key) = self.ours();
        snapshot(
            &self.bed.raws[0],
            &key,
            &Norm::new().with(key.clone(), "N0"),
        )
        .await
    }

    /// Each Java client runs `lines` (with `{n}` for its driver name; a line starting
    /// with `=` must answer what follows the `=`, e.g. `=true semset {n} 5`; `$` in a
    /// line is the previous answer) on its own name, then its state must be `expected`.
    pub async fn java_matches(
        &self,
        what: &str,
        expected: &Snapshot,
        lines: &[&str],
        last: &mut HashMap<Version, String>,
    ) {
        for java in &self.bed.javas {
            let name = format!("{}-state-{}", self.label, side_tag(java.version()));
            let driver_name = (self.naming.java)(&name);
            let key = (self.naming.redis)(&name);
            for line in lines {
                let (want, line) = match line.strip_prefix('=') {
                    Some(rest) => {
                        let (want, line) = rest.split_once(' ').expect("=<answer> <verb>");
                        (Some(want), line)
                    }
                    None => (None, *line),
                };
                let previous = last.get(&java.version()).cloned().unwrap_or_default();
                let line = line.replace("{n}", &driver_name).replace('$', &previous);
                let answer = java.call(&line).await;
                if let Some(want) = want {
                    assert_eq!(answer, want, "Redisson {}: `{line}`", java.version());
                }
                assert!(
                    !answer.starts_with("ERR"),
                    "Redisson {}: `{line}`: {answer}",
                    java.version()
                );
                last.insert(java.version(), answer);
            }
            let theirs = snapshot(
                &self.bed.raws[0],
                &key,
                &Norm::new().with(key.clone(), "N0"),
            )
            .await;
            assert_same_state(
                &format!("{}, {what}, Redisson {}", self.label, java.version()),
                expected,
                &theirs,
                Duration::from_millis(1_500),
            );
        }
        eprintln!("{}, {what}: {:?}", self.label, expected.0);
    }
}

pub(crate) fn side_tag(version: Version) -> &'static str {
    match version {
        Version::V3_23_3 => "j3",
        Version::V4_7_0 => "j4",
    }
}

/// `RSemaphore`: raw state of the same operations, permits released on one side waking
/// a waiter on the other, and at most `permits` holders at once across both.
pub async fn check_semaphore(bed: &Interop, naming: Naming, label: &str) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    // 1. Raw state.
    let steps = StepCompare::new(bed, naming, label);
    let (name, _) = steps.ours();
    let sem = client.get_semaphore(&name);
    let mut last = HashMap::new();
    assert!(sem.try_set_permits(5).await.unwrap());
    steps
        .java_matches(
            "5 permits set",
            &steps.snap_ours().await,
            &["=true semset {n} 5"],
            &mut last,
        )
        .await;
    sem.acquire(2).await.unwrap().forget();
    steps
        .java_matches(
            "2 acquired",
            &steps.snap_ours().await,
            &["=OK semacquire {n} 2 A"],
            &mut last,
        )
        .await;
    sem.release(1).await.unwrap();
    steps
        .java_matches(
            "1 released",
            &steps.snap_ours().await,
            &["=OK semrelease {n} 1"],
            &mut last,
        )
        .await;
    assert_eq!(sem.drain_permits().await.unwrap(), 4);
    steps
        .java_matches(
            "drained",
            &steps.snap_ours().await,
            &["=4 semdrain {n}"],
            &mut last,
        )
        .await;
    sem.add_permits(-2).await.unwrap();
    steps
        .java_matches(
            "-2 added",
            &steps.snap_ours().await,
            &["=OK semadd {n} -2"],
            &mut last,
        )
        .await;
    // trySetPermits with a TTL: Redisson 3.29+.
    if bed.javas.iter().all(|j| j.version() == Version::V4_7_0) || bed.javas.len() > 1 {
        let ttl_steps = StepCompare {
            bed,
            naming,
            label: format!("{label}-ttl"),
        };
        let (ttl_name, _) = ttl_steps.ours();
        let with_ttl = client.get_semaphore(&ttl_name);
        assert!(
            with_ttl
                .try_set_permits_with_ttl(3, Duration::from_secs(20))
                .await
                .unwrap()
        );
        let expected = ttl_steps.snap_ours().await;
        for java in &bed.javas {
            let name = (naming.java)(&format!("{label}-ttl-state-{}", side_tag(java.version())));
            let answer = java.call(&format!("semset {name} 3 20000")).await;
            match java.version() {
                Version::V3_23_3 => assert!(answer.starts_with("ERR unsupported"), "{answer}"),
                Version::V4_7_0 => {
                    assert_eq!(answer, "true");
                    let key = (naming.redis)(&format!("{label}-ttl-state-j4"));
                    let theirs =
                        snapshot(&raws[0], &key, &Norm::new().with(key.clone(), "N0")).await;
                    assert_same_state(
                        &format!("{label}, 3 permits with a 20 s TTL, Redisson 4.7.0"),
                        &expected,
                        &theirs,
                        Duration::from_millis(1_500),
                    );
                }
            }
        }
    }

    // 2. Wake-ups both ways, for each version.
    for java in &bed.javas {
        let version = java.version();
        let tag = side_tag(version);
        let name = format!("{label}-wake-rs-{tag}");
        let sem = client.get_semaphore(&name);
        let driver = (naming.java)(&name);
        let waiter = java.spawn(&format!("semacquire {driver} 1 B")).await;
        let key = (naming.redis)(&name);
        until_listening(raws, &[(0, key.clone())], true, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let released = Instant::now();
        sem.release(1).await.unwrap();
        assert_eq!(answer(&waiter, WAKE_BOUND).await, "OK");
        eprintln!(
            "{label}: a Redisson {version} waiter got the permit {:?} after the crate's release",
            released.elapsed()
        );

        let name = format!("{label}-wake-java-{tag}");
        let sem = client.get_semaphore(&name);
        let driver = (naming.java)(&name);
        let task = tokio::spawn(async move { sem.acquire(1).await.unwrap().forget() });
        let key = (naming.redis)(&name);
        until_listening(raws, &[(0, key)], true, || async { !task.is_finished() }).await;
        let released = Instant::now();
        java.ok(&format!("semrelease {driver} 1")).await;
        tokio::time::timeout(WAKE_BOUND, task)
            .await
            .unwrap_or_else(|_| {
                panic!("{label}: the crate's waiter was not woken by Redisson {version}'s release")
            })
            .unwrap();
        eprintln!(
            "{label}: the crate's waiter got the permit {:?} after Redisson {version}'s release",
            released.elapsed()
        );
    }

    // 3. At most 2 holders of 2 permits, across both sides.
    let name = format!("{label}-mx");
    let driver = (naming.java)(&name);
    let sem = client.get_semaphore(&name);
    assert!(sem.try_set_permits(2).await.unwrap());
    let acquire = |t: &str| format!("semacquire {driver} 1 {t}");
    let release = |_t: &str, _answer: &str| format!("semrelease {driver} 1");
    let most = bounded_holders(bed, 2, &acquire, &release, {
        let sem = sem.clone();
        move || {
            let sem = sem.clone();
            async move {
                let permits = sem.acquire(1).await.unwrap();
                move || async move { permits.release().await.unwrap() }
            }
        }
    })
    .await;
    assert_eq!(sem.available_permits().await.unwrap(), 2);
    eprintln!("{label}: at most {most} of 2 permits held at once");
}

/// Each Java version's threads (2 per version) and 2 of the crate's tasks, 6 rounds
/// each: acquire (Java: the `acquire` line for its thread; the crate: `ours()`), marked
/// inside by the test once acquired, hold 0–3 ms, marked out, release (Java: the
/// `release` line with the acquire's answer). The mark must never count more than
/// `bound`. Answers the most seen at once.
pub async fn bounded_holders<A, R, O, OFut, Rel, RelFut>(
    bed: &Interop,
    bound: usize,
    acquire: &A,
    release: &R,
    ours: O,
) -> usize
where
    A: Fn(&str) -> String,
    R: Fn(&str, &str) -> String,
    O: Fn() -> OFut + Clone + Send + 'static,
    OFut: Future<Output = Rel> + Send,
    Rel: FnOnce() -> RelFut + Send,
    RelFut: Future<Output = ()> + Send,
{
    const THREADS: usize = 2;
    const BOUNDED_ROUNDS: usize = 6;
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let enter = {
        let (inside, most) = (inside.clone(), most.clone());
        move || {
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
        }
    };
    let mut tasks = Vec::new();
    for _ in 0..THREADS {
        let (ours, inside, enter) = (ours.clone(), inside.clone(), enter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..BOUNDED_ROUNDS {
                let release = ours().await;
                enter();
                let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                tokio::time::sleep(Duration::from_millis(hold)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                release().await;
            }
        }));
    }
    let mut java_loops = Vec::new();
    for java in &bed.javas {
        for t in 0..THREADS {
            let (inside, enter) = (&inside, &enter);
            java_loops.push(async move {
                let thread = format!("M{t}");
                for _ in 0..BOUNDED_ROUNDS {
                    let pending = java.spawn(&acquire(&thread)).await;
                    let got = answer(&pending, Duration::from_secs(60)).await;
                    assert!(!got.starts_with("ERR") && got != "null", "{got}");
                    enter();
                    let hold = rand::thread_rng().gen_range(0..=HOLD_MAX_MS);
                    tokio::time::sleep(Duration::from_millis(hold)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    java.ok(&release(&thread, &got)).await;
                }
            });
        }
    }
    futures::future::join_all(java_loops).await;
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= bound, "{most} holders at once, more than {bound}");
    most
}

/// `RPermitExpirableSemaphore`: raw state of the same operations (ids as 16 raw bytes,
/// lease deadlines, the no-lease score), releases waking waiters on the other side, a
/// lease running out on one side giving the permit to a waiter on the other, one
/// holder at a time of 1 permit, and a crate permit kept by its watchdog that Java
/// never gets.
/// With `kept == false`, the kept permit is left out (it takes [`WATCHDOG_SPAN`]).
pub async fn check_permit_expirable(bed: &Interop, naming: Naming, label: &str, kept: bool) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    // The crate's kept permit, beside the other steps.
    let kept_name = format!("{label}-kept");
    let kept_pes = client.get_permit_expirable_semaphore(&kept_name);
    let kept = if kept {
        assert!(kept_pes.try_set_permits(1).await.unwrap());
        Some(kept_pes.acquire_kept().await.unwrap())
    } else {
        None
    };
    let kept_since = Instant::now();

    // 1. Raw state.
    let steps = StepCompare::new(bed, naming, label);
    let (name, _) = steps.ours();
    let pes = client.get_permit_expirable_semaphore(&name);
    let mut last = HashMap::new();
    assert!(pes.try_set_permits(3).await.unwrap());
    steps
        .java_matches(
            "3 permits set",
            &steps.snap_ours().await,
            &["=true pesset {n} 3"],
            &mut last,
        )
        .await;
    let leased = pes.acquire(Some(Duration::from_secs(20))).await.unwrap();
    let mut leased_ids = HashMap::new();
    steps
        .java_matches(
            "one with a 20 s lease",
            &steps.snap_ours().await,
            &["pesacquire {n} 20000 A"],
            &mut last,
        )
        .await;
    for (v, id) in &last {
        assert_eq!(id.len(), 32, "a permit id: {id}");
        leased_ids.insert(*v, id.clone());
    }
    let _unleased = pes.acquire(None).await.unwrap();
    steps
        .java_matches(
            "one without a lease",
            &steps.snap_ours().await,
            &["pesacquire {n} -1 A"],
            &mut last,
        )
        .await;
    pes.release(leased).await.unwrap();
    let mut by_leased = leased_ids.clone();
    steps
        .java_matches(
            "the leased one released",
            &steps.snap_ours().await,
            &["=OK pesrelease {n} $"],
            &mut by_leased,
        )
        .await;

    // 2. Wake-ups both ways (a release; a lease running out), for each version.
    for java in &bed.javas {
        let version = java.version();
        let tag = side_tag(version);
        for by_lease in [false, true] {
            let how = if by_lease { "lease" } else { "release" };
            // (a) The crate holds the only permit; a Java waiter gets it.
            let name = format!("{label}-wake-{how}-rs-{tag}");
            let driver = (naming.java)(&name);
            let key = (naming.redis)(&name);
            let pes = client.get_permit_expirable_semaphore(&name);
            assert!(pes.try_set_permits(1).await.unwrap());
            let lease = by_lease.then_some(Duration::from_millis(1_500));
            // No earlier than this can the lease have ended (ms rounding aside).
            let deadline = Instant::now() + Duration::from_millis(1_500 - 5);
            let id = pes.acquire(lease).await.unwrap();
            let waiter = java.spawn(&format!("pesacquire {driver} -1 B")).await;
            until_listening(raws, &[(0, key)], true, || async {
                waiter.poll().await.is_none()
            })
            .await;
            let released = if by_lease {
                deadline
            } else {
                pes.release(id).await.unwrap();
                Instant::now()
            };
            let theirs = answer(&waiter, WAKE_BOUND + Duration::from_secs(2)).await;
            assert_eq!(theirs.len(), 32, "{theirs}");
            assert!(
                Instant::now() >= released,
                "{label}: Redisson {version} got the permit before the crate's {how} ended"
            );
            let took = Instant::now().saturating_duration_since(released);
            eprintln!(
                "{label}: a Redisson {version} waiter got the permit {took:?} after the crate's {how} ended"
            );
            assert!(took < WAKE_BOUND, "{took:?}");
            java.ok(&format!("pesrelease {driver} {theirs}")).await;

            // (b) Java holds the only permit; the crate's waiter gets it.
            let name = format!("{label}-wake-{how}-java-{tag}");
            let driver = (naming.java)(&name);
            let key = (naming.redis)(&name);
            assert!(java.bool(&format!("pesset {driver} 1")).await);
            let lease_ms = if by_lease { "1500" } else { "-1" };
            let deadline = Instant::now() + Duration::from_millis(1_500 - 5);
            let theirs = java
                .call(&format!("pesacquire {driver} {lease_ms} A"))
                .await;
            let pes = client.get_permit_expirable_semaphore(&name);
            let task = tokio::spawn({
                let pes = pes.clone();
                async move { pes.acquire(None).await.unwrap() }
            });
            until_listening(raws, &[(0, key)], true, || async { !task.is_finished() }).await;
            let released = if by_lease {
                deadline
            } else {
                java.ok(&format!("pesrelease {driver} {theirs}")).await;
                Instant::now()
            };
            let ours = tokio::time::timeout(WAKE_BOUND + Duration::from_secs(2), task)
                .await
                .unwrap_or_else(|_| {
                    panic!("{label}: the crate's waiter did not get Redisson {version}'s permit ({how})")
                })
                .unwrap();
            assert!(
                Instant::now() >= released,
                "{label}: the crate got Redisson {version}'s permit before its {how} ended"
            );
            let took = Instant::now().saturating_duration_since(released);
            eprintln!(
                "{label}: the crate's waiter got the permit {took:?} after Redisson {version}'s {how} ended"
            );
            assert!(took < WAKE_BOUND, "{took:?}");
            pes.release(ours).await.unwrap();
        }
    }

    // 3. One holder at a time of 1 permit.
    let name = format!("{label}-mx");
    let driver = (naming.java)(&name);
    let pes = client.get_permit_expirable_semaphore(&name);
    assert!(pes.try_set_permits(1).await.unwrap());
    let acquire = |t: &str| format!("pesacquire {driver} -1 {t}");
    let release = |_t: &str, id: &str| format!("pesrelease {driver} {id}");
    bounded_holders(bed, 1, &acquire, &release, {
        let pes = pes.clone();
        move || {
            let pes = pes.clone();
            async move {
                let id = pes.acquire(None).await.unwrap();
                move || async move { pes.release(id).await.unwrap() }
            }
        }
    })
    .await;
    assert_eq!(pes.available_permits().await.unwrap(), 1);

    // 4. The kept permit outlived several watchdog timeouts; Java never got it.
    let Some(kept) = kept else { return };
    tokio::time::sleep(WATCHDOG_SPAN.saturating_sub(kept_since.elapsed())).await;
    assert!(!kept.is_lost());
    let kept_driver = (naming.java)(&kept_name);
    for java in &bed.javas {
        assert_eq!(java.int(&format!("pesavail {kept_driver}")).await, 0);
        assert_eq!(
            java.call(&format!("pestryacquire {kept_driver} 0 -1 B"))
                .await,
            "null",
            "Redisson {} got the crate's kept permit",
            java.version()
        );
    }
    let timeout_key = format!("{{{}}}:timeout", (naming.redis)(&kept_name));
    let flat: Vec<Value> = raws[0]
        .custom(
            redisson_lock::fred::cmd!("ZRANGE"),
            vec![
                timeout_key.clone(),
                "0".into(),
                "-1".into(),
                "WITHSCORES".into(),
            ],
        )
        .await
        .unwrap();
    let score: i64 = show(&bytes_of(&flat[1])).parse::<f64>().unwrap() as i64;
    let ahead = score - now_ms();
    eprintln!(
        "{label}: the kept permit after {:.1?}: its deadline {ahead} ms ahead",
        kept_since.elapsed()
    );
    assert!(
        ahead > 0 && ahead <= WATCHDOG.as_millis() as i64,
        "renewed to the watchdog timeout: {ahead}"
    );
    kept.release().await.unwrap();
}

/// `RCountDownLatch`: raw state of the same operations, a count-down on one side opening
/// waiters on the other, both sides' count-downs opening both sides' waiters.
pub async fn check_latch(bed: &Interop, naming: Naming, label: &str) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    let steps = StepCompare::new(bed, naming, label);
    let (name, _) = steps.ours();
    let latch = client.get_count_down_latch(&name);
    let mut last = HashMap::new();
    assert!(latch.try_set_count(3).await.unwrap());
    steps
        .java_matches(
            "count 3",
            &steps.snap_ours().await,
            &["=true latchset {n} 3"],
            &mut last,
        )
        .await;
    assert!(!latch.try_set_count(9).await.unwrap());
    latch.count_down().await.unwrap();
    steps
        .java_matches(
            "counted down",
            &steps.snap_ours().await,
            &["=false latchset {n} 9", "=OK latchdown {n}"],
            &mut last,
        )
        .await;
    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    let open = steps.snap_ours().await;
    assert!(open.0.is_empty(), "an open latch has no key");
    steps
        .java_matches(
            "open",
            &open,
            &["=OK latchdown {n}", "=OK latchdown {n}"],
            &mut last,
        )
        .await;

    for java in &bed.javas {
        let version = java.version();
        let tag = side_tag(version);
        let key_of = |n: &str| (naming.redis)(n);
        // (a) A Java waiter opened by the crate's count-down.
        let name = format!("{label}-wake-rs-{tag}");
        let driver = (naming.java)(&name);
        let latch = client.get_count_down_latch(&name);
        assert!(latch.try_set_count(1).await.unwrap());
        let waiter = java.spawn(&format!("latchawait {driver} -1 B")).await;
        until_listening(raws, &[(0, key_of(&name))], true, || async {
            waiter.poll().await.is_none()
        })
        .await;
        let opened = Instant::now();
        latch.count_down().await.unwrap();
        assert_eq!(answer(&waiter, WAKE_BOUND).await, "true");
        eprintln!(
            "{label}: a Redisson {version} waiter went on {:?} after the crate's count-down",
            opened.elapsed()
        );

        // (b) The crate's waiter opened by Java's count-down.
        let name = format!("{label}-wake-java-{tag}");
        let driver = (naming.java)(&name);
        assert!(java.bool(&format!("latchset {driver} 1")).await);
        let latch = client.get_count_down_latch(&name);
        let task = tokio::spawn({
            let latch = latch.clone();
            async move { latch.wait().await.unwrap() }
        });
        until_listening(raws, &[(0, key_of(&name))], true, || async {
            !task.is_finished()
        })
        .await;
        let opened = Instant::now();
        java.ok(&format!("latchdown {driver}")).await;
        tokio::time::timeout(WAKE_BOUND, task)
            .await
            .unwrap_or_else(|_| {
                panic!("{label}: Redisson {version}'s count-down did not open the crate's waiter")
            })
            .unwrap();
        eprintln!(
            "{label}: the crate's waiter went on {:?} after Redisson {version}'s count-down",
            opened.elapsed()
        );

        // (c) Count 2, a waiter on each side; one count-down from each side opens both.
        let name = format!("{label}-both-{tag}");
        let driver = (naming.java)(&name);
        let latch = client.get_count_down_latch(&name);
        assert!(latch.try_set_count(2).await.unwrap());
        let theirs = java.spawn(&format!("latchawait {driver} 20000 B")).await;
        let ours = tokio::spawn({
            let latch = latch.clone();
            async move { latch.wait_for(Duration::from_secs(20)).await.unwrap() }
        });
        java.ok(&format!("latchdown {driver}")).await;
        assert_eq!(latch.get_count().await.unwrap(), 1);
        assert_eq!(java.int(&format!("latchcount {driver}")).await, 1);
        latch.count_down().await.unwrap();
        assert_eq!(answer(&theirs, WAKE_BOUND).await, "true");
        assert!(
            tokio::time::timeout(WAKE_BOUND, ours)
                .await
                .unwrap()
                .unwrap()
        );
    }
}
