//! Tests of the topology registry, relations and policy: libatbus's nine `atbus_topology`
//! cases, error cases, and a property test against a naive model.

use alloc::{string::String, vec::Vec};

use super::{PeerData, TopologyRegistry};
use crate::ids::NodeId;

mod errors;
mod libatbus_cases;
mod prop_model;

fn n(id: u64) -> NodeId {
    NodeId(id)
}

fn data(pid: i64, hostname: &str) -> PeerData {
    PeerData {
        hostname: String::from(hostname),
        pid,
        ..PeerData::default()
    }
}

/// Applies a record with pid = id and the given host; panics on rejection.
fn put(reg: &mut TopologyRegistry, id: u64, upstream: u64, hostname: &str) {
    reg.update_peer(n(id), n(upstream), data(id as i64, hostname))
        .expect("test topology is valid");
}

fn ids(it: impl Iterator<Item = NodeId>) -> Vec<u64> {
    it.map(|id| id.0).collect()
}
