//! [`Redis`]: the one path from every primitive to Redis.
//!
//! Every script and every query of every lock, semaphore, latch and renewal goes through
//! a `Redis`, which owns what each of them needs on the way:
//!
//! * the failover gate ([`PrimarySwitch`]): nothing is sent to a primary the sentinels
//!   replaced, and a reply that crossed a switch is an unknown outcome;
//! * the response timeout (`Config`'s `response_timeout`) of every command;
//! * the re-send policy ([`Resend`]): a script that changes a count is written at most
//!   once, a read may be sent again;
//! * the replica `WAIT` behind a script that changes a hold (Redisson's synced eval,
//!   [`ReplicaSync`]).
//!
//! Invariant: no primitive holds a fred client of its own; the only other senders are
//! the pub/sub registry (its own connection) and the client's shutdown.
//!
//! It knows nothing of locks, holds or waiting: it sends what it is given.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::Value;

use super::primary_switch::{PrimarySwitch, is_replaced};
use super::replicas::{ReplicaSync, Synced};
use super::scripts::{Resend, Script, ScriptCall, ScriptKey};

/// See the module docs. Cheap to clone (reference counts).
#[derive(Debug, Clone)]
pub(crate) struct Redis {
    client: fred::prelude::Client,
    switch: Arc<PrimarySwitch>,
    replicas: Arc<ReplicaSync>,
    timeout: Duration,
}

impl Redis {
    pub(crate) fn new(
        client: fred::prelude::Client,
        switch: Arc<PrimarySwitch>,
        replicas: Arc<ReplicaSync>,
        timeout: Duration,
    ) -> Redis {
        Redis {
            client,
            switch,
            replicas,
            timeout,
        }
    }

    /// The command connection, for what is not a command (connection events, the
    /// cluster's slot map, `QUIT`, and [`Client::redis`](crate::Client::redis)): every
    /// command of the crate goes through the methods below.
    pub(crate) fn client(&self) -> &fred::prelude::Client {
        &self.client
    }

    /// The response timeout every command gets.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends one script call through the gate, with the response timeout and `resend`.
    pub(crate) async fn run(
        &self,
        call: &ScriptCall,
        resend: Resend,
    ) -> Result<Value, fred::error::Error> {
        self.eval(call.script, &call.keys, &call.args, resend).await
    }

    /// [`Redis::run`] for a script that changes a hold, followed by `WAIT` for the
    /// replicas in the same pipeline when the configuration asks for it.
    pub(crate) async fn run_synced(
        &self,
        call: &ScriptCall,
        resend: Resend,
    ) -> Result<(Value, Synced), fred::error::Error> {
        self.eval_synced(call.script, &call.keys, &call.args, resend)
            .await
    }

    /// [`Redis::run`] of `script` with `keys` (text or ready-made values) and `args`.
    pub(crate) async fn eval<S: ScriptKey>(
        &self,
        script: &Script,
        keys: &[S],
        args: &[Value],
        resend: Resend,
    ) -> Result<Value, fred::error::Error> {
        self.switch
            .guarded(self.timeout, || {
                script.run(&self.client, keys, args, resend, self.timeout)
            })
            .await
    }

    /// [`Redis::run_synced`] of `script` with `keys` and `args`.
    pub(crate) async fn eval_synced<S: ScriptKey>(
        &self,
        script: &Script,
        keys: &[S],
        args: &[Value],
        resend: Resend,
    ) -> Result<(Value, Synced), fred::error::Error> {
        self.switch
            .guarded(self.timeout, || {
                script.run_synced(
                    &self.client,
                    keys,
                    args,
                    resend,
                    self.timeout,
                    &self.replicas,
                )
            })
            .await
    }

    /// One batch of a renewal round or of a hold check (a watchdog round, the sentry's or
    /// the tracker's check) in hash slot `slot`, through the gate like every script: at a
    /// pending switch it waits (up to the response timeout) and is not sent to the
    /// replaced primary; a reply that crossed a switch is an unknown outcome, never a
    /// confirmation. `read_only`: sent as `EVALSHA_RO` (a check, whose keys a connection
    /// with `CLIENT TRACKING` then tracks), else as a script that may run twice (a renewal
    /// re-sent after a reconnect re-arms the same leases). `push_call` writes the
    /// numkeys, keys and arguments.
    pub(crate) async fn run_batch(
        &self,
        script: &Script,
        slot: u16,
        read_only: bool,
        push_call: impl Fn(&mut Vec<Value>),
    ) -> Result<Value, fred::error::Error> {
        self.switch
            .guarded(self.timeout, || async {
                if read_only {
                    script
                        .run_read_only_in_slot(&self.client, slot, self.timeout, push_call)
                        .await
                } else {
                    script
                        .run_in_slot(&self.client, slot, Resend::Allowed, self.timeout, push_call)
                        .await
                }
            })
            .await
    }

    /// Any other command (a read, a delete, `EXPIRE`, ...), built by `command` on the
    /// command connection, through the gate. fred applies the response timeout (its
    /// default command timeout) and its own re-send policy: these commands are
    /// idempotent, so one whose reply crossed a failover switch (it may describe the
    /// replaced primary) is asked again, once, on the new primary: a query never answers
    /// from a replaced primary.
    pub(crate) async fn query<'a, T, F, Fut>(&'a self, command: F) -> Result<T, fred::error::Error>
    where
        F: Fn(&'a fred::prelude::Client) -> Fut,
        Fut: Future<Output = Result<T, fred::error::Error>> + 'a,
    {
        match self
            .switch
            .guarded(self.timeout, || command(&self.client))
            .await
        {
            Err(error) if is_replaced(&error) => {
                self.switch
                    .guarded(self.timeout, || command(&self.client))
                    .await
            }
            answer => answer,
        }
    }

    /// Waits (up to the response timeout) until no failover switch is pending; returns
    /// the epoch a round of several calls is sent under (see [`Redis::switched_since`]).
    pub(crate) async fn ready(&self) -> Result<u64, fred::error::Error> {
        self.switch.ready(self.timeout).await
    }

    /// Whether a switch was announced since `epoch`: replies to calls sent under it came
    /// from (or were lost with) a replaced primary.
    pub(crate) fn switched_since(&self, epoch: u64) -> bool {
        self.switch.epoch() != epoch
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use fred::prelude::Builder;

    use super::*;
    use crate::config::Config;

    fn redis(switch: Arc<PrimarySwitch>) -> Redis {
        let config = Config::from_url("redis://127.0.0.1:1").expect("url");
        let client = Builder::from_config(config.redis.clone())
            .build()
            .expect("client");
        let replicas = Arc::new(ReplicaSync::new(&config, switch.clone()));
        Redis::new(client, switch, replicas, Duration::from_millis(100))
    }

    #[tokio::test]
    async fn a_query_answered_across_a_switch_is_asked_again_on_the_new_primary() {
        let switch = Arc::new(PrimarySwitch::default());
        let redis = redis(switch.clone());
        let asked = AtomicU32::new(0);
        let answer = redis
            .query(|_| async {
                if asked.fetch_add(1, Ordering::SeqCst) == 0 {
                    // The sentinels announce a switch (and the client reaches the new
                    // primary) while this one is in flight on the old one.
                    let epoch = switch.announce("127.0.0.1:7001").expect("a new switch");
                    switch.arrive(epoch);
                    Ok("from the replaced primary")
                } else {
                    Ok("from the new primary")
                }
            })
            .await;
        assert_eq!(answer.ok(), Some("from the new primary"));
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_renewal_batch_waits_at_a_closed_gate_and_is_not_sent() {
        let switch = Arc::new(PrimarySwitch::default());
        let redis = redis(switch.clone());
        switch.announce("127.0.0.1:7001").expect("a new switch");
        let script = Script::new("return 1");
        let pushed = AtomicU32::new(0);
        for read_only in [false, true] {
            let answer = redis
                .run_batch(&script, 0, read_only, |call| {
                    pushed.fetch_add(1, Ordering::SeqCst);
                    call.push(Value::from(0));
                })
                .await;
            assert!(answer.is_err_and(|e| crate::connection::scripts::not_sent(&e)));
        }
        assert_eq!(
            pushed.load(Ordering::SeqCst),
            0,
            "nothing was built to send"
        );
    }

    #[tokio::test]
    async fn a_query_waits_at_a_closed_gate_and_is_not_sent() {
        let switch = Arc::new(PrimarySwitch::default());
        let redis = redis(switch.clone());
        switch.announce("127.0.0.1:7001").expect("a new switch");
        let asked = AtomicU32::new(0);
        let answer = redis
            .query(|_| async {
                asked.fetch_add(1, Ordering::SeqCst);
                Ok(1)
            })
            .await;
        assert!(answer.is_err_and(|e| crate::connection::scripts::not_sent(&e)));
        assert_eq!(asked.load(Ordering::SeqCst), 0);
    }
}
