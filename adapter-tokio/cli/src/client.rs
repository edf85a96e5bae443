//! What the short-lived client subcommands (`load`, `send`, `ls`) share: the wait for the
//! registry with a clear failure when it does not answer, a first send that waits (bounded)
//! for its target to become known, and failures described in words.

use std::time::Duration;

use bytes::Bytes;
use switchboard_core::node::SendError;
use switchboard_tokio::{
    NodeHandle, NotRegistered, PendingOutcome, RegistrySpec, SendFailure, TargetSpec,
};
use tokio::time::Instant;

use crate::{config::Identity, error::CliError};

/// The label naming which command a light client runs (`command=load`).
pub(crate) const COMMAND_LABEL: &str = "command";

/// A light client's identity (`send`, `call`, `broadcast`, `load`): `id` and `name` when
/// given (`--id`, `--name`), else the id drawn from `random` (63 bits, never 0, so two clients
/// never collide, even in containers where every PID is 1) and the name `<command>-<id>`.
/// Labelled `role=client` (a client is not a member: nodes never count its leaving as a peer
/// death nor dial it again) and `command=<command>`.
pub(crate) fn client_identity(
    command: &str,
    id: Option<u64>,
    name: Option<String>,
    random: u64,
) -> Identity {
    let id = id.unwrap_or((random >> 1).max(1));
    Identity {
        id,
        name: name.unwrap_or_else(|| format!("{command}-{id}")),
        upstream: None,
        labels: [
            (
                switchboard_core::discovery::ROLE_LABEL.to_owned(),
                switchboard_core::discovery::CLIENT_ROLE.to_owned(),
            ),
            (COMMAND_LABEL.to_owned(), command.to_owned()),
        ]
        .into(),
    }
}

/// How often a send refused for an unknown target is tried again while waiting for it.
const TARGET_RETRY: Duration = Duration::from_millis(50);

/// The registry as a person names it: `the registry at ADDR` or `etcd at URL,...`.
pub(crate) fn registry_name(spec: &RegistrySpec) -> String {
    match spec {
        RegistrySpec::Embedded(_) | RegistrySpec::EmbeddedHost(_) => {
            format!(
                "the registry at {}",
                embedded_host_port(spec).unwrap_or_default()
            )
        }
        RegistrySpec::Etcd(options) => format!("etcd at {}", options.endpoints.join(",")),
        _ => "the registry".to_owned(),
    }
}

/// The embedded registry's `host:port` as given (`None`: another backend).
pub(crate) fn embedded_host_port(spec: &RegistrySpec) -> Option<String> {
    match spec {
        RegistrySpec::Embedded(addr) => Some(addr.to_string()),
        RegistrySpec::EmbeddedHost(host_port) => Some(host_port.clone()),
        _ => None,
    }
}

/// Seconds as a person reads them (`10 s`, `1.5 s`).
pub(crate) fn seconds(d: Duration) -> String {
    format!("{} s", (d.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// Waits at most `timeout` for `handle` to be registered (its view of the cluster is then
/// complete).
///
/// # Errors
///
/// `what: <registry> did not answer within T` (the registry cannot be reached), or
/// `what: <registry> refused the node: <why>` (its id or name is held).
pub(crate) async fn wait_registered(
    handle: &NodeHandle,
    spec: &RegistrySpec,
    timeout: Duration,
    what: &str,
) -> Result<(), CliError> {
    let Err(failure) = handle.wait_registered(timeout).await else {
        return Ok(());
    };
    let registry = registry_name(spec);
    Err(CliError::failed(match failure {
        NotRegistered::Refused { reason } => {
            format!("{what}: {registry} refused the {what} node: {reason}")
        }
        _ => format!(
            "{what}: {registry} did not answer within {}{}",
            seconds(timeout),
            refused_now(spec).await
        ),
    }))
}

/// ` (connection refused)` when the embedded registry's address refuses a connection right
/// now (nothing listens there: the registry is down or the address is wrong), else nothing.
pub(crate) async fn refused_now(spec: &RegistrySpec) -> &'static str {
    let Some(addr) = embedded_host_port(spec) else {
        return "";
    };
    let probe = tokio::task::spawn_blocking(move || {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&addr)?
            .next()
            .ok_or_else(|| std::io::Error::other("resolves to no address"))?;
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500))
    });
    match probe.await {
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => " (connection refused)",
        _ => "",
    }
}

/// Hands one message to the node; while it is refused because no known node matches the
/// target (a name or ring not registered yet), tries again until `deadline`.
///
/// # Errors
///
/// The last refusal, or the node stopped.
pub(crate) async fn submit_when_known(
    handle: &NodeHandle,
    target: &TargetSpec,
    msg_type: u32,
    payload: Bytes,
    deadline: Instant,
) -> Result<PendingOutcome, SendFailure> {
    loop {
        match handle
            .submit(target.clone(), msg_type, payload.clone())
            .await
        {
            Err(SendFailure::Refused(SendError::UnknownTarget))
                if Instant::now() + TARGET_RETRY < deadline =>
            {
                tokio::time::sleep(TARGET_RETRY).await;
            }
            other => return other,
        }
    }
}

/// A failure label (`refused_unknown_target`, `unknown_timeout`, `no_outcome`, ...) in words,
/// naming the target where that explains it.
pub(crate) fn describe_failure(label: &str, target: &TargetSpec) -> String {
    let text = match label.strip_prefix("refused_") {
        Some(why) => format!("refused {why}"),
        None => label.to_owned(),
    };
    match (label, target) {
        ("refused_unknown_target", TargetSpec::Name(name)) => {
            format!("{text} (no node named {name:?})")
        }
        ("refused_unknown_target", TargetSpec::Id(_)) => text,
        ("refused_unknown_target", _) => format!("{text} (no node matches the filter)"),
        ("refused_payload_too_large", _) => format!("{text} (above the frame payload limit)"),
        ("no_outcome", _) => format!("{text} (lost: no outcome came in time)"),
        _ => text,
    }
}

/// Describes a target for messages: `"a"` or `id 7`.
pub(crate) fn target_name(target: &TargetSpec) -> String {
    match target {
        TargetSpec::Id(id) => format!("id {}", id.0),
        TargetSpec::Name(name) => format!("{name:?}"),
        TargetSpec::Hash { .. } => "the hash ring".to_owned(),
        _ => "the selected node".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::ids::NodeId;

    use super::*;

    #[test]
    fn a_client_draws_a_63_bit_id_unless_given_one_and_is_labelled_a_client() {
        let drawn = client_identity("call", None, None, u64::MAX);
        assert_eq!(drawn.id, u64::MAX >> 1);
        assert_eq!(drawn.name, format!("call-{}", u64::MAX >> 1));
        assert_eq!(
            drawn.labels,
            [
                ("command".to_owned(), "call".to_owned()),
                ("role".to_owned(), "client".to_owned())
            ]
            .into()
        );
        // A zero draw still gives a valid id.
        assert_eq!(client_identity("send", None, None, 1).id, 1);
        let given = client_identity("load", Some(7), Some("l".to_owned()), 99);
        assert_eq!((given.id, given.name.as_str()), (7, "l"));
        assert_eq!(given.upstream, None);
    }

    #[test]
    fn failures_are_described_with_their_target() {
        let name = TargetSpec::Name("nosuch".to_owned());
        assert_eq!(
            describe_failure("refused_unknown_target", &name),
            "refused unknown_target (no node named \"nosuch\")"
        );
        assert_eq!(
            describe_failure("unknown_timeout", &name),
            "unknown_timeout"
        );
        assert_eq!(
            describe_failure("refused_no_route", &TargetSpec::Id(NodeId(3))),
            "refused no_route"
        );
        let random = TargetSpec::Random { filter: None };
        assert_eq!(
            describe_failure("refused_unknown_target", &random),
            "refused unknown_target (no node matches the filter)"
        );
        assert_eq!(
            describe_failure("refused_unknown_target", &TargetSpec::Id(NodeId(3))),
            "refused unknown_target"
        );
        assert_eq!(target_name(&random), "the selected node");
        assert_eq!(target_name(&TargetSpec::Id(NodeId(3))), "id 3");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(Duration::from_secs(10)), "10 s");
    }
}
