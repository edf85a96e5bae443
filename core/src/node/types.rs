//! Whom a `send` is for ([`Target`]).

use crate::{discovery::Filter, ids::NodeId};

/// Whom a `send` is for.
///
/// `Id` and `Name` address one node. `Hash`, `RoundRobin` and `Random` pick one node among the
/// discovery records matching `filter` (every node with an id when `None`), on the
/// consistent-hash ring the discovery set keeps for that filter: `Hash` takes the owner of
/// `key` on the ring, `RoundRobin` the next member in the ring's sorted order (one cursor per
/// ring, which resumes after the last node it returned when membership changes), `Random` a
/// member drawn from the node's seeded generator. The pick is made at `send` and the message
/// stays with that node.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Target<'a> {
    /// The node with this id.
    Id(NodeId),
    /// The node holding this name in discovery.
    Name(&'a str),
    /// A node chosen by hashing `key`.
    Hash {
        /// Restricts the candidates; `None` = every node.
        filter: Option<&'a Filter>,
        /// The key to hash.
        key: &'a [u8],
    },
    /// The next node in turn.
    RoundRobin {
        /// Restricts the candidates; `None` = every node.
        filter: Option<&'a Filter>,
    },
    /// A node chosen at random (seeded).
    Random {
        /// Restricts the candidates; `None` = every node.
        filter: Option<&'a Filter>,
    },
}
