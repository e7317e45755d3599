//! `verify`: check a snapshot.

use std::io::Write as _;
use std::process::ExitCode;

use agent_history::{SNAPSHOT_FORMAT_VERSION, SnapshotOptions, open_snapshot};
use anyhow::Context as _;

use super::args::VerifyArgs;
use super::output::{finish, stdout};

/// Runs `verify`.
pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let VerifyArgs { snapshot: path } = args;
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
