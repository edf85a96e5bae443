//! What a node's discovery state costs in memory, estimated from container sizes and
//! capacities (no allocator is asked): the registry client's view, the discovery set and its
//! rings, per known node.
//!
//! # How
//!
//! - A record: `size_of::<DiscoveryInfo>()` plus the capacities of its strings and vectors
//!   and labels (the fields a [`ScaleRun`] fills; gateways are empty there), plus the
//!   `Arc`'s two counts. The client view and the discovery set share one record per node
//!   ([`RegistryEvent::DiscoveryPut`](crate::registry::RegistryEvent::DiscoveryPut) carries
//!   it behind an `Arc`): a view's record is counted only when it is not the set's.
//! - A `BTreeMap` entry: a leaf holds up to 11 keys and values and a parent link; nodes
//!   filled in ascending order are about half full, so an entry costs `(11 × (key + value)
//!   + 16) / 6` bytes (internal nodes are under 10 % more and are left out).
//!   The client view keys a peer with an id by the id (8 bytes), a peer published by name
//!   only by its name (a `String` and its bytes).
//! - A `HashMap` entry (the set's name index): key + value + 1 control byte at the 7/8 load
//!   factor's worst doubling, × 2, plus the name's capacity.
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
    discovery::{DiscoveryInfo, TopologyInfo},
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
            btree_entry::<NodeId, Arc<DiscoveryInfo>>()
                + shared_record(info)
                + 2 * (size_of::<alloc::string::String>() + size_of::<NodeId>() + 1)
                + info.name.capacity()
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
/// its fields apart): its two counts, the record, its strings and labels.
fn shared_topology(info: &TopologyInfo) -> usize {
    let strings = [&info.name, &info.hostname, &info.identity, &info.version];
    2 * size_of::<usize>()
        + size_of::<TopologyInfo>()
        + strings.iter().map(|s| s.capacity()).sum::<usize>()
        + info.data.label.heap_bytes()
}

/// Heap bytes of a record's strings and vectors.
fn record_heap(info: &DiscoveryInfo) -> usize {
    let strings = [
        &info.name,
        &info.hostname,
        &info.hash_code,
        &info.type_name,
        &info.version,
        &info.custom_data,
        &info.identity,
    ];
    strings.iter().map(|s| s.capacity()).sum::<usize>()
        + info.listen.capacity() * size_of::<alloc::string::String>()
        + info.listen.iter().map(|s| s.capacity()).sum::<usize>()
        + info.metadata.heap_bytes()
}
