//! `switchboard call`: a node of its own calls one method once and prints the outcome as one
//! JSON line; exit 0 only on a reply.

use std::time::Duration;

use serde::Serialize;
use switchboard_core::{CallError, CallMetadata, CallOutcome, CallSpec, rpc::is_valid_method};
use switchboard_tokio::{CallFailure, CallReport, Inbox, NodeBuilder, NodeHandle, RegistrySpec};
use tokio::time::Instant;

use crate::{
    cli::{CallArgs, Format},
    client::{client_identity, wait_registered},
    config::core_config,
    error::CliError,
    lifecycle::{print_json_line, shutdown_bounded, start_error},
    run_node::REGISTER_WAIT,
    selection::selection,
};

/// What a `call` client's `command` label says.
const CALL_ROLE: &str = "call";

/// Everything `switchboard call` runs with.
#[derive(Debug)]
pub(crate) struct CallOptions {
    core: switchboard_core::config::Config,
    registry: RegistrySpec,
    transport: switchboard_tokio::Transport,
    spec: CallSpec,
    format: Format,
}

/// Checks a `--method` value (`field` names the flag in the error).
///
/// # Errors
///
/// The name is empty, longer than 128 bytes, or has characters outside `[A-Za-z0-9._:-]`.
pub(crate) fn check_method(field: &str, method: &str) -> Result<(), CliError> {
    if is_valid_method(method) {
        Ok(())
    } else {
        Err(CliError::invalid(
            field,
            format!("expected 1 to 128 ASCII letters, digits and `._-:`, got {method:?}"),
        ))
    }
}

/// The core config of a light client running `command` ([`client_identity`]: a random
/// 63-bit id drawn from `random`, labelled `role=client`) that links to its peers directly,
/// or under `upstream` sends through that proxy.
///
/// # Errors
///
/// The core refused the config.
pub(crate) fn client_core(
    command: &str,
    random: u64,
    keys: Vec<switchboard_core::ClusterKey>,
    upstream: Option<u64>,
) -> Result<switchboard_core::config::Config, CliError> {
    let identity = crate::config::Identity {
        upstream,
        ..client_identity(command, None, None, random)
    };
    let mut core = core_config(None, identity)?;
    // Without an upstream the client links to its targets directly; with one it sends
    // through the tree, like a member under that proxy.
    core.topology_policy.allow_direct_connection = upstream.is_none();
    core.cluster_keys = keys;
    Ok(core)
}

/// Starts a client node with `core` and waits (at most [`REGISTER_WAIT`]) for its
/// registration, so that its view of the cluster is complete. Keep the inbox while the node
/// runs.
///
/// # Errors
///
/// The node did not start, or the registry did not answer or refused it.
pub(crate) async fn start_client(
    core: &switchboard_core::config::Config,
    registry: &RegistrySpec,
    transport: &switchboard_tokio::Transport,
    what: &str,
) -> Result<(NodeHandle, Inbox), CliError> {
    let (handle, inbox) = NodeBuilder::new(core.id, core.name.clone())
        .transport(transport.clone())
        .registry_spec(registry.clone())
        .config({
            let core = core.clone();
            move |config| *config = core
        })
        .start()
        .await
        .map_err(start_error)?;
    if let Err(e) = wait_registered(&handle, registry, REGISTER_WAIT, what).await {
        handle.kill();
        return Err(e);
    }
    Ok((handle, inbox))
}

/// The `--meta KEY=VALUE` flags as call metadata, in order (a repeated key keeps its first
/// place, the last value).
///
/// # Errors
///
/// A flag without `=`, or an entry beyond the metadata bounds (named `meta`).
pub(crate) fn call_metadata(flags: &[String]) -> Result<CallMetadata, CliError> {
    let mut metadata = CallMetadata::new();
    for flag in flags {
        let Some((key, value)) = flag.split_once('=') else {
            return Err(CliError::invalid(
                "meta",
                format!("expected KEY=VALUE, got {flag:?}"),
            ));
        };
        metadata
            .insert(key, value.as_bytes())
            .map_err(|e| CliError::invalid("meta", format!("{flag:?}: {e}")))?;
    }
    Ok(metadata)
}

impl CallOptions {
    /// Checks the flags; `random` draws the calling client's id ([`client_identity`]).
    ///
    /// # Errors
    ///
    /// No registry or two, a bad method name, a zero timeout.
    pub(crate) fn resolve(args: CallArgs, random: u64) -> Result<CallOptions, CliError> {
        let crate::config::Joined {
            registry,
            transport,
            keys,
            upstream,
        } = args.cluster.resolve()?;
        check_method("method", &args.method)?;
        let payload = crate::payload_input::read_payload(args.payload)?.unwrap_or_default();
        let select = match args.server {
            Some(0) => return Err(CliError::invalid("server", "must be a node id, not 0")),
            Some(id) => switchboard_core::select::Select::Node(switchboard_core::ids::NodeId(id)),
            None => selection(args.select, args.key, "key")?,
        };
        let mut spec = CallSpec::new(args.method, payload)
            .select(select)
            .metadata(call_metadata(&args.meta)?);
        if let Some(timeout) = crate::duration::nonzero_timeout(args.timeout)? {
            spec = spec.timeout(timeout);
        }
        if let Some(grace) = args.grace {
            spec = spec.grace(grace);
        }
        args.retry.check()?;
        spec = args.retry.spec(spec);
        let mut core = client_core(CALL_ROLE, random, keys, args.join.upstream.or(upstream))?;
        args.retry.configure(&mut core);
        Ok(CallOptions {
            core,
            registry,
            transport,
            spec,
            format: args.out.output,
        })
    }
}

/// The line `call` prints.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct CallLine {
    /// `reply`, `failed` or `unknown`.
    pub(crate) outcome: &'static str,
    /// The reply's bytes: as text when they are UTF-8, else in base64 (`encoding`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) payload: Option<String>,
    /// `base64` when `payload` is the base64 of bytes that are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) encoding: Option<&'static str>,
    /// Why there is no reply (`FailReason::as_str`), otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<&'static str>,
    /// The server that answered (for a reply) or had the request when the call ended;
    /// absent when no request was out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) server: Option<ServerLine>,
    /// Call → outcome, µs.
    pub(crate) latency_us: u64,
}

/// The server of a [`CallLine`].
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct ServerLine {
    /// Its id, decimal.
    pub(crate) id: u64,
    /// Its name as the caller's discovery set had it (`null` when its record was gone).
    pub(crate) name: Option<String>,
}

impl ServerLine {
    /// The server of `report`, if any.
    pub(crate) fn of(report: &CallReport) -> Option<ServerLine> {
        report.server.map(|id| ServerLine {
            id: id.0,
            name: report.server_name.clone(),
        })
    }

    /// ` (server ID NAME)` for a message line, empty without a server.
    fn describe(server: Option<&ServerLine>) -> String {
        server.map_or_else(String::new, |s| {
            format!(" (server {} {})", s.id, s.name.as_deref().unwrap_or("?"))
        })
    }
}

impl CallLine {
    /// The line for `outcome`, `latency` after the call, answered (or last held) by
    /// `server`.
    pub(crate) fn new(
        outcome: &CallOutcome,
        server: Option<ServerLine>,
        latency: Duration,
    ) -> CallLine {
        let (payload, encoding) = match outcome {
            CallOutcome::Reply(bytes) => {
                let (text, encoding) = crate::payload_input::printable(bytes);
                (Some(text), encoding)
            }
            _ => (None, None),
        };
        CallLine {
            outcome: outcome.class(),
            payload,
            encoding,
            reason: outcome.reason().map(switchboard_core::FailReason::as_str),
            server,
            latency_us: micros(latency),
        }
    }

    /// One line of text: `reply in 1234 us (server 301 s): pong` (`reply (base64) …` for
    /// bytes that are not UTF-8), `failed: not_available after 1234 us`.
    pub(crate) fn text(&self) -> String {
        let server = ServerLine::describe(self.server.as_ref());
        match (&self.payload, self.reason) {
            (Some(payload), _) => {
                let encoding = self.encoding.map(|e| format!(" ({e})")).unwrap_or_default();
                format!(
                    "reply{encoding} in {} us{server}: {payload}",
                    self.latency_us
                )
            }
            (None, reason) => format!(
                "{}: {} after {} us{server}",
                self.outcome,
                reason.unwrap_or("none"),
                self.latency_us
            ),
        }
    }
}

/// A duration in whole microseconds (saturating).
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// An outcome as one label: `reply`, `failed_<reason>` or `unknown_<reason>`.
pub(crate) fn outcome_label(outcome: &CallOutcome) -> String {
    match outcome.reason() {
        None => outcome.class().to_owned(),
        Some(reason) => format!("{}_{}", outcome.class(), reason.as_str()),
    }
}

/// A refusal of the core as a label: `refused_<why>`.
pub(crate) fn refusal_label(error: &CallError) -> &'static str {
    match error {
        CallError::InvalidMethod => "refused_invalid_method",
        CallError::PayloadTooLarge { .. } => "refused_payload_too_large",
        CallError::Shutdown => "refused_shutdown",
        _ => "refused_other",
    }
}

/// Makes the call and prints its outcome.
///
/// # Errors
///
/// The node did not start, the registry did not answer, the core refused the call, or the
/// outcome is not a reply.
pub(crate) async fn run(options: CallOptions) -> Result<(), CliError> {
    let (handle, _inbox) =
        start_client(&options.core, &options.registry, &options.transport, "call").await?;
    let method = options.spec.method.clone();
    let started = Instant::now();
    let result = handle.call_report(options.spec).await;
    let latency = started.elapsed();
    shutdown_bounded(&handle).await;
    let report = match result {
        Ok(report) => report,
        Err(CallFailure::Refused(e @ CallError::PayloadTooLarge { .. })) => {
            return Err(CliError::invalid("payload", e.to_string()));
        }
        Err(e) => return Err(CliError::failed(format!("call {method}: {e}"))),
    };
    let outcome = &report.outcome;
    let line = CallLine::new(outcome, ServerLine::of(&report), latency);
    match options.format {
        Format::Json => print_json_line(&line)?,
        Format::Text => crate::lifecycle::print_line(&line.text())?,
    }
    match outcome.reason() {
        None => Ok(()),
        Some(reason) => Err(CliError::failed(format!(
            "call {method}: {} {}: {reason}{}",
            outcome.class(),
            reason.as_str(),
            ServerLine::describe(line.server.as_ref())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use switchboard_core::FailReason;

    use super::*;

    #[test]
    fn the_line_carries_the_payload_of_a_reply_and_the_reason_otherwise() {
        let line = |outcome: CallOutcome| {
            serde_json::to_string(&CallLine::new(&outcome, None, Duration::from_micros(1234)))
                .expect("json")
        };
        assert_eq!(
            line(CallOutcome::Reply(Bytes::from_static(b"pong"))),
            r#"{"outcome":"reply","payload":"pong","latency_us":1234}"#
        );
        // Bytes that are not UTF-8 print as their base64, said so (no lossy replacement).
        assert_eq!(
            line(CallOutcome::Reply(Bytes::from_static(b"a\xffb"))),
            r#"{"outcome":"reply","payload":"Yf9i","encoding":"base64","latency_us":1234}"#
        );
        let text =
            |outcome: CallOutcome| CallLine::new(&outcome, None, Duration::from_micros(7)).text();
        assert_eq!(
            text(CallOutcome::Reply(Bytes::from_static(b"pong"))),
            "reply in 7 us: pong"
        );
        assert_eq!(
            text(CallOutcome::Reply(Bytes::from_static(b"a\xffb"))),
            "reply (base64) in 7 us: Yf9i"
        );
        assert_eq!(
            text(CallOutcome::Failed(FailReason::NotAvailable)),
            "failed: not_available after 7 us"
        );
        assert_eq!(
            line(CallOutcome::Failed(FailReason::NotAvailable)),
            r#"{"outcome":"failed","reason":"not_available","latency_us":1234}"#
        );
        assert_eq!(
            line(CallOutcome::Unknown(FailReason::TargetGone)),
            r#"{"outcome":"unknown","reason":"target_gone","latency_us":1234}"#
        );
    }

    #[test]
    fn the_line_names_the_server_before_the_latency() {
        let report = |server: Option<u64>, name: Option<&str>| {
            let line = CallLine::new(
                &CallOutcome::Reply(Bytes::from_static(b"pong")),
                server.map(|id| ServerLine {
                    id,
                    name: name.map(str::to_owned),
                }),
                Duration::from_micros(7),
            );
            serde_json::to_string(&line).expect("json")
        };
        assert_eq!(
            report(Some(301), Some("server")),
            r#"{"outcome":"reply","payload":"pong","server":{"id":301,"name":"server"},"latency_us":7}"#
        );
        assert_eq!(
            report(Some(u64::MAX), None),
            r#"{"outcome":"reply","payload":"pong","server":{"id":18446744073709551615,"name":null},"latency_us":7}"#
        );
        let server = ServerLine {
            id: 301,
            name: Some("server".into()),
        };
        assert_eq!(ServerLine::describe(Some(&server)), " (server 301 server)");
        assert_eq!(ServerLine::describe(None), "");
    }

    #[test]
    fn meta_flags_become_metadata_in_order_and_bad_ones_exit_2_naming_meta() {
        let flags = |f: &[&str]| f.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let metadata =
            call_metadata(&flags(&["traceparent=00-ab-cd-01", "k=a=b", "e="])).expect("valid");
        assert_eq!(
            metadata.iter().collect::<Vec<_>>(),
            [
                ("traceparent", &b"00-ab-cd-01"[..]),
                ("k", &b"a=b"[..]),
                ("e", &b""[..])
            ]
        );
        for (bad, message) in [
            ("novalue", "meta: expected KEY=VALUE, got \"novalue\""),
            (
                "=v",
                "meta: \"=v\": metadata key of 0 bytes is outside 1..=64",
            ),
        ] {
            let e = call_metadata(&flags(&[bad])).expect_err(bad);
            assert_eq!((e.exit_code(), e.to_string()), (2, message.to_owned()));
        }
        let long = format!("k={}", "v".repeat(513));
        let e = call_metadata(&[long]).expect_err("too long");
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .ends_with("metadata value of 513 bytes exceeds 512"),
            "{e}"
        );
        let seventeen: Vec<String> = (0..17).map(|i| format!("k{i}=v")).collect();
        let e = call_metadata(&seventeen).expect_err("too many");
        assert_eq!(
            e.to_string(),
            "meta: \"k16=v\": metadata holds at most 16 entries"
        );
    }

    #[test]
    fn outcomes_are_labelled_by_class_and_reason() {
        assert_eq!(outcome_label(&CallOutcome::Reply(Bytes::new())), "reply");
        assert_eq!(
            outcome_label(&CallOutcome::Failed(FailReason::NotAvailable)),
            "failed_not_available"
        );
        assert_eq!(
            outcome_label(&CallOutcome::Unknown(FailReason::Timeout)),
            "unknown_timeout"
        );
    }

    #[test]
    fn a_method_name_is_checked_and_the_flag_named() {
        assert!(check_method("method", "echo").is_ok());
        let e = check_method("method", "no spaces").expect_err("invalid");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "method: expected 1 to 128 ASCII letters, digits and `._-:`, got \"no spaces\""
        );
    }
}
