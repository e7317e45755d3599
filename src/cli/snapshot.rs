//! `snapshot`: write a snapshot of a rollout or of a Claude Code transcript.

use std::path::Path;
use std::process::ExitCode;

use agent_history::{
    DEFAULT_TRUNCATION, ExistingFile, Replace, SessionFormat, SnapshotError, SnapshotHeader,
};

use super::args::SnapshotArgs;
use super::input::{format_of, no_truncation, progress_bar, read_transcript, resume, source_of};
use super::output::{quiet, report_load};

/// Runs `snapshot`.
pub fn run(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let SnapshotArgs {
        format: _,
        rollout,
        output,
        force,
        truncation,
    } = args;
    let replace = if force {
        Replace::Anything
    } else {
        Replace::SnapshotsOnly
    };
    let source = source_of(&rollout);
    let written = if format_of(&source) == SessionFormat::ClaudeCode {
        if truncation.is_some() {
            return Err(no_truncation(&rollout));
        }
        // The snapshot stands for the transcript as read, a torn last line included.
        let bar = progress_bar(0, quiet());
        let resumed = read_transcript(&source, None, &bar);
        bar.finish_and_clear();
        resumed?.write_snapshot_with(&output, replace)
    } else {
        // The snapshot covers the complete lines: a last line without its newline (torn, or
        // still being written) is left to the resume that replays what follows.
        let resumed = resume(
            &rollout,
            &super::input::resume_options(Some(truncation.unwrap_or(DEFAULT_TRUNCATION)))
                .snapshot_ready(),
        )?;
        // What reading found (skipped and repaired lines): the snapshot keeps it for later
        // resumes.
        report_load(&resumed);
        resumed.write_snapshot_with(&output, replace)
    };
    let header = written.map_err(|error| refused(error, force))?;
    report_written(&output, &header, &rollout);
    Ok(ExitCode::SUCCESS)
}

/// The error of a refused or failed write, with the hint `--force` gives where it would help.
fn refused(error: SnapshotError, force: bool) -> anyhow::Error {
    match error {
        // The error has no source: the hint can join its message. `--force` replaces any
        // regular file but the session read, so the hint is only for a file it would replace.
        SnapshotError::WouldReplace {
            found:
                ExistingFile::JsonLines { .. } | ExistingFile::Other { .. } | ExistingFile::DanglingLink,
            ..
        } if !force => anyhow::anyhow!("{error} (pass --force to replace it)"),
        other => other.into(),
    }
}

/// Says what was written: status, not output, so that stdout stays free for a pipeline.
fn report_written(output: &Path, header: &SnapshotHeader, session: &Path) {
    status!(
        "wrote {}: {} item(s), {} payload bytes, covering {} line(s) ({} bytes) of {}",
        output.display(),
        header.entry_count,
        header.payload_len,
        header.rollout.lines,
        header.rollout.bytes,
        session.display()
    );
}
