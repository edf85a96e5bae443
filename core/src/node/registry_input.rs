//! Registry input: discovery and topology changes applied (revision-gated) to the discovery
//! set and the topology registry, and the connector's reactions to what actually changed.

use super::{Event, Node, Output, RegistryEvent, RegistryIgnored};
use crate::{
    connector::World,
    discovery::{Applied, DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    time::Instant,
};

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

    fn registry_event(&mut self, now: Instant, event: RegistryEvent) {
        match event {
            RegistryEvent::DiscoveryPut(info) => self.discovery_put(now, info),
            RegistryEvent::DiscoveryDelete { id, name, revision } => {
                let applied = self.discovery.remove(id, &name, revision);
                match applied {
                    Applied::Removed(info) => {
                        if info.id.is_valid() {
                            self.discovery_deleted(info.id, info.incarnation);
                        }
                        self.discovery_gone(now, info.id);
                    }
                    _ => self.ignored(RegistryIgnored::Discovery { id }),
                }
            }
            RegistryEvent::TopologyPut(info) => self.topology_put(now, info),
            RegistryEvent::TopologyDelete { id, revision } => {
                self.topology_delete(now, id, revision);
            }
        }
    }

    fn ignored(&mut self, reason: RegistryIgnored) {
        self.out
            .push_back(Output::Event(Event::RegistryIgnored(reason)));
    }

    fn discovery_put(&mut self, now: Instant, info: DiscoveryInfo) {
        let id = info.id;
        let incarnation = info.incarnation;
        match self.discovery.put(info) {
            Applied::Added { id, displaced, .. } | Applied::Updated { id, displaced, .. } => {
                if let Some(d) = displaced {
                    self.discovery_gone(now, d.id);
                }
                if id.is_valid() {
                    self.discovery_news(now, id, incarnation);
                }
                self.discovery_arrived(now, id);
                if self.endpoints.stalled(id) {
                    // News: a waiting stream probes now, not at its next retry.
                    self.flush_target(id);
                }
                if id.is_valid() {
                    self.rpc_servers_appeared(now, id);
                }
            }
            _ => self.ignored(RegistryIgnored::Discovery { id }),
        }
    }

    fn discovery_arrived(&mut self, now: Instant, id: NodeId) {
        if !id.is_valid() {
            return;
        }
        let world = World::new(&self.topology, &self.discovery);
        self.connector.on_discovery_put(now, &world, id);
        self.apply_effects();
    }

    fn discovery_gone(&mut self, now: Instant, id: NodeId) {
        if !id.is_valid() {
            return;
        }
        let world = World::new(&self.topology, &self.discovery);
        self.connector.on_discovery_delete(now, &world, id);
        self.apply_effects();
    }

    fn topology_put(&mut self, now: Instant, info: TopologyInfo) {
        let id = info.id;
        match self.topology_revisions.put(&mut self.topology, info) {
            Ok(change) if change.is_noop() => {}
            Ok(change) => {
                let world = World::new(&self.topology, &self.discovery);
                self.connector.on_topology_put(now, &world, id, &change);
                self.apply_effects();
            }
            Err(reason) => self.ignored(reason),
        }
    }

    fn topology_delete(&mut self, now: Instant, id: NodeId, revision: u64) {
        let (topology, own) = (&mut self.topology, self.id);
        match self.topology_revisions.delete(topology, own, id, revision) {
            Ok(()) => {
                let world = World::new(&self.topology, &self.discovery);
                self.connector.on_topology_delete(now, &world, id);
                self.apply_effects();
            }
            Err(reason) => self.ignored(reason),
        }
    }
}
