//! `switchboard send`: a node of its own sends one message and prints its outcome as one JSON
//! line; exit 0 only when it was delivered.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use switchboard_tokio::{NodeBuilder, RegistrySpec, SendFailure, TargetSpec};
use tokio::time::Instant;

use crate::{
    cli::SendArgs,
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
}

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
        } = args.cluster.resolve()?;
        let filters = args.filters.into_iter().collect();
        let target =
            message_target(args.to, args.select, args.key, filters, "key")?.ok_or_else(|| {
                CliError::invalid(
                    "to",
                    "required: give --to NAME|ID, --select MODE or --key K",
                )
            })?;
        if args.timeout_ms == 0 {
            return Err(CliError::invalid("timeout_ms", "must be greater than zero"));
        }
        Ok(SendOptions {
            core: crate::run_call::client_core(SEND_ROLE, random, keys)?,
            registry,
            transport,
            target,
            msg_type: args.msg_type,
            payload: Bytes::from(args.payload.into_bytes()),
            timeout: Duration::from_millis(args.timeout_ms),
        })
    }
}

/// The line `send` prints.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct SendResult {
    /// `delivered` or the failure, named like `load`'s failures.
    outcome: String,
    /// Send → outcome, µs (absent for a refusal or a missing outcome).
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_us: Option<u64>,
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
            Ok(Ok(outcome)) => SendResult {
                outcome: failure_label(outcome).unwrap_or_else(|| DELIVERED.to_owned()),
                latency_us: Some(u64::try_from(sent_at.elapsed().as_micros()).unwrap_or(u64::MAX)),
            },
            Ok(Err(_)) | Err(_) => SendResult {
                outcome: NO_OUTCOME.to_owned(),
                latency_us: None,
            },
        },
        Err(SendFailure::Refused(e)) => SendResult {
            outcome: refusal_label(&e),
            latency_us: None,
        },
        Err(_) => {
            handle.kill();
            return Err(CliError::failed("send: the node stopped"));
        }
    };
    shutdown_bounded(&handle).await;
    print_json_line(&result)?;
    if result.outcome == DELIVERED {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "send: not delivered to {}: {}",
            target_name(&options.target),
            describe_failure(&result.outcome, &options.target)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_line_leaves_out_a_missing_latency() {
        let line = |r: &SendResult| serde_json::to_string(r).expect("json");
        assert_eq!(
            line(&SendResult {
                outcome: "delivered".to_owned(),
                latency_us: Some(120),
            }),
            r#"{"outcome":"delivered","latency_us":120}"#
        );
        assert_eq!(
            line(&SendResult {
                outcome: "refused_unknown_target".to_owned(),
                latency_us: None,
            }),
            r#"{"outcome":"refused_unknown_target"}"#
        );
    }
}
