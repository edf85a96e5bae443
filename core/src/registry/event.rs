//! [`RegistryEvent`]: a change of the registry's view, the one vocabulary every registry
//! backend speaks (the embedded registry [`client`](super::client), the etcd
//! [`mapping`](super::etcd::mapping) and watchers, the simulator's registry) and a node
//! consumes through `Node::handle_registry`.

use alloc::{string::String, sync::Arc};

use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    time::Duration,
};

/// A change from the registry (embedded registry client or etcd watcher). Discovery and
/// topology are separate streams and may arrive in any order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryEvent {
    /// A discovery record was put (`info.revision` set). Shared: the embedded registry
    /// client's view and the node's discovery set hold this one record, not two copies
    /// (`RegistryEvent::DiscoveryPut(info.into())` from an owned record).
    DiscoveryPut(Arc<DiscoveryInfo>),
    /// A discovery key was deleted.
    DiscoveryDelete {
        /// The id part of the key (0 if the key has none).
        id: NodeId,
        /// The name part of the key (empty if none).
        name: String,
        /// The registry revision of the delete.
        revision: u64,
    },
    /// A topology record was put (`info.revision` set); shared, like `DiscoveryPut`'s: the
    /// registry client's view holds this one record (`RegistryEvent::TopologyPut(info.into())`
    /// from an owned record).
    TopologyPut(Arc<TopologyInfo>),
    /// A topology key was deleted.
    TopologyDelete {
        /// The node whose topology record went away.
        id: NodeId,
        /// The registry revision of the delete.
        revision: u64,
    },
    /// The registry's session with a listed node was lost (`lost_for` is `Some`: its
    /// connection closed that long before the registry said so; the record stays listed
    /// through disconnect protection, marked suspect) or is back (`None`: it registered again
    /// in the same incarnation). Only the embedded registry says so — at
    /// once, with the record's `suspect` flag; etcd sees a session end only when its lease
    /// expires (a `DiscoveryDelete`). Evidence that corroborates a failed redial
    /// (docs/ARCHITECTURE.md §9.3).
    Session {
        /// The node.
        id: NodeId,
        /// The incarnation it registered with (0 = not stated).
        incarnation: u64,
        /// How long ago the session was lost, as of the registry's message (else it is back).
        lost_for: Option<Duration>,
    },
}
