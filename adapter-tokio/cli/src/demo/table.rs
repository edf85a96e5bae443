//! The demo's results: the JSON summary line and the human table (events with their times,
//! then sent / delivered / failed by reason / duplicates / lost / latency).

use std::{collections::BTreeMap, fmt::Write as _, time::Duration};

use serde::Serialize;

use super::scenario::Event;
use crate::stats::Tally;

/// The summary line of `demo --json`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct DemoSummary {
    /// Sends handed to a client node (accepted or refused).
    pub(crate) sent: u64,
    /// `Delivered` outcomes.
    pub(crate) delivered: u64,
    /// Refusals (`refused_*`) and failure outcomes by reason.
    pub(crate) failed: BTreeMap<String, u64>,
    /// Messages a receiver saw more than once.
    pub(crate) duplicates: u64,
    /// Accepted sends that never got an outcome.
    pub(crate) lost: u64,
    /// Median send → delivered latency, µs.
    pub(crate) p50_us: u64,
    /// 99th percentile send → delivered latency, µs.
    pub(crate) p99_us: u64,
    /// Nodes whose registration the registry refused (their id or name was held, e.g. by
    /// another demo on the same etcd prefix).
    pub(crate) conflicts: u64,
}

impl DemoSummary {
    /// The summary of a finished run.
    pub(crate) fn new(tally: &Tally, duplicates: u64, conflicts: u64) -> DemoSummary {
        let percentiles = tally.latency_percentiles();
        let (p50_us, p99_us) = (percentiles.p50_us, percentiles.p99_us);
        DemoSummary {
            sent: tally.sent,
            delivered: tally.delivered,
            failed: tally.failed.clone(),
            duplicates,
            lost: tally.in_flight() + tally.stopped,
            p50_us,
            p99_us,
            conflicts,
        }
    }
}

/// Everything the table shows.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// The summary.
    pub(crate) summary: DemoSummary,
    /// Distinct messages the leaves received.
    pub(crate) received: u64,
    /// Received payloads whose bytes were wrong.
    pub(crate) corrupt: u64,
    /// The run's events in order.
    pub(crate) events: Vec<Event>,
    /// One line describing the setup.
    pub(crate) setup: String,
    /// The slowest delivery: its latency and when it was sent (since traffic started).
    pub(crate) slowest: Option<(Duration, Duration)>,
}

impl Report {
    /// Whether the run passed: nothing lost, nothing duplicated, nothing corrupted, and every
    /// node registered (a conflict means another cluster shares the registry).
    pub(crate) fn passed(&self) -> bool {
        self.summary.lost == 0
            && self.summary.duplicates == 0
            && self.corrupt == 0
            && self.summary.conflicts == 0
    }

    /// Where the slowest delivery was sent: the last event at or before its send time.
    fn slowest_note(&self) -> Option<String> {
        let (latency, sent) = self.slowest?;
        let phase = self.events.iter().rev().find(|e| e.at <= sent)?;
        Some(format!(
            "slowest delivery {} (sent at {}, after \"{}\" at {})",
            millis(latency),
            seconds(sent),
            phase.text,
            seconds(phase.at)
        ))
    }
}

/// Renders the table.
pub(crate) fn render(report: &Report) -> String {
    let s = &report.summary;
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{}", report.setup);
    let _ = writeln!(out);
    let _ = writeln!(out, "events");
    for event in &report.events {
        let _ = writeln!(out, "  {:>7}  {}", seconds(event.at), event.text);
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "results");
    let row = |out: &mut String, name: &str, value: String| {
        let _ = writeln!(out, "  {name:<28}{value:>10}");
    };
    row(&mut out, "sent", s.sent.to_string());
    row(&mut out, "delivered", s.delivered.to_string());
    row(
        &mut out,
        "failed",
        s.failed.values().sum::<u64>().to_string(),
    );
    for (reason, count) in &s.failed {
        row(&mut out, &format!("  {reason}"), count.to_string());
    }
    row(&mut out, "duplicates", s.duplicates.to_string());
    row(&mut out, "lost", s.lost.to_string());
    row(&mut out, "received (distinct)", report.received.to_string());
    row(&mut out, "corrupt payloads", report.corrupt.to_string());
    row(&mut out, "registration conflicts", s.conflicts.to_string());
    row(
        &mut out,
        "latency p50",
        millis(Duration::from_micros(s.p50_us)),
    );
    row(
        &mut out,
        "latency p99",
        millis(Duration::from_micros(s.p99_us)),
    );
    if let Some(note) = report.slowest_note() {
        let _ = writeln!(out, "  {note}");
    }
    let verdict = if report.passed() {
        "PASS: every accepted message has exactly one outcome, none was duplicated"
    } else if s.conflicts > 0 {
        "FAIL: the registry refused nodes (another cluster holds their ids or names)"
    } else {
        "FAIL: messages were lost, duplicated or corrupted"
    };
    let _ = writeln!(out);
    let _ = writeln!(out, "{verdict}");
    out
}

/// `388.5 ms`.
fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// `12.3 s`.
fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use switchboard_core::outcome::{FailReason, Outcome};

    use super::*;

    fn report() -> Report {
        Report {
            summary: DemoSummary {
                sent: 1200,
                delivered: 1150,
                failed: BTreeMap::from([
                    ("timeout".to_owned(), 20),
                    ("unknown_target_restarted".to_owned(), 30),
                ]),
                duplicates: 0,
                lost: 0,
                p50_us: 850,
                p99_us: 388_497,
                conflicts: 0,
            },
            received: 1160,
            corrupt: 0,
            events: vec![
                Event {
                    at: Duration::ZERO,
                    text: "traffic started".to_owned(),
                },
                Event {
                    at: Duration::from_millis(3050),
                    text: "proxy 101 killed abruptly".to_owned(),
                },
            ],
            setup: "switchboard demo: 6 s".to_owned(),
            slowest: Some((Duration::from_micros(412_345), Duration::from_millis(3100))),
        }
    }

    #[test]
    fn the_table_lists_events_then_results() {
        let expected = "\
switchboard demo: 6 s

events
    0.0 s  traffic started
    3.0 s  proxy 101 killed abruptly

results
  sent                              1200
  delivered                         1150
  failed                              50
    timeout                           20
    unknown_target_restarted          30
  duplicates                           0
  lost                                 0
  received (distinct)               1160
  corrupt payloads                     0
  registration conflicts               0
  latency p50                     0.8 ms
  latency p99                   388.5 ms
  slowest delivery 412.3 ms (sent at 3.1 s, after \"proxy 101 killed abruptly\" at 3.0 s)

PASS: every accepted message has exactly one outcome, none was duplicated
";
        assert_eq!(render(&report()), expected);
    }

    #[test]
    fn a_lost_or_duplicated_message_fails_the_run() {
        let mut r = report();
        assert!(r.passed());
        r.summary.lost = 1;
        assert!(!r.passed());
        assert!(render(&r).ends_with("FAIL: messages were lost, duplicated or corrupted\n"));
        let mut r = report();
        r.summary.duplicates = 1;
        assert!(!r.passed());
        let mut r = report();
        r.summary.conflicts = 1;
        assert!(!r.passed());
        assert!(render(&r).ends_with(
            "FAIL: the registry refused nodes (another cluster holds their ids or names)\n"
        ));
    }

    #[test]
    fn the_summary_takes_lost_from_outcomes_never_seen() {
        let mut tally = Tally::default();
        for _ in 0..3 {
            tally.accepted();
        }
        tally.outcome(Ok(Outcome::Delivered), Duration::from_micros(10));
        tally.outcome(Ok(Outcome::Failed(FailReason::Timeout)), Duration::ZERO);
        let summary = DemoSummary::new(&tally, 2, 0);
        assert_eq!(
            serde_json::to_string(&summary).expect("json"),
            r#"{"sent":3,"delivered":1,"failed":{"timeout":1},"duplicates":2,"lost":1,"p50_us":10,"p99_us":10,"conflicts":0}"#
        );
    }
}
