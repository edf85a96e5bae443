//! Topology: who proxies for whom, and how a message gets from one node to another.
//!
//! Every node may name one *upstream* (its proxy); the upstream links form a forest. The
//! [`TopologyRegistry`] holds that forest as the topology records (libatapp's
//! `atapp_topology_info`) describe it, and answers two questions the connection manager asks
//! for each target: what the target is to us ([`Relation`]) and which node a message to it
//! goes through first ([`Route::next_hop`]). The [`TopologyPolicy`] decides whether two nodes
//! may skip the tree and link directly.
//!
//! The registry is fed by topology PUT/DELETE events ([`TopologyRegistry::update_peer`],
//! [`TopologyRegistry::remove_peer`]); each call reports exactly what changed
//! ([`PeerChange`], [`Removed`]) so the caller can re-route only the records affected. It never
//! touches discovery data or hash rings (the dual-registry rule, ARCHITECTURE §5).
//!
//! Semantics follow libatbus's `atbus_topology` with its rough edges fixed:
//! - an update that is rejected (id 0, self-upstream, cycle) leaves the registry unchanged
//!   (libatbus mutates data and creates the upstream before its cycle check);
//! - a peer kept as *passive* after its removal forgets its upstream and data, so upstream and
//!   downstream links always mirror each other (libatbus leaves a dangling upstream pointer);
//! - host and pid changes are reported as changes, so policy decisions that depend on them can
//!   be re-evaluated (libatapp's equality ignores them, spec §10 item 9);
//! - chain walks are bounded by the number of peers, so even a corrupted registry cannot make
//!   a query loop forever.

mod peer;
mod policy;
mod registry;
mod relation;
mod revisions;

#[cfg(test)]
mod tests;

use alloc::{string::String, vec::Vec};
use core::fmt::Write as _;

pub use peer::{PeerData, TopologyPeer};
pub use policy::{PolicyDenied, TopologyPolicy};
pub use registry::{PeerChange, Removed, TopologyRegistry, UpstreamChange};
pub use relation::{Relation, Route};
pub(crate) use revisions::Revisions;

use crate::ids::NodeId;

/// Why a registry update or removal was rejected. On every error the registry is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// Node id 0 is reserved ("no node") and cannot be a peer.
    #[error("node id 0 is reserved and cannot be a topology peer")]
    InvalidId,
    /// A peer named itself as its upstream.
    #[error("peer {0} cannot be its own upstream")]
    SelfUpstream(NodeId),
    /// The new upstream is the peer itself or one of its descendants.
    #[error("making {upstream} the upstream of {id} would close the cycle {}", fmt_path(.path))]
    Cycle {
        /// The peer being updated.
        id: NodeId,
        /// The upstream it asked for.
        upstream: NodeId,
        /// The cycle the update would close: `id`, `upstream`, then `upstream`'s chain up to
        /// and including `id` again (so `[1, 3, 2, 1]` for 1 → 3 where 3 → 2 → 1).
        path: Vec<NodeId>,
    },
    /// `remove_peer` was asked for a peer the registry does not hold.
    #[error("peer {0} is not in the topology registry")]
    UnknownPeer(NodeId),
}

fn fmt_path(path: &[NodeId]) -> String {
    let mut out = String::new();
    for (i, id) in path.iter().enumerate() {
        if i > 0 {
            out.push_str(" -> ");
        }
        // Writing into a String cannot fail.
        let _ = write!(out, "{id}");
    }
    out
}
