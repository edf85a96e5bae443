//! Counting what `load` and `demo` see: a [`Tally`] of sends and their outcomes (with the
//! latency of each delivery), a [`DuplicateCounter`] of received sequence numbers, the
//! [`Latencies`] histogram its percentiles come from, and the snake-case names failures are
//! reported under.

use std::{
    collections::{BTreeMap, HashSet},
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use switchboard_core::{node::SendError, outcome::Outcome};
use switchboard_tokio::node::Stopped;

/// Largest latency a [`Latencies`] tells apart: one hour, in µs (longer ones count as it).
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Latencies in µs in an HDR histogram (`hdrhistogram`): fixed memory however long the run,
/// three significant digits — every value below 2,048 µs exact, the others within 0.1 % (the
/// highest value equivalent to the one recorded is reported).
#[derive(Clone, Debug)]
pub(crate) struct Latencies(hdrhistogram::Histogram<u64>);

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies(
            hdrhistogram::Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("1 µs to 1 h at 3 significant digits are valid bounds"),
        )
    }
}

impl PartialEq for Latencies {
    fn eq(&self, other: &Latencies) -> bool {
        self.0 == other.0
    }
}

impl Eq for Latencies {}

impl Latencies {
    /// Counts one latency (saturating at one hour).
    pub(crate) fn record(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.0.saturating_record(us.min(MAX_LATENCY_US));
    }

    /// The nearest-rank `per_mille` ‰ percentile: the smallest recorded value with at least
    /// that share of the sample at or below it (as the histogram tells it). 0 when empty.
    pub(crate) fn per_mille(&self, per_mille: u32) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        self.0
            .value_at_quantile(f64::from(per_mille.min(1000)) / 1000.0)
    }

    /// p50, p99 and p99.9 in µs.
    pub(crate) fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50_us: self.per_mille(500),
            p99_us: self.per_mille(990),
            p999_us: self.per_mille(999),
        }
    }

    /// The largest latency in µs (0 when empty).
    pub(crate) fn max_us(&self) -> u64 {
        if self.0.is_empty() { 0 } else { self.0.max() }
    }
}

/// The percentiles a summary reports, in µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Percentiles {
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
    pub(crate) p999_us: u64,
}

/// The name an outcome is counted under among failures: `None` for `Delivered`, the reason
/// for `Failed`, `unknown_<reason>` for `Unknown` (transmitted, maybe delivered).
pub(crate) fn failure_label(outcome: Outcome) -> Option<String> {
    match outcome {
        Outcome::Delivered => None,
        Outcome::Failed(reason) => Some(reason.as_str().to_owned()),
        other => Some(other.label()),
    }
}

/// The name a refused send is counted under among failures: `refused_<why>`.
pub(crate) fn refusal_label(error: &SendError) -> String {
    format!("refused_{}", error.as_str())
}

/// Class of `Delivered` outcomes in spans and logs.
pub(crate) const DELIVERED: &str = "delivered";

/// Label of messages whose outcome did not come within the final wait (`load` only; the demo
/// reports them as `lost`).
pub(crate) const NO_OUTCOME: &str = "no_outcome";

/// Sends and outcomes of one run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Sends handed to a node (accepted or refused).
    pub(crate) sent: u64,
    /// Sends the node accepted.
    pub(crate) accepted: u64,
    /// `Delivered` outcomes.
    pub(crate) delivered: u64,
    /// Refusals and failure outcomes by label.
    pub(crate) failed: BTreeMap<String, u64>,
    /// Send → `Delivered` latencies.
    pub(crate) latencies: Latencies,
    /// Accepted sends whose outcome future ended without an outcome (the node was killed).
    pub(crate) stopped: u64,
    /// When the first and the last outcome (or refusal) of each class came: `delivered` or
    /// the failure label.
    pub(crate) spans: BTreeMap<String, (Instant, Instant)>,
}

impl Tally {
    /// Counts a send the node refused.
    pub(crate) fn refused(&mut self, error: &SendError) {
        self.sent += 1;
        let label = refusal_label(error);
        self.mark(&label);
        *self.failed.entry(label).or_default() += 1;
    }

    /// An outcome of class `label` came now.
    fn mark(&mut self, label: &str) {
        let now = Instant::now();
        match self.spans.get_mut(label) {
            Some(span) => span.1 = now,
            None => {
                self.spans.insert(label.to_owned(), (now, now));
            }
        }
    }

    /// Milliseconds from the first to the last outcome of each class.
    pub(crate) fn spans_ms(&self) -> BTreeMap<String, u64> {
        self.spans
            .iter()
            .map(|(label, (first, last))| {
                let ms = last.duration_since(*first).as_millis();
                (label.clone(), u64::try_from(ms).unwrap_or(u64::MAX))
            })
            .collect()
    }

    /// Counts a send the node accepted (its outcome comes later).
    pub(crate) fn accepted(&mut self) {
        self.sent += 1;
        self.accepted += 1;
    }

    /// Counts the end of an accepted send, `latency` after it was handed to the node.
    pub(crate) fn outcome(&mut self, outcome: Result<Outcome, Stopped>, latency: Duration) {
        match outcome {
            Ok(outcome) => match failure_label(outcome) {
                None => {
                    self.delivered += 1;
                    self.mark(DELIVERED);
                    self.latencies.record(latency);
                }
                Some(label) => {
                    self.mark(&label);
                    *self.failed.entry(label).or_default() += 1;
                }
            },
            Err(Stopped) => self.stopped += 1,
        }
    }

    /// Accepted sends whose outcome has not come yet.
    pub(crate) fn in_flight(&self) -> u64 {
        let outcome_failures: u64 = self
            .failed
            .iter()
            .filter(|(label, _)| !label.starts_with("refused_") && *label != NO_OUTCOME)
            .map(|(_, n)| n)
            .sum();
        self.accepted
            .saturating_sub(self.delivered + outcome_failures + self.stopped)
    }

    /// All failures, refusals included.
    pub(crate) fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// The percentiles of the delivery latencies.
    pub(crate) fn latency_percentiles(&self) -> Percentiles {
        self.latencies.percentiles()
    }

    /// The largest delivery latency, in µs (0 without deliveries).
    pub(crate) fn max_latency_us(&self) -> u64 {
        self.latencies.max_us()
    }
}

/// A [`Tally`] shared by the tasks of a run.
#[derive(Debug, Default)]
pub(crate) struct SharedTally(Mutex<Tally>);

impl SharedTally {
    /// Locks the tally (a panicked holder cannot leave it inconsistent: every update is one
    /// statement).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Tally> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the tally now.
    pub(crate) fn snapshot(&self) -> Tally {
        self.lock().clone()
    }
}

/// Counts received messages by (sender, sequence number): the first of each is unique, any
/// later one a duplicate.
#[derive(Debug, Default)]
pub(crate) struct DuplicateCounter {
    seen: HashSet<(u64, u64)>,
    /// Messages seen for the first time.
    pub(crate) unique: u64,
    /// Messages seen again.
    pub(crate) duplicates: u64,
}

impl DuplicateCounter {
    /// Records one received message; `true` if it is the first with this (sender, seq).
    pub(crate) fn record(&mut self, sender: u64, seq: u64) -> bool {
        if self.seen.insert((sender, seq)) {
            self.unique += 1;
            true
        } else {
            self.duplicates += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::outcome::FailReason;

    use super::*;

    fn latencies(us: impl IntoIterator<Item = u64>) -> Latencies {
        let mut latencies = Latencies::default();
        for us in us {
            latencies.record(Duration::from_micros(us));
        }
        latencies
    }

    /// The old sorted-sample test's figures, now from the histogram: below 2,048 µs every
    /// value is kept exactly, so the nearest ranks are the same.
    #[test]
    fn percentiles_use_the_nearest_rank() {
        let sample = latencies((1..=10).map(|v| v * 10));
        assert_eq!(sample.per_mille(500), 50);
        assert_eq!(sample.per_mille(990), 100);
        assert_eq!(sample.per_mille(900), 90);
        assert_eq!(sample.per_mille(910), 100);
        assert_eq!(sample.per_mille(0), 10);
        assert_eq!(sample.per_mille(1000), 100);
        let hundred = latencies(1..=100);
        assert_eq!(hundred.per_mille(500), 50);
        assert_eq!(hundred.per_mille(990), 99);
        let thousand = latencies(1..=1000);
        assert_eq!(
            thousand.percentiles(),
            Percentiles {
                p50_us: 500,
                p99_us: 990,
                p999_us: 999
            }
        );
        assert_eq!(latencies([7]).per_mille(990), 7);
        assert_eq!(Latencies::default().percentiles().p50_us, 0);
        assert_eq!(Latencies::default().max_us(), 0);
    }

    /// Above 2,048 µs a value is reported as the highest one its bucket holds (within
    /// 0.1 %); past an hour it saturates. A million samples take no more memory than one.
    #[test]
    fn large_latencies_are_within_a_thousandth_and_memory_is_fixed() {
        let one = latencies([1_234_567]);
        assert_eq!(one.max_us(), 1_234_943);
        assert_eq!(one.per_mille(500), 1_234_943);
        assert_eq!(latencies([u64::MAX / 2]).max_us(), 3_600_809_983);
        let mut many = Latencies::default();
        for us in 0..1_000_000u64 {
            many.record(Duration::from_micros(us % 5_000));
        }
        assert_eq!(many.0.len(), 1_000_000);
        assert_eq!(many.0.distinct_values(), one.0.distinct_values());
        assert_eq!(
            many.percentiles(),
            Percentiles {
                p50_us: 2_499,
                p99_us: 4_951,
                p999_us: 4_995
            }
        );
    }

    #[test]
    fn failures_are_named_in_snake_case() {
        assert_eq!(failure_label(Outcome::Delivered), None);
        assert_eq!(
            failure_label(Outcome::Failed(FailReason::NoRoute)).as_deref(),
            Some("no_route")
        );
        assert_eq!(
            failure_label(Outcome::Failed(FailReason::QueueFull)).as_deref(),
            Some("queue_full")
        );
        assert_eq!(
            failure_label(Outcome::Unknown(FailReason::Timeout)).as_deref(),
            Some("unknown_timeout")
        );
        assert_eq!(
            failure_label(Outcome::Unknown(FailReason::TargetRestarted)).as_deref(),
            Some("unknown_target_restarted")
        );
        assert_eq!(
            refusal_label(&SendError::UnknownTarget),
            "refused_unknown_target"
        );
        assert_eq!(
            refusal_label(&SendError::PayloadTooLarge { len: 9, max: 8 }),
            "refused_payload_too_large"
        );
    }

    #[test]
    fn a_tally_adds_up() {
        let mut tally = Tally::default();
        for _ in 0..5 {
            tally.accepted();
        }
        tally.refused(&SendError::UnknownTarget);
        tally.outcome(Ok(Outcome::Delivered), Duration::from_micros(300));
        tally.outcome(Ok(Outcome::Delivered), Duration::from_micros(100));
        tally.outcome(Ok(Outcome::Unknown(FailReason::Timeout)), Duration::ZERO);
        tally.outcome(Err(Stopped), Duration::ZERO);
        assert_eq!((tally.sent, tally.accepted, tally.delivered), (6, 5, 2));
        assert_eq!(
            tally.failed,
            BTreeMap::from([
                ("refused_unknown_target".to_owned(), 1),
                ("unknown_timeout".to_owned(), 1)
            ])
        );
        assert_eq!(tally.stopped, 1);
        assert_eq!(tally.in_flight(), 1);
        assert_eq!(tally.failed_total(), 2);
        assert_eq!(
            tally.latency_percentiles(),
            Percentiles {
                p50_us: 100,
                p99_us: 300,
                p999_us: 300
            }
        );
        assert_eq!(tally.max_latency_us(), 300);
        assert_eq!(
            tally.spans_ms().keys().collect::<Vec<_>>(),
            ["delivered", "refused_unknown_target", "unknown_timeout"]
        );
    }

    #[test]
    fn a_repeated_sequence_number_from_one_sender_is_a_duplicate() {
        let mut counter = DuplicateCounter::default();
        assert!(counter.record(1, 0));
        assert!(counter.record(1, 1));
        assert!(counter.record(2, 0), "another sender's seq 0 is its own");
        assert!(!counter.record(1, 0));
        assert!(!counter.record(1, 0));
        assert_eq!((counter.unique, counter.duplicates), (3, 2));
    }
}
