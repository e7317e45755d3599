//! `snapshot`: write a snapshot of a rollout.

use std::process::ExitCode;

use agent_history::{ExistingFile, Replace};

use super::args::SnapshotArgs;
use super::input::resume;
use super::output::report_load;

/// Runs `snapshot`.
pub fn run(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let SnapshotArgs {
        rollout,
        output,
        force,
        truncation,
    } = args;
    // The snapshot covers the complete lines: a last line without its newline (torn, or
    // still being written) is left to the resume that replays what follows.
    let resumed = resume(
        &rollout,
        &super::input::resume_options(Some(truncation)).snapshot_ready(),
    )?;
    // What reading found (skipped and repaired lines): the snapshot keeps it for later resumes.
    report_load(&resumed);
    let replace = if force {
        Replace::Anything
    } else {
        Replace::SnapshotsOnly
    };
    let header = resumed
        .write_snapshot_with(&output, replace)
        .map_err(|error| match error {
            // The error has no source: the hint can join its message. `--force` replaces any
            // regular file but the rollout read, so the hint is only for a file it would replace.
            agent_history::SnapshotError::WouldReplace {
                found:
                    ExistingFile::JsonLines { .. }
                    | ExistingFile::Other { .. }
                    | ExistingFile::DanglingLink,
                ..
            } if !force => anyhow::anyhow!("{error} (pass --force to replace it)"),
            other => other.into(),
        })?;
    // Status, not output: stdout stays free for a pipeline.
    status!(
        "wrote {}: {} item(s), {} payload bytes, covering {} line(s) ({} bytes) of {}",
        output.display(),
        header.entry_count,
        header.payload_len,
        header.rollout.lines,
        header.rollout.bytes,
        rollout.display()
    );
    Ok(ExitCode::SUCCESS)
}
