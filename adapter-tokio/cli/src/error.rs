//! The one error type of the binary and its exit codes: 2 for a bad flag or config value
//! (printed as `error: <field>: <problem>`), 1 for a failure at run time.

use std::fmt::Display;

/// Why a subcommand stopped with an error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// A flag or config value is missing or wrong; nothing was started. Exit code 2.
    #[error("{field}: {problem}")]
    Invalid {
        /// The flag or config key, as the config file spells it (`listen`, `core.id`).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Something failed while running (a bind, a stopped node). Exit code 1.
    #[error("{0}")]
    Failed(String),
    /// A stop signal ended the run early (what was done is reported). Exit code 128 + the
    /// signal's number: 130 for SIGINT, 143 for SIGTERM.
    #[error("{what}: interrupted by {signal}")]
    Interrupted {
        /// The command.
        what: &'static str,
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
    },
}

impl CliError {
    /// A bad value of `field`.
    pub(crate) fn invalid(field: impl Into<String>, problem: impl Into<String>) -> CliError {
        CliError::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// A failure at run time.
    pub(crate) fn failed(message: impl Display) -> CliError {
        CliError::Failed(message.to_string())
    }

    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Invalid { .. } => 2,
            CliError::Failed(_) => 1,
            CliError::Interrupted { signal, .. } => interrupted_code(signal),
        }
    }
}

/// The exit code of a run a stop signal ended: 128 + its number (130 SIGINT, 143 SIGTERM).
pub(crate) fn interrupted_code(signal: &str) -> u8 {
    if signal == "SIGINT" { 130 } else { 143 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_values_exit_2_and_name_the_field() {
        let e = CliError::invalid("core.message_timeout_ms", "must be greater than zero");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "core.message_timeout_ms: must be greater than zero"
        );
    }

    #[test]
    fn an_interrupted_run_exits_128_plus_the_signal() {
        let e = CliError::Interrupted {
            what: "load",
            signal: "SIGINT",
        };
        assert_eq!(e.exit_code(), 130);
        assert_eq!(e.to_string(), "load: interrupted by SIGINT");
        let e = CliError::Interrupted {
            what: "load",
            signal: "SIGTERM",
        };
        assert_eq!(e.exit_code(), 143);
    }

    #[test]
    fn run_time_failures_exit_1() {
        let e = CliError::failed("the node stopped");
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "the node stopped");
    }
}
