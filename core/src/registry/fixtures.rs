//! Records and instants the registry machines' tests share: a node's discovery and topology
//! records, whole seconds of virtual time, and a client configuration with exact (unjittered)
//! reconnect delays.

use alloc::{format, string::String, vec};

use super::client::ClientConfig;
use crate::{
    backoff::BackoffConfig,
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    time::{Duration, Instant},
};

/// `s` seconds after the origin.
pub(crate) fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// A discovery record of node `id` of type `type_name`, named `n<id>`.
pub(crate) fn disc(id: u64, type_name: &str) -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(id),
        name: format!("n{id}"),
        type_name: String::from(type_name),
        listen: vec![format!("atcp://127.0.0.1:{}", 7000 + id)],
        ..DiscoveryInfo::default()
    }
}

/// A topology record of node `id` under `upstream`.
pub(crate) fn topo(id: u64, upstream: u64) -> TopologyInfo {
    TopologyInfo {
        id: NodeId(id),
        name: format!("n{id}"),
        upstream_id: NodeId(upstream),
        ..TopologyInfo::default()
    }
}

/// Client defaults for exact instants: backoff 1 s doubling to 8 s, no jitter.
pub(crate) fn client_config(discovery: DiscoveryInfo, incarnation: u64) -> ClientConfig {
    let mut config = ClientConfig::new(discovery, None, incarnation);
    config.backoff =
        BackoffConfig::without_jitter(Duration::from_secs(1), Duration::from_secs(8), 0);
    config
}
