//! What reading a rollout found besides its usable lines: the [`LoadReport`], and why a line was
//! skipped.

use std::fmt;

use crate::item::ThreadId;

/// How the reader treats a line it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ReadMode {
    /// Skip it, report it in [`LoadReport::skipped`], and go on (Codex's behaviour).
    #[default]
    Lenient,
    /// Fail with [`RolloutError::BadLine`](super::RolloutError::BadLine) on the first such line
    /// that is not blank.
    Strict,
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
    /// Valid JSON, but not a line envelope (an object with a string `type` and a `payload`), or
    /// in a legacy file not an object.
    NotAnEnvelope(String),
    /// The payload of a `session_meta`, `compacted`, `event_msg` or `turn_context` line does not
    /// have that type's shape.
    InvalidPayload(String),
    /// A `response_item` (or an item of a `compacted` line's `replacement_history`) of a known
    /// item type without that type's shape.
    InvalidItem(String),
}

impl SkipReason {
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
        }
    }
}

/// A line the reader did not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Why.
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

/// What reading a rollout found besides its usable lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// Number of lines read, skipped ones included (after a snapshot: the number of the last line
    /// read, counting the lines the snapshot covers).
    pub lines: u64,
    /// Lines that were skipped, in file order; blank lines among them.
    pub skipped: Vec<SkippedLine>,
    /// The last line had no `\n` and could not be used: a write cut short. It is the last entry
    /// of [`skipped`](LoadReport::skipped).
    pub torn_tail: bool,
    /// The thread id: the `id` of the first `session_meta` line.
    pub thread_id: ThreadId,
    /// The file is in the legacy, pre-envelope format.
    pub legacy: bool,
    /// Legacy `ghost_snapshot` items dropped (as lines, or from replacement histories). Not a
    /// problem, so not in `skipped`.
    pub ghost_snapshots: u64,
    /// Legacy `{"record_type":"state",…}` lines passed over. Not a problem, so not in
    /// `skipped`.
    pub state_lines: u64,
}

impl LoadReport {
    /// Skipped lines other than blank ones.
    pub fn malformed(&self) -> impl Iterator<Item = &SkippedLine> {
        self.skipped
            .iter()
            .filter(|line| line.reason.is_malformed())
    }
}
