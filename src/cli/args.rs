//! The command line: the subcommands and their arguments, as clap parses them.

use std::path::PathBuf;

use agent_history::{Modalities, Target, ToolChoice, TruncationPolicy};
use clap::{Args, Parser, Subcommand};

/// What the exit statuses mean, at the end of every `--help`.
pub const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  --strict and something was found (findings, protocol violations)
  2  usage error (a wrong or meaningless option)
  3  an input or output failed (a file that cannot be read or is not what it should be)";

/// What the exit statuses of `lint` mean.
pub const LINT_EXIT_STATUS: &str = "\
Exit status:
  0  every body would be accepted (warnings alone do not count)
  1  a body would be rejected: a finding of severity error
  2  usage error (a wrong or meaningless option)
  3  a body could not be read or is not JSON";

/// The `agent-history` command line.
#[derive(Parser)]
#[command(
    name = "agent-history",
    version,
    about = "Persistent, immutable conversation histories for LLM agents",
    after_help = EXIT_STATUS
)]
pub struct Cli {
    /// Print only errors: no status lines, no reports (the exit status tells the outcome).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// The Codex home in which the files a paginated rollout continues are found (forks and
    /// reverts). Default: the home whose `sessions/` tree the rollout is in, else `$CODEX_HOME`.
    #[arg(long, global = true, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Resume a Codex rollout and print the repaired prompt input (or a whole request body).
    ///
    /// The projected input goes to stdout as one JSON array; the repair report and the count of
    /// skipped lines go to stderr. The rollout file is only read.
    #[command(after_help = EXIT_STATUS)]
    Project(Box<ProjectArgs>),
    /// Lint sessions: unpaired calls, orphan outputs, media a text-only model would lose,
    /// unknown item types, skipped and torn lines, each with its line number.
    ///
    /// Takes rollouts, Claude Code transcripts, snapshots, directories (every `rollout-*.jsonl[.zst]`
    /// and transcript under them) and `-` (a rollout on standard input); several are read in
    /// parallel and summarized at the end.
    #[command(after_help = EXIT_STATUS)]
    Check(CheckArgs),
    /// Summarize sessions: items by kind, bytes, token estimate, user turns, compactions.
    ///
    /// Takes rollouts, Claude Code transcripts, snapshots, directories (every
    /// `rollout-*.jsonl[.zst]` and transcript under them) and `-`; several are read in parallel
    /// and summarized at the end.
    #[command(after_help = EXIT_STATUS)]
    Stats(StatsArgs),
    /// Write a snapshot of a rollout's or a Claude Code transcript's history (memory-mapped on
    /// resume, no JSON parse).
    #[command(after_help = EXIT_STATUS)]
    Snapshot(SnapshotArgs),
    /// Write a repaired copy of a Claude Code transcript that Claude Code can resume.
    ///
    /// The copy is the transcript's bytes followed by records that make Claude Code's own resume
    /// send the conversation this tool sends: every tool_use left unanswered (the "tool_use ids
    /// were found without tool_result blocks" 400) answered by an "aborted" error result, and
    /// every record the file's chain would lose re-attached. Each record written is marked
    /// `agentHistoryRepair`. The transcript itself is never written; an existing file at the
    /// output path is refused.
    #[command(after_help = EXIT_STATUS)]
    Repair(RepairArgs),
    /// Append the complete items of a recorded model response stream to a rollout.
    ///
    /// Reads server-sent events (a file, or `-` for standard input) and resumes the rollout
    /// as a session: each output item whose stream said it was done is appended as one
    /// `response_item` line; items the stream left unfinished (a cancel, a failure, the end of
    /// the input) are dropped and reported. A file that is not a rollout is refused; nothing
    /// else in the rollout changes.
    #[command(after_help = EXIT_STATUS)]
    Append(AppendArgs),
    /// Check a snapshot: header, payload digest, archive validation, and every entry against
    /// its JSON (one well-formed item of the kind, role, ids, flags and tokens stored for it).
    ///
    /// Takes several snapshots (or directories: every file under them that is a snapshot);
    /// with `--rollout`, one snapshot and whether it still matches that rollout.
    #[command(after_help = EXIT_STATUS)]
    Verify(VerifyArgs),
    /// How much of the prompt input two sessions share from the start: the part a provider's
    /// prompt cache can reuse when the second is sent after the first. Prints the shared items
    /// and bytes, the first item that differs and why (appended, an edit, a rollback, a
    /// compaction, a world-state update rendered in full).
    ///
    /// Compares two rollouts or snapshots (A and B), or two points of one rollout: `--at-line N`
    /// is the session resumed from A's first N lines, against the whole file or, with a second
    /// `--at-line M`, against its first M lines.
    #[command(after_help = EXIT_STATUS)]
    Prefix(PrefixArgs),
    /// Check request bodies against a model API's rules without sending them: every call
    /// answered, no output without its call, no duplicate ids, role order, id syntax.
    ///
    /// Takes request bodies (JSON objects: Responses `input`, Chat Completions `messages`,
    /// Anthropic `system` + `messages` + `tools`) or bare `input` / `messages` arrays, and `-`
    /// (standard input). Prints each finding with its position, rule and the error text the API
    /// returns; exit status 1 when the API would reject a body (warnings alone exit 0).
    #[command(after_help = LINT_EXIT_STATUS)]
    Lint(LintArgs),
    /// Print a shell completion script for SHELL to stdout.
    ///
    /// For example `agent-history completions bash > ~/.local/share/bash-completion/completions/agent-history`.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout: `agent-history man | man -l -`.
    Man,
}

/// The arguments of `project`.
#[derive(Args)]
pub struct ProjectArgs {
    /// The format of the sessions read: codex or claude-code. Default: told from each file's
    /// first line (standard input: codex).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<agent_history::SessionFormat>,
    /// The rollout JSONL file, or a snapshot.
    pub rollout: PathBuf,
    /// The snapshot is one you wrote: take its entries as stored instead of checking each
    /// against its JSON (faster; a crafted snapshot could then put text that is not an item
    /// into the request).
    #[arg(long)]
    pub trusted: bool,
    /// Input modalities of the model: a comma-separated list of text, image, audio.
    #[arg(long, default_value = "text,image", value_parser = parse_modalities)]
    pub modalities: Modalities,
    /// Fail on the protocol violations Codex treats as bugs instead of repairing them.
    #[arg(long)]
    pub strict: bool,
    /// Send items of unknown type instead of holding them back.
    #[arg(long)]
    pub send_unknown: bool,
    /// Record-time truncation of tool outputs, as `tokens:N` or `bytes:N` (default
    /// tokens:10000). A rollout's only: a snapshot stores its items truncated already.
    #[arg(long, value_parser = parse_truncation)]
    pub truncation: Option<TruncationPolicy>,
    /// Resume ROLLOUT through this snapshot of its first lines plus the lines after them (the
    /// fast path), or from every line when the snapshot no longer matches; says which.
    #[arg(long, value_name = "SNAPSHOT")]
    pub snapshot: Option<PathBuf>,
    /// Write the report (lines read and skipped, repairs, how the session was resumed) to
    /// stderr as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Indent the JSON written to stdout (the input array or request body).
    #[arg(long)]
    pub pretty: bool,
    /// The API the input is for: responses (the `input` array), chat (the Chat Completions
    /// `messages` array) or anthropic (the Anthropic Messages `messages` array; `system` and
    /// `developer` messages go to the request's `system`). Default: the source's own API,
    /// responses for a Codex rollout, anthropic for a Claude Code transcript.
    #[arg(long, value_parser = parse_target)]
    pub target: Option<Target>,
    /// Chat Completions: keep `developer` messages as `developer` instead of sending them as
    /// `system` (which every compatible server takes).
    #[arg(long)]
    pub keep_developer: bool,
    /// Anthropic `--request`: the body's `max_tokens`, which the Messages API requires
    /// [default: 8192].
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Print the whole request body of the target's API instead of the input array: the request
    /// a resumed session would send, with the session's base instructions and Codex's
    /// settings unless the flags below say otherwise. For chat: `model`, `messages` (the
    /// instructions first, as a system message), `tools` converted from the Responses specs
    /// (those without an equivalent left out and said on stderr), `tool_choice`,
    /// `parallel_tool_calls`, `stream`, `reasoning_effort`. For anthropic: `model`,
    /// `max_tokens`, `system` (the instructions, then the history's system and developer
    /// texts), `messages`, `tools` converted likewise, `tool_choice`, `stream`. Needs `--model`
    /// for a Codex session; a Claude Code transcript's model is its own unless `--model` says.
    #[arg(long)]
    pub request: bool,
    /// The model slug of the request body.
    #[arg(long, requires = "request", value_parser = non_empty)]
    pub model: Option<String>,
    /// Base instructions of the request body, instead of those the rollout's `session_meta`
    /// records (empty when it records none, and for a snapshot).
    #[arg(long, requires = "request")]
    pub instructions: Option<String>,
    /// A JSON file holding the request's tools: an array of tool spec objects.
    #[arg(long, requires = "request", value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Let the model call tools in parallel (`parallel_tool_calls`; default false).
    #[arg(long, requires = "request")]
    pub parallel_tool_calls: bool,
    /// `tool_choice`: auto (Codex's), none, required, or a JSON object such as
    /// '{"type":"function","name":"shell"}'.
    #[arg(long, requires = "request", value_parser = parse_tool_choice, value_name = "CHOICE")]
    pub tool_choice: Option<ToolChoice>,
    /// `store`: whether the provider keeps the response (Codex's: false).
    #[arg(long, requires = "request", value_name = "BOOL")]
    pub store: Option<bool>,
    /// `stream`: whether the response is streamed (Codex's: true).
    #[arg(long, requires = "request", value_name = "BOOL")]
    pub stream: Option<bool>,
    /// Reasoning effort (e.g. low, medium, high); sets `reasoning`, which is null otherwise.
    #[arg(long, requires = "request", value_name = "EFFORT")]
    pub reasoning_effort: Option<String>,
    /// Reasoning summary mode (e.g. auto, concise, detailed); sets `reasoning`.
    #[arg(long, requires = "request", value_name = "MODE")]
    pub reasoning_summary: Option<String>,
    /// `include`, as a comma-separated list ('' for none). Codex's: reasoning.encrypted_content
    /// when reasoning is set, nothing otherwise.
    #[arg(long, requires = "request", value_name = "LIST")]
    pub include: Option<String>,
    /// `prompt_cache_key`: KEY, or with no value the session's thread id (what Codex sends).
    /// Left out by default, as the library leaves it out unless `RequestSettings` sets it.
    #[arg(
        long,
        requires = "request",
        value_name = "KEY",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
    )]
    pub prompt_cache_key: Option<String>,
}

impl ProjectArgs {
    /// The target: `--target`, else Responses (`project` sets it from the source before use).
    pub fn target(&self) -> Target {
        self.target.unwrap_or(Target::Responses)
    }
}

/// The arguments of `check`.
#[derive(Args)]
pub struct CheckArgs {
    /// The format of the sessions read: codex or claude-code. Default: told from each file's
    /// first line (standard input: codex).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<agent_history::SessionFormat>,
    /// Rollouts, transcripts, snapshots, directories of sessions, or `-` (standard input).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Exit with status 1 when a warning was found (damage, or a repair the next request
    /// needs); notices (a compaction, a branch not taken, media) do not count.
    #[arg(long)]
    pub strict: bool,
    /// One JSON object per session (JSON Lines), then a summary object when there are several.
    #[arg(long)]
    pub json: bool,
}

/// The arguments of `stats`.
#[derive(Args)]
pub struct StatsArgs {
    /// The format of the sessions read: codex or claude-code. Default: told from each file's
    /// first line (standard input: codex).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<agent_history::SessionFormat>,
    /// Rollouts, transcripts, snapshots, directories of sessions, or `-` (standard input).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// One JSON object per session (JSON Lines), then a summary object when there are several.
    #[arg(long)]
    pub json: bool,
}

/// The arguments of `snapshot`.
#[derive(Args)]
pub struct SnapshotArgs {
    /// The format of the session read: codex or claude-code. Default: told from its first line
    /// (standard input: codex).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<agent_history::SessionFormat>,
    /// The rollout or Claude Code transcript (JSONL).
    pub rollout: PathBuf,
    /// The snapshot file to write. A snapshot or an empty file there is replaced atomically;
    /// anything else (the rollout itself, another rollout, any other file) is refused.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Replace whatever file is at the output path.
    #[arg(long)]
    pub force: bool,
    /// Record-time truncation of a rollout's tool outputs, as `tokens:N` or `bytes:N`
    /// (default tokens:10000; a transcript is read whole, nothing truncated).
    #[arg(long, value_parser = parse_truncation)]
    pub truncation: Option<TruncationPolicy>,
}

/// The arguments of `repair`.
#[derive(Args)]
pub struct RepairArgs {
    /// The Claude Code transcript (JSONL).
    pub transcript: PathBuf,
    /// The repaired copy to write: a new file (an existing one is refused).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The arguments of `append`.
#[derive(Args)]
pub struct AppendArgs {
    /// The rollout JSONL file to append to.
    pub rollout: PathBuf,
    /// The recorded event stream (server-sent events), or `-` for standard input.
    #[arg(long, value_name = "EVENTS")]
    pub stream: PathBuf,
    /// The API the stream is from: `responses` (OpenAI Responses), `chat` (Chat Completions
    /// chunks) or `anthropic` (Anthropic Messages events).
    #[arg(long, default_value = "responses")]
    pub format: Target,
    /// The report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when the response did not complete or an item was dropped.
    #[arg(long)]
    pub strict: bool,
}

/// The arguments of `verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// Snapshot files, or directories holding them.
    #[arg(required = true, value_name = "SNAPSHOT")]
    pub paths: Vec<PathBuf>,
    /// The rollout the snapshot was written from: say whether the snapshot still matches it
    /// (the rollout's first lines are the ones the snapshot covers). One snapshot only.
    #[arg(long, value_name = "ROLLOUT")]
    pub rollout: Option<PathBuf>,
    /// One JSON object per snapshot (JSON Lines).
    #[arg(long)]
    pub json: bool,
}

/// The arguments of `lint`.
#[derive(Args)]
pub struct LintArgs {
    /// JSON files holding a request body or a bare input/messages array, or `-` (standard input).
    #[arg(required = true, value_name = "BODY")]
    pub paths: Vec<PathBuf>,
    /// The API whose rules apply: responses, chat or anthropic. Required: a body can be valid
    /// for one API and rejected by another, so it is not guessed.
    #[arg(long, value_parser = parse_target, value_name = "TARGET")]
    pub target: Target,
    /// One JSON object per body (JSON Lines), then a summary object when there are several.
    #[arg(long)]
    pub json: bool,
}

/// Parses `--target` with the library's parser.
pub fn parse_target(text: &str) -> Result<Target, String> {
    text.parse().map_err(|error| format!("{error}"))
}

/// The arguments of `completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// The arguments of `prefix`.
#[derive(Args)]
pub struct PrefixArgs {
    /// The format of the sessions read: codex or claude-code. Default: told from each file's
    /// first line (standard input: codex).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<agent_history::SessionFormat>,
    /// The first session (a rollout, a Claude Code transcript or a snapshot).
    pub a: PathBuf,
    /// The second session (a rollout, a Claude Code transcript or a snapshot).
    #[arg(required_unless_present = "at_line", conflicts_with = "at_line")]
    pub b: Option<PathBuf>,
    /// Resume A from its first N lines only (given twice: the second point too).
    #[arg(long, value_name = "N", num_args = 1, action = clap::ArgAction::Append)]
    pub at_line: Vec<u64>,
    /// Input modalities of the model: a comma-separated list of text, image, audio.
    #[arg(long, default_value = "text,image", value_parser = parse_modalities)]
    pub modalities: Modalities,
    /// Record-time truncation of tool outputs, as `tokens:N` or `bytes:N`.
    #[arg(long, default_value = "tokens:10000", value_parser = parse_truncation)]
    pub truncation: TruncationPolicy,
    /// The snapshots are ones you wrote: take their entries as stored.
    #[arg(long)]
    pub trusted: bool,
}

/// A value that must not be empty.
pub fn non_empty(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("must not be empty".to_owned())
    } else {
        Ok(text.to_owned())
    }
}

/// Parses `--modalities`.
pub fn parse_modalities(text: &str) -> Result<Modalities, String> {
    // The library reads an empty list as text only; on the command line an empty value is more
    // likely a mistake (an unset shell variable) than a way to say "text".
    if text.trim().is_empty() {
        return Err("must not be empty (say `text` for a text-only model)".to_owned());
    }
    text.parse().map_err(|error| format!("{error}"))
}

/// Parses `--tool-choice`.
pub fn parse_tool_choice(text: &str) -> Result<ToolChoice, String> {
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

/// Parses `--truncation` (`tokens:N` or `bytes:N`) with the library's parser.
pub fn parse_truncation(text: &str) -> Result<TruncationPolicy, String> {
    text.parse().map_err(|error| format!("{error}"))
}
