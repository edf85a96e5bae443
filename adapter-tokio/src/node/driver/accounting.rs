//! What the driver counts and reports: [`Metrics`] counters updated from the core's outputs
//! and the feed's events, gauges read from the core's views and the link table on request,
//! the core's [`Status`] with the backend's registration, and the [`Known`] view published on
//! a watch channel.

use std::collections::BTreeMap;

use switchboard_core::{
    CallOutcome,
    ids::NodeId,
    node::{Event, Node, SendError},
    outcome::Outcome,
    registry::RegistryEvent,
};

use switchboard_core::LinkError;

use super::{links::Links, method_labels::MethodLabels};

/// The `auth_refusals` kind of a link whose handshake claimed an id its certificate does not
/// name.
pub(super) const NOT_CERTIFIED: &str = "not_certified";
/// The `auth_refusals` kind of a connection whose certificate names no node id though one is
/// required, or an invalid one (dropped before it reached the core).
pub(super) const NO_NODE_ID: &str = "no_node_id";
use crate::observe::{Known, Metrics, Status};

/// The counters of one node; gauges are filled in by [`Counters::snapshot`].
#[derive(Debug, Default)]
pub(super) struct Counters {
    metrics: Metrics,
    /// Outcomes by value; labelled (a `String` each) only in [`Counters::snapshot`], not once
    /// per message. Few distinct outcomes occur, so a list is the fastest map.
    outcomes: Vec<(Outcome, u64)>,
    /// The `method` labels of calls this node made.
    called: MethodLabels,
    /// The `method` labels of requests this node served.
    served: MethodLabels,
}

impl Counters {
    pub(super) fn accepted(&mut self) {
        self.metrics.sent += 1;
    }

    pub(super) fn refused(&mut self, error: &SendError) {
        *self
            .metrics
            .refused
            .entry(error.as_str().to_owned())
            .or_default() += 1;
    }

    pub(super) fn outcome(&mut self, outcome: Outcome) {
        match self.outcomes.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, count)) => *count += 1,
            None => self.outcomes.push((outcome, 1)),
        }
    }

    /// A message was delivered `latency` after the node accepted it.
    pub(super) fn delivered_after(&mut self, latency: std::time::Duration) {
        self.metrics.delivery_latency.observe(latency);
    }

    pub(super) fn received(&mut self) {
        self.metrics.received += 1;
    }

    pub(super) fn inbox_dropped(&mut self) {
        self.metrics.inbox_dropped += 1;
    }

    pub(super) fn dial(&mut self) {
        self.metrics.dials += 1;
    }

    pub(super) fn dial_failed(&mut self) {
        self.metrics.dial_failures += 1;
    }

    pub(super) fn registry_event(&mut self, event: &RegistryEvent) {
        self.metrics.registry_events += 1;
        if matches!(event, RegistryEvent::DiscoveryDelete { .. }) {
            self.metrics.discovery_deletes += 1;
        }
    }

    pub(super) fn registered(&mut self) {
        self.metrics.registrations += 1;
        self.metrics.registry_session_up = 1;
    }

    pub(super) fn registry_disconnected(&mut self) {
        self.metrics.registry_disconnects += 1;
        self.metrics.registry_session_up = 0;
    }

    pub(super) fn registry_conflict(&mut self) {
        self.metrics.registry_conflicts += 1;
    }

    pub(super) fn event(&mut self, event: &Event) {
        match event {
            Event::PeerRestarted { .. } => self.metrics.peer_restarts += 1,
            Event::PeerDead { evidence, .. } => {
                *self
                    .metrics
                    .peer_deaths
                    .entry(evidence.as_str().to_owned())
                    .or_default() += 1;
            }
            Event::ForwardDropped { .. } => self.metrics.forward_dropped += 1,
            Event::LinkRejected { reason, .. } => {
                self.metrics.links_rejected += 1;
                let kind = match reason {
                    LinkError::Unauthenticated(failure) => Some(failure.as_str()),
                    LinkError::NotCertified { .. } => Some(NOT_CERTIFIED),
                    _ => None,
                };
                if let Some(kind) = kind {
                    *self
                        .metrics
                        .auth_refusals
                        .entry(kind.to_owned())
                        .or_default() += 1;
                }
            }
            Event::HandshakeTimedOut { .. } => self.metrics.handshake_timeouts += 1,
            Event::HandshakeLimit { .. } => self.metrics.handshakes_refused += 1,
            _ => {}
        }
    }

    /// A call of `method` ended with `outcome`, `duration` after the node accepted it.
    pub(super) fn call_done(
        &mut self,
        method: &str,
        outcome: &CallOutcome,
        duration: std::time::Duration,
    ) {
        let label = match outcome.reason() {
            None => outcome.class().to_owned(),
            Some(reason) => format!("{}_{}", outcome.class(), reason.as_str()),
        };
        let method = self.called.label(method);
        *at(&mut self.metrics.rpc_calls, method)
            .entry(label)
            .or_default() += 1;
        at(&mut self.metrics.rpc_call_duration, method).observe(duration);
    }

    /// A request of `method` was handed to this node's handler.
    pub(super) fn served(&mut self, method: &str) {
        *at(&mut self.metrics.rpc_served, self.served.label(method)) += 1;
    }

    /// The counters with the gauges of now.
    pub(super) fn snapshot(&mut self, node: &Node, links: &Links) -> Metrics {
        let mut metrics = self.metrics.clone();
        metrics.set_rpc_stats(&node.inspect().rpc_stats());
        metrics.set_outlier_stats(&node.inspect().outlier_stats());
        for method in node.inspect().served_methods() {
            // A method served now shows at 0 before its first request (it takes its label
            // now, so its count never moves to `other` later).
            at(&mut metrics.rpc_served, self.served.label(method));
        }
        for &(outcome, count) in &self.outcomes {
            *metrics.outcomes.entry(outcome.label()).or_default() += count;
        }
        metrics.pending = node.inspect().pending_total() as u64;
        metrics.ring_updates = node.inspect().discovery().rings().ring_updates();
        metrics.select_bounded_spills = node.inspect().select_stats().bounded_spills;
        let (tls_pending, no_node_id) = links.refused();
        metrics.handshakes_refused += tls_pending;
        if no_node_id > 0 {
            *metrics
                .auth_refusals
                .entry(NO_NODE_ID.to_owned())
                .or_default() += no_node_id;
        }
        metrics.links.clear();
        for state in ["connecting", "handshaking", "up"] {
            metrics.links.insert(state.to_owned(), 0);
        }
        for state in links.count_by_state() {
            *metrics.links.entry(state.label().to_owned()).or_default() += 1;
        }
        metrics
    }
}

/// The value of `key` in `map`, made (default) if absent; the key is copied only then, not
/// on every count.
fn at<'a, V: Default>(map: &'a mut BTreeMap<String, V>, key: &str) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// The node's status now: the core's snapshot with what the registry backend reports.
pub(super) fn status(node: &Node, registered: bool) -> Status {
    let mut status = node.status();
    status.registered = registered;
    status
}

/// Brings `known` up to date with `node` after a registry event about `id` only: that id's
/// discovery and topology entries and the scalar fields, in O(log N) — where [`known`]
/// rebuilds the whole view, O(N) per event and O(N²) for a cluster's join at every node.
/// Returns whether anything changed.
pub(super) fn refresh_known(
    node: &Node,
    known: &mut Known,
    id: NodeId,
    registered: bool,
    conflict: Option<&str>,
    unavailable: Option<&str>,
) -> bool {
    let mut changed = false;
    let discovery = node.inspect().discovery();
    let record = discovery.get_by_id(id);
    match (
        record.map(|info| &info.listen),
        known.discovery.get_mut(&id),
    ) {
        (Some(new), Some(held)) => {
            if new != held {
                held.clone_from(new);
                changed = true;
            }
        }
        (Some(new), None) => {
            known.discovery.insert(id, new.clone());
            changed = true;
        }
        (None, held) => changed |= held.is_some() && known.discovery.remove(&id).is_some(),
    }
    let topology = node.inspect().topology();
    let upstream = topology
        .is_proactive(id)
        .then(|| topology.upstream_of(id).unwrap_or(NodeId::NONE));
    if known.topology.get(&id).copied() != upstream {
        match upstream {
            Some(up) => known.topology.insert(id, up),
            None => known.topology.remove(&id),
        };
        changed = true;
    }
    // Only an event about the node itself can change its own record's leaving mark.
    if id == node.id() {
        let leaving = record.is_some_and(switchboard_core::discovery::DiscoveryInfo::is_leaving);
        changed |= core::mem::replace(&mut known.leaving, leaving) != leaving;
    }
    let own_upstream = node.inspect().upstream().0;
    changed |= core::mem::replace(&mut known.upstream, own_upstream) != own_upstream;
    changed |= core::mem::replace(&mut known.registered, registered) != registered;
    changed |= set_if_other(&mut known.conflict, conflict);
    changed |= set_if_other(&mut known.unavailable, unavailable);
    changed
}

/// Makes `held` say `now` (copying the text only when it differs); returns whether it did.
fn set_if_other(held: &mut Option<String>, now: Option<&str>) -> bool {
    if held.as_deref() == now {
        return false;
    }
    *held = now.map(str::to_owned);
    true
}

/// The registry view of `node` now, with what its registry backend last reported: registered,
/// refused (`conflict`) or lost (`unavailable`).
pub(super) fn known(
    node: &Node,
    registered: bool,
    conflict: Option<&str>,
    unavailable: Option<&str>,
) -> Known {
    let discovery = node
        .inspect()
        .discovery()
        .iter()
        .filter(|info| info.id.is_valid())
        .map(|info| (info.id, info.listen.clone()))
        .collect();
    let topology = node.inspect().topology();
    let topology = topology
        .ids()
        .filter(|&id| topology.is_proactive(id))
        .map(|id| (id, topology.upstream_of(id).unwrap_or(NodeId::NONE)))
        .collect();
    let leaving = (node.inspect().discovery().get_by_id(node.id()))
        .is_some_and(switchboard_core::discovery::DiscoveryInfo::is_leaving);
    Known {
        registered,
        leaving,
        conflict: conflict.map(str::to_owned),
        unavailable: unavailable.map(str::to_owned),
        upstream: node.inspect().upstream().0,
        discovery,
        topology,
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use switchboard_core::{
        config::Config,
        discovery::{DiscoveryInfo, LEAVING_LABEL},
        ids::NodeId,
        node::Node,
        registry::RegistryEvent,
        time::Instant,
    };

    use super::{known, refresh_known};
    use crate::observe::Known;

    fn config(id: u64, listen: &str, upstream: u64) -> Config {
        let mut c = Config::new(NodeId(id), format!("node-{id}"));
        c.listen = vec![listen.to_owned()];
        c.upstream = NodeId(upstream);
        c
    }

    fn disc(c: &Config, revision: u64) -> RegistryEvent {
        RegistryEvent::DiscoveryPut(Arc::new(DiscoveryInfo {
            revision,
            ..c.discovery_info()
        }))
    }

    fn topo(c: &Config, upstream: u64, revision: u64) -> RegistryEvent {
        let mut info = c.topology_info(NodeId(upstream));
        info.revision = revision;
        RegistryEvent::TopologyPut(Arc::new(info))
    }

    /// After every kind of event about one node, refreshing that node's entries gives exactly
    /// the view a full rebuild gives, and says it changed exactly when it did.
    #[test]
    fn refreshing_one_node_equals_a_rebuild_after_every_event() {
        let own = config(1, "127.0.0.1:7001", 0);
        let mut node = Node::new(own.clone(), Instant::ZERO).expect("config");
        let mut now = Instant::ZERO;
        let mut k: Known = known(&node, false, None, None);
        let peer = config(2, "127.0.0.1:7002", 0);
        let mut moved = config(2, "127.0.0.1:7102", 0);
        moved.name = peer.name.clone();
        let leaf = config(3, "127.0.0.1:7003", 2);
        let mut leaving = own.clone();
        leaving
            .labels
            .insert(LEAVING_LABEL.to_owned(), "stopping".to_owned());
        let steps: Vec<(u64, RegistryEvent)> = vec![
            (2, disc(&peer, 1)),
            (2, topo(&peer, 0, 2)),
            (3, disc(&leaf, 3)),
            (3, topo(&leaf, 2, 4)),
            (2, disc(&peer, 5)),
            (2, disc(&moved, 6)),
            (1, disc(&own, 7)),
            (1, topo(&own, 0, 8)),
            (1, disc(&leaving, 9)),
            (
                3,
                RegistryEvent::TopologyDelete {
                    id: NodeId(3),
                    revision: 10,
                },
            ),
            (
                3,
                RegistryEvent::DiscoveryDelete {
                    id: NodeId(3),
                    name: leaf.name.clone(),
                    revision: 11,
                },
            ),
        ];
        let mut changes = Vec::new();
        for (about, event) in steps {
            now += Duration::from_millis(10);
            node.handle_registry(now, event);
            let before = k.clone();
            let changed = refresh_known(&node, &mut k, NodeId(about), true, None, None);
            assert_eq!(
                k,
                known(&node, true, None, None),
                "after the event about {about}"
            );
            assert_eq!(changed, k != before, "after the event about {about}");
            changes.push(changed);
        }
        // The same record again changes nothing, nor does the node's own topology record
        // (a rebuild does not list it either: both equal `known` above).
        assert_eq!(
            changes,
            [
                true, true, true, true, false, true, true, false, true, true, true
            ]
        );
        assert!(k.leaving);
        assert_eq!(
            k.discovery.get(&NodeId(2)),
            Some(&vec!["127.0.0.1:7102".to_owned()])
        );
        assert_eq!(k.discovery.get(&NodeId(3)), None);
        // The scalars the driver passes in are copied only when they differ.
        let mut scalars = |conflict, unavailable| {
            let changed = refresh_known(&node, &mut k, NodeId(2), false, conflict, unavailable);
            assert_eq!(k, known(&node, false, conflict, unavailable));
            changed
        };
        assert!(scalars(Some("held by 9"), None));
        assert!(!scalars(Some("held by 9"), None));
        assert!(scalars(None, Some("lost")));
    }
}
