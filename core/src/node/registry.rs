//! The registry wired to its node, once for every driver: what a registry event changed in
//! the records ([`crate::records`]) applied to the other machines ([`Node::handle_registry`]),
//! and the embedded registry client configured from, and applied to, the node
//! ([`Node::registry_client_config`], [`Node::handle_client_output`]). A driver that runs the
//! client apart (switchboard-tokio, behind the same feed as etcd) calls `handle_registry`.

use super::{Event, Node, RegistryEvent};
use crate::{
    ids::NodeId,
    records::RecordChange,
    registry::client::{ClientConfig, ClientOutput},
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

    /// What `event` changed in the records ([`Records::apply`](crate::records::Records::apply)), applied to the other
    /// machines.
    fn registry_event(&mut self, now: Instant, event: RegistryEvent) {
        match self.records.apply(now, event) {
            RecordChange::DiscoveryPut {
                id,
                incarnation,
                displaced,
                client,
            } => {
                // A record displaced (a node took its name): the connector re-routes; its
                // reaction reads no evidence, the record is noted with the news of it.
                if let Some(displaced) = displaced {
                    self.with_connector(|c, w| c.on_discovery_delete(now, w, displaced));
                    // Its record is gone: what this node keeps of it goes a grace later.
                    self.evidence.depart(displaced, now);
                }
                if id.is_valid() {
                    self.evidence.note_record(id, client);
                    self.discovery_news(now, id, incarnation);
                    self.with_connector(|c, w| c.on_discovery_put(now, w, id));
                }
                self.release_held(id);
                // Calls waiting for a method the record serves look again, now.
                let info = self.records.discovery.get_by_id(id);
                if let Some(methods) = self.rpc.as_ref().and_then(|r| r.waited_methods(info)) {
                    self.with_rpc(|rpc, host| rpc.servers_appeared(now, id, &methods, host));
                }
            }
            RecordChange::DiscoveryDeleted {
                id,
                incarnation,
                client,
            } => {
                if id.is_valid() {
                    self.discovery_deleted(id, incarnation);
                    self.evidence.record_gone(id);
                }
                self.with_connector(|c, w| c.on_discovery_delete(now, w, id));
                if client {
                    self.client_left(id);
                }
            }
            RecordChange::TopologyPut { id, change } => {
                self.with_connector(|c, w| c.on_topology_put(now, w, id, &change));
            }
            RecordChange::TopologyDeleted { id } => {
                self.with_connector(|c, w| c.on_topology_delete(now, w, id));
            }
            RecordChange::Session {
                id,
                incarnation,
                lost,
            } => {
                let death = self.evidence.session(id, incarnation, lost);
                self.peer_dead(death);
            }
            RecordChange::Nothing => {}
            RecordChange::Ignored(reason) => self.out.event(Event::RegistryIgnored(reason)),
        }
    }

    /// News of `id`: what waits for it and for the targets routed through it goes now — a
    /// stalled stream probes now, not at its next retry; what waited for a next life
    /// (`Records::holds`) goes unless it still holds.
    fn release_held(&mut self, id: NodeId) {
        for target in [id].into_iter().chain(self.connector.proxied_by(id)) {
            self.flush_target(target);
        }
    }

    /// A light client's record was deleted: it left. Its route and its endpoint go at once
    /// (what waited for it fails `TargetGone`): nothing redials it, `/status` does not list it.
    fn client_left(&mut self, id: NodeId) {
        self.with_connector(|c, _| c.on_client_left(id));
        self.endpoints.client_left(id, &mut self.out);
    }

    /// The discovery record this node publishes on any registry: the config's
    /// ([`Config::discovery_info`](crate::config::Config::discovery_info)) stamped with this
    /// incarnation, so peers learn of a restart from the registry before any link shows it,
    /// with one metadata label per served method ([`crate::rpc::method_label`]). Publish it
    /// again after an [`RpcOutput::Republish`](crate::rpc::RpcOutput::Republish).
    #[must_use]
    pub fn discovery_info(&self) -> crate::discovery::DiscoveryInfo {
        let mut info = self.config.discovery_info();
        info.incarnation = self.incarnation;
        if let Some(rpc) = &self.rpc {
            rpc.label_served(&mut info.metadata);
            // No method served and no label: no box.
            crate::discovery::Sparse::compact(&mut info.metadata);
        }
        info
    }

    /// The embedded registry client's configuration for this node, with the client's
    /// defaults ([`ClientConfig::for_node`]: this node's discovery record, its topology
    /// record, its incarnation). Tune the defaults, then build the client with
    /// `RegistryClient::new`.
    #[must_use]
    pub fn registry_client_config(&self) -> ClientConfig {
        ClientConfig::for_node(&self.config, self.discovery_info(), self.incarnation)
    }

    /// Takes one output of this node's registry client (drained with
    /// `RegistryClient::poll_output`): a registry change is applied at once
    /// ([`handle_registry`](Self::handle_registry)) and `None` returned; anything else
    /// (`Connect`, `Transmit`, `Close`, `Event`) comes back for the driver to perform. Drain
    /// the node's own outputs afterwards, as after any `handle_*` call.
    pub fn handle_client_output(
        &mut self,
        now: Instant,
        output: ClientOutput,
    ) -> Option<ClientOutput> {
        let ClientOutput::Registry(event) = output else {
            return Some(output);
        };
        self.handle_registry(now, event);
        None
    }
}
