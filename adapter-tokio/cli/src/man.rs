//! `switchboard man`: the man pages, generated from the command line's own definition —
//! `switchboard(1)` and one page per subcommand (`switchboard-send(1)`, …), which the main
//! page lists under SUBCOMMANDS.

use std::{io::Write, path::Path};

use clap::CommandFactory;

use crate::{cli::Cli, error::CliError};

/// Writes the page of `subcommand` (the main page without one) on stdout, or with `out_dir`
/// every page into that directory (`switchboard.1`, `switchboard-send.1`, …), printing each
/// path written.
///
/// # Errors
///
/// An unknown subcommand (exit 2), a page that cannot be written.
pub(crate) fn run(subcommand: Option<&str>, out_dir: Option<&Path>) -> Result<(), CliError> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    if let Some(dir) = out_dir {
        if subcommand.is_some() {
            return Err(CliError::invalid(
                "out_dir",
                "writes every page: give no subcommand",
            ));
        }
        return write_all(&command, dir);
    }
    let page = match subcommand {
        None => command,
        Some(name) => (command.find_subcommand(name).cloned()).ok_or_else(|| {
            let names: Vec<&str> = (command.get_subcommands())
                .filter(|s| !s.is_hide_set())
                .map(clap::Command::get_name)
                .collect();
            CliError::invalid(
                "subcommand",
                format!("no subcommand {name:?} (one of {})", names.join(", ")),
            )
        })?,
    };
    let mut out = std::io::stdout().lock();
    (clap_mangen::Man::new(page).render(&mut out))
        .and_then(|()| out.flush())
        .map_err(|e| CliError::failed(format!("cannot write the man page: {e}")))
}

/// Writes `command`'s page and its subcommands' (depth first) into `dir`.
fn write_all(command: &clap::Command, dir: &Path) -> Result<(), CliError> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_all(sub, dir)?;
    }
    let path = (clap_mangen::Man::new(command.clone()).generate_to(dir))
        .map_err(|e| CliError::failed(format!("cannot write into {}: {e}", dir.display())))?;
    println!("{}", path.display());
    Ok(())
}
