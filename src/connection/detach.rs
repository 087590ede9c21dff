//! [`FinishOnDrop`]: a future that, when dropped before it completes, is finished in the
//! background instead of being lost half-way.
//!
//! This is what makes acquire and unlock cancel safe: once an acquire script may have
//! been sent, dropping the caller's future must not leave a lock that nobody will release.
//! The inner future keeps running on the runtime, and its outcome goes to an `abandoned`
//! handler (which, for an acquire that succeeded, releases the lock again).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a [`FinishOnDrop`]'s drop hook returns: kept until the abandoned work and its
/// handler are over (e.g. a mark that makes the owner's next call wait for them).
pub(crate) type Kept = Option<Box<dyn Send>>;

/// See the module docs. The work is boxed (a future that was polled cannot be moved out
/// to finish elsewhere unless it lives in a box); the abandon handler is not. `H`, set
/// by [`FinishOnDrop::keeping`], runs at the drop itself, before the work is handed over.
pub(crate) struct FinishOnDrop<T, A, AF, H = fn() -> Kept>
where
    T: Send + 'static,
    A: FnOnce(T) -> AF + Send + 'static,
    AF: Future<Output = ()> + Send + 'static,
    H: FnOnce() -> Kept,
{
    work: Option<BoxFuture<T>>,
    abandoned: Option<A>,
    on_drop: Option<H>,
    _handler: std::marker::PhantomData<fn() -> AF>,
}

// Nothing is pinned in place: the work lives in its own box, and the handler is only
// ever moved out whole.
impl<T, A, AF, H> Unpin for FinishOnDrop<T, A, AF, H>
where
    T: Send + 'static,
    A: FnOnce(T) -> AF + Send + 'static,
    AF: Future<Output = ()> + Send + 'static,
    H: FnOnce() -> Kept,
{
}

impl<T, A, AF> FinishOnDrop<T, A, AF>
where
    T: Send + 'static,
    A: FnOnce(T) -> AF + Send + 'static,
    AF: Future<Output = ()> + Send + 'static,
{
    /// Runs `work`; if this future is dropped before `work` completes, `work` is finished
    /// on the current runtime and its output handed to `abandoned`.
    pub(crate) fn new<W>(work: W, abandoned: A) -> Self
    where
        W: Future<Output = T> + Send + 'static,
    {
        FinishOnDrop {
            work: Some(Box::pin(work)),
            abandoned: Some(abandoned),
            on_drop: None,
            _handler: std::marker::PhantomData,
        }
    }

    /// Runs `hook` when this future is dropped before `work` completes, at the drop
    /// itself; what it returns is kept until the work and the abandon handler are over.
    pub(crate) fn keeping<H>(mut self, hook: H) -> FinishOnDrop<T, A, AF, H>
    where
        H: FnOnce() -> Kept,
    {
        FinishOnDrop {
            work: self.work.take(),
            abandoned: self.abandoned.take(),
            on_drop: Some(hook),
            _handler: std::marker::PhantomData,
        }
    }
}

impl<T, A, AF, H> Future for FinishOnDrop<T, A, AF, H>
where
    T: Send + 'static,
    A: FnOnce(T) -> AF + Send + 'static,
    AF: Future<Output = ()> + Send + 'static,
    H: FnOnce() -> Kept,
{
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(work) = self.work.as_mut() else {
            // Polled again after completion: stay pending rather than panic.
            return Poll::Pending;
        };
        match work.as_mut().poll(cx) {
            Poll::Ready(output) => {
                self.work = None;
                self.abandoned = None;
                self.on_drop = None;
                Poll::Ready(output)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T, A, AF, H> Drop for FinishOnDrop<T, A, AF, H>
where
    T: Send + 'static,
    A: FnOnce(T) -> AF + Send + 'static,
    AF: Future<Output = ()> + Send + 'static,
    H: FnOnce() -> Kept,
{
    fn drop(&mut self) {
        if let (Some(work), Some(abandoned)) = (self.work.take(), self.abandoned.take()) {
            let kept = self.on_drop.take().and_then(|hook| hook());
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        abandoned(work.await).await;
                        drop(kept);
                    });
                }
                Err(_) => tracing::warn!(
                    "a lock operation was dropped outside a tokio runtime; it cannot be finished"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn dropped_work_is_finished_and_handed_over() {
        let seen = Arc::new(AtomicU32::new(0));
        let seen2 = seen.clone();
        let fut = FinishOnDrop::new(
            async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                7u32
            },
            move |v| async move {
                seen2.store(v, Ordering::SeqCst);
            },
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(1), fut)
                .await
                .is_err()
        );
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(seen.load(Ordering::SeqCst), 7);
    }

    #[tokio::test]
    async fn completed_work_is_not_handed_over() {
        let seen = Arc::new(AtomicU32::new(0));
        let seen2 = seen.clone();
        let v = FinishOnDrop::new(async { 3u32 }, move |v| async move {
            seen2.store(v, Ordering::SeqCst);
        })
        .await;
        assert_eq!(v, 3);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(seen.load(Ordering::SeqCst), 0);
    }
}
