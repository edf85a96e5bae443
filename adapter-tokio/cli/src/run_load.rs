//! `switchboard load`: a node of its own sends `count` numbered messages at a steady rate,
//! keeps every outcome, counts echoes, and prints one JSON summary line.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use serde::Serialize;
use switchboard_tokio::{Inbox, NodeBuilder, NodeHandle, SendFailure};
use tokio::{sync::Semaphore, time::Instant};

use crate::{
    config::load::LoadOptions,
    error::CliError,
    lifecycle::{print_json_line, shutdown_bounded, start_error},
    outcome_log::{DELIVERED, OutcomeLog, unix_micros_now},
    payload,
    stats::{DuplicateCounter, NO_OUTCOME, SharedTally, Tally, failure_label, refusal_label},
};

/// Message type of load messages (echoes come back with it).
pub(crate) const LOAD_MSG_TYPE: u32 = 0x10AD;
/// Extra time, past the message timeout, for the last outcomes to arrive.
const OUTCOME_MARGIN: Duration = Duration::from_secs(2);
/// Echoes are waited for until none came for this long ...
const ECHO_QUIET: Duration = Duration::from_millis(250);
/// ... or this much time passed after the last outcome.
const ECHO_SETTLE_MAX: Duration = Duration::from_secs(3);

/// The summary line.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct LoadSummary {
    /// Messages handed to the node (accepted or refused).
    pub(crate) sent: u64,
    /// `Delivered` outcomes.
    pub(crate) delivered: u64,
    /// Refusals (`refused_*`), failure outcomes and missing outcomes (`no_outcome`).
    pub(crate) failed: BTreeMap<String, u64>,
    /// Echoes whose sequence number was already seen.
    pub(crate) duplicates: u64,
    /// Distinct echoed sequence numbers.
    pub(crate) echoed: u64,
    /// Median send → delivered latency, µs.
    pub(crate) p50_us: u64,
    /// 99th percentile send → delivered latency, µs.
    pub(crate) p99_us: u64,
}

impl LoadSummary {
    /// The summary of a finished run; accepted sends still in flight count as `no_outcome`.
    pub(crate) fn new(mut tally: Tally, echoes: &DuplicateCounter) -> LoadSummary {
        let missing = tally.in_flight() + tally.stopped;
        if missing > 0 {
            *tally.failed.entry(NO_OUTCOME.to_owned()).or_default() += missing;
        }
        let (p50_us, p99_us) = tally.latency_percentiles();
        LoadSummary {
            sent: tally.sent,
            delivered: tally.delivered,
            failed: tally.failed,
            duplicates: echoes.duplicates,
            echoed: echoes.unique,
            p50_us,
            p99_us,
        }
    }
}

/// Runs the load and prints the summary.
///
/// # Errors
///
/// The node did not start, or stopped while sending.
pub(crate) async fn run(options: LoadOptions) -> Result<(), CliError> {
    let message_timeout = options.core.message_timeout;
    let mut builder = NodeBuilder::new(options.core.id, options.core.name.clone());
    if let Some((listen, advertise)) = options.listen.clone() {
        builder = builder.listen(listen).advertise(advertise);
    }
    let (handle, inbox) = builder
        .registry_spec(options.registry.clone())
        .config({
            let core = options.core.clone();
            move |config| *config = core
        })
        .start()
        .await
        .map_err(start_error)?;
    let echoes = Arc::new(Mutex::new(DuplicateCounter::default()));
    let echo_task = tokio::spawn(count_echoes(inbox, Arc::clone(&echoes)));
    // The view is complete once registered, so a registered target is known by then. Names
    // are not listed in the view (it holds ids): an unknown name is refused per send.
    let own = handle.id();
    let ready = handle
        .wait_for(options.wait_known, |k| {
            k.registered && k.discovery.keys().any(|id| *id != own)
        })
        .await;
    if !ready {
        tracing::warn!(
            "the registry and the target were not known within {:?}; sending anyway",
            options.wait_known
        );
    }
    let tally = Arc::new(SharedTally::default());
    let log = options
        .outcomes_log
        .as_ref()
        .map(|_| Arc::new(OutcomeLog::default()));
    let sent = send_all(&handle, &options, &tally, log.as_ref()).await;
    let outcome_deadline = Instant::now() + message_timeout + OUTCOME_MARGIN;
    while tally.lock().in_flight() > 0 && Instant::now() < outcome_deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    settle_echoes(&echoes).await;
    let summary = {
        let echoes = echoes.lock().unwrap_or_else(PoisonError::into_inner);
        LoadSummary::new(tally.snapshot(), &echoes)
    };
    shutdown_bounded(&handle).await;
    echo_task.abort();
    sent?;
    if let (Some(log), Some(path)) = (&log, &options.outcomes_log) {
        log.write(path)?;
    }
    print_json_line(&summary)
}

/// Sends every message, paced at `rate` per second (0 = unpaced), at most `window` in flight;
/// with a `log`, records when each was sent and when its outcome came.
async fn send_all(
    handle: &NodeHandle,
    options: &LoadOptions,
    tally: &Arc<SharedTally>,
    log: Option<&Arc<OutcomeLog>>,
) -> Result<(), CliError> {
    let window = Arc::new(Semaphore::new(options.window));
    let start = Instant::now();
    for seq in 0..options.count {
        if options.rate > 0 {
            tokio::time::sleep_until(start + send_offset(seq, options.rate)).await;
        }
        let permit = Arc::clone(&window)
            .acquire_owned()
            .await
            .map_err(|_| CliError::failed("the in-flight window closed"))?;
        let sent_at = Instant::now();
        if let Some(log) = log {
            log.sent(seq, unix_micros_now());
        }
        let submitted = handle
            .submit(
                options.target.clone(),
                LOAD_MSG_TYPE,
                payload::encode(seq, options.size),
            )
            .await;
        match submitted {
            Ok(pending) => {
                tally.lock().accepted();
                let tally = Arc::clone(tally);
                let log = log.map(Arc::clone);
                tokio::spawn(async move {
                    let outcome = pending.await;
                    if let Some(log) = log {
                        let label = match &outcome {
                            Ok(outcome) => failure_label(*outcome),
                            Err(_) => Some(NO_OUTCOME.to_owned()),
                        };
                        log.outcome(seq, label.unwrap_or_else(|| DELIVERED.to_owned()));
                    }
                    tally.lock().outcome(outcome, sent_at.elapsed());
                    drop(permit);
                });
            }
            Err(SendFailure::Refused(e)) => {
                if let Some(log) = log {
                    log.outcome(seq, refusal_label(&e));
                }
                tally.lock().refused(&e);
            }
            Err(other) => return Err(CliError::failed(format!("sending failed: {other}"))),
        }
    }
    Ok(())
}

/// When message `seq` is due, counted from the start, at `rate` messages per second.
pub(crate) fn send_offset(seq: u64, rate: u64) -> Duration {
    let nanos = u128::from(seq) * 1_000_000_000 / u128::from(rate.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// Counts echoed load messages by sequence number until the node stops.
async fn count_echoes(mut inbox: Inbox, echoes: Arc<Mutex<DuplicateCounter>>) {
    while let Some(message) = inbox.recv().await {
        if message.msg_type != LOAD_MSG_TYPE {
            continue;
        }
        let Some(seq) = payload::decode_seq(&message.payload) else {
            tracing::warn!(from = %message.from, "an echo without a sequence number");
            continue;
        };
        if !payload::is_intact(&message.payload) {
            tracing::warn!(from = %message.from, seq, "an echo with a corrupted payload");
        }
        echoes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(0, seq);
    }
}

/// Waits until no echo came for [`ECHO_QUIET`], at most [`ECHO_SETTLE_MAX`].
async fn settle_echoes(echoes: &Mutex<DuplicateCounter>) {
    let total = || {
        let e = echoes.lock().unwrap_or_else(PoisonError::into_inner);
        e.unique + e.duplicates
    };
    let deadline = Instant::now() + ECHO_SETTLE_MAX;
    let mut last = total();
    while Instant::now() < deadline {
        tokio::time::sleep(ECHO_QUIET).await;
        let now = total();
        if now == last {
            return;
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::{
        node::SendError,
        outcome::{FailReason, Outcome},
    };
    use switchboard_tokio::node::Stopped;

    use super::*;

    #[test]
    fn sends_are_spread_evenly_over_each_second() {
        assert_eq!(send_offset(0, 100), Duration::ZERO);
        assert_eq!(send_offset(1, 100), Duration::from_millis(10));
        assert_eq!(send_offset(250, 100), Duration::from_millis(2500));
        assert_eq!(send_offset(1, 3), Duration::from_nanos(333_333_333));
    }

    #[test]
    fn the_summary_counts_missing_outcomes_as_failed_and_adds_up() {
        let mut tally = Tally::default();
        for _ in 0..4 {
            tally.accepted();
        }
        tally.refused(&SendError::UnknownTarget);
        tally.outcome(Ok(Outcome::Delivered), Duration::from_micros(40));
        tally.outcome(Ok(Outcome::Failed(FailReason::NoRoute)), Duration::ZERO);
        tally.outcome(Err(Stopped), Duration::ZERO);
        let mut echoes = DuplicateCounter::default();
        echoes.record(0, 0);
        echoes.record(0, 0);
        let summary = LoadSummary::new(tally, &echoes);
        assert_eq!(
            summary,
            LoadSummary {
                sent: 5,
                delivered: 1,
                failed: BTreeMap::from([
                    ("no_outcome".to_owned(), 2),
                    ("no_route".to_owned(), 1),
                    ("refused_unknown_target".to_owned(), 1),
                ]),
                duplicates: 1,
                echoed: 1,
                p50_us: 40,
                p99_us: 40,
            }
        );
        assert_eq!(
            summary.sent,
            summary.delivered + summary.failed.values().sum::<u64>()
        );
        assert_eq!(
            serde_json::to_string(&summary).expect("json"),
            r#"{"sent":5,"delivered":1,"failed":{"no_outcome":2,"no_route":1,"refused_unknown_target":1},"duplicates":1,"echoed":1,"p50_us":40,"p99_us":40}"#
        );
    }
}
