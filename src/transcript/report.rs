//! What reading a transcript and choosing its conversation found: [`TranscriptReport`] for the
//! file, [`ConversationReport`] for one thread's conversation.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::rollout::{RepairedLine, SkipCounts, SkippedLine};

/// What the reader found besides the records it keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TranscriptReport {
    /// Lines in the file.
    pub lines: u64,
    /// Lines that could not be used, listed up to the limit
    /// ([`ReadOptions::max_reported`](crate::ReadOptions::max_reported)); a torn last line
    /// always.
    pub skipped: Vec<SkippedLine>,
    /// Every skipped line, counted by reason.
    pub skip_counts: SkipCounts,
    /// Whether the last line was torn (malformed and without its `\n`).
    pub torn_tail: bool,
    /// Lines used after a repair (a byte-order mark, invalid UTF-8 replaced).
    pub repaired: Vec<RepairedLine>,
    /// Records read past, by kind: what is never sent (`progress`, `attachment`,
    /// `file-history-snapshot`, `queue-operation`, `summary`, `last-prompt`, and `system/<subtype>`
    /// for a system record that is not a local command's output). At most
    /// [`TranscriptReport::MAX_KINDS`] names are kept; the rest are counted under `other`.
    pub read_past: BTreeMap<String, u64>,
    /// Records whose `uuid` a later line used again: the later line replaced them.
    pub replaced: u64,
}

impl TranscriptReport {
    /// How many kinds [`TranscriptReport::read_past`] names.
    pub const MAX_KINDS: usize = 64;
    /// The longest kind name it keeps, in bytes.
    pub const MAX_KIND_BYTES: usize = 64;

    /// Counts one record read past.
    pub(crate) fn count_read_past(&mut self, kind: &str) {
        let known = self.read_past.contains_key(kind);
        let name = if known
            || (self.read_past.len() < Self::MAX_KINDS && kind.len() <= Self::MAX_KIND_BYTES)
        {
            kind
        } else {
            "other"
        };
        *self.read_past.entry(name.to_owned()).or_default() += 1;
    }
}

/// Where a thread's conversation as the file chains it would lose history, and where it now
/// hangs instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rescue {
    /// The record re-attached: its line and uuid.
    pub line: u64,
    /// Its uuid.
    pub uuid: String,
    /// Why.
    pub kind: RescueKind,
    /// The uuid it named: the parent never written, or the progress record it hung from.
    pub named: String,
    /// The uuid of the record it now hangs from.
    pub now_under: String,
    /// How many more records its conversation has for it (0 when it is on no sent path).
    pub brought_back: u64,
}

/// Why a record was re-attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RescueKind {
    /// Its parent was never written (Claude Code stops its walk there).
    MissingParent,
    /// It hangs from a progress record of an old version that forks the chain (Claude Code
    /// would leave the turns written since under the same ancestor out).
    ProgressFork,
}

/// Without the line, which the caller names.
impl fmt::Display for Rescue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.kind {
            RescueKind::MissingParent => "its parent was never written",
            RescueKind::ProgressFork => "it hangs from a progress fork",
        };
        write!(
            f,
            "record {} re-attached under {} ({why}: {}); {} record(s) brought back",
            self.uuid, self.now_under, self.named, self.brought_back
        )
    }
}

/// Records of the thread the conversation does not take: a rewind, an abandoned call, a retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Branch {
    /// The first record of the branch: its line.
    pub line: u64,
    /// Its uuid.
    pub uuid: String,
    /// The uuid of the record on the conversation's path it forks from (`None`: it hangs from
    /// nothing the path holds).
    pub forks_from: Option<String>,
    /// How many records the branch holds.
    pub records: u64,
}

/// Without the line, which the caller names.
impl fmt::Display for Branch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "branch of {} record(s) from {} not taken",
            self.records,
            self.forks_from
                .as_deref()
                .unwrap_or("(no record of the path)")
        )
    }
}

/// The compaction a conversation starts after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactCut {
    /// The line of the last `compact_boundary` on the path.
    pub line: u64,
    /// How many records of the path lie before it (not sent: the summary after it stands for
    /// them).
    pub records_before: u64,
}

/// Something on the conversation's path that is not sent, as Claude Code leaves it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The record's line.
    pub line: u64,
    /// What was left out.
    pub what: DroppedKind,
}

/// What a resume leaves out of a sent record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum DroppedKind {
    /// An API error shown as an assistant line (`isApiErrorMessage`).
    ApiError,
    /// A record shown, never sent (`isVirtual`).
    Virtual,
    /// Assistant lines whose message id holds only thinking.
    ThinkingOnly,
    /// A block already sent in the same message.
    RepeatedBlock,
    /// A `tool_use` whose id an earlier one used.
    ReusedToolId {
        /// The id.
        id: String,
    },
    /// A text block that is empty or only white space (the API refuses it).
    EmptyText,
    /// A `tool_result` that answers no `tool_use` of the assistant message before it, or one
    /// answered already.
    UnpairedResult {
        /// The id it names.
        id: String,
    },
}

/// Without the line, which the caller names.
impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.what {
            DroppedKind::ApiError => "an API error message, not sent".to_owned(),
            DroppedKind::Virtual => "a virtual record, not sent".to_owned(),
            DroppedKind::ThinkingOnly => "a message of thinking only, not sent".to_owned(),
            DroppedKind::RepeatedBlock => "a block repeated in its message, sent once".to_owned(),
            DroppedKind::ReusedToolId { id } => format!("a second tool_use {id}, not sent"),
            DroppedKind::EmptyText => "an empty text block, not sent".to_owned(),
            DroppedKind::UnpairedResult { id } => {
                format!("a tool_result for {id} that answers no call just before it, not sent")
            }
        };
        f.write_str(&what)
    }
}

/// How one thread's conversation was chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConversationReport {
    /// The leaf the conversation ends at: its line (`None`: the thread has no message).
    pub leaf_line: Option<u64>,
    /// Re-attachments that keep history the file's chain would lose.
    pub rescues: Vec<Rescue>,
    /// Branches not taken.
    pub branches: Vec<Branch>,
    /// The compaction the conversation starts after.
    pub cut: Option<CompactCut>,
    /// What the path holds that is not sent.
    pub dropped: Vec<Dropped>,
}
