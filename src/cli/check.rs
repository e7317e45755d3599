//! `check`: the lint of sessions, one or many, as text or JSON Lines, with a summary.

use std::collections::BTreeMap;
use std::process::ExitCode;

use agent_history::{
    History, LoadReport, Modalities, ProjectionOptions, RepairKind, ResumeOptions,
};
use serde::Serialize;

use super::args::CheckArgs;
use super::input::{Loaded, each, load, sessions};
use super::output::{self, collapse, error_line, finish, json_line, line, stdout};

/// One thing `check` found.
#[derive(Serialize)]
struct Finding {
    /// What kind of finding, a stable snake_case name.
    kind: &'static str,
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

impl Finding {
    /// Where the finding is, as the text report says it.
    fn at(&self) -> String {
        match (self.line, self.offset, self.position) {
            (Some(line), Some(offset), _) => format!("line {line} (byte {offset})"),
            (Some(line), None, _) => format!("line {line}"),
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
    /// `"rollout"` or `"snapshot"`.
    input: &'static str,
    /// Lines read (for a snapshot: the rollout lines it covers).
    lines: u64,
    /// Items in the history.
    items: usize,
    /// User turns.
    user_turns: usize,
    /// Whether the next request needs a repair in its projection (a synthetic output, an
    /// orphan output left out, an unknown item held back), with the default modalities.
    needs_repair: bool,
    /// What reading the rollout found (`null` for a snapshot).
    load: Option<LoadReport>,
    /// The findings, in line order.
    findings: Vec<Finding>,
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
    /// Findings by kind.
    findings_by_kind: BTreeMap<&'static str, usize>,
    /// Sessions whose next request needs a repair.
    need_repair: usize,
}

/// Runs `check`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let sources = sessions(&args.paths)?;
    let options = ResumeOptions::default();
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
    } else if args.strict && summary.findings > 0 {
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
            let mut findings = repairs(
                resumed.history(),
                |position| resumed.entry_line(position),
                base,
            );
            findings.extend(load_findings(resumed.report()));
            findings.sort_by_key(|finding| finding.line.unwrap_or(u64::MAX));
            let report = resumed.report();
            let listed = report.malformed().count() as u64;
            if report.skip_counts.malformed() > listed {
                let more = report.skip_counts.malformed() - listed;
                findings.push(Finding {
                    kind: "unlisted_skipped_lines",
                    line: None,
                    offset: None,
                    position: None,
                    message: format!("{more} more malformed line(s) skipped and not listed"),
                    group: "malformed lines skipped and not listed".to_owned(),
                });
            }
            Checked {
                r#type: "session",
                path,
                input: "rollout",
                lines: report.lines,
                items: resumed.history().len(),
                user_turns: resumed.history().user_turn_count(),
                needs_repair: needs_repair(resumed.history()),
                load: Some(report.clone()),
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
                items: history.len(),
                user_turns: history.user_turn_count(),
                needs_repair: needs_repair(history),
                load: None,
                findings: repairs(history, |_| None, None),
            }
        }
    }
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
    line_of: impl Fn(usize) -> Option<u64>,
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
        let line = line_of(repair.at.position);
        if line.is_some() && line == base {
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

/// The lines the reader skipped or repaired, as findings.
fn load_findings(report: &LoadReport) -> Vec<Finding> {
    let mut findings = Vec::new();
    for skipped in report.malformed() {
        let torn = report.torn_tail && skipped.line == report.lines;
        let message = format!(
            "{}skipped: {}",
            if torn {
                "torn last line (an interrupted write), "
            } else {
                ""
            },
            skipped.reason
        );
        findings.push(Finding {
            kind: if torn { "torn_tail" } else { "skipped_line" },
            line: Some(skipped.line),
            offset: Some(skipped.offset),
            position: None,
            group: "skipped line".to_owned(),
            message,
        });
    }
    for repaired in &report.repaired {
        findings.push(Finding {
            kind: "repaired_line",
            line: Some(repaired.line),
            offset: Some(repaired.offset),
            position: None,
            message: format!("repaired: {}", repaired.repair),
            group: format!("repaired: {}", repaired.repair),
        });
    }
    findings
}
