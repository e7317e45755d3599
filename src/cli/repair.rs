//! `repair`: a repaired copy of a Claude Code transcript, written as a new file.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use agent_history::{ReadMode, RolloutText, SessionFormat, Target, Transcript, validate};
use anyhow::Context as _;

use super::args::RepairArgs;
use super::output::{json_line, stdout};

/// Runs `repair`.
pub fn run(args: RepairArgs) -> anyhow::Result<ExitCode> {
    let RepairArgs {
        transcript: path,
        output,
        json,
    } = args;
    // Never replace a file: the transcript itself, or anything else already there.
    if std::fs::symlink_metadata(&output).is_ok() {
        anyhow::bail!(
            "{} exists; repair writes a new file and never replaces one (the transcript is \
             never written)",
            output.display()
        );
    }
    // Read once: the text (a compressed transcript decompressed; the copy is plain JSON Lines).
    let is_file = std::fs::metadata(&path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .is_file();
    if !is_file {
        anyhow::bail!("{} is not a regular file", path.display());
    }
    let file =
        std::fs::File::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut original = Vec::new();
    RolloutText::new(file)
        .and_then(|mut text| text.read_to_end(&mut original))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if SessionFormat::sniff(&original) != Some(SessionFormat::ClaudeCode) {
        anyhow::bail!("{} is not a Claude Code transcript", path.display());
    }
    let transcript = Transcript::read(&original[..], &path, ReadMode::Lenient)?;
    let repair = transcript.repair(&original[..])?;
    for line in repair.unrepaired.iter().filter(|_| !json) {
        status!(
            "{} line {line}: a result that answers no call is left as it is (the record is sent \
             for its results, and would not be without it)",
            path.display()
        );
    }
    if repair.is_empty() {
        if json {
            json_line(
                &mut stdout(),
                &serde_json::json!({"type": "repair", "path": path.display().to_string(),
                    "output": null, "answered": [], "reattached": [], "left_out": [],
                    "unrepaired": repair.unrepaired, "lines_appended": 0,
                    "valid_as_written": valid_as_written(&transcript)}),
            )?;
        } else {
            status!("{}: nothing to repair; no file written", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut copy = original;
    if !copy.is_empty() && !copy.ends_with(b"\n") {
        copy.push(b'\n');
    }
    for line in &repair.lines {
        copy.extend_from_slice(line.as_bytes());
        copy.push(b'\n');
    }
    // The copy is checked before it is written: read back, it needs no repair of its own.
    let written = Transcript::read(&copy[..], &output, ReadMode::Lenient)?;
    if !written.repair(&copy[..])?.is_empty() {
        anyhow::bail!(
            "the repaired copy of {} still needs a repair; nothing written",
            path.display()
        );
    }
    write_new(&output, &copy)?;
    let valid = valid_as_written(&written);
    if json {
        json_line(
            &mut stdout(),
            &serde_json::json!({"type": "repair", "path": path.display().to_string(),
                "output": output.display().to_string(), "answered": repair.answered,
                "reattached": repair.reattached, "left_out": repair.left_out,
                "unrepaired": repair.unrepaired, "lines_appended": repair.lines.len(),
                "valid_as_written": valid}),
        )?;
    } else {
        status!(
            "wrote {}: {} line(s) appended to a copy of {}: {} tool_use(s) answered, {} record(s) re-attached, {} block(s) left out",
            output.display(),
            repair.lines.len(),
            path.display(),
            repair.answered.len(),
            repair.reattached.len(),
            repair.left_out.len()
        );
        if !valid {
            status!(
                "the copy's messages as written are still refused by the Messages API: `agent-history lint --target anthropic {}` says why",
                output.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether the messages a resume of `transcript` sends as written, with nothing repaired,
/// pass the Messages API's rules.
fn valid_as_written(transcript: &Transcript) -> bool {
    validate(
        Target::AnthropicMessages,
        &serde_json::Value::Array(transcript.messages_as_written()),
    )
    .is_valid()
}

/// Writes `bytes` to the new file `path` atomically: a temporary file beside it, synced, then
/// moved into place unless something appeared there meanwhile.
fn write_new(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.persist_noclobber(path)
        .map_err(|error| error.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
