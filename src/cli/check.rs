//! `check`: the lint of sessions, one or many, as text or JSON Lines, with a summary.

use std::collections::BTreeMap;
use std::process::ExitCode;

use agent_history::{
    ConversationReport, DroppedKind, History, HistoryMode, LineageFile, LoadReport, Modalities,
    ProjectionOptions, RepairKind, RepairedLine, ResumedTranscript, SkippedLine, TranscriptReport,
};
use serde::Serialize;

use super::args::CheckArgs;
use super::input::{Loaded, each, load, sessions, transcript_input};
use super::output::{self, collapse, error_line, finish, json_line, line, stdout};

/// How much a finding matters: `--strict` fails on warnings only.
#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Severity {
    /// Damage, or a repair the next request needs.
    Warning,
    /// What a healthy session shows: a compaction, a branch not taken, what a resume leaves
    /// out as its own client does, media a text-only model would lose.
    Notice,
}

/// The finding kinds that are notices (left out by resume: by what was left out).
const NOTICES: [&str; 6] = [
    "images",
    "audio",
    "generated_image",
    "replacement_media",
    "branch_not_taken",
    "compaction_cut",
];

/// One thing `check` found.
#[derive(Serialize)]
struct Finding {
    /// What kind of finding, a stable snake_case name.
    kind: &'static str,
    /// `warning` or `notice` (`--strict` fails on warnings only).
    severity: Severity,
    /// The file the line is in, when it is not the session's own: an ancestor in a paginated
    /// thread's lineage (`null` otherwise).
    file: Option<String>,
    /// The rollout line it is on (`null` in a snapshot, which has no lines).
    line: Option<u64>,
    /// The byte offset of that line, for lines the reader skipped or repaired.
    offset: Option<u64>,
    /// The item's position in the history (for findings about an item).
    position: Option<usize>,
    /// What was found, in words.
    message: String,
    /// The message without what is particular to this finding (call id, counts): findings
    /// with the same group are collapsed in the text report when there are many.
    #[serde(skip)]
    group: String,
}

impl Severity {
    fn of(kind: &str) -> Severity {
        if NOTICES.contains(&kind) {
            Severity::Notice
        } else {
            Severity::Warning
        }
    }
}

impl Finding {
    /// A finding about a line (of `file`, when it is not the session's own).
    fn on_line(
        kind: &'static str,
        file: Option<String>,
        line: Option<u64>,
        offset: Option<u64>,
        message: String,
        group: String,
    ) -> Finding {
        Finding {
            kind,
            severity: Severity::of(kind),
            file,
            line,
            offset,
            position: None,
            message,
            group,
        }
    }

    /// Where the finding is, as the text report says it.
    fn at(&self) -> String {
        let of = self
            .file
            .as_ref()
            .map(|file| format!(" of {file}"))
            .unwrap_or_default();
        match (self.line, self.offset, self.position) {
            (Some(line), Some(offset), _) => format!("line {line}{of} (byte {offset})"),
            (Some(line), None, _) => format!("line {line}{of}"),
            (None, _, Some(position)) => format!("item {position}"),
            (None, _, None) => String::new(),
        }
    }

    /// The finding as one line of the text report.
    fn text(&self) -> String {
        match self.at() {
            at if at.is_empty() => self.message.clone(),
            at => format!("{at}: {}", self.message),
        }
    }
}

/// The result of checking one session.
#[derive(Serialize)]
struct Checked {
    /// Always `"session"`: tells the session objects from the summary in JSON Lines.
    r#type: &'static str,
    /// The path as given (`<stdin>` for standard input).
    path: String,
    /// `"rollout"`, `"snapshot"` or `"claude-code"` (a Claude Code transcript).
    input: &'static str,
    /// Lines read (for a snapshot: the rollout lines it covers).
    lines: u64,
    /// `"legacy"` or `"paginated"` (`null` for a snapshot).
    history_mode: Option<HistoryMode>,
    /// A paginated thread's files, oldest first, the session's own last (empty when it has no
    /// base).
    lineage: Vec<LineageFile>,
    /// Items in the history.
    items: usize,
    /// User turns.
    user_turns: usize,
    /// Whether the next request needs a repair in its projection (a synthetic output, an
    /// orphan output left out, an unknown item held back), with the default modalities.
    needs_repair: bool,
    /// What reading the rollout found (`null` for a snapshot and a transcript).
    load: Option<LoadReport>,
    /// What reading a Claude Code transcript found (`null` for a Codex session).
    transcript: Option<TranscriptReport>,
    /// How a transcript's conversation was chosen: its rescues, branches, compaction cut and
    /// what it leaves out (`null` for a Codex session).
    conversation: Option<ConversationReport>,
    /// A transcript's subagents: those whose records it holds inline (`path` null) and the
    /// transcripts of its `subagents/` folder (empty for a Codex session).
    subagents: Vec<Subagent>,
    /// The findings, in line order.
    findings: Vec<Finding>,
}

/// A subagent of a Claude Code session.
#[derive(Serialize)]
struct Subagent {
    /// Its `agentId` (for a file of the folder, that of its first record, when it has one).
    agent_id: Option<String>,
    /// Its transcript, when it is a file of the session's `subagents/` folder.
    path: Option<String>,
}

/// The summary of many sessions.
#[derive(Serialize, Default)]
struct Summary {
    /// Always `"summary"`.
    r#type: &'static str,
    /// Sessions given (the unreadable ones included).
    sessions: usize,
    /// Sessions that could not be read.
    errors: usize,
    /// Items in all the sessions read.
    items: usize,
    /// Findings in all of them.
    findings: usize,
    /// The findings that are warnings (`--strict` fails on them).
    warnings: usize,
    /// Findings by kind.
    findings_by_kind: BTreeMap<&'static str, usize>,
    /// Sessions whose next request needs a repair.
    need_repair: usize,
}

/// Runs `check`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let sources = sessions(&args.paths)?;
    let options = super::input::resume_options(None);
    let results = each(&sources, output::quiet(), |source, bar| {
        Ok(checked(source.label(), load(source, &options, bar)?))
    });
    let mut out = stdout();
    let mut summary = Summary {
        r#type: "summary",
        sessions: results.len(),
        ..Summary::default()
    };
    for result in results {
        let checked = match result {
            Ok(checked) => checked,
            Err(error) => {
                if output::is_broken_pipe(&error) {
                    return Err(error);
                }
                summary.errors += 1;
                error_line(&error);
                if args.json {
                    json_line(
                        &mut out,
                        &serde_json::json!({"type": "error", "message": format!("{error:#}")}),
                    )?;
                }
                continue;
            }
        };
        summary.items += checked.items;
        summary.findings += checked.findings.len();
        summary.warnings += checked
            .findings
            .iter()
            .filter(|finding| finding.severity == Severity::Warning)
            .count();
        summary.need_repair += usize::from(checked.needs_repair);
        for finding in &checked.findings {
            *summary.findings_by_kind.entry(finding.kind).or_default() += 1;
        }
        if args.json {
            json_line(&mut out, &checked)?;
        } else if !output::quiet() {
            write_text(&mut out, &checked)?;
        }
    }
    if summary.sessions > 1 {
        if args.json {
            json_line(&mut out, &summary)?;
        } else if !output::quiet() {
            write_summary(&mut out, &summary)?;
        }
    }
    finish(out)?;
    Ok(ExitCode::from(if summary.errors > 0 {
        output::INPUT
    } else if args.strict && summary.warnings > 0 {
        output::FINDINGS
    } else {
        output::SUCCESS
    }))
}

/// The text report of one session.
fn write_text(out: &mut impl std::io::Write, checked: &Checked) -> anyhow::Result<()> {
    let what = if checked.input == "snapshot" {
        format!("snapshot of {} line(s)", checked.lines)
    } else {
        format!("{} line(s)", checked.lines)
    };
    line(
        out,
        format!(
            "{}: {what}, {} item(s), {} user turn(s)",
            checked.path, checked.items, checked.user_turns
        ),
    )?;
    if let Some(pagination) = checked
        .load
        .as_ref()
        .and_then(|load| load.pagination.as_ref())
    {
        let ordinals = match (pagination.first_ordinal, pagination.last_ordinal) {
            (Some(first), Some(last)) => format!("ordinals {first} to {last}"),
            _ => "no ordinals".to_owned(),
        };
        line(out, format!("paginated history: {ordinals}"))?;
    }
    if !checked.lineage.is_empty() {
        line(
            out,
            format!("lineage: {} file(s), oldest first", checked.lineage.len()),
        )?;
        for file in &checked.lineage {
            let ordinals = match (file.first_ordinal, file.last_ordinal) {
                (Some(first), Some(last)) => format!(", ordinals {first} to {last}"),
                _ => String::new(),
            };
            let cut = file
                .cut
                .map(|cut| format!(", cut at byte {}", cut.end_byte_offset))
                .unwrap_or_default();
            line(
                out,
                format!(
                    "  {} ({}): {} line(s){ordinals}{cut}",
                    file.rollout_id,
                    file.path.display(),
                    file.lines
                ),
            )?;
        }
    }
    if let Some(load) = &checked.load
        && !load.left_out.is_empty()
    {
        line(
            out,
            format!(
                "left out by resume (not history content): {}",
                load.left_out
            ),
        )?;
    }
    if let Some(turn) = checked
        .load
        .as_ref()
        .and_then(|load| load.incomplete_turn.as_ref())
    {
        line(out, format!("last turn incomplete: {turn}"))?;
    }
    if !checked.subagents.is_empty() {
        let names: Vec<String> = checked
            .subagents
            .iter()
            .map(|agent| match (&agent.agent_id, &agent.path) {
                (_, Some(path)) => path.clone(),
                (Some(id), None) => format!("{id} (inline)"),
                (None, None) => "(unnamed)".to_owned(),
            })
            .collect();
        line(out, format!("subagents: {}", names.join(", ")))?;
    }
    let entries: Vec<(String, String, String)> = checked
        .findings
        .iter()
        .map(|finding| (finding.group.clone(), finding.at(), finding.text()))
        .collect();
    for text in collapse(&entries) {
        line(out, format!("  {text}"))?;
    }
    match checked.findings.len() {
        0 => line(out, "no findings"),
        n => line(out, format!("{n} finding(s)")),
    }
}

/// The text summary of many sessions.
fn write_summary(out: &mut impl std::io::Write, summary: &Summary) -> anyhow::Result<()> {
    line(
        out,
        format!(
            "\nsummary: {} session(s){}, {} item(s), {} finding(s)",
            summary.sessions,
            match summary.errors {
                0 => String::new(),
                n => format!(" ({n} unreadable)"),
            },
            summary.items,
            summary.findings
        ),
    )?;
    for (kind, count) in &summary.findings_by_kind {
        line(out, format!("  {count:>8}  {kind}"))?;
    }
    line(
        out,
        format!(
            "need a repair before their next request: {} session(s)",
            summary.need_repair
        ),
    )
}

/// Checks one session as read.
fn checked(path: String, loaded: Loaded) -> Checked {
    match loaded {
        Loaded::Rollout(resumed) => {
            let base = resumed
                .compactions()
                .and_then(|compactions| compactions.base);
            let own = resumed.path().to_owned();
            let other_file =
                |file: &std::path::Path| (file != own).then(|| file.display().to_string());
            let mut findings = repairs(
                resumed.history(),
                |position| {
                    (
                        resumed.entry_line(position),
                        resumed.entry_file(position).and_then(other_file),
                    )
                },
                base,
            );
            let lineage = resumed.lineage();
            // The ancestors' reports (the last file of a lineage is the session's own).
            for file in lineage.iter().take(lineage.len().saturating_sub(1)) {
                findings.extend(load_findings(&file.report, other_file(&file.path)));
            }
            findings.extend(load_findings(resumed.report(), None));
            // In the lineage's order (oldest file first), then by line.
            let rank = |finding: &Finding| {
                let file = finding.file.as_ref().and_then(|file| {
                    lineage
                        .iter()
                        .position(|ancestor| ancestor.path.display().to_string() == *file)
                });
                (file.unwrap_or(usize::MAX), finding.line.unwrap_or(u64::MAX))
            };
            findings.sort_by_key(rank);
            let report = resumed.report();
            findings.extend(unlisted_skipped(
                report.skip_counts.malformed(),
                report.malformed().count(),
            ));
            Checked {
                r#type: "session",
                path,
                input: "rollout",
                lines: report.lines,
                history_mode: Some(report.history_mode()),
                lineage: lineage.to_vec(),
                items: resumed.history().len(),
                user_turns: resumed.history().user_turn_count(),
                needs_repair: needs_repair(resumed.history()),
                load: Some(report.clone()),
                transcript: None,
                conversation: None,
                subagents: Vec::new(),
                findings,
            }
        }
        Loaded::Snapshot(opened) => {
            let history = opened.history();
            Checked {
                r#type: "session",
                path,
                input: "snapshot",
                lines: opened.header().rollout.lines,
                history_mode: None,
                lineage: Vec::new(),
                items: history.len(),
                user_turns: history.user_turn_count(),
                needs_repair: needs_repair(history),
                load: None,
                transcript: None,
                conversation: None,
                subagents: Vec::new(),
                findings: repairs(history, |_| (None, None), None),
            }
        }
        Loaded::Transcript(read) => transcript_checked(path, *read),
    }
}

/// Checks a Claude Code transcript: its bad and repaired lines, every rescue, branch not taken
/// and compaction cut of its conversation, what a resume leaves out, and the repairs its next
/// request needs.
fn transcript_checked(path: String, resumed: ResumedTranscript) -> Checked {
    let history = resumed.history();
    let at = |kind, line, offset, message, group: &str| {
        Finding::on_line(kind, None, Some(line), offset, message, group.to_owned())
    };
    let mut findings = repairs(
        history,
        |position| (resumed.item_line(position), None),
        None,
    );
    let report = resumed.report();
    let malformed = || {
        report
            .skipped
            .iter()
            .filter(|line| line.reason.is_malformed())
    };
    findings.extend(line_findings(
        malformed(),
        &report.repaired,
        report.torn_tail.then_some(report.lines),
        &None,
    ));
    let chosen = resumed.conversation();
    for rescue in &chosen.rescues {
        findings.push(at(
            "rescued_record",
            rescue.line,
            None,
            rescue.to_string(),
            "records re-attached",
        ));
    }
    for branch in &chosen.branches {
        findings.push(at(
            "branch_not_taken",
            branch.line,
            None,
            branch.to_string(),
            "branches not taken",
        ));
    }
    if let Some(cut) = &chosen.cut {
        findings.push(at(
            "compaction_cut",
            cut.line,
            None,
            format!(
                "compaction: the {} record(s) before it are not sent (the summary after it stands for them)",
                cut.records_before
            ),
            "compaction cuts",
        ));
    }
    for dropped in &chosen.dropped {
        let mut finding = at(
            "left_out_by_resume",
            dropped.line,
            None,
            dropped.to_string(),
            "left out by resume",
        );
        // What Claude Code's own resume leaves out is a notice; a pairing it would send
        // broken is a warning.
        if !matches!(
            dropped.what,
            DroppedKind::UnpairedResult { .. } | DroppedKind::ReusedToolId { .. }
        ) {
            finding.severity = Severity::Notice;
        }
        findings.push(finding);
    }
    findings.sort_by_key(|finding| finding.line.unwrap_or(u64::MAX));
    findings.extend(unlisted_skipped(
        report.skip_counts.malformed(),
        malformed().count(),
    ));
    Checked {
        r#type: "session",
        path,
        // A transcript's snapshot opened on its own reports what was read when it was written.
        input: transcript_input(&resumed),
        lines: report.lines,
        history_mode: None,
        lineage: Vec::new(),
        items: history.len(),
        user_turns: history.user_turn_count(),
        needs_repair: needs_repair(history),
        load: None,
        transcript: Some(report.clone()),
        conversation: Some(chosen.clone()),
        subagents: subagents(&resumed),
        findings,
    }
}

/// The subagents of a transcript: inline ones, then the files of its folder.
fn subagents(transcript: &ResumedTranscript) -> Vec<Subagent> {
    let inline = transcript.subagents().iter().map(|agent| Subagent {
        agent_id: Some(agent.clone()),
        path: None,
    });
    let files = transcript.subagent_files().into_iter().map(|path| {
        let agent_id =
            agent_history::Transcript::read_file(&path, agent_history::ReadMode::Lenient)
                .ok()
                .and_then(|file| file.subagents().first().map(|agent| (*agent).to_owned()));
        Subagent {
            agent_id,
            path: Some(path.display().to_string()),
        }
    });
    inline.chain(files).collect()
}

/// Whether a request from `history` needs a repair, with the default modalities.
fn needs_repair(history: &History) -> bool {
    history
        .project(&ProjectionOptions::for_modalities(Modalities::default()))
        .is_ok_and(|projection| !projection.report().is_empty())
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

/// The repairs a text-only, lenient projection of `history` makes (it reports every repair a
/// request could need), as findings. `line_of` gives an item's rollout line; `base` is the
/// `compacted` line the history was rebuilt from, whose replacement history's media are
/// reported once, with totals.
fn repairs(
    history: &History,
    line_of: impl Fn(usize) -> (Option<u64>, Option<String>),
    base: Option<u64>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut replacement_images = ReplacementMedia::default();
    let mut replacement_audio = ReplacementMedia::default();
    let options = ProjectionOptions::for_modalities(Modalities::TEXT);
    let Ok(projection) = history.project(&options) else {
        return findings;
    };
    for repair in projection.report().repairs() {
        let (line, file) = line_of(repair.at.position);
        if line.is_some() && file.is_none() && line == base {
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
        let (kind, message, group) = match &repair.kind {
            RepairKind::SynthesizedOutput { .. } => {
                let tail = "has no output; requests get a synthetic \"aborted\" output";
                (
                    "synthetic_output",
                    format!("{item_kind}{call} {tail}"),
                    format!("{item_kind} {tail}"),
                )
            }
            RepairKind::DroppedOrphanOutput => {
                let tail = "has no matching call; requests leave it out";
                (
                    "orphan_output",
                    format!("{item_kind}{call} {tail}"),
                    format!("{item_kind} {tail}"),
                )
            }
            RepairKind::StrippedImages { parts } => (
                "images",
                format!("{item_kind} carries {parts} image part(s) a text-only model would lose"),
                format!("{item_kind} carries image parts a text-only model would lose"),
            ),
            RepairKind::StrippedAudio { parts } => (
                "audio",
                format!("{item_kind} carries {parts} audio part(s) a text-only model would lose"),
                format!("{item_kind} carries audio parts a text-only model would lose"),
            ),
            RepairKind::ClearedImageGenerationResult => {
                let text =
                    format!("{item_kind} carries a generated image a text-only model would lose");
                ("generated_image", text.clone(), text)
            }
            RepairKind::HeldBackUnknownItem => {
                let name = history
                    .get(repair.at.position)
                    .and_then(|entry| serde_json::from_str::<serde_json::Value>(entry.json()).ok())
                    .and_then(|value| value["type"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "?".into());
                let text = format!("unknown item type `{name}`; requests leave it out");
                ("unknown_item", text.clone(), text)
            }
            other => {
                let text = format!("{item_kind}: {other:?}");
                ("other_repair", text.clone(), text)
            }
        };
        findings.push(Finding {
            kind,
            severity: Severity::of(kind),
            file,
            line,
            offset: None,
            position: Some(repair.at.position),
            message,
            group,
        });
    }
    if let Some(line) = base {
        for (media, what) in [(replacement_images, "image"), (replacement_audio, "audio")] {
            if media.items > 0 {
                let message = format!(
                    "the compaction's replacement history carries {} {what} part(s) in {} item(s) \
                     a text-only model would lose",
                    media.parts, media.items
                );
                findings.push(Finding {
                    kind: "replacement_media",
                    severity: Severity::Notice,
                    file: None,
                    line: Some(line),
                    offset: None,
                    position: None,
                    group: message.clone(),
                    message,
                });
            }
        }
    }
    findings
}

/// The lines the reader skipped or repaired, and a paginated file's ordinal damage, as findings;
/// `file` names the file when it is not the session's own.
/// The findings of the lines a reader skipped (malformed ones) or repaired; `torn_last` is
/// the line number of a torn last line.
fn line_findings<'r>(
    malformed: impl Iterator<Item = &'r SkippedLine>,
    repaired: &[RepairedLine],
    torn_last: Option<u64>,
    file: &Option<String>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut add = |kind, line, offset, message, group| {
        findings.push(Finding::on_line(
            kind,
            file.clone(),
            line,
            offset,
            message,
            group,
        ));
    };
    for skipped in malformed {
        let torn = torn_last == Some(skipped.line);
        let message = format!(
            "{}skipped: {}",
            if torn {
                "torn last line (an interrupted write), "
            } else {
                ""
            },
            skipped.reason
        );
        let kind = if torn { "torn_tail" } else { "skipped_line" };
        add(
            kind,
            Some(skipped.line),
            Some(skipped.offset),
            message,
            "skipped line".to_owned(),
        );
    }
    for repaired in repaired {
        let message = format!("repaired: {}", repaired.repair);
        add(
            "repaired_line",
            Some(repaired.line),
            Some(repaired.offset),
            message.clone(),
            message,
        );
    }
    findings
}

/// The finding that counts the malformed lines skipped beyond those listed, if any.
fn unlisted_skipped(malformed: u64, listed: usize) -> Option<Finding> {
    let more = malformed
        .checked_sub(listed as u64)
        .filter(|&more| more > 0)?;
    Some(Finding {
        kind: "unlisted_skipped_lines",
        severity: Severity::Warning,
        file: None,
        line: None,
        offset: None,
        position: None,
        message: format!("{more} more malformed line(s) skipped and not listed"),
        group: "malformed lines skipped and not listed".to_owned(),
    })
}

fn load_findings(report: &LoadReport, file: Option<String>) -> Vec<Finding> {
    let mut findings = line_findings(
        report.malformed(),
        &report.repaired,
        report.torn_tail.then_some(report.lines),
        &file,
    );
    let mut add = |kind, line, offset, message, group| {
        findings.push(Finding::on_line(
            kind,
            file.clone(),
            line,
            offset,
            message,
            group,
        ));
    };
    if let Some(pagination) = &report.pagination {
        for damage in &pagination.damage {
            let message = format!(
                "ordinal {} {} ordinal {} (a paginated file's ordinals only go up; Codex's projection stops here)",
                damage.ordinal,
                if damage.ordinal == damage.highest_before {
                    "repeats"
                } else {
                    "goes back below"
                },
                damage.highest_before
            );
            let group = "ordinal repeats or goes back".to_owned();
            add(
                "ordinal_damage",
                Some(damage.line),
                Some(damage.offset),
                message,
                group,
            );
        }
        let unlisted = pagination.damaged - pagination.damage.len() as u64;
        if unlisted > 0 {
            let message =
                format!("{unlisted} more line(s) whose ordinal repeats or goes back, not listed");
            add(
                "unlisted_ordinal_damage",
                None,
                None,
                message.clone(),
                message,
            );
        }
        if pagination.without_ordinal > 0 {
            let message = format!(
                "{} line(s) of a paginated file without an ordinal",
                pagination.without_ordinal
            );
            add("missing_ordinal", None, None, message.clone(), message);
        }
    }
    findings
}
