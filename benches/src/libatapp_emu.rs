//! An in-repo Rust emulation of libatapp's `etcd_discovery_set` hash ring (libatapp `main`,
//! 80 name points per node; perf-anchors §1, libatapp-spec §7).
//!
//! The C++ reference (`benches/cpp/libatapp_ring.cpp`, see [`crate::cpp_reference`]) times
//! upstream's rebuild and lookup; this emulation repeats the whole recipe in Rust, including
//! what the C++ reference does not time (one node's add or remove followed by the first
//! lookup, per-filter rings), with the same data layout and the same amount of work, and
//! nothing smarter. `ring-report` prints its figures as `libatapp_emu_*`: they measure Rust,
//! not libatapp. (Rust's `sort_unstable_by` is faster than libstdc++'s `std::sort` on these
//! entries, so the emulation's builds run faster than the C++ reference's.)
//!
//! - Nodes are shared, reference-counted objects ([`Rc<EmuNode>`]: a non-atomic count, as
//!   upstream's `atfw::util::memory::strong_rc_ptr` since 2024-04), indexed by id and by name.
//! - A ring entry ([`HashEntry`]) is 32 bytes: the 128-bit point hash plus a shared pointer. A
//!   `strong_rc_ptr` is two machine words, so the entry carries the `Rc` plus one word standing
//!   in for the control-block pointer. Every entry copy clones the `Rc` (a non-atomic
//!   increment).
//! - Per node and per point `i` in `0..80`: `murmur3_x64_128(name, seed = i)`; a node without a
//!   name hashes its 8 id bytes (libatapp main since `45f5fda`; v0.12.x split the points into
//!   40 id points and 40 name points, at the same cost).
//! - The ring is sorted by a comparator that orders by the `(h1, h2)` pair and breaks ties by
//!   node id, then the node's name hash, then the name, reading them through the node pointer;
//!   the round-robin list is sorted by (id, name hash, name) on every rebuild.
//! - The compact ring (each run of one node's points becomes its last point; a final run
//!   belonging to the first kept node is dropped) is built lazily, by the first compact
//!   search only, as upstream's `rebuild_compact_cache`.
//! - Any add or remove drops the default ring and every per-filter ring that references the
//!   node or matches its metadata. Rings are rebuilt lazily, inside the next lookup, so the first
//!   lookup after a change pays for a whole rebuild. Per-filter rings are built the same way from
//!   scratch: every matching node is hashed again and the filtered ring is sorted again.
//! - Lookup: `murmur3_x64_128(key, seed = 0x01000193)`, `lower_bound` on the hash pair, wrap to
//!   the first entry past the end.
//!
//! The benches time [`LibatappSet::rebuild`] as the emulated build cost, "add one node, then
//! the first lookup" as its add cost, and "change one node's metadata, then the first filtered
//! lookup" as its per-filter update cost.

use std::{
    cmp::Ordering,
    collections::{BTreeMap, HashSet},
    rc::Rc,
};

use switchboard_core::{
    discovery::{Filter, Metadata},
    hash::{LIBATAPP_KEY_SEED as KEY_SEED, murmur3_x64_128},
    ids::NodeId,
};

use crate::workload::POINTS_PER_NODE;

/// A discovered node, shared by every ring entry that points at it (`etcd_discovery_node`).
#[derive(Debug)]
pub struct EmuNode {
    id: NodeId,
    name: String,
    name_hash: (u64, u64),
    metadata: Metadata,
}

impl EmuNode {
    /// Creates a shared node; the name hash is computed once here, as libatapp does on copy-in.
    #[must_use]
    pub fn new(id: NodeId, name: impl Into<String>, metadata: Metadata) -> Rc<EmuNode> {
        let name = name.into();
        let name_hash = murmur3_x64_128(name.as_bytes(), KEY_SEED);
        Rc::new(EmuNode {
            id,
            name,
            name_hash,
            metadata,
        })
    }

    /// The node id (0 means "no id").
    #[must_use]
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node name (empty means "no name").
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The metadata the node publishes.
    #[must_use]
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Hash of ring point `i`: murmur3 of the name, or of the 8 id bytes for a nameless node.
    fn point_hash(&self, i: u32) -> (u64, u64) {
        if self.name.is_empty() {
            murmur3_x64_128(&self.id.0.to_le_bytes(), i)
        } else {
            murmur3_x64_128(self.name.as_bytes(), i)
        }
    }
}

/// One ring point: 128-bit hash and a shared node pointer, 32 bytes like libatapp's
/// `node_hash_type` (`std::pair<u64, u64>` + `std::shared_ptr`).
#[derive(Clone, Debug)]
pub struct HashEntry {
    /// The point's position on the ring, `(h1, h2)` of murmur3.
    pub hash: (u64, u64),
    /// The node owning the point.
    pub node: Rc<EmuNode>,
    /// Stands in for the second word of a `shared_ptr` (its control-block pointer); compared
    /// for node identity the way C++ compares `shared_ptr`s.
    control: usize,
}

impl HashEntry {
    fn new(hash: (u64, u64), node: &Rc<EmuNode>) -> HashEntry {
        HashEntry {
            hash,
            node: Rc::clone(node),
            control: Rc::as_ptr(node) as usize,
        }
    }
}

/// libatapp's `consistent_hash_compare_index`: hash pair, then id, name hash, name.
fn compare_entries(l: &HashEntry, r: &HashEntry) -> Ordering {
    l.hash
        .cmp(&r.hash)
        .then_with(|| l.node.id.cmp(&r.node.id))
        .then_with(|| l.node.name_hash.cmp(&r.node.name_hash))
        .then_with(|| l.node.name.cmp(&r.node.name))
}

/// libatapp's `round_robin_compare_index`: id, name hash, name.
fn compare_nodes(l: &Rc<EmuNode>, r: &Rc<EmuNode>) -> Ordering {
    l.id.cmp(&r.id)
        .then_with(|| l.name_hash.cmp(&r.name_hash))
        .then_with(|| l.name.cmp(&r.name))
}

/// The caches of one index (default or one filter): `index_cache_type`.
#[derive(Debug, Default)]
struct IndexCache {
    hashing: Vec<HashEntry>,
    compact: Vec<HashEntry>,
    round_robin: Vec<Rc<EmuNode>>,
    /// Addresses of the nodes this index holds (`reference_cache`, pointer identity).
    references: HashSet<usize>,
}

impl IndexCache {
    fn clear(&mut self) {
        self.hashing.clear();
        self.compact.clear();
        self.round_robin.clear();
        self.references.clear();
    }
}

/// The discovery set: nodes by id and by name, a lazily built default ring and lazily built
/// per-filter rings (`etcd_discovery_set`).
#[derive(Debug, Default)]
pub struct LibatappSet {
    by_id: BTreeMap<NodeId, Rc<EmuNode>>,
    by_name: BTreeMap<String, Rc<EmuNode>>,
    default_index: IndexCache,
    filter_index: BTreeMap<Filter, IndexCache>,
}

impl LibatappSet {
    /// An empty set.
    #[must_use]
    pub fn new() -> LibatappSet {
        LibatappSet::default()
    }

    /// Number of distinct nodes (each node counted once, by id or else by name).
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.by_id.len()
            + self
                .by_name
                .values()
                .filter(|n| n.id == NodeId::NONE)
                .count()
    }

    /// Adds or replaces a node (matched by id and by name) and drops every cache it affects.
    pub fn add_node(&mut self, node: Rc<EmuNode>) {
        let mut touched = vec![Rc::as_ptr(&node) as usize];
        let mut old_name = None;
        let mut old_id = None;
        if node.id != NodeId::NONE
            && let Some(old) = self.by_id.insert(node.id, Rc::clone(&node))
        {
            touched.push(Rc::as_ptr(&old) as usize);
            if old.name != node.name {
                old_name = Some(old.name.clone());
            }
        }
        if !node.name.is_empty()
            && let Some(old) = self.by_name.insert(node.name.clone(), Rc::clone(&node))
        {
            touched.push(Rc::as_ptr(&old) as usize);
            if old.id != node.id {
                old_id = Some(old.id);
            }
        }
        if let Some(id) = old_id.filter(|id| *id != NodeId::NONE)
            && self.by_id.get(&id).is_some_and(|n| !Rc::ptr_eq(n, &node))
        {
            self.by_id.remove(&id);
        }
        if let Some(name) = old_name.filter(|n| !n.is_empty())
            && self
                .by_name
                .get(&name)
                .is_some_and(|n| !Rc::ptr_eq(n, &node))
        {
            self.by_name.remove(&name);
        }
        self.clear_cache(Some(&node.metadata), &touched);
    }

    /// Removes the node with `id`; returns whether it was present. Drops every cache it affects.
    pub fn remove_node(&mut self, id: NodeId) -> bool {
        let Some(node) = self.by_id.remove(&id) else {
            return false;
        };
        if self
            .by_name
            .get(&node.name)
            .is_some_and(|n| Rc::ptr_eq(n, &node))
        {
            self.by_name.remove(&node.name);
        }
        self.clear_cache(Some(&node.metadata), &[Rc::as_ptr(&node) as usize]);
        true
    }

    /// libatapp's `clear_cache`: the default index always, and every filter index that holds
    /// one of `nodes` or whose filter matches `metadata`.
    fn clear_cache(&mut self, metadata: Option<&Metadata>, nodes: &[usize]) {
        self.default_index.clear();
        self.filter_index.retain(|filter, index| {
            let references = nodes.iter().any(|n| index.references.contains(n));
            let matches = metadata.is_some_and(|m| filter.matches(m));
            !(references || matches)
        });
    }

    /// Drops every ring and rebuilds the one for `filter` (`None` = default ring): the cost of
    /// the first lookup after a membership change.
    pub fn rebuild(&mut self, filter: Option<&Filter>) {
        self.default_index.clear();
        self.filter_index.clear();
        self.ring(filter);
    }

    /// The sorted ring for `filter` (`None` or a wildcard = default), rebuilt first if a change
    /// dropped it.
    pub fn ring(&mut self, filter: Option<&Filter>) -> &[HashEntry] {
        &self.index(filter).hashing
    }

    /// The compact ring for `filter`, built from the sorted ring on first use after a change
    /// (`rebuild_compact_cache`).
    pub fn compact_ring(&mut self, filter: Option<&Filter>) -> &[HashEntry] {
        self.index(filter);
        let index = match filter {
            Some(f) if !f.is_wildcard() => self
                .filter_index
                .get_mut(f)
                .expect("index() created the filter index"),
            _ => &mut self.default_index,
        };
        if index.compact.is_empty() {
            compact_index(index);
        }
        &index.compact
    }

    /// The round-robin order for `filter` (id, name hash, name), rebuilt first if needed.
    pub fn sorted_nodes(&mut self, filter: Option<&Filter>) -> &[Rc<EmuNode>] {
        &self.index(filter).round_robin
    }

    /// libatapp's `get_node_by_consistent_hash`: first ring entry at or after the key's hash.
    /// Returns the shared node (a reference-count increment, as the C++ `shared_ptr` return).
    pub fn lookup(&mut self, key: &[u8], filter: Option<&Filter>) -> Option<Rc<EmuNode>> {
        let ring = &self.index(filter).hashing;
        let first = ring.first()?;
        let hash = murmur3_x64_128(key, KEY_SEED);
        let pos = ring.partition_point(|e| e.hash < hash);
        Some(Rc::clone(&ring.get(pos).unwrap_or(first).node))
    }

    /// [`Self::lookup`] of an integer key, hashed as its 8 little-endian bytes.
    pub fn lookup_u64(&mut self, key: u64, filter: Option<&Filter>) -> Option<Rc<EmuNode>> {
        self.lookup(&key.to_le_bytes(), filter)
    }

    /// The index for `filter`, created (filters) and rebuilt (both) on demand.
    fn index(&mut self, filter: Option<&Filter>) -> &IndexCache {
        let index = match filter {
            Some(f) if !f.is_wildcard() => {
                if !self.filter_index.contains_key(f) {
                    self.filter_index.insert(f.clone(), IndexCache::default());
                }
                self.filter_index
                    .get_mut(f)
                    .expect("filter index inserted just above")
            }
            _ => &mut self.default_index,
        };
        if index.hashing.is_empty() {
            rebuild_index(index, &self.by_id, &self.by_name, filter);
        }
        index
    }
}

/// libatapp's `rebuild_cache` for one index (the compact ring is left for [`compact_index`]).
fn rebuild_index(
    index: &mut IndexCache,
    by_id: &BTreeMap<NodeId, Rc<EmuNode>>,
    by_name: &BTreeMap<String, Rc<EmuNode>>,
    filter: Option<&Filter>,
) {
    index.clear();
    let nodes = by_id
        .values()
        .chain(by_name.values().filter(|n| n.id == NodeId::NONE));
    for node in nodes {
        if filter.is_some_and(|f| !f.matches(&node.metadata)) {
            continue;
        }
        index.round_robin.push(Rc::clone(node));
        index.references.insert(Rc::as_ptr(node) as usize);
        for i in 0..POINTS_PER_NODE {
            index.hashing.push(HashEntry::new(node.point_hash(i), node));
        }
    }
    index.round_robin.sort_unstable_by(compare_nodes);
    index.hashing.sort_unstable_by(compare_entries);
}

/// libatapp's `rebuild_compact_cache`: the last point of each run of one node, the final run
/// dropped when it belongs to the first kept node.
fn compact_index(index: &mut IndexCache) {
    index.compact.clear();
    for (i, entry) in index.hashing.iter().enumerate() {
        let run_continues = index
            .hashing
            .get(i + 1)
            .is_some_and(|next| next.control == entry.control);
        if !run_continues {
            index.compact.push(entry.clone());
        }
    }
    if index.compact.len() > 1
        && index.compact[0].control == index.compact[index.compact.len() - 1].control
    {
        index.compact.pop();
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::ring::{Ring, RingConfig, RingMember, RingSet};

    use super::*;
    use crate::workload::{Workload, keys, members, zone_filter, zone_metadata};

    fn set_of(w: &Workload) -> LibatappSet {
        let mut set = LibatappSet::new();
        for i in 0..w.len() {
            set.add_node(EmuNode::new(
                w.ids[i],
                w.names[i].clone(),
                w.metadata[i].clone(),
            ));
        }
        set
    }

    #[test]
    fn entry_is_32_bytes_like_libatapp() {
        assert_eq!(std::mem::size_of::<HashEntry>(), 32);
    }

    #[test]
    fn ring_holds_80_sorted_points_per_node() {
        let w = Workload::new(50, 3);
        let mut set = set_of(&w);
        let ring = set.ring(None);
        assert_eq!(ring.len(), 50 * 80);
        assert!(ring.windows(2).all(|p| p[0].hash < p[1].hash));
        let first_node_points = ring.iter().filter(|e| e.node.id() == w.ids[0]).count();
        assert_eq!(first_node_points, 80);
    }

    #[test]
    fn point_hash_is_murmur3_of_name_with_point_seed() {
        let node = EmuNode::new(NodeId(7), "svc-a", Metadata::default());
        assert_eq!(node.point_hash(5), murmur3_x64_128(b"svc-a", 5));
        let nameless = EmuNode::new(NodeId(7), "", Metadata::default());
        assert_eq!(
            nameless.point_hash(5),
            murmur3_x64_128(&7u64.to_le_bytes(), 5)
        );
    }

    #[test]
    fn lookup_is_lower_bound_with_wrap() {
        let w = Workload::new(20, 4);
        let mut set = set_of(&w);
        let ring: Vec<((u64, u64), NodeId)> = set
            .ring(None)
            .iter()
            .map(|e| (e.hash, e.node.id()))
            .collect();
        for key in keys(2000, 9) {
            let h = murmur3_x64_128(&key.to_le_bytes(), KEY_SEED);
            let want = ring.iter().find(|(p, _)| *p >= h).unwrap_or(&ring[0]).1;
            assert_eq!(set.lookup_u64(key, None).map(|n| n.id()), Some(want));
        }
    }

    #[test]
    fn compact_ring_keeps_last_point_of_each_run() {
        let w = Workload::new(3, 5);
        let mut set = set_of(&w);
        let full: Vec<NodeId> = set.ring(None).iter().map(|e| e.node.id()).collect();
        // Lazy, as upstream: a plain lookup builds no compact ring.
        assert!(set.lookup_u64(1, None).is_some());
        assert!(set.default_index.compact.is_empty());
        let mut want: Vec<NodeId> = Vec::new();
        for (i, id) in full.iter().enumerate() {
            if full.get(i + 1) != Some(id) {
                want.push(*id);
            }
        }
        if want.len() > 1 && want[0] == want[want.len() - 1] {
            want.pop();
        }
        let compact: Vec<NodeId> = set.compact_ring(None).iter().map(|e| e.node.id()).collect();
        assert_eq!(compact, want);
        assert!(compact.windows(2).all(|p| p[0] != p[1]));
        assert_ne!(compact[0], compact[compact.len() - 1]);
    }

    #[test]
    fn change_drops_rings_and_next_lookup_rebuilds() {
        let w = Workload::new(10, 6);
        let mut set = set_of(&w);
        let a = zone_filter("a");
        assert_eq!(set.ring(Some(&a)).len(), 5 * 80);
        assert_eq!(set.ring(None).len(), 10 * 80);
        assert!(set.remove_node(w.ids[0]));
        assert!(!set.remove_node(w.ids[0]));
        assert!(set.default_index.hashing.is_empty());
        assert!(set.filter_index.is_empty());
        assert_eq!(set.ring(Some(&a)).len(), 4 * 80);
        assert_eq!(set.ring(None).len(), 9 * 80);
        assert_eq!(set.node_count(), 9);
    }

    #[test]
    fn metadata_change_drops_filter_ring_it_leaves_and_joins() {
        let w = Workload::new(10, 6);
        let mut set = set_of(&w);
        let a = zone_filter("a");
        let b = zone_filter("b");
        assert_eq!(set.ring(Some(&a)).len(), 5 * 80);
        assert_eq!(set.ring(Some(&b)).len(), 5 * 80);
        // Node 1 (zone b) moves to zone a: both filter rings are dropped.
        set.add_node(EmuNode::new(
            w.ids[1],
            w.names[1].clone(),
            zone_metadata("a"),
        ));
        assert!(set.filter_index.is_empty());
        assert_eq!(set.ring(Some(&a)).len(), 6 * 80);
        assert_eq!(set.ring(Some(&b)).len(), 4 * 80);
        assert_eq!(set.node_count(), 10);
        let sorted: Vec<NodeId> = set.sorted_nodes(Some(&a)).iter().map(|n| n.id()).collect();
        assert_eq!(
            sorted,
            vec![w.ids[0], w.ids[1], w.ids[2], w.ids[4], w.ids[6], w.ids[8]]
        );
    }

    #[test]
    fn nameless_node_is_hashed_by_id_and_rename_drops_old_name() {
        let mut set = LibatappSet::new();
        set.add_node(EmuNode::new(NodeId(9), "", Metadata::default()));
        set.add_node(EmuNode::new(NodeId(10), "old", Metadata::default()));
        set.add_node(EmuNode::new(NodeId(10), "new", Metadata::default()));
        assert_eq!(set.node_count(), 2);
        assert_eq!(set.by_name.keys().collect::<Vec<_>>(), vec!["new"]);
        let ring = set.ring(None);
        assert_eq!(ring.len(), 160);
        let want = murmur3_x64_128(&9u64.to_le_bytes(), 0);
        assert!(
            ring.iter()
                .any(|e| e.node.id() == NodeId(9) && e.hash == want)
        );
    }

    fn compat_ring(w: &Workload) -> Ring {
        let mut ring = Ring::new(RingConfig::libatapp_main());
        ring.build(members(w)).expect("workload ids are non-zero");
        ring
    }

    fn assert_same_owners(set: &mut LibatappSet, ring: &Ring, seed: u64) {
        for key in keys(20_000, seed) {
            let want = set.lookup_u64(key, None).map(|n| n.id());
            assert_eq!(ring.lookup_u64(key), want, "key {key:#x}");
        }
        for i in 0..2_000 {
            let key = format!("user-{seed}-{i}");
            let want = set.lookup(key.as_bytes(), None).map(|n| n.id());
            assert_eq!(ring.lookup(key.as_bytes()), want, "key {key}");
        }
    }

    #[test]
    fn compat_ring_finds_the_emulated_owner_of_every_key() {
        for n in [1, 2, 10, 300] {
            let w = Workload::new(n, 21);
            assert_same_owners(&mut set_of(&w), &compat_ring(&w), 1);
        }
    }

    #[test]
    fn compat_ring_points_and_compact_ring_are_the_emulated_ones() {
        let w = Workload::new(64, 22);
        let mut set = set_of(&w);
        let ring = compat_ring(&w);
        let want: Vec<(u64, NodeId)> = set
            .ring(None)
            .iter()
            .map(|e| (e.hash.0, e.node.id()))
            .collect();
        assert_eq!(ring.points().collect::<Vec<_>>(), want);
        let want: Vec<(u64, NodeId)> = set
            .compact_ring(None)
            .iter()
            .map(|e| (e.hash.0, e.node.id()))
            .collect();
        assert_eq!(ring.view().compact_points().collect::<Vec<_>>(), want);
    }

    #[test]
    fn compat_ring_agrees_after_incremental_changes() {
        let w = Workload::new(120, 23);
        let mut set = set_of(&w);
        let mut ring = compat_ring(&w);
        for i in [0, 7, 50, 119] {
            assert!(ring.remove(w.ids[i]));
            assert!(set.remove_node(w.ids[i]));
        }
        assert_same_owners(&mut set, &ring, 2);
        for i in [7, 119] {
            ring.insert(w.member(i)).expect("workload ids are non-zero");
            set.add_node(EmuNode::new(
                w.ids[i],
                w.names[i].clone(),
                w.metadata[i].clone(),
            ));
        }
        assert_eq!(ring.node_count(), 118);
        assert_same_owners(&mut set, &ring, 3);
    }

    #[test]
    fn compat_ring_agrees_on_nameless_nodes() {
        let ids: Vec<NodeId> = (1..=40).map(|i| NodeId(0x0100_0000 + i * 3)).collect();
        let mut ring = Ring::new(RingConfig::libatapp_main());
        ring.build(ids.iter().map(|&id| RingMember::new(id, "")))
            .expect("ids are non-zero");
        let mut set = LibatappSet::new();
        for &id in &ids {
            set.add_node(EmuNode::new(id, "", Metadata::default()));
        }
        assert_same_owners(&mut set, &ring, 4);
    }

    #[test]
    fn compat_filter_ring_agrees_with_emulated_filter_ring() {
        let w = Workload::new(200, 24);
        let mut set = set_of(&w);
        let mut rings = RingSet::new(RingConfig::libatapp_main());
        let a = zone_filter("a");
        let fid = rings.add_filter(a.clone());
        for i in 0..w.len() {
            rings
                .insert(w.member(i), &w.metadata[i])
                .expect("workload ids are non-zero");
        }
        rings.update_metadata(w.ids[1], &zone_metadata("a"));
        set.add_node(EmuNode::new(
            w.ids[1],
            w.names[1].clone(),
            zone_metadata("a"),
        ));
        let view = rings.ring(Some(fid));
        assert_eq!(view.node_count(), 101);
        for key in keys(20_000, 5) {
            let want = set.lookup_u64(key, Some(&a)).map(|n| n.id());
            assert_eq!(view.lookup_u64(key), want, "key {key:#x}");
        }
    }

    #[test]
    fn empty_set_finds_nothing() {
        let mut set = LibatappSet::new();
        assert!(set.lookup(b"k", None).is_none());
        assert!(set.lookup(b"k", Some(&zone_filter("a"))).is_none());
    }
}
