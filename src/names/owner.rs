//! Who owns a lock: [`LockOwner`], and how the current task's identity is found.
//!
//! Invariants: two tasks alive at the same time never share an owner id; one task keeps
//! its id across `.await`s and worker threads; code outside any task uses its OS thread.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Owner ids of tokio tasks are `TASK_OWNER_BASE + task id`.
const TASK_OWNER_BASE: u64 = 1 << 62;
/// Owner ids of OS threads (code not running in a tokio task) are
/// `THREAD_OWNER_BASE + n`, `n` counting threads from 1 in order of first use.
const THREAD_OWNER_BASE: u64 = 1 << 61;

/// The owner of a lock hold: the "thread id" half of Redisson's `<client-uuid>:<thread-id>`
/// hash field.
///
/// Redisson writes the Java thread id there. In async Rust a thread is the wrong unit,
/// since tasks move between worker threads and many tasks share one thread, so this crate
/// uses the following model:
///
/// * **Inside a tokio task** (anything spawned with `tokio::spawn`, `spawn_local`, a
///   `JoinSet`, ...) the owner is the task: `2^62 + tokio task id`. Two tasks alive at the
///   same time are two owners, even on a current-thread runtime; one task keeps its owner
///   across `.await`s and worker threads, so re-entry works in recursive `async fn`s.
/// * **Outside any task** (the future given to `block_on`, including the body of
///   `#[tokio::main]` and `#[tokio::test]`, or plain blocking code) the owner is the OS
///   thread: `2^61 + n`, where `n` numbers this process's threads in order of first use.
/// * **Explicitly**, [`RLock::with_owner`](crate::RLock::with_owner) with
///   [`LockOwner::from_raw`] acts as any id you choose: to take a lock in one task and
///   release it in another, or to agree on an id with a Java thread. Ids below `2^61`
///   never collide with the automatic ones.
///
/// Futures joined inside one task (`join!`, `select!`, `FuturesUnordered`) run in that
/// task and therefore share its owner, exactly as code on one Java thread shares a
/// thread id: re-entry, not exclusion. Spawn tasks when you need exclusion between them.
///
/// On the wire the owner is its decimal number, which is what `Display` prints.
///
/// # Examples
/// ```
/// use redisson_lock::LockOwner;
///
/// let owner = LockOwner::from_raw(42);
/// assert_eq!(owner.to_string(), "42");
/// assert_eq!(owner.as_raw(), 42);
///
/// // Outside a task, the owner is the calling thread, and it is stable.
/// assert_eq!(LockOwner::current(), LockOwner::current());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct LockOwner(u64);

impl LockOwner {
    /// An owner with an explicit id, as Redisson's `threadId` overloads take.
    ///
    /// # Examples
    /// ```
    /// let owner = redisson_lock::LockOwner::from_raw(731);
    /// assert_eq!(owner.to_string(), "731");
    /// ```
    pub const fn from_raw(id: u64) -> Self {
        LockOwner(id)
    }

    /// The id as it goes on the wire.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::LockOwner::from_raw(7).as_raw(), 7);
    /// ```
    pub const fn as_raw(self) -> u64 {
        self.0
    }

    /// Whether this is a task's or a thread's own id (not one set with `with_owner`):
    /// such an owner is used by nobody else.
    pub(crate) const fn is_automatic(self) -> bool {
        self.0 >= THREAD_OWNER_BASE
    }

    /// The owner of the calling code: the current tokio task, or, outside any task, the
    /// current OS thread. See the type's documentation for the model.
    ///
    /// # Examples
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use redisson_lock::LockOwner;
    /// let a = tokio::spawn(async { LockOwner::current() }).await.unwrap();
    /// let b = tokio::spawn(async { LockOwner::current() }).await.unwrap();
    /// assert_ne!(a, b);
    /// # }
    /// ```
    pub fn current() -> Self {
        match tokio::task::try_id() {
            Some(id) => LockOwner(TASK_OWNER_BASE + task_id_number(id)),
            None => Self::current_thread(),
        }
    }

    /// The owner of the calling OS thread, whether or not it runs a task. Blocking code
    /// that must agree with [`LockOwner::current`] called from the same thread outside any
    /// task can use this.
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::LockOwner;
    /// let here = LockOwner::current_thread();
    /// let there = std::thread::spawn(LockOwner::current_thread).join().unwrap();
    /// assert_ne!(here, there);
    /// ```
    pub fn current_thread() -> Self {
        static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            static THREAD_OWNER: Cell<u64> = const { Cell::new(0) };
        }
        THREAD_OWNER.with(|cell| {
            if cell.get() == 0 {
                cell.set(THREAD_OWNER_BASE + NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
            }
            LockOwner(cell.get())
        })
    }
}

impl fmt::Display for LockOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<u64> for LockOwner {
    fn from(id: u64) -> Self {
        LockOwner(id)
    }
}

/// tokio's task id is a process-wide counter that it shows only through `Display`; read
/// the number back without allocating.
fn task_id_number(id: tokio::task::Id) -> u64 {
    struct Digits {
        value: u64,
    }
    impl fmt::Write for Digits {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for b in s.bytes() {
                let digit = b.wrapping_sub(b'0');
                if digit > 9 {
                    return Err(fmt::Error);
                }
                self.value = self
                    .value
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(u64::from(digit)))
                    .ok_or(fmt::Error)?;
            }
            Ok(())
        }
    }
    let mut digits = Digits { value: 0 };
    match fmt::write(&mut digits, format_args!("{id}")) {
        // Task ids stay far below 2^61, so the sum with TASK_OWNER_BASE cannot overflow.
        Ok(()) => digits.value % THREAD_OWNER_BASE,
        // Not a plain number (a future tokio): fall back to a stable hash of the id.
        Err(_) => {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            id.hash(&mut h);
            h.finish() % THREAD_OWNER_BASE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_owner_is_stable_and_distinct() {
        let here = LockOwner::current_thread();
        assert_eq!(here, LockOwner::current_thread());
        assert_eq!(
            LockOwner::current(),
            here,
            "outside a task the thread is the owner"
        );
        let there = std::thread::spawn(LockOwner::current_thread)
            .join()
            .unwrap();
        assert_ne!(here, there);
        assert!(here.as_raw() >= THREAD_OWNER_BASE && here.as_raw() < TASK_OWNER_BASE);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn tasks_are_distinct_owners_on_one_thread() {
        let a = tokio::spawn(async { (LockOwner::current(), tokio::task::id()) });
        let b = tokio::spawn(async { (LockOwner::current(), tokio::task::id()) });
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert_ne!(a.0, b.0);
        assert_eq!(
            a.0.to_string(),
            (TASK_OWNER_BASE + a.1.to_string().parse::<u64>().unwrap()).to_string()
        );
    }
}
