//! The routing decision for a frame this node relays (it acts as a proxy): which directly
//! linked peer carries it on toward its destination.

use super::{Connector, World};
use crate::ids::NodeId;

impl Connector {
    /// The directly linked peer (its link up) a frame for `dst` that arrived from `from` goes
    /// on to, or `None` when there is none right now (the relay answers `Unreachable`).
    ///
    /// In order: `dst` itself when linked; else the hop of `dst`'s ready route record; else
    /// the topology's next hop from this node to `dst`; else this node's upstream — never
    /// back to `from`, never this node. The answer depends only on the records, the topology
    /// and the link states the owner reported, so a relay and a sender decide the same way.
    #[must_use]
    pub fn relay_hop(&self, world: &World<'_>, dst: NodeId, from: NodeId) -> Option<NodeId> {
        if self.link_up(dst) {
            return Some(dst);
        }
        let own = self.own_id;
        let usable = |hop: &NodeId| *hop != from && *hop != own && self.link_up(*hop);
        self.ready_hop(dst)
            .filter(usable)
            .or_else(|| world.topology.next_hop(own, dst).filter(usable))
            .or_else(|| Some(self.upstream()).filter(|up| up.is_valid() && usable(up)))
    }
}
