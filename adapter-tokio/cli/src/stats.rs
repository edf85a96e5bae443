//! Counting what `load` and `demo` see: a [`Tally`] of sends and their outcomes (with the
//! latency of each delivery), a [`DuplicateCounter`] of received sequence numbers, exact
//! nearest-rank percentiles, and the snake-case names failures are reported under.

use std::{
    collections::{BTreeMap, HashSet},
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use switchboard_core::{node::SendError, outcome::Outcome};
use switchboard_tokio::node::Stopped;

/// The nearest-rank `percent` percentile of an ascending `sorted` sample: the smallest value
/// with at least `percent`% of the sample at or below it. 0 for an empty sample.
pub(crate) fn percentile(sorted: &[u64], percent: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let percent = u64::from(percent.min(100));
    let len = sorted.len() as u64;
    // rank = ceil(percent / 100 * len), at least 1.
    let rank = (percent * len).div_ceil(100).max(1);
    let index = usize::try_from(rank - 1).unwrap_or(usize::MAX);
    sorted.get(index).copied().unwrap_or(0)
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
    /// Send → `Delivered` latency of each delivery, in µs.
    pub(crate) latencies_us: Vec<u64>,
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
                    self.latencies_us
                        .push(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
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

    /// (p50, p99) of the delivery latencies, in µs.
    pub(crate) fn latency_percentiles(&self) -> (u64, u64) {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        (percentile(&sorted, 50), percentile(&sorted, 99))
    }

    /// The largest delivery latency, in µs (0 without deliveries).
    pub(crate) fn max_latency_us(&self) -> u64 {
        self.latencies_us.iter().copied().max().unwrap_or(0)
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

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let sample: Vec<u64> = (1..=10).map(|v| v * 10).collect();
        assert_eq!(percentile(&sample, 50), 50);
        assert_eq!(percentile(&sample, 99), 100);
        assert_eq!(percentile(&sample, 90), 90);
        assert_eq!(percentile(&sample, 91), 100);
        assert_eq!(percentile(&sample, 0), 10);
        assert_eq!(percentile(&sample, 100), 100);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&hundred, 50), 50);
        assert_eq!(percentile(&hundred, 99), 99);
        let thousand: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&thousand, 99), 990);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 50), 0);
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
        assert_eq!(tally.latency_percentiles(), (100, 300));
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
