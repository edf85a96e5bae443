//! What every long-running subcommand shares: stop signals, the one-line JSON written to
//! stdout, bounded shutdown, and start errors as CLI errors.

use std::{io::Write, time::Duration};

use serde::Serialize;
use switchboard_tokio::{NodeHandle, node::StartError};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::{config::core_config_error, error::CliError};

/// Bound on a graceful node shutdown before the process gives up on it.
pub(crate) const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// SIGINT and SIGTERM handlers, installed before anything is announced so a signal that
/// arrives right after the ready line is handled gracefully.
pub(crate) struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    /// Installs the handlers.
    ///
    /// # Errors
    ///
    /// The signal handlers could not be registered.
    pub(crate) fn install() -> Result<StopSignals, CliError> {
        let install = |kind: SignalKind| {
            signal(kind).map_err(|e| CliError::failed(format!("cannot handle signals: {e}")))
        };
        Ok(StopSignals {
            interrupt: install(SignalKind::interrupt())?,
            terminate: install(SignalKind::terminate())?,
        })
    }

    /// Waits for SIGINT or SIGTERM; returns its name.
    pub(crate) async fn wait(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// Runs `work` unless a stop signal comes first (`Err(signal)`: `work` is dropped).
pub(crate) async fn until_signal<T>(
    signals: &mut StopSignals,
    work: impl std::future::Future<Output = T>,
) -> Result<T, &'static str> {
    tokio::select! {
        value = work => Ok(value),
        signal = signals.wait() => Err(signal),
    }
}

/// Runs `work` (the bounded wind-down after a first signal); a second signal exits the
/// process at once with its code (130 for SIGINT, 143 for SIGTERM).
pub(crate) async fn or_exit_on_signal<T>(
    signals: &mut StopSignals,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::select! {
        value = work => value,
        signal = signals.wait() => {
            eprintln!("error: second {signal}: exiting at once");
            std::process::exit(i32::from(crate::error::interrupted_code(signal)));
        }
    }
}

/// Writes `value` as one JSON line on stdout and flushes.
///
/// # Errors
///
/// stdout is closed.
pub(crate) fn print_json_line<T: Serialize>(value: &T) -> Result<(), CliError> {
    let line = serde_json::to_string(value)
        .map_err(|e| CliError::failed(format!("cannot encode output: {e}")))?;
    print_line(&line)
}

/// Prints a command's result in `format`: one JSON line, or one `key=value` line for a
/// person (`sent=100 delivered=100 failed={}`: nested values as compact JSON).
///
/// # Errors
///
/// The value cannot be encoded, stdout cannot be written.
pub(crate) fn print_result<T: Serialize>(
    value: &T,
    format: crate::cli::Format,
) -> Result<(), CliError> {
    match format {
        crate::cli::Format::Json => print_json_line(value),
        crate::cli::Format::Text => print_line(&key_values(value)?),
    }
}

/// `value`'s top-level fields as `key=value` pairs, sorted by key; strings bare unless they hold
/// a space or are empty (then quoted), nested values as compact JSON.
fn key_values<T: Serialize>(value: &T) -> Result<String, CliError> {
    let json = serde_json::to_value(value)
        .map_err(|e| CliError::failed(format!("cannot encode output: {e}")))?;
    let serde_json::Value::Object(fields) = json else {
        return Ok(json.to_string());
    };
    let pairs: Vec<String> = (fields.iter())
        .map(|(key, value)| match value {
            serde_json::Value::String(text) if !text.is_empty() && !text.contains(' ') => {
                format!("{key}={text}")
            }
            other => format!("{key}={other}"),
        })
        .collect();
    Ok(pairs.join(" "))
}

/// Prints `line` and a newline on stdout, flushed.
///
/// # Errors
///
/// Stdout cannot be written.
pub(crate) fn print_line(line: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|e| CliError::failed(format!("cannot write to stdout: {e}")))
}

/// Gracefully shuts `handle` down, at most [`SHUTDOWN_WAIT`]; kills it if that passes.
pub(crate) async fn shutdown_bounded(handle: &NodeHandle) {
    match tokio::time::timeout(SHUTDOWN_WAIT, handle.shutdown()).await {
        Ok(_) => {}
        Err(_) => {
            tracing::warn!(
                id = handle.id().0,
                "graceful shutdown took too long; killing the node"
            );
            handle.kill();
        }
    }
}

/// A node start failure as a CLI error: config problems and a build without etcd are bad
/// values (exit 2), a failed bind is a run-time failure (exit 1).
pub(crate) fn start_error(error: StartError) -> CliError {
    match error {
        StartError::Config(e) => core_config_error(e),
        StartError::EtcdDisabled => CliError::invalid("etcd", StartError::EtcdDisabled.to_string()),
        e @ StartError::WildcardWithoutAdvertise { .. } => {
            CliError::invalid("advertise", e.to_string())
        }
        StartError::Bind { addr, source } => {
            CliError::failed(format!("listen: cannot listen on {addr}: {source}"))
        }
        other => CliError::failed(other),
    }
}

/// A seed that differs between runs (registry epochs, demo seeds).
pub(crate) fn run_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Fold the 128-bit nanosecond count into 64 bits; truncation is the point.
    (nanos as u64) ^ ((nanos >> 64) as u64) ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_result_as_text_is_one_line_of_sorted_key_values() {
        #[derive(Serialize)]
        struct Summary {
            sent: u64,
            failed: std::collections::BTreeMap<&'static str, u64>,
            name: &'static str,
            note: &'static str,
            p99_us: Option<u64>,
        }
        let summary = Summary {
            sent: 3,
            failed: [("unknown_timeout", 1)].into(),
            name: "load-7",
            note: "two words",
            p99_us: None,
        };
        assert_eq!(
            key_values(&summary).expect("encodable"),
            r#"failed={"unknown_timeout":1} name=load-7 note="two words" p99_us=null sent=3"#
        );
    }

    use super::*;

    #[test]
    fn a_build_without_etcd_is_a_bad_value_of_etcd() {
        let e = start_error(StartError::EtcdDisabled);
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "etcd: this build has no etcd support (rebuild with `--features etcd`)"
        );
    }

    #[test]
    fn a_failed_bind_is_a_run_time_failure() {
        let e = start_error(StartError::Bind {
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], 80)),
            source: std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use"),
        });
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.to_string(),
            "listen: cannot listen on 127.0.0.1:80: in use"
        );
    }
}
