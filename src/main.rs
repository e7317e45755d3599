//! The `agent-history` command. The command line lives in `src/cli/`, one module per concern.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
