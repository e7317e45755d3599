//! Local (summary) compaction, as Codex compacts a history without a remote model's help.

use crate::item::{
    ContentItem, Entry, ItemError, ItemKind, Message, ResponseItem, Role, SUMMARY_PREFIX,
    approx_token_count, is_contextual_user_text, is_summary_text,
};

use super::History;
use super::truncate::{TruncationPolicy, truncate_text};

/// Token budget for the user messages a compacted history keeps.
pub const COMPACT_USER_MESSAGE_TOKENS: usize = 20_000;

/// The summary text used when a compaction has none.
pub const EMPTY_SUMMARY: &str = "(no summary available)";

/// What a compaction produced: the summary text and the replacement history, which is also what
/// the `compacted` rollout line records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The summary text (the `message` of the `compacted` line).
    pub message: String,
    /// The history after compaction, in order.
    pub replacement_history: Vec<Entry>,
}

/// The summary message text for a model's summary: the fixed prefix, a newline, the summary.
pub fn summary_text(model_summary: &str) -> String {
    format!("{SUMMARY_PREFIX}\n{model_summary}")
}

impl History {
    /// The real user messages of the history, oldest first: user messages that are neither
    /// context a harness injected nor earlier summaries. Each is its text parts joined with `\n`.
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when a user message does not parse (an entry from a crafted
    /// snapshot, see [`Entry::to_item`]).
    pub fn user_messages(&self) -> Result<Vec<String>, ItemError> {
        let mut messages = Vec::new();
        for entry in self.iter() {
            if entry.kind() != ItemKind::Message || entry.role() != Some(Role::User) {
                continue;
            }
            let ResponseItem::Message(message) = entry.to_item()? else {
                continue;
            };
            let texts: Vec<&str> = message
                .content
                .iter()
                .filter_map(|part| match part {
                    ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => {
                        Some(text.as_str())
                    }
                    _ => None,
                })
                .collect();
            let contextual = texts.iter().any(|text| is_contextual_user_text(text));
            let summary = texts.first().is_some_and(|text| is_summary_text(text));
            if !contextual && !summary && !texts.is_empty() {
                messages.push(texts.join("\n"));
            }
        }
        Ok(messages)
    }

    /// Compacts the history locally: keeps the most recent real user messages within 20,000
    /// tokens (newest first; the first that does not fit is middle-truncated to what is left, and
    /// selection stops), in chronological order, each as a user message, followed by the summary
    /// as a user message (`(no summary available)` when `summary_text` is empty). Replaces the
    /// history (bumping its version) and returns what the `compacted` rollout line records.
    /// `summary_text` is the whole text; see [`summary_text`] to build it from a model's summary.
    ///
    /// Time: O(n) plus the size of the user messages.
    ///
    /// # Errors
    ///
    /// [`ItemError::TooLarge`] when the summary is over 4 GiB; as [`History::user_messages`].
    /// The history is unchanged on error.
    pub fn compact(&mut self, summary_text: &str) -> Result<Compacted, ItemError> {
        let user_messages = self.user_messages()?;
        let mut remaining = COMPACT_USER_MESSAGE_TOKENS;
        let mut kept = Vec::new();
        for text in user_messages.iter().rev() {
            if remaining == 0 {
                break;
            }
            let tokens = approx_token_count(text);
            if tokens <= remaining {
                kept.push(text.clone());
                remaining -= tokens;
            } else {
                kept.push(truncate_text(text, TruncationPolicy::Tokens(remaining)).into_owned());
                break;
            }
        }
        kept.reverse();
        let summary = if summary_text.is_empty() {
            EMPTY_SUMMARY
        } else {
            summary_text
        };
        kept.push(summary.to_owned());
        let replacement_history = kept
            .into_iter()
            .map(|text| Entry::from_item(&ResponseItem::Message(Message::text(Role::User, text))))
            .collect::<Result<Vec<Entry>, ItemError>>()?;
        self.replace(replacement_history.iter().cloned());
        Ok(Compacted {
            message: summary_text.to_owned(),
            replacement_history,
        })
    }
}
