//! `load --outcomes-log FILE`: when each message was handed to the node and when its outcome
//! came, on the system clock (microseconds since the Unix epoch), so that another process on
//! the same host (a test that kills the target) can line its own instants up with them.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::Path,
    sync::{Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use crate::{error::CliError, stats::NO_OUTCOME};

pub(crate) use crate::stats::DELIVERED;

/// Microseconds since the Unix epoch now (0 if the clock is before it).
pub(crate) fn unix_micros_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// One message: sent at, and its outcome with the instant it came (if it came).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    sent_us: u64,
    outcome: Option<(u64, String)>,
}

/// The instants of every message of a run, by sequence number.
#[derive(Debug, Default)]
pub(crate) struct OutcomeLog(Mutex<BTreeMap<u64, Entry>>);

impl OutcomeLog {
    /// Message `seq` was handed to the node at `sent_us`.
    pub(crate) fn sent(&self, seq: u64, sent_us: u64) {
        self.lock().insert(
            seq,
            Entry {
                sent_us,
                outcome: None,
            },
        );
    }

    /// Message `seq` ended (or was refused) with `label` now.
    pub(crate) fn outcome(&self, seq: u64, label: String) {
        let now = unix_micros_now();
        if let Some(entry) = self.lock().get_mut(&seq) {
            entry.outcome = Some((now, label));
        }
    }

    /// The log's text: `SEQ SENT_US OUTCOME_US OUTCOME` per message in sequence order; a
    /// message without an outcome is `no_outcome` at 0.
    pub(crate) fn render(&self) -> String {
        let entries = self.lock();
        let mut out = String::with_capacity(entries.len() * 40);
        for (seq, entry) in entries.iter() {
            let (at, label) = entry
                .outcome
                .as_ref()
                .map_or((0, NO_OUTCOME), |(at, label)| (*at, label.as_str()));
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{seq} {} {at} {label}", entry.sent_us);
        }
        out
    }

    /// Writes [`OutcomeLog::render`] to `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub(crate) fn write(&self, path: &Path) -> Result<(), CliError> {
        std::fs::write(path, self.render()).map_err(|e| {
            CliError::failed(format!(
                "outcomes_log: cannot write {}: {e}",
                path.display()
            ))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_is_one_line_in_sequence_order() {
        let log = OutcomeLog::default();
        log.sent(1, 2_000);
        log.sent(0, 1_000);
        log.sent(2, 3_000);
        log.outcome(0, DELIVERED.to_owned());
        log.outcome(2, "unknown_target_gone".to_owned());
        log.outcome(7, DELIVERED.to_owned());
        let text = log.render();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            (lines[0][0], lines[0][1], lines[0][3]),
            ("0", "1000", "delivered")
        );
        assert!(lines[0][2].parse::<u64>().expect("an instant") >= 1_000);
        assert_eq!(lines[1], ["1", "2000", "0", "no_outcome"]);
        assert_eq!((lines[2][0], lines[2][3]), ("2", "unknown_target_gone"));
    }
}
