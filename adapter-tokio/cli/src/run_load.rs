//! `switchboard load`: a node of its own sends `count` numbered messages at a steady rate,
//! keeps every outcome, counts echoes, and prints one JSON summary line.

use std::{
    collections::BTreeMap,
    io::IsTerminal,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use serde::Serialize;
use switchboard_tokio::{
    Inbox, NodeBuilder, NodeHandle, SendFailure, TargetSpec,
    admin::{AdminOptions, AdminServer},
};
use tokio::{sync::Semaphore, time::Instant};

use crate::{
    client::{describe_failure, submit_when_known, wait_registered},
    config::load::{LoadOptions, LoadWork},
    error::CliError,
    lifecycle::{
        StopSignals, or_exit_on_signal, print_result, shutdown_bounded, start_error, until_signal,
    },
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
/// After a first stop signal, how long in-flight outcomes are waited for.
pub(crate) const INTERRUPT_WAIT: Duration = Duration::from_secs(1);

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
    /// 99.9th percentile send → delivered latency, µs.
    pub(crate) p999_us: u64,
    /// Largest send → delivered latency, µs.
    pub(crate) max_us: u64,
    /// Failures whose message was transmitted but not acknowledged (`unknown_*`): maybe
    /// delivered.
    pub(crate) unknown: u64,
    /// Accepted messages without an outcome at the end (`no_outcome`).
    pub(crate) lost: u64,
    /// From the first send until every outcome came (or the final wait ended), ms.
    pub(crate) elapsed_ms: u64,
    /// Messages handed to the node per second, first send to last (0 for one message).
    pub(crate) rate_achieved: u64,
    /// Per outcome class (`delivered` or a failure name), ms from its first outcome to its
    /// last.
    pub(crate) spans_ms: BTreeMap<String, u64>,
    /// A stop signal ended the run early: sending stopped, in-flight outcomes were waited
    /// for at most [`INTERRUPT_WAIT`] (the rest are `no_outcome`). Written only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) interrupted: bool,
}

/// How long a run took: the whole (first send → last outcome) and the send phase.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunTiming {
    /// First send → every outcome in (or the final wait over).
    pub(crate) elapsed: Duration,
    /// First send → last send.
    pub(crate) sending: Duration,
}

impl LoadSummary {
    /// The summary of a finished run; accepted sends still in flight count as `no_outcome`.
    pub(crate) fn new(
        mut tally: Tally,
        echoes: &DuplicateCounter,
        timing: RunTiming,
    ) -> LoadSummary {
        let missing = tally.in_flight() + tally.stopped;
        if missing > 0 {
            *tally.failed.entry(NO_OUTCOME.to_owned()).or_default() += missing;
        }
        let percentiles = tally.latency_percentiles();
        let unknown = tally
            .failed
            .iter()
            .filter(|(label, _)| label.starts_with("unknown_"))
            .map(|(_, n)| n)
            .sum();
        let rate_achieved = match tally.sent {
            0 | 1 => 0,
            n => {
                let secs = timing.sending.as_secs_f64();
                if secs > 0.0 {
                    // Rounded to whole messages per second; the cast saturates.
                    ((n - 1) as f64 / secs).round() as u64
                } else {
                    0
                }
            }
        };
        LoadSummary {
            sent: tally.sent,
            delivered: tally.delivered,
            duplicates: echoes.duplicates,
            echoed: echoes.unique,
            p50_us: percentiles.p50_us,
            p99_us: percentiles.p99_us,
            p999_us: percentiles.p999_us,
            max_us: tally.max_latency_us(),
            unknown,
            lost: missing,
            elapsed_ms: u64::try_from(timing.elapsed.as_millis()).unwrap_or(u64::MAX),
            rate_achieved,
            spans_ms: tally.spans_ms(),
            failed: tally.failed,
            interrupted: false,
        }
    }

    /// Why the run failed, as one line, if any message was not delivered:
    /// `load: 3 of 10 messages not delivered: refused unknown_target (no node named "a")`,
    /// with a count per class when there are several.
    pub(crate) fn undelivered_line(&self, target: &TargetSpec) -> Option<String> {
        let undelivered: u64 = self.failed.values().sum();
        if undelivered == 0 {
            return None;
        }
        let classes: Vec<String> = if self.failed.len() == 1 {
            self.failed
                .keys()
                .map(|label| describe_failure(label, target))
                .collect()
        } else {
            self.failed
                .iter()
                .map(|(label, n)| format!("{n} {}", describe_failure(label, target)))
                .collect()
        };
        Some(format!(
            "load: {undelivered} of {} messages not delivered: {}",
            self.sent,
            classes.join(", ")
        ))
    }
}

/// Runs the load and prints the summary.
///
/// # Errors
///
/// The node did not start, or stopped while sending.
pub(crate) async fn run(options: LoadOptions) -> Result<(), CliError> {
    let (handle, inbox, admin_server) = start_load_node(&options).await?;
    let (target, size, window) = match &options.work {
        LoadWork::Messages {
            target,
            size,
            window,
        } => (target.clone(), *size, *window),
        LoadWork::Calls(calls) => {
            let calls = calls.clone();
            return crate::run_load_calls::run(&options, &calls, handle, inbox, admin_server).await;
        }
    };
    let messages = MessageLoad {
        target,
        size,
        window,
    };
    // Held until the run ends: the endpoints serve while the load runs.
    let _admin_server = admin_server;
    // The first SIGINT/SIGTERM stops sending and reports what was done; a second exits.
    let mut signals = StopSignals::install()?;
    let message_timeout = options.core.message_timeout;
    let echoes = Arc::new(Mutex::new(DuplicateCounter::default()));
    let echo_task = tokio::spawn(count_echoes(inbox, Arc::clone(&echoes)));
    // Registered = the view is complete; a target not in it yet is waited for by the first
    // send (within the same bound), see `submit_when_known`.
    let known_deadline = Instant::now() + options.wait_known;
    if let Err(e) = wait_registered(&handle, &options.registry, options.wait_known, "load").await {
        handle.kill();
        echo_task.abort();
        return Err(e);
    }
    let tally = Arc::new(SharedTally::default());
    let log = options
        .outcomes_log
        .as_ref()
        .map(|_| Arc::new(OutcomeLog::default()));
    let progress = std::io::stderr()
        .is_terminal()
        .then(|| tokio::spawn(report_progress(Arc::clone(&tally))));
    let mut phase = SendPhase::default();
    let run = Run {
        handle: &handle,
        options: &options,
        messages: &messages,
        tally: &tally,
        log: log.as_ref(),
    };
    let sent = send_all(&run, known_deadline, &mut phase, &mut signals).await;
    let mut interrupted = sent.as_ref().ok().copied().flatten();
    if interrupted.is_none() {
        let waited = until_signal(
            &mut signals,
            wait_in_flight(&tally, message_timeout + OUTCOME_MARGIN),
        );
        interrupted = waited.await.err();
    }
    if let Some(signal) = interrupted {
        eprintln!(
            "load: {signal}: sending stopped; waiting at most {} for outcomes in flight",
            crate::client::seconds(INTERRUPT_WAIT)
        );
        or_exit_on_signal(&mut signals, wait_in_flight(&tally, INTERRUPT_WAIT)).await;
    }
    let timing = RunTiming {
        elapsed: phase.first.map_or(Duration::ZERO, |t| t.elapsed()),
        sending: phase.sending(),
    };
    if let Some(progress) = progress {
        progress.abort();
    }
    let wind_down = async {
        if interrupted.is_none() {
            settle_echoes(&echoes).await;
        }
        let mut summary = {
            let echoes = echoes.lock().unwrap_or_else(PoisonError::into_inner);
            LoadSummary::new(tally.snapshot(), &echoes, timing)
        };
        summary.interrupted = interrupted.is_some();
        // Deregisters: the client is gone from the registry (and `ls`) at once.
        shutdown_bounded(&handle).await;
        summary
    };
    let summary = or_exit_on_signal(&mut signals, wind_down).await;
    echo_task.abort();
    sent?;
    if let (Some(log), Some(path)) = (&log, &options.outcomes_log) {
        log.write(path)?;
    }
    print_result(&summary, options.format)?;
    if let Some(signal) = interrupted {
        return Err(CliError::Interrupted {
            what: "load",
            signal,
        });
    }
    match summary.undelivered_line(&messages.target) {
        Some(line) => Err(CliError::failed(line)),
        None => Ok(()),
    }
}

/// Waits until no accepted message is without its outcome, at most `bound`.
async fn wait_in_flight(tally: &SharedTally, bound: Duration) {
    let deadline = Instant::now() + bound;
    while tally.lock().in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts the load node (and its admin endpoints, if asked), as every load needs it.
///
/// # Errors
///
/// The node or the admin server did not start.
pub(crate) async fn start_load_node(
    options: &LoadOptions,
) -> Result<(NodeHandle, Inbox, Option<AdminServer>), CliError> {
    let mut builder = NodeBuilder::new(options.core.id, options.core.name.clone())
        .transport(options.transport.clone());
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
    let admin_server = match options.admin {
        None => None,
        Some(addr) => match AdminServer::bind_with(
            addr,
            handle.clone(),
            AdminOptions::with_token(options.admin_token.clone()),
        )
        .await
        {
            Ok(server) => {
                eprintln!("load: admin on {}", server.local_addr());
                Some(server)
            }
            Err(e) => {
                handle.kill();
                return Err(CliError::failed(format!(
                    "admin: cannot listen on {addr}: {e}"
                )));
            }
        },
    };
    Ok((handle, inbox, admin_server))
}

/// A message load's target and shape.
struct MessageLoad {
    target: TargetSpec,
    size: usize,
    window: usize,
}

/// When the first and the last message were handed to the node.
#[derive(Debug, Default, Clone, Copy)]
struct SendPhase {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl SendPhase {
    fn sending(&self) -> Duration {
        match (self.first, self.last) {
            (Some(first), Some(last)) => last.duration_since(first),
            _ => Duration::ZERO,
        }
    }
}

/// Every second, one line on stderr: elapsed seconds, sent, delivered, and delivered per
/// second over the last second (only started when stderr is a terminal).
async fn report_progress(tally: Arc<SharedTally>) {
    let start = Instant::now();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.tick().await;
    let mut last_delivered = 0;
    loop {
        ticker.tick().await;
        let (sent, delivered) = {
            let t = tally.lock();
            (t.sent, t.delivered)
        };
        eprintln!(
            "load: {:>4}s sent {sent} delivered {delivered} ({} msg/s)",
            start.elapsed().as_secs(),
            delivered.saturating_sub(last_delivered)
        );
        last_delivered = delivered;
    }
}

/// What one message load sends with, and where it counts.
struct Run<'a> {
    handle: &'a NodeHandle,
    options: &'a LoadOptions,
    messages: &'a MessageLoad,
    tally: &'a Arc<SharedTally>,
    log: Option<&'a Arc<OutcomeLog>>,
}

/// Sends every message, paced at `rate` per second (0 = unpaced), at most `window` in flight;
/// with a `log`, records when each was sent and when its outcome came; `phase` holds when
/// the first and the last were handed. A stop signal ends the sending between two messages
/// (never inside a hand-off, so every message handed is counted): `Ok(Some(signal))`.
async fn send_all(
    run: &Run<'_>,
    known_deadline: Instant,
    phase: &mut SendPhase,
    signals: &mut StopSignals,
) -> Result<Option<&'static str>, CliError> {
    let Run {
        handle,
        options,
        messages,
        tally,
        log,
    } = *run;
    let window = Arc::new(Semaphore::new(messages.window));
    let mut start = Instant::now();
    for seq in 0..options.count {
        let paced = async {
            if options.rate > 0 && seq > 0 {
                tokio::time::sleep_until(start + send_offset(seq, options.rate)).await;
            }
            Arc::clone(&window).acquire_owned().await
        };
        let permit = match until_signal(signals, paced).await {
            Ok(permit) => permit.map_err(|_| CliError::failed("the in-flight window closed"))?,
            Err(signal) => return Ok(Some(signal)),
        };
        let mut sent_at = Instant::now();
        let mut sent_us = unix_micros_now();
        let payload = payload::encode(seq, messages.size);
        let submitted = if seq == 0 {
            // The first message waits for its target; the pacing starts once it is handed.
            let submitted = submit_when_known(
                handle,
                &messages.target,
                LOAD_MSG_TYPE,
                payload,
                known_deadline,
            )
            .await;
            // Counted from the attempt that was taken (or refused for good).
            start = Instant::now();
            sent_at = start;
            sent_us = unix_micros_now();
            submitted
        } else {
            handle
                .submit(messages.target.clone(), LOAD_MSG_TYPE, payload)
                .await
        };
        if let Some(log) = log {
            log.sent(seq, sent_us);
        }
        let now = Instant::now();
        phase.first.get_or_insert(now);
        phase.last = Some(now);
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
    Ok(None)
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
        let timing = RunTiming {
            elapsed: Duration::from_millis(1500),
            sending: Duration::from_millis(500),
        };
        let summary = LoadSummary::new(tally, &echoes, timing);
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
                p999_us: 40,
                max_us: 40,
                unknown: 0,
                lost: 2,
                elapsed_ms: 1500,
                rate_achieved: 8,
                spans_ms: BTreeMap::from([
                    ("delivered".to_owned(), 0),
                    ("no_route".to_owned(), 0),
                    ("refused_unknown_target".to_owned(), 0),
                ]),
                interrupted: false,
            }
        );
        assert_eq!(
            summary.undelivered_line(&TargetSpec::Name("a".to_owned())),
            Some(
                "load: 4 of 5 messages not delivered: 2 no_outcome (lost: no outcome came in \
                 time), 1 no_route, 1 refused unknown_target (no node named \"a\")"
                    .to_owned()
            )
        );
        assert_eq!(
            summary.sent,
            summary.delivered + summary.failed.values().sum::<u64>()
        );
        assert_eq!(
            serde_json::to_string(&summary).expect("json"),
            r#"{"sent":5,"delivered":1,"failed":{"no_outcome":2,"no_route":1,"refused_unknown_target":1},"duplicates":1,"echoed":1,"p50_us":40,"p99_us":40,"p999_us":40,"max_us":40,"unknown":0,"lost":2,"elapsed_ms":1500,"rate_achieved":8,"spans_ms":{"delivered":0,"no_route":0,"refused_unknown_target":0}}"#
        );
    }
}
