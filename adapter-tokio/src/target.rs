//! Owned send targets: [`TargetSpec`] is the core's borrowed [`Target`] as a value that can
//! cross a channel into the driver task.

use switchboard_core::{discovery::Filter, ids::NodeId, node::Target};

/// Whom a message is for; the owned twin of the core's [`Target`].
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
}

impl TargetSpec {
    /// The borrowed form the core's `Node::send` takes.
    #[must_use]
    pub fn as_target(&self) -> Target<'_> {
        match self {
            TargetSpec::Id(id) => Target::Id(*id),
            TargetSpec::Name(name) => Target::Name(name),
            TargetSpec::Hash { filter, key } => Target::Hash {
                filter: filter.as_ref(),
                key,
            },
            TargetSpec::RoundRobin { filter } => Target::RoundRobin {
                filter: filter.as_ref(),
            },
            TargetSpec::Random { filter } => Target::Random {
                filter: filter.as_ref(),
            },
        }
    }
}
