//! Talking to Redis: where it is, how to reach it, and how scripts are sent.
//!
//! * [`scripts`]: how the Lua scripts are sent (`EVALSHA`, one load on `NOSCRIPT`, the
//!   slot on a cluster, what may be resent);
//! * [`replicas`]: Redisson's synced eval: `WAIT` for the replicas, with rollback;
//! * [`primary_switch`]: the gate that keeps every script off a primary the sentinels
//!   replaced, until the client is on the new one;
//! * [`redis`]: [`redis::Redis`], the one path from every primitive to Redis (the
//!   failover gate, the response timeout, the re-send policy, the replica `WAIT`);
//! * [`detach`]: [`detach::FinishOnDrop`], a call that once sent is finished even if its
//!   caller goes away (what makes acquires, unlocks and permit takes cancel safe);
//! * [`retry`]: the named pause schedules of every call tried again;
//! * [`routing_keeper`]: a fred client's routing task started again when fred ended it on
//!   an error.
//!
//! What it is told comes from a built [`Config`](crate::Config) (`src/config/`: where
//! Redis is, TLS, credentials, the lock settings); nothing here reads configuration.
//!
//! Who uses it: the client builds the connections and the [`Engine`](crate::engine::Engine)
//! (`src/engine/`), which holds the one [`redis::Redis`]; the lock engine, the
//! synchronizers and the hold machinery send through it. Nothing here knows a lock kind.

pub(crate) mod connect_error;
pub(crate) mod detach;
pub(crate) mod primary_switch;
pub(crate) mod redis;
pub(crate) mod replicas;
pub(crate) mod retry;
pub(crate) mod routing_keeper;
pub(crate) mod scripts;
