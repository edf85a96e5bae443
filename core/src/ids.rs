//! Typed identifiers.
//!
//! Every id the core hands out or takes is its own type, so a function that takes a node and a
//! link cannot have them swapped. [`NodeId`] is the cluster-wide identity of a node (libatapp's
//! bus id; 0 is never a valid node). [`LinkId`] and [`MsgId`] are handed out by the core;
//! [`Key`] is a generational slot key: a stale key (its slot reused) never aliases the new
//! occupant, lookups with it return `None`.

use core::fmt;

/// Cluster-wide identity of a node. `NodeId(0)` is reserved as "none" and rejected everywhere a
/// real node is meant.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct NodeId(pub u64);

impl NodeId {
    /// The reserved "no node" id.
    pub const NONE: NodeId = NodeId(0);

    /// Whether this is a real node id (non-zero).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.0 != 0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}", self.0)
    }
}

impl From<u64> for NodeId {
    fn from(v: u64) -> NodeId {
        NodeId(v)
    }
}

/// A transport link (one connection) as the core knows it; assigned by the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u64);

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "link#{}", self.0)
    }
}

/// An accepted message; every `MsgId` ends in exactly one outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgId(pub u64);

impl MsgId {
    /// Set in the ids of the RPC layer's own messages (requests, replies, refusals, cancels,
    /// broadcast copies): their outcomes go to it, never to the driver.
    pub(crate) const RPC_BIT: u64 = 1 << 63;

    /// Whether this is one of the RPC layer's messages.
    #[inline]
    pub(crate) const fn is_rpc(self) -> bool {
        self.0 & MsgId::RPC_BIT != 0
    }
}

impl fmt::Display for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "msg#{}", self.0)
    }
}

/// A generational slot key: `index` names a slot, `generation` the occupant.
///
/// When a slot is freed its generation advances, so keys held for the previous occupant stop
/// matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    /// A key for slot `index`, occupant `generation`.
    #[must_use]
    pub const fn new(index: u32, generation: u32) -> Key {
        Key { index, generation }
    }

    /// The slot.
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The occupant's generation.
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.generation
    }
}

/// A monotonically increasing id source for [`LinkId`] and [`MsgId`].
#[derive(Clone, Debug, Default)]
pub struct IdSource {
    next: u64,
}

impl IdSource {
    /// A source whose first id is 1.
    #[must_use]
    pub const fn new() -> IdSource {
        IdSource { next: 0 }
    }

    /// The next raw id (1, 2, 3, ...). Wrapping after 2^64 ids is not a practical concern.
    pub fn next_raw(&mut self) -> u64 {
        self.next = self.next.wrapping_add(1);
        self.next
    }

    /// The next link id.
    pub fn next_link(&mut self) -> LinkId {
        LinkId(self.next_raw())
    }

    /// The next message id.
    pub fn next_msg(&mut self) -> MsgId {
        MsgId(self.next_raw())
    }

    /// The next id, marked as the RPC layer's ([`MsgId::is_rpc`]).
    pub(crate) fn next_rpc_msg(&mut self) -> MsgId {
        MsgId(self.next_raw() | MsgId::RPC_BIT)
    }

    /// The next id, the RPC layer's if `rpc`.
    #[inline]
    pub(crate) fn next_for(&mut self, rpc: bool) -> MsgId {
        if rpc {
            self.next_rpc_msg()
        } else {
            self.next_msg()
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::format;

    use super::*;

    #[test]
    fn node_zero_is_reserved() {
        assert!(!NodeId::NONE.is_valid());
        assert!(NodeId(0x101).is_valid());
        assert_eq!(format!("{}", NodeId(0x101)), "0x101");
    }

    #[test]
    fn id_source_counts_from_one() {
        let mut ids = IdSource::new();
        assert_eq!(ids.next_link(), LinkId(1));
        assert_eq!(ids.next_msg(), MsgId(2));
        assert_eq!(ids.next_raw(), 3);
    }

    #[test]
    fn keys_compare_by_slot_and_generation() {
        let a = Key::new(3, 1);
        let b = Key::new(3, 2);
        assert_ne!(a, b);
        assert_eq!(a.index(), b.index());
        assert_eq!(b.generation(), 2);
    }
}
