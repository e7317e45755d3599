//! Reading sessions: paths, directories and standard input; rollouts and snapshots told apart;
//! one progress bar over the bytes read.

use std::io::{self, IsTerminal as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agent_history::{
    DEFAULT_TRUNCATION, ReadMode, ResumeOptions, Resumed, ResumedTranscript, RolloutError,
    SessionFormat, Snapshot, SnapshotOptions, Transcript, is_snapshot, open_rollout, open_snapshot,
    resume_reader,
};
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

/// The argument that stands for standard input.
pub const STDIN: &str = "-";

/// Whether `path` is the argument `-` (standard input).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// The name of standard input in reports and errors.
pub const STDIN_LABEL: &str = "<stdin>";

/// `--codex-home`, for the whole run.
static CODEX_HOME: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Sets `--codex-home` for the whole run (once).
pub fn set_codex_home(home: Option<PathBuf>) {
    let _ = CODEX_HOME.set(home);
}

/// `--format`, for the whole run.
static FORMAT: OnceLock<Option<SessionFormat>> = OnceLock::new();

/// Sets `--format` for the whole run (once).
pub fn set_format(format: Option<SessionFormat>) {
    let _ = FORMAT.set(format);
}

/// The format of `source`: `--format` when given, else what a file's first line tells (standard
/// input, which cannot be looked at twice, is a Codex rollout unless `--format` says otherwise).
pub fn format_of(source: &Source) -> SessionFormat {
    if let Some(format) = FORMAT.get().copied().flatten() {
        return format;
    }
    match source {
        Source::Stdin => SessionFormat::Codex,
        Source::File(path) => SessionFormat::of_file(path).unwrap_or(SessionFormat::Codex),
    }
}

/// How every command resumes a rollout: `truncation` (the default policy when `None`), and the
/// Codex home `--codex-home` gives for a paginated rollout's lineage.
pub fn resume_options(truncation: Option<agent_history::TruncationPolicy>) -> ResumeOptions {
    let options = ResumeOptions::new(truncation.unwrap_or(DEFAULT_TRUNCATION));
    match CODEX_HOME.get().and_then(Option::as_ref) {
        Some(home) => options.with_codex_home(home),
        None => options,
    }
}

/// Where one session is read from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Standard input (`-`): a rollout.
    Stdin,
    /// A file: a rollout or a snapshot.
    File(PathBuf),
}

impl Source {
    /// How reports name the session.
    pub fn label(&self) -> String {
        match self {
            Source::Stdin => STDIN_LABEL.to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }

    /// The file's size, for the progress bar (0 for standard input or an unreadable file).
    fn size(&self) -> u64 {
        match self {
            Source::Stdin => 0,
            Source::File(path) => std::fs::metadata(path).map_or(0, |meta| meta.len()),
        }
    }
}

/// The sessions the command-line paths name: `-` is standard input, a directory is every session
/// under it (recursively, in name order: see [`is_session_file`]), anything else is the file
/// itself (whose errors, such as not existing, are its session's).
pub fn sessions(paths: &[PathBuf]) -> anyhow::Result<Vec<Source>> {
    let mut sources = Vec::new();
    for path in paths {
        if is_stdin(path) {
            sources.push(Source::Stdin);
        } else if path.is_dir() {
            let before = sources.len();
            for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
                let entry =
                    entry.with_context(|| format!("cannot read directory {}", path.display()))?;
                if entry.file_type().is_file() && is_session_file(entry.path()) {
                    sources.push(Source::File(entry.into_path()));
                }
            }
            if sources.len() == before {
                status!("{}: no session under this directory", path.display());
            }
        } else {
            sources.push(Source::File(path.clone()));
        }
    }
    if sources
        .iter()
        .filter(|source| matches!(source, Source::Stdin))
        .count()
        > 1
    {
        anyhow::bail!("`-` (standard input) can be read only once");
    }
    if sources.is_empty() {
        anyhow::bail!(
            "no session to read: the directories given hold no rollout-*.jsonl[.zst] file and \
             no Claude Code transcript"
        );
    }
    Ok(sources)
}

/// Whether a file found in a directory is a session: a Codex rollout (`rollout-*.jsonl`, as
/// Codex lays sessions out by date) or a Claude Code transcript (another `*.jsonl` whose first
/// line says so, outside a `subagents/` folder: a subagent's transcript is listed with the
/// session that spawned it), plain or `.zst`; `--format` keeps only the sessions of its format.
fn is_session_file(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    if !(name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")) {
        return false;
    }
    let rollout = name.starts_with("rollout-");
    let in_subagents = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|parent| parent == "subagents");
    match FORMAT.get().copied().flatten() {
        Some(SessionFormat::Codex) => rollout,
        Some(SessionFormat::ClaudeCode) => !rollout && !in_subagents,
        None => {
            rollout
                || (!in_subagents
                    && SessionFormat::of_file(path) == Some(SessionFormat::ClaudeCode))
        }
    }
}

/// A session as read: a resumed rollout, an opened snapshot or a Claude Code transcript.
pub enum Loaded {
    /// A rollout, resumed line by line.
    Rollout(Box<Resumed>),
    /// A snapshot, opened and checked (untrusted).
    Snapshot(Box<Snapshot>),
    /// A Claude Code transcript's conversation: read from it, or from a snapshot of it.
    Transcript(Box<ResumedTranscript>),
}

/// Reads one session, advancing `bar` by the bytes read.
pub fn load(source: &Source, options: &ResumeOptions, bar: &ProgressBar) -> anyhow::Result<Loaded> {
    match source {
        Source::File(path) if is_snapshot(path) => {
            let opened = open_snapshot(path, SnapshotOptions::untrusted())?;
            bar.inc(source.size());
            if opened.is_transcript() {
                let resumed = ResumedTranscript::from_snapshot(opened, path)?;
                return Ok(Loaded::Transcript(Box::new(resumed)));
            }
            Ok(Loaded::Snapshot(Box::new(opened)))
        }
        _ if format_of(source) == SessionFormat::ClaudeCode => Ok(Loaded::Transcript(Box::new(
            read_transcript(source, None, bar)?,
        ))),
        _ => Ok(Loaded::Rollout(Box::new(resume_with(
            source, options, bar,
        )?))),
    }
}

/// Reads the Claude Code transcript of `source` (a file through `snapshot` when given) and
/// its conversation, advancing `bar` by the bytes read.
pub fn read_transcript(
    source: &Source,
    snapshot: Option<&Path>,
    bar: &ProgressBar,
) -> anyhow::Result<ResumedTranscript> {
    let resumed = match source {
        Source::Stdin => Transcript::read(
            bar.wrap_read(stdin_rollout()?),
            STDIN_LABEL,
            ReadMode::Lenient,
        )?
        .resumed()?,
        Source::File(path) => Transcript::resume_file(path, snapshot, ReadMode::Lenient)?,
    };
    if let Source::File(_) = source {
        bar.inc(source.size());
    }
    Ok(resumed)
}

/// How reports name a transcript's input: `"snapshot"` when it was opened from a snapshot,
/// else `"claude-code"`.
pub fn transcript_input(resumed: &ResumedTranscript) -> &'static str {
    if resumed.used_snapshot() {
        "snapshot"
    } else {
        "claude-code"
    }
}

/// The usage error of `--truncation` given for the Claude Code transcript at `path`.
pub fn no_truncation(path: &Path) -> anyhow::Error {
    super::Usage(format!(
        "--truncation needs a Codex rollout, and {} is a Claude Code transcript (read whole, \
         nothing truncated)",
        path.display()
    ))
    .into()
}

/// The error of a command that reads Codex rollouts only, given a Claude Code transcript.
pub fn rollouts_only(source: &Source) -> anyhow::Result<()> {
    if format_of(source) == SessionFormat::ClaudeCode {
        anyhow::bail!(
            "{} is a Claude Code transcript; this command takes Codex rollouts only \
             (`project`, `check`, `stats`, `prefix`, `snapshot`, `verify` and `lint` read \
             transcripts)",
            source.label()
        );
    }
    Ok(())
}

/// Resumes the rollout of `source`, advancing `bar` by the bytes read.
fn resume_with(
    source: &Source,
    options: &ResumeOptions,
    bar: &ProgressBar,
) -> anyhow::Result<Resumed> {
    Ok(match source {
        Source::Stdin => resume_reader(bar.wrap_read(stdin_rollout()?), STDIN_LABEL, options)
            .map_err(|error| match error {
                // Standard input cannot be looked at twice: its format is not told.
                RolloutError::NoSessionMeta { .. } => anyhow::anyhow!(
                    "{error} (standard input is read as a Codex rollout: pass --format \
                     claude-code for a Claude Code transcript)"
                ),
                other => other.into(),
            })?,
        Source::File(path) => resume_reader(bar.wrap_read(open_rollout(path)?), path, options)?,
    })
}

/// Runs `work` on every session in parallel, with one progress bar over their bytes (hidden
/// when stderr is not a terminal, or with `quiet`); the results come in the sessions' order.
pub fn each<T: Send>(
    sources: &[Source],
    quiet: bool,
    work: impl Fn(&Source, &ProgressBar) -> anyhow::Result<T> + Sync,
) -> Vec<anyhow::Result<T>> {
    let total = sources.iter().map(Source::size).sum();
    let bar = progress_bar(total, quiet);
    let results = sources
        .par_iter()
        .map(|source| work(source, &bar))
        .collect();
    bar.finish_and_clear();
    results
}

/// A progress bar over `total` bytes on stderr, hidden unless stderr is a terminal.
pub fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    let target = if quiet || !io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message("reading");
    bar
}

/// The source a command-line path names (`-`: standard input).
pub fn source_of(path: &Path) -> Source {
    if is_stdin(path) {
        Source::Stdin
    } else {
        Source::File(path.to_owned())
    }
}

/// Resumes a rollout (`-`: standard input), with a progress bar when stderr is a terminal; a
/// Claude Code transcript is refused, naming the commands that read one.
pub fn resume(path: &Path, options: &ResumeOptions) -> anyhow::Result<Resumed> {
    rollouts_only(&source_of(path))?;
    resume_rollout(path, options)
}

/// Resumes what the caller knows is a rollout (`-`: standard input), with a progress bar when
/// stderr is a terminal.
pub fn resume_rollout(path: &Path, options: &ResumeOptions) -> anyhow::Result<Resumed> {
    let source = source_of(path);
    let bar = progress_bar(source.size(), super::output::quiet());
    let resumed = resume_with(&source, options, &bar);
    bar.finish_and_clear();
    resumed
}

/// Standard input as a rollout stream. A device other than a terminal (`< /dev/zero`, which
/// would never end) or a directory is refused before anything is read, as
/// [`open_rollout`] refuses one named by its path.
pub fn stdin_rollout() -> anyhow::Result<io::StdinLock<'static>> {
    if let Some(what) = stdin_unreadable()? {
        return Err(RolloutError::NotAFile {
            path: PathBuf::from(STDIN_LABEL),
            what,
        }
        .into());
    }
    Ok(io::stdin().lock())
}

/// What standard input is when it cannot be read as a stream that ends: `a directory` or `a
/// device` (a terminal is read). `None` for a file, a pipe or a terminal.
pub fn stdin_unreadable() -> anyhow::Result<Option<&'static str>> {
    use std::os::fd::AsFd as _;
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let metadata = stdin
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .context("cannot read standard input")?;
    Ok(unreadable_kind(&metadata))
}

/// `a directory` or `a device` for what cannot be read as a stream that ends.
pub fn unreadable_kind(metadata: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = metadata.file_type();
    if kind.is_dir() {
        Some("a directory")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        None
    }
}
