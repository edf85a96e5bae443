//! The figures of issue 11 ("know fast, recover fast"), measured from a load run's outcomes
//! log (`load --outcomes-log`) against instants the test took itself (a kill, a stop, a ready
//! line read), all on the system clock in µs since the Unix epoch.
//!
//! A test takes its instant *before* it sends the signal, so a figure measured from it is
//! never smaller than the truth; a ready line's instant is when the test read it, at most a
//! scheduling delay after the node printed it.

use super::load::OutcomeLine;

/// Messages a fault concerned and how long they waited for their outcomes.
#[derive(Clone, Debug, PartialEq)]
pub struct InFlight {
    /// The messages.
    pub messages: Vec<OutcomeLine>,
    /// The longest wait among them, in ms: from the fault (or from the send, for a message
    /// sent after it) to the outcome; `None` when there were none, infinite for a message
    /// without an outcome.
    pub last_outcome_ms: Option<f64>,
}

/// Messages in flight at `fault_us` — handed to the node at or before it, without an
/// outcome then — and how long after it their last outcome came.
#[must_use]
pub fn in_flight_at(lines: &[OutcomeLine], fault_us: u64) -> InFlight {
    waits(lines, fault_us, |l| {
        l.sent_us <= fault_us && (l.outcome_us > fault_us || l.outcome_us == 0)
    })
}

/// Messages handed to the node after `fault_us` that ended `unknown_*` (transmitted toward
/// a dead peer, never acknowledged), and the longest wait from a send to its outcome.
#[must_use]
pub fn unknown_sent_after(lines: &[OutcomeLine], fault_us: u64) -> InFlight {
    waits(lines, fault_us, |l| {
        l.sent_us > fault_us && l.outcome.starts_with("unknown_")
    })
}

fn waits(lines: &[OutcomeLine], fault_us: u64, keep: impl Fn(&OutcomeLine) -> bool) -> InFlight {
    let messages: Vec<OutcomeLine> = lines.iter().filter(|l| keep(l)).cloned().collect();
    let last_outcome_ms = messages
        .iter()
        .map(|l| {
            if l.outcome_us == 0 {
                f64::INFINITY
            } else {
                ms_between(l.sent_us.max(fault_us), l.outcome_us)
            }
        })
        .reduce(f64::max);
    InFlight {
        messages,
        last_outcome_ms,
    }
}

/// The first `Delivered` outcome of a message handed to the node after `after_us` (so it
/// cannot have reached a life that ended at `after_us`), in ms after `reference_us` (negative
/// if before); `None` when no such message was delivered.
#[must_use]
pub fn first_delivery_ms(lines: &[OutcomeLine], after_us: u64, reference_us: u64) -> Option<f64> {
    lines
        .iter()
        .filter(|l| l.sent_us > after_us && l.delivered())
        .map(|l| l.outcome_us)
        .min()
        .map(|at| ms_between(reference_us, at))
}

/// `to - from` in ms (negative if `to` is earlier).
#[must_use]
pub fn ms_between(from_us: u64, to_us: u64) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "µs differences of a test run are far below 2^52"
    )]
    let ms = (i128::from(to_us) - i128::from(from_us)) as f64 / 1000.0;
    ms
}

/// Prints `figure: NAME=VALUE` on stderr, the line the report collects.
pub fn report(name: &str, value: f64) {
    eprintln!("figure: {name}={value:.1}");
}

/// A compact timeline of what happened around `fault_us`, for the test's output: for each
/// outcome, how many messages, and the range of their send and outcome instants in ms after
/// the fault (only the messages sent or ended within 10 s of it).
#[must_use]
pub fn timeline(lines: &[OutcomeLine], fault_us: u64) -> String {
    let mut by_outcome: std::collections::BTreeMap<&str, (u64, f64, f64, f64, f64)> =
        std::collections::BTreeMap::new();
    for line in lines {
        let sent = ms_between(fault_us, line.sent_us);
        let ended = if line.outcome_us == 0 {
            f64::INFINITY
        } else {
            ms_between(fault_us, line.outcome_us)
        };
        if ended < 0.0 {
            continue;
        }
        let entry = by_outcome.entry(line.outcome.as_str()).or_insert((
            0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ));
        entry.0 += 1;
        entry.1 = entry.1.min(sent);
        entry.2 = entry.2.max(sent);
        entry.3 = entry.3.min(ended);
        entry.4 = entry.4.max(ended);
    }
    by_outcome
        .iter()
        .map(|(outcome, (n, s0, s1, e0, e1))| {
            format!("{outcome}: {n} sent {s0:.1}..{s1:.1} ms, ended {e0:.1}..{e1:.1} ms")
        })
        .collect::<Vec<_>>()
        .join("; ")
}
