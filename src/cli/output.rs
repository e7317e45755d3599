//! Writing reports to stdout and status to stderr: text or JSON, `--quiet`, repeats collapsed,
//! exit codes, a closed pipe.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_history::Resumed;
use anyhow::Context as _;
use serde::Serialize;

/// Exit status: the command did what was asked and found nothing `--strict` fails on.
pub const SUCCESS: u8 = 0;
/// Exit status: `--strict` and something was found (findings, protocol violations).
pub const FINDINGS: u8 = 1;
/// Exit status: the command line was wrong (clap's own status for usage errors).
pub const USAGE: u8 = 2;
/// Exit status: an input or output failed: a file that cannot be read or is not what it should
/// be, a write that failed.
pub const INPUT: u8 = 3;

/// Whether `--quiet` was given: status lines are left out, errors are not.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Sets `--quiet` for the whole run.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Writes a status line to stderr unless `--quiet`. A failure to write it is ignored: status is
/// a courtesy, and a closed or full stderr must not stop (or crash) the command.
macro_rules! status {
    ($($arg:tt)*) => {{
        if !$crate::cli::output::quiet() {
            let text = format!($($arg)*);
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("{}\n", $crate::cli::output::terminal_safe(&text)),
            );
        }
    }};
}

/// `text` with every control character but line feed and tab escaped (`\u{1b}`): a report
/// that prints text from its input (an item type, a line type, an error message, a call id)
/// cannot recolour, overwrite or hide what the terminal shows.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            safe.extend(c.escape_unicode());
        } else {
            safe.push(c);
        }
    }
    std::borrow::Cow::Owned(safe)
}

/// Writes an error line to stderr, `--quiet` or not.
pub fn error_line(error: &anyhow::Error) {
    // `{:#}` prints the error and its sources on one line: the library's errors say what failed
    // and leave the cause to `source()`.
    let text = format!("{error:#}");
    let _ = writeln!(
        io::stderr(),
        "agent-history: error: {}",
        terminal_safe(&text)
    );
}

/// Whether an error comes from writing to a pipe whose reader has gone.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|error| error.kind() == io::ErrorKind::BrokenPipe)
            // serde_json keeps the writer's error inside its own, not as its source.
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|error| error.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
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

/// Writes `value` as one line of JSON (JSON Lines).
pub fn json_line(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value).context("cannot write to stdout")?;
    writeln!(out).context("cannot write to stdout")
}

/// Writes a line of text to `out`.
pub fn line(out: &mut impl Write, text: impl std::fmt::Display) -> anyhow::Result<()> {
    let text = text.to_string();
    writeln!(out, "{}", terminal_safe(&text)).context("cannot write to stdout")
}

/// Groups larger than this are printed as one line with a count, not one line each.
pub const COLLAPSE_ABOVE: usize = 5;
/// How many positions a collapsed group names.
const FIRST_POSITIONS: usize = 3;

/// Lines of a report, with repeats collapsed: each entry is `(group, position, text)`; a group
/// of more than [`COLLAPSE_ABOVE`] entries becomes one line, `N × group (at a, b, c, …)`, at the
/// place of its first entry. Entries keep their order otherwise.
pub fn collapse(entries: &[(String, String, String)]) -> Vec<String> {
    let mut counts: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for (group, position, _) in entries {
        counts.entry(group).or_default().push(position);
    }
    let mut printed = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for (group, _, text) in entries {
        let positions = &counts[group.as_str()];
        if positions.len() <= COLLAPSE_ABOVE {
            lines.push(text.clone());
        } else if printed.insert(group.as_str()) {
            let first: Vec<&str> = positions.iter().take(FIRST_POSITIONS).copied().collect();
            lines.push(format!(
                "{} × {group} (at {}, …)",
                positions.len(),
                first.join(", ")
            ));
        }
    }
    lines
}

/// The load report of a resume, as status lines: the lines read and skipped, what resume left
/// out, an incomplete last turn, the lines skipped and repaired (repeats collapsed).
pub fn report_load(resumed: &Resumed) {
    let report = resumed.report();
    let counts = &report.skip_counts;
    status!(
        "read {} line(s): {} item(s) in history, {} skipped ({} blank, {} malformed{})",
        report.lines,
        resumed.history().len(),
        counts.total(),
        counts.blank,
        counts.malformed(),
        if report.torn_tail {
            ", torn last line"
        } else {
            ""
        }
    );
    if !report.left_out.is_empty() {
        status!(
            "  left out by resume (not history content): {}",
            report.left_out
        );
    }
    if let Some(turn) = &report.incomplete_turn {
        status!("  last turn incomplete: {turn}");
    }
    let mut listed = 0;
    for line in report.malformed() {
        status!("  skipped {line}");
        listed += 1;
    }
    if counts.malformed() > listed {
        status!("  … and {} more", counts.malformed() - listed);
    }
    let repaired: Vec<(String, String, String)> = report
        .repaired
        .iter()
        .map(|repaired| {
            (
                format!("repaired {}", repaired.repair),
                format!("line {}", repaired.line),
                format!("repaired {repaired}"),
            )
        })
        .collect();
    for line in collapse(&repaired) {
        status!("  {line}");
    }
}
