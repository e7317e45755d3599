//! `verify`: check snapshots, and whether one still matches its rollout.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_history::{
    ReadMode, ResumeSource, ResumedTranscript, SessionFormat, SnapshotHeader, SnapshotOptions,
    Transcript, is_snapshot, open_snapshot, resume_file, resume_reader,
};
use anyhow::Context as _;
use serde::Serialize;

use super::Usage;
use super::args::VerifyArgs;
use super::input::{STDIN_LABEL, Source, each, format_of, is_stdin, source_of, stdin_rollout};
use super::output::{self, error_line, finish, json_line, line, stdout};

/// What `verify` found in one snapshot.
#[derive(Serialize)]
struct Verified {
    /// Always `"session"`.
    r#type: &'static str,
    /// The snapshot's path as given.
    path: String,
    /// Always true: a snapshot that fails a check is an error, not a report.
    ok: bool,
    /// The format of the session it is a snapshot of: `codex` or `claude-code`.
    session_format: SessionFormat,
    /// The snapshot's header.
    header: SnapshotHeader,
    /// Earlier states (before compactions) a rollback can return to.
    earlier_states: usize,
    /// The session's thread id, `null` when the snapshot covers no `session_meta`.
    thread_id: Option<String>,
    /// With `--rollout`: whether the snapshot still stands for that rollout's first lines.
    rollout: Option<Matched>,
}

/// Whether a snapshot still matches its rollout.
#[derive(Serialize)]
struct Matched {
    /// The rollout's path.
    path: String,
    /// Whether resuming the rollout through the snapshot takes the fast path.
    matches: bool,
    /// How the rollout was resumed: `source` `"snapshot"`, or `"fallback"` with the reason.
    source: serde_json::Value,
    /// Why it does not match, in words.
    #[serde(skip)]
    why: String,
}

impl Matched {
    /// Whether resuming the session at `path` took the snapshot, as `source` says.
    fn of(path: String, source: &ResumeSource) -> anyhow::Result<Matched> {
        Ok(Matched {
            path,
            matches: matches!(source, ResumeSource::Snapshot { .. }),
            source: serde_json::to_value(source)?,
            why: match source {
                ResumeSource::Fallback(reason) => reason.to_string(),
                _ => String::new(),
            },
        })
    }
}

/// Runs `verify`.
pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let paths = snapshots(&args.paths)?;
    if args.rollout.is_some() && paths.len() != 1 {
        return Err(Usage(format!(
            "--rollout compares one snapshot with its rollout, and {} snapshot(s) were given",
            paths.len()
        ))
        .into());
    }
    let sources: Vec<Source> = paths.into_iter().map(Source::File).collect();
    let results = each(&sources, output::quiet(), |source, bar| {
        let Source::File(path) = source else {
            anyhow::bail!("a snapshot cannot be read from standard input");
        };
        let verified = verify(path, args.rollout.as_ref());
        bar.inc(std::fs::metadata(path).map_or(0, |meta| meta.len()));
        verified
    });
    let mut out = stdout();
    let mut errors = 0;
    let mut mismatched = 0;
    for result in results {
        let verified = match result {
            Ok(verified) => verified,
            Err(error) => {
                if output::is_broken_pipe(&error) {
                    return Err(error);
                }
                errors += 1;
                error_line(&error);
                continue;
            }
        };
        mismatched += verified
            .rollout
            .as_ref()
            .map_or(0, |matched| usize::from(!matched.matches));
        if args.json {
            json_line(&mut out, &verified)?;
        } else if !output::quiet() {
            write_text(&mut out, &verified)?;
        }
    }
    finish(out)?;
    // A snapshot that no longer matches its rollout is not broken (resume falls back to the
    // rollout), so it is not an error; a script reads `matches` (or the text) to tell.
    let _ = mismatched;
    Ok(ExitCode::from(if errors > 0 {
        output::INPUT
    } else {
        output::SUCCESS
    }))
}

/// The snapshots the paths name: a directory is every file under it that is a snapshot.
fn snapshots(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
                let entry =
                    entry.with_context(|| format!("cannot read directory {}", path.display()))?;
                if entry.file_type().is_file() && is_snapshot(entry.path()) {
                    found.push(entry.into_path());
                }
            }
        } else {
            found.push(path.clone());
        }
    }
    if found.is_empty() {
        anyhow::bail!("no snapshot to verify: the directories given hold no snapshot file");
    }
    Ok(found)
}

/// Opens and checks the snapshot at `path`; with `rollout`, resumes that rollout through it.
fn verify(path: &PathBuf, rollout: Option<&PathBuf>) -> anyhow::Result<Verified> {
    let opened = open_snapshot(path, SnapshotOptions::untrusted())?;
    if opened.is_transcript() {
        // The transcript state it stores must read back too.
        ResumedTranscript::from_snapshot(opened.clone(), path)?;
    }
    let rollout = match rollout {
        None => None,
        Some(transcript) if format_of(&source_of(transcript)) == SessionFormat::ClaudeCode => {
            if is_stdin(transcript) {
                anyhow::bail!(
                    "a Claude Code transcript's snapshot is checked against a file, not standard \
                     input"
                );
            }
            let resumed = Transcript::resume_file(transcript, Some(path), ReadMode::Lenient)?;
            Some(Matched::of(
                transcript.display().to_string(),
                resumed.source(),
            )?)
        }
        Some(rollout) => {
            // The snapshot records the truncation it was written with; compare with that one.
            // One reading, so that `-` (standard input) works too.
            let options = super::input::resume_options(Some(opened.history().truncation()))
                .with_snapshot(path);
            let resumed = if is_stdin(rollout) {
                resume_reader(stdin_rollout()?, STDIN_LABEL, &options)?
            } else {
                resume_file(rollout, &options)?
            };
            let label = if is_stdin(rollout) {
                STDIN_LABEL.to_owned()
            } else {
                rollout.display().to_string()
            };
            Some(Matched::of(label, resumed.source())?)
        }
    };
    Ok(Verified {
        r#type: "session",
        path: path.display().to_string(),
        ok: true,
        session_format: if opened.is_transcript() {
            SessionFormat::ClaudeCode
        } else {
            SessionFormat::Codex
        },
        header: *opened.header(),
        earlier_states: opened.history().compactions_reachable(),
        thread_id: opened.state().thread_id.map(|id| id.to_string()),
        rollout,
    })
}

/// The text report of one snapshot.
fn write_text(out: &mut impl std::io::Write, verified: &Verified) -> anyhow::Result<()> {
    let header = &verified.header;
    let thread = verified
        .thread_id
        .clone()
        .unwrap_or_else(|| "(none: the snapshot covers no session_meta)".to_owned());
    let mut lines = vec![
        format!("{}: ok", verified.path),
        format!("  format          version {}", header.format_version),
        format!(
            "  items           {}, each checked against its JSON",
            header.entry_count
        ),
        format!(
            "  earlier states  {} (before compactions; a rollback can return to them)",
            verified.earlier_states
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
        format!("  session         {}", verified.session_format),
    ];
    if let Some(matched) = &verified.rollout {
        lines.push(
            if matched.matches && verified.session_format == SessionFormat::ClaudeCode {
                format!(
                    "  matches         {}: it is the file the snapshot stands for ({} line(s))",
                    matched.path, header.rollout.lines
                )
            } else if matched.matches {
                format!(
                    "  matches         {}: its first {} line(s) are the ones the snapshot covers",
                    matched.path, header.rollout.lines
                )
            } else {
                format!(
                    "  does not match  {} ({}): a resume would read every line",
                    matched.path, matched.why
                )
            },
        );
    }
    for text in lines {
        line(out, text)?;
    }
    Ok(())
}
