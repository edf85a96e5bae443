//! Each method's recent latency, for hedging at its p95 ([`HedgeAfter::MethodP95`]).
//!
//! - **Which methods.** A method is tracked from the first call that asks to hedge at its
//!   p95, while fewer than [`LATENCY_METHODS`] are; past that cap a new method is never
//!   tracked, so it has no p95 and its calls that ask for one never hedge. A tracked method
//!   stays tracked for the machine's life.
//! - **What is measured.** Every attempt of a tracked method that gets its reply (any call of
//!   the method, hedged or not): from the instant its request was sent (the hedge's own send
//!   for a hedge, the last send for a request that moved to another server) to the instant
//!   the reply arrived, both on the machine's `now`. An attempt that lost to its call's other
//!   attempt (cancelled or withdrawn when the other's reply won) adds its time so far, a
//!   lower bound of its latency: without it the window would keep only the attempts fast
//!   enough to win, its p95 would sink, and more calls would hedge. A failed or timed-out
//!   attempt adds nothing.
//! - **The window.** The last [`LATENCY_WINDOW`] samples per method, a ring in nanoseconds.
//! - **The p95.** The nearest-rank 95th percentile of the window: the ⌈0.95 × n⌉-th smallest
//!   of its n samples; none while it holds fewer than [`LATENCY_MIN_SAMPLES`]. Cached, and
//!   recomputed when asked after samples were added, by `select_nth_unstable` over one
//!   scratch copy shared by every method: O(window) per recomputation, no allocation after a
//!   method's first call.
//! - **Memory.** A tracked method costs its name, [`LATENCY_WINDOW`] × 8 bytes of samples
//!   and a few words: about 1 KiB, at most ~66 KiB per node.
//!
//! [`HedgeAfter::MethodP95`]: super::HedgeAfter::MethodP95

use alloc::{collections::BTreeMap, string::String, vec::Vec};

use crate::time::{Duration, Instant};

/// Replies remembered per method for its p95: the most recent ones.
pub const LATENCY_WINDOW: usize = 128;

/// Replies a method's window must hold before it has a p95 (before that, a call hedging at
/// the method's p95 does not hedge).
pub const LATENCY_MIN_SAMPLES: usize = 20;

/// Methods whose latency a node tracks at most (the first ones asked for; later ones have no
/// p95).
pub const LATENCY_METHODS: usize = 64;

/// One method's recent latencies.
#[derive(Clone, Debug)]
struct Window {
    /// The samples, in nanoseconds: filled up to [`LATENCY_WINDOW`], then overwritten
    /// oldest first.
    samples: Vec<u64>,
    /// Where the next sample goes once the window is full (its oldest).
    next: usize,
    /// The p95 as last computed (`None`: too few samples then).
    p95: Option<u64>,
    /// Whether samples were added since `p95` was computed.
    stale: bool,
}

impl Window {
    /// An empty window (its one allocation).
    fn new() -> Window {
        Window {
            samples: Vec::with_capacity(LATENCY_WINDOW),
            next: 0,
            p95: None,
            stale: false,
        }
    }

    /// Adds `nanos`, forgetting the oldest sample if the window is full.
    fn push(&mut self, nanos: u64) {
        if self.samples.len() < LATENCY_WINDOW {
            self.samples.push(nanos);
        } else if let Some(slot) = self.samples.get_mut(self.next) {
            *slot = nanos;
            self.next = (self.next + 1) % LATENCY_WINDOW;
        }
        self.stale = true;
    }

    /// The nearest-rank p95 of the samples (recomputed in `scratch` if stale).
    fn p95(&mut self, scratch: &mut Vec<u64>) -> Option<u64> {
        if self.stale {
            self.stale = false;
            self.p95 = nearest_rank_p95(&self.samples, scratch);
        }
        self.p95
    }
}

/// The nearest-rank 95th percentile of `samples` (`None` below [`LATENCY_MIN_SAMPLES`]),
/// selected in `scratch`.
fn nearest_rank_p95(samples: &[u64], scratch: &mut Vec<u64>) -> Option<u64> {
    if samples.len() < LATENCY_MIN_SAMPLES.max(1) {
        return None;
    }
    scratch.clear();
    scratch.extend_from_slice(samples);
    let rank = (samples.len() * 95).div_ceil(100).max(1);
    let (_, p95, _) = scratch.select_nth_unstable(rank - 1);
    Some(*p95)
}

/// The recent latency of the tracked methods: see the [module docs](self).
#[derive(Clone, Debug, Default)]
pub(crate) struct Latencies {
    /// By method name, at most [`LATENCY_METHODS`].
    methods: BTreeMap<String, Window>,
    /// Where a p95 is selected (capacity [`LATENCY_WINDOW`] once used).
    scratch: Vec<u64>,
}

impl Latencies {
    /// Tracks `method` from now on, if it is not yet and fewer than [`LATENCY_METHODS`] are;
    /// whether it is tracked.
    pub(crate) fn track(&mut self, method: &str) -> bool {
        if self.methods.contains_key(method) {
            return true;
        }
        if self.methods.len() >= LATENCY_METHODS {
            return false;
        }
        if self.scratch.capacity() < LATENCY_WINDOW {
            self.scratch.reserve_exact(LATENCY_WINDOW);
        }
        self.methods.insert(method.into(), Window::new());
        true
    }

    /// An attempt of `method` sent at `sent` got its reply at `now`: one sample, if the
    /// method is tracked.
    pub(crate) fn replied(&mut self, method: &str, sent: Instant, now: Instant) {
        if let Some(window) = self.methods.get_mut(method) {
            window.push(now.as_nanos().saturating_sub(sent.as_nanos()));
        }
    }

    /// An attempt of `method` sent at `sent` lost to its call's other attempt at `now`: its
    /// time so far is a sample (a lower bound of its latency), if the method is tracked.
    pub(crate) fn outlasted(&mut self, method: &str, sent: Instant, now: Instant) {
        self.replied(method, sent, now);
    }

    /// `method`'s p95, if it is tracked and its window holds at least
    /// [`LATENCY_MIN_SAMPLES`].
    pub(crate) fn p95(&mut self, method: &str) -> Option<Duration> {
        let window = self.methods.get_mut(method)?;
        window.p95(&mut self.scratch).map(Duration::from_nanos)
    }
}

#[cfg(test)]
mod tests {
    use alloc::format;

    use super::*;

    const T0: Instant = Instant::from_millis(1_000);

    /// `latencies` with one sample of each of `millis`, in order.
    fn replies(latencies: &mut Latencies, method: &str, millis: impl IntoIterator<Item = u64>) {
        for ms in millis {
            latencies.replied(method, T0, T0 + Duration::from_millis(ms));
        }
    }

    #[test]
    fn the_p95_is_the_nearest_rank_once_twenty_samples_are_in() {
        let mut latencies = Latencies::default();
        assert!(latencies.track("m"));
        replies(&mut latencies, "m", 1..=19);
        assert_eq!(latencies.p95("m"), None);
        replies(&mut latencies, "m", [20]);
        // ⌈0.95 × 20⌉ = 19th smallest.
        assert_eq!(latencies.p95("m"), Some(Duration::from_millis(19)));
        replies(&mut latencies, "m", 21..=100);
        assert_eq!(latencies.p95("m"), Some(Duration::from_millis(95)));
    }

    #[test]
    fn the_window_keeps_the_last_128_samples() {
        let mut latencies = Latencies::default();
        latencies.track("m");
        // 128 samples of 128 down to 1 ms (the order does not make the rank): the 122nd
        // smallest (⌈0.95 × 128⌉) is 122 ms.
        replies(&mut latencies, "m", (1..=128).rev());
        assert_eq!(latencies.p95("m"), Some(Duration::from_millis(122)));
        // 64 samples of 0 ms replace the oldest 64 (128 down to 65 ms): the window is 64 × 0
        // and 1..=64 ms, its 122nd smallest 58 ms.
        replies(&mut latencies, "m", [0; 64]);
        assert_eq!(latencies.p95("m"), Some(Duration::from_millis(58)));
        replies(&mut latencies, "m", [2; 128]);
        assert_eq!(latencies.p95("m"), Some(Duration::from_millis(2)));
    }

    #[test]
    fn only_tracked_methods_have_a_p95_and_at_most_64_are_tracked() {
        let mut latencies = Latencies::default();
        replies(&mut latencies, "untracked", 1..=50);
        assert_eq!(latencies.p95("untracked"), None);
        for i in 0..LATENCY_METHODS {
            assert!(latencies.track(&format!("m{i}")));
        }
        assert!(latencies.track("m0"));
        assert!(!latencies.track("one-too-many"));
        replies(&mut latencies, "one-too-many", 1..=50);
        assert_eq!(latencies.p95("one-too-many"), None);
        replies(&mut latencies, "m63", 1..=50);
        assert_eq!(latencies.p95("m63"), Some(Duration::from_millis(48)));
        assert_eq!(latencies.p95("m0"), None);
    }

    #[test]
    fn a_reply_before_its_send_counts_zero() {
        let mut latencies = Latencies::default();
        latencies.track("m");
        for _ in 0..20 {
            latencies.replied("m", T0, Instant::from_millis(1));
        }
        assert_eq!(latencies.p95("m"), Some(Duration::ZERO));
    }
}
