//! `stats`: a summary of a rollout.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use agent_history::{ResumeOptions, Resumed};
use anyhow::Context as _;

use super::args::StatsArgs;
use super::input::resume;
use super::output::{finish, stdout};

/// Runs `stats`.
pub fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let StatsArgs { rollout } = args;
    let resumed = resume(&rollout, &ResumeOptions::default())?;
    let mut out = stdout();
    out.write_all(stats(&rollout, &resumed).as_bytes())
        .context("cannot write to stdout")?;
    finish(out)
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
