//! The scripted registry: the simulator's stand-in for etcd or the embedded registry.
//!
//! It holds the current discovery and topology records, stamps every change with the next
//! revision (one counter for both kinds, like an etcd cluster), and produces the
//! [`RegistryEvent`] the simulator fans out to the nodes a [`Fanout`] names, now or after a
//! delay. A node that starts (or restarts) receives the current state as a snapshot: every
//! topology record, then every discovery record, in id order — libatapp's write order.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};

use super::RegistryEvent;
use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    time::Duration,
};

/// Who receives a registry change, and when.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fanout {
    /// `None`: every live node, in node order. `Some(ids)`: these nodes, in this order.
    pub to: Option<Vec<NodeId>>,
    /// Delay before delivery; zero delivers during the call.
    pub delay: Duration,
    /// Extra delay per receiving node, uniform in `[0, spread)` and drawn independently for
    /// each node from the simulator's generator: events published one after another can reach
    /// different nodes in different orders. Zero (the default) = no draw.
    pub spread: Duration,
}

impl Fanout {
    /// Every live node, now.
    #[must_use]
    pub fn all() -> Fanout {
        Fanout::default()
    }

    /// Only these nodes, in this order, now.
    #[must_use]
    pub fn only(ids: impl IntoIterator<Item = NodeId>) -> Fanout {
        Fanout {
            to: Some(ids.into_iter().collect()),
            delay: Duration::ZERO,
            spread: Duration::ZERO,
        }
    }

    /// The same audience, `delay` later.
    #[must_use]
    pub fn after(self, delay: Duration) -> Fanout {
        Fanout { delay, ..self }
    }

    /// The same audience, each node delayed by an extra independent draw in `[0, spread)`.
    #[must_use]
    pub fn spread(self, spread: Duration) -> Fanout {
        Fanout { spread, ..self }
    }
}

/// Current registry contents and the revision counter.
#[derive(Debug, Default)]
pub struct SimRegistry {
    revision: u64,
    discovery: BTreeMap<NodeId, Arc<DiscoveryInfo>>,
    topology: BTreeMap<NodeId, Arc<TopologyInfo>>,
}

impl SimRegistry {
    /// The revision of the latest change (0 before any).
    #[must_use]
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The stored discovery record of `id`.
    #[must_use]
    pub fn discovery(&self, id: NodeId) -> Option<&DiscoveryInfo> {
        self.discovery.get(&id).map(|info| &**info)
    }

    /// The stored topology record of `id`.
    #[must_use]
    pub fn topology(&self, id: NodeId) -> Option<&TopologyInfo> {
        self.topology.get(&id).map(|info| &**info)
    }

    /// Ids with a stored discovery record, ascending.
    pub fn discovery_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.discovery.keys().copied()
    }

    /// Ids with a stored topology record, ascending.
    pub fn topology_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.topology.keys().copied()
    }

    fn bump(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }

    /// Stores `info` under the next revision and returns the event announcing it.
    pub(super) fn put_discovery(&mut self, mut info: DiscoveryInfo) -> RegistryEvent {
        info.revision = self.bump();
        let info = Arc::new(info);
        self.discovery.insert(info.id, Arc::clone(&info));
        RegistryEvent::DiscoveryPut(info)
    }

    /// Removes `id`'s discovery record (if any) under the next revision. The event names the
    /// stored record's name, or is empty if nothing was stored.
    pub(super) fn delete_discovery(&mut self, id: NodeId) -> RegistryEvent {
        let revision = self.bump();
        let name = self
            .discovery
            .remove(&id)
            .map(|info| info.name.clone())
            .unwrap_or_default();
        RegistryEvent::DiscoveryDelete { id, name, revision }
    }

    /// Stores `info` under the next revision and returns the event announcing it.
    pub(super) fn put_topology(&mut self, mut info: TopologyInfo) -> RegistryEvent {
        info.revision = self.bump();
        let info = Arc::new(info);
        self.topology.insert(info.id, Arc::clone(&info));
        RegistryEvent::TopologyPut(info)
    }

    /// Removes `id`'s topology record (if any) under the next revision.
    pub(super) fn delete_topology(&mut self, id: NodeId) -> RegistryEvent {
        let revision = self.bump();
        self.topology.remove(&id);
        RegistryEvent::TopologyDelete { id, revision }
    }

    /// The current state as events, each with the revision it was stored under: topology
    /// first, then discovery, each in id order.
    pub(super) fn snapshot(&self) -> Vec<RegistryEvent> {
        let topology = self
            .topology
            .values()
            .cloned()
            .map(RegistryEvent::TopologyPut);
        let discovery = self
            .discovery
            .values()
            .cloned()
            .map(RegistryEvent::DiscoveryPut);
        topology.chain(discovery).collect()
    }
}

/// A short description of a registry event for the trace.
pub(super) fn describe(event: &RegistryEvent) -> String {
    use alloc::format;
    match event {
        RegistryEvent::DiscoveryPut(info) => format!(
            "discovery put {} {:?} rev {} listen {:?}",
            info.id, info.name, info.revision, info.listen
        ),
        RegistryEvent::DiscoveryDelete { id, name, revision } => {
            format!("discovery delete {id} {name:?} rev {revision}")
        }
        RegistryEvent::TopologyPut(info) => format!(
            "topology put {} up {} rev {}",
            info.id, info.upstream_id, info.revision
        ),
        RegistryEvent::TopologyDelete { id, revision } => {
            format!("topology delete {id} rev {revision}")
        }
        RegistryEvent::Session {
            id,
            incarnation,
            lost_for,
        } => match lost_for {
            Some(age) => format!(
                "session {id} inc {incarnation} lost {} ms ago",
                age.as_millis()
            ),
            None => format!("session {id} inc {incarnation} back"),
        },
    }
}
