//! `PermitExpirableSemaphore`: Redisson's `RPermitExpirableSemaphore` (sync protocol §4).
