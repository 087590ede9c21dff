//! The read-write lock's two halves together against real Redisson
//! ([`check_read_write_halves`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use redisson_lock::fred::prelude::*;

use super::*;
use crate::support::real_java::Version;

type RawClient = redisson_lock::fred::prelude::Client;

// ---- the read-write lock's two halves together ----------------------------------------

pub(crate) fn rw_norm(name: &str, fields: &[(String, &str)]) -> Norm {
    let mut norm = Norm::new().with(name, "N0");
    for (field, role) in fields {
        norm = norm.with(field.clone(), *role);
    }
    norm
}

/// What the write half's [`Interop::check_lock_kind`] cannot show: read holds (theirs and
/// ours at once), a writer that also reads, wake-ups between the halves both ways, and
/// exclusion between one side's writers and the other's readers.
pub async fn check_read_write_halves(bed: &Interop) {
    let sides = bed.sides();
    if phase("state") {
        read_write_state(bed, &sides).await;
    }
    if phase("exclusion") {
        readers_together(bed, &sides).await;
    }
    if phase("wake") {
        read_write_wake_ups(bed, &sides).await;
    }
    if phase("exclusion") {
        read_write_exclusion(bed, &sides).await;
    }
}

/// Read holds, and a writer that also reads: the same state on both sides.
pub(crate) async fn read_write_state(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let lease = Duration::from_secs(20);
    let tolerance = Duration::from_millis(1_500);
    let rw = |n: &str| client.get_read_write_lock(n);
    let ours_fields = |n: u64| format!("{}:{n}", client.id());
    let crate_norm = |name: &str| rw_norm(name, &[(ours_fields(1), "R1"), (ours_fields(2), "R2")]);
    let java_norm = |side: &Side<'_>, name: &str| {
        rw_norm(
            name,
            &[
                (side.fields[&(0, "A".to_string())].clone(), "R1"),
                (side.fields[&(0, "B".to_string())].clone(), "R2"),
            ],
        )
    };
    let compare = |what: &str, ours: &Snapshot, java: &Snapshot, version: Version| {
        assert_same_state(
            &format!("rw, {what}, Redisson {version}"),
            ours,
            java,
            tolerance,
        )
    };
    // 1. Read holds: R1 twice, R2 once; then R1 gives one back.
    let name = "rw-read-state-rs";
    let (r1, r2) = (
        rw(name).read_lock().owned_by(1),
        rw(name).read_lock().owned_by(2),
    );
    for r in [&r1, &r1, &r2] {
        assert!(r.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
    }
    let held = snapshot(raw, name, &crate_norm(name)).await;
    eprintln!("rw, read holds: {:?}", held.0);
    r1.unlock().await.unwrap();
    let one_back = snapshot(raw, name, &crate_norm(name)).await;
    r1.unlock().await.unwrap();
    r2.unlock().await.unwrap();
    assert!(snapshot(raw, name, &crate_norm(name)).await.0.is_empty());
    for side in sides {
        let name = format!("rw-read-state-{}", side.tag());
        let norm = java_norm(side, &name);
        for thread in ["A", "A", "B"] {
            assert!(
                side.java
                    .bool(&format!(
                        "trylock read:{name} 0 {} {thread}",
                        lease.as_millis()
                    ))
                    .await
            );
        }
        compare(
            "read holds",
            &held,
            &snapshot(raw, &name, &norm).await,
            side.java.version(),
        );
        side.java.ok(&format!("unlock read:{name} A")).await;
        compare(
            "one read hold given back",
            &one_back,
            &snapshot(raw, &name, &norm).await,
            side.java.version(),
        );
        side.java.ok(&format!("unlock read:{name} A")).await;
        side.java.ok(&format!("unlock read:{name} B")).await;
        assert!(snapshot(raw, &name, &norm).await.0.is_empty());
    }

    // 2. A writer that also reads; then gives the read back.
    let name = "rw-write-state-rs";
    let (w, r) = (
        rw(name).write_lock().owned_by(1),
        rw(name).read_lock().owned_by(1),
    );
    assert!(w.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
    assert!(r.try_lock_with_lease(Duration::ZERO, lease).await.unwrap());
    let both = snapshot(raw, name, &crate_norm(name)).await;
    eprintln!("rw, a writer that reads: {:?}", both.0);
    r.unlock().await.unwrap();
    let write_only = snapshot(raw, name, &crate_norm(name)).await;
    w.unlock().await.unwrap();
    for side in sides {
        let name = format!("rw-write-state-{}", side.tag());
        let norm = java_norm(side, &name);
        let ms = lease.as_millis();
        assert!(
            side.java
                .bool(&format!("trylock write:{name} 0 {ms} A"))
                .await
        );
        assert!(
            side.java
                .bool(&format!("trylock read:{name} 0 {ms} A"))
                .await
        );
        compare(
            "a writer that reads",
            &both,
            &snapshot(raw, &name, &norm).await,
            side.java.version(),
        );
        side.java.ok(&format!("unlock read:{name} A")).await;
        compare(
            "the writer's read given back",
            &write_only,
            &snapshot(raw, &name, &norm).await,
            side.java.version(),
        );
        side.java.ok(&format!("unlock write:{name} A")).await;
    }
}

/// Readers together: the crate's and each version's at once; no writer gets in.
pub(crate) async fn readers_together(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let rw = |n: &str| client.get_read_write_lock(n);
    let name = "rw-share";
    let ours = rw(name).read_lock().owned_by(1);
    ours.lock_with_lease(WAKE_LEASE).await.unwrap();
    for side in sides {
        assert!(
            side.java.bool(&format!("trylock read:{name} 0 -1 A")).await,
            "Redisson {} reads beside the crate's reader",
            side.java.version()
        );
    }
    let readers: i64 = raw.hlen(name).await.unwrap();
    assert_eq!(
        readers as usize,
        1 + sides.len() + 1,
        "mode and one field per reader"
    );
    assert!(!rw(name).write_lock().owned_by(2).try_lock().await.unwrap());
    for side in sides {
        assert!(
            !side
                .java
                .bool(&format!("trylock write:{name} 0 -1 B"))
                .await
        );
    }
    ours.unlock().await.unwrap();
    for side in sides {
        side.java.ok(&format!("unlock read:{name} A")).await;
    }
}

/// Wake-ups between the halves, both ways, for each version.
pub(crate) async fn read_write_wake_ups(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raws = &bed.raws[..];
    let rw = |n: &str| client.get_read_write_lock(n);
    for side in sides {
        let java = side.java;
        let version = java.version();
        for (held_half, waiting_half) in [("write", "read"), ("read", "write")] {
            // (a) The crate holds one half; Java waits for the other.
            let name = format!("rw-wake-rs-{held_half}-{}", side.tag());
            let holder_read = rw(&name).read_lock().owned_by(1);
            let holder_write = rw(&name).write_lock().owned_by(1);
            if held_half == "write" {
                holder_write.lock_with_lease(WAKE_LEASE).await.unwrap();
            } else {
                holder_read.lock_with_lease(WAKE_LEASE).await.unwrap();
            }
            let waiter = java
                .spawn(&format!("lock {waiting_half}:{name} -1 B"))
                .await;
            until_listening(raws, &[(0, name.clone())], true, || async {
                waiter.poll().await.is_none()
            })
            .await;
            let released = Instant::now();
            if held_half == "write" {
                holder_write.unlock().await.unwrap();
            } else {
                holder_read.unlock().await.unwrap();
            }
            assert_eq!(answer(&waiter, WAKE_BOUND).await, "OK");
            eprintln!(
                "rw: a Redisson {version} {waiting_half} waiter took it {:?} after the crate's {held_half} unlock",
                released.elapsed()
            );
            java.ok(&format!("unlock {waiting_half}:{name} B")).await;

            // (b) Java holds one half; the crate waits for the other.
            let name = format!("rw-wake-java-{held_half}-{}", side.tag());
            java.ok(&format!(
                "lock {held_half}:{name} {} A",
                WAKE_LEASE.as_millis()
            ))
            .await;
            let task = if waiting_half == "read" {
                let l = rw(&name).read_lock().owned_by(2);
                tokio::spawn(async move {
                    l.lock().await.unwrap();
                    l.unlock().await.unwrap();
                })
            } else {
                let l = rw(&name).write_lock().owned_by(2);
                tokio::spawn(async move {
                    l.lock().await.unwrap();
                    l.unlock().await.unwrap();
                })
            };
            until_listening(raws, &[(0, name.clone())], true, || async {
                !task.is_finished()
            })
            .await;
            let released = Instant::now();
            java.ok(&format!("unlock {held_half}:{name} A")).await;
            tokio::time::timeout(WAKE_BOUND, task)
                .await
                .unwrap_or_else(|_| {
                    panic!("the crate's {waiting_half}er was not woken by Redisson {version}'s {held_half} unlock")
                })
                .unwrap();
            eprintln!(
                "rw: the crate's {waiting_half} waiter took it {:?} after Redisson {version}'s {held_half} unlock",
                released.elapsed()
            );
        }
    }
}

/// One side's writers against the other's readers.
pub(crate) async fn read_write_exclusion(bed: &Interop, sides: &[Side<'_>]) {
    let client = &bed.clients[0];
    let raw = &bed.raws[0];
    let rw = |n: &str| client.get_read_write_lock(n);
    //    Java's writers and readers
    //    stress the lock (each GETs and SETs a counter of its half); the crate's writers
    //    count on the writers' counter and watch the readers' one, its readers watch the
    //    writers' one: a counter of the other half that moves during a hold is a reader
    //    and a writer inside at once.
    let base = "rw-mx";
    let ck = "ck-rw";
    let write_counter = format!("{ck}:write:{base}0");
    let read_counter = format!("{ck}:read:{base}0");
    let mut pendings = Vec::new();
    for side in sides {
        for half in ["write", "read"] {
            pendings.push((
                side.java.version(),
                side.java
                    .spawn(&format!(
                        "stress {half}:{base} 1 {JAVA_THREADS} {ROUNDS} {HOLD_MAX_MS} {ck} {}",
                        bed.url()
                    ))
                    .await,
            ));
        }
    }
    let overlaps = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for writer in [true, false, true, false] {
        let rwl = rw(&format!("{base}0"));
        let (raw, overlaps) = (raw.clone(), overlaps.clone());
        let (mine, theirs) = if writer {
            (write_counter.clone(), read_counter.clone())
        } else {
            (read_counter.clone(), write_counter.clone())
        };
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                if writer {
                    rwl.write_lock().lock().await.unwrap();
                } else {
                    rwl.read_lock().lock().await.unwrap();
                }
                let seen: Option<i64> = raw.get(&mine).await.unwrap();
                let before: Option<i64> = raw.get(&theirs).await.unwrap();
                let hold = rand::thread_rng().gen_range(1..=HOLD_MAX_MS + 2);
                tokio::time::sleep(Duration::from_millis(hold)).await;
                let after: Option<i64> = raw.get(&theirs).await.unwrap();
                if before != after {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                if writer {
                    let _: () = raw
                        .set(&mine, seen.unwrap_or(0) + 1, None, None, false)
                        .await
                        .unwrap();
                    rwl.write_lock().unlock().await.unwrap();
                } else {
                    rwl.read_lock().unlock().await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("the crate's tasks finished")
            .unwrap();
    }
    let mut java_writes = 0;
    for (i, (version, pending)) in pendings.iter().enumerate() {
        let reply = answer(pending, Duration::from_secs(120)).await;
        assert_eq!(
            reply,
            format!("OK {} 0", JAVA_THREADS * ROUNDS),
            "Redisson {version}"
        );
        if i % 2 == 0 {
            java_writes += JAVA_THREADS * ROUNDS;
        }
    }
    let writes: i64 = raw.get(&write_counter).await.unwrap();
    let expected = (java_writes + 2 * ROUNDS) as i64;
    eprintln!(
        "rw: {expected} write holds, counter {writes}; {} overlaps seen",
        overlaps.load(Ordering::SeqCst)
    );
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "a reader and a writer held the lock at once"
    );
    assert_eq!(writes, expected, "two writers held the lock at once");
}
