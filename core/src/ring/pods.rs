//! The ring set's StatefulSet pod index per member slot, the round-robin order's first key.
//! Most members publish none (0): the table ends at the last slot with a non-zero index, so a
//! set where no member publishes one keeps no table at all.

use alloc::vec::Vec;

use super::members::set_slot;

/// Pod index by slot (0 past the end).
#[derive(Clone, Debug, Default)]
pub(super) struct PodIndexes {
    values: Vec<i64>,
}

impl PodIndexes {
    /// Slot `slot`'s pod index.
    #[inline]
    pub(super) fn get(&self, slot: u32) -> i64 {
        self.values.get(slot as usize).copied().unwrap_or(0)
    }

    /// Sets slot `slot`'s pod index.
    pub(super) fn set(&mut self, slot: u32, pod: i64) {
        let i = slot as usize;
        if i < self.values.len() || pod != 0 {
            set_slot(&mut self.values, i, pod, 0);
        }
    }

    /// Empties the table.
    pub(super) fn clear(&mut self) {
        self.values.clear();
    }

    /// Heap bytes held.
    pub(super) fn memory_bytes(&self) -> usize {
        self.values.capacity() * core::mem::size_of::<i64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_indexes_hold_no_table_and_the_first_other_extends_it() {
        let mut pods = PodIndexes::default();
        for slot in 0..50 {
            pods.set(slot, 0);
        }
        assert_eq!(pods.memory_bytes(), 0);
        pods.set(9, 3);
        assert_eq!(pods.values, [0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!((pods.get(9), pods.get(8), pods.get(10)), (3, 0, 0));
        pods.set(9, 0);
        pods.set(2, -4);
        assert_eq!((pods.get(9), pods.get(2)), (0, -4));
        pods.clear();
        assert_eq!(pods.get(2), 0);
    }
}
