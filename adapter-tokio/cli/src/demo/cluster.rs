//! The demo's nodes and registry, all in this process: start, kill (abruptly, as a crashed
//! process would), restart on the same address, move a node to another upstream, and stop
//! everything at the end. Every node's inbox is read by a task that records what arrives in
//! the shared [`Receipts`].

use std::{collections::BTreeMap, net::SocketAddr, sync::Arc, time::Duration};

use switchboard_core::{
    ClusterKey,
    backoff::{BackoffConfig, Jitter},
    config::Config,
    ids::NodeId,
    registry::server::ServerConfig,
};
use switchboard_tokio::{
    NodeBuilder, NodeHandle, RegistrySpec,
    node::StartError,
    registry::{EtcdOptions, RegistryHandle, client::ClientTuning, spawn_registry_with},
};
use tokio::task::JoinHandle;

use super::traffic::{Receipts, receive};
use crate::{
    error::CliError,
    lifecycle::{run_seed, shutdown_bounded, start_error},
};

/// The demo's core settings (shorter than the defaults so failures resolve within seconds).
pub(crate) const MESSAGE_TIMEOUT: Duration = Duration::from_secs(3);
/// Heartbeat interval on idle links.
pub(crate) const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(300);
/// First reconnect delay.
pub(crate) const RECONNECT_START: Duration = Duration::from_millis(100);
/// Reconnect delay cap.
pub(crate) const RECONNECT_MAX: Duration = Duration::from_secs(1);
/// Lifetime of a route whose topology record vanished.
pub(crate) const LOST_TOPOLOGY_TIMEOUT: Duration = Duration::from_secs(5);
/// Registry: a node that disconnected stays listed this long.
pub(crate) const DISCONNECT_PROTECTION: Duration = Duration::from_secs(2);
/// Registry: an unregistered connection is closed after this.
pub(crate) const ACCESS_TIMEOUT: Duration = Duration::from_secs(2);
/// Registry client: heartbeat period.
pub(crate) const REGISTRY_HEARTBEAT: Duration = Duration::from_millis(500);
/// Registry client and server: a connection silent this long is dropped.
pub(crate) const REGISTRY_SILENCE: Duration = Duration::from_secs(3);
/// Registry client: peers missing from a restarted registry's snapshot are kept this long.
pub(crate) const REGISTRY_GRACE: Duration = Duration::from_secs(5);
/// Rebinding an address just released is retried for this long.
const REBIND_WAIT: Duration = Duration::from_secs(5);

/// What a node does in the demo (its `role` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Relays: the hub between proxies, a proxy between its children and the hub.
    Proxy,
    /// Receives traffic.
    Leaf,
    /// Sends traffic; never killed, so every outcome is observed.
    Client,
}

impl Role {
    /// The `role` label value.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Role::Proxy => "proxy",
            Role::Leaf => "leaf",
            Role::Client => "client",
        }
    }
}

/// The embedded registry (restartable) or etcd.
enum Registry {
    Embedded {
        addr: SocketAddr,
        handle: Option<RegistryHandle>,
    },
    Etcd(EtcdOptions),
}

/// One running node.
struct RunningNode {
    role: Role,
    handle: NodeHandle,
    listen: SocketAddr,
    inbox_task: JoinHandle<()>,
}

/// The demo cluster.
pub(crate) struct Cluster {
    registry: Registry,
    transport: switchboard_tokio::Transport,
    nodes: BTreeMap<NodeId, RunningNode>,
    receipts: Arc<Receipts>,
    /// The cluster keys every node and the registry use (empty: none).
    keys: Vec<ClusterKey>,
}

impl Cluster {
    /// Starts the embedded registry on `127.0.0.1:0` (or uses etcd) with no nodes yet.
    ///
    /// # Errors
    ///
    /// The registry could not bind.
    pub(crate) async fn new(
        etcd: Option<EtcdOptions>,
        transport: switchboard_tokio::Transport,
        receipts: Arc<Receipts>,
        keys: Vec<ClusterKey>,
    ) -> Result<Cluster, CliError> {
        let registry = match etcd {
            Some(options) => Registry::Etcd(options),
            None => {
                let handle = spawn_registry_with(
                    SocketAddr::from(([127, 0, 0, 1], 0)),
                    keyed(server_config(), &keys),
                    run_seed(),
                    transport.clone(),
                )
                .await
                .map_err(|e| CliError::failed(format!("cannot start the registry: {e}")))?;
                Registry::Embedded {
                    addr: handle.local_addr(),
                    handle: Some(handle),
                }
            }
        };
        Ok(Cluster {
            registry,
            transport,
            nodes: BTreeMap::new(),
            receipts,
            keys,
        })
    }

    /// The embedded registry's address (`None` on etcd).
    pub(crate) fn registry_addr(&self) -> Option<SocketAddr> {
        match &self.registry {
            Registry::Embedded { addr, .. } => Some(*addr),
            Registry::Etcd(_) => None,
        }
    }

    /// Starts node `id` with `role` under `upstream`, listening on `listen` (port 0 = any;
    /// a port just released by a killed node is retried for a few seconds).
    ///
    /// # Errors
    ///
    /// The node did not start.
    pub(crate) async fn start_node(
        &mut self,
        id: NodeId,
        role: Role,
        upstream: Option<NodeId>,
        listen: SocketAddr,
    ) -> Result<(), CliError> {
        let spec = match &self.registry {
            Registry::Embedded { addr, .. } => RegistrySpec::Embedded(*addr),
            Registry::Etcd(options) => RegistrySpec::Etcd(options.clone()),
        };
        let deadline = tokio::time::Instant::now() + REBIND_WAIT;
        let (handle, inbox) = loop {
            let keys = self.keys.clone();
            let builder = NodeBuilder::new(id, format!("{}-{}", role.label(), id.0))
                .listen(listen)
                .transport(self.transport.clone())
                .registry_spec(spec.clone())
                .registry_tuning(client_tuning())
                .config(|config| {
                    tune_node(config, role, upstream);
                    config.cluster_keys = keys;
                });
            match builder.start().await {
                Ok(started) => break started,
                Err(StartError::Bind { .. }) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(start_error(e)),
            }
        };
        let inbox_task = tokio::spawn(receive(inbox, Arc::clone(&self.receipts)));
        let listen = handle.local_addr();
        self.nodes.insert(
            id,
            RunningNode {
                role,
                handle,
                listen,
                inbox_task,
            },
        );
        Ok(())
    }

    /// The running nodes whose registration the registry refuses now, with why.
    pub(crate) fn conflicts(&self) -> Vec<(NodeId, String)> {
        self.nodes
            .iter()
            .filter_map(|(id, node)| node.handle.known().conflict.map(|why| (*id, why)))
            .collect()
    }

    /// The handle of a running node.
    pub(crate) fn handle(&self, id: NodeId) -> Option<&NodeHandle> {
        self.nodes.get(&id).map(|n| &n.handle)
    }

    /// Kills node `id` abruptly (no goodbye, no unregister); returns its listen address.
    pub(crate) fn kill_node(&mut self, id: NodeId) -> Option<(Role, SocketAddr)> {
        let node = self.nodes.remove(&id)?;
        node.handle.kill();
        // Its inbox ends when the driver has stopped; what it already received is recorded.
        drop(node.inbox_task);
        Some((node.role, node.listen))
    }

    /// Moves node `id` under `upstream`.
    ///
    /// # Errors
    ///
    /// The node is not running.
    pub(crate) async fn set_upstream(&self, id: NodeId, upstream: NodeId) -> Result<(), CliError> {
        let handle = self
            .handle(id)
            .ok_or_else(|| CliError::failed(format!("node {} is not running", id.0)))?;
        handle
            .set_upstream(upstream)
            .await
            .map_err(|_| CliError::failed(format!("node {} stopped", id.0)))
    }

    /// Kills the embedded registry abruptly; `false` on etcd.
    pub(crate) fn kill_registry(&mut self) -> bool {
        match &mut self.registry {
            Registry::Embedded { handle, .. } => {
                if let Some(handle) = handle.take() {
                    handle.kill();
                }
                true
            }
            Registry::Etcd(_) => false,
        }
    }

    /// Starts the embedded registry again on its address (a new epoch).
    ///
    /// # Errors
    ///
    /// The address could not be bound again within a few seconds.
    pub(crate) async fn restart_registry(&mut self) -> Result<(), CliError> {
        let Registry::Embedded { addr, handle } = &mut self.registry else {
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + REBIND_WAIT;
        loop {
            match spawn_registry_with(
                *addr,
                keyed(server_config(), &self.keys),
                run_seed(),
                self.transport.clone(),
            )
            .await
            {
                Ok(started) => {
                    *handle = Some(started);
                    return Ok(());
                }
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    return Err(CliError::failed(format!(
                        "cannot restart the registry on {addr}: {e}"
                    )));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Waits until every running node knows every other running node (discovery and
    /// topology), at most `limit`.
    pub(crate) async fn wait_all_known(&self, limit: Duration) -> bool {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        let deadline = tokio::time::Instant::now() + limit;
        for (id, node) in &self.nodes {
            let others: Vec<NodeId> = ids.iter().copied().filter(|other| other != id).collect();
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !node.handle.wait_known(&others, left).await {
                return false;
            }
        }
        true
    }

    /// Waits until node `id` is registered and every other running node knows it, at most
    /// `limit`.
    pub(crate) async fn wait_known_by_all(&self, id: NodeId, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let Some(node) = self.nodes.get(&id) else {
            return false;
        };
        if node.handle.wait_registered(left()).await.is_err() {
            return false;
        }
        for (other, node) in &self.nodes {
            if *other != id && !node.handle.wait_known(&[id], left()).await {
                return false;
            }
        }
        true
    }

    /// Stops every node gracefully (bounded), then the registry.
    pub(crate) async fn shutdown(mut self) {
        let nodes = std::mem::take(&mut self.nodes);
        let stops = nodes.into_values().map(|node| async move {
            shutdown_bounded(&node.handle).await;
            node.inbox_task.abort();
        });
        for stop in stops {
            stop.await;
        }
        if let Registry::Embedded {
            handle: Some(handle),
            ..
        } = self.registry
        {
            let _ = tokio::time::timeout(Duration::from_secs(5), handle.shutdown()).await;
        }
    }
}

/// The embedded registry's config in the demo.
pub(crate) fn server_config() -> ServerConfig {
    ServerConfig {
        access_timeout: ACCESS_TIMEOUT,
        disconnect_protection: DISCONNECT_PROTECTION,
        heartbeat_timeout: Some(REGISTRY_SILENCE),
        ..ServerConfig::default()
    }
}

/// `config` with the cluster keys.
fn keyed(mut config: ServerConfig, keys: &[ClusterKey]) -> ServerConfig {
    config.keys = switchboard_core::ClusterKeys::new(keys);
    config
}

/// The registry client's settings in the demo: quick reconnects after the registry restart,
/// a grace long enough to cover it.
pub(crate) fn client_tuning() -> ClientTuning {
    let mut tuning = ClientTuning::default();
    tuning.backoff = Some(BackoffConfig {
        start: RECONNECT_START,
        max: RECONNECT_MAX,
        max_tries: 0,
        jitter: Jitter::Proportional { percent: 20 },
    });
    tuning.grace = Some(REGISTRY_GRACE);
    tuning.heartbeat_interval = Some(REGISTRY_HEARTBEAT);
    tuning.silence_timeout = Some(REGISTRY_SILENCE);
    tuning
}

/// The demo's core settings for a node of `role`.
pub(crate) fn tune_node(config: &mut Config, role: Role, upstream: Option<NodeId>) {
    config.message_timeout = MESSAGE_TIMEOUT;
    config.heartbeat_interval = HEARTBEAT_INTERVAL;
    config.heartbeat_dead_after = 3;
    config.reconnect_start = RECONNECT_START;
    config.reconnect_max = RECONNECT_MAX;
    config.lost_topology_timeout = LOST_TOPOLOGY_TIMEOUT;
    config.upstream = upstream.unwrap_or(NodeId::NONE);
    // One identity per node of this run: a node the script restarts takes its registration
    // over at once (on etcd its old lease would otherwise hold the id for 31 s, a conflict),
    // while another demo's node with the same id is refused.
    config.identity = format!("switchboard-demo-{}-{}", std::process::id(), config.id.0);
    config
        .labels
        .insert("role".to_owned(), role.label().to_owned());
}

#[cfg(test)]
mod tests {
    use switchboard_core::topology::TopologyPolicy;

    use super::*;

    #[test]
    fn demo_nodes_get_the_tuned_settings_their_role_and_upstream() {
        let mut leaf = Config::new(NodeId(201), "leaf-201");
        tune_node(&mut leaf, Role::Leaf, Some(NodeId(101)));
        assert_eq!(leaf.topology_policy, TopologyPolicy::default());
        assert_eq!(leaf.upstream, NodeId(101));
        assert_eq!(leaf.labels.get("role").map(String::as_str), Some("leaf"));
        assert_eq!(
            leaf.identity,
            format!("switchboard-demo-{}-201", std::process::id())
        );
        assert_eq!(leaf.message_timeout, MESSAGE_TIMEOUT);
        assert_eq!(leaf.heartbeat_interval, HEARTBEAT_INTERVAL);
        leaf.validate().expect("the demo config is valid");
        let mut hub = Config::new(NodeId(100), "proxy-100");
        tune_node(&mut hub, Role::Proxy, None);
        assert_eq!(hub.upstream, NodeId::NONE);
        assert_eq!(hub.labels.get("role").map(String::as_str), Some("proxy"));
    }
}
