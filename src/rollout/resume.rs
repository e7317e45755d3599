//! Resume: rebuilding a history from rollout lines (reference §2.6).
//!
//! The algorithm is documented on [`Rollout::resume`], the public item that runs it.

use std::io::Read;
use std::ops::Deref;
use std::path::Path;

use serde_json::Value;
use serde_json::value::RawValue;

use super::reader::{
    Event, LineFacts, LineKind, LoadReport, READER_LABEL, ReadMode, Rollout, RolloutLine,
    parse_compacted,
};
use crate::error::RolloutError;
use crate::history::truncate::TruncationPolicy;
use crate::history::{DEFAULT_TRUNCATION, History, Recorded};

/// The outcome of resuming a rollout.
///
/// It dereferences to its [`LoadReport`], so `resumed.thread_id`, `resumed.skipped`,
/// `resumed.torn_tail` and `resumed.malformed()` read the report.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// The rebuilt history. Its reference context item is
    /// [`reference_context_item`](Resumed::reference_context_item).
    pub history: History,
    /// What the reader found: line count, skipped lines, torn tail, thread id, format.
    pub report: LoadReport,
    /// The reference context item: the payload of the `turn_context` line the reverse scan
    /// settled on, or `None` (never set, cleared by a compaction, or a legacy compaction was
    /// rebuilt) — then the next turn re-injects full context.
    pub reference_context_item: Option<Value>,
    /// The previous turn's settings: the raw payload of the newest `turn_context` of a kept
    /// user turn.
    pub previous_turn_settings: Option<Box<RawValue>>,
    /// The line number of the `compacted` line the history was rebuilt from, if any.
    pub base: Option<u64>,
    /// Number of `compacted` lines in the file (Codex's fallback window number).
    pub compacted_lines: u64,
    /// A `compacted` line without replacement history was rebuilt by local compaction.
    pub legacy_compaction: bool,
    /// For each entry of [`history`](Resumed::history), the 1-based number of the line it comes
    /// from (the `compacted` line for the items of a replacement history).
    pub entry_lines: Vec<u64>,
}

impl Deref for Resumed {
    type Target = LoadReport;

    fn deref(&self) -> &LoadReport {
        &self.report
    }
}

/// How to resume: the truncation policy of the model and the read mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeOptions {
    /// Record-time truncation applied to the replayed items.
    pub truncation: TruncationPolicy,
    /// Whether a bad line is skipped or fails the resume.
    pub mode: ReadMode,
}

impl Default for ResumeOptions {
    fn default() -> Self {
        ResumeOptions::new(DEFAULT_TRUNCATION)
    }
}

impl ResumeOptions {
    /// Lenient resume with `truncation`.
    pub fn new(truncation: TruncationPolicy) -> Self {
        ResumeOptions {
            truncation,
            mode: ReadMode::Lenient,
        }
    }

    /// The same options, reading in [`ReadMode::Strict`].
    pub fn strict(self) -> Self {
        ResumeOptions {
            mode: ReadMode::Strict,
            ..self
        }
    }
}

/// Resumes a history from the rollout file at `path`, recording with `truncation`; bad lines
/// are skipped and reported. The file is only read.
///
/// # Errors
///
/// [`RolloutError::Io`] when the file cannot be read, [`RolloutError::Empty`] when it has no
/// non-blank line, [`RolloutError::NoSessionMeta`] when no line is a `session_meta` line.
pub fn resume_file(
    path: impl AsRef<Path>,
    truncation: TruncationPolicy,
) -> Result<Resumed, RolloutError> {
    resume_file_with(path, ResumeOptions::new(truncation))
}

/// Resumes a history from the rollout file at `path` with `options`.
///
/// # Errors
///
/// As [`resume_file`], and in strict mode [`RolloutError::BadLine`] for the first bad line.
pub fn resume_file_with(
    path: impl AsRef<Path>,
    options: ResumeOptions,
) -> Result<Resumed, RolloutError> {
    Ok(Rollout::read_file(path, options.mode)?.resume(options.truncation))
}

/// Resumes a history from rollout bytes read from `reader`; errors name the path
/// [`READER_LABEL`].
///
/// # Errors
///
/// As [`resume_file`].
pub fn resume_reader(
    reader: impl Read,
    truncation: TruncationPolicy,
) -> Result<Resumed, RolloutError> {
    resume_reader_with(reader, ResumeOptions::new(truncation))
}

/// Resumes a history from rollout bytes read from `reader` with `options`.
///
/// # Errors
///
/// As [`resume_file_with`].
pub fn resume_reader_with(
    reader: impl Read,
    options: ResumeOptions,
) -> Result<Resumed, RolloutError> {
    Ok(Rollout::read(reader, READER_LABEL, options.mode)?.resume(options.truncation))
}

impl Rollout {
    /// Rebuilds the history these lines record (§2.6), recording with `truncation`. The
    /// rollout is not changed. Time: O(n) lines plus the replayed items.
    ///
    /// It follows Codex's two phases.
    ///
    /// **Phase 1, reverse scan.** From the newest line back, lines are grouped into turn
    /// *segments*. A segment is closed by a `turn_started` event whose turn id is compatible with
    /// the segment's (one of the two is unknown, or they are equal); a `turn_started` with another
    /// id stays inside the segment. The segment's turn id comes from `turn_complete`,
    /// `turn_aborted` or a `turn_context`, whichever is newest. A segment *counts as a user turn*
    /// when it holds a `user_message` event, an `inter_agent_communication` line or a
    /// `response_item` that is a user-turn boundary (§5.4). Per segment the scan keeps the newest
    /// compatible `turn_context` (the previous-turn settings, and the reference context item unless
    /// a newer `compacted` line of the segment cleared it first) and the newest `compacted` line
    /// with a `replacement_history`. A `thread_rolled_back {num_turns}` adds to a pending count;
    /// while it is positive, each finished segment is discarded, and a discarded segment that
    /// counts as a user turn lowers the count by one. The segments that are kept give, newest
    /// first: the **base** (the newest kept `compacted` line with a replacement history), the
    /// previous-turn settings and the reference context item. The scan stops once all three are
    /// known.
    ///
    /// Lines outside any turn — not between a `turn_started` and the `turn_complete` /
    /// `turn_aborted` that ends it, which is the whole file in hand-written rollouts, in old Codex
    /// files and in files this library writes — have no `turn_started` to close their segments.
    /// There each user-turn line starts a segment of its own (a `user_message` event and the
    /// user-turn item that follows it start one segment together), so rollbacks count the same
    /// turns as [`History::drop_last_n_user_turns`]. Lines before the first user turn form the
    /// session-prefix segment, which does not count as a user turn.
    ///
    /// Decisions where the reference is silent:
    /// * A segment that does not count as a user turn never hydrates the previous-turn settings or
    ///   a `Latest` reference context item (a bare `turn_context` does not, §7.6); if it holds a
    ///   `compacted` line (a manual compaction turn) it clears the reference context item.
    /// * Compatibility applies to `turn_context` lines as to `turn_started`: a `turn_context`
    ///   whose turn id differs from the segment's known one is ignored.
    ///
    /// **Phase 2, forward replay** into an empty [`History`] with the caller's truncation policy:
    /// the base's replacement history replaces it, then the lines after the base (all lines when
    /// there is none) are replayed. `response_item` → [`History::record_json`] (record filter and
    /// truncation, as live); `compacted` without a replacement history (legacy) →
    /// [`History::compact`] with its message, as local compaction would rebuild it, after which
    /// the reference context item is `None`; `event_msg` `thread_rolled_back` →
    /// [`History::drop_last_n_user_turns`]. A `compacted` line *with* a replacement history other
    /// than the base is ignored, as Codex ignores every other line: the reverse scan picks the
    /// newest kept one as the base, so such a line lies in a rolled-back segment, and the rollback
    /// that discarded it is replayed on the items recorded before it. (A rollback across a
    /// compaction therefore brings back the items the compaction summarised, as in Codex.)
    /// `inter_agent_communication` lines are not replayed: converting them to model input is out
    /// of scope here; they only count as user turns in phase 1. Everything else is ignored.
    pub fn resume(&self, truncation: TruncationPolicy) -> Resumed {
        let scan = reverse_scan(&self.lines);
        let mut history = History::with_truncation(truncation);
        let mut replay_from = 0;
        let mut entry_lines = Vec::new();
        if let Some(base) = scan.base {
            if let Ok(compacted) = parse_compacted(self.lines[base].payload_json()) {
                history.replace(compacted.replacement_history.unwrap_or_default());
                entry_lines = vec![self.lines[base].number; history.len()];
            }
            replay_from = base + 1;
        }
        let mut legacy_compaction = false;
        for line in &self.lines[replay_from..] {
            match &line.kind {
                LineKind::ResponseItem => {
                    // The reader checked the item, ghost snapshots are gone; a failure here
                    // would be a bug, and the item is then left out.
                    if let Ok(Recorded::Stored { .. }) = history.record_json(line.payload_json()) {
                        entry_lines.push(line.number);
                    }
                }
                LineKind::Compacted => {
                    // One with a replacement history is not the base here: it lies in a
                    // rolled-back segment and is ignored (see above).
                    if line.facts == (LineFacts::Compacted { replacement: false })
                        && let Ok(compacted) = parse_compacted(line.payload_json())
                    {
                        history.compact(&compacted.message);
                        entry_lines = vec![line.number; history.len()];
                        legacy_compaction = true;
                    }
                }
                LineKind::EventMsg => {
                    if let LineFacts::Event(Event::ThreadRolledBack { num_turns }) = line.facts {
                        history.drop_last_n_user_turns(
                            usize::try_from(num_turns).unwrap_or(usize::MAX),
                        );
                        entry_lines.truncate(history.len());
                    }
                }
                // Out of scope: not converted to model input (see above).
                LineKind::InterAgentCommunication => {}
                LineKind::SessionMeta | LineKind::TurnContext | LineKind::Other(_) => {}
            }
        }
        let reference_context_item = match scan.reference {
            Reference::Latest(position) if !legacy_compaction => {
                serde_json::from_str(self.lines[position].payload_json()).ok()
            }
            Reference::Latest(_) | Reference::NeverSet | Reference::Cleared => None,
        };
        history.set_reference_context_item(reference_context_item.clone());
        Resumed {
            history,
            report: self.report.clone(),
            reference_context_item,
            previous_turn_settings: scan
                .settings
                .map(|position| self.lines[position].payload.clone()),
            base: scan.base.map(|position| self.lines[position].number),
            compacted_lines: self
                .lines
                .iter()
                .filter(|line| line.kind == LineKind::Compacted)
                .count() as u64,
            legacy_compaction,
            entry_lines,
        }
    }
}

/// The reference context item's state in the reverse scan (positions index the lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reference {
    NeverSet,
    Cleared,
    Latest(usize),
}

/// One turn segment of the reverse scan.
struct Segment<'a> {
    turn_id: Option<&'a str>,
    user_turn: bool,
    settings: Option<usize>,
    reference: Reference,
    base: Option<usize>,
    compaction: bool,
}

impl Segment<'_> {
    fn new() -> Self {
        Segment {
            turn_id: None,
            user_turn: false,
            settings: None,
            reference: Reference::NeverSet,
            base: None,
            compaction: false,
        }
    }

    /// Whether a line with `turn_id` belongs to this segment's turn.
    fn compatible(&self, turn_id: Option<&str>) -> bool {
        match (self.turn_id, turn_id) {
            (Some(ours), Some(theirs)) => ours == theirs,
            _ => true,
        }
    }
}

/// What the reverse scan found (positions index the lines).
struct Scan {
    base: Option<usize>,
    settings: Option<usize>,
    reference: Reference,
    pending_rollback: u64,
}

impl Scan {
    fn done(&self) -> bool {
        self.base.is_some() && self.settings.is_some() && self.reference != Reference::NeverSet
    }

    /// Takes what a finished segment contributes, unless a pending rollback discards it.
    fn finish(&mut self, segment: Segment<'_>) {
        if self.pending_rollback > 0 {
            if segment.user_turn {
                self.pending_rollback -= 1;
            }
            return;
        }
        if self.base.is_none() {
            self.base = segment.base;
        }
        if segment.user_turn {
            if self.settings.is_none() {
                self.settings = segment.settings;
            }
            if self.reference == Reference::NeverSet {
                self.reference = segment.reference;
            }
        } else if segment.compaction && self.reference == Reference::NeverSet {
            self.reference = Reference::Cleared;
        }
    }
}

/// Phase 1 (module docs).
fn reverse_scan(lines: &[RolloutLine]) -> Scan {
    let starts = free_segment_starts(lines);
    let mut scan = Scan {
        base: None,
        settings: None,
        reference: Reference::NeverSet,
        pending_rollback: 0,
    };
    let mut segment = Segment::new();
    for (position, line) in lines.iter().enumerate().rev() {
        let mut closes = starts[position];
        match &line.facts {
            LineFacts::Event(Event::TurnStarted { turn_id }) => {
                closes = segment.compatible(turn_id.as_deref());
            }
            LineFacts::Event(Event::TurnEnded { turn_id }) => {
                if segment.turn_id.is_none() {
                    segment.turn_id = turn_id.as_deref();
                }
            }
            LineFacts::Event(Event::UserMessage) => segment.user_turn = true,
            LineFacts::Event(Event::ThreadRolledBack { num_turns }) => {
                scan.pending_rollback = scan.pending_rollback.saturating_add(*num_turns);
            }
            LineFacts::Event(Event::Other) => {}
            LineFacts::TurnContext { turn_id } => {
                if segment.turn_id.is_none() {
                    segment.turn_id = turn_id.as_deref();
                }
                if segment.compatible(turn_id.as_deref()) {
                    if segment.settings.is_none() {
                        segment.settings = Some(position);
                    }
                    if segment.reference == Reference::NeverSet {
                        segment.reference = Reference::Latest(position);
                    }
                }
            }
            LineFacts::Compacted { replacement } => {
                segment.compaction = true;
                if segment.reference == Reference::NeverSet {
                    segment.reference = Reference::Cleared;
                }
                if *replacement && segment.base.is_none() {
                    segment.base = Some(position);
                }
            }
            LineFacts::Item { user_turn } => segment.user_turn |= *user_turn,
            LineFacts::None => {
                if line.kind == LineKind::InterAgentCommunication {
                    segment.user_turn = true;
                }
            }
        }
        if closes {
            scan.finish(std::mem::replace(&mut segment, Segment::new()));
            if scan.done() {
                return scan;
            }
        }
    }
    scan.finish(segment);
    scan
}

/// Marks the lines outside any turn that start a segment of their own: user-turn lines, where
/// a `user_message` event and the next user-turn item count as one start, and the line after a
/// rollback (what follows a rollback happened after it and must not be discarded by it).
fn free_segment_starts(lines: &[RolloutLine]) -> Vec<bool> {
    let mut starts = vec![false; lines.len()];
    let mut in_turn = false;
    let mut event_awaits_item = false;
    for (position, line) in lines.iter().enumerate() {
        if !in_turn
            && matches!(line.facts, LineFacts::Event(Event::ThreadRolledBack { .. }))
            && let Some(next) = starts.get_mut(position + 1)
        {
            *next = true;
        }
        let user_item = match &line.facts {
            LineFacts::Event(Event::TurnStarted { .. }) => {
                in_turn = true;
                event_awaits_item = false;
                continue;
            }
            LineFacts::Event(Event::TurnEnded { .. }) => {
                in_turn = false;
                event_awaits_item = false;
                continue;
            }
            _ if in_turn => continue,
            LineFacts::Event(Event::UserMessage) => {
                starts[position] = true;
                event_awaits_item = true;
                continue;
            }
            LineFacts::Item { user_turn } => *user_turn,
            LineFacts::None => line.kind == LineKind::InterAgentCommunication,
            LineFacts::Event(_) | LineFacts::TurnContext { .. } | LineFacts::Compacted { .. } => {
                false
            }
        };
        if user_item {
            starts[position] = !event_awaits_item;
            event_awaits_item = false;
        }
    }
    starts
}

impl Rollout {
    /// Whether the file ends inside a turn: a `turn_started` without its `turn_complete` or
    /// `turn_aborted`. (A snapshot records it: lines appended later may then belong to that turn.)
    pub fn ends_inside_turn(&self) -> bool {
        let mut in_turn = false;
        for line in &self.lines {
            match line.facts {
                LineFacts::Event(Event::TurnStarted { .. }) => in_turn = true,
                LineFacts::Event(Event::TurnEnded { .. }) => in_turn = false,
                _ => {}
            }
        }
        in_turn
    }

    /// Why these lines, appended after a prefix that a snapshot stands for, cannot simply be
    /// replayed onto the snapshot's history (`None` when they can). Replaying is exact when the
    /// reverse scan (phase 1) over the whole file would settle the same base, reference context
    /// and turn settings as over the prefix alone: no rollback (it can discard covered turns), no
    /// compaction, turn event, `turn_context` or inter-agent line (they move the scan's results),
    /// and, when the prefix ends inside a turn, no user-turn item or `user_message` event (they
    /// would change that turn).
    pub(crate) fn continuation_blocker(&self, prefix_ends_inside_turn: bool) -> Option<String> {
        for line in &self.lines {
            let blocker = match &line.facts {
                LineFacts::Event(Event::ThreadRolledBack { .. }) => Some("a rollback"),
                LineFacts::Event(Event::TurnStarted { .. } | Event::TurnEnded { .. }) => {
                    Some("a turn event")
                }
                LineFacts::Event(Event::UserMessage) if prefix_ends_inside_turn => {
                    Some("a user_message event inside the turn the snapshot ends in")
                }
                LineFacts::TurnContext { .. } => Some("a turn_context line"),
                LineFacts::Compacted { .. } => Some("a compaction"),
                LineFacts::Item { user_turn: true } if prefix_ends_inside_turn => {
                    Some("a user turn inside the turn the snapshot ends in")
                }
                LineFacts::None if line.kind == LineKind::InterAgentCommunication => {
                    Some("an inter-agent line")
                }
                LineFacts::Event(Event::Other | Event::UserMessage)
                | LineFacts::Item { .. }
                | LineFacts::None => None,
            };
            if let Some(what) = blocker {
                return Some(format!("line {} after the snapshot is {what}", line.number));
            }
        }
        None
    }
}
