//! Latency samples and exact percentiles.
//!
//! Every round trip of a measured phase is kept as one sample (nanoseconds); percentiles are
//! read from the sorted samples by nearest rank, so p99 over 20 000 samples is the 19 800th
//! smallest value — exact, not an HDR bucket's upper bound.

use std::time::Duration;

/// The round-trip times of one or more measured phases.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Latencies {
    samples_ns: Vec<u64>,
    sorted: bool,
}

impl Latencies {
    /// An empty set with room for `capacity` samples (so recording does not reallocate).
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Latencies {
        Latencies {
            samples_ns: Vec::with_capacity(capacity),
            sorted: true,
        }
    }

    /// Adds one round-trip time.
    pub fn record(&mut self, rtt: Duration) {
        self.samples_ns
            .push(u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX));
        self.sorted = false;
    }

    /// Adds every sample of `other` (pools phases that ran interleaved with other work).
    pub fn extend(&mut self, other: &Latencies) {
        self.samples_ns.extend_from_slice(&other.samples_ns);
        self.sorted = false;
    }

    /// How many samples were recorded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.samples_ns.len()
    }

    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.samples_ns.is_empty()
    }

    /// The nearest-rank percentile `pct` (0 < pct ≤ 100) in microseconds; `None` when empty.
    /// Sorts the samples on first use after a change.
    #[must_use]
    pub fn percentile_us(&mut self, pct: f64) -> Option<f64> {
        if self.samples_ns.is_empty() {
            return None;
        }
        if !self.sorted {
            self.samples_ns.sort_unstable();
            self.sorted = true;
        }
        Some(nanos_to_us(
            self.samples_ns[nearest_rank_index(self.samples_ns.len(), pct)],
        ))
    }

    /// p50, p99, p99.9 and the maximum, in microseconds; `None` when empty.
    #[must_use]
    pub fn summary(&mut self) -> Option<LatencySummary> {
        Some(LatencySummary {
            count: self.samples_ns.len(),
            p50_us: self.percentile_us(50.0)?,
            p99_us: self.percentile_us(99.0)?,
            p999_us: self.percentile_us(99.9)?,
            max_us: self.percentile_us(100.0)?,
        })
    }
}

/// The percentiles the report prints for one latency phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencySummary {
    /// Samples behind the percentiles.
    pub count: usize,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Largest sample, µs.
    pub max_us: f64,
}

/// Index of the nearest-rank percentile in a sorted slice of `len > 0` values: the smallest
/// rank r (1-based) with r ≥ pct/100 · len, clamped into the slice. The product is nudged
/// down by 1e-9 so a decimal percentile that is not exact in binary (99.9 · 1000 =
/// 999.000…1) does not round up a whole rank.
fn nearest_rank_index(len: usize, pct: f64) -> usize {
    let rank = (pct / 100.0 * len as f64 - 1e-9).ceil() as usize;
    rank.clamp(1, len) - 1
}

fn nanos_to_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_micros(values: impl IntoIterator<Item = u64>) -> Latencies {
        let mut l = Latencies::with_capacity(0);
        for v in values {
            l.record(Duration::from_micros(v));
        }
        l
    }

    #[test]
    fn percentiles_are_nearest_rank_over_sorted_samples() {
        // 1..=100 µs shuffled: p50 is the 50th value, p99 the 99th, max the 100th.
        let mut l = from_micros((1..=100).map(|i| (i * 37) % 100 + 1));
        assert_eq!(l.len(), 100);
        assert_eq!(l.percentile_us(50.0), Some(50.0));
        assert_eq!(l.percentile_us(99.0), Some(99.0));
        assert_eq!(l.percentile_us(99.9), Some(100.0));
        assert_eq!(l.percentile_us(100.0), Some(100.0));
        assert_eq!(l.percentile_us(0.1), Some(1.0));
    }

    #[test]
    fn p99_of_1000_samples_is_the_990th_smallest() {
        let mut l = from_micros((0..1000).rev());
        assert_eq!(l.percentile_us(99.0), Some(989.0));
        assert_eq!(l.percentile_us(99.9), Some(998.0));
    }

    #[test]
    fn empty_set_has_no_percentiles() {
        let mut l = Latencies::default();
        assert!(l.is_empty());
        assert_eq!(l.percentile_us(50.0), None);
        assert_eq!(l.summary(), None);
    }

    #[test]
    fn extend_pools_samples_and_resorts() {
        let mut a = from_micros([5, 1]);
        assert_eq!(a.percentile_us(100.0), Some(5.0));
        a.extend(&from_micros([9, 3]));
        let s = a.summary().expect("four samples");
        assert_eq!(s.count, 4);
        assert_eq!(s.p50_us, 3.0);
        assert_eq!(s.max_us, 9.0);
    }

    #[test]
    fn sub_microsecond_samples_keep_their_fraction() {
        let mut l = Latencies::default();
        l.record(Duration::from_nanos(1500));
        assert_eq!(l.percentile_us(50.0), Some(1.5));
    }
}
