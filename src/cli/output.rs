//! Writing reports to stdout and status to stderr.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context as _;

/// Writes a status line to stderr. A failure to write it is ignored: status is a courtesy, and a
/// closed or full stderr must not stop (or crash) the command.
macro_rules! status {
    ($($arg:tt)*) => {{
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{}\n", format_args!($($arg)*)));
    }};
}

/// Whether an error comes from writing to a pipe whose reader has gone.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|error| error.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Standard output, buffered; every write is checked (`?`), so that a full disk or a closed
/// pipe is an error, never a panic.
pub fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::new(io::stdout().lock())
}

/// Flushes standard output, naming it in the error.
pub fn finish(mut out: impl Write) -> anyhow::Result<ExitCode> {
    out.flush().context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}
