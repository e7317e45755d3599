//! How to read a rollout ([`ReadOptions`]), and what reading found besides its usable lines: the
//! [`LoadReport`], why a line was skipped, what was repaired, and what resume leaves out.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeStruct};

use crate::item::{CallId, Family, ItemKind, ThreadId, TurnId};
use crate::world::WorldStateError;

use super::line::BaseInstructions;
use super::paginated::{HistoryBase, HistoryMode, Pagination};

/// How the reader treats a line it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ReadMode {
    /// Skip it, report it in [`LoadReport::skipped`], and go on (Codex's behaviour). A damaged
    /// `session_meta` line is salvaged when its thread id can be read, and the repair reported.
    #[default]
    Lenient,
    /// Fail with [`RolloutError::BadLine`](super::RolloutError::BadLine) on the first such line
    /// that is not blank; nothing is salvaged.
    Strict,
}

/// The longest line the reader holds in memory by default: 512 MiB. Real sessions hold tool
/// arguments of 200 MB; a longer line is skipped and reported, never buffered whole.
pub const DEFAULT_MAX_LINE_BYTES: usize = 512 * 1024 * 1024;

/// How many skipped lines (and repairs) a report describes one by one by default; the rest are
/// only counted, so that a file of a million bad lines costs no more memory than one of a
/// thousand.
pub const DEFAULT_MAX_REPORTED: usize = 1000;

/// How to read a rollout. Every reading function takes `impl Into<ReadOptions>`, so a
/// [`ReadMode`] alone is enough when the defaults do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Skip and report, or fail on, a line that cannot be used.
    pub mode: ReadMode,
    /// Lines longer than this (in bytes, without the `\n`) are skipped as
    /// [`SkipReason::TooLong`] without being held in memory.
    pub max_line_bytes: usize,
    /// How many blank lines, how many malformed lines and how many repairs [`LoadReport`] lists
    /// one by one; all are counted.
    pub max_reported: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            mode: ReadMode::Lenient,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_reported: DEFAULT_MAX_REPORTED,
        }
    }
}

impl From<ReadMode> for ReadOptions {
    fn from(mode: ReadMode) -> Self {
        ReadOptions {
            mode,
            ..ReadOptions::default()
        }
    }
}

impl ReadOptions {
    /// The same options with another line limit.
    pub fn max_line_bytes(self, bytes: usize) -> Self {
        ReadOptions {
            max_line_bytes: bytes,
            ..self
        }
    }

    /// The same options listing at most `count` skipped lines and repairs one by one.
    pub fn max_reported(self, count: usize) -> Self {
        ReadOptions {
            max_reported: count,
            ..self
        }
    }
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Only white space.
    Blank,
    /// Not valid UTF-8.
    InvalidUtf8,
    /// Not valid JSON (serde's message).
    InvalidJson(String),
    /// Not a line envelope (an object with one string `type` and a `payload`), or in a legacy
    /// file not an object. The envelope is checked as the line is parsed, so a shape problem
    /// (a missing, duplicate or non-string `type`) is this reason even when a syntax error
    /// follows it on the line; [`SkipReason::InvalidJson`] is a syntax error met first.
    NotAnEnvelope(String),
    /// The payload of a `session_meta`, `compacted`, `event_msg`, `turn_context`,
    /// `inter_agent_communication` or `world_state` line does not have that type's shape.
    InvalidPayload(String),
    /// A `response_item` (or an item of a `compacted` line's `replacement_history`) of a known
    /// item type without that type's shape.
    InvalidItem(String),
    /// Longer than [`ReadOptions::max_line_bytes`]; its bytes were passed over, never held.
    TooLong {
        /// The line's length in bytes (without the `\n`).
        bytes: u64,
        /// The limit it exceeded.
        limit: usize,
    },
}

impl Serialize for SkipReason {
    /// `{"reason": "<snake_case name>"}`, with `message` for the reasons that carry one and
    /// `bytes` and `limit` for `too_long` (`docs/json-output.md`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("reason", self.name())?;
        match self {
            SkipReason::Blank | SkipReason::InvalidUtf8 => {}
            SkipReason::InvalidJson(why)
            | SkipReason::NotAnEnvelope(why)
            | SkipReason::InvalidPayload(why)
            | SkipReason::InvalidItem(why) => map.serialize_entry("message", why)?,
            SkipReason::TooLong { bytes, limit } => {
                map.serialize_entry("bytes", bytes)?;
                map.serialize_entry("limit", limit)?;
            }
        }
        map.end()
    }
}

impl SkipReason {
    /// The reason's snake_case name, as its JSON `reason` and its [`SkipCounts`] field read.
    pub fn name(&self) -> &'static str {
        match self {
            SkipReason::Blank => "blank",
            SkipReason::InvalidUtf8 => "invalid_utf8",
            SkipReason::InvalidJson(_) => "invalid_json",
            SkipReason::NotAnEnvelope(_) => "not_an_envelope",
            SkipReason::InvalidPayload(_) => "invalid_payload",
            SkipReason::InvalidItem(_) => "invalid_item",
            SkipReason::TooLong { .. } => "too_long",
        }
    }

    /// Whether this is a real problem, not just a blank line.
    pub fn is_malformed(&self) -> bool {
        !matches!(self, SkipReason::Blank)
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Blank => f.write_str("blank"),
            SkipReason::InvalidUtf8 => f.write_str("invalid UTF-8"),
            SkipReason::InvalidJson(why) => write!(f, "malformed: invalid JSON: {why}"),
            SkipReason::NotAnEnvelope(why) => write!(f, "malformed: not a rollout line: {why}"),
            SkipReason::InvalidPayload(why) => write!(f, "malformed: invalid payload: {why}"),
            SkipReason::InvalidItem(why) => write!(f, "invalid item: {why}"),
            SkipReason::TooLong { bytes, limit } => {
                write!(f, "too long: {bytes} bytes, over the limit of {limit}")
            }
        }
    }
}

/// A line the reader did not use. Serializes as `{"line", "offset"}` followed by the
/// [`SkipReason`]'s fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
}

impl fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.offset, self.reason
        )
    }
}

/// How many lines were skipped, by reason: every skipped line is counted, however many are
/// listed in [`LoadReport::skipped`]. Serializes as an object of these counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct SkipCounts {
    /// [`SkipReason::Blank`].
    pub blank: u64,
    /// [`SkipReason::InvalidUtf8`].
    pub invalid_utf8: u64,
    /// [`SkipReason::InvalidJson`].
    pub invalid_json: u64,
    /// [`SkipReason::NotAnEnvelope`].
    pub not_an_envelope: u64,
    /// [`SkipReason::InvalidPayload`].
    pub invalid_payload: u64,
    /// [`SkipReason::InvalidItem`].
    pub invalid_item: u64,
    /// [`SkipReason::TooLong`].
    pub too_long: u64,
}

impl SkipCounts {
    /// Counts one more line skipped for `reason`.
    pub(crate) fn count(&mut self, reason: &SkipReason) {
        let counter = match reason {
            SkipReason::Blank => &mut self.blank,
            SkipReason::InvalidUtf8 => &mut self.invalid_utf8,
            SkipReason::InvalidJson(_) => &mut self.invalid_json,
            SkipReason::NotAnEnvelope(_) => &mut self.not_an_envelope,
            SkipReason::InvalidPayload(_) => &mut self.invalid_payload,
            SkipReason::InvalidItem(_) => &mut self.invalid_item,
            SkipReason::TooLong { .. } => &mut self.too_long,
        };
        *counter += 1;
    }

    /// Counts `line` as skipped and lists it in `listed` while the list holds fewer than
    /// `max_reported` of its kind (blank, or malformed: so that a run of blank lines never hides
    /// the malformed line after it); a torn last line is always listed.
    pub(crate) fn skip(
        &mut self,
        listed: &mut Vec<SkippedLine>,
        line: SkippedLine,
        torn: bool,
        max_reported: usize,
    ) {
        self.count(&line.reason);
        let counted = if line.reason == SkipReason::Blank {
            self.blank
        } else {
            self.malformed()
        };
        if counted <= max_reported as u64 || torn {
            listed.push(line);
        }
    }

    /// Lines skipped for any reason.
    pub fn total(&self) -> u64 {
        self.blank + self.malformed()
    }

    /// Lines skipped for a reason other than being blank.
    pub fn malformed(&self) -> u64 {
        self.invalid_utf8
            + self.invalid_json
            + self.not_an_envelope
            + self.invalid_payload
            + self.invalid_item
            + self.too_long
    }
}

/// What the reader repaired to use a line it would otherwise have skipped, or passed over in a
/// line it used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineRepair {
    /// A UTF-8 byte-order mark at the start of the file was passed over.
    ByteOrderMark,
    /// A line that is not valid UTF-8 was read with each invalid sequence replaced by U+FFFD: a
    /// rollout's `session_meta` whose thread id was intact, or any record of a transcript.
    LossyUtf8,
    /// A `session_meta` payload that does not have the strict shape (a duplicate key, say) was
    /// read leniently for its thread id; the strict reading's message says what was wrong.
    LenientSessionMeta(String),
    /// The `base_instructions` of a `session_meta` has a shape this reader does not know (it
    /// reads `{text, provenance?}`, a plain string and `null`): the line was used and the field
    /// read as absent ([`LoadReport::base_instructions`]). The message says what was found.
    UnknownBaseInstructions(String),
}

impl Serialize for LineRepair {
    /// `{"repair": "<snake_case name>"}`, with `message` for the repairs that carry one.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let name = match self {
            LineRepair::ByteOrderMark => "byte_order_mark",
            LineRepair::LossyUtf8 => "lossy_utf8",
            LineRepair::LenientSessionMeta(_) => "lenient_session_meta",
            LineRepair::UnknownBaseInstructions(_) => "unknown_base_instructions",
        };
        map.serialize_entry("repair", name)?;
        match self {
            LineRepair::ByteOrderMark | LineRepair::LossyUtf8 => {}
            LineRepair::LenientSessionMeta(why) | LineRepair::UnknownBaseInstructions(why) => {
                map.serialize_entry("message", why)?;
            }
        }
        map.end()
    }
}

impl fmt::Display for LineRepair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineRepair::ByteOrderMark => f.write_str("a UTF-8 byte-order mark was passed over"),
            LineRepair::LossyUtf8 => f.write_str("invalid UTF-8 was replaced by U+FFFD"),
            LineRepair::LenientSessionMeta(why) => {
                write!(f, "session_meta read leniently for its id ({why})")
            }
            LineRepair::UnknownBaseInstructions(why) => {
                write!(f, "session_meta's base_instructions read as absent ({why})")
            }
        }
    }
}

/// A line the reader repaired, and how. Serializes as `{"line", "offset"}` followed by the
/// [`LineRepair`]'s fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepairedLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// What was repaired.
    #[serde(flatten)]
    pub repair: LineRepair,
}

impl fmt::Display for RepairedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.offset, self.repair
        )
    }
}

/// What the reader read, and used, but resume does not bring into the history: content left out
/// by design, counted by kind. Not a problem, so not in [`LoadReport::skipped`].
///
/// The kinds are legacy `ghost_snapshot` items and state lines, `system` messages, and lines of a
/// type resume does not turn into items (by their `type`). Metadata, settings and event lines are
/// not counted, nor items a later rollback or compaction removes; the list is in
/// `docs/rollout-format.md`, "What resume leaves out". At most [`LeftOut::MAX_LINE_TYPES`] type
/// names of at most [`LeftOut::MAX_TYPE_NAME_BYTES`] bytes are kept; further types are counted
/// together in [`LeftOut::other_line_types`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LeftOut {
    /// Legacy `ghost_snapshot` items dropped, as lines or from replacement histories.
    pub ghost_snapshots: u64,
    /// Legacy `{"record_type":"state",…}` lines passed over.
    pub state_lines: u64,
    /// `response_item` lines holding a `system` message.
    pub system_messages: u64,
    /// Lines whose type resume does not turn into items, by type name.
    line_types: BTreeMap<Box<str>, u64>,
    /// Lines of further types, once [`LeftOut::MAX_LINE_TYPES`] names are kept, or with a name
    /// over [`LeftOut::MAX_TYPE_NAME_BYTES`].
    other_line_types: u64,
}

impl LeftOut {
    /// How many distinct line types are counted by name.
    pub const MAX_LINE_TYPES: usize = 32;

    /// The longest line type name counted by name, in bytes.
    pub const MAX_TYPE_NAME_BYTES: usize = 64;

    /// Counts as these (a snapshot's stored report gives them back).
    pub(crate) fn from_parts(
        ghost_snapshots: u64,
        state_lines: u64,
        system_messages: u64,
        line_types: Vec<(String, u64)>,
        other_line_types: u64,
    ) -> LeftOut {
        LeftOut {
            ghost_snapshots,
            state_lines,
            system_messages,
            line_types: line_types
                .into_iter()
                .map(|(name, count)| (name.into_boxed_str(), count))
                .collect(),
            other_line_types,
        }
    }

    /// Counts one more line of type `name`. Time: O(log [`MAX_LINE_TYPES`](Self::MAX_LINE_TYPES)).
    pub(crate) fn count_line_type(&mut self, name: &str) {
        if let Some(count) = self.line_types.get_mut(name) {
            *count += 1;
        } else if self.line_types.len() < Self::MAX_LINE_TYPES
            && name.len() <= Self::MAX_TYPE_NAME_BYTES
        {
            self.line_types.insert(name.into(), 1);
        } else {
            self.other_line_types += 1;
        }
    }

    /// The line types counted by name, with their counts, in name order.
    pub fn line_types(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.line_types
            .iter()
            .map(|(name, count)| (name.as_ref(), *count))
    }

    /// The count of lines of type `name` (0 for a type not counted by name).
    pub fn line_type(&self, name: &str) -> u64 {
        self.line_types.get(name).copied().unwrap_or(0)
    }

    /// Lines of types not counted by name: those after the first
    /// [`MAX_LINE_TYPES`](Self::MAX_LINE_TYPES) types, and those with a longer name than
    /// [`MAX_TYPE_NAME_BYTES`](Self::MAX_TYPE_NAME_BYTES).
    pub fn other_line_types(&self) -> u64 {
        self.other_line_types
    }

    /// Everything left out: items and lines of every kind.
    pub fn total(&self) -> u64 {
        self.ghost_snapshots
            + self.state_lines
            + self.system_messages
            + self.line_types.values().sum::<u64>()
            + self.other_line_types
    }

    /// Whether nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

impl Serialize for LeftOut {
    /// `{"total", "ghost_snapshots", "state_lines", "system_messages", "line_types",
    /// "other_line_types"}`, `line_types` an object of counts by line type name.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("LeftOut", 6)?;
        state.serialize_field("total", &self.total())?;
        state.serialize_field("ghost_snapshots", &self.ghost_snapshots)?;
        state.serialize_field("state_lines", &self.state_lines)?;
        state.serialize_field("system_messages", &self.system_messages)?;
        state.serialize_field("line_types", &self.line_types)?;
        state.serialize_field("other_line_types", &self.other_line_types)?;
        state.end()
    }
}

impl fmt::Display for LeftOut {
    /// One line: each kind with its count, `nothing` when empty, e.g.
    /// `2 ghost_snapshot, 1 system message, 3 token_usage_record`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fixed = [
            (self.ghost_snapshots, "ghost_snapshot"),
            (self.state_lines, "legacy state line"),
            (self.system_messages, "system message"),
        ];
        let named = self.line_types();
        let other = (self.other_line_types, "of other line types");
        let mut first = true;
        for (count, name) in fixed
            .into_iter()
            .chain(named.map(|(name, count)| (count, name)))
            .chain([other])
        {
            if count == 0 {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            write!(f, "{count} {name}")?;
            first = false;
        }
        if first {
            f.write_str("nothing")?;
        }
        Ok(())
    }
}

/// What reading a rollout found besides its usable lines. Through a snapshot it is the same
/// as without: the snapshot keeps its covered lines' report, and reading goes on from it.
///
/// Serializes as an object with every field under its own name (`thread_id` as its UUID text,
/// `base_instructions` as `{text, provenance?}` or null); `docs/json-output.md` is the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadReport {
    /// Number of lines read, skipped ones included (after a snapshot: the number of the last line
    /// read, counting the lines the snapshot covers).
    pub lines: u64,
    /// The first skipped lines, in file order: at most [`ReadOptions::max_reported`] blank ones
    /// and as many malformed ones (so that blank lines never hide a malformed one); a torn last
    /// line is always listed, as the last entry. All are counted in
    /// [`skip_counts`](LoadReport::skip_counts).
    pub skipped: Vec<SkippedLine>,
    /// Every skipped line, counted by reason.
    pub skip_counts: SkipCounts,
    /// The last line had no `\n` and could not be used: a write cut short. It is the last entry
    /// of [`skipped`](LoadReport::skipped).
    pub torn_tail: bool,
    /// Lines the reader repaired to use them (the first [`ReadOptions::max_reported`]).
    pub repaired: Vec<RepairedLine>,
    /// The thread id: the `id` of the first `session_meta` line.
    pub thread_id: ThreadId,
    /// The session's base instructions: the `base_instructions` of the first `session_meta` line
    /// that records them, as Codex takes them on resume (a fork whose own `session_meta` records
    /// none gets its parent's). `{text, provenance?}` and a plain string (taken as the text) are
    /// read; `null`, an absent field and a shape this reader does not know
    /// ([`LineRepair::UnknownBaseInstructions`], reported) record none.
    ///
    /// Through a snapshot ([`ResumeSource::Snapshot`](crate::ResumeSource::Snapshot)), those of
    /// the covered prefix come from the snapshot, or the lines after it are read for them when
    /// the prefix records none.
    pub base_instructions: Option<BaseInstructions>,
    /// The file is in the legacy, pre-envelope format.
    pub legacy: bool,
    /// For a paginated file (`history_mode: "paginated"` in its first `session_meta`): the base it
    /// continues and what its ordinals showed. `None` for a legacy file.
    pub pagination: Option<Pagination>,
    /// What resume leaves out: legacy ghost snapshots and state lines, `system` messages, lines
    /// of types resume does not turn into items, counted by kind.
    pub left_out: LeftOut,
    /// The `world_state` lines read, and what rebuilding the world-state baseline from them
    /// found: patches ignored for want of a baseline, states that are not a valid snapshot or
    /// patch. The reader counts the lines; resume fills in the rest.
    pub world_state: WorldStateReport,
    /// The rollout's last turn when it was started and neither completed nor aborted: a
    /// `task_started` (or `turn_started`) event with no `task_complete`, `turn_complete` or
    /// `turn_aborted` after it. `None` when the last turn ended, and in a rollout without turn
    /// events. Filled in by resume (the reader alone leaves it `None`); through a snapshot, it is
    /// the same as a full resume's (`docs/codex-compatibility.md`, "Incomplete turns").
    pub incomplete_turn: Option<IncompleteTurn>,
}

/// The last turn of a resumed rollout, started and never completed nor aborted: the session
/// stopped inside it (interrupted, crashed, cut off mid-stream). The items it recorded are in the
/// history; the calls among them still without an output are repaired by the next projection
/// (a synthetic `aborted` output, never written to the rollout).
///
/// Serializes as `{"turn_id", "started_line", "start", "items", "calls_without_output"}`
/// (`turn_id` null when the event had none; `docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IncompleteTurn {
    /// The turn id the `task_started` event carried, if any.
    pub turn_id: Option<TurnId>,
    /// The 1-based line number of that `task_started` event.
    pub started_line: u64,
    /// The history position of the first item the turn recorded (the history's length when it
    /// recorded none). After a compaction inside the turn, the first item recorded after it;
    /// after a rollback inside the turn, at most the history's length.
    pub start: usize,
    /// How many items the turn recorded: the history's positions `start..start + items`, the end
    /// of the history.
    pub items: usize,
    /// The calls the turn recorded that have no output in the history, in history order.
    pub calls_without_output: Vec<OpenCall>,
}

/// A call recorded without its output (see [`IncompleteTurn`]).
///
/// Serializes as `{"position", "call_id", "kind", "family"}` (`kind` the item type, `family`
/// `function`, `custom` or `tool_search`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenCall {
    /// Its history position.
    pub position: usize,
    /// Its call id.
    pub call_id: Option<CallId>,
    /// Its kind (`function_call`, `custom_tool_call`, `local_shell_call`, `tool_search_call`).
    pub kind: ItemKind,
    /// The pairing family its output would belong to.
    pub family: Family,
}

impl Serialize for OpenCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_struct("OpenCall", 4)?;
        map.serialize_field("position", &self.position)?;
        map.serialize_field("call_id", &self.call_id)?;
        map.serialize_field("kind", self.kind.as_str())?;
        map.serialize_field("family", family_name(self.family))?;
        map.end()
    }
}

/// The snake_case name of a pairing family.
fn family_name(family: Family) -> &'static str {
    match family {
        Family::Function => "function",
        Family::Custom => "custom",
        Family::ToolSearch => "tool_search",
    }
}

impl fmt::Display for IncompleteTurn {
    /// One line: `turn <id> (line n) did not complete: k items, calls without output: a, b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.turn_id {
            Some(id) => write!(f, "turn {} ", id.as_str())?,
            None => f.write_str("turn (no id) ")?,
        }
        write!(
            f,
            "started at line {} did not complete: {} item{} recorded",
            self.started_line,
            self.items,
            if self.items == 1 { "" } else { "s" }
        )?;
        if !self.calls_without_output.is_empty() {
            f.write_str(", calls without output:")?;
            for call in &self.calls_without_output {
                let id = call.call_id.as_ref().map_or("(no id)", |id| id.as_str());
                write!(f, " {id} ({})", call.kind)?;
            }
        }
        Ok(())
    }
}

/// What rebuilding the world-state baseline from the `world_state` lines found.
///
/// Resume interprets only the `world_state` lines after the last line that clears the baseline
/// (a `compacted` line, a `thread_rolled_back` of at least one turn): the earlier ones cannot
/// change the result, so their `state` is not read (their shape, `{full, state}`, was checked
/// when the line was read; a line without it is in [`LoadReport::skipped`]).
///
/// Serializes as an object with every field under its own name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct WorldStateReport {
    /// `world_state` lines read (of the right shape).
    pub lines: u64,
    /// Those whose `state` resume interpreted: the ones after the last line that clears the
    /// baseline.
    pub replayed: u64,
    /// Patches ignored because there was no baseline to apply them to (as Codex ignores them,
    /// with the warning "ignored world-state patch without a full snapshot").
    pub ignored_patches: u64,
    /// Lines whose `state` is not a valid snapshot or patch; each drops the baseline (the next
    /// update renders in full).
    pub invalid: u64,
    /// The first [`WorldStateReport::MAX_ISSUES`] ignored and invalid lines, in file order.
    pub issues: Vec<WorldStateIssue>,
}

impl WorldStateReport {
    /// How many ignored or invalid lines are listed one by one; all are counted.
    pub const MAX_ISSUES: usize = DEFAULT_MAX_REPORTED;

    /// Counts and (up to the limit) lists a line that could not be applied.
    pub(crate) fn record(&mut self, issue: WorldStateIssue) {
        match issue.problem {
            WorldStateProblem::Change(WorldStateError::PatchWithoutBaseline) => {
                self.ignored_patches += 1;
            }
            WorldStateProblem::Change(_) | WorldStateProblem::Unreadable(_) => self.invalid += 1,
        }
        if self.issues.len() < Self::MAX_ISSUES {
            self.issues.push(issue);
        }
    }
}

impl fmt::Display for WorldStateReport {
    /// One line, e.g. `4 lines, 3 replayed, 1 patch without a baseline ignored (line 7)`, or
    /// `4 lines, 3 replayed, 1 invalid (line 9: a world-state merge patch must be a JSON object,
    /// not a string)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} lines, {} replayed", self.lines, self.replayed)?;
        if self.ignored_patches > 0 {
            write!(
                f,
                ", {} patch{} without a baseline ignored",
                self.ignored_patches,
                if self.ignored_patches == 1 { "" } else { "es" }
            )?;
            let lines: Vec<String> = self
                .issues
                .iter()
                .filter(|issue| issue.is_ignored_patch())
                .map(|issue| issue.line.to_string())
                .collect();
            if !lines.is_empty() {
                write!(f, " (line {})", lines.join(", "))?;
            }
        }
        if self.invalid > 0 {
            write!(f, ", {} invalid", self.invalid)?;
            let listed: Vec<String> = self
                .issues
                .iter()
                .filter(|issue| !issue.is_ignored_patch())
                .map(ToString::to_string)
                .collect();
            if !listed.is_empty() {
                write!(f, " ({})", listed.join("; "))?;
            }
        }
        Ok(())
    }
}

/// A `world_state` line resume could not apply to the baseline. Serializes as
/// `{"line", "offset"}` followed by the [`WorldStateProblem`]'s fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorldStateIssue {
    /// Its 1-based line number.
    pub line: u64,
    /// The byte offset of its first byte.
    pub offset: u64,
    /// What was wrong.
    #[serde(flatten)]
    pub problem: WorldStateProblem,
}

impl WorldStateIssue {
    /// Whether this is a patch ignored for want of a baseline (not an invalid line).
    pub fn is_ignored_patch(&self) -> bool {
        matches!(
            self.problem,
            WorldStateProblem::Change(WorldStateError::PatchWithoutBaseline)
        )
    }
}

impl fmt::Display for WorldStateIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

/// Why a `world_state` line could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorldStateProblem {
    /// Applying the change failed: a patch without a baseline (ignored, the baseline stays
    /// absent), or a state that is not a valid snapshot or patch (the baseline is dropped).
    Change(WorldStateError),
    /// The `state` could not be read into a JSON value (serde's message), e.g. nested deeper
    /// than the parser allows; the baseline is dropped.
    Unreadable(String),
}

impl Serialize for WorldStateProblem {
    /// `{"problem", "message"}`: `problem` is `ignored_patch` (a patch without a baseline),
    /// `invalid_change` or `unreadable`; `message` the display text.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        let name = match self {
            WorldStateProblem::Change(WorldStateError::PatchWithoutBaseline) => "ignored_patch",
            WorldStateProblem::Change(_) => "invalid_change",
            WorldStateProblem::Unreadable(_) => "unreadable",
        };
        map.serialize_entry("problem", name)?;
        map.serialize_entry("message", &self.to_string())?;
        map.end()
    }
}

impl fmt::Display for WorldStateProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldStateProblem::Change(error) => write!(f, "{error}"),
            WorldStateProblem::Unreadable(why) => write!(f, "unreadable state: {why}"),
        }
    }
}

impl LoadReport {
    /// The thread's history mode: paginated when [`pagination`](LoadReport::pagination) is
    /// there.
    pub fn history_mode(&self) -> HistoryMode {
        match self.pagination {
            Some(_) => HistoryMode::Paginated,
            None => HistoryMode::Legacy,
        }
    }

    /// The listed skipped lines other than blank ones.
    pub fn malformed(&self) -> impl Iterator<Item = &SkippedLine> {
        self.skipped
            .iter()
            .filter(|line| line.reason.is_malformed())
    }
}

/// One file of a lineage ([`Rollout::lineage`](super::Rollout::lineage)), oldest first.
///
/// Serializes as `{"rollout_id", "path", "cut", "lines", "first_ordinal", "last_ordinal"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LineageFile {
    /// Its rollout id (from its name; its thread id when the name does not give one).
    pub rollout_id: ThreadId,
    /// The file.
    pub path: PathBuf,
    /// Where the next newer file cut it (`None` for the newest file).
    pub cut: Option<HistoryBase>,
    /// How many of its usable lines the thread's history takes.
    pub lines: usize,
    /// The lowest and highest ordinal of those lines.
    pub first_ordinal: Option<u64>,
    /// See `first_ordinal`.
    pub last_ordinal: Option<u64>,
    /// What reading the file (up to its cut) found.
    #[serde(skip)]
    pub report: LoadReport,
    /// The BLAKE3 digest of an ancestor's bytes up to its cut, as read (`None` for the newest
    /// file): what a snapshot of the thread checks the ancestor against.
    #[serde(skip)]
    pub(crate) digest: Option<blake3::Hash>,
}
