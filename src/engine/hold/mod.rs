//! What keeps a hold alive and tells its holder: everything the client knows about the
//! holds it has, whatever is held.
//!
//! * [`state`]: a hold's signal (`Held` / `AtRisk` / `Lost`), its deadlines and margins;
//! * [`watch`]: [`watch::HoldWatch`], what a guard says about its hold(s): one signal, or
//!   a group's under its rule; the one type behind every guard's hold methods;
//! * [`held`]: what a hold is in Redis for this machinery ([`held::Held`]): which batched
//!   script renews it and which checks it; the lock kinds implement it in
//!   `lock/holds.rs`, a permit-expirable semaphore's kept permit in
//!   `synchronizers/permit_expirable/hold.rs`;
//! * [`registry`]: every hold by (name, owner), with its signal: what the watchdog
//!   renews and the sentry watches;
//! * [`ledger`]: how many holds each (name, owner) has as far as the caller was told, to
//!   settle an acquire whose reply was lost; each count is a [`book::Book`] kept in the
//!   registry's slot of its (name, owner);
//! * [`renewal`]: the watchdog, one timer per client sending batched scripts;
//! * [`rounds`]: the renewal rounds in flight, which an unlock of a hold they renew
//!   waits for;
//! * [`sentry`]: tells holders at risk on a fault or a deadline, and checks their holds
//!   after a reconnect;
//! * [`failover_watch`]: the sentinels' `+switch-master`;
//! * [`tracking`]: `CLIENT TRACKING`: a holder told at once when anyone else changes its
//!   key.
//!
//! Who uses it: the lock engine (`lock/`) registers and releases holds; every guard
//! (locks', groups', kept permits', async and blocking) tells its holder through a
//! [`watch::HoldWatch`]; the client (`client.rs`) starts the watchdog, the sentry and the
//! failover watch and clears the registry on shutdown. Nothing here knows a lock kind, a key
//! format or a script of a kind: those come in through [`held::Held`].

pub(crate) mod book;
pub(crate) mod failover_watch;
pub(crate) mod guard_methods;
pub(crate) mod held;
pub(crate) mod ledger;
pub(crate) mod registry;
pub(crate) mod renewal;
pub(crate) mod rounds;
pub(crate) mod sentry;
pub(crate) mod state;
pub(crate) mod tracking;
pub(crate) mod watch;
