//! Sorted point storage of one ring: 8-byte points, a prefix index, and the passes that build
//! and change them (bucket build, in-place merge of one node, in-place removal, filter pass).
//!
//! A point is the top 32 bits of its 64-bit position above a `u32` member slot, packed in one
//! `u64`, so the ring is one array of 8 bytes per point (a third less than a full position
//! beside the slot, so less of it misses the cache) and `u32` slots do not cap a ring at 65 535
//! nodes. Ring order is exact, by full position: by `h1` (fast mode: the position), then in the
//! libatapp modes by `h2`, then by node id. Points whose stored halves are equal — about
//! `points² / 2^33` pairs per ring, 75 at 800 000 points — are put in that order by recomputing
//! the full positions of just those points' nodes ([`resolve_run`]); a lookup whose key's top
//! 32 bits equal a point's (about `points / 2^32` of lookups) ranks the key in that run the
//! same way ([`run_rank`]), and [`full_positions`] recomputes every position for the
//! diagnostics that list them.
//!
//! The prefix index maps the top `bits` bits (at most 16: 256 KiB, L2-resident) of a position to
//! the first point at or after that prefix. It doubles as the counting array of a one-pass
//! build, and incremental changes shift it by the number of points added or removed below each
//! prefix. Incremental changes work in place (block moves), so no second copy of the ring is
//! ever held; full builds reuse every buffer, so steady-state rebuilds allocate nothing.

use alloc::vec::Vec;

use super::{RingConfig, members::Members};
use crate::{
    hash::{HashMode, Murmur3Prepared, compat_point_prepared, compat_sources, fast_point},
    ids::NodeId,
};

/// Largest prefix index: 2^16 entries (256 KiB), which stays in L2 even for 10 000 nodes.
const MAX_INDEX_BITS: u32 = 16;

/// The part of a position a point stores: its top 32 bits (the low 32 bits of this mask are 0).
pub(crate) const STORED: u64 = !0xffff_ffff;

/// One ring point: the top 32 bits of its 64-bit position above the member slot that owns it,
/// packed in one `u64`. Ring order is by the full position, so runs of equal stored halves are
/// put in exact order by recomputing their positions ([`resolve_run`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Point(u64);

impl Point {
    #[inline]
    pub(crate) const fn new(key: u64, slot: u32) -> Point {
        Point((key & STORED) | slot as u64)
    }

    /// The stored part of the position: its top 32 bits, the low 32 bits zero (`h1` in compat
    /// mode).
    #[inline]
    pub(crate) const fn key(self) -> u64 {
        self.0 & STORED
    }

    /// The owning member slot.
    #[inline]
    pub(crate) const fn slot(self) -> u32 {
        // The low half is the slot.
        self.0 as u32
    }
}

/// Bits of the first distribution pass of a full build (256 groups) of a large ring.
const TOP_BITS: u32 = 8;

/// Rings up to this many points are distributed on all index bits in one pass (the array
/// fits in L2, so random writes are cheap) and need no second level.
const SINGLE_PASS_MAX: usize = 1 << 17;

/// Points a lookup scans branch-free from the start of a small bucket (buckets hold one or two
/// points on average while the index is below its cap; see [`ideal_bits`]).
const SCAN_WINDOW: usize = 4;

/// Points a lookup scans branch-free around its interpolated rank in a larger bucket (past
/// 2^17 points the capped index leaves about `len / 2^16` points per bucket: 12 at 10 000
/// nodes). Positions are uniform within a bucket, so the key's rank deviates from its
/// interpolation by about `sqrt(points) / 2` (1.7 at 12 points): a window of 8 holds the
/// answer in about 98 % of lookups, the rest fall back to a binary search of the bucket.
const GUESS_WINDOW: usize = 8;

/// Index bits suited to `len` points: about one to two points per prefix, capped.
fn ideal_bits(len: usize) -> u32 {
    let log = usize::BITS - 1 - len.max(2).leading_zeros();
    log.clamp(1, MAX_INDEX_BITS)
}

/// Bits a full build sorts on before its insertion pass: one to two points per bucket.
fn sort_bits(len: usize) -> u32 {
    let log = usize::BITS - 1 - len.max(2).leading_zeros();
    log.clamp(1, 24)
}

/// Insertion sort by stored position (stable); returns whether two positions are equal.
fn insertion_sort(pts: &mut [Point]) -> bool {
    let mut ties = false;
    for i in 1..pts.len() {
        let p = pts[i];
        let k = p.key();
        let prev = pts[i - 1].key();
        if k < prev {
            let mut j = i;
            while j > 0 && pts[j - 1].key() > k {
                pts[j] = pts[j - 1];
                j -= 1;
            }
            pts[j] = p;
            ties |= j > 0 && pts[j - 1].key() == k;
        } else {
            ties |= k == prev;
        }
    }
    ties
}

/// Calls `f(h1, h2)` for every point of the member in `slot`: fast mode's stream (`h2` = 0)
/// or the libatapp murmur3 sources of the configured layout.
#[inline]
fn for_node_points(config: &RingConfig, members: &Members, slot: u32, mut f: impl FnMut(u64, u64)) {
    if config.mode == HashMode::Fast {
        let h = members.node_hash(slot);
        for i in 0..config.points_per_node {
            f(fast_point(h, i), 0);
        }
        return;
    }
    let id_bytes = members.id(slot).0.to_le_bytes();
    let sources = compat_sources(
        config.mode,
        config.points_per_node,
        members.name(slot),
        &id_bytes,
    );
    for (bytes, count) in sources {
        if count == 0 {
            continue;
        }
        let node = Murmur3Prepared::new(bytes);
        for i in 0..count {
            let (h1, h2) = compat_point_prepared(&node, i);
            f(h1, h2);
        }
    }
}

/// Number of points of the member in `slot`.
#[inline]
pub(crate) fn node_point_count(config: &RingConfig, members: &Members, slot: u32) -> usize {
    config
        .mode
        .node_points(config.points_per_node, members.name(slot)) as usize
}

/// Computes the sorted positions of the member in `slot` into `out` (one hash of the node in
/// fast mode, one murmur3 per point in the libatapp modes).
pub(crate) fn node_keys(config: &RingConfig, members: &Members, slot: u32, out: &mut Vec<u64>) {
    crate::hash::test_hooks::count_point_set();
    out.clear();
    for_node_points(config, members, slot, |h1, _| out.push(h1));
    out.sort_unstable();
}

/// Full positions `(h1, h2)` of the points of `slot` whose stored part is `key` (`h2` is 0 in
/// fast mode), recomputed from the node.
fn for_run_points(
    config: &RingConfig,
    members: &Members,
    slot: u32,
    key: u64,
    mut f: impl FnMut(u64, u64),
) {
    for_node_points(config, members, slot, |h1, h2| {
        if h1 & STORED == key {
            f(h1, h2);
        }
    });
}

/// Each distinct slot of `run` once (first occurrence), without allocating.
fn run_slots(run: &[Point]) -> impl Iterator<Item = u32> + '_ {
    run.iter()
        .enumerate()
        .filter(|&(i, p)| !run[..i].iter().any(|q| q.slot() == p.slot()))
        .map(|(_, p)| p.slot())
}

/// How many points of a run sharing one stored position `key` lie before a position for which
/// `before(h1, h2)` holds (the run's exact order is by full position): recomputes the points of
/// the run's nodes, no allocation. Reached when a looked-up key's top 32 bits equal a point's.
pub(crate) fn run_rank(
    config: &RingConfig,
    members: &Members,
    key: u64,
    run: &[Point],
    before: impl Fn(u64, u64) -> bool,
) -> usize {
    let mut rank = 0;
    for slot in run_slots(run) {
        for_run_points(config, members, slot, key, |h1, h2| {
            rank += usize::from(before(h1, h2));
        });
    }
    rank
}

/// The exact order of a run of points sharing one stored position `key`, as
/// `(h1, h2, id, slot)` per point (`h2` is 0 in fast mode): recomputes the points of the run's
/// nodes.
fn run_order(
    config: &RingConfig,
    members: &Members,
    key: u64,
    run: &[Point],
) -> Vec<(u64, u64, NodeId, u32)> {
    let mut order = Vec::with_capacity(run.len());
    for slot in run_slots(run) {
        let id = members.id(slot);
        for_run_points(config, members, slot, key, |h1, h2| {
            order.push((h1, h2, id, slot));
        });
    }
    order.sort_unstable();
    order
}

/// Puts a run of points with equal stored positions into exact order: by full position (`h1`,
/// then `h2` in compat mode), then node id.
fn resolve_run(config: &RingConfig, members: &Members, run: &mut [Point]) {
    let first = run[0].slot();
    if run.iter().all(|p| p.slot() == first) {
        return; // identical entries: any order is the same ring
    }
    let key = run[0].key();
    let order = run_order(config, members, key, run);
    debug_assert_eq!(
        order.len(),
        run.len(),
        "every point of the run is recomputed"
    );
    for (p, &(_, _, _, slot)) in run.iter_mut().zip(&order) {
        *p = Point::new(key, slot);
    }
}

/// The full 64-bit position of every point of `pts`, in ring order (`h1` in compat mode),
/// recomputed from the nodes: each node's points appear in the ring in ascending order, so
/// its sorted positions are handed out one by one. O(points) hashing; for diagnostics.
pub(crate) fn full_positions(config: &RingConfig, members: &Members, pts: &[Point]) -> Vec<u64> {
    let mut by_slot: Vec<(usize, Vec<u64>)> = Vec::new();
    by_slot.resize_with(members.slot_capacity(), Default::default);
    let mut out = Vec::with_capacity(pts.len());
    for p in pts {
        let (next, keys) = &mut by_slot[p.slot() as usize];
        if keys.is_empty() {
            for_node_points(config, members, p.slot(), |h1, _| keys.push(h1));
            keys.sort_unstable();
        }
        out.push(keys[*next]);
        *next += 1;
    }
    out
}

/// Sorted points of one ring plus its prefix index.
#[derive(Clone, Debug)]
pub(crate) struct Points {
    pts: Vec<Point>,
    /// `index[b]` = first point whose position has prefix ≥ `b`; `index[1 << bits]` = len.
    index: Vec<u32>,
    bits: u32,
    node_count: usize,
    /// Positions found by insert/remove, bucket counts of a build (kept for reuse).
    scratch: Vec<u32>,
    /// One top-bits group of a build (kept for reuse).
    group: Vec<Point>,
    /// Group cursors of a build (kept for reuse).
    cursor: Vec<u32>,
}

impl Default for Points {
    fn default() -> Points {
        Points {
            pts: Vec::new(),
            index: alloc::vec![0; 3],
            bits: 1,
            node_count: 0,
            scratch: Vec::new(),
            group: Vec::new(),
            cursor: Vec::new(),
        }
    }
}

impl Points {
    #[inline]
    pub(crate) fn as_slice(&self) -> &[Point] {
        &self.pts
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.pts.len()
    }

    #[inline]
    pub(crate) fn node_count(&self) -> usize {
        self.node_count
    }

    #[inline]
    fn bucket(&self, key: u64) -> usize {
        // bits is in 1..=16, so the shift is in 48..=63.
        (key >> (64 - self.bits)) as usize
    }

    /// Heap bytes held (points, index, reusable staging buffers).
    pub(crate) fn memory_bytes(&self) -> usize {
        let (points, index, buffers) = self.memory_parts();
        points + index + buffers
    }

    /// Heap bytes of the points, of the prefix index and of the reusable staging buffers.
    pub(crate) fn memory_parts(&self) -> (usize, usize, usize) {
        (
            self.pts.capacity() * core::mem::size_of::<Point>(),
            self.index.capacity() * 4,
            self.scratch.capacity() * 4
                + self.group.capacity() * core::mem::size_of::<Point>()
                + self.cursor.capacity() * 4,
        )
    }

    /// Empties the ring, keeping allocations.
    pub(crate) fn clear(&mut self) {
        self.pts.clear();
        self.node_count = 0;
        self.reset_index(1);
    }

    fn reset_index(&mut self, bits: u32) {
        self.bits = bits;
        self.index.clear();
        self.index.resize((1usize << bits) + 1, 0);
    }

    /// First point whose stored position is ≥ `key` (`len` if none).
    ///
    /// Both fast paths count a fixed window's points below `key` without branching on the
    /// data: a data-dependent branch (an early exit, a binary search step) mispredicts on most
    /// lookups, since hashed keys land anywhere in their bucket, and a mispredict also stops
    /// the processor from overlapping this lookup's memory reads with the next one's. Each
    /// point is one `u64` comparison (see [`threshold`]).
    #[inline]
    pub(crate) fn lower_bound_key(&self, key: u64) -> usize {
        let below = threshold(key);
        let b = self.bucket(key);
        let lo = self.index[b] as usize;
        let hi = self.index[b + 1] as usize;
        let n = hi - lo;
        if n <= SCAN_WINDOW && lo + SCAN_WINDOW <= self.pts.len() {
            // Points past the bucket have a larger prefix, so they never count; the count is
            // the offset in the bucket.
            return lo + count_below(&self.pts[lo..lo + SCAN_WINDOW], below);
        }
        // The key's rank in the bucket by interpolation on the bits below the prefix (the
        // product is below 2^64: both factors are below 2^32).
        let frac = (key << self.bits) >> 32;
        let guess = lo + ((frac * n as u64) >> 32) as usize;
        let start = guess
            .saturating_sub(GUESS_WINDOW / 2)
            .min(hi.saturating_sub(GUESS_WINDOW))
            .max(lo);
        if start + GUESS_WINDOW <= self.pts.len() {
            let n = count_below(&self.pts[start..start + GUESS_WINDOW], below);
            // Exact unless the answer lies before the window (nothing in it is below `key`
            // but the bucket starts earlier) or after it (everything is below `key` and the
            // bucket goes on); points past the bucket never count, as above.
            let before = n == 0 && start > lo;
            let after = n == GUESS_WINDOW && start + GUESS_WINDOW < hi;
            if !before && !after {
                return start + n;
            }
        }
        self.bucket_lower_bound(lo, hi, below)
    }

    /// [`lower_bound_key`](Points::lower_bound_key) by a binary search of the bucket
    /// `lo..hi`, for the lookups its window misses.
    #[cold]
    #[inline(never)]
    fn bucket_lower_bound(&self, lo: usize, hi: usize, below: u64) -> usize {
        lo + self.pts[lo..hi].partition_point(|p| p.0 < below)
    }

    /// Full build from the members in `slots`, without a comparison sort: positions are
    /// hashed once each (fast mode computes them twice instead, a mix is cheaper than staging),
    /// distributed by their top 8 bits into the ring array (256 sequential write streams), then
    /// each such group — small enough for L1/L2 — is counting-sorted on the next bits into
    /// buckets of one or two points, finished by an insertion pass. The prefix index falls out
    /// of the group counts. No allocation once the buffers have grown.
    pub(crate) fn build(&mut self, config: &RingConfig, members: &Members, slots: &[u32]) {
        let len = slots
            .iter()
            .map(|&slot| node_point_count(config, members, slot))
            .sum();
        self.node_count = slots.len();
        let index_bits = ideal_bits(len);
        self.reset_index(index_bits);
        self.pts.clear();
        self.pts.resize(len, Point::default());
        let top_bits = if len <= SINGLE_PASS_MAX {
            index_bits
        } else {
            index_bits.min(TOP_BITS)
        };
        let top_shift = 64 - top_bits;
        let groups = 1usize << top_bits;
        // cursor[g]: end of group g after counting, its start after the reverse scatter.
        // A one-pass build counts straight into the prefix index (already zeroed).
        let single_pass = top_bits == index_bits && len <= SINGLE_PASS_MAX;
        let mut cursor = if single_pass {
            core::mem::take(&mut self.index)
        } else {
            let mut c = core::mem::take(&mut self.cursor);
            c.clear();
            c.resize((1 << top_bits) + 1, 0);
            c
        };

        // Positions are computed twice (count, then scatter) rather than staged: a fast point
        // is one mix and a compat point one prepared murmur3 round, both cheaper than holding
        // 8 more bytes per point between builds.
        for_each_point(config, members, slots, |k, _| {
            cursor[(k >> top_shift) as usize] += 1;
        });
        prefix_sums(&mut cursor[..groups]);
        let pts = &mut self.pts;
        for_each_point(config, members, slots, |k, slot| {
            let g = (k >> top_shift) as usize;
            cursor[g] -= 1;
            pts[cursor[g] as usize] = Point::new(k, slot);
        });
        cursor[groups] = to_u32(len);

        if single_pass {
            // One pass was enough: the cursors are the prefix index.
            self.index = cursor;
            if insertion_sort(&mut self.pts) {
                self.resolve_all_ties(config, members);
            }
            return;
        }

        // Second level, group by group.
        let sort_bits = sort_bits(len).max(index_bits);
        let local_bits = sort_bits - top_bits;
        let local_shift = 64 - sort_bits;
        let local_mask = (1u64 << local_bits) - 1;
        let sub_bits = index_bits - top_bits;
        let step_shift = sort_bits - index_bits;
        let local = |k: u64| ((k >> local_shift) & local_mask) as usize;
        let mut counts = core::mem::take(&mut self.scratch);
        counts.clear();
        counts.resize(1 << local_bits, 0);
        let mut group = core::mem::take(&mut self.group);
        let mut ties = false;
        for g in 0..groups {
            let (start, end) = (cursor[g] as usize, cursor[g + 1] as usize);
            group.clear();
            group.extend_from_slice(&self.pts[start..end]);
            counts.fill(0);
            for p in &group {
                counts[local(p.key())] += 1;
            }
            let mut acc = to_u32(start);
            for c in &mut counts {
                let n = *c;
                *c = acc;
                acc += n;
            }
            let entries = &mut self.index[g << sub_bits..(g + 1) << sub_bits];
            for (e, entry) in entries.iter_mut().enumerate() {
                *entry = counts[e << step_shift];
            }
            for &p in &group {
                let c = &mut counts[local(p.key())];
                self.pts[*c as usize] = p;
                *c += 1;
            }
            ties |= insertion_sort(&mut self.pts[start..end]);
        }
        self.index[1 << index_bits] = to_u32(len);
        self.scratch = counts;
        self.group = group;
        self.cursor = cursor;
        if ties {
            self.resolve_all_ties(config, members);
        }
    }

    /// Puts every run of equal stored positions into exact order.
    fn resolve_all_ties(&mut self, config: &RingConfig, members: &Members) {
        let pts = &mut self.pts;
        let mut start = 0;
        while start < pts.len() {
            let k = pts[start].key();
            let mut end = start + 1;
            while end < pts.len() && pts[end].key() == k {
                end += 1;
            }
            if end - start > 1 {
                resolve_run(config, members, &mut pts[start..end]);
            }
            start = end;
        }
    }

    /// Rebuilds the prefix index from the points (after a filter pass or when the ring size
    /// left the index's comfortable range).
    fn rebuild_index(&mut self) {
        let len = self.pts.len();
        self.reset_index(ideal_bits(len));
        let shift = 64 - self.bits;
        let mut b = 0usize;
        for (i, p) in self.pts.iter().enumerate() {
            let pb = (p.key() >> shift) as usize;
            while b <= pb {
                self.index[b] = to_u32(i);
                b += 1;
            }
        }
        let n = self.index.len();
        self.index[b..n].fill(to_u32(len));
    }

    /// Whether the index should be resized for `len` points (hysteresis: only when the ideal
    /// size is two steps away, so a ring hovering at a power of two does not rebuild).
    fn index_out_of_range(&self, len: usize) -> bool {
        self.bits.abs_diff(ideal_bits(len)) >= 2
    }

    /// Adds `delta` points (signed) below each prefix, given the sorted positions of the
    /// points that were added or removed.
    fn shift_index(&mut self, keys: &[u64], add: bool) {
        let nb = 1usize << self.bits;
        let mut t = 0;
        while t < keys.len() {
            let b = self.bucket(keys[t]);
            let mut t2 = t + 1;
            while t2 < keys.len() && self.bucket(keys[t2]) == b {
                t2 += 1;
            }
            let next_b = if t2 < keys.len() {
                self.bucket(keys[t2])
            } else {
                nb
            };
            let d = to_u32(t2);
            let range = &mut self.index[b + 1..=next_b];
            if add {
                range.iter_mut().for_each(|x| *x += d);
            } else {
                range.iter_mut().for_each(|x| *x -= d);
            }
            t = t2;
        }
    }

    /// Merges one node's sorted positions `keys` (owned by `slot`) into the ring in place: one
    /// backwards pass of block moves, then the index is shifted (no re-sort, no re-hash).
    pub(crate) fn insert_node(
        &mut self,
        config: &RingConfig,
        members: &Members,
        slot: u32,
        keys: &[u64],
    ) {
        let old_len = self.pts.len();
        let m = keys.len();
        let mut pos = core::mem::take(&mut self.scratch);
        pos.clear();
        pos.extend(
            keys.iter()
                .map(|&k| to_u32(self.lower_bound_key(k & STORED))),
        );
        if old_len + m > self.pts.capacity() {
            // Grow by an eighth rather than doubling: a ring grown node by node keeps at most
            // an eighth of its points spare (doubling left 64 % spare at 10,000 nodes), and
            // the copy is amortised over the len / 8 points that fill the room.
            self.pts.reserve_exact(m.max(old_len / 8));
        }
        self.pts.resize(old_len + m, Point::default());
        let mut end = old_len;
        for t in (0..m).rev() {
            let p = pos[t] as usize;
            self.pts.copy_within(p..end, p + t + 1);
            self.pts[p + t] = Point::new(keys[t], slot);
            end = p;
        }
        self.node_count += 1;
        if self.index_out_of_range(self.pts.len()) {
            self.rebuild_index();
        } else {
            self.shift_index(keys, true);
        }
        // New points went before any equal stored positions; put such runs in exact order.
        let mut done_until = 0;
        for (t, &p) in pos.iter().enumerate() {
            let f = p as usize + t;
            if f < done_until {
                continue;
            }
            let k = keys[t] & STORED;
            let mut start = f;
            while start > 0 && self.pts[start - 1].key() == k {
                start -= 1;
            }
            let mut end = f + 1;
            while end < self.pts.len() && self.pts[end].key() == k {
                end += 1;
            }
            if end - start > 1 {
                resolve_run(config, members, &mut self.pts[start..end]);
            }
            done_until = end;
        }
        self.scratch = pos;
    }

    /// Removes the points of `slot` (a node of this ring), whose sorted positions are `keys`,
    /// in place: one forward pass of block moves, then the index is shifted.
    pub(crate) fn remove_node(&mut self, slot: u32, keys: &[u64]) {
        let mut pos = core::mem::take(&mut self.scratch);
        pos.clear();
        let mut t = 0;
        while t < keys.len() {
            let k = keys[t] & STORED;
            while t < keys.len() && keys[t] & STORED == k {
                t += 1;
            }
            let mut j = self.lower_bound_key(k);
            while j < self.pts.len() && self.pts[j].key() == k {
                if self.pts[j].slot() == slot {
                    pos.push(to_u32(j));
                }
                j += 1;
            }
        }
        debug_assert_eq!(pos.len(), keys.len(), "a member owns exactly its points");
        self.node_count -= 1;
        if !pos.is_empty() {
            let len = self.pts.len();
            let mut write = pos[0] as usize;
            for (t, &p) in pos.iter().enumerate() {
                let from = p as usize + 1;
                let to = pos.get(t + 1).map_or(len, |&q| q as usize);
                self.pts.copy_within(from..to, write);
                write += to - from;
            }
            self.pts.truncate(write);
            if self.index_out_of_range(self.pts.len()) {
                self.rebuild_index();
            } else {
                self.shift_index(keys, false);
            }
        }
        self.scratch = pos;
    }

    /// Rebuilds this ring as the points of `src` whose slot satisfies `keep` (a sub-ring of
    /// `node_count` members): one filter pass, no hashing, no sorting.
    pub(crate) fn filter_from(
        &mut self,
        src: &Points,
        node_count: usize,
        keep: impl Fn(u32) -> bool,
    ) {
        self.pts.clear();
        self.pts
            .extend(src.pts.iter().copied().filter(|p| keep(p.slot())));
        self.node_count = node_count;
        self.rebuild_index();
    }
}

/// A point's stored position is below `key` exactly when its packed word is below this: `key`
/// rounded up to a whole stored half (the slot fills the low 32 bits), or `u64::MAX` past the
/// last one (no slot is `u32::MAX`: a ring holds at most `u32::MAX` members).
#[inline]
fn threshold(key: u64) -> u64 {
    key.checked_add(!STORED).map_or(u64::MAX, |k| k & STORED)
}

/// Number of `window`'s points whose packed word is below `below`, counted without branches.
#[inline]
fn count_below(window: &[Point], below: u64) -> usize {
    window.iter().map(|p| usize::from(p.0 < below)).sum()
}

/// Calls `f(position, slot)` for every point of the members in `slots`, in member order.
#[inline]
fn for_each_point(
    config: &RingConfig,
    members: &Members,
    slots: &[u32],
    mut f: impl FnMut(u64, u32),
) {
    for &slot in slots {
        for_node_points(config, members, slot, |h1, _| f(h1, slot));
    }
}

/// Inclusive prefix sums: `counts[b]` becomes the end of bucket `b`.
fn prefix_sums(counts: &mut [u32]) {
    let mut acc = 0u32;
    for c in counts {
        acc += *c;
        *c = acc;
    }
}

/// Point counts and indexes fit `u32`: `RingError::Capacity` rejects rings past `u32::MAX`
/// points.
#[inline]
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).expect("ring size is bounded by RingError::Capacity")
}
