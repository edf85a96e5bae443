//! Sorted point storage of one ring: 4-byte points, a prefix index, and the passes that build
//! and change them (bucket build, in-place merge of one node, in-place removal, filter pass,
//! re-encoding when the index is resized).
//!
//! A ring orders points by the top 32 bits of their 64-bit positions (the *stored* position),
//! then, for the few that are equal, exactly. The prefix index maps the top `bits` bits of a
//! position to the first point at or after that prefix, and a lookup reaches a point only
//! through its prefix's bucket, so a point need not repeat the prefix: it is one `u32`, the
//! stored position's 32 − `bits` lower bits shifted over a `bits`-wide member slot field
//! ([`Layout`]). Within a bucket points compare as plain `u32`s (the slot field only orders
//! points of equal stored position). That halves a `u64` packing: 80 points per node are
//! 320 bytes, and a ring of 10,000 nodes is 3.2 MB of cache footprint instead of 6.4 MB.
//!
//! `bits` follows the point count ([`ideal_bits`]: one or two points per prefix below 2^14
//! points, 32 to 64 from there, never more than 2^16 entries), and is at least the bits of the
//! ring's largest slot, so the slot fits: the index is then 4 bytes per member slot rounded up
//! to a power of two (a ring of one point per node, a small filter ring of a large set). A
//! ring whose size leaves the index's range, or whose slot no longer fits, re-encodes its
//! points in place ([`Points::relayout`]); the stored position is 32 bits in every layout, so
//! ring order never depends on it.
//!
//! Ring order is exact, by full position: by `h1` (fast mode: the position), then in the
//! libatapp modes by `h2`, then by node id. Points whose stored positions are equal — about
//! `points² / 2^33` pairs per ring, 75 at 800 000 points — are put in that order by
//! recomputing the full positions of just those points' nodes ([`resolve_run`]); a lookup
//! whose key's top 32 bits equal a point's (about `points / 2^32` of lookups) ranks the key in
//! that run the same way ([`run_rank`]), and [`full_positions`] recomputes every position for
//! the diagnostics that list them.
//!
//! A full build is a counting sort by prefix finished by insertion ([`Points::build`]; rings
//! past 2^17 points stage 8 bytes per point for the build's duration, smaller ones rebuild
//! without allocating). Incremental changes shift the index by the number of points added or
//! removed below each prefix and work in place (block moves), so no second copy of the ring is
//! ever held.

use alloc::vec::Vec;

use super::{RingConfig, members::Members};
use crate::{
    hash::{HashMode, Murmur3Prepared, compat_point_prepared, compat_sources, fast_point},
    ids::NodeId,
};

/// Largest prefix index sized for the point count: 2^16 entries (256 KiB), which stays in L2
/// (only a ring whose slots need more bits has a larger one).
const MAX_INDEX_BITS: u32 = 16;

/// Points a lookup counts branch-free from the start of a small bucket: rings below
/// [`DENSE_LOG`] hold one or two points per prefix on average, four or fewer in about 95 % of
/// lookups. (A second window of 8 for buckets of five to eight points measured slower: its
/// branch costs more than the binary searches it saves.)
const SCAN_WINDOW: usize = 4;

/// Points a lookup counts branch-free around its interpolated rank in a large bucket. From
/// 2^14 points the index is sized for 32 to 64 points per prefix (see [`ideal_bits`]: 49 at
/// 10,000 nodes). Positions are uniform within a bucket, so the key's rank deviates from its
/// interpolation by at most `sqrt(points) / 2` (3.5 at 49 points): a window of 16 holds the
/// answer in about 98 % of lookups, the rest fall back to a binary search of the bucket.
const GUESS_WINDOW: usize = 16;

/// log2 of the point count from which the index is sized for 32 to 64 points per prefix
/// (16,384 points: 205 nodes of 80).
const DENSE_LOG: u32 = 14;

/// Index bits suited to `len` points. Below 2^14 points, about one to two points per prefix
/// (an index of at most 32 KiB, in L1 or L2 with the points): most lookups count the first
/// four points of their bucket (at 100 nodes 32 to 64 per prefix measured 16.4 ns against
/// 12.2 in one `ring-report` run).
/// From there the index is kept small, 32 to 64 points per prefix, and a lookup interpolates
/// in its bucket. At 800,000 points (in L3) that measured 16.5–17 ns against 23–25 with one
/// to two points per prefix (a 256 KiB index): a lookup's time is its two dependent reads and
/// the small index stays in the faster caches. At 80,000 points (1,000 nodes) one to two
/// points per prefix would cost an index of 3.3 bytes per point — 262 bytes per known node,
/// as much as the points themselves — against 0.1 with 32 to 64, for about 1 ns more per
/// lookup (17.4 against 18.4 ns in one `ring-report` run). Capped at 2^16.
fn ideal_bits(len: usize) -> u32 {
    let log = floor_log2(len);
    if log < DENSE_LOG {
        log.clamp(1, MAX_INDEX_BITS)
    } else {
        (log - 5).min(MAX_INDEX_BITS)
    }
}

/// Bits that hold every slot below `capacity` (0 for a table of at most one slot; at most 32,
/// since slots are `u32`).
fn slot_bits_for(capacity: usize) -> u32 {
    usize::BITS - capacity.saturating_sub(1).leading_zeros()
}

/// The part of a position a ring orders points by before recomputing ties: its top 32 bits
/// (the low 32 bits of this mask are 0).
pub(crate) const STORED: u64 = !0xffff_ffff;

/// How a ring's points are encoded: `bits` of prefix index. A point is the stored position's
/// 32 − `bits` bits below the prefix, shifted over a `bits`-wide slot field; the prefix is the
/// point's bucket. So `bits` must be at least the bits of every slot in the ring: a ring whose
/// slots outgrow its index gets a larger index (4 bytes per slot, rounded up to a power of two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    bits: u32,
}

impl Layout {
    /// The prefix bucket of a position.
    #[inline]
    fn bucket(self, key: u64) -> usize {
        // bits is in 1..=32, so the shift is in 32..=63.
        (key >> (64 - self.bits)) as usize
    }

    /// The point of position `key` with slot 0: the stored position's bits below the prefix,
    /// shifted over the slot field. Within `key`'s bucket, a point's stored position is below
    /// `key`'s exactly when the point is below this value.
    #[inline]
    fn high(self, key: u64) -> u32 {
        // The truncation drops the prefix, which the bucket holds.
        ((key >> 32) << self.bits) as u32
    }

    #[inline]
    fn encode(self, key: u64, slot: u32) -> u32 {
        self.high(key) | slot
    }

    #[inline]
    fn slot_mask(self) -> u32 {
        // bits <= 32, so the mask fits `u32`.
        ((1u64 << self.bits) - 1) as u32
    }

    /// The member slot of a point.
    #[inline]
    pub(crate) fn slot(self, point: u32) -> u32 {
        point & self.slot_mask()
    }

    /// A point's position part (its slot field cleared).
    #[inline]
    fn high_of(self, point: u32) -> u32 {
        point & !self.slot_mask()
    }

    /// The stored position of a point in `bucket`.
    #[inline]
    fn decode(self, bucket: usize, point: u32) -> u64 {
        (((bucket as u64) << (32 - self.bits)) | (u64::from(point) >> self.bits)) << 32
    }

    /// Bits of the prefix index, which are also the width of the slot field.
    #[cfg(test)]
    pub(crate) fn bits(self) -> u32 {
        self.bits
    }

    /// Whether `slot` fits the slot field.
    fn fits(self, slot: u32) -> bool {
        u64::from(slot) >> self.bits == 0
    }
}

/// A ring of at most this many points per point of the node removed drops the node by one
/// scan of every point instead of a search per point: a scanned point costs a few
/// instructions, a searched one (lookup, block move) over a hundred.
const SCAN_REMOVE_PER_POINT: usize = 32;

/// Bits of the first distribution pass of a large ring's build (256 groups).
const TOP_BITS: u32 = 8;

/// Rings up to this many points are built in one pass (the array fits in L2, so random
/// writes are cheap).
const SINGLE_PASS_MAX: usize = 1 << 17;

/// Bits a large build sorts on before its insertion pass: one to two points per bucket.
fn sort_bits(len: usize) -> u32 {
    floor_log2(len).clamp(1, 24)
}

/// ⌊log2 `len`⌋, 1 for fewer than two points.
fn floor_log2(len: usize) -> u32 {
    usize::BITS - 1 - len.max(2).leading_zeros()
}

/// Sorts one bucket's points (two or more); returns whether two of them have
/// equal stored positions.
#[inline]
fn sort_bucket(pts: &mut [u32], layout: Layout) -> bool {
    if let [a, b] = pts {
        let (lo, hi) = ((*a).min(*b), (*a).max(*b));
        (*a, *b) = (lo, hi);
        return layout.high_of(lo) == layout.high_of(hi);
    }
    if pts.len() > SMALL_BUCKET {
        pts.sort_unstable();
    } else {
        insertion_sort(pts);
    }
    pts.windows(2)
        .any(|w| layout.high_of(w[0]) == layout.high_of(w[1]))
}

/// Buckets up to this many points are sorted by insertion, larger ones (a dense index's) by
/// the standard library's unstable sort.
const SMALL_BUCKET: usize = 8;

/// Sorts `pts` by insertion.
fn insertion_sort(pts: &mut [u32]) {
    for i in 1..pts.len() {
        let p = pts[i];
        let mut j = i;
        while j > 0 && pts[j - 1] > p {
            pts[j] = pts[j - 1];
            j -= 1;
        }
        pts[j] = p;
    }
}

/// Insertion sort of staged points (stored position above slot) by stored position (stable);
/// returns whether two stored positions are equal.
fn insertion_sort_staged(pts: &mut [u64]) -> bool {
    let mut ties = false;
    for i in 1..pts.len() {
        let p = pts[i];
        let k = p & STORED;
        let prev = pts[i - 1] & STORED;
        if k < prev {
            let mut j = i;
            while j > 0 && pts[j - 1] & STORED > k {
                pts[j] = pts[j - 1];
                j -= 1;
            }
            pts[j] = p;
            ties |= j > 0 && pts[j - 1] & STORED == k;
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

/// A run of points sharing one stored position: the position (`key`, masked to [`STORED`])
/// and the layout its points are encoded with.
#[derive(Clone, Copy)]
pub(crate) struct Run {
    key: u64,
    layout: Layout,
}

impl Run {
    /// Full positions `(h1, h2)` of the points of `slot` in this run (`h2` is 0 in fast
    /// mode), recomputed from the node.
    fn for_points(
        self,
        config: &RingConfig,
        members: &Members,
        slot: u32,
        mut f: impl FnMut(u64, u64),
    ) {
        for_node_points(config, members, slot, |h1, h2| {
            if h1 & STORED == self.key {
                f(h1, h2);
            }
        });
    }

    /// Each distinct slot of the run's points once (first occurrence), without allocating.
    fn slots(self, run: &[u32]) -> impl Iterator<Item = u32> + '_ {
        let layout = self.layout;
        run.iter()
            .enumerate()
            .filter(move |&(i, &p)| !run[..i].iter().any(|&q| layout.slot(q) == layout.slot(p)))
            .map(move |(_, &p)| layout.slot(p))
    }
}

/// How many points of `run` (sharing one stored position) lie before a position for which
/// `before(h1, h2)` holds (the run's exact order is by full position): recomputes the points of
/// the run's nodes, no allocation. Reached when a looked-up key's stored bits equal a point's.
pub(crate) fn run_rank(
    config: &RingConfig,
    members: &Members,
    run: Run,
    pts: &[u32],
    before: impl Fn(u64, u64) -> bool,
) -> usize {
    let mut rank = 0;
    for slot in run.slots(pts) {
        run.for_points(config, members, slot, |h1, h2| {
            rank += usize::from(before(h1, h2));
        });
    }
    rank
}

/// Puts `pts`, a run of points with equal stored positions, into exact order: by full position
/// (`h1`, then `h2` in compat mode), then node id.
fn resolve_run(config: &RingConfig, members: &Members, run: Run, pts: &mut [u32]) {
    let layout = run.layout;
    let first = layout.slot(pts[0]);
    if pts.iter().all(|&p| layout.slot(p) == first) {
        return; // identical entries: any order is the same ring
    }
    let mut order: Vec<(u64, u64, NodeId, u32)> = Vec::with_capacity(pts.len());
    for slot in run.slots(pts) {
        let id = members.id(slot);
        run.for_points(config, members, slot, |h1, h2| {
            order.push((h1, h2, id, slot))
        });
    }
    order.sort_unstable();
    debug_assert_eq!(
        order.len(),
        pts.len(),
        "every point of the run is recomputed"
    );
    for (p, &(_, _, _, slot)) in pts.iter_mut().zip(&order) {
        *p = layout.encode(run.key, slot);
    }
}

/// The full 64-bit position of every point of `pts`, in ring order (`h1` in compat mode),
/// recomputed from the nodes: each node's points appear in the ring in ascending order, so
/// its sorted positions are handed out one by one. O(points) hashing; for diagnostics.
pub(crate) fn full_positions(
    config: &RingConfig,
    members: &Members,
    layout: Layout,
    pts: &[u32],
) -> Vec<u64> {
    let mut by_slot: Vec<(usize, Vec<u64>)> = Vec::new();
    by_slot.resize_with(members.slot_capacity(), Default::default);
    let mut out = Vec::with_capacity(pts.len());
    for &p in pts {
        let slot = layout.slot(p);
        let (next, keys) = &mut by_slot[slot as usize];
        if keys.is_empty() {
            for_node_points(config, members, slot, |h1, _| keys.push(h1));
            keys.sort_unstable();
        }
        out.push(keys[*next]);
        *next += 1;
    }
    out
}

/// Writes a prefix index while the points are visited in ring order.
struct IndexWriter {
    index: Vec<u32>,
    next: usize,
}

impl IndexWriter {
    fn new(bits: u32) -> IndexWriter {
        IndexWriter {
            index: alloc::vec![0; (1usize << bits) + 1],
            next: 0,
        }
    }

    /// Point `i` lies in `bucket`: every prefix up to it starts at or after `i`.
    #[inline]
    fn point(&mut self, i: usize, bucket: usize) {
        while self.next <= bucket {
            self.index[self.next] = to_u32(i);
            self.next += 1;
        }
    }

    fn finish(mut self, len: usize) -> Vec<u32> {
        let next = self.next;
        self.index[next..].fill(to_u32(len));
        self.index
    }
}

/// Sorted points of one ring plus its prefix index.
#[derive(Clone, Debug)]
pub(crate) struct Points {
    pts: Vec<u32>,
    /// `index[b]` = first point whose position has prefix ≥ `b`; `index[1 << bits]` = len.
    index: Vec<u32>,
    layout: Layout,
    /// Bits of the largest slot the ring has held since its last build: the floor of the
    /// layout's bits.
    slot_bits: u32,
    node_count: usize,
    /// Positions found by insert/remove (kept for reuse).
    scratch: Vec<u32>,
}

impl Default for Points {
    fn default() -> Points {
        Points {
            pts: Vec::new(),
            index: alloc::vec![0; 3],
            layout: Layout { bits: 1 },
            slot_bits: 0,
            node_count: 0,
            scratch: Vec::new(),
        }
    }
}

impl Points {
    /// The encoded points in ring order (decode slots with [`layout`](Points::layout)).
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u32] {
        &self.pts
    }

    #[inline]
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// The member slot of point `i`.
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> u32 {
        self.layout.slot(self.pts[i])
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.pts.len()
    }

    #[inline]
    pub(crate) fn node_count(&self) -> usize {
        self.node_count
    }

    /// Every point as `(stored position, slot)` in ring order (the stored position is the
    /// position's top 32 bits).
    #[cfg(test)]
    pub(crate) fn decoded(&self) -> Vec<(u64, u32)> {
        let layout = self.layout;
        let mut out = Vec::with_capacity(self.pts.len());
        for b in 0..1usize << layout.bits {
            for &p in &self.pts[self.index[b] as usize..self.index[b + 1] as usize] {
                out.push((layout.decode(b, p), layout.slot(p)));
            }
        }
        out
    }

    /// Heap bytes held (points, index, reusable staging buffer).
    pub(crate) fn memory_bytes(&self) -> usize {
        let (points, index, buffers) = self.memory_parts();
        points + index + buffers
    }

    /// Heap bytes of the points, of the prefix index and of the reusable staging buffer.
    pub(crate) fn memory_parts(&self) -> (usize, usize, usize) {
        (
            self.pts.capacity() * 4,
            self.index.capacity() * 4,
            self.scratch.capacity() * 4,
        )
    }

    /// Empties the ring, keeping allocations.
    pub(crate) fn clear(&mut self) {
        self.pts.clear();
        self.node_count = 0;
        self.layout = Layout { bits: 1 };
        self.slot_bits = 0;
        self.reset_index();
    }

    /// A zeroed index for the layout's bits.
    fn reset_index(&mut self) {
        self.index.clear();
        self.index.resize((1usize << self.layout.bits) + 1, 0);
    }

    /// First point whose stored position is ≥ `key`'s (`len` if none).
    #[inline]
    pub(crate) fn lower_bound_key(&self, key: u64) -> usize {
        self.search(key).0
    }

    /// [`lower_bound_key`](Points::lower_bound_key), and whether the point found may have the
    /// same stored position as `key` (the start of a run the key must be ranked in; exactly
    /// when [`run_from`](Points::run_from) finds a run there).
    ///
    /// Both fast paths count a fixed window's points below `key` without branching on the
    /// data: a data-dependent branch (an early exit, a binary search step) mispredicts on most
    /// lookups, since hashed keys land anywhere in their bucket, and a mispredict also stops
    /// the processor from overlapping this lookup's memory reads with the next one's. Points
    /// past the bucket do not hold its prefix, so a window that reaches past the bucket counts
    /// only its first `n` points.
    #[inline]
    pub(crate) fn search(&self, key: u64) -> (usize, bool) {
        let layout = self.layout;
        let below = layout.high(key);
        let b = layout.bucket(key);
        let lo = self.index[b] as usize;
        let hi = self.index[b + 1] as usize;
        let i = self.search_bucket(key, below, lo, hi);
        // The point found was just read. It may lie past the bucket, where an equal value is
        // no tie (about one lookup in 2^(32 - bits)): [`run_from`](Points::run_from) finds no
        // run there, so only the rare case pays for the exact test.
        let point = self.pts.get(i).copied().unwrap_or(0);
        (i, layout.high_of(point) == below)
    }

    /// The first point of the bucket `lo..hi` not below `below` (`hi` if none).
    #[inline]
    fn search_bucket(&self, key: u64, below: u32, lo: usize, hi: usize) -> usize {
        let n = hi - lo;
        if n <= SCAN_WINDOW && lo + SCAN_WINDOW <= self.pts.len() {
            return lo + count_below(&self.pts[lo..lo + SCAN_WINDOW], below, n);
        }
        // The key's rank in the bucket by interpolation on the bits below the prefix (the
        // product is below 2^64: both factors are below 2^32).
        let frac = (key << self.layout.bits) >> 32;
        let guess = lo + ((frac * n as u64) >> 32) as usize;
        let start = guess
            .saturating_sub(GUESS_WINDOW / 2)
            .min(hi.saturating_sub(GUESS_WINDOW))
            .max(lo);
        if start + GUESS_WINDOW <= hi {
            let n = count_below(&self.pts[start..start + GUESS_WINDOW], below, GUESS_WINDOW);
            // Exact unless the answer lies before the window (nothing in it is below `key`
            // but the bucket starts earlier) or after it (everything is below `key` and the
            // bucket goes on).
            let before = n == 0 && start > lo;
            let after = n == GUESS_WINDOW && start + GUESS_WINDOW < hi;
            if !before && !after {
                return start + n;
            }
        }
        self.bucket_lower_bound(lo, hi, below)
    }

    /// [`search_bucket`](Points::search_bucket) by a binary search, for the lookups its
    /// windows miss.
    #[cold]
    #[inline(never)]
    fn bucket_lower_bound(&self, lo: usize, hi: usize, below: u32) -> usize {
        lo + self.pts[lo..hi].partition_point(|&p| p < below)
    }

    /// The run of points whose stored position equals `key`'s, from `i` (where it starts) to
    /// the returned end (`i` if the point at `i` is not such a point).
    pub(crate) fn run_from(&self, i: usize, key: u64) -> (Run, usize) {
        let layout = self.layout;
        let hi = self.index[layout.bucket(key) + 1] as usize;
        let high = layout.high(key);
        let mut end = i;
        while end < hi && layout.high_of(self.pts[end]) == high {
            end += 1;
        }
        let run = Run {
            key: key & STORED,
            layout,
        };
        (run, end)
    }

    /// Full build from the members in `slots`, without a comparison sort of the whole ring.
    /// Positions are hashed twice (fast mode's is one mix and a compat one a prepared murmur3
    /// round, both cheaper than keeping 8 more bytes per point between builds): once to count,
    /// once to scatter.
    ///
    /// - Up to 2^17 points (the array fits in L2, so random writes are cheap) they are counted
    ///   per prefix straight into the index and scattered, encoded, into their buckets; each
    ///   bucket is then sorted on its own (one or two points by insertion; 32 to 64, from
    ///   2^14 points, by the standard unstable sort).
    /// - Larger rings would scatter into thousands of buckets far apart in L3, so they are
    ///   distributed by their top 8 bits into a staging array of stored positions (256
    ///   sequential write streams), then each such group — small enough for L1/L2 — is
    ///   counting-sorted on the next bits, finished by insertion and encoded into place. The
    ///   staging array (8 bytes per point) lives only during the build.
    ///
    /// Small rings allocate nothing once the buffers have grown.
    pub(crate) fn build(&mut self, config: &RingConfig, members: &Members, slots: &[u32]) {
        let len = slots
            .iter()
            .map(|&slot| node_point_count(config, members, slot))
            .sum();
        self.node_count = slots.len();
        self.slot_bits = slot_bits_for(members.slot_capacity());
        self.layout = Layout {
            bits: ideal_bits(len).max(self.slot_bits),
        };
        self.reset_index();
        self.pts.clear();
        self.pts.resize(len, 0);
        if len <= SINGLE_PASS_MAX || self.layout.bits < TOP_BITS {
            self.build_in_place(config, members, slots);
        } else {
            self.build_staged(config, members, slots);
        }
    }

    /// The one-pass build of a small ring.
    fn build_in_place(&mut self, config: &RingConfig, members: &Members, slots: &[u32]) {
        let layout = self.layout;
        let len = self.pts.len();
        let buckets = 1usize << layout.bits;
        let index = &mut self.index;
        for_each_point(config, members, slots, |k, _| {
            index[layout.bucket(k)] += 1;
        });
        prefix_sums(&mut index[..buckets]);
        let pts = &mut self.pts;
        // Scattering backwards leaves each entry at its bucket's start.
        for_each_point(config, members, slots, |k, slot| {
            let e = &mut index[layout.bucket(k)];
            *e -= 1;
            pts[*e as usize] = layout.encode(k, slot);
        });
        index[buckets] = to_u32(len);
        // Each bucket sorted on its own (one or two points, or 32 to 64 with a dense index).
        for b in 0..buckets {
            let (lo, hi) = (self.index[b] as usize, self.index[b + 1] as usize);
            if hi - lo >= 2 && sort_bucket(&mut self.pts[lo..hi], layout) {
                self.resolve_ties(config, members, b..b + 1);
            }
        }
    }

    /// The two-level build of a large ring.
    fn build_staged(&mut self, config: &RingConfig, members: &Members, slots: &[u32]) {
        let layout = self.layout;
        let len = self.pts.len();
        let top_shift = 64 - TOP_BITS;
        let groups = 1usize << TOP_BITS;
        let mut cursor = [0u32; (1 << TOP_BITS) + 1];
        for_each_point(config, members, slots, |k, _| {
            cursor[(k >> top_shift) as usize] += 1;
        });
        prefix_sums(&mut cursor[..groups]);
        let mut staged = alloc::vec![0u64; len];
        // Backwards, so each cursor ends at its group's start.
        for_each_point(config, members, slots, |k, slot| {
            let g = (k >> top_shift) as usize;
            cursor[g] -= 1;
            staged[cursor[g] as usize] = (k & STORED) | u64::from(slot);
        });
        cursor[groups] = to_u32(len);

        let sort_bits = sort_bits(len).max(layout.bits);
        let local_bits = sort_bits - TOP_BITS;
        let local_shift = 64 - sort_bits;
        let local_mask = (1u64 << local_bits) - 1;
        let sub_bits = layout.bits - TOP_BITS;
        let step_shift = sort_bits - layout.bits;
        let local = |k: u64| ((k >> local_shift) & local_mask) as usize;
        let mut counts = core::mem::take(&mut self.scratch);
        counts.clear();
        counts.resize(1 << local_bits, 0);
        let mut group: Vec<u64> = Vec::new();
        for g in 0..groups {
            let (start, end) = (cursor[g] as usize, cursor[g + 1] as usize);
            let staged = &staged[start..end];
            counts.fill(0);
            for &p in staged {
                counts[local(p)] += 1;
            }
            let mut acc = 0;
            for c in &mut counts {
                let n = *c;
                *c = acc;
                acc += n;
            }
            let entries = &mut self.index[g << sub_bits..(g + 1) << sub_bits];
            for (e, entry) in entries.iter_mut().enumerate() {
                *entry = to_u32(start) + counts[e << step_shift];
            }
            group.clear();
            group.resize(staged.len(), 0);
            for &p in staged {
                let c = &mut counts[local(p)];
                group[*c as usize] = p;
                *c += 1;
            }
            let ties = insertion_sort_staged(&mut group);
            for (out, &p) in self.pts[start..end].iter_mut().zip(&group) {
                // The low half of a staged point is its slot.
                *out = layout.encode(p, p as u32);
            }
            if ties {
                self.index[(g + 1) << sub_bits] = to_u32(end);
                self.resolve_ties(config, members, g << sub_bits..(g + 1) << sub_bits);
            }
        }
        self.index[1 << layout.bits] = to_u32(len);
        self.scratch = counts;
    }

    /// Puts every run of equal stored positions in the buckets `buckets` into exact order.
    fn resolve_ties(
        &mut self,
        config: &RingConfig,
        members: &Members,
        buckets: core::ops::Range<usize>,
    ) {
        let layout = self.layout;
        for b in buckets {
            let (lo, hi) = (self.index[b] as usize, self.index[b + 1] as usize);
            let mut start = lo;
            while start < hi {
                let high = layout.high_of(self.pts[start]);
                let mut end = start + 1;
                while end < hi && layout.high_of(self.pts[end]) == high {
                    end += 1;
                }
                if end - start > 1 {
                    let run = Run {
                        key: layout.decode(b, self.pts[start]),
                        layout,
                    };
                    resolve_run(config, members, run, &mut self.pts[start..end]);
                }
                start = end;
            }
        }
    }

    /// Re-encodes every point in place for `layout` and rebuilds the index (the index was
    /// resized, or a slot outgrew the slot field). Ring order does not change: the stored
    /// position is 32 bits in every layout, so each point keeps its place.
    fn relayout(&mut self, layout: Layout) {
        let old = self.layout;
        let mut index = IndexWriter::new(layout.bits);
        for b in 0..1usize << old.bits {
            for i in self.index[b] as usize..self.index[b + 1] as usize {
                let p = self.pts[i];
                let key = old.decode(b, p);
                self.pts[i] = layout.encode(key, old.slot(p));
                index.point(i, layout.bucket(key));
            }
        }
        self.index = index.finish(self.pts.len());
        self.layout = layout;
    }

    /// Resizes the index when the ring size left its comfortable range (hysteresis: only when
    /// the ideal size is two steps away, so a ring hovering at a power of two does not
    /// re-encode; between 2^13 and 2^15 points either the sparse or the dense index is kept,
    /// so a ring hovering at the switch does not either).
    fn fit_index(&mut self) {
        let (len, bits, floor) = (self.pts.len(), self.layout.bits, self.slot_bits);
        let near = |points: usize| bits.abs_diff(ideal_bits(points).max(floor)) <= 1;
        let at_switch = (1 << (DENSE_LOG - 1)..1 << (DENSE_LOG + 1)).contains(&len);
        let keep = near(len) || at_switch && (near(1 << (DENSE_LOG - 1)) || near(1 << DENSE_LOG));
        if !keep {
            self.relayout(Layout {
                bits: ideal_bits(len).max(floor),
            });
        }
    }

    /// Adds or removes, below each prefix, the number of points added or removed, given their
    /// sorted positions.
    fn shift_index(&mut self, keys: &[u64], add: bool) {
        let layout = self.layout;
        let nb = 1usize << layout.bits;
        let mut t = 0;
        while t < keys.len() {
            let b = layout.bucket(keys[t]);
            let mut t2 = t + 1;
            while t2 < keys.len() && layout.bucket(keys[t2]) == b {
                t2 += 1;
            }
            let next_b = if t2 < keys.len() {
                layout.bucket(keys[t2])
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
        self.slot_bits = self.slot_bits.max(slot_bits_for(slot as usize + 1));
        if !self.layout.fits(slot) {
            // Room for the table's slots, so the next members do not re-encode again.
            let capacity = members.slot_capacity().max(slot as usize + 1);
            self.relayout(Layout {
                bits: slot_bits_for(capacity),
            });
        }
        let layout = self.layout;
        let old_len = self.pts.len();
        let m = keys.len();
        let mut pos = core::mem::take(&mut self.scratch);
        pos.clear();
        pos.extend(keys.iter().map(|&k| to_u32(self.lower_bound_key(k))));
        if old_len + m > self.pts.capacity() {
            // Grow by an eighth rather than doubling: a ring grown node by node keeps at most
            // an eighth of its points spare (doubling left 64 % spare at 10,000 nodes), and
            // the copy is amortised over the len / 8 points that fill the room.
            self.pts.reserve_exact(m.max(old_len / 8));
        }
        self.pts.resize(old_len + m, 0);
        let mut end = old_len;
        for t in (0..m).rev() {
            let p = pos[t] as usize;
            self.pts.copy_within(p..end, p + t + 1);
            self.pts[p + t] = layout.encode(keys[t], slot);
            end = p;
        }
        self.node_count += 1;
        self.shift_index(keys, true);
        // New points went before any equal stored positions; put such runs in exact order
        // (before any re-encoding, which needs the ring in exact order).
        let mut done_until = 0;
        for (t, &p) in pos.iter().enumerate() {
            let f = p as usize + t;
            if f < done_until {
                continue;
            }
            let b = layout.bucket(keys[t]);
            let lo = self.index[b] as usize;
            let high = layout.high(keys[t]);
            let mut start = f;
            while start > lo && layout.high_of(self.pts[start - 1]) == high {
                start -= 1;
            }
            let (run, end) = self.run_from(start, keys[t]);
            if end - start > 1 {
                resolve_run(config, members, run, &mut self.pts[start..end]);
            }
            done_until = end;
        }
        self.scratch = pos;
        self.fit_index();
    }

    /// Whether removing a node of `node_points` points scans the whole ring
    /// ([`remove_node`](Points::remove_node) then needs no keys): the ring holds at most
    /// [`SCAN_REMOVE_PER_POINT`] points per point removed.
    #[inline]
    pub(crate) fn removes_by_scan(&self, node_points: usize) -> bool {
        self.pts.len() <= SCAN_REMOVE_PER_POINT.saturating_mul(node_points)
    }

    /// Removes the points of `slot` (a node of this ring) in place. A ring small enough
    /// ([`removes_by_scan`](Points::removes_by_scan)), or a call without `keys`, is scanned
    /// once: every point not of `slot` moves down, then every bucket's start. Otherwise `keys` are the node's sorted positions: each is looked
    /// up, one forward pass of block moves closes the gaps, then the index is shifted.
    pub(crate) fn remove_node(&mut self, slot: u32, keys: &[u64]) {
        if keys.is_empty() || self.removes_by_scan(keys.len()) {
            self.remove_by_scan(slot);
            return;
        }
        self.remove_by_keys(slot, keys);
    }

    /// [`remove_node`](Points::remove_node) by one pass over every point (no hashing, no
    /// search, no call per gap), noting where the removed points were; then one pass over
    /// the index, which moves each bucket's start down by the removed points before it.
    fn remove_by_scan(&mut self, slot: u32) {
        let layout = self.layout;
        let mut pos = core::mem::take(&mut self.scratch);
        pos.clear();
        let mut at = 0u32;
        self.pts.retain(|&p| {
            let keep = layout.slot(p) != slot;
            if !keep {
                pos.push(at);
            }
            at += 1;
            keep
        });
        self.node_count -= 1;
        if !pos.is_empty() {
            let mut before = 0;
            for start in &mut self.index {
                while pos.get(before).is_some_and(|&q| q < *start) {
                    before += 1;
                }
                *start -= to_u32(before);
            }
            self.fit_index();
        }
        self.scratch = pos;
    }

    /// [`remove_node`](Points::remove_node) by the node's sorted positions `keys`.
    fn remove_by_keys(&mut self, slot: u32, keys: &[u64]) {
        let layout = self.layout;
        let mut pos = core::mem::take(&mut self.scratch);
        pos.clear();
        let mut t = 0;
        while t < keys.len() {
            let k = keys[t];
            while t < keys.len() && keys[t] & STORED == k & STORED {
                t += 1;
            }
            let start = self.lower_bound_key(k);
            let (_, end) = self.run_from(start, k);
            for j in start..end {
                if layout.slot(self.pts[j]) == slot {
                    pos.push(to_u32(j));
                }
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
            self.shift_index(keys, false);
            self.fit_index();
        }
        self.scratch = pos;
    }

    /// Rebuilds this ring as the points of `src` whose slot satisfies `keep` (a sub-ring of
    /// `node_count` members): one counting pass and one filter pass, no hashing, no sorting.
    /// The index is sized for the kept points and their largest slot.
    pub(crate) fn filter_from(
        &mut self,
        src: &Points,
        node_count: usize,
        keep: impl Fn(u32) -> bool,
    ) {
        let from = src.layout;
        let (mut len, mut top) = (0, 0);
        for &p in &src.pts {
            let slot = from.slot(p);
            if keep(slot) {
                len += 1;
                top = top.max(slot as usize + 1);
            }
        }
        self.slot_bits = slot_bits_for(top);
        let layout = Layout {
            bits: ideal_bits(len).max(self.slot_bits),
        };
        self.pts.clear();
        self.pts.reserve_exact(len);
        let mut index = IndexWriter::new(layout.bits);
        for b in 0..1usize << from.bits {
            for &p in &src.pts[src.index[b] as usize..src.index[b + 1] as usize] {
                let slot = from.slot(p);
                if keep(slot) {
                    let key = from.decode(b, p);
                    index.point(self.pts.len(), layout.bucket(key));
                    self.pts.push(layout.encode(key, slot));
                }
            }
        }
        self.index = index.finish(len);
        self.layout = layout;
        self.node_count = node_count;
    }
}

/// How many of the first `n` of `window`'s points (the rest belong to later buckets) are
/// below `below`, counted without branches.
#[inline]
fn count_below(window: &[u32], below: u32, n: usize) -> usize {
    window
        .iter()
        .enumerate()
        .map(|(j, &p)| usize::from((p < below) & (j < n)))
        .sum()
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
