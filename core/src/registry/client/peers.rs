//! The view's peers by [`EntryKey`], kept as two maps: nodes with an id by their 8-byte id,
//! nodes published by name only by their name.
//!
//! One map keyed by the enum would give every entry the 24-byte key a name needs; a view
//! holds one entry per known node (ARCHITECTURE §10, memory per known node), and nodes without
//! an id are rare. Iteration keeps the enum's order: every id before every name.

use alloc::{collections::BTreeMap, string::String};

use super::view::Peer;
use crate::{ids::NodeId, registry::server::EntryKey};

#[derive(Debug, Default)]
pub(super) struct Peers {
    by_id: BTreeMap<NodeId, Peer>,
    by_name: BTreeMap<String, Peer>,
}

impl Peers {
    pub(super) fn remove(&mut self, key: &EntryKey) -> Option<Peer> {
        match key {
            EntryKey::Id(id) => self.by_id.remove(id),
            EntryKey::Name(name) => self.by_name.remove(name),
        }
    }

    /// Stores `make(held)` under `key`, `held` being the peer stored there before, with one
    /// search of the map.
    pub(super) fn upsert(&mut self, key: EntryKey, make: impl FnOnce(Option<&Peer>) -> Peer) {
        match key {
            EntryKey::Id(id) => upsert_in(&mut self.by_id, id, make),
            EntryKey::Name(name) => upsert_in(&mut self.by_name, name, make),
        }
    }

    /// Every peer with its key, in key order (ids, then names).
    pub(super) fn iter(&self) -> impl Iterator<Item = (EntryKey, &Peer)> + '_ {
        let ids = self.by_id.iter().map(|(id, p)| (EntryKey::Id(*id), p));
        let names = (self.by_name.iter()).map(|(name, p)| (EntryKey::Name(name.clone()), p));
        ids.chain(names)
    }
}

fn upsert_in<K: Ord>(
    map: &mut BTreeMap<K, Peer>,
    key: K,
    make: impl FnOnce(Option<&Peer>) -> Peer,
) {
    use alloc::collections::btree_map::Entry;
    match map.entry(key) {
        Entry::Occupied(mut held) => {
            let peer = make(Some(held.get()));
            held.insert(peer);
        }
        Entry::Vacant(free) => {
            free.insert(make(None));
        }
    }
}
