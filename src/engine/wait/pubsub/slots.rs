//! How a subscription follows its slot on a cluster (see the parent's module docs): the
//! topology scan, the refresh of the subscriber's slot map, subscribing again on a slot's
//! new owner, and where each channel's subscription lives.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use fred::prelude::{ClientLike, ClusterInterface, PubsubInterface, Value};
use fred::types::cluster::ClusterRouting;
use fred::types::{ClusterHash, CustomCommand};

use super::{Channel, PubSub};

impl PubSub {
    /// Whether the subscription of `name`, placed on node `home`, is gone or misplaced
    /// per `routing`: a sharded channel whose slot has another owner (the server ended
    /// it on the old one), or a classic channel whose node is no longer a primary (fred
    /// closed that connection; a classic subscription otherwise survives a move, since
    /// `PUBLISH` reaches every node). A slot nobody owns right now is not moved yet.
    fn moved(&self, routing: &ClusterRouting, name: &str, home: Option<&str>) -> bool {
        let Some(owner) = owner_id(routing, self.home_slot(name)) else {
            return false;
        };
        match home {
            None => true,
            Some(home) if self.sharded => home != owner,
            Some(home) => !routing.slots().iter().any(|range| &*range.id == home),
        }
    }

    /// The channels Redis may have us subscribed to that `keep` selects, with their
    /// recorded home node.
    pub(super) fn subscribed_channels(
        &self,
        keep: impl Fn(&str, Option<&str>) -> bool,
    ) -> Vec<(String, Arc<Channel>)> {
        self.channels
            .iter()
            .filter(|entry| entry.value().subscribed.load(Ordering::Acquire))
            .filter(|entry| keep(entry.key(), entry.value().home().as_deref()))
            .map(|entry| (entry.key().clone(), entry.value().clone()))
            .collect()
    }

    /// Whether any channel is subscribed (the topology scan runs only then).
    fn any_subscribed(&self) -> bool {
        self.channels
            .iter()
            .any(|entry| entry.value().subscribed.load(Ordering::Acquire))
    }

    /// Asks the cluster (one `CLUSTER SLOTS` on the command connection) whether a
    /// subscribed channel's slot moved; if one did, follows it ([`PubSub::follow_slots`]).
    pub(super) async fn scan_topology(&self) {
        if !self.any_subscribed() {
            return;
        }
        let slots = match self.commands.cluster_slots::<Value>().await {
            Ok(slots) => slots,
            Err(error) => {
                tracing::debug!(%error, "topology scan: CLUSTER SLOTS failed");
                return;
            }
        };
        let routing = match ClusterRouting::from_cluster_slots(slots, "") {
            Ok(routing) => routing,
            Err(error) => {
                tracing::debug!(%error, "topology scan: cannot read CLUSTER SLOTS");
                return;
            }
        };
        let moved = self.subscribed_channels(|name, home| self.moved(&routing, name, home));
        if !moved.is_empty() {
            tracing::info!(
                channels = moved.len(),
                "lock channels' slots moved: refreshing the subscriber's slot map"
            );
            self.refresh().await;
        }
    }

    /// Refreshes fred's slot map of the subscriber (so that `SSUBSCRIBE` is routed to the
    /// slots' new owners), then follows the moved channels.
    pub(super) async fn refresh(&self) {
        if !self.any_subscribed() {
            return;
        }
        if let Err(error) = self.subscriber.sync_cluster().await {
            tracing::warn!(%error, "cannot refresh the subscriber's cluster state");
        }
        self.follow_slots().await;
    }

    /// Subscribes again, on the current owner per fred's slot map, every channel whose
    /// subscription is gone or misplaced ([`PubSub::moved`]), and wakes its waiters once.
    pub(super) async fn follow_slots(&self) {
        if !self.clustered {
            return;
        }
        let Some(routing) = self.subscriber.cached_cluster_state() else {
            return;
        };
        let moved = self.subscribed_channels(|name, home| self.moved(&routing, name, home));
        if moved.is_empty() {
            return;
        }
        tracing::info!(
            channels = moved.len(),
            "lock channels moved with their slots: subscribing on the new owners"
        );
        self.subscribe_again(moved).await;
    }

    /// Sends `SUBSCRIBE`/`SSUBSCRIBE` again for `channels` (one per hash slot for sharded
    /// pub/sub), skipping any released meanwhile, records where each landed, and wakes
    /// each channel's waiters once to retry: a message published before the subscription
    /// was back is lost.
    pub(super) async fn subscribe_again(&self, channels: Vec<(String, Arc<Channel>)>) {
        let mut groups: std::collections::BTreeMap<u16, Vec<(String, Arc<Channel>)>> =
            Default::default();
        for (name, channel) in channels {
            // A sharded subscription cannot span slots; classic ones go to one node.
            let slot = self.home_slot(&name);
            groups.entry(slot).or_default().push((name, channel));
        }
        for (slot, group) in groups {
            // Serialised with `subscribe` and `release_channel` of these channels: their
            // stripes taken in ascending order (each of those takes one stripe only).
            let mut stripes: Vec<usize> = group.iter().map(|(n, _)| self.stripe_of(n)).collect();
            stripes.sort_unstable();
            stripes.dedup();
            let mut serial = Vec::with_capacity(stripes.len());
            for stripe in stripes {
                serial.push(self.stripes[stripe].lock().await);
            }
            let live: Vec<&(String, Arc<Channel>)> = group
                .iter()
                .filter(|(name, channel)| {
                    channel.subscribed.load(Ordering::Acquire)
                        && self
                            .channels
                            .get(name)
                            .is_some_and(|current| Arc::ptr_eq(current.value(), channel))
                })
                .collect();
            if live.is_empty() {
                continue;
            }
            // With their marks, subscribed again with them.
            let names: Vec<String> = live
                .iter()
                .flat_map(|(name, channel)| [Some(name.clone()), channel.marker.get().cloned()])
                .flatten()
                .collect();
            let sent = if self.sharded {
                self.subscriber.ssubscribe(names).await
            } else {
                match self.subscriber.subscribe(names).await {
                    Ok(()) => self.confirm_subscribed().await,
                    Err(error) => Err(error),
                }
            };
            match sent {
                Ok(()) if self.clustered => {
                    let routing = self.subscriber.cached_cluster_state();
                    let owner = routing
                        .as_ref()
                        .and_then(|r| owner_range(r, slot))
                        .map(|range| (range.id.to_string(), range.primary.clone()));
                    let mut home = owner.as_ref().map(|(id, _)| id.clone());
                    // fred sends by its slot map, and a node the slot is still moving to
                    // answers `MOVED` to the node it leaves, which ends the subscription
                    // when the move completes: recorded on the owner while it lives on
                    // the old node, it would never be followed again. One that the owner
                    // does not list is recorded nowhere, so the next scan tries again.
                    if self.sharded
                        && let Some((_, server)) = &owner
                        && !self.shard_listens(server, &live[0].0).await
                    {
                        tracing::debug!(slot, node = %server, "subscribed again, but not on the slot's owner: again at the next scan");
                        home = None;
                    }
                    tracing::debug!(slot, node = ?home, channels = live.len(), "subscribed again");
                    for (_, channel) in &live {
                        channel.home().clone_from(&home);
                    }
                }
                Ok(()) => {}
                // Left as it was: the next reconnect, cluster change or scan tries again.
                Err(error) => tracing::warn!(%error, slot, "resubscribe failed"),
            }
            drop(serial);
            for (_, channel) in &live {
                channel.notify.notify_waiters();
            }
        }
    }

    /// Whether `server` may hold this client's shard subscription of `channel` (`PUBSUB
    /// SHARDNUMSUB` on the command connection): after this client subscribed, 0 means it
    /// is elsewhere. A count above 0 may be another client's. An error (an ACL without
    /// `pubsub|shardnumsub`) or an unreadable answer trusts the slot map, as before the
    /// check: otherwise every scan would subscribe again.
    async fn shard_listens(&self, server: &fred::types::config::Server, channel: &str) -> bool {
        let numsub = CustomCommand::new_static("PUBSUB", ClusterHash::Random, false);
        let answer = self
            .commands
            .with_cluster_node(server.clone())
            .custom::<Value, _>(numsub, vec!["SHARDNUMSUB", channel])
            .await;
        match answer {
            Ok(Value::Array(pair)) => pair.get(1).and_then(Value::as_i64).is_none_or(|n| n > 0),
            Ok(_) => true,
            Err(error) => {
                tracing::debug!(%error, node = %server, "PUBSUB SHARDNUMSUB refused: trusting the slot map");
                true
            }
        }
    }
}

/// The id of the primary that owns `slot` per `routing`.
pub(super) fn owner_id(routing: &ClusterRouting, slot: u16) -> Option<String> {
    owner_range(routing, slot).map(|range| range.id.to_string())
}

/// The slot range of `routing` that holds `slot` (its primary and that primary's id).
fn owner_range(routing: &ClusterRouting, slot: u16) -> Option<&fred::types::cluster::SlotRange> {
    let ranges = routing.slots();
    let after = ranges.partition_point(|range| range.start <= slot);
    after
        .checked_sub(1)
        .map(|at| &ranges[at])
        .filter(|range| slot <= range.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(port: i64, id: &str) -> Value {
        Value::Array(vec!["127.0.0.1".into(), port.into(), id.into()])
    }

    fn range(start: i64, end: i64, owner: Value) -> Value {
        Value::Array(vec![start.into(), end.into(), owner])
    }

    #[test]
    fn owner_id_finds_the_range_of_a_slot_and_none_in_a_gap() {
        // Three ranges, slots 6000-6099 unassigned (a migration between two steps).
        let slots = Value::Array(vec![
            range(0, 5_999, node(7000, "a")),
            range(6_100, 10_922, node(7001, "b")),
            range(10_923, 16_383, node(7002, "c")),
        ]);
        let routing = ClusterRouting::from_cluster_slots(slots, "").unwrap();
        let owner = |slot| owner_id(&routing, slot);
        assert_eq!(owner(0).as_deref(), Some("a"));
        assert_eq!(owner(5_999).as_deref(), Some("a"));
        assert_eq!(owner(6_000), None);
        assert_eq!(owner(6_099), None);
        assert_eq!(owner(6_100).as_deref(), Some("b"));
        assert_eq!(owner(10_923).as_deref(), Some("c"));
        assert_eq!(owner(16_383).as_deref(), Some("c"));
        assert_eq!(owner_id(&ClusterRouting::new(), 1), None);
    }
}
