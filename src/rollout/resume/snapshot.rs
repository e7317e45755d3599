//! Resuming through a snapshot: when a snapshot may stand for a rollout's prefix, reading only
//! the lines after it, and writing a snapshot that stands for what a resume covered (with the
//! prefix's scan facts and the history's earlier states).

use std::fmt;
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::history::History;
use crate::item::ThreadId;
use crate::snapshot::{
    PrefixFact, PrefixState, Replace, RolloutPosition, Snapshot, SnapshotError, SnapshotHeader,
    SnapshotOptions, SnapshotTarget, open_snapshot, write_snapshot,
};

use super::super::error::RolloutError;
use super::super::line::{InstructionsField, base_instructions_field};
use super::super::line::{Place, RolloutLine};
use super::super::lineage::{codex_home, holds_prefix};
use super::super::reader::{Instructions, LineSource, open_rollout, read_lines, rollout_text};
use super::super::report::{LoadReport, ReadMode};
use super::super::stored_report::{AncestorCut, PrefixReport};
use super::super::validate::Format;
use super::replay::{Replay, Replayed};
use super::scan::{self, Reference, ScanFact, line_facts, prefix_fact, reverse_scan, stored_fact};
use super::turn::Tracked;
use super::world;
use super::{
    Covered, FallbackReason, ResumeOptions, ResumeSource, Resumed, split_facts, turn_context_raw,
    turn_context_value,
};

/// Why a resume through a snapshot stopped: the rollout cannot be read, or the snapshot cannot
/// stand for its prefix (the rollout must then be resumed in full).
pub(super) enum Stop {
    /// The rollout cannot be read.
    Error(RolloutError),
    /// The snapshot cannot stand for the rollout's prefix.
    Fallback(FallbackReason),
}

impl From<RolloutError> for Stop {
    fn from(error: RolloutError) -> Self {
        Stop::Error(error)
    }
}

impl From<FallbackReason> for Stop {
    fn from(reason: FallbackReason) -> Self {
        Stop::Fallback(reason)
    }
}

/// Resumes the rollout at `rollout` from the snapshot at `snapshot` plus the rollout's lines
/// after the prefix it covers, when the snapshot can stand for that prefix: it opens and
/// verifies, has the supported format version, was written with the same truncation policy for
/// an envelope-format rollout that still starts with the covered prefix (same length and BLAKE3
/// digest, ending at a line boundary). The reverse scan runs over the prefix's stored facts and
/// the later lines' facts, and the later lines are replayed onto the snapshot's history with its
/// earlier states: both are then a full resume's (`docs/snapshot-format.md`, "Resume").
///
/// # Errors
///
/// [`Stop::Error`] when the rollout itself cannot be read; every problem with the snapshot is a
/// [`Stop::Fallback`] instead.
pub(super) fn resume(
    rollout: &Path,
    snapshot: &Path,
    options: &ResumeOptions,
) -> Result<Resumed, Stop> {
    let (opened, thread_id) = open_usable(snapshot, options)?;
    let mut file = rollout_text(open_rollout(rollout)?, rollout)?;
    let mut hasher = blake3::Hasher::new();
    check_prefix(&mut file, opened.header().rollout, &mut hasher, rollout)?;
    resume_after_prefix(opened, thread_id, file, rollout, snapshot, options, hasher)
}

/// Resumes a rollout read from a stream (standard input) through `snapshot`: the covered
/// prefix is read and kept while it is checked, so that when the snapshot cannot stand for it
/// the full resume replays those bytes and the rest of the stream, with the reason.
pub(super) fn resume_stream(
    mut reader: impl Read,
    label: &Path,
    snapshot: &Path,
    options: &ResumeOptions,
) -> Result<Resumed, RolloutError> {
    let full = |reader: &mut dyn Read, reason| {
        let mut resumed = super::resume_lines(reader, label, options)?;
        resumed.source = ResumeSource::Fallback(reason);
        Ok(resumed)
    };
    let (opened, thread_id) = match open_usable(snapshot, options) {
        Ok(usable) => usable,
        Err(reason) => return full(&mut reader, reason),
    };
    let covered = opened.header().rollout;
    let mut prefix = Vec::new();
    Read::by_ref(&mut reader)
        .take(covered.bytes)
        .read_to_end(&mut prefix)
        .map_err(|source| RolloutError::Io {
            path: label.to_owned(),
            source,
        })?;
    let mut hasher = blake3::Hasher::new();
    // The later lines are kept as they are read too: a snapshot can still turn out unusable
    // once they are read (its facts disagree with its flags), and the full resume needs them.
    let mut later = Kept {
        inner: reader,
        kept: Vec::new(),
    };
    let checked =
        check_prefix(&mut prefix.as_slice(), covered, &mut hasher, label).and_then(|()| {
            resume_after_prefix(
                opened, thread_id, &mut later, label, snapshot, options, hasher,
            )
        });
    match checked {
        Ok(resumed) => Ok(resumed),
        Err(Stop::Error(error)) => Err(error),
        Err(Stop::Fallback(reason)) => {
            let Kept { inner, kept } = later;
            full(
                &mut prefix.as_slice().chain(kept.as_slice()).chain(inner),
                reason,
            )
        }
    }
}

/// A reader that keeps a copy of what it read.
struct Kept<R> {
    inner: R,
    kept: Vec<u8>,
}

impl<R: Read> Read for Kept<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.kept.extend_from_slice(&buffer[..read]);
        Ok(read)
    }
}

/// Resumes from the opened snapshot plus the lines `file` holds after the covered prefix (already
/// read and checked, its bytes in `hasher`).
fn resume_after_prefix(
    opened: Snapshot,
    thread_id: ThreadId,
    file: impl Read,
    rollout: &Path,
    snapshot: &Path,
    options: &ResumeOptions,
    mut hasher: blake3::Hasher,
) -> Result<Resumed, Stop> {
    let covered = opened.header().rollout;
    // The reader goes on from the prefix's report, so that the report is a full resume's.
    let before = match &opened.state().load_report {
        Some(stored) => PrefixReport::from_json(stored).map_err(|detail| {
            FallbackReason::Unreadable(SnapshotError::InvalidArchive {
                path: snapshot.to_owned(),
                detail,
            })
        })?,
        None => PrefixReport::default(),
    };
    check_lineage(&before.lineage, rollout, snapshot, options)?;
    let lineage = before.lineage.clone();
    let mut tail = Vec::new();
    let source = LineSource {
        before,
        format: Some(Format::Envelope),
        instructions: known_instructions(opened.state()),
        lines_before: covered.lines,
        bytes_before: covered.bytes,
        thread_id: Some(thread_id),
        complete_lines_only: options.snapshot_ready,
        hasher: options.snapshot_ready.then_some(&mut hasher),
        ..LineSource::whole(rollout, options.read)
    };
    let read = read_lines(file, source, &mut |line| tail.push(line))?;
    let position = options.snapshot_ready.then(|| RolloutPosition {
        lines: read.report.lines,
        bytes: read.end,
        digest: hasher.finalize(),
    });
    let (history, state, prefix_facts) = opened.into_parts();
    let after_rollback = matches!(prefix_facts.last(), Some(PrefixFact::RolledBack(_)));
    let later = line_facts(&tail, after_rollback);
    let scanned = scan_through(&prefix_facts, &later, &state, snapshot)?;
    let mut resumed = replay_onto(history, &state, &tail, rollout, read.report, scanned)?;
    resumed.source = ResumeSource::Snapshot { covered };
    let facts = (options.snapshot_ready || options.keep_scan_facts).then(|| {
        let mut facts = prefix_facts;
        facts.extend(later.into_iter().map(stored_fact));
        facts
    });
    let (covered_facts, scan_facts) = split_facts(facts, options);
    resumed.covered = position.map(|position| Covered {
        position,
        facts: covered_facts,
        lineage,
    });
    resumed.scan_facts = scan_facts;
    Ok(resumed)
}

/// Checks that every ancestor the covered prefix continues (`lineage`, empty for a file on its
/// own) still holds the bytes up to its cut that the snapshot stands for, found by rollout id
/// under the Codex home, as the full resume finds it.
fn check_lineage(
    lineage: &[AncestorCut],
    rollout: &Path,
    snapshot: &Path,
    options: &ResumeOptions,
) -> Result<(), FallbackReason> {
    if lineage.is_empty() {
        return Ok(());
    }
    let home = codex_home(rollout, options.codex_home.as_deref());
    for cut in lineage {
        let digest = blake3::Hash::from_hex(&cut.digest)
            .map_err(|error| unusable(snapshot, &format!("an ancestor's digest: {error}")))?;
        let holds = home
            .as_deref()
            .is_some_and(|home| holds_prefix(home, cut.rollout_id, cut.end_byte_offset, &digest));
        if !holds {
            return Err(FallbackReason::LineageChanged {
                rollout_id: cut.rollout_id,
            });
        }
    }
    Ok(())
}

/// Opens the snapshot, when a resume with `options` may use it at all: a lenient read, a snapshot
/// that opens with the supported format version, the truncation policy asked for, an envelope
/// rollout, and a covered prefix that holds the `session_meta` line (whose thread id is
/// returned; a full resume needs it, and decides the format from the first line).
fn open_usable(
    snapshot: &Path,
    options: &ResumeOptions,
) -> Result<(Snapshot, ThreadId), FallbackReason> {
    if options.read.mode == ReadMode::Strict {
        return Err(FallbackReason::StrictMode);
    }
    let opened =
        open_snapshot(snapshot, SnapshotOptions::default()).map_err(|error| match error {
            SnapshotError::OlderVersion {
                found, supported, ..
            } => FallbackReason::OldVersion { found, supported },
            error => FallbackReason::Unreadable(error),
        })?;
    if opened.state().transcript.is_some() {
        return Err(FallbackReason::OtherFormat {
            snapshot: "claude-code",
        });
    }
    if opened.history().truncation() != options.truncation {
        return Err(FallbackReason::TruncationMismatch {
            snapshot: opened.history().truncation(),
            requested: options.truncation,
        });
    }
    if opened.state().legacy {
        return Err(FallbackReason::LegacyFormat);
    }
    match opened.state().thread_id {
        Some(thread_id) if opened.header().rollout.lines > 0 => Ok((opened, thread_id)),
        _ => Err(FallbackReason::NoSessionMeta),
    }
}

/// Hashes the rollout's first `covered.bytes` bytes, leaving `file` after them, and checks that
/// they are the covered prefix: as long, with its digest, ending with a newline.
fn check_prefix(
    file: &mut impl Read,
    covered: RolloutPosition,
    hasher: &mut blake3::Hasher,
    rollout: &Path,
) -> Result<(), Stop> {
    let prefix = hash_prefix(file, covered.bytes, hasher).map_err(|source| RolloutError::Io {
        path: rollout.to_owned(),
        source,
    })?;
    if prefix.bytes < covered.bytes {
        return Err(FallbackReason::RolloutShorter {
            rollout_bytes: prefix.bytes,
            covered_bytes: covered.bytes,
        }
        .into());
    }
    if hasher.finalize() != covered.digest {
        return Err(FallbackReason::PrefixChanged.into());
    }
    // The covered prefix holds lines (`open_usable`), so it ends with a newline; a header that
    // says it covers lines but no bytes (only a crafted one can) does not, and is not taken as
    // covering nothing (which would replay the whole rollout onto its history).
    if prefix.last != Some(b'\n') {
        return Err(FallbackReason::NotAtLineBoundary.into());
    }
    // The digest vouches for the bytes, not for the header's count of their lines (a crafted
    // header can say anything): the lines after the prefix are numbered from it.
    if prefix.lines != covered.lines {
        return Err(FallbackReason::LineCountMismatch {
            covered_lines: covered.lines,
            prefix_lines: prefix.lines,
        }
        .into());
    }
    Ok(())
}

/// The session's base instructions as far as the snapshot knows them: the prefix's, or, when the
/// prefix records none, to be looked for in the later lines as a full resume would.
fn known_instructions(state: &PrefixState) -> Instructions {
    let Some(raw) = &state.base_instructions else {
        return Instructions::Seek;
    };
    let payload = format!(r#"{{"base_instructions":{}}}"#, raw.get());
    match base_instructions_field(&payload) {
        InstructionsField::Set(instructions) => Instructions::Known(Some(instructions)),
        // Written by this library from instructions it read: only a crafted snapshot holds
        // another shape, and then none are reported.
        InstructionsField::Unset | InstructionsField::Unknown(_) => Instructions::Known(None),
    }
}

/// What the reverse scan over the prefix's stored facts and the later lines' facts (the scan of
/// a full resume) settled on.
struct Scanned {
    previous_turn_settings: Option<Box<RawValue>>,
    reference: Option<Arc<Value>>,
    ends_inside_turn: bool,
}

/// Runs the reverse scan over the prefix's facts and the later lines'. A stored payload the scan
/// settles on that is not JSON, or stored facts that disagree with the resume flags on whether
/// the prefix ends inside a turn (only a crafted snapshot has either), make resume fall back.
fn scan_through(
    prefix_facts: &[PrefixFact],
    later: &[ScanFact<'_, &RolloutLine>],
    state: &PrefixState,
    snapshot: &Path,
) -> Result<Scanned, FallbackReason> {
    let facts: Vec<ScanFact<'_, Context<'_>>> = prefix_facts
        .iter()
        .map(|fact| prefix_fact(fact).map(Context::Stored))
        .chain(later.iter().map(|fact| fact.map(Context::Line)))
        .collect();
    if scan::ends_inside_turn(&facts[..prefix_facts.len()]) != state.ends_inside_turn {
        return Err(unusable(
            snapshot,
            &"its scan facts and its resume flags disagree on whether the prefix ends inside a turn",
        ));
    }
    let scan = reverse_scan(&facts);
    let previous_turn_settings = scan
        .settings
        .map(|context| context.raw(snapshot))
        .transpose()?;
    let reference = match scan.reference {
        Reference::Latest(context) => Some(context.value(snapshot)?),
        Reference::NeverSet | Reference::Cleared => None,
    };
    Ok(Scanned {
        previous_turn_settings,
        reference,
        ends_inside_turn: scan::ends_inside_turn(&facts),
    })
}

/// Replays `tail` onto a snapshot's history (whose entries' lines are unknown, 0), from inside
/// its open turn, with what the scan settled on: the resumed history and what was read of it
/// (its source and covered prefix are the caller's to set).
fn replay_onto(
    history: History,
    state: &PrefixState,
    tail: &[RolloutLine],
    rollout: &Path,
    mut report: LoadReport,
    scanned: Scanned,
) -> Result<Resumed, RolloutError> {
    let start = history.world_state_baseline().cloned().map(Arc::new);
    let entry_lines = vec![Place::UNKNOWN; history.len()];
    let open_turn = state.open_turn.as_ref().map(Tracked::from_stored);
    let mut replay = Replay::new(history, entry_lines, open_turn);
    replay.lines(tail, rollout)?;
    let Replayed {
        mut history,
        entry_lines,
        legacy_compaction,
        open_turn,
        ..
    } = replay.finish(rollout)?;
    let legacy_compaction = state.legacy_compaction || legacy_compaction;
    history.set_shared_reference_context_item(scanned.reference.filter(|_| !legacy_compaction));
    history.set_shared_world_state_baseline(world::rebuild_baseline(
        tail,
        start,
        &mut report.world_state,
    ));
    report.incomplete_turn = open_turn.as_ref().map(|turn| turn.report(&history));
    Ok(Resumed {
        path: rollout.to_owned(),
        history,
        report,
        previous_turn_settings: scanned.previous_turn_settings,
        ends_inside_turn: scanned.ends_inside_turn,
        compactions: None,
        source: ResumeSource::Rollout,
        covered: None,
        entry_lines,
        lineage: Vec::new(),
        legacy_compaction,
        open_turn: open_turn.as_ref().and_then(Tracked::stored),
        scan_facts: None,
    })
}

/// A `turn_context` payload the scan of a resume through a snapshot can settle on: stored in the
/// snapshot, or on a later line.
#[derive(Clone, Copy)]
enum Context<'a> {
    Stored(&'a str),
    Line(&'a RolloutLine),
}

impl Context<'_> {
    /// The payload as text (previous-turn settings). A stored payload that is not JSON (a
    /// damaged or crafted snapshot opened as the program's own) makes resume fall back.
    fn raw(self, snapshot: &Path) -> Result<Box<RawValue>, FallbackReason> {
        match self {
            Context::Stored(text) => RawValue::from_string(text.to_owned())
                .map_err(|error| unreadable_payload(snapshot, &error)),
            // The line's payload as the reader kept it (what a full resume takes).
            Context::Line(line) => turn_context_raw(line)
                .ok_or_else(|| unreadable_payload(snapshot, &"not a turn_context line")),
        }
    }

    /// The payload as a value (the reference context item).
    fn value(self, snapshot: &Path) -> Result<Arc<Value>, FallbackReason> {
        match self {
            Context::Stored(text) => serde_json::from_str(text)
                .map(Arc::new)
                .map_err(|error| unreadable_payload(snapshot, &error)),
            Context::Line(line) => turn_context_value(line)
                .ok_or_else(|| unreadable_payload(snapshot, &"not a turn_context line")),
        }
    }
}

/// A stored `turn_context` payload that does not parse: the snapshot is unusable.
fn unreadable_payload(snapshot: &Path, error: &dyn fmt::Display) -> FallbackReason {
    unusable(
        snapshot,
        &format_args!("a stored turn_context payload is not JSON: {error}"),
    )
}

/// A snapshot whose contents resume cannot use, saying why.
fn unusable(snapshot: &Path, detail: &dyn fmt::Display) -> FallbackReason {
    FallbackReason::Unreadable(SnapshotError::InvalidArchive {
        path: snapshot.to_owned(),
        detail: detail.to_string(),
    })
}

/// What hashing a rollout's prefix found.
pub(crate) struct Prefix {
    /// Bytes hashed: the covered length, or less when the rollout is shorter.
    pub(crate) bytes: u64,
    /// The last byte hashed.
    pub(crate) last: Option<u8>,
    /// Newlines among them: the lines of the prefix.
    pub(crate) lines: u64,
}

/// Hashes the first `len` bytes of `file` (fewer if it is shorter), leaving it positioned after
/// them. An interrupted read is tried again; any other read error is returned.
pub(crate) fn hash_prefix(
    file: &mut impl Read,
    len: u64,
    hasher: &mut blake3::Hasher,
) -> std::io::Result<Prefix> {
    let mut prefix = Prefix {
        bytes: 0,
        last: None,
        lines: 0,
    };
    let mut buffer = vec![0u8; 64 * 1024];
    let mut limited = Read::by_ref(file).take(len);
    loop {
        let read = match limited.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        hasher.update(&buffer[..read]);
        prefix.lines += memchr::memchr_iter(b'\n', &buffer[..read]).count() as u64;
        prefix.last = buffer[..read].last().copied();
        prefix.bytes += read as u64;
    }
    Ok(prefix)
}

impl Resumed {
    /// Writes a snapshot of this history to `path`, standing for the rollout prefix it was
    /// resumed from. A later [`resume_file`](super::resume_file) with this snapshot then reads
    /// only the lines after that prefix, and continues it exactly whatever lines follow.
    ///
    /// The snapshot replaces, atomically, a snapshot or an empty file at `path`; anything else
    /// there (the rollout itself, through a link too, or any other file) is refused
    /// ([`Resumed::write_snapshot_with`] with [`Replace::Anything`] replaces it).
    ///
    /// # Errors
    ///
    /// [`SnapshotError::NotCovered`] when this resume did not record the prefix it covers (resume
    /// with [`ResumeOptions::snapshot_ready`]); [`SnapshotError::WouldReplace`] when `path` holds
    /// something else than a snapshot; otherwise as writing any snapshot:
    /// [`SnapshotError::Io`] naming the step, [`SnapshotError::InvalidArchive`].
    pub fn write_snapshot(&self, path: impl AsRef<Path>) -> Result<SnapshotHeader, SnapshotError> {
        self.write_snapshot_with(path, Replace::SnapshotsOnly)
    }

    /// [`Resumed::write_snapshot`], replacing what `replace` allows.
    ///
    /// # Errors
    ///
    /// As [`Resumed::write_snapshot`].
    pub fn write_snapshot_with(
        &self,
        path: impl AsRef<Path>,
        replace: Replace,
    ) -> Result<SnapshotHeader, SnapshotError> {
        let path = path.as_ref();
        let covered = self
            .covered
            .as_ref()
            .ok_or_else(|| SnapshotError::NotCovered {
                path: path.to_owned(),
            })?;
        let base_instructions = match &self.report.base_instructions {
            Some(instructions) => Some(serde_json::value::to_raw_value(instructions).map_err(
                |error| SnapshotError::InvalidArchive {
                    path: path.to_owned(),
                    detail: format!("base instructions: {error}"),
                },
            )?),
            None => None,
        };
        let state = PrefixState {
            thread_id: Some(self.thread_id()),
            previous_turn_settings: self.previous_turn_settings.clone(),
            base_instructions,
            load_report: Some(
                PrefixReport {
                    lineage: covered.lineage.clone(),
                    ..PrefixReport::of(&self.report)
                }
                .to_json(),
            ),
            transcript: None,
            ends_inside_turn: self.ends_inside_turn,
            legacy: self.report.legacy,
            legacy_compaction: self.legacy_compaction,
            open_turn: self.open_turn.clone(),
        };
        let target = SnapshotTarget {
            replace,
            source: Some(&self.path),
        };
        write_snapshot(
            path,
            target,
            &self.history,
            covered.position,
            &state,
            &covered.facts,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FallbackReason, ResumeOptions, resume_file, resume_reader};
    use super::hash_prefix;
    use crate::history::DEFAULT_TRUNCATION;
    use crate::snapshot::write_snapshot;
    use crate::snapshot::{OpenTurn, PrefixState, Replace, SnapshotError, SnapshotTarget};

    fn line(kind: &str, payload: &str) -> String {
        format!(r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
    }

    const META: &str = r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z","cwd":"/w","originator":"test","cli_version":"0.0.0","source":"cli"}"#;

    fn text(lines: &[String]) -> String {
        lines.iter().map(|line| format!("{line}\n")).collect()
    }

    /// A snapshot whose scan facts and resume flags disagree on whether the prefix ends inside a
    /// turn (only a crafted one: the writer stores what one resume gave) is not used: resume
    /// falls back, naming the disagreement, and reports what a full resume does. Both ways: facts
    /// that end inside a turn with flags that say not (and no open turn), and the reverse.
    #[test]
    fn a_snapshot_whose_facts_and_flags_disagree_on_the_open_turn_falls_back() {
        let dir = tempfile::tempdir().expect("dir");
        let rollout = dir.path().join("r.jsonl");
        let snapshot = dir.path().join("r.snap");
        let inside = vec![
            line("session_meta", META),
            line("event_msg", r#"{"type":"task_started","turn_id":"t1"}"#),
            line(
                "response_item",
                r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
            ),
        ];
        let mut outside = inside.clone();
        outside.push(line(
            "event_msg",
            r#"{"type":"task_complete","turn_id":"t1"}"#,
        ));
        let later = line(
            "response_item",
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}"#,
        );
        for (prefix, crafted_inside) in [(inside, false), (outside, true)] {
            std::fs::write(&rollout, text(&prefix)).expect("written");
            let ready = ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready();
            let resumed = resume_file(&rollout, &ready).expect("resumes");
            assert_eq!(resumed.ends_inside_turn(), !crafted_inside);
            let state = PrefixState {
                thread_id: Some(resumed.thread_id()),
                ends_inside_turn: crafted_inside,
                open_turn: crafted_inside.then_some(OpenTurn {
                    turn_id: None,
                    started_line: 2,
                    start: 0,
                }),
                ..PrefixState::default()
            };
            let covered = resumed.covered.as_ref().expect("covered");
            let target = SnapshotTarget {
                replace: Replace::Anything,
                source: None,
            };
            write_snapshot(
                &snapshot,
                target,
                resumed.history(),
                covered.position,
                &state,
                &covered.facts,
            )
            .expect("written");
            let mut lines = prefix.clone();
            lines.push(later.clone());
            std::fs::write(&rollout, text(&lines)).expect("written");
            let options = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot);
            let through = resume_file(&rollout, &options).expect("resumes");
            assert!(
                matches!(
                    through.fallback_reason(),
                    Some(FallbackReason::Unreadable(SnapshotError::InvalidArchive { detail, .. }))
                        if detail.contains("disagree on whether the prefix ends inside a turn")
                ),
                "{:?}",
                through.source()
            );
            let full = resume_file(&rollout, &ResumeOptions::new(DEFAULT_TRUNCATION)).expect("ok");
            assert_eq!(through.history(), full.history());
            assert_eq!(through.ends_inside_turn(), full.ends_inside_turn());
            assert_eq!(through.incomplete_turn(), full.incomplete_turn());
            // From a stream, found only once the later lines are read: they were kept, and the
            // full resume has them.
            let bytes = std::fs::read(&rollout).expect("read");
            let streamed = resume_reader(bytes.as_slice(), "stream", &options).expect("resumes");
            assert!(matches!(
                streamed.fallback_reason(),
                Some(FallbackReason::Unreadable(
                    SnapshotError::InvalidArchive { .. }
                ))
            ));
            assert_eq!(streamed.history(), full.history());
            assert_eq!(streamed.report(), full.report());
        }
    }

    /// A reader that fails once with `error`, then reads `bytes`.
    struct FailsOnce {
        error: Option<std::io::ErrorKind>,
        bytes: &'static [u8],
    }

    impl std::io::Read for FailsOnce {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            match self.error.take() {
                Some(kind) => Err(kind.into()),
                None => self.bytes.read(buffer),
            }
        }
    }

    /// Hashing the prefix reads an interrupted read again, and returns any other read error at
    /// once (not retried, and not hashed past): the caller names the rollout in its error.
    #[test]
    fn hashing_the_prefix_retries_an_interrupted_read_and_returns_any_other_error() {
        use std::io::ErrorKind;
        let bytes: &'static [u8] = b"{\"a\":1}\n{\"b\":2}\n";
        let mut hasher = blake3::Hasher::new();
        let mut reader = FailsOnce {
            error: Some(ErrorKind::Interrupted),
            bytes,
        };
        let prefix = hash_prefix(&mut reader, 8, &mut hasher).expect("read again");
        assert_eq!((prefix.bytes, prefix.last), (8, Some(b'\n')));
        assert_eq!(hasher.finalize(), blake3::hash(&bytes[..8]));
        assert_eq!(reader.bytes, &bytes[8..], "positioned after the prefix");
        for kind in [ErrorKind::PermissionDenied, ErrorKind::UnexpectedEof] {
            let mut hasher = blake3::Hasher::new();
            let mut reader = FailsOnce {
                error: Some(kind),
                bytes,
            };
            let error = hash_prefix(&mut reader, 8, &mut hasher)
                .err()
                .expect("returned");
            assert_eq!(error.kind(), kind);
            assert_eq!(reader.bytes, bytes, "nothing read after the error");
        }
    }
}
