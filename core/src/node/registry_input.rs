//! Registry input: what a registry event changed in the records ([`crate::records`]) applied
//! to the other machines — the connector's reactions, evidence of death, waiting calls.

use super::{Event, Node, RegistryEvent};
use crate::{ids::NodeId, records::RecordChange, time::Instant};

impl Node {
    /// Applies a registry event: discovery changes go to the discovery set (revision-gated),
    /// topology changes to the topology registry (revision-gated per node; cycles and other
    /// invalid records are rejected with the registry unchanged), and the connector reacts to
    /// what actually changed. Ignored events are reported as [`Event::RegistryIgnored`].
    pub fn handle_registry(&mut self, now: Instant, event: RegistryEvent) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        self.registry_event(now, event);
        self.settle_rpc();
    }

    /// What `event` changed in the records ([`Records::apply`](crate::records::Records::apply)), applied to the other
    /// machines.
    fn registry_event(&mut self, now: Instant, event: RegistryEvent) {
        match self.records.apply(event) {
            RecordChange::DiscoveryPut {
                id,
                incarnation,
                displaced,
            } => {
                if let Some(displaced) = displaced {
                    self.discovery_gone(now, displaced);
                }
                if id.is_valid() {
                    self.discovery_news(now, id, incarnation);
                }
                if id.is_valid() {
                    self.with_connector(|c, w| c.on_discovery_put(now, w, id));
                }
                if self.endpoints.stalled(id) {
                    // News: a waiting stream probes now, not at its next retry.
                    self.flush_target(id);
                }
                if id.is_valid() {
                    self.rpc_servers_appeared(now, id);
                }
            }
            RecordChange::DiscoveryDeleted { id, incarnation } => {
                if id.is_valid() {
                    self.discovery_deleted(id, incarnation);
                }
                self.discovery_gone(now, id);
            }
            RecordChange::TopologyPut { id, change } => {
                self.with_connector(|c, w| c.on_topology_put(now, w, id, &change));
            }
            RecordChange::TopologyDeleted { id } => {
                self.with_connector(|c, w| c.on_topology_delete(now, w, id));
            }
            RecordChange::Nothing => {}
            RecordChange::Ignored(reason) => self.out.event(Event::RegistryIgnored(reason)),
        }
    }

    /// `id`'s discovery record is gone (deleted, or displaced by a node taking its name):
    /// the connector re-routes.
    fn discovery_gone(&mut self, now: Instant, id: NodeId) {
        if id.is_valid() {
            self.with_connector(|c, w| c.on_discovery_delete(now, w, id));
        }
    }
}
