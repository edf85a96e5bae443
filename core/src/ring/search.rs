//! Queries on one ring: first-hit lookup and libatapp's successor searches.
//!
//! A lookup hashes the key, reads the prefix index and counts, without branching, a short
//! window of that prefix's points (its first 4, or 8 around the key's interpolated rank when
//! the capped index leaves more per prefix). Successor searches walk on from there with
//! wrap-around; the compact ring is walked by skipping runs of one node's consecutive points
//! instead of being stored as a second copy.

use alloc::{vec, vec::Vec};

use super::{
    RingConfig, SearchMode,
    members::Members,
    points::{Layout, Points, full_positions, run_rank},
};
use crate::{
    hash::{KeyHash, key_hash, key_hash_u64},
    ids::NodeId,
};

/// A borrowed view of one ring (a [`Ring`](super::Ring), or the default or a filter ring of a
/// [`RingSet`](super::RingSet)); cheap to copy, valid until the ring next changes.
#[derive(Clone, Copy, Debug)]
pub struct RingView<'a> {
    config: RingConfig,
    members: &'a Members,
    points: &'a Points,
    /// Membership bitset by slot for a filter ring; `None` when every member is in the ring.
    membership: Option<&'a [u64]>,
}

impl<'a> RingView<'a> {
    #[inline]
    pub(crate) fn new(
        config: RingConfig,
        members: &'a Members,
        points: &'a Points,
        membership: Option<&'a [u64]>,
    ) -> RingView<'a> {
        RingView {
            config,
            members,
            points,
            membership,
        }
    }

    /// The ring's configuration.
    #[must_use]
    pub fn config(&self) -> RingConfig {
        self.config
    }

    /// Number of nodes in this ring.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.points.node_count()
    }

    /// Number of points in this ring.
    #[must_use]
    pub fn point_count(&self) -> usize {
        self.points.len()
    }

    /// Whether the ring has no points.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.points.len() == 0
    }

    /// Whether `id` is a node of this ring.
    #[must_use]
    pub fn contains(&self, id: NodeId) -> bool {
        self.slot_in_ring(id).is_some()
    }

    #[inline]
    fn slot_in_ring(&self, id: NodeId) -> Option<u32> {
        let slot = self.members.slot(id)?;
        match self.membership {
            None => Some(slot),
            Some(bits) => bit(bits, slot).then_some(slot),
        }
    }

    /// Heap bytes held by this ring's points and prefix index (not the shared member table).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.points.memory_bytes()
    }

    /// Index of the first point at or after `hash` (libatapp's `lower_bound` on the 128-bit
    /// pair in compat mode); `len` when the key is past the last point.
    #[inline]
    fn lower_bound(&self, hash: KeyHash) -> usize {
        let (i, maybe_tie) = self.points.search(hash.hi);
        if maybe_tie {
            return self.rank_in_run(i, hash);
        }
        i
    }

    /// [`lower_bound`](RingView::lower_bound) of a key whose stored bits equal those of the
    /// point at `i`, the first of its run: ranks the key in the run by full position (about
    /// `points / 2^32` of lookups get here).
    #[cold]
    #[inline(never)]
    fn rank_in_run(&self, i: usize, hash: KeyHash) -> usize {
        let (run, end) = self.points.run_from(i, hash.hi);
        let libatapp = self.config.mode.is_libatapp();
        let pts = &self.points.as_slice()[i..end];
        i + run_rank(&self.config, self.members, run, pts, |h1, h2| {
            if libatapp {
                (h1, h2) < (hash.hi, hash.lo)
            } else {
                h1 < hash.hi
            }
        })
    }

    /// The node owning `key`: the first point at or after its position, wrapping (libatapp
    /// `get_node_by_consistent_hash`, `kAll`). `None` on an empty ring. No allocation.
    #[must_use]
    #[inline]
    pub fn lookup(&self, key: &[u8]) -> Option<NodeId> {
        self.lookup_hash(key_hash(key))
    }

    /// [`lookup`](RingView::lookup) of an integer key, hashed as its 8 little-endian bytes.
    #[must_use]
    #[inline]
    pub fn lookup_u64(&self, key: u64) -> Option<NodeId> {
        self.lookup_hash(key_hash_u64(key))
    }

    /// [`lookup`](RingView::lookup) of an already hashed key.
    #[must_use]
    #[inline]
    pub fn lookup_hash(&self, hash: KeyHash) -> Option<NodeId> {
        let len = self.points.len();
        if len == 0 {
            return None;
        }
        let i = self.lower_bound(hash);
        let slot = self.points.slot(if i < len { i } else { 0 });
        Some(self.members.id(slot))
    }

    /// Up to `k` successors of `key` into `out` (cleared first), walking from the key's
    /// position with wrap-around at most once around the ring, in `mode`:
    ///
    /// - all points (default): `min(k, points)` hits, nodes may repeat;
    /// - `compact`: the compact ring instead, so consecutive hits differ;
    /// - `unique_node`: each node once, so at most `node_count` hits (fewer when skipping);
    /// - `skip_node`: that node's points are never reported.
    ///
    /// Allocates only when `unique_node` is set and more than 32 hits are asked for.
    pub fn successors(&self, key: &[u8], k: usize, mode: SearchMode, out: &mut Vec<NodeId>) {
        self.successors_hash(key_hash(key), k, mode, out);
    }

    /// [`successors`](RingView::successors) of an already hashed key.
    pub fn successors_hash(
        &self,
        hash: KeyHash,
        k: usize,
        mode: SearchMode,
        out: &mut Vec<NodeId>,
    ) {
        out.clear();
        let pts = self.points.as_slice();
        let layout = self.points.layout();
        let len = pts.len();
        if len == 0 || k == 0 {
            return;
        }
        let skip = mode.skip_node.and_then(|id| self.slot_in_ring(id));
        let limit = if mode.unique_node {
            k.min(self.node_count() - usize::from(skip.is_some()))
        } else {
            k
        };
        if limit == 0 {
            return;
        }
        let mut start = self.lower_bound(hash);
        if start == len {
            start = 0;
        }
        let mut seen = Seen::new(limit, self.members.slot_capacity());
        let mut visit = |slot: u32| -> bool {
            if Some(slot) == skip || (mode.unique_node && !seen.insert(slot)) {
                return false;
            }
            out.push(self.members.id(slot));
            out.len() >= limit
        };
        if mode.compact {
            let compact = Compact::new(pts, layout, self.node_count());
            let first = compact.next_kept(start);
            let mut c = first;
            loop {
                if visit(layout.slot(pts[c])) {
                    break;
                }
                let n = compact.next_kept(if c + 1 == len { 0 } else { c + 1 });
                if n == first {
                    break;
                }
                c = n;
            }
        } else {
            let (head, tail) = pts.split_at(start);
            for &p in tail.iter().chain(head) {
                if visit(layout.slot(p)) {
                    break;
                }
            }
        }
    }

    /// Every point in ring order as `(position, node)`; the position is the full 64 bits (`h1`
    /// in compat mode), recomputed from the nodes (the ring stores fewer): O(points)
    /// hashing and one allocation, for diagnostics.
    pub fn points(self) -> impl Iterator<Item = (u64, NodeId)> + 'a {
        let members = self.members;
        let pts = self.points.as_slice();
        let layout = self.points.layout();
        let positions = full_positions(&self.config, members, layout, pts);
        positions
            .into_iter()
            .zip(pts)
            .map(move |(k, &p)| (k, members.id(layout.slot(p))))
    }

    /// The compact ring (libatapp `rebuild_compact_cache`) in ring order as
    /// `(position, node)`: each run of consecutive points of one node becomes its last point,
    /// and a final run of the same node as the first kept point is dropped. Computed by walking
    /// (O(points), positions recomputed as in [`points`](RingView::points)); the ring stores no
    /// second copy.
    pub fn compact_points(self) -> impl Iterator<Item = (u64, NodeId)> + 'a {
        let members = self.members;
        let pts = self.points.as_slice();
        let layout = self.points.layout();
        let positions = full_positions(&self.config, members, layout, pts);
        let compact = Compact::new(pts, layout, self.node_count());
        let mut next = if pts.is_empty() {
            None
        } else {
            Some(compact.next_kept(0))
        };
        let first = next;
        core::iter::from_fn(move || {
            let c = next?;
            let n = if c + 1 == pts.len() {
                None
            } else {
                Some(compact.next_kept(c + 1))
            };
            // Wrapping back to the first kept point ends the walk.
            next = n.filter(|&n| Some(n) != first && n > c);
            Some((positions[c], members.id(layout.slot(pts[c]))))
        })
    }

    /// Number of points of the compact ring (O(points)).
    #[must_use]
    pub fn compact_len(self) -> usize {
        self.compact_points().count()
    }
}

/// Run-skipping walker over the compact ring.
struct Compact<'p> {
    pts: &'p [u32],
    layout: Layout,
    /// The last run has the same node as the first one and is dropped (libatapp merges it).
    drop_last: bool,
}

impl<'p> Compact<'p> {
    fn new(pts: &'p [u32], layout: Layout, node_count: usize) -> Compact<'p> {
        let drop_last = node_count >= 2
            && pts.len() >= 2
            && layout.slot(pts[0]) == layout.slot(pts[pts.len() - 1]);
        Compact {
            pts,
            layout,
            drop_last,
        }
    }

    /// Last index of the run containing `j`.
    fn run_end(&self, mut j: usize) -> usize {
        let slot = self.layout.slot(self.pts[j]);
        while j + 1 < self.pts.len() && self.layout.slot(self.pts[j + 1]) == slot {
            j += 1;
        }
        j
    }

    /// First kept (compact) point at or after index `i`, wrapping.
    fn next_kept(&self, i: usize) -> usize {
        let j = self.run_end(i);
        if j + 1 == self.pts.len() && self.drop_last {
            self.run_end(0)
        } else {
            j
        }
    }
}

/// The nodes already reported by a unique-node search: a short list scanned linearly, or a
/// bitset over slots when many hits are asked for.
enum Seen {
    Few { slots: [u32; 32], len: usize },
    Many(Vec<u64>),
}

impl Seen {
    fn new(limit: usize, slot_capacity: usize) -> Seen {
        if limit <= 32 {
            Seen::Few {
                slots: [0; 32],
                len: 0,
            }
        } else {
            Seen::Many(vec![0; slot_capacity.div_ceil(64)])
        }
    }

    /// Records `slot`; false if it was already there.
    fn insert(&mut self, slot: u32) -> bool {
        match self {
            Seen::Few { slots, len } => {
                if slots[..*len].contains(&slot) {
                    return false;
                }
                // `limit <= 32` hits end the search before the list overflows.
                slots[*len] = slot;
                *len += 1;
                true
            }
            Seen::Many(bits) => {
                let (w, b) = (slot as usize / 64, slot % 64);
                let fresh = bits[w] & (1 << b) == 0;
                bits[w] |= 1 << b;
                fresh
            }
        }
    }
}

/// Whether `slot` is set in a slot bitset.
#[inline]
pub(crate) fn bit(bits: &[u64], slot: u32) -> bool {
    bits.get(slot as usize / 64)
        .is_some_and(|w| w & (1 << (slot % 64)) != 0)
}
