//! Claude Code transcripts: read them ([`Transcript`]), choose the conversation a resume sends
//! ([`Conversation`]) with every branch, rescue and cut reported, and hold it in a
//! [`History`] whose items keep the blocks they were read from, so that the Anthropic
//! projection gives the file's blocks back (`docs/claude-code.md`).

mod chain;
mod error;
mod format;
mod messages;
mod reader;
mod record;
mod repair;
mod report;
mod snapshot;
mod usage;

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::history::{History, TruncationPolicy};
use crate::provider::Target;

pub use error::TranscriptError;
pub use format::{ParseSessionFormatError, SessionFormat};
pub use reader::Transcript;
pub use repair::{REPAIR_MARK_KEY, REPAIR_RESULT_TEXT, TranscriptRepair};
pub use report::{
    Branch, CompactCut, ConversationReport, Dropped, DroppedKind, Rescue, RescueKind,
    TranscriptReport,
};
pub use snapshot::ResumedTranscript;
pub use usage::{MessageUsage, UsageTotals};

use messages::{Plain, SourcedItem, plain_item};

/// A record a conversation sends: its line and uuid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentRecord {
    /// The line, from 1.
    pub line: u64,
    /// The record's uuid.
    pub uuid: String,
}

/// The conversation a resume of one thread of a transcript sends, and how it was chosen.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// How it was chosen: the leaf, the rescues, the branches not taken, the compaction cut and
    /// what was left out.
    pub report: ConversationReport,
    sent: Vec<SentRecord>,
    items: Vec<SourcedItem>,
    path: PathBuf,
    /// The thread: `None` for the main one, a subagent by its id.
    pub(crate) thread: Option<String>,
    /// The records sent, by index into the transcript's records.
    pub(crate) sent_at: Vec<usize>,
    /// The records of the walk itself (the rest of those sent were put back as call batches).
    pub(crate) walked: HashSet<usize>,
}

impl Conversation {
    /// The records sent, in order.
    pub fn sent(&self) -> &[SentRecord] {
        &self.sent
    }

    /// The line of the record item `position` of [`Conversation::history`] was read from.
    pub fn item_line(&self, position: usize) -> Option<u64> {
        self.items.get(position).map(|item| item.line)
    }

    /// The items, in order: the JSON of each, one per block sent.
    pub fn items(&self) -> impl Iterator<Item = &str> + '_ {
        self.items.iter().map(|item| item.json.as_str())
    }

    /// The conversation as a history, nothing truncated: every item keeps the block it was read
    /// from where its plain form would not render back to it
    /// ([`ANTHROPIC_BLOCK_KEY`](crate::ANTHROPIC_BLOCK_KEY)).
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Item`] for a block whose item cannot be recorded (a `tool_use`
    /// without an id, say), naming its line.
    pub fn history(&self) -> Result<History, TranscriptError> {
        self.history_for(Target::AnthropicMessages)
    }

    /// The conversation as a history for `target`, nothing truncated. For the Anthropic
    /// Messages and Chat Completions APIs, [`Conversation::history`]. For the Responses API,
    /// each item in its plain form (no kept block, which that API would refuse), and the
    /// thinking blocks and the blocks that API has no form for left out
    /// ([`Conversation::left_out_for`]).
    ///
    /// # Errors
    ///
    /// As [`Conversation::history`].
    pub fn history_for(&self, target: Target) -> Result<History, TranscriptError> {
        let items = self
            .items
            .iter()
            .map(|item| (item.json.as_str(), item.line, item.block.as_str()));
        record(&self.path, items, target).map(|(history, _)| history)
    }

    /// How many items [`Conversation::history_for`] leaves out for `target`: for the Responses
    /// API the thinking blocks and the blocks it has no form for, none for the others.
    pub fn left_out_for(&self, target: Target) -> usize {
        match target {
            Target::Responses => self
                .items
                .iter()
                .filter(|item| matches!(plain_item(&item.json), Plain::LeftOut))
                .count(),
            Target::ChatCompletions | Target::AnthropicMessages => 0,
        }
    }
}

/// The history of `items` (each an item's JSON, the line and the block type it was read from)
/// for `target`, nothing truncated: for the Responses API the plain items (thinking and blocks
/// with no Responses form left out);
/// with how many were left out.
fn record<'i>(
    path: &std::path::Path,
    items: impl IntoIterator<Item = (&'i str, u64, &'i str)>,
    target: Target,
) -> Result<(History, usize), TranscriptError> {
    let mut history = History::with_truncation(TruncationPolicy::Bytes(usize::MAX));
    let mut left_out = 0;
    for (json, line, block) in items {
        let plain = match target {
            Target::Responses => plain_item(json),
            Target::ChatCompletions | Target::AnthropicMessages => Plain::Same(json),
        };
        let json = match &plain {
            Plain::LeftOut => {
                left_out += 1;
                continue;
            }
            Plain::Same(json) => json,
            Plain::Rewritten(json) => json.as_str(),
        };
        history
            .record_json(json)
            .map_err(|source| TranscriptError::Item {
                path: path.to_owned(),
                line,
                block: block.to_owned(),
                source,
            })?;
    }
    Ok((history, left_out))
}

impl Transcript {
    /// The conversation a resume sends: the main thread's, or for a subagent's own file (only
    /// sidechain records) that of the subagent with the latest leaf.
    pub fn conversation(&self) -> Conversation {
        if self.is_subagent_file() {
            let latest = self
                .subagents()
                .into_iter()
                .map(|agent| self.subagent_conversation(agent))
                .max_by_key(|conversation| {
                    conversation
                        .report
                        .leaf_line
                        .map(|line| self.records[self.index_of_line(line)].timestamp.clone())
                });
            if let Some(conversation) = latest {
                return conversation;
            }
        }
        self.thread_conversation(None)
    }

    /// The conversation of the subagent `agent_id` whose records the file holds inline.
    pub fn subagent_conversation(&self, agent_id: &str) -> Conversation {
        self.thread_conversation(Some(agent_id))
    }

    /// The Anthropic `messages` of the conversation [`Transcript::conversation`] chooses as a
    /// resume builds them from the file, before any repair of the pairing: every block as
    /// written, no `tool_use` answered, no result left out. What the Messages API says of them
    /// (`validate`) is what a resume that repairs nothing would be told.
    pub fn messages_as_written(&self) -> Vec<serde_json::Value> {
        messages::as_written(&self.records, &self.conversation().sent_at)
    }

    /// The record read from `line` (records are not in line order where a later line replaced
    /// one: a search, not a bisection).
    fn index_of_line(&self, line: u64) -> usize {
        self.records
            .iter()
            .position(|record| record.line == line)
            .unwrap_or(0)
    }

    fn thread_conversation(&self, thread: Option<&str>) -> Conversation {
        let chain::Path {
            sent,
            walked,
            mut report,
        } = chain::path(&self.records, thread);
        let items = messages::items(&self.records, &sent, &mut report.dropped);
        Conversation {
            report,
            sent: sent
                .iter()
                .map(|&at| SentRecord {
                    line: self.records[at].line,
                    uuid: self.records[at].uuid.to_string(),
                })
                .collect(),
            items,
            path: self.path().to_owned(),
            thread: thread.map(str::to_owned),
            sent_at: sent,
            walked,
        }
    }
}
