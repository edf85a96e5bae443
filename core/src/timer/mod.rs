//! A keyed deadline queue: one deadline per key, earliest first, exact to the nanosecond.
//!
//! Every component of the core that waits — reconnect backoff, lost-topology deadlines,
//! per-message timeouts, endpoint GC — arms a deadline under a small `Copy` key (a node id, a
//! message id) in a [`TimerQueue`]. The owner reports the queue's
//! [`next_deadline`](TimerQueue::next_deadline) through `poll_timeout`, and on
//! `handle_timeout(now)` drains every due key with [`pop_expired`](TimerQueue::pop_expired)
//! or [`expire`](TimerQueue::expire) — in exact deadline order, never a key before its
//! deadline.
//!
//! [`arm`](TimerQueue::arm) follows libatapp's `update_timer`: when a key is already armed the
//! *earlier* deadline wins, so a later reconnect time never postpones a nearer lost-topology
//! deadline. [`replace`](TimerQueue::replace) moves a deadline either way.
//!
//! # Ordering
//!
//! Keys fire in deadline order; keys with the same deadline fire in ascending key order
//! (`K: Ord`). The order therefore depends only on the set of armed `(deadline, key)` pairs,
//! never on the history of calls or on hashing.
//!
//! # Structure and cost
//!
//! Two parts:
//! - a `hashbrown` map from each armed key to its deadline and a *generation* number (the map
//!   is only ever probed, never iterated, so its per-process hash seed cannot leak into any
//!   order);
//! - a 4-ary min-heap of `(deadline, key, generation)` entries.
//!
//! An entry is *live* when the map holds its key with its generation; every arm or move takes
//! a fresh generation from a 64-bit counter (which cannot wrap in practice), so an entry left
//! behind by an earlier deadline of the same key never looks live again.
//!
//! Cancelling is lazy, because cancel is the hot path (most timeouts never fire): it removes
//! the key from the map, which makes its heap entry stale without touching the heap — one
//! hash-map removal. Moving a deadline (an earlier `arm`, a `replace`) does the same and
//! pushes a fresh entry — except that moving the earliest deadline later, the common move of
//! a lazily armed deadline, updates the root entry in place and sinks it. Stale entries are
//! dropped when they reach the root — the root is always live, so
//! [`next_deadline`](TimerQueue::next_deadline) is exact — or when cancel finds the entry at
//! the end of the heap (a timer cancelled soon after it was armed), and once stale entries
//! outnumber twice the live ones plus a small slack the heap is compacted in one O(n) pass.
//! (A factor of 2 rather than 1 cut the amortised compaction share of a
//! random cancel at 64 Ki live timers from ~45 % to ~17 % of its time, measured with perf,
//! at the price of up to `3n` heap entries.)
//!
//! With `n` live timers: `cancel` is O(1) (O(log n) when it cancels the earliest timer);
//! `arm` of a new key is O(1) on average (a deadline later than most — the usual
//! `now + timeout` — does not climb the heap) and O(log n) at worst; `pop_expired` is
//! O(log n); `next_deadline` and `deadline` are O(1); all amortised over compaction. Memory is
//! reused: once the queue has reached its peak size (at most `3n + 64` heap entries in
//! steady state) nothing allocates. Measured in `benches/benches/timer.rs`.
//!
//! A hierarchical timing wheel was the alternative; it makes `cancel` a list unlink, but
//! reporting the exact next deadline needs a scan of a whole wheel slot, and exactness is the
//! contract here.

use alloc::vec::Vec;
use core::{fmt, hash::Hash};

use hashbrown::hash_map::Entry as MapEntry;

/// The key map hashes with a fixed seed: keys are the core's own ids (never chosen by a peer),
/// and a fixed seed makes the map's layout — and so its growth and probe costs — the same on
/// every run, which keeps benches and allocation tests repeatable.
type HashMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

use crate::time::Instant;

/// Children per heap node. Four halves the depth of a binary heap and keeps a node's children
/// within two cache lines.
const ARITY: usize = 4;

/// Stale heap entries tolerated per live one before a compaction.
const STALE_FACTOR: usize = 2;

/// Stale heap entries tolerated beyond `STALE_FACTOR` per live one (so a small queue does not
/// compact on every cancel).
const STALE_SLACK: usize = 64;

/// What [`TimerQueue::arm`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Armed {
    /// The key had no deadline; it now has the given one.
    New,
    /// The key had a later deadline; it moved to the earlier, given one.
    MovedEarlier,
    /// The key already had an earlier (or equal) deadline, which stays.
    KeptEarlier,
}

/// One heap cell: the ordering fields inline, so sifting never leaves the heap array.
#[derive(Clone, Copy)]
struct HeapEntry<K> {
    deadline: Instant,
    key: K,
    /// Live iff the map holds `key` with this generation.
    generation: u64,
}

impl<K: Ord> HeapEntry<K> {
    /// Fires strictly before `other`: earlier deadline, then smaller key.
    #[inline]
    fn before(&self, other: &Self) -> bool {
        (self.deadline, &self.key) < (other.deadline, &other.key)
    }
}

/// What the map holds for an armed key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Live {
    deadline: Instant,
    /// The generation of the key's one live heap entry.
    generation: u64,
}

/// A keyed deadline queue where arming keeps the earlier deadline. See the [module
/// docs](self) for ordering and cost.
///
/// ```
/// use switchboard_core::{time::Instant, timer::{Armed, TimerQueue}};
///
/// let mut timers = TimerQueue::new();
/// let t = Instant::from_secs;
/// assert_eq!(timers.arm(7u64, t(30)), Armed::New);
/// assert_eq!(timers.arm(7, t(8)), Armed::MovedEarlier); // earliest wins
/// assert_eq!(timers.arm(7, t(60)), Armed::KeptEarlier);
/// timers.arm(3, t(8));
/// assert_eq!(timers.next_deadline(), Some(t(8)));
/// assert_eq!(timers.pop_expired(t(7)), None);
/// assert_eq!(timers.pop_expired(t(8)), Some((3, t(8)))); // tie: smaller key first
/// assert_eq!(timers.pop_expired(t(8)), Some((7, t(8))));
/// assert!(timers.is_empty());
/// ```
#[derive(Clone)]
pub struct TimerQueue<K> {
    /// Armed key → its deadline and live generation.
    live: HashMap<K, Live>,
    /// 4-ary min-heap ordered by [`HeapEntry::before`]: exactly one live entry per armed key,
    /// plus stale ones. The root, if any, is live.
    heap: Vec<HeapEntry<K>>,
    /// The generation the next pushed entry gets.
    next_generation: u64,
    /// Stale entries tolerated beyond the live count; [`STALE_SLACK`] except in tests.
    stale_slack: usize,
}

impl<K> Default for TimerQueue<K> {
    fn default() -> Self {
        TimerQueue {
            live: HashMap::default(),
            heap: Vec::new(),
            next_generation: 0,
            stale_slack: STALE_SLACK,
        }
    }
}

impl<K> fmt::Debug for TimerQueue<K>
where
    K: Copy + Eq + Hash + Ord + fmt::Debug,
{
    /// Shows the size and the next `(key, deadline)` — deterministic, unlike the hash map.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerQueue")
            .field("len", &self.len())
            .field("next", &self.heap.first().map(|e| (e.key, e.deadline)))
            .finish()
    }
}

impl<K> TimerQueue<K>
where
    K: Copy + Eq + Hash + Ord,
{
    /// An empty queue.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty queue with room for `n` live timers before it allocates (the heap gets room
    /// for `3n + 64` entries, its steady-state worst case).
    ///
    /// For churn that never allocates, reserve about twice the expected number of live
    /// timers: hashbrown cleans tombstones in place only while the map is at most half full,
    /// and otherwise grows it (once) when they pile up.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        TimerQueue {
            live: HashMap::with_capacity_and_hasher(n, foldhash::fast::FixedState::default()),
            heap: Vec::with_capacity(
                n.saturating_mul(STALE_FACTOR + 1)
                    .saturating_add(STALE_SLACK),
            ),
            next_generation: 0,
            stale_slack: STALE_SLACK,
        }
    }

    /// Number of armed keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no key is armed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The deadline `key` is armed for, if any.
    #[must_use]
    pub fn deadline(&self, key: K) -> Option<Instant> {
        self.live.get(&key).map(|live| live.deadline)
    }

    /// Whether `key` is armed.
    #[must_use]
    pub fn contains(&self, key: K) -> bool {
        self.live.contains_key(&key)
    }

    /// The earliest armed deadline: what the owner's `poll_timeout` reports. `None` when empty.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.heap.first().map(|e| e.deadline)
    }

    /// The key with the earliest armed deadline, and that deadline (ties: the lowest key);
    /// `None` when empty. O(1).
    #[must_use]
    pub fn peek(&self) -> Option<(K, Instant)> {
        self.heap.first().map(|e| (e.key, e.deadline))
    }

    /// Arms `key` for `deadline`. If `key` is already armed, the earlier of the two deadlines
    /// stays (libatapp's "earliest wins"): a later deadline never replaces a nearer one.
    ///
    /// A deadline at or before the current time is fine: the key is due at the next
    /// [`pop_expired`](Self::pop_expired). [`Instant::MAX`] arms a timer that only
    /// `pop_expired(Instant::MAX)` fires, but that still counts in [`len`](Self::len).
    pub fn arm(&mut self, key: K, deadline: Instant) -> Armed {
        let generation = self.next_generation;
        match self.live.entry(key) {
            MapEntry::Occupied(mut entry) => {
                if deadline >= entry.get().deadline {
                    return Armed::KeptEarlier;
                }
                entry.insert(Live {
                    deadline,
                    generation,
                });
                self.push(key, deadline);
                // The old entry is stale now; if it was the root, the new, earlier entry has
                // taken its place, so the root stays live.
                self.bound_stale();
                Armed::MovedEarlier
            }
            MapEntry::Vacant(entry) => {
                entry.insert(Live {
                    deadline,
                    generation,
                });
                self.push(key, deadline);
                Armed::New
            }
        }
    }

    /// Sets `key`'s deadline to `deadline`, earlier or later, arming it if needed. Returns the
    /// previous deadline.
    ///
    /// Moving the earliest timer later (a lazily armed deadline made exact, as a link's
    /// heartbeat after traffic) updates its root entry in place and sinks it: no stale entry,
    /// O(log n). Any other move leaves the old entry stale and pushes a fresh one.
    pub fn replace(&mut self, key: K, deadline: Instant) -> Option<Instant> {
        let generation = self.next_generation;
        let (previous, root_moves_later) = match self.live.entry(key) {
            MapEntry::Occupied(mut entry) => {
                let old = *entry.get();
                if old.deadline == deadline {
                    // Same deadline: the existing entry stays live.
                    return Some(deadline);
                }
                let root_moves_later = deadline > old.deadline
                    && self
                        .heap
                        .first()
                        .is_some_and(|root| root.generation == old.generation);
                entry.insert(Live {
                    deadline,
                    generation: if root_moves_later {
                        old.generation
                    } else {
                        generation
                    },
                });
                (Some(old.deadline), root_moves_later)
            }
            MapEntry::Vacant(entry) => {
                entry.insert(Live {
                    deadline,
                    generation,
                });
                (None, false)
            }
        };
        if root_moves_later {
            self.heap[0].deadline = deadline;
            self.sift_down(0);
            // The entry that rose to the root may be stale.
            self.discard_stale_roots();
        } else {
            self.push(key, deadline);
            if previous.is_some() {
                self.discard_stale_roots();
                self.bound_stale();
            }
        }
        previous
    }

    /// Disarms `key`, returning the deadline it had (`None` if it was not armed).
    ///
    /// One map removal; the heap entry is left stale unless it is the last or the first one
    /// (see the [module docs](self)).
    pub fn cancel(&mut self, key: K) -> Option<Instant> {
        let removed = self.live.remove(&key)?;
        match self.heap.last() {
            // Cancelled soon after it was armed: often still the last entry (a
            // `now + timeout` deadline does not climb). Drop it outright.
            Some(last) if last.generation == removed.generation => {
                self.heap.pop();
            }
            // Cancelled the earliest timer: the root went stale.
            Some(_) if self.heap[0].generation == removed.generation => {
                self.discard_stale_roots();
            }
            _ => {}
        }
        self.bound_stale();
        Some(removed.deadline)
    }

    /// Removes and returns the next due key — the one with the earliest deadline, ties by
    /// smallest key — if its deadline is `<= now`. Call in a loop until `None` to handle every
    /// due timer in one `handle_timeout(now)`.
    ///
    /// Never returns a key before its deadline, whatever `now` does (a `now` that goes
    /// backwards simply finds less due).
    pub fn pop_expired(&mut self, now: Instant) -> Option<(K, Instant)> {
        let root = *self.heap.first()?;
        if root.deadline > now {
            return None;
        }
        let removed = self.live.remove(&root.key);
        debug_assert_eq!(
            removed.map(|live| live.generation),
            Some(root.generation),
            "the root is live"
        );
        self.pop_root();
        self.discard_stale_roots();
        self.bound_stale();
        Some((root.key, root.deadline))
    }

    /// Drains every key due at `now` into `out`, in firing order (appending; `out` is not
    /// cleared, so a caller can reuse one `Vec` and keep its capacity).
    pub fn expire(&mut self, now: Instant, out: &mut Vec<(K, Instant)>) {
        while let Some(fired) = self.pop_expired(now) {
            out.push(fired);
        }
    }

    /// Disarms every key, keeping the allocated capacity.
    pub fn clear(&mut self) {
        self.live.clear();
        self.heap.clear();
    }

    fn is_live(live: &HashMap<K, Live>, entry: &HeapEntry<K>) -> bool {
        live.get(&entry.key)
            .is_some_and(|l| l.generation == entry.generation)
    }

    /// Pops stale roots until the root is live (or the heap is empty).
    fn discard_stale_roots(&mut self) {
        // One live entry per armed key: with as many entries as keys, none is stale (and the
        // root needs no map probe).
        if self.heap.len() == self.live.len() {
            return;
        }
        while let Some(root) = self.heap.first() {
            if Self::is_live(&self.live, root) {
                break;
            }
            self.pop_root();
        }
    }

    /// Compacts the heap once stale entries exceed `STALE_FACTOR` times the live ones plus the
    /// slack, so that after every public call `heap.len() <= 3 * len + slack`. Amortised
    /// O(1): each call adds at most one stale entry, and a compaction that finds
    /// `s > 2 * live + slack` stale entries costs O(s + live) = O(2s) and removes all `s`.
    fn bound_stale(&mut self) {
        let live = self.live.len();
        if self.heap.len() - live > live * STALE_FACTOR + self.stale_slack {
            self.compact();
        }
    }

    /// Drops every stale entry: refills the heap from the map (a sequential scan, cheaper than
    /// probing the map once per heap entry) and restores heap order bottom-up (Floyd).
    ///
    /// The map's iteration order is seeded per process, so the heap's *layout* after a
    /// compaction varies between runs; what it yields does not, because `(deadline, key)` is a
    /// strict total order over live entries.
    fn compact(&mut self) {
        self.heap.clear();
        self.heap
            .extend(self.live.iter().map(|(&key, live)| HeapEntry {
                deadline: live.deadline,
                key,
                generation: live.generation,
            }));
        for pos in (0..self.heap.len() / ARITY + 1).rev() {
            self.sift_down(pos);
        }
    }

    /// Pushes the live entry of `key` (generation `next_generation`, which it consumes).
    fn push(&mut self, key: K, deadline: Instant) {
        let generation = self.next_generation;
        // 2^64 pushes would take centuries; wrapping (not panicking) is the safe choice.
        self.next_generation = self.next_generation.wrapping_add(1);
        let pos = self.heap.len();
        self.heap.push(HeapEntry {
            deadline,
            key,
            generation,
        });
        self.sift_up(pos);
    }

    /// Removes the root entry (live or stale) and restores heap order.
    ///
    /// Floyd's bottom-up variant: the hole left by the root sinks along the smallest children
    /// to a leaf without comparing against the last entry, which then climbs from there —
    /// usually not at all, since the last entry is a leaf. That saves one comparison per level
    /// over a plain sift-down.
    fn pop_root(&mut self) {
        let Some(last) = self.heap.pop() else {
            return;
        };
        let len = self.heap.len();
        if len == 0 {
            return;
        }
        let mut hole = 0;
        loop {
            let first_child = hole * ARITY + 1;
            if first_child >= len {
                break;
            }
            let best = self.min_child(first_child, len);
            self.heap[hole] = self.heap[best];
            hole = best;
        }
        self.heap[hole] = last;
        self.sift_up(hole);
    }

    /// The position of the earliest among the children starting at `first_child`.
    #[inline]
    fn min_child(&self, first_child: usize, len: usize) -> usize {
        if let Some(children) = self.heap.get(first_child..first_child + ARITY) {
            // A full family: a two-round tournament, so the comparisons of each round are
            // independent and the index picks compile to conditional moves.
            let a = usize::from(children[1].before(&children[0]));
            let b = 2 + usize::from(children[3].before(&children[2]));
            return first_child
                + if children[b].before(&children[a]) {
                    b
                } else {
                    a
                };
        }
        let end = (first_child + ARITY).min(len);
        let mut best = first_child;
        for child in first_child + 1..end {
            if self.heap[child].before(&self.heap[best]) {
                best = child;
            }
        }
        best
    }

    /// Moves the entry at `pos` towards the root until its parent fires before it.
    fn sift_up(&mut self, mut pos: usize) {
        let entry = self.heap[pos];
        while pos > 0 {
            let parent_pos = (pos - 1) / ARITY;
            let parent = self.heap[parent_pos];
            if !entry.before(&parent) {
                break;
            }
            self.heap[pos] = parent;
            pos = parent_pos;
        }
        self.heap[pos] = entry;
    }

    /// Moves the entry at `pos` towards the leaves until it fires before all its children.
    fn sift_down(&mut self, mut pos: usize) {
        let len = self.heap.len();
        if pos >= len {
            return;
        }
        let entry = self.heap[pos];
        loop {
            let first_child = pos * ARITY + 1;
            if first_child >= len {
                break;
            }
            let best = self.min_child(first_child, len);
            let child = self.heap[best];
            if !child.before(&entry) {
                break;
            }
            self.heap[pos] = child;
            pos = best;
        }
        self.heap[pos] = entry;
    }
}

#[cfg(test)]
mod tests;
