//! The member table behind a ring: node id and name per *slot*.
//!
//! Ring points store a slot instead of the node id, so a point is 4 bytes and no point holds a
//! reference count. Slots are reused after removal (LIFO free list), which keeps the
//! table dense; ordering never depends on slot numbers (ties are broken by node id), so the
//! same membership always yields the same ring whatever the history of slots.

use alloc::{boxed::Box, vec::Vec};
use hashbrown::HashTable;

use crate::{hash::fast_node_hash, ids::NodeId, rng::mix64};

/// Hash of a `NodeId` key in the by-id table: one `mix64` of the id (deterministic, no random
/// state).
#[inline]
fn id_hash(id: NodeId) -> u64 {
    mix64(id.0)
}

/// Appends to a per-slot table, growing it by an eighth rather than doubling: a table grown
/// member by member then keeps at most an eighth of its slots spare (doubling left 64 % spare
/// at 10,000 members), and each element is copied about eight times over the table's growth.
pub(crate) fn push_slot<T>(table: &mut Vec<T>, value: T) {
    room_for_one(table);
    table.push(value);
}

/// Sets element `i` of a per-slot table that may end before it, first extending it with
/// `fill` up to `i` (tables that end at their last non-default slot).
pub(crate) fn set_slot<T: Clone>(table: &mut Vec<T>, i: usize, value: T, fill: T) {
    if let Some(held) = table.get_mut(i) {
        *held = value;
        return;
    }
    while table.len() < i {
        push_slot(table, fill.clone());
    }
    push_slot(table, value);
}

/// Makes room for one more element of a per-slot table the way [`push_slot`] does.
pub(crate) fn room_for_one<T>(table: &mut Vec<T>) {
    if table.len() == table.capacity() {
        table.reserve_exact((table.len() / 8).max(4));
    }
}

/// Slot-indexed member table of one ring (or of a whole `RingSet`, whose filter rings share
/// the default ring's slots).
#[derive(Clone, Debug, Default)]
pub(crate) struct Members {
    /// Node id per slot; `NodeId::NONE` marks a free slot.
    ids: Vec<NodeId>,
    /// Name per slot (a free slot keeps its last name until reused): a box of the exact
    /// bytes, 16 bytes inline where a `String` takes 24.
    names: Vec<Box<str>>,
    /// Slot of each live member, found by its id (`ids[slot]`): 4 bytes per entry, the id is
    /// not stored twice.
    by_id: HashTable<u32>,
    free: Vec<u32>,
}

impl Members {
    /// Number of live members.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Number of slots ever allocated (live or free): the bound of every slot index.
    pub(crate) fn slot_capacity(&self) -> usize {
        self.ids.len()
    }

    /// The slot of a live member.
    #[inline]
    pub(crate) fn slot(&self, id: NodeId) -> Option<u32> {
        let ids = &self.ids;
        self.by_id
            .find(id_hash(id), |&slot| ids[slot as usize] == id)
            .copied()
    }

    /// Node id in `slot` (`NodeId::NONE` for a free slot).
    #[inline]
    pub(crate) fn id(&self, slot: u32) -> NodeId {
        self.ids[slot as usize]
    }

    /// Name in `slot`.
    pub(crate) fn name(&self, slot: u32) -> &str {
        &self.names[slot as usize]
    }

    /// Fast-mode node hash of `slot` (`fast_node_hash` of its name or id bytes), computed on
    /// each call: only the passes that hash a node's points ask, once per node, and a murmur3
    /// round of a name is cheap next to its 80 points, where a stored hash would cost 8 bytes
    /// per member.
    #[inline]
    pub(crate) fn node_hash(&self, slot: u32) -> u64 {
        fast_node_hash(self.name(slot), self.id(slot))
    }

    /// Adds a member that is not present yet and returns its slot.
    pub(crate) fn alloc(&mut self, id: NodeId, name: &str) -> u32 {
        let slot = if let Some(slot) = self.free.pop() {
            let i = slot as usize;
            self.ids[i] = id;
            if *self.names[i] != *name {
                self.names[i] = Box::from(name);
            }
            slot
        } else {
            let i = self.ids.len();
            let slot = u32::try_from(i).expect("slot count is bounded by RingError::Capacity");
            push_slot(&mut self.ids, id);
            // `clear` keeps old names past `ids.len()`: a rebuild of the same members reuses
            // them and allocates nothing.
            match self.names.get_mut(i) {
                Some(spare) if **spare == *name => {}
                Some(spare) => *spare = Box::from(name),
                None => push_slot(&mut self.names, Box::from(name)),
            }
            slot
        };
        let ids = &self.ids;
        self.by_id
            .insert_unique(id_hash(id), slot, |&s| id_hash(ids[s as usize]));
        slot
    }

    /// Renames the member in `slot` (its points must be recomputed by the caller).
    pub(crate) fn rename(&mut self, slot: u32, name: &str) {
        self.names[slot as usize] = Box::from(name);
    }

    /// Removes a member and frees its slot; returns the slot it had.
    pub(crate) fn release(&mut self, id: NodeId) -> Option<u32> {
        let ids = &self.ids;
        let (slot, _) = self
            .by_id
            .find_entry(id_hash(id), |&slot| ids[slot as usize] == id)
            .ok()?
            .remove();
        self.ids[slot as usize] = NodeId::NONE;
        self.free.push(slot);
        Some(slot)
    }

    /// Makes room for `n` members in a cleared table without spare capacity (no allocation
    /// when the table already holds that many).
    pub(crate) fn reserve_exact(&mut self, n: usize) {
        self.ids.reserve_exact(n.saturating_sub(self.ids.len()));
        self.names.reserve_exact(n.saturating_sub(self.names.len()));
        let ids = &self.ids;
        self.by_id
            .reserve(n.saturating_sub(self.by_id.len()), |&s| {
                id_hash(ids[s as usize])
            });
    }

    /// Removes every member, keeping allocations.
    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        // Names stay as spare allocations: `alloc` reuses the one at a slot it hands out again.
        self.by_id.clear();
        self.free.clear();
    }

    /// Heap bytes held by the table.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.ids.capacity() * core::mem::size_of::<NodeId>()
            + self.free.capacity() * 4
            + self.names.iter().map(|name| name.len()).sum::<usize>()
            + self.names.capacity() * core::mem::size_of::<Box<str>>()
            + self.by_id.capacity() * (core::mem::size_of::<u32>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleared_table_reuses_equal_names_and_replaces_the_others() {
        let mut members = Members::default();
        let a = members.alloc(NodeId(1), "alpha");
        let b = members.alloc(NodeId(2), "beta");
        let kept: *const u8 = members.name(a).as_ptr();
        members.clear();
        assert_eq!(members.len(), 0);
        assert_eq!(members.slot(NodeId(1)), None);
        assert_eq!(members.alloc(NodeId(1), "alpha"), a);
        assert_eq!(members.alloc(NodeId(3), "gamma"), b);
        assert_eq!(
            members.name(a).as_ptr(),
            kept,
            "the equal name's box is reused"
        );
        assert_eq!((members.name(a), members.name(b)), ("alpha", "gamma"));
        assert_eq!(members.id(b), NodeId(3));
        assert_eq!(members.slot(NodeId(3)), Some(b));
        assert_eq!(
            members.node_hash(b),
            fast_node_hash("gamma", NodeId(3)),
            "the node hash follows the new name"
        );
    }
}
