//! Node-level helpers: real nodes (`NodeBuilder`) on a test etcd, tuned for fast tests, and
//! bounded waits.

use std::{future::Future, time::Duration};

use bytes::Bytes;
use switchboard_core::{config::Config, ids::NodeId};
use switchboard_tokio::{Inbox, NodeBuilder, NodeHandle, Received, RegistrySpec};

use super::EtcdServer;

/// Upper bound of any single wait in a node test (generous: the machine may be loaded).
pub const STEP: Duration = Duration::from_secs(30);

/// Awaits `fut` for at most [`STEP`]; panics naming `what` on timeout.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {STEP:?}: {what}"),
    }
}

/// Core settings for tests: fast reconnects and heartbeats, unlimited reconnect tries,
/// messages time out after 20 s.
pub fn fast(config: &mut Config) {
    config.reconnect_start = Duration::from_millis(100);
    config.reconnect_max = Duration::from_millis(300);
    config.reconnect_max_tries = 0;
    config.reconnect_jitter_percent = 0;
    config.heartbeat_interval = Duration::from_millis(500);
    config.message_timeout = Duration::from_secs(20);
    config.lost_topology_timeout = Duration::from_secs(20);
}

/// A node `id` called `name` registered in `etcd` under `prefix`, with [`fast`] settings.
pub fn on_etcd(etcd: &EtcdServer, prefix: &str, id: u64, name: &str) -> NodeBuilder {
    NodeBuilder::new(NodeId(id), name)
        .registry_spec(RegistrySpec::Etcd(etcd.options(prefix)))
        .config(fast)
}

/// Like [`on_etcd`], allowed to link any node directly (a proxy, or a flat cluster).
pub fn direct_on_etcd(etcd: &EtcdServer, prefix: &str, id: u64, name: &str) -> NodeBuilder {
    on_etcd(etcd, prefix, id, name).config(|c| c.topology_policy.allow_direct_connection = true)
}

/// Starts `builder` and waits until it is registered (bounded).
pub async fn start(builder: NodeBuilder) -> (NodeHandle, Inbox) {
    let (node, inbox) = within("node start", builder.start())
        .await
        .expect("the node starts");
    assert!(
        node.wait_registered(STEP).await.is_ok(),
        "node {} did not register: {:?}",
        node.id(),
        node.known()
    );
    (node, inbox)
}

/// Waits until `node` knows every id in `ids` (discovery and topology).
pub async fn wait_known(node: &NodeHandle, ids: &[u64]) {
    let ids: Vec<NodeId> = ids.iter().map(|&i| NodeId(i)).collect();
    assert!(
        node.wait_known(&ids, STEP).await,
        "node {} did not learn {ids:?}: {:?}",
        node.id(),
        node.known()
    );
}

/// A payload naming its sender and sequence number, 32 bytes.
pub fn payload(from: u64, seq: u64) -> Bytes {
    let mut v = Vec::with_capacity(32);
    v.extend_from_slice(&from.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    while v.len() < 32 {
        v.push(v.len() as u8);
    }
    Bytes::from(v)
}

/// The (sender, sequence number) of a [`payload`].
pub fn parse(payload: &[u8]) -> (u64, u64) {
    let from = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
    let seq = u64::from_le_bytes(payload[8..16].try_into().expect("8 bytes"));
    (from, seq)
}

/// The next message of `inbox` (bounded).
pub async fn recv(inbox: &mut Inbox) -> Received {
    within("inbox message", inbox.recv())
        .await
        .expect("the node is running")
}

/// Flags of `node`'s route record towards `target`, if it has one.
pub async fn route_flags(node: &NodeHandle, target: u64) -> Option<Vec<String>> {
    let status = within("status", node.status()).await.expect("running");
    status
        .routes
        .into_iter()
        .find(|r| r.target == target)
        .map(|r| r.flags)
}

/// Waits until `node` has an up link to every id in `peers`.
pub async fn wait_links_up(node: &NodeHandle, peers: &[u64]) {
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        let status = within("status", node.status()).await.expect("running");
        let up = |peer: u64| {
            status
                .links
                .iter()
                .any(|l| l.peer == Some(peer) && l.state == "up")
        };
        if peers.iter().all(|&p| up(p)) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "node {} links {:?}, wanted {peers:?}",
            node.id(),
            status.links
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
