//! `switchboard send`: a node of its own sends one message and prints its outcome as one JSON
//! line; exit 0 only when it was delivered.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use switchboard_tokio::{NodeBuilder, RegistrySpec, SendFailure, TargetSpec};
use tokio::time::Instant;

use crate::{
    cli::{Format, SendArgs},
    client::{describe_failure, submit_when_known, target_name, wait_registered},
    error::CliError,
    lifecycle::{print_json_line, shutdown_bounded, start_error},
    selection::message_target,
    stats::{DELIVERED, NO_OUTCOME, failure_label, refusal_label},
};

/// Label every `send` node carries (`role=send`).
const SEND_ROLE: &str = "send";

/// Everything `switchboard send` runs with.
#[derive(Debug)]
pub(crate) struct SendOptions {
    core: switchboard_core::config::Config,
    registry: RegistrySpec,
    transport: switchboard_tokio::Transport,
    target: TargetSpec,
    msg_type: u32,
    payload: Bytes,
    timeout: Duration,
    format: Format,
}

/// `--timeout` when not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

impl SendOptions {
    /// Checks the flags; `random` draws the sending client's id.
    ///
    /// # Errors
    ///
    /// No registry or two, no target or two, an empty name or id 0, a bad selection, a zero
    /// timeout.
    pub(crate) fn resolve(args: SendArgs, random: u64) -> Result<SendOptions, CliError> {
        let crate::config::Joined {
            registry,
            transport,
            keys,
            upstream,
        } = args.cluster.resolve()?;
        let filters = args.filters.into_iter().collect();
        let target =
            message_target(args.to, args.select, args.key, filters, "key")?.ok_or_else(|| {
                CliError::invalid(
                    "to",
                    "required: give --to NAME|ID, --select MODE or --key K",
                )
            })?;
        let timeout = crate::duration::timeout_or_ms(args.timeout, args.timeout_ms)?
            .unwrap_or(DEFAULT_TIMEOUT);
        Ok(SendOptions {
            core: crate::run_call::client_core(
                SEND_ROLE,
                random,
                keys,
                args.join.upstream.or(upstream),
            )?,
            registry,
            transport,
            target,
            msg_type: args.msg_type,
            payload: crate::payload_input::required_payload(args.payload)?,
            timeout,
            format: args.out.output,
        })
    }
}

/// The line `send` prints.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct SendResult {
    /// `delivered`, or the class of the failure: `failed` (provably not received),
    /// `unknown` (maybe received), `refused` (never accepted), `no_outcome`.
    outcome: String,
    /// Why, when not delivered (`timeout`, `target_gone`, `unknown_target`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Send → outcome, µs (absent for a refusal or a missing outcome).
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_us: Option<u64>,
}

impl SendResult {
    /// The result of a fused label (`delivered`, `unknown_target_gone`, `refused_…`).
    fn of(label: &str, latency_us: Option<u64>) -> SendResult {
        let (outcome, reason) = match label.split_once('_') {
            Some((class @ ("failed" | "unknown" | "refused"), reason)) => {
                (class, Some(reason.to_owned()))
            }
            _ => (label, None),
        };
        SendResult {
            outcome: outcome.to_owned(),
            reason,
            latency_us,
        }
    }

    /// The fused label again (`unknown_timeout`), as the failure descriptions name it.
    fn label(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{}_{reason}", self.outcome),
            None => self.outcome.clone(),
        }
    }

    /// One line of text: `delivered in 120 us`, `unknown: timeout after 5000 us`,
    /// `refused: unknown_target`.
    fn text(&self) -> String {
        let mut line = self.outcome.clone();
        if let Some(reason) = &self.reason {
            line = format!("{line}: {reason}");
        }
        match (self.latency_us, self.reason.is_some()) {
            (Some(us), false) => format!("{line} in {us} us"),
            (Some(us), true) => format!("{line} after {us} us"),
            (None, _) => line,
        }
    }
}

/// Sends the message and prints its outcome.
///
/// # Errors
///
/// The node did not start, the registry did not answer, or the message was not delivered.
pub(crate) async fn run(options: SendOptions) -> Result<(), CliError> {
    let deadline = Instant::now() + options.timeout;
    let (handle, _inbox) = NodeBuilder::new(options.core.id, options.core.name.clone())
        .transport(options.transport.clone())
        .registry_spec(options.registry.clone())
        .config({
            let core = options.core.clone();
            move |config| *config = core
        })
        .start()
        .await
        .map_err(start_error)?;
    if let Err(e) = wait_registered(&handle, &options.registry, options.timeout, "send").await {
        handle.kill();
        return Err(e);
    }
    let submitted = submit_when_known(
        &handle,
        &options.target,
        options.msg_type,
        options.payload.clone(),
        deadline,
    )
    .await;
    let sent_at = Instant::now();
    let result = match submitted {
        Ok(pending) => match tokio::time::timeout_at(deadline, pending).await {
            Ok(Ok(outcome)) => SendResult::of(
                &failure_label(outcome).unwrap_or_else(|| DELIVERED.to_owned()),
                Some(u64::try_from(sent_at.elapsed().as_micros()).unwrap_or(u64::MAX)),
            ),
            Ok(Err(_)) | Err(_) => SendResult::of(NO_OUTCOME, None),
        },
        Err(SendFailure::Refused(e)) => SendResult::of(&refusal_label(&e), None),
        Err(_) => {
            handle.kill();
            return Err(CliError::failed("send: the node stopped"));
        }
    };
    shutdown_bounded(&handle).await;
    match options.format {
        Format::Json => print_json_line(&result)?,
        Format::Text => crate::lifecycle::print_line(&result.text())?,
    }
    if result.outcome == DELIVERED {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "send: not delivered to {}: {}",
            target_name(&options.target),
            describe_failure(&result.label(), &options.target)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_splits_class_and_reason_and_leaves_out_what_is_missing() {
        let line = |r: &SendResult| serde_json::to_string(r).expect("json");
        let delivered = SendResult::of("delivered", Some(120));
        assert_eq!(
            line(&delivered),
            r#"{"outcome":"delivered","latency_us":120}"#
        );
        assert_eq!(delivered.text(), "delivered in 120 us");
        let refused = SendResult::of("refused_unknown_target", None);
        assert_eq!(
            line(&refused),
            r#"{"outcome":"refused","reason":"unknown_target"}"#
        );
        assert_eq!(refused.text(), "refused: unknown_target");
        assert_eq!(refused.label(), "refused_unknown_target");
        let unknown = SendResult::of("unknown_target_gone", Some(1500));
        assert_eq!(
            line(&unknown),
            r#"{"outcome":"unknown","reason":"target_gone","latency_us":1500}"#
        );
        assert_eq!(unknown.text(), "unknown: target_gone after 1500 us");
        let lost = SendResult::of("no_outcome", None);
        assert_eq!(line(&lost), r#"{"outcome":"no_outcome"}"#);
        assert_eq!(lost.label(), "no_outcome");
    }
}
