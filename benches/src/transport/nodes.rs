//! The nodes of a measured cluster: an embedded registry on loopback and the nodes started on
//! it, all over one transport with one set of cluster keys, shut down together.

use std::net::{Ipv4Addr, SocketAddr};

use std::time::Duration;

use switchboard_core::{
    auth::{ClusterKey, ClusterKeys},
    ids::NodeId,
    registry::server::ServerConfig,
};
use switchboard_tokio::{
    Inbox, NodeBuilder, NodeHandle, Transport,
    registry::{RegistryHandle, spawn_registry_with},
};

use super::BenchError;

const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// A registry and the nodes started on it.
#[derive(Debug)]
pub struct BenchNodes {
    registry: RegistryHandle,
    nodes: Vec<NodeHandle>,
    transport: Transport,
    keys: Vec<ClusterKey>,
}

impl BenchNodes {
    /// Starts an embedded registry (seeded with `seed`) on loopback, over `transport`,
    /// authenticating with `keys` unless it is empty.
    ///
    /// # Errors
    ///
    /// The registry could not bind.
    pub async fn start(
        seed: u64,
        transport: Transport,
        keys: &[ClusterKey],
    ) -> Result<BenchNodes, BenchError> {
        let server = ServerConfig {
            keys: ClusterKeys::new(keys),
            ..ServerConfig::default()
        };
        let registry = spawn_registry_with(LOOPBACK, server, seed, transport.clone())
            .await
            .map_err(|e| BenchError::io("start the embedded registry", e))?;
        Ok(BenchNodes {
            registry,
            nodes: Vec::new(),
            transport,
            keys: keys.to_vec(),
        })
    }

    /// Starts node `id` named `name` below `upstream`.
    ///
    /// # Errors
    ///
    /// The node did not start.
    pub async fn node(
        &mut self,
        id: NodeId,
        name: &'static str,
        upstream: Option<NodeId>,
    ) -> Result<(NodeHandle, Inbox), BenchError> {
        self.node_from(NodeBuilder::new(id, name), name, upstream)
            .await
    }

    /// Starts the node `builder` configures (labels, served methods) below `upstream`, on
    /// loopback with this cluster's registry, transport and keys; `name` names it in errors.
    ///
    /// # Errors
    ///
    /// The node did not start.
    pub async fn node_from(
        &mut self,
        builder: NodeBuilder,
        name: &'static str,
        upstream: Option<NodeId>,
    ) -> Result<(NodeHandle, Inbox), BenchError> {
        let keys = self.keys.clone();
        let mut builder = builder
            .listen(LOOPBACK)
            .registry(self.registry.local_addr())
            .transport(self.transport.clone())
            .config(move |config| config.cluster_keys = keys);
        if let Some(up) = upstream {
            builder = builder.upstream(up);
        }
        let (handle, inbox) = builder
            .start()
            .await
            .map_err(|source| BenchError::Start { name, source })?;
        self.nodes.push(handle.clone());
        Ok((handle, inbox))
    }

    /// The embedded registry's address.
    #[must_use]
    pub fn registry_addr(&self) -> SocketAddr {
        self.registry.local_addr()
    }

    /// Shuts every node down gracefully, then the registry (each step bounded by `timeout`).
    pub async fn shutdown(self, timeout: Duration) {
        for node in &self.nodes {
            // A node that does not stop in time is left to the runtime's shutdown.
            let _ = tokio::time::timeout(timeout, node.shutdown()).await;
        }
        let _ = tokio::time::timeout(timeout, self.registry.shutdown()).await;
    }
}
