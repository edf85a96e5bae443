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
    /// A node chosen by `key` in the Maglev table of the nodes matching `filter`.
    Maglev {
        /// Restricts the candidates; `None` = every node.
        filter: Option<Filter>,
        /// The key to hash.
        key: Vec<u8>,
    },
    /// The ring owner of `key` among the nodes matching `filter` unless it carries more than
    /// the load bound, then the next node clockwise under it.
    Bounded {
        /// Restricts the candidates; `None` = every node.
        filter: Option<Filter>,
        /// The key to hash.
        key: Vec<u8>,
    },
}

impl TargetSpec {
    /// The node `select` picks among the nodes matching `filter` (`None`: every node).
    /// `Node` and `Name` name one node: `filter` does not apply to them.
    #[must_use]
    pub fn among(filter: Option<Filter>, select: Select) -> TargetSpec {
        match select {
            Select::Node(id) => TargetSpec::Id(id),
            Select::Name(name) => TargetSpec::Name(name),
            Select::Hash(key) => TargetSpec::Hash {
                filter,
                key: key.to_vec(),
            },
            Select::RoundRobin => TargetSpec::RoundRobin { filter },
            Select::Random => TargetSpec::Random { filter },
            Select::LeastOutstanding => TargetSpec::LeastOutstanding { filter },
            Select::Maglev(key) => TargetSpec::Maglev {
                filter,
                key: key.to_vec(),
            },
            Select::Bounded(key) => TargetSpec::Bounded {
                filter,
                key: key.to_vec(),
            },
        }
    }

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
            TargetSpec::Maglev { filter, key } => {
                (filter.as_ref(), Select::Maglev(Bytes::copy_from_slice(key)))
            }
            TargetSpec::Bounded { filter, key } => (
                filter.as_ref(),
                Select::Bounded(Bytes::copy_from_slice(key)),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::discovery::Metadata;

    use super::*;

    /// `among` and `to_select` are inverse for every mode; `Node` and `Name` drop the filter.
    #[test]
    fn every_selection_round_trips_through_a_target_spec() {
        let leaf = Filter(Metadata {
            kind: "leaf".into(),
            ..Metadata::default()
        });
        for select in [
            Select::Hash(Bytes::from_static(b"k")),
            Select::RoundRobin,
            Select::Random,
            Select::LeastOutstanding,
            Select::Maglev(Bytes::from_static(b"k")),
            Select::Bounded(Bytes::from_static(b"k")),
        ] {
            let spec = TargetSpec::among(Some(leaf.clone()), select.clone());
            assert_eq!(spec.to_select(), (Some(&leaf), select));
        }
        for select in [Select::Node(NodeId(7)), Select::Name("a".into())] {
            let spec = TargetSpec::among(Some(leaf.clone()), select.clone());
            assert_eq!(spec.to_select(), (None, select));
        }
        assert_eq!(
            TargetSpec::among(None, Select::Node(NodeId(7))),
            TargetSpec::Id(NodeId(7))
        );
    }
}
