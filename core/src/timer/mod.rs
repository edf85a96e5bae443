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
//! A 4-ary min-heap of `(deadline, key, slot)` entries, a slot table mapping each live timer
//! to its heap position, and a `hashbrown` map from key to slot (the map is only ever probed,
//! never iterated, so its per-process hash seed cannot leak into any order). With `n` live
//! timers: arm, replace and cancel are O(log n) worst case and O(1) on average (deadlines
//! that grow with time — the usual `now + timeout` — never move up the heap; a cancelled
//! entry is replaced by the last leaf, which rarely sinks); `pop_expired` is O(log n);
//! `next_deadline` is O(1). Slots and heap cells are reused: once the queue has reached its
//! peak size, arming and cancelling allocate nothing. Measured in
//! `benches/benches/timer.rs`.
//!
//! A hierarchical timing wheel was the alternative; it makes `cancel` a list unlink but needs
//! a full slot scan to report the exact next deadline, and exactness is the contract here.

use alloc::vec::Vec;
use core::{fmt, hash::Hash};

use hashbrown::{HashMap, hash_map::Entry as MapEntry};

use crate::time::Instant;

/// Children per heap node. Four halves the depth of a binary heap and keeps a node's children
/// within two cache lines.
const ARITY: usize = 4;

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
    /// Index into `TimerQueue::positions`.
    slot: u32,
}

impl<K: Ord> HeapEntry<K> {
    /// Fires strictly before `other`: earlier deadline, then smaller key.
    #[inline]
    fn before(&self, other: &Self) -> bool {
        match self.deadline.cmp(&other.deadline) {
            core::cmp::Ordering::Less => true,
            core::cmp::Ordering::Equal => self.key < other.key,
            core::cmp::Ordering::Greater => false,
        }
    }
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
    /// 4-ary min-heap ordered by [`HeapEntry::before`].
    heap: Vec<HeapEntry<K>>,
    /// `positions[slot]` is the heap index of the live timer using `slot`; free slots hold
    /// stale values and are listed in `free`.
    positions: Vec<u32>,
    /// Slots to reuse before growing `positions` (LIFO, so the most recently freed — and most
    /// likely cached — slot comes back first).
    free: Vec<u32>,
    /// Key → slot of its live timer.
    slots: HashMap<K, u32>,
}

impl<K> Default for TimerQueue<K> {
    fn default() -> Self {
        TimerQueue {
            heap: Vec::new(),
            positions: Vec::new(),
            free: Vec::new(),
            slots: HashMap::default(),
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

/// A heap index or slot number as stored. Both are below the number of live timers, which
/// `alloc_slot` keeps within `u32`.
#[inline]
const fn narrow(index: usize) -> u32 {
    index as u32
}

#[inline]
const fn widen(index: u32) -> usize {
    index as usize
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

    /// An empty queue with room for `n` live timers before it allocates.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        TimerQueue {
            heap: Vec::with_capacity(n),
            positions: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            slots: HashMap::with_capacity(n),
        }
    }

    /// Number of armed keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no key is armed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The deadline `key` is armed for, if any.
    #[must_use]
    pub fn deadline(&self, key: K) -> Option<Instant> {
        let slot = *self.slots.get(&key)?;
        Some(self.heap[widen(self.positions[widen(slot)])].deadline)
    }

    /// Whether `key` is armed.
    #[must_use]
    pub fn contains(&self, key: K) -> bool {
        self.slots.contains_key(&key)
    }

    /// The earliest armed deadline: what the owner's `poll_timeout` reports. `None` when empty.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.heap.first().map(|e| e.deadline)
    }

    /// Arms `key` for `deadline`. If `key` is already armed, the earlier of the two deadlines
    /// stays (libatapp's "earliest wins"): a later deadline never replaces a nearer one.
    ///
    /// A deadline at or before the current time is fine: the key is due at the next
    /// [`pop_expired`](Self::pop_expired). [`Instant::MAX`] arms a timer that never fires but
    /// still counts in [`len`](Self::len).
    ///
    /// # Panics
    /// If more than `u32::MAX` keys are armed at once (about 200 GiB of timers).
    pub fn arm(&mut self, key: K, deadline: Instant) -> Armed {
        match self.slots.entry(key) {
            MapEntry::Occupied(entry) => {
                let pos = widen(self.positions[widen(*entry.get())]);
                if deadline < self.heap[pos].deadline {
                    self.heap[pos].deadline = deadline;
                    self.sift_up(pos);
                    Armed::MovedEarlier
                } else {
                    Armed::KeptEarlier
                }
            }
            MapEntry::Vacant(entry) => {
                let slot = alloc_slot(&mut self.positions, &mut self.free);
                entry.insert(slot);
                self.push(HeapEntry {
                    deadline,
                    key,
                    slot,
                });
                Armed::New
            }
        }
    }

    /// Sets `key`'s deadline to `deadline`, earlier or later, arming it if needed. Returns the
    /// previous deadline.
    ///
    /// # Panics
    /// If more than `u32::MAX` keys are armed at once.
    pub fn replace(&mut self, key: K, deadline: Instant) -> Option<Instant> {
        match self.slots.entry(key) {
            MapEntry::Occupied(entry) => {
                let pos = widen(self.positions[widen(*entry.get())]);
                let previous = self.heap[pos].deadline;
                self.heap[pos].deadline = deadline;
                if deadline < previous {
                    self.sift_up(pos);
                } else if deadline > previous {
                    self.sift_down(pos);
                }
                Some(previous)
            }
            MapEntry::Vacant(entry) => {
                let slot = alloc_slot(&mut self.positions, &mut self.free);
                entry.insert(slot);
                self.push(HeapEntry {
                    deadline,
                    key,
                    slot,
                });
                None
            }
        }
    }

    /// Disarms `key`, returning the deadline it had (`None` if it was not armed).
    pub fn cancel(&mut self, key: K) -> Option<Instant> {
        let slot = self.slots.remove(&key)?;
        let pos = widen(self.positions[widen(slot)]);
        let removed = self.remove_at(pos);
        Some(removed.deadline)
    }

    /// Removes and returns the next due key — the one with the earliest deadline, ties by
    /// smallest key — if its deadline is `<= now`. Call in a loop until `None` to handle every
    /// due timer in one `handle_timeout(now)`.
    ///
    /// Never returns a key before its deadline, whatever `now` does (a `now` that goes
    /// backwards simply finds less due).
    pub fn pop_expired(&mut self, now: Instant) -> Option<(K, Instant)> {
        let first = self.heap.first()?;
        if first.deadline > now {
            return None;
        }
        let key = first.key;
        let removed = self.slots.remove(&key);
        debug_assert_eq!(
            removed,
            Some(first.slot),
            "every heap entry has a map entry"
        );
        let entry = self.remove_at(0);
        Some((entry.key, entry.deadline))
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
        self.heap.clear();
        self.positions.clear();
        self.free.clear();
        self.slots.clear();
    }

    fn push(&mut self, entry: HeapEntry<K>) {
        let pos = self.heap.len();
        self.heap.push(entry);
        self.positions[widen(entry.slot)] = narrow(pos);
        self.sift_up(pos);
    }

    /// Takes the entry at heap index `pos` out, frees its slot and restores the heap. The
    /// caller has already removed its key from `slots`.
    fn remove_at(&mut self, pos: usize) -> HeapEntry<K> {
        let last = self
            .heap
            .pop()
            .expect("remove_at is called on a live position");
        let removed = if pos < self.heap.len() {
            let removed = core::mem::replace(&mut self.heap[pos], last);
            self.positions[widen(last.slot)] = narrow(pos);
            if last.before(&removed) {
                self.sift_up(pos);
            } else {
                self.sift_down(pos);
            }
            removed
        } else {
            last
        };
        self.free.push(removed.slot);
        removed
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
            self.positions[widen(parent.slot)] = narrow(pos);
            pos = parent_pos;
        }
        self.heap[pos] = entry;
        self.positions[widen(entry.slot)] = narrow(pos);
    }

    /// Moves the entry at `pos` towards the leaves until it fires before all its children.
    fn sift_down(&mut self, mut pos: usize) {
        let entry = self.heap[pos];
        let len = self.heap.len();
        loop {
            let first_child = pos * ARITY + 1;
            if first_child >= len {
                break;
            }
            let end = (first_child + ARITY).min(len);
            let mut best = first_child;
            for child in first_child + 1..end {
                if self.heap[child].before(&self.heap[best]) {
                    best = child;
                }
            }
            let child = self.heap[best];
            if !child.before(&entry) {
                break;
            }
            self.heap[pos] = child;
            self.positions[widen(child.slot)] = narrow(pos);
            pos = best;
        }
        self.heap[pos] = entry;
        self.positions[widen(entry.slot)] = narrow(pos);
    }
}

/// A slot for a new timer: a freed one if any, else a new one at the end of `positions`.
fn alloc_slot(positions: &mut Vec<u32>, free: &mut Vec<u32>) -> u32 {
    if let Some(slot) = free.pop() {
        return slot;
    }
    let slot = u32::try_from(positions.len()).expect("fewer than 2^32 timers are armed at once");
    positions.push(0);
    slot
}

#[cfg(test)]
mod tests;
