//! `check`: the lint of a rollout.

use std::io::Write as _;
use std::process::ExitCode;

use agent_history::{Modalities, ProjectionOptions, RepairKind, ResumeOptions, Resumed};
use anyhow::Context as _;

use super::args::CheckArgs;
use super::input::resume;
use super::output::{finish, stdout};

/// Runs `check`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let CheckArgs { rollout, strict } = args;
    let resumed = resume(&rollout, &ResumeOptions::default())?;
    let findings = check(&resumed);
    let mut out = stdout();
    writeln!(
        out,
        "{}: {} line(s), {} item(s), {} user turn(s)",
        rollout.display(),
        resumed.report().lines,
        resumed.history().len(),
        resumed.history().user_turn_count()
    )
    .context("cannot write to stdout")?;
    let left_out = &resumed.report().left_out;
    if !left_out.is_empty() {
        writeln!(out, "left out by resume (not history content): {left_out}")
            .context("cannot write to stdout")?;
    }
    for finding in &findings {
        writeln!(out, "  {finding}").context("cannot write to stdout")?;
    }
    match findings.len() {
        0 => writeln!(out, "no findings"),
        n => writeln!(out, "{n} finding(s)"),
    }
    .context("cannot write to stdout")?;
    finish(out)?;
    Ok(if strict && !findings.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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

/// The lint of `check`, one finding per line, in line order.
fn check(resumed: &Resumed) -> Vec<String> {
    let mut findings: Vec<(u64, String)> = Vec::new();
    let line_of = |position: usize| resumed.entry_line(position).unwrap_or(0);
    // The `compacted` line the history was rebuilt from: its replacement history's items all
    // have its number.
    let base = resumed
        .compactions()
        .and_then(|compactions| compactions.base);
    let mut replacement_images = ReplacementMedia::default();
    let mut replacement_audio = ReplacementMedia::default();
    // A text-only, lenient projection reports every repair a request would need.
    let options = ProjectionOptions::for_modalities(Modalities::TEXT);
    if let Ok(projection) = resumed.history().project(&options) {
        for repair in projection.report().repairs() {
            let line = line_of(repair.at.position);
            if Some(line) == base {
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
            let what = match &repair.kind {
                RepairKind::SynthesizedOutput { .. } => format!(
                    "{}{call} has no output; requests get a synthetic \"aborted\" output",
                    item_kind
                ),
                RepairKind::DroppedOrphanOutput => format!(
                    "{}{call} has no matching call; requests leave it out",
                    item_kind
                ),
                RepairKind::StrippedImages { parts } => format!(
                    "{} carries {parts} image part(s) a text-only model would lose",
                    item_kind
                ),
                RepairKind::StrippedAudio { parts } => format!(
                    "{} carries {parts} audio part(s) a text-only model would lose",
                    item_kind
                ),
                RepairKind::ClearedImageGenerationResult => format!(
                    "{} carries a generated image a text-only model would lose",
                    item_kind
                ),
                RepairKind::HeldBackUnknownItem => {
                    let name = resumed
                        .history()
                        .get(repair.at.position)
                        .and_then(|entry| {
                            serde_json::from_str::<serde_json::Value>(entry.json()).ok()
                        })
                        .and_then(|value| value["type"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| "?".into());
                    format!("unknown item type `{name}`; requests leave it out")
                }
                other => format!("{}: {other:?}", item_kind),
            };
            findings.push((line, format!("line {line}: {what}")));
        }
    }
    if let Some(line) = base {
        for (media, what) in [(replacement_images, "image"), (replacement_audio, "audio")] {
            if media.items > 0 {
                findings.push((
                    line,
                    format!(
                        "line {line}: the compaction's replacement history carries {} {what} \
                         part(s) in {} item(s) a text-only model would lose",
                        media.parts, media.items
                    ),
                ));
            }
        }
    }
    for skipped in resumed.report().malformed() {
        let torn = if resumed.report().torn_tail && skipped.line == resumed.report().lines {
            "torn last line (an interrupted write), "
        } else {
            ""
        };
        findings.push((
            skipped.line,
            format!(
                "line {} (byte {}): {torn}skipped: {}",
                skipped.line, skipped.offset, skipped.reason
            ),
        ));
    }
    let report = resumed.report();
    for repaired in &report.repaired {
        findings.push((
            repaired.line,
            format!(
                "line {} (byte {}): repaired: {}",
                repaired.line, repaired.offset, repaired.repair
            ),
        ));
    }
    findings.sort_by_key(|(line, _)| *line);
    let listed = report.malformed().count() as u64;
    if report.skip_counts.malformed() > listed {
        findings.push((
            u64::MAX,
            format!(
                "{} more malformed line(s) skipped and not listed",
                report.skip_counts.malformed() - listed
            ),
        ));
    }
    findings.into_iter().map(|(_, text)| text).collect()
}
