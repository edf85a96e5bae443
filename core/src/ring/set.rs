//! The rings of a discovery set: the default ring plus one ring per registered metadata filter,
//! kept up to date incrementally and eagerly (a lookup never rebuilds) — unless the owner
//! turns burst deferral on ([`RingSet::set_burst_deferral`]): then a joining node's points
//! are merged only when the points are next read (a node that never picks by hash never
//! merges any), and a burst of more than 32 (`DEFER_AFTER`) changes with no read of the
//! points among them is rebuilt once, at the next such read (member, order and metadata
//! reads are exact throughout).
//!
//! Every ring shares the default ring's member slots, so a filter ring is a subsequence of the
//! default ring: it is built by one filter pass over the default ring and updated by merging
//! (or removing) the changed node's points, which are computed once per change and shared by
//! every ring that needs them. A filter ring is touched only when the changed node matches the
//! filter before or after the change; [`RingSet::ring_updates_of`] counts exactly that.
//!
//! The set also keeps each ring's round-robin order (pod index, then id) for
//! [`crate::select`]. It has its own small member table (name, pod index, metadata), so it
//! needs nothing but membership changes: topology never reaches it.

use alloc::vec::Vec;

use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::{
    Ring, RingConfig, RingError, RingMember, RingView, check_capacity,
    interned::MetadataTable,
    members::{Members, room_for_one},
    pods::PodIndexes,
    points::{Points, node_keys, node_point_count},
    search::bit,
};
use crate::{
    discovery::{Filter, Metadata},
    ids::NodeId,
};

/// Handle of a filter registered with [`RingSet::add_filter`]. Only meaningful for the set
/// that returned it; an unknown handle selects an empty ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FilterId(u32);

impl FilterId {
    /// The registration index of the filter (0 for the first one registered).
    #[must_use]
    pub const fn index(self) -> u32 {
        self.0
    }
}

/// A filter's own ring.
#[derive(Clone, Debug, Default)]
struct SubRing {
    points: Points,
    /// Membership bitset by slot.
    bits: Vec<u64>,
    /// Round-robin order: slots sorted by (pod index, id).
    rr: Vec<u32>,
    updates: u64,
}

#[derive(Clone, Debug)]
struct FilterEntry {
    filter: Filter,
    /// `None` for a wildcard filter, which is the default ring under another name.
    ring: Option<SubRing>,
}

/// The default ring plus per-filter rings of one discovery set.
///
/// Feed it membership changes ([`insert`](RingSet::insert),
/// [`update_metadata`](RingSet::update_metadata), [`remove`](RingSet::remove), or
/// [`rebuild`](RingSet::rebuild) for a snapshot); query a ring with
/// [`ring`](RingSet::ring); pick targets with [`crate::select::Selector`].
#[derive(Clone, Debug)]
pub struct RingSet {
    /// The default ring; its member table is shared by every filter ring.
    ring: Ring,
    metadata: MetadataTable,
    pods: PodIndexes,
    /// Slot of every live member with a non-empty name, found by hashing the name and
    /// comparing with the member table's copy (names are not stored twice; members sharing a
    /// name each have an entry).
    by_name: HashTable<u32>,
    /// The by-name table's hasher, seeded per set as a `HashMap`'s is (names come from other
    /// nodes' records: a fixed seed would let one publisher pick names that collide).
    name_hasher: DefaultHashBuilder,
    /// Default round-robin order.
    rr: Vec<u32>,
    filters: Vec<FilterEntry>,
    generation: u64,
    /// Old positions of a renamed node (reused).
    old_keys: Vec<u64>,
    empty: Points,
    /// Burst deferral is on ([`RingSet::set_burst_deferral`]).
    defer: bool,
    /// Unread changes past which points go stale (`DEFER_AFTER`; tests lower it).
    defer_after: u32,
    /// Membership changes since the rings were last read (or settled).
    unread: u32,
    /// Burst deferral, not stale: members whose points no ring holds yet (joined since the
    /// last settle, at most `defer_after`), merged at the next settle.
    pending: Vec<u32>,
    /// Points of the rings were not updated for the changes of a burst: they are rebuilt
    /// ([`RingSet::settle`]) before anything reads them.
    stale: bool,
}

/// With burst deferral on, a burst of more than this many membership changes with no ring
/// read among them stops updating the rings' points; the next read rebuilds them once.
/// An incremental change moves about half a ring, a full build costs a few dozen such moves,
/// so a longer burst is cheaper rebuilt than merged change by change.
pub(crate) const DEFER_AFTER: u32 = 32;

/// A full build of a ring of `n` members costs about as much as `n / 8` single-member
/// merges (measured on the default config: 3 at 20 members, 13 at 100, 48 at 300), so a
/// settle with more pending members than that rebuilds instead of merging them one by one.
const MEMBERS_PER_MERGE_OF_A_BUILD: usize = 8;

/// Round-robin order key of a slot.
fn rr_key(pods: &PodIndexes, members: &Members, slot: u32) -> (i64, NodeId) {
    (pods.get(slot), members.id(slot))
}

fn rr_insert(list: &mut Vec<u32>, pods: &PodIndexes, members: &Members, slot: u32) {
    let k = rr_key(pods, members, slot);
    let i = list.partition_point(|&s| rr_key(pods, members, s) < k);
    room_for_one(list);
    list.insert(i, slot);
}

fn rr_remove(list: &mut Vec<u32>, pods: &PodIndexes, members: &Members, slot: u32) {
    let k = rr_key(pods, members, slot);
    let i = list.partition_point(|&s| rr_key(pods, members, s) < k);
    if list.get(i) == Some(&slot) {
        list.remove(i);
    }
}

fn set_bit(bits: &mut Vec<u64>, slot: u32, on: bool) {
    let w = slot as usize / 64;
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    if on {
        bits[w] |= 1 << (slot % 64);
    } else {
        bits[w] &= !(1 << (slot % 64));
    }
}

impl RingSet {
    /// An empty set with no filters.
    #[must_use]
    pub fn new(config: RingConfig) -> RingSet {
        RingSet {
            ring: Ring::new(config),
            metadata: MetadataTable::default(),
            pods: PodIndexes::default(),
            by_name: HashTable::new(),
            name_hasher: DefaultHashBuilder::default(),
            rr: Vec::new(),
            filters: Vec::new(),
            generation: 0,
            old_keys: Vec::new(),
            empty: Points::default(),
            defer: false,
            defer_after: DEFER_AFTER,
            unread: 0,
            pending: Vec::new(),
            stale: false,
        }
    }

    /// Turns burst deferral on or off (off by default). On, a joining member's points are
    /// merged at the next [`settle`](Self::settle), not at once, and a burst of more than
    /// 32 (`DEFER_AFTER`) membership changes with no settle among them stops merging or
    /// removing any points: the settle rebuilds the rings once. A settle must run before the
    /// rings' points are read ([`ring`](Self::ring) panics on unsettled points). The member
    /// table, round-robin orders, filter memberships and update counters stay exact
    /// throughout. A discovery set's owner turns it on when every read of it passes through
    /// a settle (the core's `Node` does: a registry burst of 1,000 joins costs one ring build
    /// at the next pick instead of 1,000 merges, or none if nothing picks by hash).
    /// Turning it off settles.
    pub fn set_burst_deferral(&mut self, on: bool) {
        self.defer = on;
        if !on {
            self.settle();
        }
    }

    /// Burst deferral past `after` unread changes instead of `DEFER_AFTER` (tests).
    #[cfg(test)]
    pub(crate) fn defer_after(&mut self, after: u32) {
        self.defer = true;
        self.defer_after = after;
    }

    /// Whether the rings' points are up to date (always, unless burst deferral left some
    /// unmerged or stale: then [`settle`](Self::settle) before reading them).
    #[must_use]
    pub fn is_settled(&self) -> bool {
        !self.stale && self.pending.is_empty()
    }

    /// Brings the points up to date — merges the members whose points are pending, or, after
    /// a long burst or with more pending members than a build costs merges, rebuilds the
    /// default ring and makes one filter pass per filter ring — and starts a new burst
    /// count: the rings are being read.
    pub fn settle(&mut self) {
        self.unread = 0;
        if !self.stale && self.pending.len() * MEMBERS_PER_MERGE_OF_A_BUILD <= self.len() {
            let mut pending = core::mem::take(&mut self.pending);
            for &slot in &pending {
                self.merge_points(slot);
            }
            pending.clear();
            self.pending = pending;
            return;
        }
        self.stale = false;
        self.pending.clear();
        let ring = &mut self.ring;
        let members = &ring.members;
        ring.slots.clear();
        ring.slots.extend(
            (0..members.slot_capacity())
                .map(|s| u32::try_from(s).expect("slot count fits u32"))
                .filter(|&s| members.id(s).is_valid()),
        );
        ring.points.build(&ring.config, &ring.members, &ring.slots);
        for sub in self.filters.iter_mut().filter_map(|e| e.ring.as_mut()) {
            let count = sub.rr.len();
            let bits = &sub.bits;
            sub.points
                .filter_from(&ring.points, count, |s| bit(bits, s));
        }
    }

    /// Counts a membership change; whether the points are stale, left for
    /// [`settle`](Self::settle) to rebuild (burst deferral on and the burst long enough).
    fn defer_points(&mut self) -> bool {
        if !self.defer {
            return false;
        }
        self.unread = self.unread.saturating_add(1);
        if self.unread > self.defer_after && !self.stale {
            self.stale = true;
            // The rebuild takes every member: nothing is left to merge one by one.
            self.pending.clear();
        }
        self.stale
    }

    /// Takes `slot` off the pending list; whether it was there (its points are in no ring).
    fn unpend(&mut self, slot: u32) -> bool {
        let Some(at) = self.pending.iter().position(|&s| s == slot) else {
            return false;
        };
        self.pending.swap_remove(at);
        true
    }

    /// Merges the points of `slot` into the default ring and every filter ring it belongs to
    /// (its filter bits already set): one point computation for all of them.
    fn merge_points(&mut self, slot: u32) {
        let ring = &mut self.ring;
        node_keys(&ring.config, &ring.members, slot, &mut ring.keys);
        ring.points
            .insert_node(&ring.config, &ring.members, slot, &ring.keys);
        for sub in self.filters.iter_mut().filter_map(|e| e.ring.as_mut()) {
            if bit(&sub.bits, slot) {
                sub.points
                    .insert_node(&ring.config, &ring.members, slot, &ring.keys);
            }
        }
    }

    /// The rings' configuration.
    #[must_use]
    pub fn config(&self) -> RingConfig {
        self.ring.config
    }

    /// Number of members.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ring.members.len()
    }

    /// Whether the set has no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `id` is a member.
    #[must_use]
    pub fn contains(&self, id: NodeId) -> bool {
        self.ring.members.slot(id).is_some()
    }

    /// A member's name (empty for an id-only node).
    #[must_use]
    pub fn name(&self, id: NodeId) -> Option<&str> {
        self.ring
            .members
            .slot(id)
            .map(|s| self.ring.members.name(s))
    }

    /// A member's pod index.
    #[must_use]
    pub fn pod_index(&self, id: NodeId) -> Option<i64> {
        self.ring.members.slot(id).map(|s| self.pods.get(s))
    }

    /// A member's metadata.
    #[must_use]
    pub fn metadata(&self, id: NodeId) -> Option<&Metadata> {
        self.ring.members.slot(id).map(|s| self.metadata.get(s))
    }

    /// The member named `name`; with several members of one name, the smallest id.
    #[must_use]
    pub fn by_name(&self, name: &str) -> Option<NodeId> {
        let members = &self.ring.members;
        self.by_name
            .iter_hash(self.name_hasher.hash_one(name))
            .filter(|&&s| members.name(s) == name)
            .map(|&s| members.id(s))
            .min()
    }

    /// Counter of membership changes (insert, rename, metadata or pod index change, removal,
    /// rebuild); round-robin cursors use it to notice that their order moved.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Registers a filter and builds its ring by one filter pass over the default ring (no
    /// hashing, no sorting). Registering an equal filter again returns the same id; a wildcard
    /// filter ([`Filter::is_wildcard`]) gets an id that names the default ring. Filters live as
    /// long as the set (libatapp never evicts them either).
    pub fn add_filter(&mut self, filter: Filter) -> FilterId {
        if let Some(i) = self.filters.iter().position(|e| e.filter == filter) {
            return FilterId(u32::try_from(i).expect("filter count fits u32"));
        }
        let id = FilterId(u32::try_from(self.filters.len()).expect("filter count fits u32"));
        // A filter ring is a pass over the default ring's points, unsettled or not: pending
        // members' points reach it at the settle's merge (their bits are set), and stale
        // points are rebuilt for every ring at the settle.
        let ring = if filter.is_wildcard() {
            None
        } else {
            let mut sub = SubRing::default();
            self.fill_sub_ring(&filter, &mut sub);
            Some(sub)
        };
        self.filters.push(FilterEntry { filter, ring });
        id
    }

    /// (Re)builds `sub` from the default ring for `filter`.
    fn fill_sub_ring(&self, filter: &Filter, sub: &mut SubRing) {
        let members = &self.ring.members;
        sub.bits.clear();
        sub.bits.resize(members.slot_capacity().div_ceil(64), 0);
        let mut count = 0;
        for slot in 0..members.slot_capacity() {
            let slot = u32::try_from(slot).expect("slot count fits u32");
            if members.id(slot).is_valid() && filter.matches(self.metadata.get(slot)) {
                set_bit(&mut sub.bits, slot, true);
                count += 1;
            }
        }
        let bits = &sub.bits;
        // Members whose points are pending are not in the default ring's points yet.
        count -= self.pending.iter().filter(|&&s| bit(bits, s)).count();
        sub.points
            .filter_from(&self.ring.points, count, |s| bit(bits, s));
        sub.rr.clear();
        sub.rr
            .extend(self.rr.iter().copied().filter(|&s| bit(bits, s)));
        sub.updates += 1;
    }

    /// The id of a registered filter equal to `filter`.
    #[must_use]
    pub fn filter_id(&self, filter: &Filter) -> Option<FilterId> {
        self.filters
            .iter()
            .position(|e| e.filter == *filter)
            .map(|i| FilterId(u32::try_from(i).expect("filter count fits u32")))
    }

    /// The filter registered under `id`.
    #[must_use]
    pub fn filter(&self, id: FilterId) -> Option<&Filter> {
        self.filters.get(id.0 as usize).map(|e| &e.filter)
    }

    /// Number of registered filters.
    #[must_use]
    pub fn filter_count(&self) -> usize {
        self.filters.len()
    }

    /// Every registered filter's handle, in registration order.
    pub fn filter_ids(&self) -> impl Iterator<Item = FilterId> + '_ {
        (0..self.filters.len()).map(|i| FilterId(u32::try_from(i).expect("filter count fits u32")))
    }

    /// The ring a target names: `None` or a wildcard filter is the default ring; an unknown
    /// id is an empty ring.
    #[must_use]
    ///
    /// # Panics
    ///
    /// Burst deferral left points unmerged or stale and [`settle`](Self::settle) was not called.
    pub fn ring(&self, filter: Option<FilterId>) -> RingView<'_> {
        assert!(
            self.is_settled(),
            "ring points read while unsettled: settle() the ring set first"
        );
        let members = &self.ring.members;
        let config = self.ring.config;
        match filter.map(|f| self.filters.get(f.0 as usize)) {
            None | Some(Some(FilterEntry { ring: None, .. })) => self.ring.view(),
            Some(Some(FilterEntry {
                ring: Some(sub), ..
            })) => RingView::new(config, members, &sub.points, Some(&sub.bits)),
            Some(None) => RingView::new(config, members, &self.empty, Some(&[])),
        }
    }

    /// `filter` with wildcard aliases folded into `None` (the default ring), so callers keying
    /// state by ring share it between the two names.
    #[must_use]
    pub fn canonical(&self, filter: Option<FilterId>) -> Option<FilterId> {
        filter.filter(|f| {
            !matches!(
                self.filters.get(f.0 as usize),
                Some(FilterEntry { ring: None, .. })
            )
        })
    }

    /// The round-robin order of a ring: members sorted by (pod index, id).
    #[must_use]
    pub fn round_robin_order(&self, filter: Option<FilterId>) -> RoundRobinOrder<'_> {
        let slots: &[u32] = match filter.map(|f| self.filters.get(f.0 as usize)) {
            None | Some(Some(FilterEntry { ring: None, .. })) => &self.rr,
            Some(Some(FilterEntry {
                ring: Some(sub), ..
            })) => &sub.rr,
            Some(None) => &[],
        };
        RoundRobinOrder {
            slots,
            members: &self.ring.members,
            pods: &self.pods,
        }
    }

    /// Total ring mutations so far, over the default ring and every filter ring.
    #[must_use]
    pub fn ring_updates(&self) -> u64 {
        self.ring.updates
            + self
                .filters
                .iter()
                .filter_map(|e| e.ring.as_ref())
                .map(|s| s.updates)
                .sum::<u64>()
    }

    /// Mutations of one ring (`None`: the default ring; a wildcard filter reports the default
    /// ring; an unknown id 0). A filter ring's construction counts as one.
    #[must_use]
    pub fn ring_updates_of(&self, filter: Option<FilterId>) -> u64 {
        match filter.map(|f| self.filters.get(f.0 as usize)) {
            None | Some(Some(FilterEntry { ring: None, .. })) => self.ring.updates,
            Some(Some(FilterEntry {
                ring: Some(sub), ..
            })) => sub.updates,
            Some(None) => 0,
        }
    }

    /// Heap bytes held by every ring, the member table and the per-member records.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.ring.memory_bytes()
            + self.rr.capacity() * 4
            + self.pods.memory_bytes()
            + self.metadata.memory_bytes()
            + self
                .filters
                .iter()
                .filter_map(|e| e.ring.as_ref())
                .map(|s| s.points.memory_bytes() + s.bits.capacity() * 8 + s.rr.capacity() * 4)
                .sum::<usize>()
            + self.by_name_bytes()
            + self.pending.capacity() * 4
    }

    /// Heap bytes of the by-name table: a `u32` slot and a control byte per bucket.
    fn by_name_bytes(&self) -> usize {
        self.by_name.capacity() * (core::mem::size_of::<u32>() + 1)
    }

    /// Enters `slot` (already holding its name) in the by-name table.
    fn by_name_add(&mut self, slot: u32) {
        let (members, hasher) = (&self.ring.members, &self.name_hasher);
        let name = members.name(slot);
        if !name.is_empty() {
            self.by_name
                .insert_unique(hasher.hash_one(name), slot, |&s| {
                    hasher.hash_one(members.name(s))
                });
        }
    }

    /// Takes `slot` (still holding the name it was entered under) out of the by-name table.
    fn by_name_remove(&mut self, slot: u32) {
        let name = self.ring.members.name(slot);
        if !name.is_empty()
            && let Ok(entry) =
                (self.by_name).find_entry(self.name_hasher.hash_one(name), |&s| s == slot)
        {
            entry.remove();
        }
    }

    /// Adds a member, or replaces the member with the same id (new name, pod index or
    /// metadata). The node's points are computed once and merged into the default ring and
    /// into each filter ring whose filter matches `metadata`; other filter rings are not
    /// touched. Re-inserting an identical member changes nothing.
    pub fn insert(&mut self, member: RingMember<'_>, metadata: &Metadata) -> Result<(), RingError> {
        if !member.id.is_valid() {
            return Err(RingError::InvalidNodeId);
        }
        let Some(slot) = self.ring.members.slot(member.id) else {
            check_capacity(&self.ring.config, self.len() + 1)?;
            let slot = self.ring.members.alloc(member.id, member.name);
            self.pods.set(slot, member.pod_index);
            self.metadata.set(slot, metadata);
            self.by_name_add(slot);
            self.enter_all(slot);
            self.generation += 1;
            return Ok(());
        };
        if self.ring.members.name(slot) == member.name {
            self.update_member(slot, metadata, member.pod_index);
            return Ok(());
        }
        // Renamed: every ring holding the node drops its old points and takes the new ones.
        self.leave_all(slot);
        self.by_name_remove(slot);
        self.ring.members.rename(slot, member.name);
        self.by_name_add(slot);
        self.pods.set(slot, member.pod_index);
        self.metadata.set(slot, metadata);
        self.enter_all(slot);
        self.generation += 1;
        Ok(())
    }

    /// Puts `slot` (already in the member table, with its metadata and pod set) into the
    /// default ring and every matching filter ring: one point computation for all of them.
    fn enter_all(&mut self, slot: u32) {
        let stale = self.defer_points();
        // Deferral on: the points wait for the next settle (a stale set rebuilds them all).
        let deferred = stale || self.defer;
        if self.defer && !stale {
            self.pending.push(slot);
        }
        let ring = &mut self.ring;
        if !deferred {
            node_keys(&ring.config, &ring.members, slot, &mut ring.keys);
            ring.points
                .insert_node(&ring.config, &ring.members, slot, &ring.keys);
        }
        ring.updates += 1;
        rr_insert(&mut self.rr, &self.pods, &ring.members, slot);
        let meta = self.metadata.get(slot);
        for sub_entry in &mut self.filters {
            let FilterEntry {
                filter,
                ring: Some(sub),
            } = sub_entry
            else {
                continue;
            };
            if filter.matches(meta) {
                if !deferred {
                    sub.points
                        .insert_node(&ring.config, &ring.members, slot, &ring.keys);
                }
                set_bit(&mut sub.bits, slot, true);
                rr_insert(&mut sub.rr, &self.pods, &ring.members, slot);
                sub.updates += 1;
            }
        }
    }

    /// Takes `slot` out of the default ring and every filter ring holding it (member table
    /// untouched): one point computation for all of them.
    fn leave_all(&mut self, slot: u32) {
        let stale = self.defer_points();
        // A pending member's points are in no ring yet.
        let deferred = stale || self.unpend(slot);
        let ring = &mut self.ring;
        if !deferred {
            // Keys only for a ring too large to scan; the filter rings, subsets of this one,
            // then have them too.
            self.old_keys.clear();
            if !ring
                .points
                .removes_by_scan(node_point_count(&ring.config, &ring.members, slot))
            {
                node_keys(&ring.config, &ring.members, slot, &mut self.old_keys);
            }
            ring.points.remove_node(slot, &self.old_keys);
        }
        ring.updates += 1;
        rr_remove(&mut self.rr, &self.pods, &ring.members, slot);
        for sub in self.filters.iter_mut().filter_map(|e| e.ring.as_mut()) {
            if bit(&sub.bits, slot) {
                if !deferred {
                    sub.points.remove_node(slot, &self.old_keys);
                }
                set_bit(&mut sub.bits, slot, false);
                rr_remove(&mut sub.rr, &self.pods, &ring.members, slot);
                sub.updates += 1;
            }
        }
    }

    /// Changes a member's metadata. Only filter rings whose filter matches the old or the new
    /// metadata — and whose verdict changes — are touched, by merging or removing the node's
    /// points (computed once, only if some ring needs them). Returns false for an unknown id.
    pub fn update_metadata(&mut self, id: NodeId, metadata: &Metadata) -> bool {
        let Some(slot) = self.ring.members.slot(id) else {
            return false;
        };
        let pod = self.pods.get(slot);
        self.update_member(slot, metadata, pod);
        true
    }

    /// Applies a new metadata and pod index to a member whose name is unchanged.
    fn update_member(&mut self, slot: u32, metadata: &Metadata, pod: i64) {
        let pod_changed = self.pods.get(slot) != pod;
        let meta_changed = *self.metadata.get(slot) != *metadata;
        if !pod_changed && !meta_changed {
            return;
        }
        let stale = self.defer_points();
        // A pending member's points are merged at the settle, by its filter bits.
        let deferred = stale || self.pending.contains(&slot);
        let ring = &mut self.ring;
        if pod_changed {
            rr_remove(&mut self.rr, &self.pods, &ring.members, slot);
        }
        let mut have_keys = false;
        for entry in &mut self.filters {
            let FilterEntry {
                filter,
                ring: Some(sub),
            } = entry
            else {
                continue;
            };
            let was = bit(&sub.bits, slot);
            let now = filter.matches(metadata);
            if was && (pod_changed || !now) {
                rr_remove(&mut sub.rr, &self.pods, &ring.members, slot);
            }
            if was == now {
                continue;
            }
            if deferred {
                set_bit(&mut sub.bits, slot, now);
                sub.updates += 1;
                continue;
            }
            if !have_keys {
                node_keys(&ring.config, &ring.members, slot, &mut ring.keys);
                have_keys = true;
            }
            if now {
                sub.points
                    .insert_node(&ring.config, &ring.members, slot, &ring.keys);
            } else {
                sub.points.remove_node(slot, &ring.keys);
            }
            set_bit(&mut sub.bits, slot, now);
            sub.updates += 1;
        }
        self.pods.set(slot, pod);
        self.metadata.set(slot, metadata);
        if pod_changed {
            rr_insert(&mut self.rr, &self.pods, &ring.members, slot);
        }
        for sub in self.filters.iter_mut().filter_map(|e| e.ring.as_mut()) {
            let now = bit(&sub.bits, slot);
            let listed = sub.rr.contains(&slot);
            if now && !listed {
                rr_insert(&mut sub.rr, &self.pods, &ring.members, slot);
            }
        }
        self.generation += 1;
    }

    /// Removes a member from every ring holding it (its points computed once); returns false
    /// for an unknown id.
    pub fn remove(&mut self, id: NodeId) -> bool {
        let Some(slot) = self.ring.members.slot(id) else {
            return false;
        };
        self.leave_all(slot);
        self.by_name_remove(slot);
        self.ring.members.release(id);
        self.metadata.set(slot, &Metadata::default());
        self.pods.set(slot, 0);
        self.generation += 1;
        true
    }

    /// Replaces the whole membership (a registry snapshot): one full build of the default ring
    /// (a later duplicate id replaces an earlier one), then one filter pass per filter ring.
    /// Cheaper than inserting members one by one. On error the set is left empty.
    pub fn rebuild<'a>(
        &mut self,
        members: impl IntoIterator<Item = (RingMember<'a>, &'a Metadata)>,
    ) -> Result<(), RingError> {
        self.by_name.clear();
        self.rr.clear();
        self.pods.clear();
        self.metadata.clear();
        self.generation += 1;
        self.ring.members.clear();
        let mut failed = None;
        for (m, meta) in members {
            if !m.id.is_valid() {
                failed = Some(RingError::InvalidNodeId);
                break;
            }
            let slot = match self.ring.members.slot(m.id) {
                Some(slot) => {
                    self.by_name_remove(slot);
                    self.ring.members.rename(slot, m.name);
                    slot
                }
                None => self.ring.members.alloc(m.id, m.name),
            };
            self.by_name_add(slot);
            self.pods.set(slot, m.pod_index);
            self.metadata.set(slot, meta);
        }
        if failed.is_none() {
            failed = check_capacity(&self.ring.config, self.len()).err();
        }
        if failed.is_some() {
            self.ring.members.clear();
            self.by_name.clear();
            self.pods.clear();
            self.metadata.clear();
        }
        let n = u32::try_from(self.ring.members.slot_capacity()).expect("checked capacity");
        let ring = &mut self.ring;
        ring.slots.clear();
        ring.slots.extend(0..n);
        ring.points.build(&ring.config, &ring.members, &ring.slots);
        ring.updates += 1;
        // Every member's points are in the new build: none is pending any more.
        self.pending.clear();
        let (pods, members) = (&self.pods, &ring.members);
        self.rr.extend(0..n);
        self.rr.sort_unstable_by_key(|&s| rr_key(pods, members, s));
        let mut filters = core::mem::take(&mut self.filters);
        for entry in &mut filters {
            if let Some(sub) = entry.ring.as_mut() {
                self.fill_sub_ring(&entry.filter, sub);
            }
        }
        self.filters = filters;
        // Every ring was built from scratch: nothing is stale.
        self.stale = false;
        self.unread = 0;
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A ring's members in round-robin order (pod index, then id): libatapp's
/// `get_sorted_nodes` order.
#[derive(Clone, Copy, Debug)]
pub struct RoundRobinOrder<'a> {
    slots: &'a [u32],
    members: &'a Members,
    pods: &'a PodIndexes,
}

impl<'a> RoundRobinOrder<'a> {
    /// Number of members.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The `i`-th member as `(pod index, id)`.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<(i64, NodeId)> {
        self.slots
            .get(i)
            .map(|&s| rr_key(self.pods, self.members, s))
    }

    /// Index of the first member ordered after `(pod_index, id)` (`len` if none).
    #[must_use]
    pub fn position_after(&self, pod_index: i64, id: NodeId) -> usize {
        self.slots
            .partition_point(|&s| rr_key(self.pods, self.members, s) <= (pod_index, id))
    }

    /// Member ids in order.
    pub fn ids(self) -> impl Iterator<Item = NodeId> + 'a {
        let members = self.members;
        self.slots.iter().map(move |&s| members.id(s))
    }
}
