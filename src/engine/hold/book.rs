//! [`Book`]: one (lock, owner)'s hold count as the hold ledger keeps it (see
//! [`crate::engine::hold::ledger`]), stored in the registry's slot for that pair: the registry
//! holds it, the ledger reads and writes it, and neither needs the other's types.

use std::sync::Arc;

use tokio::time::Instant;

use crate::engine::hold::rounds::{NO_ROUND, RoundId};
use crate::engine::hold::state::{HoldSignal, instant, millis};

/// One (lock, owner)'s count, kept in the registry's slot for that pair (beside what the
/// watchdog renews, under one key: a client may hold many locks). A slot's book and its
/// registered hold live and leave on their own terms.
#[derive(Debug)]
pub(crate) struct Book {
    count: u32,
    /// When the owner took its first hold (ms since the signals' epoch, for the
    /// hold-time metric).
    since_ms: u64,
    /// How the last acquisition is kept.
    kept: Kept,
    /// An acquire whose outcome could not be learned.
    doubt: Option<Box<Doubt>>,
    /// The last renewal round that renewed the hold ([`crate::engine::hold::rounds`]; in the
    /// padding after `count`: no extra byte).
    round: RoundId,
}

/// How a book's last acquisition is kept, which says when its count stops counting.
#[derive(Debug)]
enum Kept {
    /// No acquisition yet (a doubt's book).
    Unknown,
    /// By the watchdog, until its signal says lost.
    Watchdog(Arc<HoldSignal>),
    /// By its lease, until this moment (ms since the signals' epoch).
    Until(u64),
}

#[derive(Debug, Default)]
struct Doubt {
    /// The count before that acquire; `None` once settled.
    before: Option<u32>,
    /// Serialises settling the doubt (the caller's next call and the background settler).
    settling: Arc<tokio::sync::Mutex<()>>,
}

impl Book {
    pub(crate) fn new() -> Book {
        Book {
            count: 0,
            since_ms: 0,
            kept: Kept::Unknown,
            doubt: None,
            round: NO_ROUND,
        }
    }

    /// Renewal round `id` renews this hold (see [`crate::engine::hold::rounds`]).
    pub(crate) fn renewed_in(&mut self, id: RoundId) {
        self.round = id;
    }

    /// The last renewal round that renewed this hold ([`NO_ROUND`]: none yet).
    pub(crate) fn last_round(&self) -> RoundId {
        self.round
    }

    /// The count before an acquire in doubt, if one is.
    pub(crate) fn in_doubt(&self) -> Option<u32> {
        self.doubt.as_ref().and_then(|d| d.before)
    }

    /// The count, or 0 once the lease ran out or the watchdog found the hold lost.
    pub(crate) fn live_count(&self) -> u32 {
        let over = match &self.kept {
            Kept::Unknown => false,
            Kept::Watchdog(signal) => signal.is_lost(),
            Kept::Until(end_ms) => millis(Instant::now()) >= *end_ms,
        };
        if over { 0 } else { self.count }
    }

    /// The lock that serialises settling the doubt, if one is.
    pub(crate) fn settling(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.doubt
            .as_ref()
            .filter(|d| d.before.is_some())
            .map(|d| d.settling.clone())
    }

    /// One acquisition reported to the caller (`lease_end`: a lease hold's end; `None`:
    /// a watchdog hold, kept until `lost` says lost).
    pub(crate) fn acquired(
        book: &mut Option<Book>,
        lease_end: Option<Instant>,
        lost: Arc<HoldSignal>,
    ) {
        let book = book.get_or_insert_with(Book::new);
        let live = book.live_count();
        if live == 0 {
            book.since_ms = millis(Instant::now());
        }
        book.count = live + 1;
        book.kept = match lease_end {
            Some(end) => Kept::Until(millis(end)),
            None => Kept::Watchdog(lost),
        };
    }

    /// One hold given back (`released`: the last one, which ends the book). Returns how
    /// long the owner held the lock when this ended the book.
    pub(crate) fn released(book: &mut Option<Book>, released: bool) -> Option<std::time::Duration> {
        if released {
            book.take().map(|b| instant(b.since_ms).elapsed())
        } else {
            if let Some(book) = book.as_mut() {
                book.count = book.count.saturating_sub(1);
            }
            None
        }
    }

    /// An acquire whose outcome is unknown: `before` is the count before it.
    pub(crate) fn mark_in_doubt(book: &mut Option<Book>, before: u32) {
        let book = book.get_or_insert_with(Book::new);
        book.count = before;
        book.doubt.get_or_insert_with(Default::default).before = Some(before);
    }

    /// A force unlock wiped the hash; `count` acquisitions of this owner were reported
    /// while it ran (after its script, as far as this client can tell): they are what
    /// Redis holds now.
    pub(crate) fn recount(book: &mut Option<Book>, count: u32) {
        if let Some(book) = book.as_mut() {
            book.count = count;
        }
    }

    /// The doubt is settled with `count` holds known to the caller (0 ends the book).
    pub(crate) fn settled(book: &mut Option<Book>, count: u32) {
        if count == 0 {
            *book = None;
        } else if let Some(book) = book.as_mut() {
            if let Some(doubt) = book.doubt.as_mut() {
                doubt.before = None;
            }
            book.count = count;
        }
    }
}
