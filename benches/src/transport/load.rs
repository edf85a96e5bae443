//! The two load shapes both sides are measured with, driven by one sender loop.
//!
//! A [`Load`] keeps at most `in_flight` requests outstanding (a window: a request takes a
//! permit when sent, its completion returns it) and, when `rate_per_sec` is set, paces sends
//! on a fixed schedule (message `i` is due `i / rate` after the start; the runtime's 1 ms timer
//! wakes the sender, which then sends every message that is due, so a 10 k msg/s load goes out
//! as bursts of about 10 per millisecond — the same for both sides). It stops after a duration
//! or a count. `drive` is the sender loop; each side supplies a `RequestSink` (how one
//! request goes out) and its own completion task (which records the round trip into
//! [`Latencies`] and returns the permit).

use std::{
    collections::BTreeMap,
    future::Future,
    time::{Duration, Instant},
};

use tokio::sync::Semaphore;

use super::{BenchError, stats::Latencies};

/// When a run stops sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// After this long since the first send.
    After(Duration),
    /// After this many requests.
    Count(u64),
}

/// The shape of one measured run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    /// Most requests outstanding at once (≥ 1).
    pub in_flight: usize,
    /// Paced sends at this many per second; `None` = as fast as the window allows.
    pub rate_per_sec: Option<u64>,
    /// When to stop sending.
    pub stop: Stop,
}

impl Load {
    /// As fast as a window of `in_flight` allows, for `duration`.
    #[must_use]
    pub fn windowed(in_flight: usize, duration: Duration) -> Load {
        Load {
            in_flight,
            rate_per_sec: None,
            stop: Stop::After(duration),
        }
    }

    /// `rate_per_sec` paced sends for `duration`, at most `in_flight` outstanding.
    #[must_use]
    pub fn paced(rate_per_sec: u64, in_flight: usize, duration: Duration) -> Load {
        Load {
            in_flight,
            rate_per_sec: Some(rate_per_sec),
            stop: Stop::After(duration),
        }
    }

    /// The number of requests the run will send at most, for sizing sample buffers.
    #[must_use]
    pub fn expected_requests(&self) -> usize {
        match (self.stop, self.rate_per_sec) {
            (Stop::Count(n), _) => usize::try_from(n).unwrap_or(usize::MAX),
            (Stop::After(d), Some(rate)) => (d.as_secs_f64() * rate as f64) as usize + 1,
            // Unpaced for a duration: a guess; the buffer grows if it is short.
            (Stop::After(d), None) => (d.as_secs_f64() * 200_000.0) as usize,
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutcome {
    /// Requests sent.
    pub sent: u64,
    /// Round trips completed successfully (echo received / `Outcome::Delivered`).
    pub completed: u64,
    /// Requests that ended otherwise (a failed or unknown outcome, a corrupt echo).
    pub failed: u64,
    /// `failed` by reason (`failed_timeout`, `corrupt_echo`, ...).
    pub failures: BTreeMap<String, u64>,
    /// From the first send to the last completion.
    pub elapsed: Duration,
    /// Every completed round trip.
    pub latencies: Latencies,
}

/// `count` per second of `elapsed` (0 for no time).
#[must_use]
pub fn per_sec(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

impl RunOutcome {
    /// Completed round trips per second of `elapsed`.
    #[must_use]
    pub fn msgs_per_sec(&self) -> f64 {
        per_sec(self.completed, self.elapsed)
    }
}

/// How one side puts a request on its way. `send` must not wait for the round trip.
pub(crate) trait RequestSink: Send {
    /// Sends one request; `sent_at` is the instant its round trip is measured from.
    fn send(&mut self, sent_at: Instant) -> impl Future<Output = Result<(), BenchError>> + Send;

    /// Pushes out anything buffered; called before the sender waits (window full, pacing).
    fn flush(&mut self) -> impl Future<Output = Result<(), BenchError>> + Send;
}

/// The sender loop: sends per `load` through `sink`, taking a `window` permit per request
/// (the completion side returns it). Returns the first send's instant and the count sent.
///
/// # Errors
///
/// The sink's error.
pub(crate) async fn drive<S: RequestSink>(
    sink: &mut S,
    load: &Load,
    window: &Semaphore,
) -> Result<(Instant, u64), BenchError> {
    let started = Instant::now();
    let tokio_started = tokio::time::Instant::from_std(started);
    let mut sent: u64 = 0;
    loop {
        let now = Instant::now();
        match load.stop {
            Stop::Count(n) if sent >= n => break,
            Stop::After(d) if now.duration_since(started) >= d => break,
            _ => {}
        }
        if let Some(rate) = load.rate_per_sec {
            let due = due_by(now.duration_since(started), rate);
            if sent >= due {
                sink.flush().await?;
                let next = tokio_started + schedule_offset(sent, rate);
                tokio::time::sleep_until(next).await;
                continue;
            }
        }
        // One clock read per request when the window has room (the usual case at a
        // steady state); a fresh one after waiting for a permit.
        let sent_at = match window.try_acquire() {
            Ok(permit) => {
                permit.forget();
                now
            }
            Err(_) => {
                sink.flush().await?;
                window
                    .acquire()
                    .await
                    .map_err(|_| BenchError::WindowClosed)?
                    .forget();
                Instant::now()
            }
        };
        sink.send(sent_at).await?;
        sent += 1;
    }
    sink.flush().await?;
    Ok((started, sent))
}

/// How many messages of a paced schedule are due `elapsed` after its start (message 0 is due
/// at once).
fn due_by(elapsed: Duration, rate_per_sec: u64) -> u64 {
    (elapsed.as_nanos() * u128::from(rate_per_sec) / 1_000_000_000) as u64 + 1
}

/// When message `index` of a paced schedule is due, from its start.
fn schedule_offset(index: u64, rate_per_sec: u64) -> Duration {
    let nanos = u128::from(index) * 1_000_000_000 / u128::from(rate_per_sec.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_schedule_is_index_over_rate() {
        assert_eq!(schedule_offset(0, 10_000), Duration::ZERO);
        assert_eq!(schedule_offset(1, 10_000), Duration::from_micros(100));
        assert_eq!(schedule_offset(25, 10_000), Duration::from_micros(2500));
        assert_eq!(due_by(Duration::ZERO, 10_000), 1);
        assert_eq!(due_by(Duration::from_micros(99), 10_000), 1);
        assert_eq!(due_by(Duration::from_micros(100), 10_000), 2);
        assert_eq!(due_by(Duration::from_millis(1), 10_000), 11);
    }

    #[test]
    fn expected_requests_follow_the_stop_rule() {
        assert_eq!(
            Load::paced(10_000, 64, Duration::from_secs(2)).expected_requests(),
            20_001
        );
        let counted = Load {
            in_flight: 8,
            rate_per_sec: None,
            stop: Stop::Count(500),
        };
        assert_eq!(counted.expected_requests(), 500);
    }

    #[test]
    fn throughput_is_completed_over_elapsed() {
        let run = RunOutcome {
            sent: 1000,
            completed: 1000,
            failed: 0,
            failures: BTreeMap::new(),
            elapsed: Duration::from_millis(250),
            latencies: Latencies::default(),
        };
        assert_eq!(run.msgs_per_sec(), 4000.0);
        assert_eq!(RunOutcome::default().msgs_per_sec(), 0.0);
    }

    /// A sink that counts; the test returns permits itself.
    struct CountingSink {
        sent: u64,
        flushes: u64,
    }

    impl RequestSink for CountingSink {
        async fn send(&mut self, _sent_at: Instant) -> Result<(), BenchError> {
            self.sent += 1;
            Ok(())
        }

        async fn flush(&mut self) -> Result<(), BenchError> {
            self.flushes += 1;
            Ok(())
        }
    }

    #[tokio::test]
    async fn count_stop_sends_exactly_that_many_within_a_large_window() {
        let window = Semaphore::new(100);
        let mut sink = CountingSink {
            sent: 0,
            flushes: 0,
        };
        let load = Load {
            in_flight: 100,
            rate_per_sec: None,
            stop: Stop::Count(37),
        };
        let (_, sent) =
            tokio::time::timeout(Duration::from_secs(5), drive(&mut sink, &load, &window))
                .await
                .expect("bounded")
                .expect("no sink error");
        assert_eq!(sent, 37);
        assert_eq!(sink.sent, 37);
        assert_eq!(sink.flushes, 1, "one final flush, the window never filled");
        assert_eq!(window.available_permits(), 63);
    }
}
