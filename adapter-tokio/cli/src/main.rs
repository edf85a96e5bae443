//! `switchboard`: run the pieces of a switchboard cluster from the command line.
//!
//! ```text
//! switchboard registry --listen ADDR [--concern FILE] [--config FILE]
//! switchboard node --id N --name NAME --listen ADDR [--upstream ID]
//!                  (--registry ADDR | --etcd URL[,URL...] [--etcd-prefix P])
//!                  [--label K=V]... [--admin ADDR] [--echo] [--config FILE]
//! switchboard load (--registry ADDR | --etcd URL...) (--to NAME | --hash-key K [--filter K=V]...)
//!                  --count N --rate R --size B [--id N] [--name NAME] [--wait-known SECS]
//!                  [--upstream ID] [--window N] [--outcomes-log FILE] [--config FILE]
//! switchboard send (--registry ADDR | --etcd URL...) --to NAME|ID --payload TEXT [--type N]
//!                  [--timeout-ms T]
//! switchboard ls (--registry ADDR | --etcd URL...) [-o table|json] [--timeout-ms T]
//! switchboard demo [--seconds S] [--rate R] [--json] [--etcd URL...]
//! ```
//!
//! - `registry` runs the embedded registry until SIGINT/SIGTERM. Once listening it prints
//!   `{"ready":"registry","listen":"HOST:PORT"}` on stdout.
//! - `node` runs one node until SIGINT/SIGTERM, then shuts it down gracefully. Once registered
//!   (or after 5 s without a registry) it prints
//!   `{"ready":"node","id":N,"listen":"HOST:PORT","admin":"HOST:PORT"|null}`. `--echo` sends
//!   every received message back to its sender; `--admin` serves `/metrics` (Prometheus text)
//!   and `/status` (JSON).
//! - `load` starts a node of its own, sends numbered messages at a steady rate and prints
//!   `{"sent","delivered","failed":{reason:count},"duplicates","echoed","p50_us","p99_us",
//!   "max_us","unknown","lost","elapsed_ms","rate_achieved","spans_ms"}`; it exits 1 with one
//!   stderr line when any message was not delivered or the registry did not answer.
//! - `send` sends one message and prints `{"outcome":"delivered","latency_us":N}` or the
//!   failure; exit 0 only when delivered.
//! - `ls` prints every node the registry knows (a table, or a JSON array with `-o json`).
//! - `demo` runs a whole cluster in this process through a scripted series of failures and
//!   prints a table (and with `--json` a last line
//!   `{"sent","delivered","failed","duplicates","lost","p50_us","p99_us"}`); it exits 0 only
//!   when no accepted message was lost or duplicated.
//!
//! `--config FILE` (TOML, keys named like the flags, a `[core]` table for the core settings of
//! a node) can replace the flags of `registry`, `node` and `load`; flags override the file.
//! Unknown keys are errors. A bad flag or value prints one line on stderr,
//! `error: <field>: <problem>`, and exits with code 2; a failure at run time exits with 1.
//! Logs go to stderr, filtered by `RUST_LOG` (default `warn`).

mod cli;
mod client;
mod config;
mod demo;
mod error;
mod lifecycle;
mod outcome_log;
mod payload;
mod run_load;
mod run_ls;
mod run_node;
mod run_registry;
mod run_send;
mod stats;

use std::{io::IsTerminal, process::ExitCode, time::Duration};

use clap::{Parser, error::ErrorKind};
use tracing_subscriber::EnvFilter;

use crate::{
    cli::{Cli, Command},
    config::{load::LoadOptions, node::NodeOptions, registry::RegistryOptions},
    error::CliError,
};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(run(cli.command));
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Resolves the subcommand's options and runs it.
async fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Registry(args) => {
            run_registry::run(RegistryOptions::resolve(args)?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Node(args) => {
            run_node::run(NodeOptions::resolve(args)?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Load(args) => {
            run_load::run(LoadOptions::resolve(args, std::process::id())?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => demo::run(demo::DemoOptions::resolve(args)?).await,
        Command::Send(args) => {
            run_send::run(run_send::SendOptions::resolve(args, std::process::id())?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ls(args) => {
            run_ls::run(run_ls::LsOptions::resolve(args, std::process::id())?).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Help and version go to stdout with exit 0 (clap's way); every usage error is printed as
/// one line and exits with 2.
fn clap_exit(error: &clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Nothing sensible is left to do if stdout/stderr are gone.
            let _ = error.print();
            ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2))
        }
        _ => {
            eprintln!("{}", first_paragraph(&error.render().to_string()));
            ExitCode::from(2)
        }
    }
}

/// The first paragraph of a clap message joined into one line (the error and, for missing
/// arguments, the names that follow it; usage and tips are dropped).
fn first_paragraph(message: &str) -> String {
    message
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`; an invalid filter falls back to
/// it).
fn init_logging() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn usage_error(args: &[&str]) -> String {
        let e = Cli::try_parse_from(args).expect_err("a usage error");
        first_paragraph(&e.render().to_string())
    }

    #[test]
    fn usage_errors_become_one_line_naming_the_flag() {
        assert_eq!(
            usage_error(&["switchboard", "node", "--bogus"]),
            "error: unexpected argument '--bogus' found"
        );
        assert_eq!(
            usage_error(&["switchboard", "node", "--listen", "nowhere"]),
            "error: invalid value 'nowhere' for '--listen <ADDR>': invalid socket address syntax"
        );
        assert_eq!(
            usage_error(&["switchboard", "node", "--label", "role"]),
            "error: invalid value 'role' for '--label <K=V>': expected KEY=VALUE, got \"role\""
        );
        assert_eq!(
            usage_error(&["switchboard", "load", "--count", "-1"]),
            "error: unexpected argument '-1' found"
        );
    }
}
