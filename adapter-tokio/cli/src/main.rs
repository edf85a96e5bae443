//! `switchboard`: run the pieces of a switchboard cluster from the command line.
//!
//! ```text
//! switchboard registry --listen ADDR [--concern FILE] [--config FILE]
//! switchboard node --id N --name NAME --listen ADDR [--upstream ID]
//!                  (--registry ADDR | --etcd URL[,URL...] [--etcd-prefix P])
//!                  [--label K=V]... [--admin ADDR] [--echo] [--serve echo|sleep|silent[,...]]
//!                  [--config FILE]
//! switchboard load (--registry ADDR | --etcd URL...) (--to NAME | --hash-key K [--filter K=V]...)
//!                  --count N --rate R --size B [--id N] [--name NAME] [--wait-known SECS]
//!                  [--upstream ID] [--window N] [--outcomes-log FILE] [--config FILE]
//! switchboard send (--registry ADDR | --etcd URL...) --to NAME|ID --payload TEXT [--type N]
//!                  [--timeout-ms T]
//! switchboard ls (--registry ADDR | --etcd URL...) [-o table|json] [--timeout-ms T]
//! switchboard call (--registry ADDR | --etcd URL...) --method M [--key K] [--payload TEXT]
//!                  [--timeout D] [--grace D]
//! switchboard broadcast (--registry ADDR | --etcd URL...) [--label K=V]... [--type N]
//!                  --payload TEXT [--include-self]
//! switchboard demo [--seconds S] [--rate R] [--json] [--etcd URL...] [--etcd-prefix P]
//! switchboard keygen PATH
//! switchboard cert ca --out DIR
//! switchboard cert node (--id N | --name NAME) --ca-dir DIR --out DIR [--dns NAME]... [--ip ADDR]...
//! switchboard completions SHELL
//! switchboard man
//! ```
//!
//! - `registry` runs the embedded registry until SIGINT/SIGTERM. Once listening it prints
//!   `{"ready":"registry","listen":"HOST:PORT"}` on stdout.
//! - `node` runs one node until SIGINT/SIGTERM, then shuts it down gracefully. Once registered
//!   (or after 5 s without a registry) it prints
//!   `{"ready":"node","id":N,"listen":"HOST:PORT","admin":"HOST:PORT"|null,"registered":B,
//!   "conflict":"WHY"|null,"serves":[METHOD,...]}`. `--echo` sends every received message
//!   back to its sender; `--serve` serves built-in methods (`echo` answers the payload,
//!   `sleep` waits the payload's decimal milliseconds then answers it, `silent` never
//!   answers); `--admin` serves `/metrics` (Prometheus text) and `/status` (JSON).
//! - `load` starts a node of its own, sends numbered messages at a steady rate and prints
//!   `{"sent","delivered","failed":{reason:count},"duplicates","echoed","p50_us","p99_us",
//!   "max_us","unknown","lost","elapsed_ms","rate_achieved","spans_ms"}`; it exits 1 with one
//!   stderr line when any message was not delivered or the registry did not answer.
//! - `send` sends one message and prints `{"outcome":"delivered","latency_us":N}` or the
//!   failure; exit 0 only when delivered.
//! - `call` calls a method once (round robin, or by hash of `--key`) and prints
//!   `{"outcome":"reply","payload":TEXT,"latency_us":N}` or
//!   `{"outcome":"failed"|"unknown","reason":R,"latency_us":N}`; exit 0 only on a reply.
//!   Durations are written `250ms`, `5s`, `1.5s`.
//! - `broadcast` sends one message to every node with the `--label`s and prints
//!   `{"delivered":[ID,...],"failed":{ID:REASON},"unknown":{ID:REASON}}`; exit 0 only when
//!   every recipient got it.
//! - `ls` prints every node the registry knows (a table, or a JSON array with `-o json`).
//! - `demo` runs a whole cluster in this process through a scripted series of failures and
//!   prints a table (with `--json` the table goes to stderr and stdout is one line
//!   `{"sent","delivered","failed","duplicates","lost","p50_us","p99_us",...}`); it exits 0
//!   only when no accepted message was lost or duplicated.
//! - `keygen PATH` writes a fresh cluster key (64 hex characters, mode 0600) to a new file.
//!   Every subcommand that joins a cluster takes `--cluster-key-file PATH` (and, while a
//!   cluster rotates keys, `--next-cluster-key-file PATH`): links and registry connections
//!   then authenticate with an HMAC-SHA256 challenge-response and refuse strangers.
//! - `cert ca --out DIR` writes a new cluster CA (`ca.pem`, `ca.key` mode 0600); `cert node
//!   --id N --ca-dir DIR --out DIR` a certificate for node N signed by it (`node-N.pem`,
//!   `node-N.key` mode 0600) naming the id in the SAN URI `urn:switchboard:node:N`, with the
//!   `serverAuth` and `clientAuth` usages. Neither overwrites a file (build with `tls`).
//! - `completions SHELL` prints a completion script, `man` the man page (roff), on stdout.
//!
//! `--config FILE` (TOML, keys named like the flags, a `[core]` table for the core settings of
//! a node) can replace the flags of `registry`, `node` and `load`; flags override the file.
//! Unknown keys are errors. A bad flag or value prints one line on stderr,
//! `error: <field>: <problem>` (followed by clap's `tip:` line when it has one, e.g. a
//! similar flag), and exits with code 2; a failure at run time exits with 1.
//! Logs go to stderr, filtered by `RUST_LOG` (default `warn`; an invalid filter is reported
//! in one line and the default used), as text or, with `--log-format json`, one JSON object
//! per line.

mod address;
mod builtin_handlers;
mod cli;
mod client;
mod config;
mod demo;
mod duration;
mod error;
mod keys;
mod lifecycle;
mod ls_watch;
mod man;
mod outcome_log;
mod payload;
mod payload_input;
mod run_broadcast;
mod run_call;
mod run_cert;
mod run_load;
mod run_load_calls;
mod run_ls;
mod run_node;
mod run_registry;
mod run_send;
mod run_swarm;
mod secret_file;
mod selection;
mod stats;
mod swarm_probe;

use std::{io::IsTerminal, process::ExitCode, time::Duration};

use clap::{CommandFactory, Parser, error::ErrorKind};
use tracing_subscriber::EnvFilter;

use crate::{
    cli::{Cli, Command, LogFormat},
    config::{load::LoadOptions, node::NodeOptions, registry::RegistryOptions},
    error::CliError,
};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "switchboard",
                &mut std::io::stdout(),
            );
            return ExitCode::SUCCESS;
        }
        Command::Cert(command) => {
            return match run_cert::run(command) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            };
        }
        Command::Keygen { path } => {
            return match keys::keygen(&path) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            };
        }
        Command::Man {
            subcommand,
            out_dir,
        } => {
            return match man::run(subcommand.as_deref(), out_dir.as_deref()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            };
        }
        _ => {}
    }
    init_logging(cli.log_format);
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
            run_load::run(LoadOptions::resolve(args, keys::random_u64())?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => demo::run(demo::DemoOptions::resolve(args)?).await,
        Command::Send(args) => {
            run_send::run(run_send::SendOptions::resolve(args, keys::random_u64())?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call(args) => {
            run_call::run(run_call::CallOptions::resolve(args, keys::random_u64())?).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Broadcast(args) => {
            run_broadcast::run(run_broadcast::BroadcastOptions::resolve(
                args,
                keys::random_u64(),
            )?)
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Swarm(args) => run_swarm::run(run_swarm::SwarmOptions::resolve(args)?).await,
        Command::Ls(args) => {
            run_ls::run(run_ls::LsOptions::resolve(args, keys::random_u64())?).await?;
            Ok(ExitCode::SUCCESS)
        }

        // Handled before the runtime starts.
        Command::Completions { .. }
        | Command::Man { .. }
        | Command::Keygen { .. }
        | Command::Cert(_) => Ok(ExitCode::SUCCESS),
    }
}

/// Help and version go to stdout with exit 0 (clap's way); every usage error is printed as
/// one line (plus clap's `tip:` line, if any) and exits with 2.
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
            let rendered = error.render().to_string();
            eprintln!("{}", first_paragraph(&rendered));
            for tip in tips(&rendered) {
                eprintln!("{tip}");
            }
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

/// clap's `tip:` lines (a similar flag, how to pass a value starting with `-`), trimmed.
fn tips(message: &str) -> Vec<&str> {
    message
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("tip:"))
        .collect()
}

/// The log filter: `RUST_LOG` if set and valid, else `warn`, with the reason the variable
/// was not used (it is set but invalid) for a one-line warning.
fn log_filter(rust_log: Option<&str>) -> (EnvFilter, Option<String>) {
    const DEFAULT: &str = "warn";
    match rust_log {
        None => (EnvFilter::new(DEFAULT), None),
        Some(text) => match EnvFilter::builder().parse(text) {
            Ok(filter) => (filter, None),
            Err(e) => (
                EnvFilter::new(DEFAULT),
                Some(format!(
                    "warning: RUST_LOG={text:?} is not a valid filter ({e}); using {DEFAULT:?}"
                )),
            ),
        },
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`; an invalid filter is reported on
/// stderr and falls back to it), as text or JSON lines.
fn init_logging(format: LogFormat) {
    let rust_log = std::env::var(EnvFilter::DEFAULT_ENV).ok();
    let (filter, problem) = log_filter(rust_log.as_deref());
    if let Some(problem) = problem {
        eprintln!("{problem}");
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().with_ansi(false).init(),
    }
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
            "error: invalid value '-1' for '--count <N>': must be 0 or more, got -1"
        );
    }

    #[test]
    fn tips_are_kept() {
        let e = Cli::try_parse_from(["switchboard", "node", "--listn", "x"]).expect_err("typo");
        assert_eq!(
            tips(&e.render().to_string()),
            vec!["tip: a similar argument exists: '--listen'"]
        );
    }

    #[test]
    fn an_invalid_rust_log_is_reported_and_replaced_by_the_default() {
        assert_eq!(log_filter(None).1, None);
        assert_eq!(log_filter(Some("switchboard=debug")).1, None);
        let (filter, problem) = log_filter(Some("=[bad"));
        assert_eq!(filter.to_string(), "warn");
        let problem = problem.expect("a warning");
        assert!(
            problem.starts_with("warning: RUST_LOG=\"=[bad\" is not a valid filter ("),
            "{problem}"
        );
        assert_eq!(problem.lines().count(), 1);
    }
}
