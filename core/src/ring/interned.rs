//! The ring set's member metadata, interned: the members of one service publish equal
//! metadata (kind, name, namespace, labels), so the table keeps one shared copy per distinct
//! value and each member slot an `Arc` to it — 8 bytes per member instead of a 192-byte
//! `Metadata` and its strings. Members without metadata (the default value) hold nothing: the
//! table ends at the last slot with metadata, so a set where no member publishes any keeps no
//! table at all. Filter rings read it when a member arrives or a filter is added.

use alloc::{sync::Arc, vec::Vec};
use core::mem::size_of;

use hashbrown::HashMap;

use crate::discovery::Metadata;

/// Member metadata by slot, one shared copy per distinct value.
#[derive(Clone, Debug, Default)]
pub(super) struct MetadataTable {
    /// Per slot up to the last one with metadata; `None` is the default value.
    slots: Vec<Option<Arc<Metadata>>>,
    /// Each distinct value held, with how many slots hold it.
    distinct: HashMap<Arc<Metadata>, u32>,
}

impl MetadataTable {
    /// Slot `slot`'s metadata (default past the end).
    pub(super) fn get(&self, slot: u32) -> &Metadata {
        self.slots
            .get(slot as usize)
            .and_then(Option::as_deref)
            .unwrap_or(&EMPTY)
    }

    /// Sets slot `slot` to `metadata`.
    pub(super) fn set(&mut self, slot: u32, metadata: &Metadata) {
        let i = slot as usize;
        if *self.get(slot) == *metadata {
            return;
        }
        let shared = if *metadata == EMPTY {
            None
        } else {
            Some(self.intern(metadata))
        };
        // Past the end the value is the default, so there `shared` holds metadata.
        let old = self.slots.get_mut(i).and_then(Option::take);
        super::members::set_slot(&mut self.slots, i, shared, None);
        if let Some(old) = old {
            self.release(&old);
        }
    }

    /// The shared copy of `metadata`, counting one more hold.
    fn intern(&mut self, metadata: &Metadata) -> Arc<Metadata> {
        match self.distinct.get_key_value_mut(metadata) {
            Some((held, count)) => {
                *count += 1;
                Arc::clone(held)
            }
            None => {
                let held = Arc::new(metadata.clone());
                self.distinct.insert(Arc::clone(&held), 1);
                held
            }
        }
    }

    /// Drops one slot's hold on `metadata`; the last hold frees it.
    fn release(&mut self, metadata: &Metadata) {
        if let Some(count) = self.distinct.get_mut(metadata) {
            *count -= 1;
            if *count == 0 {
                self.distinct.remove(metadata);
            }
        }
    }

    /// Empties the table.
    pub(super) fn clear(&mut self) {
        self.slots.clear();
        self.distinct.clear();
    }

    /// How many distinct values are held.
    #[cfg(test)]
    pub(super) fn distinct_len(&self) -> usize {
        self.distinct.len()
    }

    /// Bytes held: the slots' pointers, and per distinct value its `Arc` (two counts and the
    /// record), its strings' capacities, and its table entry.
    pub(super) fn memory_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Option<Arc<Metadata>>>()
            + self.distinct.capacity() * (size_of::<(Arc<Metadata>, u32)>() + 1)
            + (self.distinct.keys())
                .map(|m| 2 * size_of::<usize>() + size_of::<Metadata>() + m.heap_bytes())
                .sum::<usize>()
    }
}

/// The metadata of a slot past the end.
static EMPTY: Metadata = Metadata {
    api_version: alloc::string::String::new(),
    kind: alloc::string::String::new(),
    group: alloc::string::String::new(),
    name: alloc::string::String::new(),
    namespace_name: alloc::string::String::new(),
    uid: alloc::string::String::new(),
    service_subset: alloc::string::String::new(),
    labels: crate::discovery::Labels::new(),
};

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(kind: &str) -> Metadata {
        Metadata {
            kind: kind.into(),
            labels: [("zone", "a")].into(),
            ..Metadata::default()
        }
    }

    #[test]
    fn equal_values_share_one_copy_and_the_last_hold_frees_it() {
        let mut table = MetadataTable::default();
        table.set(0, &meta("game"));
        table.set(1, &meta("game"));
        table.set(2, &meta("chat"));
        assert_eq!(table.distinct_len(), 2);
        assert!(core::ptr::eq(table.get(0), table.get(1)));
        assert_eq!(table.get(2), &meta("chat"));
        table.set(2, &meta("game"));
        assert_eq!(table.distinct_len(), 1, "chat's last hold went");
        table.set(0, &Metadata::default());
        table.set(1, &Metadata::default());
        assert_eq!(
            table.distinct_len(),
            1,
            "game (slot 2); the default is not held"
        );
        assert_eq!(table.get(0), &Metadata::default());
        assert_eq!(table.get(7), &Metadata::default(), "past the end");
        let copy = table.clone();
        table.set(2, &Metadata::default());
        assert_eq!(table.distinct_len(), 0);
        assert_eq!(copy.distinct_len(), 1, "a clone keeps its own counts");
        assert_eq!(copy.get(2), &meta("game"));
        table.clear();
        assert_eq!(table.distinct_len(), 0);
    }

    #[test]
    fn members_without_metadata_hold_no_table() {
        let mut table = MetadataTable::default();
        for slot in 0..100 {
            table.set(slot, &Metadata::default());
        }
        assert_eq!(table.memory_bytes(), 0);
        // The first member with metadata, at slot 100, extends the table to it.
        table.set(100, &meta("game"));
        assert_eq!(table.slots.len(), 101);
        assert_eq!(table.get(100), &meta("game"));
        assert_eq!(table.get(99), &Metadata::default());
        assert_eq!(table.get(101), &Metadata::default());
        assert_eq!(table.distinct_len(), 1);
    }
}
