//! Consistent-hash rings: where a key lands among the known nodes, kept up to date
//! incrementally as nodes come and go.
//!
//! A [`Ring`] places `points_per_node` (80 by default, libatapp's `HASH_POINT_PER_INS`) points
//! per node on a 64-bit circle (see [`crate::hash`] for the two placement modes) and answers
//! lookups by lower bound with wrap-around. Points are packed 4 bytes each behind a prefix
//! index: the top 32 bits of the position less the prefix the index already holds, above the
//! member slot (no per-point reference counts; ties on the stored 32 bits are ordered exactly
//! by recomputing them), so a lookup is one index read and a branch-free search of a few
//! points. A full build buckets positions instead of sorting them; adding or removing a node
//! merges or removes just its points in place. Lookups never rebuild anything.
//!
//! [`RingSet`] holds the rings of a whole discovery set: the default ring plus one ring per
//! registered metadata [`Filter`](crate::discovery::Filter). A filter ring is built by a filter
//! pass over the default ring and updated by merging the node's already-computed points, and
//! only when the changed node matches that filter before or after the change. Topology changes
//! have no way in here: this module has no topology API.
//!
//! Searches follow libatapp's `etcd_discovery_set` modes ([`SearchMode`]): all points, the
//! compact ring (each run of one node's consecutive points collapsed into its last point —
//! walked by skipping runs, not stored twice), unique nodes, and skipping a given node.

mod interned;
mod members;
mod pods;
mod points;
mod search;
mod set;

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;

pub use search::RingView;
pub use set::{FilterId, RingSet, RoundRobinOrder};

use self::{members::Members, points::Points};
use crate::{
    hash::{HashMode, KeyHash},
    ids::NodeId,
};

/// How a ring places nodes. Plain data; `Default` is 80 points per node in fast mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingConfig {
    /// Points per node (libatapp: 80). 0 gives an empty ring. In [`HashMode::LibatappV012`]
    /// half come from the id and half from the name (`points_per_node / 2` each).
    pub points_per_node: u32,
    /// Placement and key hashing mode.
    pub mode: HashMode,
}

impl RingConfig {
    /// libatapp's points per node.
    pub const DEFAULT_POINTS_PER_NODE: u32 = 80;

    /// Largest accepted `points_per_node` (Envoy's ring caps a host far lower).
    pub const MAX_POINTS_PER_NODE: u32 = 1 << 16;

    /// 80 points per node, fast mode.
    #[must_use]
    pub const fn fast() -> RingConfig {
        RingConfig {
            points_per_node: Self::DEFAULT_POINTS_PER_NODE,
            mode: HashMode::Fast,
        }
    }

    /// 80 points per node, placed as libatapp `main` places them since commit `45f5fda`
    /// (2024-12-26; unreleased): [`HashMode::LibatappMain`].
    #[must_use]
    pub const fn libatapp_main() -> RingConfig {
        RingConfig {
            points_per_node: Self::DEFAULT_POINTS_PER_NODE,
            mode: HashMode::LibatappMain,
        }
    }

    /// 80 points per node (40 from the id, 40 from the name), placed as libatapp releases
    /// v0.11.0–v0.12.5 place them: [`HashMode::LibatappV012`].
    #[must_use]
    pub const fn libatapp_v012() -> RingConfig {
        RingConfig {
            points_per_node: Self::DEFAULT_POINTS_PER_NODE,
            mode: HashMode::LibatappV012,
        }
    }
}

impl Default for RingConfig {
    fn default() -> RingConfig {
        RingConfig::fast()
    }
}

/// Heap bytes of a [`Ring`] by component ([`Ring::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingMemory {
    /// The sorted points: 4 bytes each (the position's top 32 bits less the index prefix,
    /// above the member slot), by capacity.
    pub points: usize,
    /// The prefix lookup index (one `u32` per prefix: at most 2^16 + 1, or one per member
    /// slot rounded up to a power of two when the slots need more bits).
    pub index: usize,
    /// The member table: id and name per slot, and the id → slot map.
    pub members: usize,
    /// Build and change buffers kept between calls so steady-state rebuilds allocate nothing.
    pub buffers: usize,
}

/// A node as a ring sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingMember<'a> {
    /// The node; `NodeId(0)` is rejected.
    pub id: NodeId,
    /// Its name; empty means the points hash the 8 little-endian id bytes (libatapp's id-only
    /// nodes).
    pub name: &'a str,
    /// libatapp's `stateful_pod_index`: first key of the round-robin order in a [`RingSet`]
    /// (then id). A lone [`Ring`] ignores it.
    pub pod_index: i64,
}

impl<'a> RingMember<'a> {
    /// A member with pod index 0.
    #[must_use]
    pub const fn new(id: NodeId, name: &'a str) -> RingMember<'a> {
        RingMember {
            id,
            name,
            pod_index: 0,
        }
    }

    /// The same member with `pod_index` set.
    #[must_use]
    pub const fn with_pod_index(self, pod_index: i64) -> RingMember<'a> {
        RingMember { pod_index, ..self }
    }
}

/// Which points a successor search walks and which it reports (libatapp `search_mode` bits).
///
/// `Default` is libatapp's `kAll`: every point from the key onwards, nodes may repeat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SearchMode {
    /// Walk the compact ring (libatapp `kCompact`): each run of consecutive points of one node
    /// counts once, at its last point.
    pub compact: bool,
    /// Report each node at most once (libatapp `kUnique`); the output is capped at the number
    /// of nodes in the ring. `k` distinct successors (replica sets) = this mode.
    pub unique_node: bool,
    /// Never report this node (libatapp `kNext`, "skip the key's own node"). Unlike libatapp,
    /// whose non-unique `kNext` only skips the one point equal to the key, every point of the
    /// node is skipped in every mode; with `unique_node` both behave the same.
    pub skip_node: Option<NodeId>,
}

impl SearchMode {
    /// libatapp `kAll`.
    pub const ALL: SearchMode = SearchMode {
        compact: false,
        unique_node: false,
        skip_node: None,
    };
    /// libatapp `kCompact`.
    pub const COMPACT: SearchMode = SearchMode {
        compact: true,
        ..SearchMode::ALL
    };
    /// libatapp `kUniqueNode`: distinct successors.
    pub const UNIQUE: SearchMode = SearchMode {
        unique_node: true,
        ..SearchMode::ALL
    };
    /// libatapp `kCompactUniqueNode`.
    pub const COMPACT_UNIQUE: SearchMode = SearchMode {
        compact: true,
        unique_node: true,
        skip_node: None,
    };

    /// This mode, additionally skipping `node` (libatapp's `kNext*` variants).
    #[must_use]
    pub const fn skipping(self, node: NodeId) -> SearchMode {
        SearchMode {
            skip_node: Some(node),
            ..self
        }
    }
}

/// Why a ring refused a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// `NodeId(0)` is reserved and never a ring member.
    #[error("node id 0 is reserved and cannot join a ring")]
    InvalidNodeId,
    /// The ring would hold more than `u32::MAX` points, or the config asks for more than
    /// [`RingConfig::MAX_POINTS_PER_NODE`] points per node.
    #[error("ring capacity exceeded: {nodes} nodes x {points_per_node} points per node")]
    Capacity {
        /// Nodes the ring would hold.
        nodes: usize,
        /// Points per node of the ring.
        points_per_node: u32,
    },
}

fn check_capacity(config: &RingConfig, nodes: usize) -> Result<(), RingError> {
    let fits = config.points_per_node <= RingConfig::MAX_POINTS_PER_NODE
        && u32::try_from(nodes).is_ok()
        && nodes
            .checked_mul(config.points_per_node as usize)
            .is_some_and(|p| u32::try_from(p).is_ok());
    if fits {
        Ok(())
    } else {
        Err(RingError::Capacity {
            nodes,
            points_per_node: config.points_per_node,
        })
    }
}

/// One consistent-hash ring: sorted packed points, compact view, prefix lookup index.
///
/// Change it with [`build`](Ring::build) (everything at once), [`insert`](Ring::insert) and
/// [`remove`](Ring::remove) (one node, incremental); query it with [`lookup`](Ring::lookup)
/// and [`successors`](Ring::successors), or through a borrowed [`RingView`].
///
/// ```
/// use switchboard_core::{ids::NodeId, ring::{Ring, RingConfig, RingMember, SearchMode}};
///
/// let mut ring = Ring::new(RingConfig::libatapp_main());
/// ring.build([
///     RingMember::new(NodeId(1), "svc-1"),
///     RingMember::new(NodeId(2), "svc-2"),
///     RingMember::new(NodeId(3), "svc-3"),
/// ])?;
/// let owner = ring.lookup(b"user:42").expect("ring is not empty");
///
/// // Three distinct replicas, the owner first.
/// let mut replicas = Vec::new();
/// ring.successors(b"user:42", 3, SearchMode::UNIQUE, &mut replicas);
/// assert_eq!(replicas.len(), 3);
/// assert_eq!(replicas[0], owner);
///
/// // Removing another node never moves this key.
/// let other = replicas[1];
/// ring.remove(other);
/// assert_eq!(ring.lookup(b"user:42"), Some(owner));
/// # Ok::<(), switchboard_core::ring::RingError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Ring {
    config: RingConfig,
    members: Members,
    points: Points,
    /// Slots of a build in member order; node positions of an insert/remove (reused).
    slots: Vec<u32>,
    keys: Vec<u64>,
    updates: u64,
}

impl Ring {
    /// An empty ring.
    #[must_use]
    pub fn new(config: RingConfig) -> Ring {
        Ring {
            config,
            members: Members::default(),
            points: Points::default(),
            slots: Vec::new(),
            keys: Vec::new(),
            updates: 0,
        }
    }

    /// The ring's configuration.
    #[must_use]
    pub fn config(&self) -> RingConfig {
        self.config
    }

    /// Replaces the whole membership with `members` (a later duplicate id replaces an earlier
    /// one) and rebuilds: each point hashed once, bucketed, no comparison sort; buffers are
    /// reused, so repeated builds of a similar size allocate nothing.
    ///
    /// On error the ring is left empty.
    pub fn build<'a>(
        &mut self,
        members: impl IntoIterator<Item = RingMember<'a>>,
    ) -> Result<(), RingError> {
        self.members.clear();
        self.slots.clear();
        self.updates += 1;
        let members = members.into_iter();
        // Sized once from the iterator's count: pushing one by one would leave up to 2x spare
        // capacity in every per-slot table (measured: 0.3 B per point at N = 10 000).
        self.members.reserve_exact(members.size_hint().0);
        for m in members {
            if !m.id.is_valid() {
                self.clear();
                return Err(RingError::InvalidNodeId);
            }
            if let Some(slot) = self.members.slot(m.id) {
                self.members.rename(slot, m.name);
            } else {
                self.members.alloc(m.id, m.name);
            }
        }
        if let Err(e) = check_capacity(&self.config, self.members.len()) {
            self.clear();
            return Err(e);
        }
        // A fresh table allocates slots 0..n in order, so this is member order.
        let n = u32::try_from(self.members.slot_capacity()).expect("checked by check_capacity");
        self.slots.extend(0..n);
        self.points.build(&self.config, &self.members, &self.slots);
        Ok(())
    }

    /// Removes every node.
    pub fn clear(&mut self) {
        self.members.clear();
        self.points.clear();
        self.updates += 1;
    }

    /// Adds one node, or replaces the node with the same id: hashes only this node's points,
    /// sorts them (80 values) and merges them into the ring in place. Re-inserting a node with
    /// an unchanged name changes nothing.
    pub fn insert(&mut self, member: RingMember<'_>) -> Result<(), RingError> {
        if !member.id.is_valid() {
            return Err(RingError::InvalidNodeId);
        }
        let slot = if let Some(slot) = self.members.slot(member.id) {
            if self.members.name(slot) == member.name {
                return Ok(());
            }
            self.remove_points(slot);
            self.members.rename(slot, member.name);
            slot
        } else {
            check_capacity(&self.config, self.members.len() + 1)?;
            self.members.alloc(member.id, member.name)
        };
        points::node_keys(&self.config, &self.members, slot, &mut self.keys);
        self.points
            .insert_node(&self.config, &self.members, slot, &self.keys);
        self.updates += 1;
        Ok(())
    }

    /// Removes one node's points in place; returns whether it was present.
    pub fn remove(&mut self, id: NodeId) -> bool {
        let Some(slot) = self.members.slot(id) else {
            return false;
        };
        self.remove_points(slot);
        self.members.release(id);
        self.updates += 1;
        true
    }

    /// Takes the points of the member in `slot` out of the ring, hashing them only when the
    /// ring is too large to scan.
    fn remove_points(&mut self, slot: u32) {
        self.keys.clear();
        let count = points::node_point_count(&self.config, &self.members, slot);
        if !self.points.removes_by_scan(count) {
            points::node_keys(&self.config, &self.members, slot, &mut self.keys);
        }
        self.points.remove_node(slot, &self.keys);
    }

    /// Whether `id` is a member.
    #[must_use]
    pub fn contains(&self, id: NodeId) -> bool {
        self.members.slot(id).is_some()
    }

    /// How many times the ring's points changed (builds, inserts, removes that did something).
    #[must_use]
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// A borrowed, copyable query view.
    #[must_use]
    #[inline]
    pub fn view(&self) -> RingView<'_> {
        RingView::new(self.config, &self.members, &self.points, None)
    }

    /// Number of nodes.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.points.node_count()
    }

    /// Number of points (`node_count * points_per_node`, except id-only nodes in
    /// [`HashMode::LibatappV012`], which have half).
    #[must_use]
    pub fn point_count(&self) -> usize {
        self.points.len()
    }

    /// The node owning `key` (libatapp `get_node_by_consistent_hash`: first point at or after
    /// the key's position, wrapping); `None` on an empty ring.
    #[must_use]
    #[inline]
    pub fn lookup(&self, key: &[u8]) -> Option<NodeId> {
        self.view().lookup(key)
    }

    /// [`lookup`](Ring::lookup) of an integer key, hashed as its 8 little-endian bytes.
    #[must_use]
    #[inline]
    pub fn lookup_u64(&self, key: u64) -> Option<NodeId> {
        self.view().lookup_u64(key)
    }

    /// [`lookup`](Ring::lookup) of an already hashed key.
    #[must_use]
    #[inline]
    pub fn lookup_hash(&self, hash: KeyHash) -> Option<NodeId> {
        self.view().lookup_hash(hash)
    }

    /// Up to `k` successors of `key` in `mode` into `out` (cleared first); see
    /// [`RingView::successors`].
    #[inline]
    pub fn successors(&self, key: &[u8], k: usize, mode: SearchMode, out: &mut Vec<NodeId>) {
        self.view().successors(key, k, mode, out);
    }

    /// Every point in ring order as `(position, node)`; the position is the stored 64 bits
    /// (`h1` in compat mode).
    pub fn points(&self) -> impl Iterator<Item = (u64, NodeId)> + '_ {
        self.view().points()
    }

    /// Heap bytes held by the ring: points, prefix index, member table and reusable buffers.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let m = self.memory();
        m.points + m.index + m.members + m.buffers
    }

    /// [`memory_bytes`](Ring::memory_bytes) by component.
    #[must_use]
    pub fn memory(&self) -> RingMemory {
        let (points, index, buffers) = self.points.memory_parts();
        RingMemory {
            points,
            index,
            members: self.members.memory_bytes(),
            buffers: buffers + self.slots.capacity() * 4 + self.keys.capacity() * 8,
        }
    }
}
