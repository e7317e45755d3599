//! Running the `agent-history` command (feature `cli`, which builds it).

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

/// The command, ready for arguments.
pub fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agent-history"))
}

/// Runs the command with `args` and an empty standard input; its status and output.
pub fn run(args: &[&str]) -> Output {
    command().args(args).output().expect("the binary runs")
}

/// Runs the command with `args`, `input` on its standard input.
pub fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    output_with_stdin(command().args(args), input)
}

/// Runs `command` (the command with its arguments, its working directory, …) with `input` on its
/// standard input. A command that fails before reading its input closes the pipe: the write may
/// then fail, and what the command did is in its status and output.
pub fn output_with_stdin(command: &mut Command, input: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let _ = child.stdin.take().expect("stdin").write_all(input);
    child.wait_with_output().expect("the binary runs")
}

/// The command's output as text; it writes only UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}
