//! The command-line tool: a crate of its own that uses only the library's public surface.
//!
//! `args` is the clap definition, `input` reads rollouts and snapshots, `output` writes reports
//! and status; each subcommand has its own module.

#[macro_use]
mod output;
mod args;
mod check;
mod input;
mod prefix;
mod project;
mod snapshot;
mod stats;
mod verify;

use std::process::ExitCode;

use clap::Parser as _;

use args::{Cli, Command};
use output::is_broken_pipe;

/// Parses the command line, runs the command and turns its outcome into the exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        // A reader that stopped reading (`| head`) is not an error: end quietly, as other
        // command-line tools do.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the error and its sources on one line: the library's errors say what
            // failed and leave the cause to `source()`.
            status!("agent-history: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Project(args) => project::run(args),
        Command::Check(args) => check::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Prefix(args) => prefix::run(args),
    }
}
