//! `Semaphore`: Redisson's `RSemaphore` (sync protocol §3).
