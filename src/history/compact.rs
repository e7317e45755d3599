//! Local (summary) compaction (reference §5.5).

use crate::item::{ContentItem, Entry, ItemKind, Message, ResponseItem, Role};

use super::History;
use super::truncate::{TruncationPolicy, approx_token_count, truncate_text};
use super::turns::{SUMMARY_PREFIX, is_contextual_user_text, is_summary_text};

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
    pub fn user_messages(&self) -> Vec<String> {
        self.iter()
            .filter(|entry| entry.kind() == ItemKind::Message && entry.role() == Some(Role::User))
            .filter_map(|entry| match entry.to_item() {
                Ok(ResponseItem::Message(message)) => Some(message),
                _ => None,
            })
            .filter_map(|message| {
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
                (!contextual && !summary && !texts.is_empty()).then(|| texts.join("\n"))
            })
            .collect()
    }

    /// Compacts the history locally (§5.5): keeps the most recent real user messages within
    /// 20,000 tokens (newest first; the first that does not fit is middle-truncated to what is
    /// left, and selection stops), in chronological order, each as a user message, followed by
    /// the summary as a user message (`(no summary available)` when `summary_text` is empty).
    /// Replaces the history (bumping its version) and returns what the `compacted` rollout line
    /// records. `summary_text` is the whole text; see [`summary_text`] to build it from a model's
    /// summary.
    ///
    /// Time: O(n) plus the size of the user messages.
    pub fn compact(&mut self, summary_text: &str) -> Compacted {
        let user_messages = self.user_messages();
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
        let replacement_history: Vec<Entry> = kept
            .into_iter()
            .filter_map(|text| {
                Entry::from_item(&ResponseItem::Message(Message::text(Role::User, text))).ok()
            })
            .collect();
        self.replace(replacement_history.iter().cloned());
        Compacted {
            message: summary_text.to_owned(),
            replacement_history,
        }
    }
}
