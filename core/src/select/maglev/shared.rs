//! Maglev tables shared by several selectors. A table depends only on its size, its fill
//! and its node ids, so selectors that see the same membership — the nodes of one simulated
//! cluster, run on one thread — can fill one table between them instead of one each, with
//! the same picks. A selector is lent the tables for the length of a call
//! ([`Selector::swap_shared_maglev`](crate::select::Selector::swap_shared_maglev)); each
//! table is filled lazily, as far as the lookups of all its users need.

use alloc::vec::Vec;

use super::{MaglevFill, MaglevTable};
use crate::{hash::KeyHash, ids::NodeId};

/// Maglev tables several [`Selector`](crate::select::Selector)s take turns using: one per
/// (size, fill, node ids), the [`CAPACITY`](Self::CAPACITY) most recently used kept (an
/// older one's buffers are reused for the next new membership).
#[derive(Clone, Debug, Default)]
pub struct SharedMaglev {
    /// Most recently used last.
    tables: Vec<MaglevTable>,
}

impl SharedMaglev {
    /// Tables kept: memberships seen at about the same time by different selectors.
    pub const CAPACITY: usize = 8;

    /// No tables yet.
    #[must_use]
    pub fn new() -> SharedMaglev {
        SharedMaglev::default()
    }

    /// The owner of `hash` in the table of `size` slots (a size that is not a prime gives
    /// the default size, as for a selector's own table) filled by `fill` over `ids` (in
    /// ascending order, distinct, no id 0: what a build keeps of its ids).
    pub(in crate::select) fn lookup(
        &mut self,
        size: u32,
        fill: MaglevFill,
        ids: &[NodeId],
        hash: KeyHash,
    ) -> Option<NodeId> {
        let size = if MaglevTable::valid_size(size) {
            size
        } else {
            MaglevTable::DEFAULT_SIZE
        };
        let found = self
            .tables
            .iter()
            .rposition(|t| t.size == size && t.fill == fill && t.holds(ids));
        let mut table = if let Some(at) = found {
            self.tables.remove(at)
        } else {
            let mut table = if self.tables.len() >= Self::CAPACITY {
                self.tables.remove(0)
            } else {
                MaglevTable::default_size()
            };
            if table.size != size {
                // Kept permutations are for the old size: start afresh.
                table = MaglevTable::default_size();
                table.size = size;
            }
            table.fill = fill;
            table.start_build(ids.iter().copied());
            table
        };
        let owner = table.lookup_filling(hash);
        self.tables.push(table);
        owner
    }
}

impl MaglevTable {
    /// Whether the table was built over exactly `ids` (ascending, distinct, valid).
    fn holds(&self, ids: &[NodeId]) -> bool {
        self.nodes.len() == ids.len() && self.nodes.iter().zip(ids).all(|(p, &id)| p.id == id)
    }
}
