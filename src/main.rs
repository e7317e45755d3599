//! The `agent-history` command.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agent_history::{
    ContentItem, Entry, FirstDifference, History, Modalities, ProjectionOptions, PromptCompiler,
    ReasoningConfig, RepairKind, Replace, RequestSettings, ResponseItem, ResponseOptions,
    ResumeOptions, Resumed, Role, SNAPSHOT_FORMAT_VERSION, SnapshotOptions, SnapshotTrust,
    StepContext, ToolChoice, ToolPlan, TruncationPolicy, UnknownItems,
    is_contextual_developer_text, is_contextual_user_text, is_snapshot, is_summary_text,
    open_rollout, open_snapshot, read_tools, resume_reader,
};
use anyhow::Context as _;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Parser)]
#[command(
    name = "agent-history",
    version,
    about = "Persistent, immutable conversation histories for LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Resume a Codex rollout and print the repaired prompt input (or a whole request body).
    ///
    /// The projected input goes to stdout as one JSON array; the repair report and the count of
    /// skipped lines go to stderr. The rollout file is only read.
    Project {
        /// The rollout JSONL file, or a snapshot.
        rollout: PathBuf,
        /// The snapshot is one you wrote: take its entries as stored instead of checking each
        /// against its JSON (faster; a crafted snapshot could then put text that is not an item
        /// into the request).
        #[arg(long)]
        trusted: bool,
        /// Input modalities of the model: a comma-separated list of text, image, audio.
        #[arg(long, default_value = "text,image", value_parser = parse_modalities)]
        modalities: Modalities,
        /// Fail on the protocol violations Codex treats as bugs instead of repairing them.
        #[arg(long)]
        strict: bool,
        /// Send items of unknown type instead of holding them back.
        #[arg(long)]
        send_unknown: bool,
        /// Record-time truncation of tool outputs, as `tokens:N` or `bytes:N`.
        #[arg(long, default_value = "tokens:10000", value_parser = parse_truncation)]
        truncation: TruncationPolicy,
        /// Print the whole Responses API request body instead of the input array: the request
        /// a resumed session would send, with the session's base instructions and Codex's
        /// settings unless the flags below say otherwise.
        #[arg(long, requires = "model")]
        request: bool,
        /// The model slug of the request body.
        #[arg(long, requires = "request")]
        model: Option<String>,
        /// Base instructions of the request body, instead of those the rollout's `session_meta`
        /// records (empty when it records none, and for a snapshot).
        #[arg(long, requires = "request")]
        instructions: Option<String>,
        /// A JSON file holding the request's tools: an array of tool spec objects.
        #[arg(long, requires = "request", value_name = "FILE")]
        tools: Option<PathBuf>,
        /// Let the model call tools in parallel (`parallel_tool_calls`; default false).
        #[arg(long, requires = "request")]
        parallel_tool_calls: bool,
        /// `tool_choice`: auto (Codex's), none, required, or a JSON object such as
        /// '{"type":"function","name":"shell"}'.
        #[arg(long, requires = "request", value_parser = parse_tool_choice, value_name = "CHOICE")]
        tool_choice: Option<ToolChoice>,
        /// `store`: whether the provider keeps the response (Codex's: false).
        #[arg(long, requires = "request", value_name = "BOOL")]
        store: Option<bool>,
        /// `stream`: whether the response is streamed (Codex's: true).
        #[arg(long, requires = "request", value_name = "BOOL")]
        stream: Option<bool>,
        /// Reasoning effort (e.g. low, medium, high); sets `reasoning`, which is null otherwise.
        #[arg(long, requires = "request", value_name = "EFFORT")]
        reasoning_effort: Option<String>,
        /// Reasoning summary mode (e.g. auto, concise, detailed); sets `reasoning`.
        #[arg(long, requires = "request", value_name = "MODE")]
        reasoning_summary: Option<String>,
        /// `include`, as a comma-separated list ('' for none). Codex's: reasoning.encrypted_content
        /// when reasoning is set, nothing otherwise.
        #[arg(long, requires = "request", value_name = "LIST")]
        include: Option<String>,
    },
    /// Lint a rollout: unpaired calls, orphan outputs, media a text-only model would lose,
    /// unknown item types, skipped and torn lines, each with its line number.
    Check {
        /// The rollout JSONL file.
        rollout: PathBuf,
        /// Exit with status 1 when anything was found.
        #[arg(long)]
        strict: bool,
    },
    /// Summarize a rollout: items by kind, bytes, token estimate, user turns, compactions.
    Stats {
        /// The rollout JSONL file.
        rollout: PathBuf,
    },
    /// Write a snapshot of a rollout's history (memory-mapped on resume, no JSON parse).
    Snapshot {
        /// The rollout JSONL file.
        rollout: PathBuf,
        /// The snapshot file to write. A snapshot or an empty file there is replaced atomically;
        /// anything else (the rollout itself, another rollout, any other file) is refused.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace whatever file is at the output path.
        #[arg(long)]
        force: bool,
        /// Record-time truncation of tool outputs, as `tokens:N` or `bytes:N`.
        #[arg(long, default_value = "tokens:10000", value_parser = parse_truncation)]
        truncation: TruncationPolicy,
    },
    /// Check a snapshot: header, payload digest, archive validation, and every entry against
    /// its JSON (one well-formed item of the kind, role, ids, flags and tokens stored for it).
    Verify {
        /// The snapshot file.
        snapshot: PathBuf,
    },
    /// How much of the prompt input two sessions share from the start: the part a provider's
    /// prompt cache can reuse when the second is sent after the first. Prints the shared items
    /// and bytes, the first item that differs and why (appended, an edit, a rollback, a
    /// compaction, a world-state update rendered in full).
    ///
    /// Compares two rollouts or snapshots (A and B), or two points of one rollout: `--at-line N`
    /// is the session resumed from A's first N lines, against the whole file or, with a second
    /// `--at-line M`, against its first M lines.
    Prefix {
        /// The first rollout JSONL file, or a snapshot.
        a: PathBuf,
        /// The second rollout JSONL file, or a snapshot.
        #[arg(required_unless_present = "at_line", conflicts_with = "at_line")]
        b: Option<PathBuf>,
        /// Resume A from its first N lines only (given twice: the second point too).
        #[arg(long, value_name = "N", num_args = 1, action = clap::ArgAction::Append)]
        at_line: Vec<u64>,
        /// Input modalities of the model: a comma-separated list of text, image, audio.
        #[arg(long, default_value = "text,image", value_parser = parse_modalities)]
        modalities: Modalities,
        /// Record-time truncation of tool outputs, as `tokens:N` or `bytes:N`.
        #[arg(long, default_value = "tokens:10000", value_parser = parse_truncation)]
        truncation: TruncationPolicy,
        /// The snapshots are ones you wrote: take their entries as stored.
        #[arg(long)]
        trusted: bool,
    },
}

fn parse_modalities(text: &str) -> Result<Modalities, String> {
    text.parse().map_err(|error| format!("{error}"))
}

fn parse_tool_choice(text: &str) -> Result<ToolChoice, String> {
    match text {
        "auto" => Ok(ToolChoice::Auto),
        "none" => Ok(ToolChoice::None),
        "required" => Ok(ToolChoice::Required),
        _ => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) if value.is_object() => Ok(ToolChoice::Other(value)),
            _ => Err(format!(
                "expected auto, none, required or a JSON object, got `{text}`"
            )),
        },
    }
}

fn parse_truncation(text: &str) -> Result<TruncationPolicy, String> {
    let (mode, limit) = text
        .split_once(':')
        .ok_or_else(|| format!("expected tokens:N or bytes:N, got `{text}`"))?;
    let limit: usize = limit
        .parse()
        .map_err(|_| format!("`{limit}` is not a whole number"))?;
    match mode {
        "tokens" => Ok(TruncationPolicy::Tokens(limit)),
        "bytes" => Ok(TruncationPolicy::Bytes(limit)),
        _ => Err(format!(
            "unknown truncation mode `{mode}` (tokens or bytes)"
        )),
    }
}

/// Writes a status line to stderr. A failure to write it is ignored: status is a courtesy, and a
/// closed or full stderr must not stop (or crash) the command.
macro_rules! status {
    ($($arg:tt)*) => {{
        let _ = writeln!(io::stderr(), $($arg)*);
    }};
}

fn main() -> ExitCode {
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

/// Whether an error comes from writing to a pipe whose reader has gone.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|error| error.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Standard output, buffered; every write is checked (`?`), so that a full disk or a closed
/// pipe is an error, never a panic.
fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::new(io::stdout().lock())
}

/// Flushes standard output, naming it in the error.
fn finish(mut out: impl Write) -> anyhow::Result<ExitCode> {
    out.flush().context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Project {
            rollout,
            trusted,
            modalities,
            strict,
            send_unknown,
            truncation,
            request,
            model,
            instructions,
            tools,
            parallel_tool_calls,
            tool_choice,
            store,
            stream,
            reasoning_effort,
            reasoning_summary,
            include,
        } => {
            // Before the rollout, which can be large: a wrong tools file fails at once.
            let tools = match tools {
                Some(path) => read_tools(path)?,
                None => ToolPlan::empty(),
            };
            let (history, thread_id, recorded) = if is_snapshot(&rollout) {
                let options = SnapshotOptions {
                    trust: if trusted {
                        SnapshotTrust::Own
                    } else {
                        SnapshotTrust::Untrusted
                    },
                    ..SnapshotOptions::default()
                };
                let opened = open_snapshot(&rollout, options)?;
                status!(
                    "opened snapshot: {} item(s), covering {} rollout line(s)",
                    opened.history().len(),
                    opened.header().rollout.lines
                );
                let thread_id = opened.state().thread_id;
                // Version 2 keeps the session's base instructions; version 1 did not.
                let text = opened
                    .state()
                    .base_instructions
                    .as_ref()
                    .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok())
                    .and_then(|value| value.get("text")?.as_str().map(str::to_owned));
                let recorded = match text {
                    Some(text) => Recorded::Text(text),
                    None if opened.header().format_version >= 2 => Recorded::None,
                    None => Recorded::NotInSnapshot,
                };
                (opened.into_history(), thread_id, recorded)
            } else {
                let resumed = resume(&rollout, &ResumeOptions::new(truncation))?;
                report_load(&resumed);
                let thread_id = resumed.thread_id();
                let recorded = match &resumed.report().base_instructions {
                    Some(recorded) => Recorded::Text(recorded.text.clone()),
                    None => Recorded::None,
                };
                (resumed.into_history(), Some(thread_id), recorded)
            };
            let mut options = ProjectionOptions::for_modalities(modalities);
            if strict {
                options = options.strict();
            }
            if send_unknown {
                options.unknown_items = UnknownItems::Send;
            }
            let mut out = stdout();
            let repairs = if request {
                let instructions = match (instructions, recorded) {
                    (Some(given), _) => given,
                    (None, Recorded::Text(text)) => {
                        status!("instructions: from session_meta ({} bytes)", text.len());
                        text
                    }
                    (None, Recorded::None) => {
                        status!("instructions: none (session_meta records none)");
                        String::new()
                    }
                    (None, Recorded::NotInSnapshot) => {
                        status!(
                            "instructions: none (a version 1 snapshot does not keep the session's \
                             base instructions; pass --instructions or project the rollout)"
                        );
                        String::new()
                    }
                };
                let reasoning = (reasoning_effort.is_some() || reasoning_summary.is_some())
                    .then_some(ReasoningConfig {
                        effort: reasoning_effort,
                        summary: reasoning_summary,
                    });
                let settings = RequestSettings {
                    model: model.unwrap_or_default(),
                    reasoning,
                    prompt_cache_key: thread_id.map(|id| id.to_string()),
                    ..RequestSettings::default()
                };
                let defaults = ResponseOptions::default();
                let response = ResponseOptions {
                    tool_choice: tool_choice.unwrap_or(defaults.tool_choice),
                    store: store.unwrap_or(defaults.store),
                    stream: stream.unwrap_or(defaults.stream),
                    include: include.map(|list| {
                        list.split(',')
                            .map(str::trim)
                            .filter(|name| !name.is_empty())
                            .map(str::to_owned)
                            .collect()
                    }),
                };
                let compiled = PromptCompiler::new(settings)
                    .with_projection(options)
                    .with_base_instructions(instructions)
                    .with_tools(tools, parallel_tool_calls)
                    .with_response_options(response)
                    .compile(&history, StepContext::default())?;
                compiled
                    .write_body(&mut out)
                    .context("cannot write to stdout")?;
                compiled.prompt.input.report().clone()
            } else {
                let projection = history.project(&options)?;
                projection
                    .write_json_array(&mut out)
                    .context("cannot write to stdout")?;
                projection.report().clone()
            };
            writeln!(out)
                .and_then(|()| out.flush())
                .context("cannot write to stdout")?;
            if repairs.is_empty() {
                status!("repairs: none");
            } else {
                status!("repairs: {}", repairs.len());
                for repair in repairs.repairs() {
                    status!("  {repair}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { rollout, strict } => {
            let resumed = resume(&rollout, &ResumeOptions::default())?;
            let findings = check(&resumed);
            let mut out = stdout();
            writeln!(
                out,
                "{}: {} line(s), {} item(s), {} user turn(s)",
                rollout.display(),
                resumed.report().lines,
                resumed.history().len(),
                resumed.history().user_turn_count()
            )
            .context("cannot write to stdout")?;
            let left_out = &resumed.report().left_out;
            if !left_out.is_empty() {
                writeln!(out, "left out by resume (not history content): {left_out}")
                    .context("cannot write to stdout")?;
            }
            for finding in &findings {
                writeln!(out, "  {finding}").context("cannot write to stdout")?;
            }
            match findings.len() {
                0 => writeln!(out, "no findings"),
                n => writeln!(out, "{n} finding(s)"),
            }
            .context("cannot write to stdout")?;
            finish(out)?;
            Ok(if strict && !findings.is_empty() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Snapshot {
            rollout,
            output,
            force,
            truncation,
        } => {
            // The snapshot covers the complete lines: a last line without its newline (torn, or
            // still being written) is left to the resume that replays what follows.
            let resumed = resume(&rollout, &ResumeOptions::new(truncation).snapshot_ready())?;
            let replace = if force {
                Replace::Anything
            } else {
                Replace::SnapshotsOnly
            };
            let header =
                resumed
                    .write_snapshot_with(&output, replace)
                    .map_err(|error| match error {
                        // The error has no source: the hint can join its message.
                        agent_history::SnapshotError::WouldReplace { .. } => {
                            anyhow::anyhow!("{error} (pass --force to replace it)")
                        }
                        other => other.into(),
                    })?;
            let mut out = stdout();
            writeln!(
                out,
                "wrote {}: {} item(s), {} payload bytes, covering {} line(s) ({} bytes) of {}",
                output.display(),
                header.entry_count,
                header.payload_len,
                header.rollout.lines,
                header.rollout.bytes,
                rollout.display()
            )
            .context("cannot write to stdout")?;
            finish(out)
        }
        Command::Verify { snapshot: path } => {
            let opened = open_snapshot(&path, SnapshotOptions::untrusted())?;
            let header = &opened.header();
            let thread = match opened.state().thread_id {
                Some(id) => id.to_string(),
                None => "(none: the snapshot covers no session_meta)".to_owned(),
            };
            let lines = [
                format!("{}: ok", path.display()),
                format!(
                    "  format          version {} (this build writes {SNAPSHOT_FORMAT_VERSION})",
                    header.format_version
                ),
                format!(
                    "  items           {}, each checked against its JSON",
                    header.entry_count
                ),
                format!(
                    "  earlier states  {} (before compactions; a rollback can return to them)",
                    opened.history().compactions_reachable()
                ),
                format!(
                    "  payload         {} bytes, digest verified",
                    header.payload_len
                ),
                format!("  history version {}", header.history_version),
                format!(
                    "  rollout         {} line(s), {} bytes, prefix digest {}",
                    header.rollout.lines,
                    header.rollout.bytes,
                    header.rollout.digest.to_hex()
                ),
                format!("  thread          {thread}"),
            ];
            let mut out = stdout();
            for line in lines {
                writeln!(out, "{line}").context("cannot write to stdout")?;
            }
            finish(out)
        }
        Command::Prefix {
            a,
            b,
            at_line,
            modalities,
            truncation,
            trusted,
        } => {
            let options = ResumeOptions::new(truncation);
            let (left, right) = match (b, at_line.as_slice()) {
                (Some(b), []) => (
                    Side::load(&a, None, &options, trusted)?,
                    Side::load(&b, None, &options, trusted)?,
                ),
                (None, &[n]) => (
                    Side::load(&a, Some(n), &options, trusted)?,
                    Side::load(&a, None, &options, trusted)?,
                ),
                (None, &[n, m]) => (
                    Side::load(&a, Some(n), &options, trusted)?,
                    Side::load(&a, Some(m), &options, trusted)?,
                ),
                _ => anyhow::bail!(
                    "give a second rollout B, or --at-line once or twice (two points of {})",
                    a.display()
                ),
            };
            let projection = ProjectionOptions::for_modalities(modalities);
            let text = prefix_report(&left, &right, &projection)?;
            let mut out = stdout();
            out.write_all(text.as_bytes())
                .context("cannot write to stdout")?;
            finish(out)
        }
        Command::Stats { rollout } => {
            let resumed = resume(&rollout, &ResumeOptions::default())?;
            let mut out = stdout();
            out.write_all(stats(&rollout, &resumed).as_bytes())
                .context("cannot write to stdout")?;
            finish(out)
        }
    }
}

/// One side of `prefix`: a history and what names it.
struct Side {
    /// The path, with the lines it was resumed from.
    label: String,
    history: History,
}

impl Side {
    /// The history of the rollout or snapshot at `path`; of a rollout's first `lines` lines when
    /// given.
    fn load(
        path: &Path,
        lines: Option<u64>,
        options: &ResumeOptions,
        trusted: bool,
    ) -> anyhow::Result<Side> {
        if is_snapshot(path) {
            if lines.is_some() {
                anyhow::bail!(
                    "--at-line needs a rollout, and {} is a snapshot",
                    path.display()
                );
            }
            let trust = if trusted {
                SnapshotTrust::Own
            } else {
                SnapshotTrust::Untrusted
            };
            let opened = open_snapshot(
                path,
                SnapshotOptions {
                    trust,
                    ..SnapshotOptions::default()
                },
            )?;
            return Ok(Side {
                label: format!("{} (snapshot)", path.display()),
                history: opened.into_history(),
            });
        }
        let Some(lines) = lines else {
            return Ok(Side {
                label: path.display().to_string(),
                history: resume(path, options)?.into_history(),
            });
        };
        let mut bytes = Vec::new();
        open_rollout(path)?
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let end = first_lines_end(&bytes, lines).ok_or_else(|| {
            anyhow::anyhow!(
                "--at-line {lines}: {} has only {} line(s)",
                path.display(),
                line_count(&bytes)
            )
        })?;
        let resumed = resume_reader(&bytes[..end], path, options)?;
        Ok(Side {
            label: format!("{} (first {lines} line(s))", path.display()),
            history: resumed.into_history(),
        })
    }
}

/// Where the first `lines` lines of `bytes` end (after the last one's newline, or at the end
/// of a last line without one); `None` when there are fewer.
fn first_lines_end(bytes: &[u8], lines: u64) -> Option<usize> {
    if lines == 0 {
        return Some(0);
    }
    let mut seen = 0;
    for (at, byte) in bytes.iter().enumerate() {
        if *byte == b'\n' {
            seen += 1;
            if seen == lines {
                return Some(at + 1);
            }
        }
    }
    (seen + 1 == lines && bytes.last().is_some_and(|byte| *byte != b'\n')).then_some(bytes.len())
}

/// The number of lines of `bytes` (a last line without its newline counts).
fn line_count(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|byte| **byte == b'\n').count();
    newlines + usize::from(bytes.last().is_some_and(|byte| *byte != b'\n'))
}

/// The report of `prefix`.
fn prefix_report(left: &Side, right: &Side, options: &ProjectionOptions) -> anyhow::Result<String> {
    let a = left
        .history
        .project(options)
        .with_context(|| format!("cannot project {}", left.label))?;
    let b = right
        .history
        .project(options)
        .with_context(|| format!("cannot project {}", right.label))?;
    let shared = a.common_prefix(&b);
    let mut out = String::new();
    let a_bytes = a.json_array_len() as u64;
    out.push_str(&format!(
        "A  {}: {} item(s), {} byte(s)\n",
        left.label,
        a.len(),
        a_bytes
    ));
    out.push_str(&format!(
        "B  {}: {} item(s), {} byte(s)\n",
        right.label,
        b.len(),
        b.json_array_len()
    ));
    let share = if a_bytes == 0 {
        0.0
    } else {
        shared.bytes as f64 * 100.0 / a_bytes as f64
    };
    out.push_str(&format!(
        "shared: {} item(s), {} byte(s) of the input array ({share:.1}% of A)\n",
        shared.items, shared.bytes
    ));
    let Some(difference) = &shared.first_difference else {
        out.push_str("why: identical: the whole input is reusable\n");
        return Ok(out);
    };
    out.push_str(&format!("first difference: item {}\n", difference.item));
    for (name, item) in [("A", &difference.left), ("B", &difference.right)] {
        match item {
            Some(item) => out.push_str(&format!(
                "  {name}: position {}, {}{}, {} byte(s)\n",
                item.position,
                item.kind,
                if item.synthetic_output {
                    " (synthetic output)"
                } else {
                    ""
                },
                item.bytes
            )),
            None => out.push_str(&format!("  {name}: no more items\n")),
        }
    }
    out.push_str(&format!("why: {}\n", why(left, right, difference)));
    Ok(out)
}

/// Why two sessions' inputs differ at `difference`.
fn why(left: &Side, right: &Side, difference: &FirstDifference) -> String {
    let (a, b) = (&left.history, &right.history);
    let fewer_turns = b.user_turn_count() < a.user_turn_count();
    match (&difference.left, &difference.right) {
        (None, None) => "identical: the whole input is reusable".to_owned(),
        (None, Some(_)) => "appended: B extends A, all of A is reusable".to_owned(),
        (Some(_), None) if fewer_turns => format!(
            "rollback: B has fewer user turns ({} < {}), the items after B's end were removed",
            b.user_turn_count(),
            a.user_turn_count()
        ),
        (Some(_), None) => "removed at the end: B ends where A goes on".to_owned(),
        (Some(x), Some(y)) => {
            let item_a = (!x.synthetic_output).then(|| a.get(x.position)).flatten();
            let item_b = (!y.synthetic_output).then(|| b.get(y.position)).flatten();
            let fragment = item_b
                .and_then(contextual_fragment)
                .or_else(|| item_a.and_then(contextual_fragment));
            if b.compactions_reachable() > a.compactions_reachable()
                || item_b.is_some_and(is_summary)
            {
                "compaction: B's history was replaced by a summary and a replacement history"
                    .to_owned()
            } else if fewer_turns {
                format!(
                    "rollback: B has fewer user turns ({} < {}) and goes on differently",
                    b.user_turn_count(),
                    a.user_turn_count()
                )
            } else if let Some(role) = fragment {
                format!(
                    "world-state update rendered in full: a contextual {role} message (injected \
                     context, not a user turn) is sent in full where the other sends something else"
                )
            } else {
                "edit: the same position holds different content".to_owned()
            }
        }
    }
}

/// The texts of a message, with its role; `None` for other items and unreadable ones.
fn message_texts(entry: &Entry) -> Option<(Role, Vec<String>)> {
    let Ok(ResponseItem::Message(message)) = entry.to_item() else {
        return None;
    };
    let texts = message
        .content
        .into_iter()
        .filter_map(|part| match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    Some((message.role, texts))
}

/// `"user"` or `"developer"` when the entry is a message of that role carrying a contextual
/// fragment (injected context such as AGENTS.md instructions or the environment).
fn contextual_fragment(entry: &Entry) -> Option<&'static str> {
    let (role, texts) = message_texts(entry)?;
    match role {
        Role::User if texts.iter().any(|text| is_contextual_user_text(text)) => Some("user"),
        Role::Developer if texts.iter().any(|text| is_contextual_developer_text(text)) => {
            Some("developer")
        }
        _ => None,
    }
}

/// Whether the entry is a local-compaction summary message.
fn is_summary(entry: &Entry) -> bool {
    message_texts(entry).is_some_and(|(role, texts)| {
        role == Role::User && texts.iter().any(|text| is_summary_text(text))
    })
}

/// The base instructions the input of `project` records.
enum Recorded {
    /// The rollout's `session_meta` records these.
    Text(String),
    /// The rollout's `session_meta` records none.
    None,
    /// The input is a version 1 snapshot, which does not keep them.
    NotInSnapshot,
}

/// Rollouts larger than this get a progress bar when stderr is a terminal.
const PROGRESS_THRESHOLD: u64 = 50 * 1024 * 1024;

/// Resumes a rollout, with a progress bar for files over 50 MB when stderr is a terminal.
fn resume(path: &Path, options: &ResumeOptions) -> anyhow::Result<Resumed> {
    let file = open_rollout(path)?;
    let size = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    let bar = (size > PROGRESS_THRESHOLD && io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(size);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message("reading");
        bar
    });
    let reader = Progress {
        inner: file,
        bar: bar.clone(),
    };
    let resumed = resume_reader(reader, path, options);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    Ok(resumed?)
}

/// A reader that advances a progress bar.
struct Progress<R> {
    inner: R,
    bar: Option<ProgressBar>,
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if let Some(bar) = &self.bar {
            bar.inc(read as u64);
        }
        Ok(read)
    }
}

fn report_load(resumed: &Resumed) {
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
    let mut listed = 0;
    for line in report.malformed() {
        status!("  skipped {line}");
        listed += 1;
    }
    if counts.malformed() > listed {
        status!("  … and {} more", counts.malformed() - listed);
    }
    for repaired in &report.repaired {
        status!("  repaired {repaired}");
    }
}

/// Media a text-only model would lose, in the items of one compaction's replacement history:
/// they all come from its `compacted` line, which `check` reports once, with the totals.
#[derive(Default)]
struct ReplacementMedia {
    /// Items carrying the medium.
    items: u64,
    /// Parts (a generated image counts as one).
    parts: u64,
}

/// The lint of `check`, one finding per line, in line order.
fn check(resumed: &Resumed) -> Vec<String> {
    let mut findings: Vec<(u64, String)> = Vec::new();
    let line_of = |position: usize| resumed.entry_line(position).unwrap_or(0);
    // The `compacted` line the history was rebuilt from: its replacement history's items all
    // have its number.
    let base = resumed
        .compactions()
        .and_then(|compactions| compactions.base);
    let mut replacement_images = ReplacementMedia::default();
    let mut replacement_audio = ReplacementMedia::default();
    // A text-only, lenient projection reports every repair a request would need.
    let options = ProjectionOptions::for_modalities(Modalities::TEXT);
    if let Ok(projection) = resumed.history().project(&options) {
        for repair in projection.report().repairs() {
            let line = line_of(repair.at.position);
            if Some(line) == base {
                let counted = match &repair.kind {
                    RepairKind::StrippedImages { parts } => {
                        Some((&mut replacement_images, *parts as u64))
                    }
                    RepairKind::ClearedImageGenerationResult => Some((&mut replacement_images, 1)),
                    RepairKind::StrippedAudio { parts } => {
                        Some((&mut replacement_audio, *parts as u64))
                    }
                    _ => None,
                };
                if let Some((media, parts)) = counted {
                    media.items += 1;
                    media.parts += parts;
                    continue;
                }
            }
            let item_kind = repair.at.item_kind;
            let call = repair
                .at
                .call_id
                .as_ref()
                .map(|id| format!(" (call_id {:?})", id.as_str()))
                .unwrap_or_default();
            let what = match &repair.kind {
                RepairKind::SynthesizedOutput { .. } => format!(
                    "{}{call} has no output; requests get a synthetic \"aborted\" output",
                    item_kind
                ),
                RepairKind::DroppedOrphanOutput => format!(
                    "{}{call} has no matching call; requests leave it out",
                    item_kind
                ),
                RepairKind::StrippedImages { parts } => format!(
                    "{} carries {parts} image part(s) a text-only model would lose",
                    item_kind
                ),
                RepairKind::StrippedAudio { parts } => format!(
                    "{} carries {parts} audio part(s) a text-only model would lose",
                    item_kind
                ),
                RepairKind::ClearedImageGenerationResult => format!(
                    "{} carries a generated image a text-only model would lose",
                    item_kind
                ),
                RepairKind::HeldBackUnknownItem => {
                    let name = resumed
                        .history()
                        .get(repair.at.position)
                        .and_then(|entry| {
                            serde_json::from_str::<serde_json::Value>(entry.json()).ok()
                        })
                        .and_then(|value| value["type"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| "?".into());
                    format!("unknown item type `{name}`; requests leave it out")
                }
                other => format!("{}: {other:?}", item_kind),
            };
            findings.push((line, format!("line {line}: {what}")));
        }
    }
    if let Some(line) = base {
        for (media, what) in [(replacement_images, "image"), (replacement_audio, "audio")] {
            if media.items > 0 {
                findings.push((
                    line,
                    format!(
                        "line {line}: the compaction's replacement history carries {} {what} \
                         part(s) in {} item(s) a text-only model would lose",
                        media.parts, media.items
                    ),
                ));
            }
        }
    }
    for skipped in resumed.report().malformed() {
        let torn = if resumed.report().torn_tail && skipped.line == resumed.report().lines {
            "torn last line (an interrupted write), "
        } else {
            ""
        };
        findings.push((
            skipped.line,
            format!(
                "line {} (byte {}): {torn}skipped: {}",
                skipped.line, skipped.offset, skipped.reason
            ),
        ));
    }
    let report = resumed.report();
    for repaired in &report.repaired {
        findings.push((
            repaired.line,
            format!(
                "line {} (byte {}): repaired: {}",
                repaired.line, repaired.offset, repaired.repair
            ),
        ));
    }
    findings.sort_by_key(|(line, _)| *line);
    let listed = report.malformed().count() as u64;
    if report.skip_counts.malformed() > listed {
        findings.push((
            u64::MAX,
            format!(
                "{} more malformed line(s) skipped and not listed",
                report.skip_counts.malformed() - listed
            ),
        ));
    }
    findings.into_iter().map(|(_, text)| text).collect()
}

/// The summary of `stats`.
fn stats(path: &Path, resumed: &Resumed) -> String {
    let mut by_kind: BTreeMap<&'static str, (u64, u64, u64)> = BTreeMap::new();
    for entry in resumed.history().iter() {
        let row = by_kind.entry(entry.kind().as_str()).or_default();
        row.0 += 1;
        row.1 += entry.byte_len() as u64;
        row.2 += entry.tokens();
    }
    let history = &resumed.history();
    let mut out = String::new();
    let total_bytes: u64 = by_kind.values().map(|row| row.1).sum();
    out.push_str(&format!("rollout        {}\n", path.display()));
    out.push_str(&format!("thread         {}\n", resumed.thread_id()));
    out.push_str(&format!(
        "lines          {} ({} skipped{})\n",
        resumed.report().lines,
        resumed.report().skip_counts.total(),
        if resumed.report().torn_tail {
            ", torn last line"
        } else {
            ""
        }
    ));
    let left_out = &resumed.report().left_out;
    out.push_str(&format!(
        "left out       {}{}\n",
        left_out.total(),
        if left_out.is_empty() {
            String::new()
        } else {
            format!(" ({left_out})")
        }
    ));
    out.push_str(&format!("items          {}\n", history.len()));
    out.push_str(&format!("bytes          {total_bytes}\n"));
    out.push_str(&format!("tokens (est.)  {}\n", history.estimated_tokens()));
    out.push_str(&format!("user turns     {}\n", history.user_turn_count()));
    out.push_str(&format!(
        "compactions    {}\n",
        resumed
            .compactions()
            .map_or(0, |compactions| compactions.lines)
    ));
    out.push_str("\nkind                        items        bytes   tokens (est.)\n");
    for (kind, (count, bytes, tokens)) in by_kind {
        out.push_str(&format!("{kind:<24} {count:>8} {bytes:>12} {tokens:>15}\n"));
    }
    out
}
