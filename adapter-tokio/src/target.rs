//! Owned send targets: [`TargetSpec`] is a core [`Select`] with the filter it picks among, as
//! a value that can cross a channel into the driver task.

use bytes::Bytes;
use switchboard_core::{discovery::Filter, ids::NodeId, select::Select};

/// Whom a message is for: which node, chosen how, among which nodes
/// ([`switchboard_core::select`] has the modes).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetSpec {
    /// The node with this id.
    Id(NodeId),
    /// The node holding this name in discovery.
    Name(String),
    /// A node chosen on the consistent-hash ring by `key` (among nodes matching `filter`).
    Hash {
        /// Restricts the candidates; `None` = every node.
        filter: Option<Filter>,
        /// The key to hash.
        key: Vec<u8>,
    },
    /// The next node in turn among those matching `filter`.
    RoundRobin {
        /// Restricts the candidates; `None` = every node.
        filter: Option<Filter>,
    },
    /// A node chosen at random (seeded) among those matching `filter`.
    Random {
        /// Restricts the candidates; `None` = every node.
        filter: Option<Filter>,
    },
    /// Of two nodes drawn at random among those matching `filter`, the one with fewer
    /// messages queued or unacknowledged.
    LeastOutstanding {
        /// Restricts the candidates; `None` = every node.
        filter: Option<Filter>,
    },
}

impl TargetSpec {
    /// The core's selection and the filter it picks among (`Node::send` / `send_among`).
    #[must_use]
    pub fn to_select(&self) -> (Option<&Filter>, Select) {
        match self {
            TargetSpec::Id(id) => (None, Select::Node(*id)),
            TargetSpec::Name(name) => (None, Select::Name(name.clone())),
            TargetSpec::Hash { filter, key } => {
                (filter.as_ref(), Select::Hash(Bytes::copy_from_slice(key)))
            }
            TargetSpec::RoundRobin { filter } => (filter.as_ref(), Select::RoundRobin),
            TargetSpec::Random { filter } => (filter.as_ref(), Select::Random),
            TargetSpec::LeastOutstanding { filter } => (filter.as_ref(), Select::LeastOutstanding),
        }
    }
}
