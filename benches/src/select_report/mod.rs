//! The seeded experiments of `select-report` (issue 26): each section adds its figures to the
//! one JSON object the binary prints.
//!
//! - [`modes`]: Maglev against the ring (build, lookup, keys moved by one removal), bounded
//!   loads and the plain ring under Zipf keys, two random choices and round robin with one
//!   slow node;
//! - [`ejection`]: outlier ejection of a node that fails every call;
//! - [`retry`]: the retry budget with every server failing, hedging with one slow node.

pub mod ejection;
pub mod modes;
pub mod retry;

/// The figures one section measured, by name.
pub type Figures = serde_json::Map<String, serde_json::Value>;

/// A simulated node `id` (named `node-{id:x}`, listening on its simulated address) under
/// `upstream` (0: a root), with direct links allowed and no reconnect jitter: the cluster the
/// ejection and retry experiments build.
fn sim_node_config(id: u64, upstream: u64) -> switchboard_core::config::Config {
    use switchboard_core::{ids::NodeId, sim::sim_addr};
    let mut c = switchboard_core::config::Config::new(NodeId(id), format!("node-{id:x}"));
    c.reconnect_jitter_percent = 0;
    c.upstream = NodeId(upstream);
    if upstream != 0 {
        c.upstream_address = sim_addr(NodeId(upstream));
    }
    c.listen = vec![sim_addr(NodeId(id))];
    c.topology_policy.allow_direct_connection = true;
    c
}
