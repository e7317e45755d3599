//! Resuming through a snapshot: when a snapshot may stand for a rollout's prefix, reading only
//! the lines after it, and writing a snapshot that stands for what a resume covered (format
//! version 2: with the prefix's scan facts and the history's earlier states).

use std::fmt;
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::history::History;
use crate::snapshot::{
    PrefixFact, PrefixState, Replace, RolloutPosition, SnapshotError, SnapshotHeader,
    SnapshotOptions, SnapshotTarget, open_snapshot, write_snapshot,
};

use super::super::error::RolloutError;
use super::super::line::{Event, Facts, LineKind, RolloutLine};
use super::super::line::{InstructionsField, base_instructions_field};
use super::super::reader::{Instructions, LineSource, open_rollout, read_lines};
use super::super::report::ReadMode;
use super::super::validate::Format;
use super::replay::{Replay, Replayed};
use super::scan::{self, Reference, ScanFact, line_facts, prefix_fact, reverse_scan, stored_fact};
use super::turn::Tracked;
use super::world;
use super::{FallbackReason, ResumeOptions, ResumeSource, Resumed, turn_context_raw};

/// What kind of line after a version 1 snapshot's prefix makes resume fall back: replaying it onto
/// the snapshot would not give what a full resume gives. (A version 2 snapshot holds the scan facts
/// and earlier states of its prefix, and no later line makes resume through it fall back.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaterLine {
    /// A `thread_rolled_back` event: it can discard covered turns and compactions.
    Rollback,
    /// A turn event (`task_started`, `task_complete`, their `turn_*` aliases, `turn_aborted`): it
    /// moves turn segments.
    TurnEvent,
    /// A `turn_context` line: it can change the previous-turn settings and the reference
    /// context item.
    TurnContext,
    /// A `compacted` line: it can become the base.
    Compaction,
    /// An `inter_agent_communication` line: it counts as a user turn.
    InterAgent,
    /// A `user_message` event inside the turn the covered prefix ends in.
    UserMessageInsideTurn,
    /// A user-turn item inside the turn the covered prefix ends in.
    UserTurnInsideTurn,
}

impl LaterLine {
    /// The snake_case name (its JSON form).
    pub fn name(self) -> &'static str {
        match self {
            LaterLine::Rollback => "rollback",
            LaterLine::TurnEvent => "turn_event",
            LaterLine::TurnContext => "turn_context",
            LaterLine::Compaction => "compaction",
            LaterLine::InterAgent => "inter_agent",
            LaterLine::UserMessageInsideTurn => "user_message_inside_turn",
            LaterLine::UserTurnInsideTurn => "user_turn_inside_turn",
        }
    }
}

impl serde::Serialize for LaterLine {
    /// Its snake_case [`name`](LaterLine::name).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for LaterLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LaterLine::Rollback => "a rollback",
            LaterLine::TurnEvent => "a turn event",
            LaterLine::TurnContext => "a turn_context line",
            LaterLine::Compaction => "a compaction",
            LaterLine::InterAgent => "an inter-agent line",
            LaterLine::UserMessageInsideTurn => {
                "a user_message event inside the turn the snapshot ends in"
            }
            LaterLine::UserTurnInsideTurn => "a user turn inside the turn the snapshot ends in",
        })
    }
}

/// The outcome of trying a snapshot.
pub(super) enum Attempt {
    /// The snapshot stood for the prefix.
    Resumed(Box<Resumed>),
    /// It could not; the rollout must be resumed in full.
    Fallback(FallbackReason),
}

/// Resumes the rollout at `rollout` from the snapshot at `snapshot` plus the rollout's lines
/// after the prefix it covers, when the snapshot can stand for that prefix: it opens and verifies,
/// was written with the same truncation policy for an envelope-format rollout that still starts
/// with the covered prefix (same length and BLAKE3 digest, ending at a line boundary), and — for
/// a version 1 snapshot only — no later line could change what the prefix means ([`LaterLine`]).
/// Through a version 2 snapshot the reverse scan runs over the prefix's stored facts and the
/// later lines' facts, and the later lines are replayed onto the snapshot's history with its
/// earlier states: both are then a full resume's.
///
/// # Errors
///
/// [`RolloutError`] when the rollout itself cannot be read; every problem with the snapshot is a
/// fallback instead.
pub(super) fn resume(
    rollout: &Path,
    snapshot: &Path,
    options: &ResumeOptions,
) -> Result<Attempt, RolloutError> {
    let fallback = |reason| Ok(Attempt::Fallback(reason));
    if options.read.mode == ReadMode::Strict {
        return fallback(FallbackReason::StrictMode);
    }
    let opened = match open_snapshot(snapshot, SnapshotOptions::default()) {
        Ok(opened) => opened,
        Err(error) => return fallback(FallbackReason::Unreadable(error)),
    };
    if opened.history().truncation() != options.truncation {
        return fallback(FallbackReason::TruncationMismatch {
            snapshot: opened.history().truncation(),
            requested: options.truncation,
        });
    }
    if opened.state().legacy {
        return fallback(FallbackReason::LegacyFormat);
    }
    let version = opened.header().format_version;
    if options.snapshot_ready && version < 2 {
        return fallback(FallbackReason::OldVersion { version });
    }
    // A full resume needs the first `session_meta`, and decides the format from the first line:
    // the covered prefix must hold them.
    let covered = opened.header().rollout;
    let Some(thread_id) = opened.state().thread_id.filter(|_| covered.lines > 0) else {
        return fallback(FallbackReason::NoSessionMeta);
    };
    let read_error = |source| RolloutError::Io {
        path: rollout.to_owned(),
        source,
    };
    let mut file = open_rollout(rollout)?;
    let mut hasher = blake3::Hasher::new();
    // A snapshot older than version 3 holds no world-state baseline: it can stand for a prefix
    // only when that prefix has no `world_state` line, which the hashing pass looks for.
    let version = opened.header().format_version;
    let mut search = (version < 3).then(WorldStateSearch::default);
    let prefix =
        hash_prefix(&mut file, covered.bytes, &mut hasher, search.as_mut()).map_err(read_error)?;
    if prefix.bytes < covered.bytes {
        return fallback(FallbackReason::RolloutShorter {
            rollout_bytes: prefix.bytes,
            covered_bytes: covered.bytes,
        });
    }
    if hasher.finalize() != covered.digest {
        return fallback(FallbackReason::PrefixChanged);
    }
    // The covered prefix holds lines (`covered.lines > 0` above), so it ends with a newline; a
    // header that says it covers lines but no bytes (only a crafted one can) does not, and is not
    // taken as covering nothing (which would replay the whole rollout onto its history).
    if prefix.last != Some(b'\n') {
        return fallback(FallbackReason::NotAtLineBoundary);
    }
    if search.is_some_and(|search| search.found) {
        return fallback(FallbackReason::NoWorldState { version });
    }
    // The session's base instructions: a version 2 snapshot holds the prefix's, and when the
    // prefix records none, the later lines are read for them as a full resume would; a version 1
    // snapshot did not keep them (none are reported).
    let instructions = if opened.header().format_version >= 2 {
        match &opened.state().base_instructions {
            Some(raw) => {
                let payload = format!(r#"{{"base_instructions":{}}}"#, raw.get());
                match base_instructions_field(&payload) {
                    InstructionsField::Set(instructions) => Instructions::Known(Some(instructions)),
                    // Written by this library from instructions it read: only a crafted
                    // snapshot holds another shape, and then none are reported.
                    InstructionsField::Unset | InstructionsField::Unknown(_) => {
                        Instructions::Known(None)
                    }
                }
            }
            None => Instructions::Seek,
        }
    } else {
        Instructions::Known(None)
    };
    let mut tail = Vec::new();
    let source = LineSource {
        format: Some(Format::Envelope),
        instructions,
        lines_before: covered.lines,
        bytes_before: covered.bytes,
        thread_id: Some(thread_id),
        complete_lines_only: options.snapshot_ready,
        hasher: options.snapshot_ready.then_some(&mut hasher),
        ..LineSource::whole(rollout, options.read)
    };
    let read = read_lines(file, source, &mut |line| tail.push(line))?;
    let (history, state, prefix_facts) = opened.into_parts();
    let position = options.snapshot_ready.then(|| RolloutPosition {
        lines: read.report.lines,
        bytes: read.end,
        digest: hasher.finalize(),
    });
    let Some(prefix_facts) = prefix_facts else {
        // Version 1: no scan facts of the prefix, so the lines that could change what the scan
        // settles on make resume fall back.
        if let Some(reason) = first_later_line(&tail, state.ends_inside_turn) {
            return fallback(reason);
        }
        // No later turn event: the rollout ends inside the prefix's turn, whose start a
        // version 1 snapshot does not hold.
        if state.ends_inside_turn {
            return fallback(FallbackReason::NoOpenTurn { version });
        }
        let mut report = read.report;
        let start = history.world_state_baseline().cloned().map(Arc::new);
        let replay = replay_onto(history, &tail, rollout, None)?;
        let mut history = replay.history;
        history.set_shared_world_state_baseline(world::rebuild_baseline(
            &tail,
            start,
            &mut report.world_state,
        ));
        return Ok(Attempt::Resumed(Box::new(Resumed {
            path: rollout.to_owned(),
            history,
            report,
            previous_turn_settings: state.previous_turn_settings,
            ends_inside_turn: false,
            compactions: None,
            source: ResumeSource::Snapshot { covered },
            covered: position,
            entry_lines: replay.entry_lines,
            prefix_facts: None,
            legacy_compaction: replay.legacy_compaction,
            open_turn: None,
        })));
    };
    // Version 2: the reverse scan over the prefix's facts and the later lines' is the scan of a
    // full resume; the replay onto the snapshot's history (earlier states included) its replay.
    let after_rollback = matches!(prefix_facts.last(), Some(PrefixFact::RolledBack(_)));
    let later = line_facts(&tail, after_rollback);
    let facts: Vec<ScanFact<'_, Context<'_>>> = prefix_facts
        .iter()
        .map(|fact| prefix_fact(fact).map(Context::Stored))
        .chain(later.iter().map(|fact| fact.map(Context::Line)))
        .collect();
    let scan = reverse_scan(&facts);
    let previous_turn_settings = match scan
        .settings
        .map(|context| context.raw(snapshot))
        .transpose()
    {
        Ok(settings) => settings,
        Err(reason) => return fallback(reason),
    };
    let reference = match scan.reference {
        Reference::Latest(context) => match context.value(snapshot) {
            Ok(value) => Some(value),
            Err(reason) => return fallback(reason),
        },
        Reference::NeverSet | Reference::Cleared => None,
    };
    let ends_inside_turn = scan::ends_inside_turn(&facts);
    drop(facts);
    // The rollout ends inside the turn the prefix ends inside (no later turn event): a snapshot
    // older than version 4 does not hold where that turn's items begin.
    if ends_inside_turn && state.open_turn.is_none() && !later.iter().any(is_turn_event) {
        return fallback(FallbackReason::NoOpenTurn { version });
    }
    let start = history.world_state_baseline().cloned().map(Arc::new);
    let open_turn = state.open_turn.as_ref().map(Tracked::from_stored);
    let replay = replay_onto(history, &tail, rollout, open_turn)?;
    let legacy_compaction = state.legacy_compaction || replay.legacy_compaction;
    let mut history = replay.history;
    history.set_shared_reference_context_item(reference.filter(|_| !legacy_compaction));
    let mut report = read.report;
    history.set_shared_world_state_baseline(world::rebuild_baseline(
        &tail,
        start,
        &mut report.world_state,
    ));
    report.incomplete_turn = replay.open_turn.as_ref().map(|turn| turn.report(&history));
    let prefix_facts = options.snapshot_ready.then(|| {
        let mut all = prefix_facts;
        all.extend(later.into_iter().map(stored_fact));
        all
    });
    Ok(Attempt::Resumed(Box::new(Resumed {
        path: rollout.to_owned(),
        history,
        report,
        previous_turn_settings,
        ends_inside_turn,
        compactions: None,
        source: ResumeSource::Snapshot { covered },
        covered: position,
        entry_lines: replay.entry_lines,
        prefix_facts,
        legacy_compaction,
        open_turn: replay.open_turn.as_ref().and_then(Tracked::stored),
    })))
}

/// Whether a scan fact is a turn event (`task_started`, `task_complete`, `turn_aborted`).
fn is_turn_event<C>(fact: &ScanFact<'_, C>) -> bool {
    matches!(fact, ScanFact::TurnStarted(_) | ScanFact::TurnEnded(_))
}

/// Replays `tail` onto a snapshot's history, whose entries' lines are unknown (0).
fn replay_onto(
    history: History,
    tail: &[RolloutLine],
    rollout: &Path,
    open_turn: Option<Tracked>,
) -> Result<Replayed, RolloutError> {
    let entry_lines = vec![0; history.len()];
    let mut replay = Replay::new(history, entry_lines, open_turn);
    replay.lines(tail, rollout)?;
    replay.finish(rollout)
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
            Context::Line(line) => match line.facts() {
                Facts::TurnContext { value, .. } => Ok(value.clone()),
                _ => Err(unreadable_payload(snapshot, &"not a turn_context line")),
            },
        }
    }
}

/// A stored `turn_context` payload that does not parse: the snapshot is unusable.
fn unreadable_payload(snapshot: &Path, error: &dyn fmt::Display) -> FallbackReason {
    FallbackReason::Unreadable(SnapshotError::InvalidArchive {
        path: snapshot.to_owned(),
        detail: format!("a stored turn_context payload is not JSON: {error}"),
    })
}

/// What hashing a rollout's prefix found.
struct Prefix {
    /// Bytes hashed: the covered length, or less when the rollout is shorter.
    bytes: u64,
    /// The last byte hashed.
    last: Option<u8>,
}

/// Looks, in bytes seen chunk by chunk, for what could spell a `world_state` line type: the
/// bytes `world_state`, or a `\u` escape (the only way a JSON string can spell those letters
/// otherwise). Finding neither proves the bytes hold no `world_state` line; finding one only
/// means they may (item text can hold the words), which is enough to not trust a snapshot
/// without a baseline. Hand-written over `memmem` because a match can straddle two chunks.
#[derive(Default)]
struct WorldStateSearch {
    /// The last bytes of the previous chunk (fewer than the longest needle).
    carry: Vec<u8>,
    found: bool,
}

impl WorldStateSearch {
    const NEEDLES: [&'static [u8]; 2] = [b"world_state", b"\\u"];
    const KEEP: usize = 10;

    fn update(&mut self, chunk: &[u8]) {
        if self.found {
            return;
        }
        let mut junction = std::mem::take(&mut self.carry);
        junction.extend_from_slice(&chunk[..chunk.len().min(Self::KEEP)]);
        let hit = |bytes: &[u8]| {
            Self::NEEDLES
                .iter()
                .any(|needle| memchr::memmem::find(bytes, needle).is_some())
        };
        self.found = hit(&junction) || hit(chunk);
        let keep_from = junction.len().saturating_sub(Self::KEEP);
        self.carry = if chunk.len() >= Self::KEEP {
            chunk[chunk.len() - Self::KEEP..].to_vec()
        } else {
            junction[keep_from..].to_vec()
        };
    }
}

/// Hashes the first `len` bytes of `file` (fewer if it is shorter), leaving it positioned after
/// them; with `search`, looks for a possible `world_state` line in them too. An interrupted read
/// is tried again; any other read error is returned.
fn hash_prefix(
    file: &mut impl Read,
    len: u64,
    hasher: &mut blake3::Hasher,
    mut search: Option<&mut WorldStateSearch>,
) -> std::io::Result<Prefix> {
    let mut prefix = Prefix {
        bytes: 0,
        last: None,
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
        if let Some(search) = search.as_deref_mut() {
            search.update(&buffer[..read]);
        }
        prefix.last = buffer[..read].last().copied();
        prefix.bytes += read as u64;
    }
    Ok(prefix)
}

/// Why these lines, appended after a prefix that a version 1 snapshot stands for, cannot simply be
/// replayed onto the snapshot's history (`None` when they can). Replaying is exact when the
/// reverse scan over the whole file would settle the same base, reference context and turn
/// settings as over the prefix alone: no rollback (it can discard covered turns), no compaction,
/// turn event, `turn_context` or inter-agent line (they move the scan's results), and, when the
/// prefix ends inside a turn, no user-turn item or `user_message` event (they would change that
/// turn).
fn first_later_line(
    lines: &[RolloutLine],
    prefix_ends_inside_turn: bool,
) -> Option<FallbackReason> {
    lines.iter().find_map(|line| {
        let what = match line.facts() {
            Facts::Event(Event::ThreadRolledBack { .. }) => Some(LaterLine::Rollback),
            Facts::Event(Event::TurnStarted { .. } | Event::TurnEnded { .. }) => {
                Some(LaterLine::TurnEvent)
            }
            Facts::Event(Event::UserMessage) if prefix_ends_inside_turn => {
                Some(LaterLine::UserMessageInsideTurn)
            }
            Facts::TurnContext { .. } => Some(LaterLine::TurnContext),
            Facts::Compacted(_) => Some(LaterLine::Compaction),
            Facts::None if line.is_user_turn_item() && prefix_ends_inside_turn => {
                Some(LaterLine::UserTurnInsideTurn)
            }
            Facts::None if line.kind == LineKind::InterAgentCommunication => {
                Some(LaterLine::InterAgent)
            }
            // The world-state baseline is rebuilt from the snapshot's and the later lines.
            Facts::Event(Event::Other | Event::UserMessage)
            | Facts::SessionMeta(_)
            | Facts::WorldState { .. }
            | Facts::None => None,
        }?;
        Some(FallbackReason::LaterLine {
            line: line.number,
            what,
        })
    })
}

impl Resumed {
    /// Writes a snapshot of this history to `path`, standing for the rollout prefix it was
    /// resumed from (with the thread id, previous-turn settings and turn state resume settled
    /// on). A later [`resume_file`](super::resume_file) with this snapshot then reads only the
    /// lines after that prefix. The snapshot has format version 2: it also holds the scan facts of
    /// the covered lines and the states before the compactions the history went through, so that
    /// a resume through it continues the prefix exactly, whatever lines follow.
    ///
    /// The snapshot replaces, atomically, a snapshot or an empty file at `path`; anything else
    /// there — the rollout itself (also through a link), another rollout, any other file — is
    /// left alone and refused ([`Resumed::write_snapshot_with`] and [`Replace::Anything`]
    /// replace it).
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
        let covered = self.covered.ok_or_else(|| SnapshotError::NotCovered {
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
            covered,
            &state,
            self.prefix_facts.as_deref(),
            crate::snapshot::SNAPSHOT_FORMAT_VERSION,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FallbackReason, ResumeOptions, resume_file};
    use super::{WorldStateSearch, hash_prefix};
    use crate::history::DEFAULT_TRUNCATION;
    use crate::snapshot::{Replace, SnapshotTarget, write_snapshot};

    fn line(kind: &str, payload: &str) -> String {
        format!(r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
    }

    /// A version 3 snapshot (written as that build wrote it: no open turn) of a prefix that ends
    /// inside a turn: a rollout still inside that turn falls back (`no_open_turn`) and reports
    /// what a full resume does, also when the later lines have scan facts but no turn event (a
    /// steer); once a later turn event follows, the snapshot is used.
    #[test]
    fn a_version_3_snapshot_falls_back_only_when_the_rollout_ends_in_its_open_turn() {
        let dir = tempfile::tempdir().expect("dir");
        let rollout = dir.path().join("r.jsonl");
        let snapshot = dir.path().join("r.snap");
        let meta = r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z","cwd":"/w","originator":"test","cli_version":"0.0.0","source":"cli"}"#;
        let mut lines = vec![
            line("session_meta", meta),
            line("event_msg", r#"{"type":"task_started","turn_id":"t1"}"#),
            line(
                "response_item",
                r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
            ),
        ];
        let text =
            |lines: &[String]| -> String { lines.iter().map(|l| format!("{l}\n")).collect() };
        std::fs::write(&rollout, text(&lines)).expect("written");
        let ready = ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready();
        let prefix = resume_file(&rollout, &ready).expect("resumes");
        assert!(prefix.incomplete_turn().is_some());
        let mut state = crate::snapshot::PrefixState {
            thread_id: Some(prefix.thread_id()),
            ends_inside_turn: prefix.ends_inside_turn,
            ..Default::default()
        };
        state.open_turn = None;
        let target = SnapshotTarget {
            replace: Replace::Anything,
            source: None,
        };
        let header = write_snapshot(
            &snapshot,
            target,
            prefix.history(),
            prefix.covered().expect("covered"),
            &state,
            prefix.prefix_facts.as_deref(),
            3,
        )
        .expect("written");
        assert_eq!(header.format_version, 3);
        lines.push(line(
            "response_item",
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}"#,
        ));
        std::fs::write(&rollout, text(&lines)).expect("written");
        let options = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot);
        let through = resume_file(&rollout, &options).expect("resumes");
        assert!(
            matches!(
                through.fallback_reason(),
                Some(FallbackReason::NoOpenTurn { version: 3 })
            ),
            "{:?}",
            through.source()
        );
        let full = resume_file(&rollout, &ResumeOptions::new(DEFAULT_TRUNCATION)).expect("ok");
        assert_eq!(through.incomplete_turn(), full.incomplete_turn());
        assert_eq!(through.incomplete_turn().map(|turn| turn.items), Some(2));
        // Later lines the scan has facts for, but no turn event (the user steers the turn): the
        // rollout still ends inside the prefix's turn.
        lines.push(user_message("steer"));
        lines.push(user_item("steer"));
        std::fs::write(&rollout, text(&lines)).expect("written");
        let through = resume_file(&rollout, &options).expect("resumes");
        assert!(
            matches!(
                through.fallback_reason(),
                Some(FallbackReason::NoOpenTurn { version: 3 })
            ),
            "{:?}",
            through.source()
        );
        let full = resume_file(&rollout, &ResumeOptions::new(DEFAULT_TRUNCATION)).expect("ok");
        assert!(full.ends_inside_turn());
        assert_eq!(through.history(), full.history());
        assert_eq!(through.incomplete_turn(), full.incomplete_turn());
        lines.push(line(
            "event_msg",
            r#"{"type":"task_complete","turn_id":"t1"}"#,
        ));
        std::fs::write(&rollout, text(&lines)).expect("written");
        let through = resume_file(&rollout, &options).expect("resumes");
        assert!(through.used_snapshot(), "{:?}", through.source());
        assert_eq!(through.incomplete_turn(), None);
    }

    const META: &str = r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z","cwd":"/w","originator":"test","cli_version":"0.0.0","source":"cli"}"#;

    fn text(lines: &[String]) -> String {
        lines.iter().map(|line| format!("{line}\n")).collect()
    }

    fn user_item(text: &str) -> String {
        line(
            "response_item",
            &format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
            ),
        )
    }

    fn user_message(text: &str) -> String {
        line(
            "event_msg",
            &format!(r#"{{"type":"user_message","message":"{text}","images":[]}}"#),
        )
    }

    fn assistant_item(text: &str) -> String {
        line(
            "response_item",
            &format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}"#
            ),
        )
    }

    /// Writes `prefix` as the rollout at `rollout`, resumes it and writes a version 1 snapshot
    /// of it to `snapshot` (no scan facts: as the first build wrote it). Returns whether the
    /// prefix ends inside a turn.
    fn v1_snapshot(
        rollout: &std::path::Path,
        snapshot: &std::path::Path,
        prefix: &[String],
    ) -> bool {
        std::fs::write(rollout, text(prefix)).expect("written");
        let ready = ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready();
        let resumed = resume_file(rollout, &ready).expect("resumes");
        let state = crate::snapshot::PrefixState {
            thread_id: Some(resumed.thread_id()),
            previous_turn_settings: resumed.previous_turn_settings.clone(),
            ends_inside_turn: resumed.ends_inside_turn,
            ..Default::default()
        };
        let target = SnapshotTarget {
            replace: Replace::Anything,
            source: None,
        };
        let header = write_snapshot(
            snapshot,
            target,
            resumed.history(),
            resumed.covered().expect("covered"),
            &state,
            None,
            1,
        )
        .expect("written");
        assert_eq!(header.format_version, 1);
        resumed.ends_inside_turn
    }

    /// The rules of a version 1 snapshot whose prefix ends inside a turn, each alone: a later
    /// `user_message` event or user item falls back naming its line, a rollout still inside the
    /// turn falls back (`no_open_turn`), and each gives exactly a full resume's history; after a
    /// prefix that ends outside a turn the same lines are replayed onto the snapshot, and that
    /// too is a full resume's history.
    #[test]
    fn a_version_1_snapshot_inside_a_turn_falls_back_on_each_rule_and_equals_a_full_resume() {
        use super::LaterLine;
        let dir = tempfile::tempdir().expect("dir");
        let rollout = dir.path().join("r.jsonl");
        let snapshot = dir.path().join("r.snap");
        let inside = vec![
            line("session_meta", META),
            line("event_msg", r#"{"type":"task_started","turn_id":"t1"}"#),
            user_message("one"),
            user_item("one"),
        ];
        let outside = vec![
            line("session_meta", META),
            line("event_msg", r#"{"type":"task_started","turn_id":"t1"}"#),
            user_message("one"),
            user_item("one"),
            assistant_item("answer"),
            line("event_msg", r#"{"type":"task_complete","turn_id":"t1"}"#),
        ];
        let full_options = ResumeOptions::new(DEFAULT_TRUNCATION);
        let options = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot);
        let cases: [(Vec<String>, Option<LaterLine>); 3] = [
            (
                vec![user_message("two")],
                Some(LaterLine::UserMessageInsideTurn),
            ),
            (vec![user_item("two")], Some(LaterLine::UserTurnInsideTurn)),
            (vec![assistant_item("more")], None),
        ];
        for (later, what) in cases {
            assert!(v1_snapshot(&rollout, &snapshot, &inside));
            let mut lines = inside.clone();
            lines.extend(later.iter().cloned());
            std::fs::write(&rollout, text(&lines)).expect("written");
            let through = resume_file(&rollout, &options).expect("resumes");
            let reason = through.fallback_reason();
            match what {
                Some(what) => assert!(
                    matches!(
                        reason,
                        Some(FallbackReason::LaterLine { line: 5, what: found }) if *found == what
                    ),
                    "{what:?}: {reason:?}"
                ),
                None => assert!(
                    matches!(reason, Some(FallbackReason::NoOpenTurn { version: 1 })),
                    "{reason:?}"
                ),
            }
            let full = resume_file(&rollout, &full_options).expect("resumes");
            assert_eq!(through.history(), full.history(), "{what:?}");
            assert_eq!(
                through.incomplete_turn(),
                full.incomplete_turn(),
                "{what:?}"
            );
            assert_eq!(through.ends_inside_turn(), full.ends_inside_turn());
            // After a prefix that ends outside a turn the line is replayed onto the snapshot.
            assert!(!v1_snapshot(&rollout, &snapshot, &outside));
            let mut lines = outside.clone();
            lines.extend(later.iter().cloned());
            std::fs::write(&rollout, text(&lines)).expect("written");
            let through = resume_file(&rollout, &options).expect("resumes");
            assert!(through.used_snapshot(), "{what:?}: {:?}", through.source());
            let full = resume_file(&rollout, &full_options).expect("resumes");
            assert_eq!(through.history(), full.history(), "{what:?}");
            assert_eq!(
                through.history().reachable_user_turns(),
                full.history().reachable_user_turns()
            );
            assert_eq!(through.ends_inside_turn(), full.ends_inside_turn());
        }
    }

    /// What the search finds in `bytes` cut into chunks of `size`.
    fn found(bytes: &[u8], size: usize) -> bool {
        let mut search = WorldStateSearch::default();
        for chunk in bytes.chunks(size) {
            search.update(chunk);
        }
        search.found
    }

    /// A needle is found wherever the chunks cut it, and nothing else is.
    #[test]
    fn the_search_finds_a_needle_across_chunk_boundaries() {
        let with_type = br#"{"type":"world_state","payload":{}}"#;
        let with_escape = br#"{"type":"world\u005fstate"}"#;
        let without = br#"{"type":"world_stat","payload":{"state":"world state"}}"#;
        for size in 1..=with_type.len() {
            assert!(found(with_type, size), "chunks of {size}");
            assert!(found(with_escape, size), "chunks of {size}");
            assert!(!found(without, size), "chunks of {size}");
        }
    }

    /// Whatever the chunks, the search keeps exactly the last `KEEP` bytes it saw (all of them
    /// while it has seen fewer) for the next chunk: what it holds does not grow with the prefix.
    #[test]
    fn the_search_carries_only_the_last_bytes_it_saw() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for size in [1, 3, 9, 10, 11, 64, 1000] {
            let mut search = WorldStateSearch::default();
            let mut seen = 0;
            for chunk in bytes.chunks(size) {
                search.update(chunk);
                seen += chunk.len();
                let tail = &bytes[seen.saturating_sub(WorldStateSearch::KEEP)..seen];
                assert_eq!(search.carry, tail, "chunks of {size}, {seen} bytes seen");
            }
            assert!(!search.found);
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
        let prefix = hash_prefix(&mut reader, 8, &mut hasher, None).expect("read again");
        assert_eq!((prefix.bytes, prefix.last), (8, Some(b'\n')));
        assert_eq!(hasher.finalize(), blake3::hash(&bytes[..8]));
        assert_eq!(reader.bytes, &bytes[8..], "positioned after the prefix");
        for kind in [ErrorKind::PermissionDenied, ErrorKind::UnexpectedEof] {
            let mut hasher = blake3::Hasher::new();
            let mut reader = FailsOnce {
                error: Some(kind),
                bytes,
            };
            let error = hash_prefix(&mut reader, 8, &mut hasher, None)
                .err()
                .expect("returned");
            assert_eq!(error.kind(), kind);
            assert_eq!(reader.bytes, bytes, "nothing read after the error");
        }
    }

    /// Each kind of later line has the JSON `what` the JSON output page lists, and its own words
    /// in the fallback's message.
    #[test]
    fn a_later_line_fallback_names_what_the_line_is_in_json_and_in_words() {
        use super::LaterLine;
        let cases = [
            (LaterLine::Rollback, "rollback", "a rollback"),
            (LaterLine::TurnEvent, "turn_event", "a turn event"),
            (
                LaterLine::TurnContext,
                "turn_context",
                "a turn_context line",
            ),
            (LaterLine::Compaction, "compaction", "a compaction"),
            (LaterLine::InterAgent, "inter_agent", "an inter-agent line"),
            (
                LaterLine::UserMessageInsideTurn,
                "user_message_inside_turn",
                "a user_message event inside the turn the snapshot ends in",
            ),
            (
                LaterLine::UserTurnInsideTurn,
                "user_turn_inside_turn",
                "a user turn inside the turn the snapshot ends in",
            ),
        ];
        for (what, name, words) in cases {
            assert_eq!(what.name(), name);
            assert_eq!(what.to_string(), words);
            let reason = FallbackReason::LaterLine { line: 7, what };
            assert_eq!(
                serde_json::to_value(&reason).expect("serialized"),
                serde_json::json!({
                    "reason": "later_line",
                    "line": 7,
                    "what": name,
                    "message": format!("line 7 after the snapshot is {words}"),
                })
            );
        }
    }
}
