//! `switchboard registry`: the embedded registry server until SIGINT/SIGTERM.

use serde::Serialize;
use switchboard_tokio::{
    admin::{AdminOptions, AdminServer},
    registry::spawn_registry_capped,
};

use crate::{
    config::registry::RegistryOptions,
    error::CliError,
    lifecycle::{SHUTDOWN_WAIT, StopSignals, print_json_line, run_seed},
};

/// The ready line: `{"ready":"registry","listen":"HOST:PORT"}`, with `"admin":"HOST:PORT"`
/// last when `--admin` is given.
#[derive(Debug, Serialize)]
pub(crate) struct RegistryReady {
    /// Always `registry`.
    pub(crate) ready: &'static str,
    /// The bound address.
    pub(crate) listen: String,
    /// The admin endpoint's bound address, if it serves one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) admin: Option<String>,
}

/// Runs the registry until a stop signal, then shuts it down gracefully.
///
/// # Errors
///
/// A bind failed, or stdout is closed.
pub(crate) async fn run(options: RegistryOptions) -> Result<(), CliError> {
    let mut signals = StopSignals::install()?;
    let registry = spawn_registry_capped(
        options.listen,
        options.server,
        run_seed(),
        options.transport,
        options.caps,
    )
    .await
    .map_err(|e| CliError::failed(format!("listen: cannot listen on {}: {e}", options.listen)))?;
    let admin = match options.admin {
        Some(addr) => Some(
            AdminServer::bind_registry_with(
                addr,
                registry.stats(),
                AdminOptions::with_token(options.admin_token),
            )
            .await
            .map_err(|e| CliError::failed(format!("admin: cannot listen on {addr}: {e}")))?,
        ),
        None => None,
    };
    print_json_line(&RegistryReady {
        ready: "registry",
        listen: registry.local_addr().to_string(),
        admin: admin.as_ref().map(|a| a.local_addr().to_string()),
    })?;
    let signal = signals.wait().await;
    tracing::info!(signal, "stopping the registry");
    if tokio::time::timeout(SHUTDOWN_WAIT, registry.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("the registry did not stop within {SHUTDOWN_WAIT:?}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_has_its_keys_in_order() {
        let line = serde_json::to_string(&RegistryReady {
            ready: "registry",
            listen: "127.0.0.1:7000".to_owned(),
            admin: None,
        })
        .expect("json");
        assert_eq!(line, r#"{"ready":"registry","listen":"127.0.0.1:7000"}"#);
        let line = serde_json::to_string(&RegistryReady {
            ready: "registry",
            listen: "127.0.0.1:7000".to_owned(),
            admin: Some("127.0.0.1:9100".to_owned()),
        })
        .expect("json");
        assert_eq!(
            line,
            r#"{"ready":"registry","listen":"127.0.0.1:7000","admin":"127.0.0.1:9100"}"#
        );
    }
}
