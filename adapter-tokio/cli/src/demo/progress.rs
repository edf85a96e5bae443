//! The live progress line on stderr: rewritten in place (`\r`) once per second with the
//! elapsed time and the running counts.

use std::{io::Write, sync::Arc, time::Duration};

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

/// Rewrites the progress line every second until aborted.
pub(crate) fn spawn_progress(tally: Arc<SharedTally>, start: Instant) -> JoinHandle<()> {
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
            let _ = write!(stderr, "\r{line:<widest$}");
            let _ = stderr.flush();
        }
    })
}

/// Ends the progress line (moves stderr to a fresh line).
pub(crate) fn finish_progress(task: JoinHandle<()>) {
    task.abort();
    eprintln!();
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
