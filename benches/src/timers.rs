//! Timer arm/cancel workload at a steady 64k live timers, shared by the `ring` bench and the
//! `ring-report` binary.
//!
//! A [`TimerLoad`] keeps 65 536 keys armed in a [`TimerQueue`]. Deadlines are uniform in
//! `[now + 1 s, now + 31 s)` on a virtual clock that advances 1 µs per operation (the usual
//! "now + timeout" pattern, not a sorted stream). One timed batch arms (or cancels) 1024
//! distinct live keys taken in a fixed random order; the untimed half of the step cancels (or
//! re-arms) them, so the queue stays between 64 512 and 65 536 live timers. A batch is timed as
//! a whole because one operation is shorter than a clock read.

use std::{hint::black_box, time::Duration};

use switchboard_core::{
    rng::Rng,
    time::Instant,
    timer::{Armed, TimerQueue},
};

/// Live timers in the steady state.
pub const LIVE_TIMERS: usize = 1 << 16;
/// Operations per timed batch.
pub const BATCH: usize = 1024;

/// A timer queue held at [`LIVE_TIMERS`] live keys.
#[derive(Debug)]
pub struct TimerLoad {
    queue: TimerQueue<u64>,
    rng: Rng,
    now_ns: u64,
    /// A random permutation of the keys; batches take consecutive runs of it.
    order: Vec<u64>,
    cursor: usize,
    batch: Vec<(u64, Instant)>,
}

impl TimerLoad {
    /// Arms keys `0..65536` with deadlines spread over the 30 s window.
    #[must_use]
    pub fn new(seed: u64) -> TimerLoad {
        let mut load = TimerLoad {
            queue: TimerQueue::with_capacity(LIVE_TIMERS),
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
        self.queue.len()
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
            black_box(self.queue.arm(black_box(key), deadline));
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
    pub fn arm(&mut self, key: u64, deadline: Instant) -> Armed {
        self.queue.arm(key, deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_stays_at_64k_live() {
        let mut load = TimerLoad::new(1);
        assert_eq!(load.live(), LIVE_TIMERS);
        load.arm_batch();
        assert_eq!(load.live(), LIVE_TIMERS);
        load.cancel_batch();
        assert_eq!(load.live(), LIVE_TIMERS);
        assert_eq!(
            load.arm(LIVE_TIMERS as u64, Instant::from_secs(100)),
            Armed::New
        );
        assert_eq!(load.live(), LIVE_TIMERS + 1);
    }
}
