//! `CountDownLatch`: Redisson's `RCountDownLatch` (sync protocol §5).
