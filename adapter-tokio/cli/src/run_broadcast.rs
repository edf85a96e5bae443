//! `switchboard broadcast`: a node of its own sends one message to every node matching the
//! labels, waits until each recipient has an outcome, and prints who got it as one JSON line;
//! exit 0 only when every recipient got it.

use std::collections::BTreeMap;

use serde::Serialize;
use switchboard_core::{
    BroadcastDone, BroadcastSpec,
    discovery::{Filter, Metadata},
    node::SendError,
};
use switchboard_tokio::{BroadcastFailure, RegistrySpec};

use crate::{
    cli::{BroadcastArgs, Format},
    error::CliError,
    lifecycle::{print_json_line, shutdown_bounded},
    run_call::{client_core, start_client},
};

/// What a `broadcast` client's `command` label says.
const BROADCAST_ROLE: &str = "broadcast";

/// Everything `switchboard broadcast` runs with.
#[derive(Debug)]
pub(crate) struct BroadcastOptions {
    core: switchboard_core::config::Config,
    registry: RegistrySpec,
    transport: switchboard_tokio::Transport,
    spec: BroadcastSpec,
    format: Format,
}

impl BroadcastOptions {
    /// Checks the flags; `random` draws the broadcasting client's id.
    ///
    /// # Errors
    ///
    /// No registry or two, an empty label key, a zero timeout.
    pub(crate) fn resolve(args: BroadcastArgs, random: u64) -> Result<BroadcastOptions, CliError> {
        let crate::config::Joined {
            registry,
            transport,
            keys,
            upstream,
        } = args.cluster.resolve()?;
        let labels: BTreeMap<String, String> = args.labels.into_iter().collect();
        let filter = (!labels.is_empty()).then(|| {
            Filter(Metadata {
                labels: labels.into(),
                ..Metadata::default()
            })
        });
        let payload = crate::payload_input::required_payload(args.payload)?;
        let mut spec = BroadcastSpec::new(filter, args.msg_type, payload);
        spec.skip_self = !args.include_self;
        if let Some(timeout) = crate::duration::nonzero_timeout(args.timeout)? {
            spec = spec.timeout(timeout);
        }
        Ok(BroadcastOptions {
            core: client_core(
                BROADCAST_ROLE,
                random,
                keys,
                args.join.upstream.or(upstream),
            )?,
            registry,
            transport,
            spec,
            format: args.out.output,
        })
    }
}

/// The line `broadcast` prints: recipients by outcome, ids ascending.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct BroadcastLine {
    /// Recipients that acknowledged it.
    pub(crate) delivered: Vec<u64>,
    /// Recipients it provably never reached, with why (`FailReason::as_str`).
    pub(crate) failed: BTreeMap<u64, &'static str>,
    /// Recipients it may have reached, with why it was given up.
    pub(crate) unknown: BTreeMap<u64, &'static str>,
}

impl BroadcastLine {
    /// The line of a finished broadcast.
    pub(crate) fn new(report: &BroadcastDone) -> BroadcastLine {
        let mut delivered: Vec<u64> = report.delivered.iter().map(|id| id.0).collect();
        delivered.sort_unstable();
        let by_id = |list: &[(switchboard_core::NodeId, switchboard_core::FailReason)]| {
            list.iter()
                .map(|(id, reason)| (id.0, reason.as_str()))
                .collect()
        };
        BroadcastLine {
            delivered,
            failed: by_id(&report.failed),
            unknown: by_id(&report.unknown),
        }
    }

    /// One line of text: `delivered to 3 of 3: 3, 12, 40` or
    /// `delivered to 1 of 3: 3; failed: 12 target_gone; unknown: 7 timeout`.
    pub(crate) fn text(&self) -> String {
        let ids = |ids: Vec<String>| ids.join(", ");
        let mut line = format!(
            "delivered to {} of {}: {}",
            self.delivered.len(),
            self.delivered.len() + self.failed.len() + self.unknown.len(),
            ids(self.delivered.iter().map(u64::to_string).collect())
        );
        for (class, list) in [("failed", &self.failed), ("unknown", &self.unknown)] {
            if !list.is_empty() {
                let who = list.iter().map(|(id, why)| format!("{id} {why}")).collect();
                line = format!("{line}; {class}: {}", ids(who));
            }
        }
        line
    }

    /// Why the broadcast failed, as one line, if any recipient did not get it:
    /// `broadcast: 2 of 5 recipients did not get it: 7 failed target_gone, 9 unknown timeout`.
    pub(crate) fn missed_line(&self) -> Option<String> {
        let missed = self.failed.len() + self.unknown.len();
        if missed == 0 {
            return None;
        }
        let who: Vec<String> = self
            .failed
            .iter()
            .map(|(id, reason)| format!("{id} failed {reason}"))
            .chain(
                self.unknown
                    .iter()
                    .map(|(id, reason)| format!("{id} unknown {reason}")),
            )
            .collect();
        Some(format!(
            "broadcast: {missed} of {} recipients did not get it: {}",
            missed + self.delivered.len(),
            who.join(", ")
        ))
    }
}

/// Sends the broadcast and prints its report.
///
/// # Errors
///
/// The node did not start, the registry did not answer, the core refused the broadcast, or a
/// recipient did not get it.
pub(crate) async fn run(options: BroadcastOptions) -> Result<(), CliError> {
    let (handle, _inbox) = start_client(
        &options.core,
        &options.registry,
        &options.transport,
        "broadcast",
    )
    .await?;
    let result = handle.broadcast(options.spec).await;
    shutdown_bounded(&handle).await;
    let report = match result {
        Ok(report) => report,
        Err(BroadcastFailure::Refused(e @ SendError::PayloadTooLarge { .. })) => {
            return Err(CliError::invalid("payload", e.to_string()));
        }
        Err(BroadcastFailure::Refused(e @ SendError::ReservedType)) => {
            return Err(CliError::invalid("type", e.to_string()));
        }
        Err(e) => return Err(CliError::failed(format!("broadcast: {e}"))),
    };
    let line = BroadcastLine::new(&report);
    match options.format {
        Format::Json => print_json_line(&line)?,
        Format::Text => crate::lifecycle::print_line(&line.text())?,
    }
    match line.missed_line() {
        Some(why) => Err(CliError::failed(why)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::FailReason;

    use super::*;

    #[test]
    fn the_line_lists_recipients_by_outcome_in_id_order() {
        let line =
            |delivered: &[u64], failed: &[(u64, FailReason)], unknown: &[(u64, FailReason)]| {
                BroadcastLine {
                    delivered: delivered.to_vec(),
                    failed: failed.iter().map(|(id, r)| (*id, r.as_str())).collect(),
                    unknown: unknown.iter().map(|(id, r)| (*id, r.as_str())).collect(),
                }
            };
        let all = line(&[3, 12], &[], &[]);
        assert_eq!(
            serde_json::to_string(&all).expect("json"),
            r#"{"delivered":[3,12],"failed":{},"unknown":{}}"#
        );
        assert_eq!(all.missed_line(), None);
        assert_eq!(all.text(), "delivered to 2 of 2: 3, 12");
        let some = line(
            &[3],
            &[(12, FailReason::TargetGone)],
            &[(7, FailReason::Timeout)],
        );
        assert_eq!(
            serde_json::to_string(&some).expect("json"),
            r#"{"delivered":[3],"failed":{"12":"target_gone"},"unknown":{"7":"timeout"}}"#
        );
        assert_eq!(
            some.missed_line().as_deref(),
            Some(
                "broadcast: 2 of 3 recipients did not get it: 12 failed target_gone, 7 unknown timeout"
            )
        );
        assert_eq!(
            some.text(),
            "delivered to 1 of 3: 3; failed: 12 target_gone; unknown: 7 timeout"
        );
    }
}
