//! The one wait under every primitive: subscribe, arm the wake-up, try, sleep until a
//! message, a hint, the re-check or the deadline, try again; give up at the deadline.
//! Every lock kind, the semaphores and the latch wait through it; each supplies only its
//! try (and what a try's answer hints) and its channel's wake rule (the decoder it
//! subscribes with, [`crate::engine::wait::messages`]).
//!
//! The same semantics for every primitive:
//!
//! | what happens | what the waiter does |
//! |---|---|
//! | subscribing is slow | with a deadline: waits for it until the deadline, then gives up (`false` / `None`); without one: [`Error::Timeout`] after the subscription timeout |
//! | a message it reads as a wake-up | tries again at once |
//! | a message was lost (a dropped connection's, or a change nobody published) | tries again at the latest [`RECHECK`] after its last try |
//! | the try hints when things change (a holder's TTL, the earliest lease's end, a back-off step) | tries again then at the latest |
//! | the deadline passes | wakes at it, tries once more, then gives up; never sleeps past it |
//! | the client shuts down | [`Error::Shutdown`] at its next wake-up |
//! | the caller drops the future | the subscription share goes with it; a try in flight is finished by the primitive ([`FinishOnDrop`](crate::connection::detach::FinishOnDrop)) |
//!
//! Invariants: a wake-up is armed (enabled) before the try it follows, so a message
//! published after the try read the state is never lost; a wake-up stored before the
//! arming (a message that came while nobody waited) is spent then
//! ([`spend_stored`]), since the try that follows sees whatever that message
//! announced, and costs no second try. (The head of a local line keeps it: it may not
//! try right away, see `lock/line_head.rs`.)

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::time::Instant;

use super::messages::Messages;
use super::pubsub::{PubSub, Subscription};
use crate::error::{Error, Result};

/// The longest any waiter sleeps without a message or a hint before it tries again.
pub(crate) const RECHECK: Duration = Duration::from_secs(2);

/// What a primitive's try found.
#[derive(Debug)]
pub(crate) enum Tried<T> {
    /// Done (taken, opened): the wait ends with it.
    Done(T),
    /// Not yet: try again after a wake-up, at the latest after this hint (the holder's
    /// TTL, the earliest lease's end; `None`: nothing to hint).
    NotYet(Option<Duration>),
}

/// How long a wait may last.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// When the waiter gives up; `None`: never.
    pub(crate) deadline: Option<Instant>,
    /// How long subscribing may take when there is no deadline.
    pub(crate) subscription_timeout: Duration,
}

/// The channel a waiter listens on and how its messages wake (the primitive's wake
/// rule); `marker`: a channel subscribed in the same command (a local line's mark, see
/// [`crate::engine::wait::local_queue`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Listen<'a> {
    pub(crate) channel: &'a str,
    pub(crate) messages: Messages,
    pub(crate) marker: Option<&'a str>,
    /// What is subscribed to, for [`Error::Timeout`] (`"the lock channel"`).
    pub(crate) what: &'static str,
}

/// Takes a share of `listen`'s subscription within `budget`: `Ok(None)` when the
/// deadline passed first; without a deadline, [`Error::Timeout`] after the subscription
/// timeout. `error` names a Redis error as the primitive's.
pub(crate) async fn subscribe(
    pubsub: &Arc<PubSub>,
    listen: Listen<'_>,
    budget: Budget,
    error: impl FnOnce(fred::error::Error) -> Error,
) -> Result<Option<Subscription>> {
    // Boxed: subscribing is a large future (fred's subscribe and its confirmation) that
    // runs once per wait; inline, every waiting task would carry its size while it waits.
    let subscribe = Box::pin(pubsub.subscribe(listen.channel, listen.messages, listen.marker));
    let subscribed = match budget.deadline {
        Some(deadline) => match tokio::time::timeout_at(deadline, subscribe).await {
            Ok(subscribed) => subscribed,
            Err(_) => return Ok(None),
        },
        None => {
            let limit = budget.subscription_timeout;
            match tokio::time::timeout(limit, subscribe).await {
                Ok(subscribed) => subscribed,
                Err(_) => {
                    return Err(Error::Timeout {
                        what: listen.what,
                        after: limit,
                    });
                }
            }
        }
    };
    subscribed.map(Some).map_err(error)
}

/// Arms a round's wake-up before a try: `notified` (of the waiter's subscription,
/// pinned by the caller: a round costs no allocation) is enabled; checks the shutdown.
pub(crate) fn arm(pubsub: &PubSub, notified: Pin<&mut Notified<'_>>) -> Result<()> {
    notified.enable();
    if pubsub.is_closed() {
        return Err(Error::Shutdown);
    }
    Ok(())
}

/// Spends a wake-up stored before the arming (a message that came while nobody waited):
/// the try that follows sees whatever it announced (see the module docs). Returns
/// whether one was spent: a caller that was not going to try this round must try now
/// (the message is gone, and nothing else would tell it before the re-check).
pub(crate) fn spend_stored<'a>(
    mut notified: Pin<&mut Notified<'a>>,
    subscription: &'a Subscription,
) -> bool {
    if futures::FutureExt::now_or_never(notified.as_mut()).is_some() {
        notified.set(subscription.notified());
        notified.as_mut().enable();
        return true;
    }
    false
}

/// Why a sleep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A message of the channel.
    Message,
    /// The primitive's other wake-up (a local hand-off, a release's answer).
    Other,
    /// The hint, the re-check, or the deadline (a last try is due).
    Timer,
    /// The deadline had passed: give up without trying.
    Deadline,
}

/// Sleeps after a try that did not succeed: until `armed`'s message, `other` (the
/// primitive's own wake-up, if any), the `hint`, [`RECHECK`] or the deadline, whichever
/// comes first (woken at the deadline, the waiter tries once more). Returns
/// [`Woke::Deadline`] without sleeping when the deadline has passed.
pub(crate) async fn sleep<F: Future<Output = ()>>(
    armed: Option<Pin<&mut Notified<'_>>>,
    other: Option<F>,
    hint: Option<Duration>,
    deadline: Option<Instant>,
) -> Woke {
    let bound = Some(hint.map_or(RECHECK, |h| h.min(RECHECK)));
    sleep_bounded(armed, other, bound, deadline).await
}

/// [`sleep`] bounded by `bound` alone (`None`: by nothing but the deadline), not by the
/// re-check: for a waiter that does not wait for a message (the head of a local line
/// behind a local holder, which its unlock wakes).
pub(crate) async fn sleep_bounded<F: Future<Output = ()>>(
    armed: Option<Pin<&mut Notified<'_>>>,
    other: Option<F>,
    bound: Option<Duration>,
    deadline: Option<Instant>,
) -> Woke {
    let now = Instant::now();
    if deadline.is_some_and(|d| now >= d) {
        return Woke::Deadline;
    }
    // Woken at the deadline, the waiter makes a last try (see the module docs).
    let retry_at = bound.and_then(|b| now.checked_add(b));
    let until = match (retry_at, deadline) {
        (Some(r), Some(d)) => Some(r.min(d)),
        (r, d) => r.or(d),
    };
    let message = async {
        match armed {
            Some(armed) => armed.await,
            None => std::future::pending().await,
        }
    };
    let other = async {
        match other {
            Some(other) => other.await,
            None => std::future::pending().await,
        }
    };
    let timer = async {
        match until {
            Some(until) => tokio::time::sleep_until(until).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = message => Woke::Message,
        _ = other => Woke::Other,
        _ = timer => Woke::Timer,
    }
}

/// The whole wait of a primitive that supplies only its try: arm, `try_once`, sleep, and
/// again, until the try is done (`Ok(Some)`), the deadline passed (`Ok(None)`) or an
/// error. The caller subscribed (see [`subscribe`]) and made its first try before.
pub(crate) async fn wait_for<T, F, Fut>(
    pubsub: &PubSub,
    subscription: &Subscription,
    deadline: Option<Instant>,
    mut try_once: F,
) -> Result<Option<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Tried<T>>>,
{
    loop {
        let armed = subscription.notified();
        tokio::pin!(armed);
        arm(pubsub, armed.as_mut())?;
        // Spent or not, a try follows.
        let _ = spend_stored(armed.as_mut(), subscription);
        let hint = match try_once().await? {
            Tried::Done(done) => return Ok(Some(done)),
            Tried::NotYet(hint) => hint,
        };
        let woke = sleep(
            Some(armed),
            None::<std::future::Pending<()>>,
            hint,
            deadline,
        )
        .await;
        if woke == Woke::Deadline {
            return Ok(None);
        }
    }
}
