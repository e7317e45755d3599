//! `lint`: request bodies (or bare `input` / `messages` arrays) from any client, checked against
//! one model API's rules without sending anything.

use std::fs::File;
use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use agent_history::{Finding, ReadMode, SessionFormat, Target, Transcript, validate};
use anyhow::Context as _;
use serde::Serialize;

use super::Usage;
use super::args::LintArgs;
use super::input::{STDIN_LABEL, is_stdin, stdin_unreadable, unreadable_kind};
use super::output::{self, error_line, finish, json_line, line, stdout};

/// The result of linting one body.
#[derive(Serialize)]
struct Linted<'a> {
    /// Always `"body"`: tells the body objects from errors and the summary in JSON Lines.
    r#type: &'static str,
    /// The path as given (`<stdin>` for standard input).
    path: String,
    /// The target checked against.
    target: Target,
    /// Whether the target would accept the body (no error-severity finding).
    valid: bool,
    /// Findings of severity error.
    errors: usize,
    /// Findings of severity warning.
    warnings: usize,
    /// Every finding, in the order of the body.
    findings: &'a [Finding],
}

/// The summary of many bodies.
#[derive(Serialize, Default)]
struct Summary {
    /// Always `"summary"`.
    r#type: &'static str,
    /// Bodies given (the unreadable ones included).
    bodies: usize,
    /// Bodies that could not be read or are not JSON.
    unreadable: usize,
    /// Bodies the target would reject.
    invalid: usize,
    /// Error findings in all the bodies.
    errors: usize,
    /// Warning findings in all the bodies.
    warnings: usize,
}

/// Runs `lint`.
pub fn run(args: LintArgs) -> anyhow::Result<ExitCode> {
    let transcript = |path: &Path| {
        !is_stdin(path) && SessionFormat::of_file(path) == Some(SessionFormat::ClaudeCode)
    };
    if args.target != Target::AnthropicMessages
        && let Some(path) = args.paths.iter().find(|path| transcript(path))
    {
        return Err(Usage(format!(
            "{} is a Claude Code transcript, whose messages are Anthropic Messages: lint it with \
             --target anthropic",
            path.display()
        ))
        .into());
    }
    let mut out = stdout();
    let mut summary = Summary {
        r#type: "summary",
        bodies: args.paths.len(),
        ..Summary::default()
    };
    for path in &args.paths {
        let label = if is_stdin(path) {
            STDIN_LABEL.to_owned()
        } else {
            path.display().to_string()
        };
        let read = if transcript(path) {
            transcript_messages(path)
        } else {
            read_json(path, &label)
        };
        let body = match read {
            Ok(body) => body,
            Err(error) => {
                summary.unreadable += 1;
                error_line(&error);
                if args.json {
                    json_line(
                        &mut out,
                        &serde_json::json!({"type": "error", "path": label,
                                            "message": format!("{error:#}")}),
                    )?;
                }
                continue;
            }
        };
        let validation = validate(args.target, &body);
        let linted = Linted {
            r#type: "body",
            path: label,
            target: args.target,
            valid: validation.is_valid(),
            errors: validation.errors().count(),
            warnings: validation.warnings().count(),
            findings: &validation.findings,
        };
        summary.errors += linted.errors;
        summary.warnings += linted.warnings;
        summary.invalid += usize::from(!linted.valid);
        if args.json {
            json_line(&mut out, &linted)?;
        } else if !output::quiet() {
            write_text(&mut out, &linted)?;
        }
    }
    if summary.bodies > 1 {
        if args.json {
            json_line(&mut out, &summary)?;
        } else if !output::quiet() {
            line(
                &mut out,
                format!(
                    "summary: {} bod{}{}, {} rejected, {} error(s), {} warning(s)",
                    summary.bodies,
                    if summary.bodies == 1 { "y" } else { "ies" },
                    match summary.unreadable {
                        0 => String::new(),
                        n => format!(" ({n} unreadable)"),
                    },
                    summary.invalid,
                    summary.errors,
                    summary.warnings
                ),
            )?;
        }
    }
    finish(out)?;
    Ok(ExitCode::from(if summary.unreadable > 0 {
        output::INPUT
    } else if summary.errors > 0 {
        output::FINDINGS
    } else {
        output::SUCCESS
    }))
}

/// The messages a resume of the Claude Code transcript at `path` sends as the file holds them,
/// before any repair: what Claude Code's own resume would be told of them.
fn transcript_messages(path: &Path) -> anyhow::Result<serde_json::Value> {
    let transcript = Transcript::read_file(path, ReadMode::Lenient)?;
    Ok(serde_json::Value::Array(transcript.messages_as_written()))
}

/// Reads a file (or standard input) as one JSON value.
fn read_json(path: &Path, label: &str) -> anyhow::Result<serde_json::Value> {
    let mut bytes = Vec::new();
    // A directory or a device (`/dev/zero` would never end) is refused before it is read, as a
    // rollout is; a FIFO (`<(…)`) is read.
    let not_a_body = |what| anyhow::anyhow!("{label} is {what}, not a request body");
    let read = if is_stdin(path) {
        if let Some(what) = stdin_unreadable()? {
            return Err(not_a_body(what));
        }
        std::io::stdin()
            .lock()
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        let file = File::open(path).with_context(|| format!("cannot read {label}"))?;
        let metadata = file
            .metadata()
            .with_context(|| format!("cannot read {label}"))?;
        if let Some(what) = unreadable_kind(&metadata) {
            return Err(not_a_body(what));
        }
        file.take(MAX_BODY_BYTES + 1).read_to_end(&mut bytes)
    };
    read.with_context(|| format!("cannot read {label}"))?;
    if bytes.len() as u64 > MAX_BODY_BYTES {
        anyhow::bail!("{label} is larger than {MAX_BODY_BYTES} bytes, more than a request body");
    }
    serde_json::from_slice(&bytes).with_context(|| format!("{label} is not JSON"))
}

/// The largest body `lint` reads: 64 MiB, twice the 32 MB Anthropic documents as its largest
/// request (parsed, a body takes about 15 times its size in memory).
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// The text report of one body: one line per finding, then a count.
fn write_text(out: &mut impl std::io::Write, linted: &Linted) -> anyhow::Result<()> {
    for finding in linted.findings {
        line(out, format!("{}: {finding}", linted.path))?;
    }
    let verdict = match (linted.errors, linted.warnings) {
        (0, 0) => format!("{}: no findings for {}", linted.path, linted.target),
        (0, warnings) => format!(
            "{}: accepted by {}, {warnings} warning(s)",
            linted.path, linted.target
        ),
        (errors, warnings) => format!(
            "{}: rejected by {}: {errors} error(s), {warnings} warning(s)",
            linted.path, linted.target
        ),
    };
    line(out, verdict)
}
