//! The embedded registry client wired to its node, written once for every driver: the
//! client's configuration comes from the node's own records ([`Node::registry_client_config`])
//! and each registry change the client outputs is applied to the node
//! ([`Node::handle_client_output`]), so a driver only performs the socket work and reports.
//!
//! A driver that runs the client apart from the node (switchboard-tokio runs it in its own
//! task, behind the same feed as the etcd backend) hands its `ClientOutput::Registry`
//! changes to `handle_registry` when they reach the node.

use super::Node;
use crate::{
    registry::client::{ClientConfig, ClientOutput},
    time::Instant,
};

impl Node {
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
    /// (`Connect`, `Transmit`, `Close`, `Event`) comes back for the driver to perform. Drain the node's own outputs afterwards, as after any
    /// `handle_*` call.
    pub fn handle_client_output(
        &mut self,
        now: Instant,
        output: ClientOutput,
    ) -> Option<ClientOutput> {
        match output {
            ClientOutput::Registry(event) => {
                self.handle_registry(now, event);
                None
            }
            other => Some(other),
        }
    }
}
