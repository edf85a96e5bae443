//! The live progress line on stderr once per second with the elapsed time and the running
//! counts: rewritten in place (`\r`) on a terminal, one plain line per second otherwise (a
//! log file or a pipe gets no carriage returns).

use std::{
    io::{IsTerminal, Write},
    sync::Arc,
    time::Duration,
};

use tokio::{task::JoinHandle, time::Instant};

use crate::stats::{SharedTally, Tally};

/// The progress line for `tally` at `elapsed` (without the leading `\r`).
pub(crate) fn progress_line(elapsed: Duration, tally: &Tally) -> String {
    format!(
        "[{:>5.1} s] sent {}  delivered {}  failed {}  in flight {}",
        elapsed.as_secs_f64(),
        tally.sent,
        tally.delivered,
        tally.failed_total(),
        tally.in_flight()
    )
}

/// Whether progress is rewritten in place (stderr is a terminal) or printed as lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProgressStyle {
    /// `\r` and the line, padded to the widest so far.
    InPlace,
    /// The line and a newline.
    Lines,
}

impl ProgressStyle {
    /// [`ProgressStyle::InPlace`] when stderr is a terminal.
    pub(crate) fn for_stderr() -> ProgressStyle {
        if std::io::stderr().is_terminal() {
            ProgressStyle::InPlace
        } else {
            ProgressStyle::Lines
        }
    }
}

/// Prints the progress every second until aborted.
pub(crate) fn spawn_progress(
    tally: Arc<SharedTally>,
    start: Instant,
    style: ProgressStyle,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_secs(1));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut widest = 0;
        loop {
            ticks.tick().await;
            let line = progress_line(start.elapsed(), &tally.snapshot());
            widest = widest.max(line.len());
            let mut stderr = std::io::stderr().lock();
            // Progress is best effort: a closed stderr only loses the line.
            let _ = match style {
                ProgressStyle::InPlace => write!(stderr, "\r{line:<widest$}"),
                ProgressStyle::Lines => writeln!(stderr, "{line}"),
            };
            let _ = stderr.flush();
        }
    })
}

/// Stops the progress (and on a terminal moves stderr to a fresh line).
pub(crate) fn finish_progress(task: JoinHandle<()>, style: ProgressStyle) {
    task.abort();
    if style == ProgressStyle::InPlace {
        eprintln!();
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::outcome::Outcome;

    use super::*;

    #[test]
    fn the_line_shows_elapsed_time_and_running_counts() {
        let mut tally = Tally::default();
        for _ in 0..3 {
            tally.accepted();
        }
        tally.outcome(Ok(Outcome::Delivered), Duration::from_micros(5));
        tally.refused(&switchboard_core::node::SendError::UnknownTarget);
        assert_eq!(
            progress_line(Duration::from_millis(12_340), &tally),
            "[ 12.3 s] sent 4  delivered 1  failed 1  in flight 2"
        );
    }
}
