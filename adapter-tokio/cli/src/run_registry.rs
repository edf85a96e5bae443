//! `switchboard registry`: the embedded registry server until SIGINT/SIGTERM.

use serde::Serialize;
use switchboard_tokio::registry::spawn_registry;

use crate::{
    config::registry::RegistryOptions,
    error::CliError,
    lifecycle::{SHUTDOWN_WAIT, StopSignals, print_json_line, run_seed},
};

/// The ready line: `{"ready":"registry","listen":"HOST:PORT"}`.
#[derive(Debug, Serialize)]
pub(crate) struct RegistryReady {
    /// Always `registry`.
    pub(crate) ready: &'static str,
    /// The bound address.
    pub(crate) listen: String,
}

/// Runs the registry until a stop signal, then shuts it down gracefully.
///
/// # Errors
///
/// The bind failed, or stdout is closed.
pub(crate) async fn run(options: RegistryOptions) -> Result<(), CliError> {
    let mut signals = StopSignals::install()?;
    let registry = spawn_registry(options.listen, options.server, run_seed())
        .await
        .map_err(|e| {
            CliError::failed(format!("listen: cannot listen on {}: {e}", options.listen))
        })?;
    print_json_line(&RegistryReady {
        ready: "registry",
        listen: registry.local_addr().to_string(),
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
        })
        .expect("json");
        assert_eq!(line, r#"{"ready":"registry","listen":"127.0.0.1:7000"}"#);
    }
}
