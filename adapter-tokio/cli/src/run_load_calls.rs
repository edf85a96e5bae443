//! `switchboard load --method M`: the load node calls a method `count` times, at most
//! `concurrency` calls in flight (paced by `rate` if given), keeps every outcome by class and
//! reason, and prints one JSON summary line; exit 0 only when every call replied.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use serde::Serialize;
use switchboard_core::{CallOutcome, CallSpec};
use switchboard_tokio::{CallFailure, Inbox, NodeHandle, admin::AdminServer};
use tokio::{sync::Semaphore, task::JoinSet, time::Instant};

use crate::{
    client::wait_registered,
    config::{
        load::LoadOptions,
        load_calls::{CallLoad, CallPayload},
    },
    error::CliError,
    lifecycle::{print_result, shutdown_bounded},
    outcome_log::{OutcomeLog, unix_micros_now},
    payload,
    run_call::{outcome_label, refusal_label},
    run_load::send_offset,
    stats::{Latencies, NO_OUTCOME},
};

/// The summary line of a call load.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct CallLoadSummary {
    /// Calls made (accepted or refused).
    pub(crate) calls: u64,
    /// Calls that ended with a reply.
    pub(crate) replies: u64,
    /// Calls provably never executed, by reason (`not_available`, ..., `refused_<why>`).
    pub(crate) failed: BTreeMap<String, u64>,
    /// Calls that may have executed, by reason (`target_gone`, `timeout`, ..., `no_outcome`
    /// when the node stopped first).
    pub(crate) unknown: BTreeMap<String, u64>,
    /// Median call → reply latency, µs.
    pub(crate) p50_us: u64,
    /// 99th percentile call → reply latency, µs.
    pub(crate) p99_us: u64,
    /// 99.9th percentile call → reply latency, µs.
    pub(crate) p999_us: u64,
    /// Largest call → reply latency, µs.
    pub(crate) max_us: u64,
    /// From the first call until every outcome came, ms.
    pub(crate) elapsed_ms: u64,
}

/// The outcomes of a call load so far.
#[derive(Debug, Default)]
pub(crate) struct CallTally {
    calls: u64,
    replies: u64,
    failed: BTreeMap<String, u64>,
    unknown: BTreeMap<String, u64>,
    reply_latencies: Latencies,
}

impl CallTally {
    /// Counts one call's end, `latency` after it was made; returns its outcomes-log label
    /// (`reply`, `failed_<reason>`, `unknown_<reason>`, `refused_<why>` or `no_outcome`).
    pub(crate) fn record(
        &mut self,
        result: &Result<CallOutcome, CallFailure>,
        latency: Duration,
    ) -> String {
        self.calls += 1;
        match result {
            Ok(outcome @ CallOutcome::Reply(_)) => {
                self.replies += 1;
                self.reply_latencies.record(latency);
                outcome_label(outcome)
            }
            Ok(outcome @ CallOutcome::Failed(reason)) => {
                *self.failed.entry(reason.as_str().to_owned()).or_default() += 1;
                outcome_label(outcome)
            }
            Ok(outcome @ CallOutcome::Unknown(reason)) => {
                *self.unknown.entry(reason.as_str().to_owned()).or_default() += 1;
                outcome_label(outcome)
            }
            Err(CallFailure::Refused(e)) => {
                let label = refusal_label(e);
                *self.failed.entry(label.to_owned()).or_default() += 1;
                label.to_owned()
            }
            // The node stopped (or a future outcome class): whether it ran is not known.
            Ok(_) | Err(_) => {
                *self.unknown.entry(NO_OUTCOME.to_owned()).or_default() += 1;
                NO_OUTCOME.to_owned()
            }
        }
    }

    /// The summary, `elapsed` after the first call.
    pub(crate) fn summary(self, elapsed: Duration) -> CallLoadSummary {
        let percentiles = self.reply_latencies.percentiles();
        CallLoadSummary {
            calls: self.calls,
            replies: self.replies,
            p50_us: percentiles.p50_us,
            p99_us: percentiles.p99_us,
            p999_us: percentiles.p999_us,
            max_us: self.reply_latencies.max_us(),
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            failed: self.failed,
            unknown: self.unknown,
        }
    }
}

impl CallLoadSummary {
    /// Why the run failed, as one line, if any call did not reply:
    /// `load: 2 of 10 calls of echo did not reply: 1 failed not_available, 1 unknown timeout`.
    pub(crate) fn unreplied_line(&self, method: &str) -> Option<String> {
        let unreplied = self.calls - self.replies;
        if unreplied == 0 {
            return None;
        }
        let classes: Vec<String> = self
            .failed
            .iter()
            .map(|(reason, n)| format!("{n} failed {reason}"))
            .chain(
                self.unknown
                    .iter()
                    .map(|(reason, n)| format!("{n} unknown {reason}")),
            )
            .collect();
        Some(format!(
            "load: {unreplied} of {} calls of {method} did not reply: {}",
            self.calls,
            classes.join(", ")
        ))
    }
}

/// The spec of call `seq`.
fn call_spec(calls: &CallLoad, seq: u64) -> CallSpec {
    let payload = match &calls.payload {
        CallPayload::Text(bytes) => bytes.clone(),
        CallPayload::Numbered { size } => payload::encode(seq, *size),
    };
    let mut spec = CallSpec::new(calls.method.clone(), payload).select(calls.select.clone());
    if let Some(timeout) = calls.timeout {
        spec = spec.timeout(timeout);
    }
    if let Some(grace) = calls.grace {
        spec = spec.grace(grace);
    }
    calls.retry.spec(spec)
}

/// Runs the call load on the started load node and prints the summary.
///
/// # Errors
///
/// The registry did not answer, the outcomes log could not be written, or a call did not
/// reply.
pub(crate) async fn run(
    options: &LoadOptions,
    calls: &CallLoad,
    handle: NodeHandle,
    _inbox: Inbox,
    _admin_server: Option<AdminServer>,
) -> Result<(), CliError> {
    if let Err(e) = wait_registered(&handle, &options.registry, options.wait_known, "load").await {
        handle.kill();
        return Err(e);
    }
    let tally = Arc::new(Mutex::new(CallTally::default()));
    let log = options
        .outcomes_log
        .as_ref()
        .map(|_| Arc::new(OutcomeLog::default()));
    let in_flight = Arc::new(Semaphore::new(calls.concurrency));
    let mut running = JoinSet::new();
    let start = Instant::now();
    for seq in 0..options.count {
        if options.rate > 0 && seq > 0 {
            tokio::time::sleep_until(start + send_offset(seq, options.rate)).await;
        }
        let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
            return Err(CliError::failed("the in-flight window closed"));
        };
        let spec = call_spec(calls, seq);
        if let Some(log) = &log {
            log.sent(seq, unix_micros_now());
        }
        let (handle, tally, log) = (handle.clone(), Arc::clone(&tally), log.clone());
        running.spawn(async move {
            let called = Instant::now();
            let result = handle.call(spec).await;
            let label = tally
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .record(&result, called.elapsed());
            if let Some(log) = log {
                log.outcome(seq, label);
            }
            drop(permit);
        });
        while running.try_join_next().is_some() {}
    }
    while running.join_next().await.is_some() {}
    let elapsed = start.elapsed();
    shutdown_bounded(&handle).await;
    if let (Some(log), Some(path)) = (&log, &options.outcomes_log) {
        log.write(path)?;
    }
    let tally = std::mem::take(&mut *tally.lock().unwrap_or_else(PoisonError::into_inner));
    let summary = tally.summary(elapsed);
    print_result(&summary, options.format)?;
    match summary.unreplied_line(&calls.method) {
        Some(line) => Err(CliError::failed(line)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use switchboard_core::{CallError, FailReason, Select};

    use super::*;

    #[test]
    fn the_summary_counts_calls_by_class_and_reason() {
        let mut tally = CallTally::default();
        let ms = Duration::from_millis;
        let labels = [
            tally.record(&Ok(CallOutcome::Reply(Bytes::from_static(b"a"))), ms(2)),
            tally.record(&Ok(CallOutcome::Reply(Bytes::from_static(b"b"))), ms(4)),
            tally.record(&Ok(CallOutcome::Failed(FailReason::NotAvailable)), ms(300)),
            tally.record(&Ok(CallOutcome::Unknown(FailReason::TargetGone)), ms(9)),
            tally.record(&Err(CallFailure::Refused(CallError::InvalidMethod)), ms(0)),
            tally.record(&Err(CallFailure::Stopped), ms(0)),
        ];
        assert_eq!(
            labels,
            [
                "reply",
                "reply",
                "failed_not_available",
                "unknown_target_gone",
                "refused_invalid_method",
                "no_outcome"
            ]
        );
        let summary = tally.summary(ms(1500));
        // The 4 ms reply reads 4001 µs since issue 24: the latencies are an HDR histogram of
        // three significant digits, which keeps 2 µs resolution between 2,048 and 4,095 µs
        // and reports the highest value of a bucket (2 ms is a bucket's highest already).
        assert_eq!(
            serde_json::to_string(&summary).expect("json"),
            r#"{"calls":6,"replies":2,"failed":{"not_available":1,"refused_invalid_method":1},"unknown":{"no_outcome":1,"target_gone":1},"p50_us":2000,"p99_us":4001,"p999_us":4001,"max_us":4001,"elapsed_ms":1500}"#
        );
        assert_eq!(
            summary.unreplied_line("echo").as_deref(),
            Some(
                "load: 4 of 6 calls of echo did not reply: 1 failed not_available, 1 failed \
                 refused_invalid_method, 1 unknown no_outcome, 1 unknown target_gone"
            )
        );
    }

    #[test]
    fn every_call_replied_is_a_success() {
        let mut tally = CallTally::default();
        tally.record(&Ok(CallOutcome::Reply(Bytes::new())), Duration::ZERO);
        assert_eq!(tally.summary(Duration::ZERO).unreplied_line("echo"), None);
    }

    #[test]
    fn numbered_payloads_carry_the_call_sequence_number() {
        let calls = CallLoad {
            method: "echo".to_owned(),
            select: Select::RoundRobin,
            payload: CallPayload::Numbered { size: 12 },
            concurrency: 1,
            timeout: Some(Duration::from_secs(2)),
            grace: None,
            retry: crate::cli::RetryArgs {
                idempotent: true,
                hedge_after: Some(switchboard_core::HedgeAfter::Delay(Duration::from_millis(
                    30,
                ))),
                ..crate::cli::RetryArgs::default()
            },
        };
        let spec = call_spec(&calls, 7);
        assert_eq!(
            (spec.idempotent, spec.hedge_after, spec.max_attempts),
            (
                true,
                Some(switchboard_core::HedgeAfter::Delay(Duration::from_millis(
                    30
                ))),
                None
            )
        );
        assert_eq!(spec.payload.len(), 12);
        assert_eq!(payload::decode_seq(&spec.payload), Some(7));
        assert_eq!(spec.timeout, Some(Duration::from_secs(2)));
        assert_eq!(spec.grace, None);
    }
}
