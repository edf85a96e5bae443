//! `switchboard node`: one node until SIGINT/SIGTERM, optionally echoing what it receives and
//! serving the admin endpoint.

use std::time::Duration;

use serde::Serialize;
use switchboard_tokio::{
    Inbox, NodeBuilder, NodeHandle, SendFailure, TargetSpec,
    admin::{AdminOptions, AdminServer},
};

use crate::{
    builtin_handlers,
    config::node::NodeOptions,
    error::CliError,
    lifecycle::{StopSignals, or_exit_on_signal, print_json_line, shutdown_bounded, start_error},
};

/// Bound on the drain before a graceful exit ([`NodeHandle::leave`]).
pub(crate) const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// How long the ready line waits for the registration (or its refusal).
pub(crate) const REGISTER_WAIT: Duration = Duration::from_secs(5);

/// The ready line: `{"ready":"node","id":N,"listen":"HOST:PORT","admin":"HOST:PORT"|null,
/// "registered":BOOL,"conflict":"WHY"|null,"serves":[METHOD,...]}`. `registered` is false when the registry did
/// not take the node within [`REGISTER_WAIT`] (the backend keeps trying); `conflict` says
/// why the registry refused it, if it did (`id held by incarnation N`,
/// `name "x" taken by id N`, or the etcd holder) — the node then stops and exits 1.
#[derive(Debug, Serialize)]
pub(crate) struct NodeReady {
    /// Always `node`.
    pub(crate) ready: &'static str,
    /// The node id.
    pub(crate) id: u64,
    /// The bound listen address.
    pub(crate) listen: String,
    /// The bound admin address, if any.
    pub(crate) admin: Option<String>,
    /// Whether the registry took the node's registration.
    pub(crate) registered: bool,
    /// Why the registry refused it, if it did.
    pub(crate) conflict: Option<String>,
    /// The built-in methods it serves (`--serve`), in name order.
    pub(crate) serves: Vec<&'static str>,
}

/// Runs the node until a stop signal, then shuts it down gracefully.
///
/// # Errors
///
/// The node or the admin server did not start, or the node stopped by itself.
pub(crate) async fn run(options: NodeOptions) -> Result<(), CliError> {
    let mut signals = StopSignals::install()?;
    let NodeOptions {
        core,
        listen,
        advertise,
        registry,
        admin,
        admin_token,
        echo,
        serves,
        transport,
    } = options;
    let id = core.id;
    let mut builder = NodeBuilder::new(id, core.name.clone())
        .listen(listen)
        .transport(transport);
    if let Some(advertise) = advertise {
        builder = builder.advertise(advertise);
    }
    builder = builder.config(move |config| *config = core);
    // Served from the start: the first record the backend registers lists the methods, so
    // a restarted server is never published without them.
    for handler in &serves {
        builder = builder.serve(handler.method());
    }
    let (handle, inbox) = builder
        .registry_spec(registry)
        .start()
        .await
        .map_err(start_error)?;
    let admin_server = match admin {
        None => None,
        Some(addr) => {
            match AdminServer::bind_with(
                addr,
                handle.clone(),
                AdminOptions::with_token(admin_token),
            )
            .await
            {
                Ok(server) => Some(server),
                Err(e) => {
                    shutdown_bounded(&handle).await;
                    return Err(CliError::failed(format!(
                        "admin: cannot listen on {addr}: {e}"
                    )));
                }
            }
        }
    };
    let mut inbox_task = tokio::spawn(serve_inbox(handle.clone(), inbox, echo));
    // The requests that came since the start wait for these streams.
    let mut handler_tasks = Vec::with_capacity(serves.len());
    for handler in &serves {
        match builtin_handlers::start(&handle, *handler).await {
            Ok(task) => handler_tasks.push(task),
            Err(e) => {
                drop(admin_server);
                shutdown_bounded(&handle).await;
                return Err(CliError::failed(format!(
                    "serve: cannot serve {}: {e}",
                    handler.method()
                )));
            }
        }
    }
    handle
        .wait_for(REGISTER_WAIT, |k| k.registered || k.conflict.is_some())
        .await;
    let known = handle.known();
    if known.conflict.is_none() && !known.registered {
        tracing::warn!("not registered after {REGISTER_WAIT:?}; running on, the backend retries");
    }
    print_json_line(&NodeReady {
        ready: "node",
        id: id.0,
        listen: handle.local_addr().to_string(),
        admin: admin_server.as_ref().map(|a| a.local_addr().to_string()),
        registered: known.registered,
        conflict: known.conflict.clone(),
        serves: serves.iter().map(|h| h.method()).collect(),
    })?;
    if let Some(conflict) = known.conflict {
        // Another live node holds this id (under another identity) or this name: this one
        // cannot serve. The ready line said why; stop and exit 1 with the reason.
        drop(admin_server);
        shutdown_bounded(&handle).await;
        return Err(CliError::failed(format!(
            "registration refused: {conflict}"
        )));
    }
    tokio::select! {
        signal = signals.wait() => tracing::info!(signal, "stopping the node"),
        _ = &mut inbox_task => {
            return Err(CliError::failed("the node stopped by itself"));
        }
    }
    // Drain first (bounded; a second signal exits at once): senders hold new messages for
    // this node's next life while what is in flight is acknowledged here.
    let drain = or_exit_on_signal(&mut signals, handle.leave("restarting", DRAIN_WAIT)).await;
    if let Ok(drained) = drain {
        tracing::info!(
            quiet = drained.quiet,
            announced = drained.announced,
            received = drained.received,
            "drained"
        );
    }
    drop(admin_server);
    shutdown_bounded(&handle).await;
    for task in handler_tasks {
        task.abort();
    }
    Ok(())
}

/// Reads the inbox until the node stops; with `echo`, sends every message back to its sender
/// (same type, same payload) without waiting for the echo's outcome.
async fn serve_inbox(handle: NodeHandle, mut inbox: Inbox, echo: bool) {
    while let Some(message) = inbox.recv().await {
        if !echo {
            continue;
        }
        let reply = handle
            .submit(
                TargetSpec::Id(message.from),
                message.msg_type,
                message.payload,
            )
            .await;
        match reply {
            Ok(_outcome_not_awaited) => {}
            Err(SendFailure::Stopped) => break,
            Err(e) => tracing::debug!(from = message.from.0, error = %e, "echo refused"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_has_its_keys_in_order() {
        let with_admin = NodeReady {
            ready: "node",
            id: 7,
            listen: "127.0.0.1:7100".to_owned(),
            admin: Some("127.0.0.1:9100".to_owned()),
            registered: true,
            conflict: None,
            serves: vec!["echo", "silent"],
        };
        assert_eq!(
            serde_json::to_string(&with_admin).expect("json"),
            r#"{"ready":"node","id":7,"listen":"127.0.0.1:7100","admin":"127.0.0.1:9100","registered":true,"conflict":null,"serves":["echo","silent"]}"#
        );
        let refused = NodeReady {
            admin: None,
            registered: false,
            conflict: Some("name \"a\" taken by id 3".to_owned()),
            serves: Vec::new(),
            ..with_admin
        };
        assert_eq!(
            serde_json::to_string(&refused).expect("json"),
            r#"{"ready":"node","id":7,"listen":"127.0.0.1:7100","admin":null,"registered":false,"conflict":"name \"a\" taken by id 3","serves":[]}"#
        );
    }
}
