//! [`DiscoverySet`]: the known nodes, indexed by id and by name, updated by revision-gated
//! registry events.
//!
//! Registry events reach the set from independent streams (etcd's `by_id` and `by_name`
//! watchers deliver every change twice, a re-list after compaction replays everything), so the
//! set decides by *revision* rather than by arrival order. Every call returns an [`Applied`]
//! saying exactly what changed, which is what the owner uses to update its hash rings and
//! round-robin lists incrementally.
//!
//! # Rules
//!
//! * **Identity.** A node is its id; a node published without an id (id 0) is its name. A
//!   record with neither is [`Applied::Rejected`].
//! * **A name maps to one node.** When a put carries a name another node holds, the other node
//!   is *displaced* (removed from the set and handed back in the [`Applied`]), provided the put
//!   is not older than it.
//! * **Staleness.** A put is [`Applied::Stale`] when the node with its id (or its name-only
//!   record), the node holding its name, or a tombstone for its key has a strictly *greater*
//!   revision. Equal revisions are applied; equal revision *and* identical content is
//!   [`Applied::Duplicate`] — that is how the `by_id` and `by_name` copies of one etcd change
//!   apply once.
//! * **Deletes** name a registry key, i.e. an id and/or a name (`<name>-<id>`): they remove the
//!   record with that id (or the name-only record with that name) only if the name, when
//!   given, is the record's current name — a delete of an old key of a renamed node does not
//!   remove the node. A delete older than the record is stale.
//! * **Tombstones.** Every applied delete (even of a key we do not hold) leaves a tombstone
//!   `(id, name) → revision`, so a late put older than the delete is stale instead of
//!   resurrecting the node, and the second copy of the delete is a `Duplicate`. A put of the
//!   same key with a newer revision clears it. Tombstones are dropped by
//!   [`DiscoverySet::compact`] (call it with a revision every stream has delivered past) and,
//!   as a bound, the oldest are dropped when more than the limit (default
//!   [`DEFAULT_TOMBSTONE_LIMIT`]) accumulate.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};

use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable, hash_table::Entry};

use super::{DecodeError, DiscoveryInfo, Filter};
use crate::{
    ids::NodeId,
    ring::{FilterId, RingConfig, RingMember, RingSet},
};

/// Tombstones kept before the oldest are dropped, when [`DiscoverySet::compact`] is not called
/// often enough.
pub const DEFAULT_TOMBSTONE_LIMIT: usize = 4096;

/// What one [`DiscoverySet`] operation did. The owner of the rings reacts to it: `Added` →
/// insert the node, `Removed` and every `displaced` node → remove, `Updated` with
/// `name_changed` or `metadata_changed` → update its points / filter membership,
/// `pod_index_changed` or `name_changed` → re-sort round robin.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Applied {
    /// A node the set did not hold; read it with `get_by_id(id)` (or `get_by_name(name)` when
    /// `id` is 0).
    Added {
        /// Id of the new node (0 for a name-only node).
        id: NodeId,
        /// Its name.
        name: String,
        /// Another node that held this name and was removed to make room.
        displaced: Option<Arc<DiscoveryInfo>>,
    },
    /// The node's record was replaced.
    Updated {
        /// Id of the node (0 for a name-only node).
        id: NodeId,
        /// Its (new) name.
        name: String,
        /// The record that was replaced.
        previous: Arc<DiscoveryInfo>,
        /// The name differs from `previous.name` (ring points move).
        name_changed: bool,
        /// The metadata differs (filter membership may change).
        metadata_changed: bool,
        /// `runtime.stateful_pod_index` differs (round-robin order may change).
        pod_index_changed: bool,
        /// Any published field differs; `false` means only the revision advanced.
        content_changed: bool,
        /// Another node that held the new name and was removed to make room.
        displaced: Option<Arc<DiscoveryInfo>>,
    },
    /// The node was deleted; this is its last record.
    Removed(Arc<DiscoveryInfo>),
    /// The same change was already applied (same revision and content, or the same delete).
    Duplicate,
    /// Older than what the set holds for this node, its name or its key; nothing changed.
    Stale {
        /// The newer revision that wins.
        held_revision: u64,
    },
    /// A delete of a key the set does not hold; its tombstone was recorded.
    Unknown,
    /// The record or delete names neither an id nor a name; nothing changed.
    Rejected,
}

impl Applied {
    /// Whether the set's published content changed (something for rings and caches to do).
    /// A revision-only `Updated` is not a change.
    #[must_use]
    pub fn is_change(&self) -> bool {
        match self {
            Applied::Added { .. } | Applied::Removed(_) => true,
            Applied::Updated {
                content_changed,
                displaced,
                ..
            } => *content_changed || displaced.is_some(),
            _ => false,
        }
    }
}

/// Deleted keys and the revision of their delete; see the module docs.
#[derive(Clone, Debug)]
struct Tombstones {
    by_key: BTreeMap<NodeId, BTreeMap<String, u64>>,
    len: usize,
    limit: usize,
}

impl Tombstones {
    fn exact(&self, id: NodeId, name: &str) -> Option<u64> {
        self.by_key
            .get(&id)
            .and_then(|names| names.get(name))
            .copied()
    }

    /// The newest delete that a put of `(id, name)` must not be older than: its own key, and
    /// for an id, the id-only key (a legacy delete that named no name).
    fn blocking(&self, id: NodeId, name: &str) -> Option<u64> {
        let own = self.exact(id, name);
        let id_only = if id.is_valid() && !name.is_empty() {
            self.exact(id, "")
        } else {
            None
        };
        own.max(id_only)
    }

    fn raise(&mut self, id: NodeId, name: &str, revision: u64) {
        let names = self.by_key.entry(id).or_default();
        match names.get_mut(name) {
            Some(held) => *held = (*held).max(revision),
            None => {
                names.insert(String::from(name), revision);
                self.len += 1;
                if self.len > self.limit {
                    self.drop_oldest();
                }
            }
        }
    }

    /// Forgets the tombstones a live put of `(id, name)` supersedes.
    fn clear(&mut self, id: NodeId, name: &str) {
        if let Some(names) = self.by_key.get_mut(&id) {
            let before = names.len();
            names.remove(name);
            if id.is_valid() {
                names.remove("");
            }
            self.len -= before - names.len();
            if names.is_empty() {
                self.by_key.remove(&id);
            }
        }
    }

    fn compact(&mut self, revision: u64) {
        let mut removed = 0;
        self.by_key.retain(|_, names| {
            let before = names.len();
            names.retain(|_, held| *held > revision);
            removed += before - names.len();
            !names.is_empty()
        });
        self.len -= removed;
    }

    /// Drops the oldest until three quarters of the limit remain, so the sort is amortised
    /// over a quarter-limit of deletes.
    fn drop_oldest(&mut self) {
        let keep = self.limit - self.limit / 4;
        let mut revisions: Vec<u64> = self
            .by_key
            .values()
            .flat_map(|n| n.values().copied())
            .collect();
        revisions.sort_unstable();
        let drop = self.len - keep;
        // Drop everything at or below the cut; ties at the cut go too (deterministic, and
        // never more than the entries sharing one revision).
        let cut = revisions[drop - 1];
        self.compact(cut);
    }
}

/// Name → the record holding it, without a copy of the name: a hash table of the held
/// records (the same `Arc`s as `by_id`/`name_only`), hashed by their name and compared by it.
/// Only looked up, never iterated for output, so its hash order does not matter.
#[derive(Clone, Debug, Default)]
struct NameIndex {
    table: HashTable<Arc<DiscoveryInfo>>,
    hasher: DefaultHashBuilder,
}

impl NameIndex {
    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// The record holding `name`.
    fn get(&self, name: &str) -> Option<&Arc<DiscoveryInfo>> {
        self.table.find(self.hash(name), |held| held.name == name)
    }

    /// The id of the node holding `name` ([`NodeId::NONE`] for a name-only node).
    fn holder(&self, name: &str) -> Option<NodeId> {
        self.get(name).map(|held| held.id)
    }

    /// Makes `record` the holder of its name (replacing the previous holder's entry).
    fn set(&mut self, record: &Arc<DiscoveryInfo>) {
        let hash = self.hash(&record.name);
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |held| held.name == record.name,
            |held| hasher.hash_one(held.name.as_str()),
        ) {
            Entry::Occupied(mut entry) => *entry.get_mut() = Arc::clone(record),
            Entry::Vacant(entry) => {
                entry.insert(Arc::clone(record));
            }
        }
    }

    /// Forgets `name` if the node with `id` holds it.
    fn remove_if_held_by(&mut self, name: &str, id: NodeId) {
        if let Ok(entry) = self
            .table
            .find_entry(self.hash(name), |held| held.name == name)
            && entry.get().id == id
        {
            entry.remove();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.len()
    }
}

/// The known nodes; see the module docs for the gating rules.
#[derive(Clone, Debug)]
pub struct DiscoverySet {
    /// Nodes with a valid id.
    by_id: BTreeMap<NodeId, Arc<DiscoveryInfo>>,
    /// Nodes published without an id (id 0), by name.
    name_only: BTreeMap<String, Arc<DiscoveryInfo>>,
    /// Name → the record holding it (one of `by_id` or `name_only`), for named nodes.
    by_name: NameIndex,
    tombstones: Tombstones,
    /// The consistent-hash rings over the nodes with a valid id, kept in step with every
    /// applied change (see [`DiscoverySet::rings`]).
    rings: RingSet,
    /// Changes the rings refused (see [`DiscoverySet::ring_rejections`]).
    ring_rejections: u64,
}

impl Default for DiscoverySet {
    fn default() -> DiscoverySet {
        DiscoverySet::new()
    }
}

impl DiscoverySet {
    /// An empty set keeping up to [`DEFAULT_TOMBSTONE_LIMIT`] tombstones.
    #[must_use]
    pub fn new() -> DiscoverySet {
        DiscoverySet::with_tombstone_limit(DEFAULT_TOMBSTONE_LIMIT)
    }

    /// An empty set keeping up to `limit` tombstones (at least 1).
    #[must_use]
    pub fn with_tombstone_limit(limit: usize) -> DiscoverySet {
        DiscoverySet::with_config(limit, RingConfig::default())
    }

    /// An empty set keeping up to [`DEFAULT_TOMBSTONE_LIMIT`] tombstones, whose rings use
    /// `ring` (a node's set: its config names the ring).
    #[must_use]
    pub fn with_ring(ring: RingConfig) -> DiscoverySet {
        DiscoverySet::with_config(DEFAULT_TOMBSTONE_LIMIT, ring)
    }

    /// An empty set keeping up to `limit` tombstones (at least 1), whose rings use `ring`
    /// (points per node, hash mode).
    #[must_use]
    pub fn with_config(limit: usize, ring: RingConfig) -> DiscoverySet {
        DiscoverySet {
            rings: RingSet::new(ring),
            ring_rejections: 0,
            by_id: BTreeMap::new(),
            name_only: BTreeMap::new(),
            by_name: NameIndex::default(),
            tombstones: Tombstones {
                by_key: BTreeMap::new(),
                len: 0,
                limit: limit.max(1),
            },
        }
    }

    /// Number of nodes held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_id.len() + self.name_only.len()
    }

    /// Whether no node is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of tombstones held (see [`compact`](DiscoverySet::compact)).
    #[must_use]
    pub fn tombstone_count(&self) -> usize {
        self.tombstones.len
    }

    /// The node with this id; `None` for [`NodeId::NONE`].
    #[must_use]
    pub fn get_by_id(&self, id: NodeId) -> Option<&DiscoveryInfo> {
        self.by_id.get(&id).map(|b| &**b)
    }

    /// The node holding this name.
    #[must_use]
    pub fn get_by_name(&self, name: &str) -> Option<&DiscoveryInfo> {
        self.by_name.get(name).map(|held| &**held)
    }

    /// Every node, ordered by (id, name): name-only nodes (id 0) first by name, then by id.
    pub fn iter(&self) -> impl Iterator<Item = &DiscoveryInfo> + '_ {
        self.name_only
            .values()
            .chain(self.by_id.values())
            .map(|b| &**b)
    }

    /// The hash rings over the held nodes: the default ring and one per registered filter.
    ///
    /// Every applied put or delete updates them incrementally before it returns: an added or
    /// renamed node's points are merged in, a removed or displaced node's filtered out, and a
    /// metadata change touches only the filter rings the node matches before or after it.
    /// Stale, duplicate and revision-only changes touch nothing; lookups never rebuild.
    /// Name-only nodes (id 0) are not ring members: a ring lookup answers with a node id.
    #[must_use]
    pub fn rings(&self) -> &RingSet {
        &self.rings
    }

    /// The rings, their points brought up to date first ([`RingSet::settle`]): how an owner
    /// that turned burst deferral on reads them.
    pub fn settled_rings(&mut self) -> &RingSet {
        self.rings.settle();
        &self.rings
    }

    /// The rings for a read that needs their points (`points`: then settled first, as
    /// [`settled_rings`](Self::settled_rings)) or only their members, round-robin orders and
    /// metadata (exact without a settle, so a burst of changes read only that way stays
    /// deferred).
    pub fn rings_for(&mut self, points: bool) -> &RingSet {
        if points {
            self.settled_rings()
        } else {
            &self.rings
        }
    }

    /// Turns the rings' burst deferral on or off ([`RingSet::set_burst_deferral`]).
    pub fn set_ring_burst_deferral(&mut self, on: bool) {
        self.rings.set_burst_deferral(on);
    }

    /// Registers a metadata filter and returns its ring handle (a filter pass over the
    /// default ring, no hashing; registering the same filter twice returns the same handle).
    pub fn add_filter(&mut self, filter: Filter) -> FilterId {
        self.rings.add_filter(filter)
    }

    /// The ring handle of `filter`: its registered one, else [`add_filter`](Self::add_filter)
    /// registers a copy.
    pub fn filter_handle(&mut self, filter: &Filter) -> FilterId {
        match self.rings.filter_id(filter) {
            Some(id) => id,
            None => self.add_filter(filter.clone()),
        }
    }

    /// How many node changes the rings refused (a node over the ring's capacity). Such a node
    /// stays in the set, reachable by id and name, but takes no ring share; each refusal is
    /// counted here so it is never silent.
    #[must_use]
    pub fn ring_rejections(&self) -> u64 {
        self.ring_rejections
    }

    /// Applies a published record (a registry PUT); `info.revision` is its registry revision.
    /// See the module docs for when it is stale, a duplicate, or displaces another node.
    /// The rings follow the change before this returns.
    /// The record is kept as given: a record shared behind an [`Arc`] (the registry client's
    /// view holds the same one) is not copied.
    pub fn put(&mut self, info: impl Into<Arc<DiscoveryInfo>>) -> Applied {
        let applied = self.apply_put(info.into());
        self.follow_in_rings(&applied);
        applied
    }

    /// Brings the rings in step with one applied change.
    fn follow_in_rings(&mut self, applied: &Applied) {
        let (id, name, displaced, membership_changed) = match applied {
            Applied::Added {
                id,
                name,
                displaced,
            } => (*id, name.as_str(), displaced.as_deref(), true),
            Applied::Updated {
                id,
                name,
                displaced,
                name_changed,
                metadata_changed,
                pod_index_changed,
                ..
            } => (
                *id,
                name.as_str(),
                displaced.as_deref(),
                *name_changed || *metadata_changed || *pod_index_changed,
            ),
            Applied::Removed(record) => {
                if record.id.is_valid() {
                    self.rings.remove(record.id);
                }
                return;
            }
            _ => return,
        };
        if let Some(gone) = displaced.filter(|d| d.id.is_valid()) {
            self.rings.remove(gone.id);
        }
        if !membership_changed || !id.is_valid() {
            return;
        }
        let info = self
            .by_id
            .get(&id)
            .expect("an applied put of a valid id is held by id");
        let member = RingMember::new(id, name).with_pod_index(i64::from(info.stateful_pod_index()));
        if self.rings.insert(member, &info.metadata).is_err() {
            self.ring_rejections += 1;
        }
    }

    fn apply_put(&mut self, info: Arc<DiscoveryInfo>) -> Applied {
        if !info.has_identity() {
            return Applied::Rejected;
        }
        let revision = info.revision;
        let current = self.record(info.id, &info.name);
        // Another node holding this name (an id node for a name-only put, or vice versa, or
        // a different id).
        let rival = match self.by_name.holder(&info.name) {
            Some(holder) if holder != info.id => Some(holder),
            _ => None,
        };
        let rival_revision = rival.map(|holder| {
            self.record(holder, &info.name)
                .expect("by_name only points at held records")
                .revision
        });
        let newest = self
            .tombstones
            .blocking(info.id, &info.name)
            .max(current.map(|c| c.revision))
            .max(rival_revision);
        if let Some(held_revision) = newest.filter(|&held| held > revision) {
            return Applied::Stale { held_revision };
        }
        if current.is_some_and(|c| c.revision == revision && c.same_content(&info)) {
            return Applied::Duplicate;
        }

        let displaced = rival.and_then(|holder| self.detach(holder, &info.name));
        self.tombstones.clear(info.id, &info.name);
        let (id, name) = (info.id, info.name.clone());
        let held = Arc::clone(&info);
        let previous = if id.is_valid() {
            self.by_id.insert(id, info)
        } else {
            self.name_only.insert(name.clone(), info)
        };
        match previous {
            None => {
                if !name.is_empty() {
                    self.by_name.set(&held);
                }
                Applied::Added {
                    id,
                    name,
                    displaced,
                }
            }
            Some(previous) => {
                let name_changed = previous.name != name;
                if name_changed {
                    self.by_name.remove_if_held_by(&previous.name, id);
                }
                // The index holds the record itself: point the name at the new one.
                if !name.is_empty() {
                    self.by_name.set(&held);
                }
                let new = self.record(id, &name).expect("just inserted");
                Applied::Updated {
                    id,
                    metadata_changed: previous.metadata != new.metadata,
                    pod_index_changed: previous.stateful_pod_index() != new.stateful_pod_index(),
                    content_changed: !previous.same_content(new),
                    name,
                    previous,
                    name_changed,
                    displaced,
                }
            }
        }
    }

    /// Decodes a record and applies it with `revision`. A document that does not decode
    /// leaves the set unchanged and returns the error.
    pub fn put_json(&mut self, bytes: &[u8], revision: u64) -> Result<Applied, DecodeError> {
        DiscoveryInfo::from_json_at(bytes, revision).map(|info| self.put(info))
    }

    /// Applies a registry DELETE of the key naming `id` and `name` (either may be empty: id 0
    /// or `""`), at `revision`. See the module docs for the matching and tombstone rules.
    /// The rings follow the change before this returns.
    pub fn remove(&mut self, id: NodeId, name: &str, revision: u64) -> Applied {
        let applied = self.apply_remove(id, name, revision);
        self.follow_in_rings(&applied);
        applied
    }

    fn apply_remove(&mut self, id: NodeId, name: &str, revision: u64) -> Applied {
        if !id.is_valid() && name.is_empty() {
            return Applied::Rejected;
        }
        let held = self
            .record(id, name)
            .filter(|r| name.is_empty() || r.name == name)
            .map(|r| r.revision);
        match held {
            Some(held_revision) if held_revision > revision => Applied::Stale { held_revision },
            Some(_) => {
                let record = self.detach(id, name).expect("the record was just found");
                self.tombstones.raise(id, name, revision);
                Applied::Removed(record)
            }
            None => match self.tombstones.exact(id, name) {
                Some(t) if t == revision => Applied::Duplicate,
                Some(t) if t > revision => Applied::Stale { held_revision: t },
                _ => {
                    self.tombstones.raise(id, name, revision);
                    Applied::Unknown
                }
            },
        }
    }

    /// Deletes the node with this id whatever its name (a legacy id-only key).
    pub fn remove_by_id(&mut self, id: NodeId, revision: u64) -> Applied {
        self.remove(id, "", revision)
    }

    /// Deletes the node currently holding `name`, whatever its id. For local use: a name
    /// nobody holds is [`Applied::Unknown`] without a tombstone (registry deletes should use
    /// [`remove`](DiscoverySet::remove) with both parts of the key).
    pub fn remove_by_name(&mut self, name: &str, revision: u64) -> Applied {
        match self.by_name.holder(name) {
            Some(holder) => self.remove(holder, name, revision),
            None => Applied::Unknown,
        }
    }

    /// Forgets tombstones of deletes at or below `revision`. Call it once every registry
    /// stream has delivered all events up to `revision` (no older put can arrive any more).
    pub fn compact(&mut self, revision: u64) {
        self.tombstones.compact(revision);
    }

    /// The record with this id, or the name-only record with this name when `id` is 0.
    fn record(&self, id: NodeId, name: &str) -> Option<&DiscoveryInfo> {
        if id.is_valid() {
            self.by_id.get(&id)
        } else {
            self.name_only.get(name)
        }
        .map(|b| &**b)
    }

    /// Takes a record out of every index (no tombstone).
    fn detach(&mut self, id: NodeId, name: &str) -> Option<Arc<DiscoveryInfo>> {
        let record = if id.is_valid() {
            self.by_id.remove(&id)?
        } else {
            self.name_only.remove(name)?
        };
        self.by_name.remove_if_held_by(&record.name, id);
        Some(record)
    }

    /// Panics unless the indexes agree: every by_name entry names a held record with that
    /// name, every named record is in by_name, tombstone count matches.
    #[cfg(test)]
    pub(crate) fn assert_consistent(&self) {
        for indexed in &self.by_name.table {
            let record = self
                .record(indexed.id, &indexed.name)
                .expect("by_name entry points at a held record");
            assert!(
                core::ptr::eq(record, &**indexed),
                "by_name holds the held record itself"
            );
            assert!(!indexed.name.is_empty());
            assert_eq!(
                self.by_name.get(&indexed.name).map(|r| r.id),
                Some(indexed.id),
                "findable by its name"
            );
        }
        for (id, record) in &self.by_id {
            assert_eq!(record.id, *id);
            if !record.name.is_empty() {
                assert_eq!(self.by_name.holder(&record.name), Some(*id));
            }
        }
        for (name, record) in &self.name_only {
            assert_eq!(&record.name, name);
            assert!(!record.id.is_valid());
            assert_eq!(self.by_name.holder(name), Some(NodeId::NONE));
        }
        let named = self.iter().filter(|r| !r.name.is_empty()).count();
        assert_eq!(self.by_name.len(), named);
        let tombstones: usize = self.tombstones.by_key.values().map(BTreeMap::len).sum();
        assert_eq!(tombstones, self.tombstones.len);
        self.assert_rings_follow();
    }

    /// The incrementally maintained rings equal rings built from scratch for the held nodes,
    /// point for point, for the default ring and every registered filter.
    #[cfg(test)]
    pub(crate) fn assert_rings_follow(&self) {
        assert_eq!(self.rings.len(), self.by_id.len());
        let mut fresh = RingSet::new(self.rings.config());
        let members = self.by_id.values().map(|info| {
            let member = RingMember::new(info.id, &info.name)
                .with_pod_index(i64::from(info.stateful_pod_index()));
            (member, &*info.metadata)
        });
        fresh.rebuild(members).expect("held nodes fit in a ring");
        for (id, info) in &self.by_id {
            assert_eq!(self.rings.name(*id), Some(info.name.as_str()));
            assert_eq!(
                self.rings.pod_index(*id),
                Some(i64::from(info.stateful_pod_index()))
            );
            assert_eq!(self.rings.metadata(*id), Some(&*info.metadata));
        }
        let mut filters = alloc::vec![None];
        for id in self.rings.filter_ids() {
            let filter = self.rings.filter(id).expect("registered").clone();
            let fresh_id = fresh.add_filter(filter);
            filters.push(Some((id, fresh_id)));
        }
        for pair in filters {
            let (ours, theirs) = match pair {
                None => (self.rings.ring(None), fresh.ring(None)),
                Some((a, b)) => (self.rings.ring(Some(a)), fresh.ring(Some(b))),
            };
            assert!(
                ours.points().eq(theirs.points()),
                "incremental ring differs from a fresh build"
            );
        }
    }
}
