//! Timer arm/cancel workload at a steady 64k live timers, shared by the `timer` bench and the
//! `ring-report` binary, and the baseline queue both compare against ([`BTreeQueue`]).
//!
//! A [`TimerLoad`] keeps 65 536 keys armed in a [`TimerQueue`] (or any [`Queue`]). Deadlines are uniform in
//! `[now + 1 s, now + 31 s)` on a virtual clock that advances 1 µs per operation (the usual
//! "now + timeout" pattern, not a sorted stream). One timed batch arms (or cancels) 1024
//! distinct live keys taken in a fixed random order; the untimed half of the step cancels (or
//! re-arms) them, so the queue stays between 64 512 and 65 536 live timers. A batch is timed as
//! a whole because one operation is shorter than a clock read.

use std::{
    collections::{BTreeMap, HashMap, hash_map::Entry},
    hash::{BuildHasherDefault, Hasher},
    hint::black_box,
    time::Duration,
};

use switchboard_core::{
    rng::{Rng, mix64},
    time::Instant,
    timer::TimerQueue,
};

/// The operations the timer benches drive, implemented by [`TimerQueue`] and [`BTreeQueue`].
pub trait Queue {
    /// An empty queue with room for `n` timers.
    fn with_capacity(n: usize) -> Self;
    /// Arms `key` at `deadline` (earliest wins when it is already armed).
    fn arm(&mut self, key: u64, deadline: Instant);
    /// Cancels `key`; returns its deadline if it was armed.
    fn cancel(&mut self, key: u64) -> Option<Instant>;
    /// Pops the earliest timer.
    fn pop_min(&mut self) -> Option<(u64, Instant)>;
    /// Number of live timers.
    fn live(&self) -> usize;
}

impl Queue for TimerQueue<u64> {
    fn with_capacity(n: usize) -> Self {
        TimerQueue::with_capacity(n)
    }
    fn arm(&mut self, key: u64, deadline: Instant) {
        black_box(TimerQueue::arm(self, key, deadline));
    }
    fn cancel(&mut self, key: u64) -> Option<Instant> {
        TimerQueue::cancel(self, key)
    }
    fn pop_min(&mut self) -> Option<(u64, Instant)> {
        self.pop_expired(Instant::MAX)
    }
    fn live(&self) -> usize {
        self.len()
    }
}

/// A `u64` hasher for the baseline's index: one splitmix64 finalisation (so both contenders
/// have a fast `u64` hash and the comparison is of the data structures).
#[derive(Default)]
pub struct Mix64Hasher(u64);

impl Hasher for Mix64Hasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The baseline: an ordered set of `(deadline, key)` plus a key → deadline index, with the
/// same earliest-wins `arm`.
#[derive(Debug)]
pub struct BTreeQueue {
    order: BTreeMap<(Instant, u64), ()>,
    index: HashMap<u64, Instant, BuildHasherDefault<Mix64Hasher>>,
}

impl Queue for BTreeQueue {
    fn with_capacity(n: usize) -> Self {
        BTreeQueue {
            order: BTreeMap::new(),
            index: HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
        }
    }
    fn arm(&mut self, key: u64, deadline: Instant) {
        match self.index.entry(key) {
            Entry::Occupied(mut e) => {
                let current = *e.get();
                if deadline < current {
                    self.order.remove(&(current, key));
                    self.order.insert((deadline, key), ());
                    e.insert(deadline);
                }
            }
            Entry::Vacant(e) => {
                e.insert(deadline);
                self.order.insert((deadline, key), ());
            }
        }
    }
    fn cancel(&mut self, key: u64) -> Option<Instant> {
        let deadline = self.index.remove(&key)?;
        self.order.remove(&(deadline, key));
        Some(deadline)
    }
    fn pop_min(&mut self) -> Option<(u64, Instant)> {
        let ((deadline, key), ()) = self.order.pop_first()?;
        self.index.remove(&key);
        Some((key, deadline))
    }
    fn live(&self) -> usize {
        self.index.len()
    }
}

/// Live timers in the steady state.
pub const LIVE_TIMERS: usize = 1 << 16;
/// Operations per timed batch.
pub const BATCH: usize = 1024;

/// A timer queue held at [`LIVE_TIMERS`] live keys.
#[derive(Debug)]
pub struct TimerLoad<Q = TimerQueue<u64>> {
    queue: Q,
    rng: Rng,
    now_ns: u64,
    /// A random permutation of the keys; batches take consecutive runs of it.
    order: Vec<u64>,
    cursor: usize,
    batch: Vec<(u64, Instant)>,
}

impl<Q: Queue> TimerLoad<Q> {
    /// Arms keys `0..65536` with deadlines spread over the 30 s window; the same seed gives
    /// every queue type the same keys, deadlines and batches.
    #[must_use]
    pub fn new(seed: u64) -> TimerLoad<Q> {
        let mut load = TimerLoad {
            queue: Q::with_capacity(LIVE_TIMERS),
            rng: Rng::new(seed),
            now_ns: 0,
            order: (0..LIVE_TIMERS as u64).collect(),
            cursor: 0,
            batch: Vec::with_capacity(BATCH),
        };
        for i in (1..LIVE_TIMERS).rev() {
            let j = load.rng.below(i as u64 + 1) as usize;
            load.order.swap(i, j);
        }
        for key in 0..LIVE_TIMERS as u64 {
            let deadline = load.next_deadline();
            load.queue.arm(key, deadline);
        }
        load
    }

    /// Number of live timers.
    #[must_use]
    pub fn live(&self) -> usize {
        self.queue.live()
    }

    fn next_deadline(&mut self) -> Instant {
        self.now_ns += 1_000;
        Instant::from_nanos(self.now_ns + self.rng.in_range(1_000_000_000, 31_000_000_000))
    }

    /// Picks the next `BATCH` distinct keys of the permutation, with fresh deadlines.
    fn pick_batch(&mut self) {
        self.batch.clear();
        for _ in 0..BATCH {
            let key = self.order[self.cursor];
            self.cursor = (self.cursor + 1) % LIVE_TIMERS;
            let deadline = self.next_deadline();
            self.batch.push((key, deadline));
        }
    }

    /// One step timing `BATCH` arms of keys that were just cancelled (untimed). Returns the
    /// time of the arms only.
    pub fn arm_batch(&mut self) -> Duration {
        self.pick_batch();
        for &(key, _) in &self.batch {
            self.queue.cancel(key);
        }
        let start = std::time::Instant::now();
        for &(key, deadline) in &self.batch {
            self.queue.arm(black_box(key), deadline);
        }
        start.elapsed()
    }

    /// One step timing `BATCH` cancels of live keys, then re-arming them (untimed). Returns
    /// the time of the cancels only.
    pub fn cancel_batch(&mut self) -> Duration {
        self.pick_batch();
        let start = std::time::Instant::now();
        for &(key, _) in &self.batch {
            black_box(self.queue.cancel(black_box(key)));
        }
        let elapsed = start.elapsed();
        for &(key, deadline) in &self.batch {
            self.queue.arm(key, deadline);
        }
        elapsed
    }

    /// Arms `key` directly (tests).
    pub fn arm(&mut self, key: u64, deadline: Instant) {
        self.queue.arm(key, deadline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stays_at_64k_live<Q: Queue>() {
        let mut load = TimerLoad::<Q>::new(1);
        assert_eq!(load.live(), LIVE_TIMERS);
        load.arm_batch();
        assert_eq!(load.live(), LIVE_TIMERS);
        load.cancel_batch();
        assert_eq!(load.live(), LIVE_TIMERS);
        load.arm(LIVE_TIMERS as u64, Instant::from_secs(100));
        assert_eq!(load.live(), LIVE_TIMERS + 1);
    }

    #[test]
    fn load_stays_at_64k_live() {
        stays_at_64k_live::<TimerQueue<u64>>();
        stays_at_64k_live::<BTreeQueue>();
    }

    #[test]
    fn btree_queue_pops_in_deadline_order_and_keeps_the_earliest_arm() {
        let mut q = BTreeQueue::with_capacity(4);
        q.arm(1, Instant::from_secs(5));
        q.arm(2, Instant::from_secs(3));
        q.arm(1, Instant::from_secs(9)); // later: kept at 5
        q.arm(3, Instant::from_secs(4));
        assert_eq!(q.cancel(3), Some(Instant::from_secs(4)));
        assert_eq!(q.cancel(3), None);
        assert_eq!(q.pop_min(), Some((2, Instant::from_secs(3))));
        assert_eq!(q.pop_min(), Some((1, Instant::from_secs(5))));
        assert_eq!(q.pop_min(), None);
    }
}
