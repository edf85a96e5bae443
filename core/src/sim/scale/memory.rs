//! What a node's discovery state costs in memory, estimated from container sizes and
//! capacities (no allocator is asked): the registry client's view, the discovery set and its
//! rings, per known node.
//!
//! # How
//!
//! - A record: `size_of::<DiscoveryInfo>()` plus the capacities of its strings and vectors
//!   and labels, plus the `Arc`'s two counts. Its rare parts are
//!   [`Sparse`](crate::discovery::Sparse): one pointer inline, and when present a box of the
//!   part's size ([`Sparse::boxed_bytes`](crate::discovery::Sparse::boxed_bytes)) plus what
//!   the part holds (a [`ScaleRun`]'s records leave them all empty). The client view and the
//!   discovery set share one record per node
//!   ([`RegistryEvent::DiscoveryPut`](crate::registry::RegistryEvent::DiscoveryPut) carries
//!   it behind an `Arc`): a view's record is counted only when it is not the set's.
//! - A `BTreeMap` entry: a leaf holds up to 11 keys and values and a parent link; nodes
//!   filled in ascending order are about half full, so an entry costs `(11 × (key + value)
//!   + 16) / 6` bytes (internal nodes are under 10 % more and are left out).
//!   The client view keys a peer with an id by the id (8 bytes), a peer published by name
//!   only by its name (a `String` and its bytes).
//! - The set's name index: a hash table of the held records' `Arc`s (the name is not
//!   copied), one per named node: the `Arc` + 1 control byte at the 7/8 load factor's worst
//!   doubling, × 2. A name-only node (id 0) is keyed by a copy of its name in a `BTreeMap`.
//! - Rings: [`RingSet::memory_bytes`](crate::ring::RingSet::memory_bytes) (capacities,
//!   every filter's ring included).
//! - The view's topology records (one per known node, behind an `Arc`) are counted with the
//!   view.
//! - Not counted: the topology registry (the fields of each node's topology record it keeps
//!   for relations; discovery only) and the node's per-peer connection state (no peer is
//!   dialled).

use alloc::{string::String, sync::Arc};
use core::mem::size_of;

use super::ScaleRun;
use crate::{
    discovery::{DiscoveryInfo, Gateway, Sparse, TopologyInfo},
    ids::NodeId,
    registry::{client::Peer, server::EntryKey},
};

/// One node's discovery memory, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiscoveryMemory {
    /// Nodes it knows.
    pub known: usize,
    /// Its registry client's view (one [`Peer`] per known node).
    pub client_view: usize,
    /// Its discovery set's records and indices.
    pub discovery_set: usize,
    /// Its rings.
    pub rings: usize,
}

impl DiscoveryMemory {
    /// Everything counted.
    #[must_use]
    pub fn total(&self) -> usize {
        self.client_view + self.discovery_set + self.rings
    }

    /// Bytes per known node (0 with none known).
    #[must_use]
    pub fn per_known_node(&self) -> usize {
        self.total().checked_div(self.known).unwrap_or(0)
    }
}

/// Full member `i`'s discovery memory (`None` for a light member).
#[must_use]
pub fn discovery_memory(run: &ScaleRun, i: usize) -> Option<DiscoveryMemory> {
    let records = run.records(i)?;
    let set = &records.discovery;
    let discovery_set = set
        .iter()
        .map(|info| {
            let entry = if info.id.is_valid() {
                btree_entry::<NodeId, Arc<DiscoveryInfo>>()
            } else {
                btree_entry::<String, Arc<DiscoveryInfo>>() + info.name.capacity()
            };
            let name_index = if info.name.is_empty() {
                0
            } else {
                2 * (size_of::<Arc<DiscoveryInfo>>() + 1)
            };
            entry + shared_record(info) + name_index
        })
        .sum();
    let client_view = run.net().client(i).map_or(0, |client| {
        client
            .peers()
            .map(|(key, peer)| {
                let held = set.get_by_id(peer.discovery.id);
                let shared = held.is_some_and(|info| core::ptr::eq(info, &*peer.discovery));
                let entry = match key {
                    // The view keeps peers with an id by id, the rest by name.
                    EntryKey::Id(_) => btree_entry::<NodeId, Peer>(),
                    EntryKey::Name(name) => btree_entry::<String, Peer>() + name.capacity(),
                };
                entry
                    + if shared {
                        0
                    } else {
                        shared_record(&peer.discovery)
                    }
                    + peer.topology.as_deref().map_or(0, shared_topology)
            })
            .sum()
    });
    Some(DiscoveryMemory {
        known: set.len(),
        client_view,
        discovery_set,
        // Burst deferral may have left the points stale (smaller than they will be): count
        // them as the next pick will build them.
        rings: if set.rings().is_settled() {
            set.rings().memory_bytes()
        } else {
            let mut settled = set.rings().clone();
            settled.settle();
            settled.memory_bytes()
        },
    })
}

/// Bytes a `BTreeMap<K, V>` entry costs (see the [module docs](self)).
fn btree_entry<K, V>() -> usize {
    (11 * (size_of::<K>() + size_of::<V>()) + 16) / 6
}

/// Bytes of one record behind an `Arc`: its two counts, the record, its heap.
fn shared_record(info: &DiscoveryInfo) -> usize {
    2 * size_of::<usize>() + size_of::<DiscoveryInfo>() + record_heap(info)
}

/// Bytes of one topology record behind an `Arc` (the view's own: the topology registry keeps
/// its fields apart): its two counts, the record, its strings and labels, its boxed parts.
fn shared_topology(info: &TopologyInfo) -> usize {
    let strings = [&info.name, &info.hostname, &info.identity];
    2 * size_of::<usize>()
        + size_of::<TopologyInfo>()
        + strings.iter().map(|s| s.capacity()).sum::<usize>()
        + sparse_string(&info.version)
        + Sparse::boxed_bytes(&info.data)
        + info.data.label.heap_bytes()
}

/// Heap bytes of a record's strings and vectors, its boxed parts included.
fn record_heap(info: &DiscoveryInfo) -> usize {
    let strings = [
        &info.name,
        &info.hostname,
        &info.type_name,
        &info.version,
        &info.identity,
    ];
    strings.iter().map(|s| s.capacity()).sum::<usize>()
        + sparse_string(&info.hash_code)
        + sparse_string(&info.custom_data)
        + strings_heap(&info.listen)
        + Sparse::boxed_bytes(&info.area)
        + info.area.region.capacity()
        + info.area.district.capacity()
        + Sparse::boxed_bytes(&info.gateways)
        + info.gateways.capacity() * size_of::<Gateway>()
        + info
            .gateways
            .iter()
            .map(|g| {
                g.address.capacity()
                    + strings_heap(&g.match_hosts)
                    + strings_heap(&g.match_namespaces)
                    + g.match_labels.heap_bytes()
            })
            .sum::<usize>()
        + Sparse::boxed_bytes(&info.metadata)
        + info.metadata.heap_bytes()
}

/// Heap bytes of a [`Sparse`] string: its box and its capacity.
fn sparse_string(text: &Sparse<String>) -> usize {
    Sparse::boxed_bytes(text) + text.capacity()
}

/// Heap bytes of a vector of strings: the vector's and each string's.
fn strings_heap(list: &alloc::vec::Vec<String>) -> usize {
    list.capacity() * size_of::<String>() + list.iter().map(String::capacity).sum::<usize>()
}
