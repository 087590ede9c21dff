//! A counting global allocator: `std::alloc::System`, plus two relaxed counters (heap
//! allocations and bytes requested), so that a scenario can report allocations per
//! operation over its measured window (see [`crate::measure::drive`]).
//!
//! The counts are process-wide: they include fred's connection task, tokio's internals
//! and the bench's own bookkeeping (latency vectors, which grow by doubling and so add
//! next to nothing per operation), not only the lock calls. `realloc` counts as one
//! allocation of its new size. Frees are not counted as operations; they only bring the
//! live heap ([`Live`]) down, which the `memory` scenario reads per held lock.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed (requested sizes: the allocator's own rounding and
/// headers are not in it).
static LIVE: AtomicU64 = AtomicU64::new(0);
/// Allocations not yet freed.
static LIVE_COUNT: AtomicU64 = AtomicU64::new(0);

pub struct Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

fn count(size: usize) {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
    LIVE.fetch_add(size as u64, Ordering::Relaxed);
    LIVE_COUNT.fetch_add(1, Ordering::Relaxed);
}

fn freed(size: usize) {
    LIVE.fetch_sub(size as u64, Ordering::Relaxed);
    LIVE_COUNT.fetch_sub(1, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`; counting touches only atomics
// (no allocation, no panic).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            count(layout.size());
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            count(layout.size());
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            count(new_size);
            freed(layout.size());
            System.realloc(ptr, layout, new_size)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        freed(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations and bytes allocated so far (process-wide, since start).
#[derive(Clone, Copy, Default)]
pub struct Allocs {
    pub count: u64,
    pub bytes: u64,
}

/// The heap in use now, process-wide: allocations not yet freed and the bytes they
/// requested (the allocator's own headers and rounding are not in it).
#[derive(Clone, Copy, Default)]
pub struct Live {
    pub count: u64,
    pub bytes: u64,
}

impl Live {
    pub fn now() -> Live {
        Live {
            count: LIVE_COUNT.load(Ordering::Relaxed),
            bytes: LIVE.load(Ordering::Relaxed),
        }
    }

    /// Growth from `earlier` to `self`, per one of `n` things (negative if it shrank).
    pub fn per(self, earlier: Live, n: usize) -> (f64, f64) {
        let n = n.max(1) as f64;
        (
            (self.count as f64 - earlier.count as f64) / n,
            (self.bytes as f64 - earlier.bytes as f64) / n,
        )
    }
}

impl Allocs {
    pub fn now() -> Allocs {
        Allocs {
            count: ALLOCS.load(Ordering::Relaxed),
            bytes: BYTES.load(Ordering::Relaxed),
        }
    }

    /// What was allocated between `earlier` and `self`.
    pub fn since(self, earlier: Allocs) -> Allocs {
        Allocs {
            count: self.count.saturating_sub(earlier.count),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}
