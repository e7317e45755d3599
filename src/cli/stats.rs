//! `stats`: a summary of sessions, one or many, as text or JSON Lines, with a total.

use std::fmt::Write as _;
use std::process::ExitCode;

use agent_history::{
    HistoryMode, HistoryStats, LineageFile, LoadReport, SkipCounts, SnapshotHeader,
    TranscriptReport, UsageTotals,
};
use serde::Serialize;

use super::args::StatsArgs;
use super::input::{Loaded, each, load, sessions, transcript_input};
use super::output::{self, error_line, finish, json_line, stdout};

/// The statistics of one session.
#[derive(Serialize)]
struct SessionStats {
    /// Always `"session"`.
    r#type: &'static str,
    /// The path as given (`<stdin>` for standard input).
    path: String,
    /// `"rollout"`, `"snapshot"` or `"claude-code"` (a Claude Code transcript).
    input: &'static str,
    /// The session's thread id (`null` for a snapshot that covers no `session_meta`); a
    /// transcript's `sessionId`.
    thread_id: Option<String>,
    /// `"legacy"` or `"paginated"` (`null` for a snapshot).
    history_mode: Option<HistoryMode>,
    /// A paginated thread's files, oldest first, the session's own last (empty when it has no
    /// base).
    lineage: Vec<LineageFile>,
    /// `compacted` lines in the rollout (`null` for a snapshot).
    compactions: Option<u64>,
    /// What reading the rollout found (`null` for a snapshot).
    load: Option<LoadReport>,
    /// The snapshot's header (`null` for a rollout).
    snapshot: Option<SnapshotHeader>,
    /// What reading a Claude Code transcript found (`null` for a Codex session).
    transcript: Option<TranscriptReport>,
    /// The tokens a Claude Code transcript's responses were billed, once per message (`null`
    /// for a Codex session).
    usage: Option<UsageTotals>,
    /// What the history holds.
    stats: HistoryStats,
}

/// The totals over many sessions.
#[derive(Serialize, Default)]
struct Totals {
    /// Always `"summary"`.
    r#type: &'static str,
    /// Sessions given (the unreadable ones included).
    sessions: usize,
    /// Sessions that could not be read.
    errors: usize,
    /// Items in all sessions read.
    items: u64,
    /// Bytes of their JSON texts.
    bytes: u64,
    /// Their token estimate.
    tokens: u64,
    /// User turns.
    user_turns: u64,
}

/// Runs `stats`.
pub fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let sources = sessions(&args.paths)?;
    let options = super::input::resume_options(None);
    let results = each(&sources, output::quiet(), |source, bar| {
        Ok(session_stats(source.label(), load(source, &options, bar)?))
    });
    let mut out = stdout();
    let mut totals = Totals {
        r#type: "summary",
        sessions: results.len(),
        ..Totals::default()
    };
    let mut first = true;
    for result in results {
        let stats = match result {
            Ok(stats) => stats,
            Err(error) => {
                if output::is_broken_pipe(&error) {
                    return Err(error);
                }
                totals.errors += 1;
                error_line(&error);
                continue;
            }
        };
        totals.items += stats.stats.items;
        totals.bytes += stats.stats.bytes;
        totals.tokens += stats.stats.tokens;
        totals.user_turns += stats.stats.user_turns;
        if args.json {
            json_line(&mut out, &stats)?;
        } else if !output::quiet() {
            if !first {
                output::line(&mut out, "")?;
            }
            output::line(&mut out, text(&stats).trim_end())?;
        }
        first = false;
    }
    if totals.sessions > 1 {
        if args.json {
            json_line(&mut out, &totals)?;
        } else if !output::quiet() {
            output::line(
                &mut out,
                format!(
                    "\ntotal: {} session(s){}, {} item(s), {} bytes, {} tokens (est.), {} user turn(s)",
                    totals.sessions,
                    match totals.errors {
                        0 => String::new(),
                        n => format!(" ({n} unreadable)"),
                    },
                    totals.items,
                    totals.bytes,
                    totals.tokens,
                    totals.user_turns
                ),
            )?;
        }
    }
    finish(out)?;
    Ok(ExitCode::from(if totals.errors > 0 {
        output::INPUT
    } else {
        output::SUCCESS
    }))
}

/// The statistics of one session as read.
fn session_stats(path: String, loaded: Loaded) -> SessionStats {
    match loaded {
        Loaded::Rollout(resumed) => SessionStats {
            r#type: "session",
            path,
            input: "rollout",
            thread_id: Some(resumed.thread_id().to_string()),
            history_mode: Some(resumed.report().history_mode()),
            lineage: resumed.lineage().to_vec(),
            compactions: Some(
                resumed
                    .compactions()
                    .map_or(0, |compactions| compactions.lines),
            ),
            stats: resumed.history().stats(),
            load: Some(resumed.report().clone()),
            snapshot: None,
            transcript: None,
            usage: None,
        },
        Loaded::Snapshot(opened) => SessionStats {
            r#type: "session",
            path,
            input: "snapshot",
            thread_id: opened.state().thread_id.map(|id| id.to_string()),
            history_mode: None,
            lineage: Vec::new(),
            compactions: None,
            stats: opened.history().stats(),
            load: None,
            snapshot: Some(*opened.header()),
            transcript: None,
            usage: None,
        },
        Loaded::Transcript(resumed) => SessionStats {
            r#type: "session",
            path,
            input: transcript_input(&resumed),
            thread_id: resumed.session_id().map(str::to_owned),
            history_mode: None,
            lineage: Vec::new(),
            compactions: Some(
                resumed
                    .report()
                    .read_past
                    .get("system/compact_boundary")
                    .copied()
                    .unwrap_or(0),
            ),
            stats: resumed.history().stats(),
            load: None,
            snapshot: None,
            transcript: Some(resumed.report().clone()),
            usage: Some(resumed.usage()),
        },
    }
}

/// The `lines` row of the text summary: lines read, skipped, and whether the last was torn.
fn lines_read(out: &mut String, lines: u64, skipped: &SkipCounts, torn_tail: bool) {
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "lines          {lines} ({} skipped{})",
        skipped.total(),
        if torn_tail { ", torn last line" } else { "" }
    );
}

/// The text summary of one session.
fn text(session: &SessionStats) -> String {
    let mut out = String::new();
    let stats = &session.stats;
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{:<14} {}", session.input, session.path);
    let _ = writeln!(
        out,
        "thread         {}",
        session.thread_id.as_deref().unwrap_or("(none)")
    );
    if let Some(load) = &session.load {
        lines_read(&mut out, load.lines, &load.skip_counts, load.torn_tail);
        if let Some(pagination) = &load.pagination {
            let _ = writeln!(
                out,
                "history        paginated ({} file(s){})",
                session.lineage.len().max(1),
                match pagination.damaged {
                    0 => String::new(),
                    n => format!(", {n} line(s) with a repeated or decreasing ordinal"),
                }
            );
        }
        let left_out = &load.left_out;
        let _ = writeln!(
            out,
            "left out       {}{}",
            left_out.total(),
            if left_out.is_empty() {
                String::new()
            } else {
                format!(" ({left_out})")
            }
        );
        if let Some(turn) = &load.incomplete_turn {
            let _ = writeln!(out, "last turn      incomplete: {turn}");
        }
    }
    if let Some(header) = &session.snapshot {
        let _ = writeln!(
            out,
            "lines          {} (covered by the snapshot)",
            header.rollout.lines
        );
    }
    if let Some(report) = &session.transcript {
        lines_read(
            &mut out,
            report.lines,
            &report.skip_counts,
            report.torn_tail,
        );
    }
    let _ = writeln!(out, "items          {}", stats.items);
    let _ = writeln!(out, "bytes          {}", stats.bytes);
    let _ = writeln!(out, "tokens (est.)  {}", stats.tokens);
    let _ = writeln!(out, "user turns     {}", stats.user_turns);
    if let Some(compactions) = session.compactions {
        let _ = writeln!(out, "compactions    {compactions}");
    }
    if let Some(usage) = &session.usage {
        let _ = writeln!(
            out,
            "billed tokens  {} in ({} written to and {} read from the cache), {} out, over {} response(s)",
            usage
                .input_tokens
                .saturating_add(usage.cache_creation_input_tokens)
                .saturating_add(usage.cache_read_input_tokens),
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens,
            usage.messages
        );
    }
    let _ = writeln!(
        out,
        "\nkind                        items        bytes   tokens (est.)"
    );
    for (kind, row) in &stats.by_kind {
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>12} {:>15}",
            kind.as_str(),
            row.items,
            row.bytes,
            row.tokens
        );
    }
    out
}
