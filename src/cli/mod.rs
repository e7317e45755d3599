//! The command-line tool: a crate of its own that uses only the library's public surface.
//!
//! `args` is the clap definition, `input` reads rollouts and snapshots, `output` writes reports
//! and status; each subcommand has its own module.

#[macro_use]
mod output;
mod append;
mod args;
mod check;
mod input;
mod lint;
mod prefix;
mod project;
mod repair;
mod snapshot;
mod stats;
mod verify;

use std::process::ExitCode;

use std::io::Write as _;

use anyhow::Context as _;
use clap::{CommandFactory as _, Parser as _};

use args::{Cli, Command};
use output::is_broken_pipe;

/// Parses the command line, runs the command and turns its outcome into the exit status
/// ([`output::SUCCESS`], [`output::FINDINGS`], [`output::USAGE`] from clap, [`output::INPUT`]).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    output::set_quiet(cli.quiet);
    input::set_codex_home(cli.codex_home.clone());
    match run(cli) {
        Ok(code) => code,
        // A reader that stopped reading (`| head`) is not an error: end quietly, as other
        // command-line tools do.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            output::error_line(&error);
            ExitCode::from(exit_status(&error))
        }
    }
}

/// The exit status of a failed command: a strict projection's violations are findings, a
/// usage error found after parsing is a usage error, everything else is an input or output
/// error.
fn exit_status(error: &anyhow::Error) -> u8 {
    if error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<agent_history::ProjectionError>(),
            Some(agent_history::ProjectionError::Violations(_))
        )
    }) {
        output::FINDINGS
    } else if error.downcast_ref::<Usage>().is_some() {
        output::USAGE
    } else {
        output::INPUT
    }
}

/// A usage error found after parsing: an option without effect for the input given.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Project(args) => {
            input::set_format(args.format);
            project::run(*args)
        }
        Command::Check(args) => {
            input::set_format(args.format);
            check::run(args)
        }
        Command::Stats(args) => {
            input::set_format(args.format);
            stats::run(args)
        }
        Command::Snapshot(args) => {
            input::set_format(args.format);
            snapshot::run(args)
        }
        Command::Repair(args) => repair::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Append(args) => append::run(args),
        Command::Prefix(args) => {
            input::set_format(args.format);
            prefix::run(args)
        }
        Command::Lint(args) => lint::run(args),
        Command::Completions(args) => {
            // Into a buffer first: `generate` panics when its writer fails (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(
                args.shell,
                &mut Cli::command(),
                "agent-history",
                &mut script,
            );
            let mut out = output::stdout();
            out.write_all(&script).context("cannot write to stdout")?;
            output::finish(out)
        }
        Command::Man => {
            let mut out = output::stdout();
            clap_mangen::Man::new(Cli::command())
                .render(&mut out)
                .context("cannot write to stdout")?;
            output::finish(out)
        }
    }
}
