//! Local (summary) compaction, as Codex compacts a history without a remote model's help.
//!
//! Compaction keeps the newest real user messages within a token budget. [`UserWindow`] holds
//! those messages with their token counts, so that compacting again after a few more messages
//! costs what changed, not the whole history: resume replays every legacy compaction of a file
//! through one window (linear in the file, where re-reading every kept message at each compaction
//! was quadratic).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::item::{
    ContentItem, Entry, ItemError, ItemKind, Message, ResponseItem, Role, SUMMARY_PREFIX,
    approx_token_count, is_contextual_user_text, is_summary_text, kinds_mark_context,
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

/// The text of the user message a compaction ends with: the summary, or [`EMPTY_SUMMARY`].
fn summary_message(summary_text: &str) -> &str {
    if summary_text.is_empty() {
        EMPTY_SUMMARY
    } else {
        summary_text
    }
}

/// Whether a user message made of `texts` is real user input: not context a harness injected,
/// not an earlier summary, not empty.
fn is_real_user_input(texts: &[&str]) -> bool {
    let contextual = texts.iter().any(|text| is_contextual_user_text(text));
    let summary = texts.first().is_some_and(|text| is_summary_text(text));
    !contextual && !summary && !texts.is_empty()
}

/// The text of `entry` when it is a real user message (its text parts joined with `\n`); a
/// message its content kinds mark as context (a world-state render) is none.
///
/// # Errors
///
/// [`ItemError::InvalidJson`] when a user message does not parse (an entry from a crafted
/// snapshot, see [`Entry::to_item`]).
pub(crate) fn real_user_text(entry: &Entry) -> Result<Option<String>, ItemError> {
    if entry.kind() != ItemKind::Message || entry.role() != Some(Role::User) {
        return Ok(None);
    }
    let ResponseItem::Message(message) = entry.to_item()? else {
        return Ok(None);
    };
    if kinds_mark_context(message.meta.as_ref(), message.content.len()) {
        return Ok(None);
    }
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
    Ok(is_real_user_input(&texts).then(|| texts.join("\n")))
}

/// A real user message in a [`UserWindow`].
#[derive(Debug, Clone)]
struct WindowMessage {
    text: Arc<str>,
    tokens: usize,
    /// `Some(g)` when the text, once a compaction has rewritten it as a one-part user message,
    /// no longer reads as real user input (the parts of a message joined into one can read as
    /// injected context or a summary, and so can a truncated text): compaction `g` keeps it, and
    /// from compaction `g + 1` on it is a ghost, as if the rewritten message were not there.
    fades_after: Option<u64>,
}

/// The real user messages a local compaction chooses from, oldest first, each with its token
/// count, and their total.
#[derive(Debug, Clone, Default)]
pub(crate) struct UserWindow {
    messages: VecDeque<WindowMessage>,
    /// The tokens of the visible messages.
    tokens: usize,
    /// How many compactions the window went through.
    generation: u64,
    /// How many of `messages` are ghosts.
    ghosts: usize,
    /// Tokens and count of the messages that fade after the last compaction (they turn into
    /// ghosts at the next one), and of those that fade after the next.
    fading: (usize, usize),
    fading_next: (usize, usize),
}

impl UserWindow {
    /// The real user messages of `history`. Time: O(n), parsing the user messages.
    pub(crate) fn of(history: &History) -> Result<UserWindow, ItemError> {
        let mut window = UserWindow::default();
        for entry in history.iter() {
            if let Some(text) = real_user_text(entry)? {
                window.push(text.into());
            }
        }
        Ok(window)
    }

    /// A newer real user message.
    pub(crate) fn push(&mut self, text: Arc<str>) {
        let tokens = approx_token_count(&text);
        let fades_after = (!is_real_user_input(&[&text])).then(|| self.generation + 1);
        if fades_after.is_some() {
            self.fading_next.0 += tokens;
            self.fading_next.1 += 1;
        }
        self.tokens = self.tokens.saturating_add(tokens);
        self.messages.push_back(WindowMessage {
            text,
            tokens,
            fades_after,
        });
    }

    fn is_ghost(&self, message: &WindowMessage) -> bool {
        message.fades_after.is_some_and(|g| g < self.generation)
    }

    /// Removes the oldest message, visible or ghost; returns it when it was visible.
    fn pop_oldest(&mut self) -> Option<Option<WindowMessage>> {
        let message = self.messages.pop_front()?;
        if self.is_ghost(&message) {
            self.ghosts -= 1;
            return Some(None);
        }
        self.tokens -= message.tokens;
        if message.fades_after == Some(self.generation) {
            self.fading.0 -= message.tokens;
            self.fading.1 -= 1;
        }
        Some(Some(message))
    }

    /// Keeps what local compaction keeps: the newest messages within
    /// [`COMPACT_USER_MESSAGE_TOKENS`]; the newest one that does not fit is middle-truncated to
    /// the tokens left (when any are left), and older ones are dropped. Time: O(1) amortized per
    /// message dropped, plus the truncated message's size.
    pub(crate) fn compact(&mut self) {
        // The messages the last compaction rewrote and that no longer read as user input turn
        // into ghosts.
        self.generation += 1;
        self.tokens -= self.fading.0;
        self.ghosts += self.fading.1;
        self.fading = std::mem::take(&mut self.fading_next);

        let mut overflow = None;
        while self.tokens > COMPACT_USER_MESSAGE_TOKENS {
            match self.pop_oldest() {
                Some(Some(message)) => overflow = Some(message),
                Some(None) => {}
                None => break,
            }
        }
        let remaining = COMPACT_USER_MESSAGE_TOKENS - self.tokens;
        if remaining == 0 {
            // Selection, newest first, stops once the budget is spent: older messages of no
            // tokens are not kept either.
            while self
                .messages
                .front()
                .is_some_and(|message| self.is_ghost(message) || message.tokens == 0)
            {
                self.pop_oldest();
            }
        } else if let Some(message) = overflow {
            let text: Arc<str> = truncate_text(&message.text, TruncationPolicy::Tokens(remaining))
                .into_owned()
                .into();
            let tokens = approx_token_count(&text);
            let fades_after = (!is_real_user_input(&[&text])).then_some(self.generation);
            if fades_after.is_some() {
                self.fading.0 += tokens;
                self.fading.1 += 1;
            }
            self.tokens = self.tokens.saturating_add(tokens);
            self.messages.push_front(WindowMessage {
                text,
                tokens,
                fades_after,
            });
        }
    }

    /// The visible messages, oldest first.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &Arc<str>> {
        self.messages
            .iter()
            .filter(|message| !self.is_ghost(message))
            .map(|message| &message.text)
    }

    /// How many visible messages the window holds.
    pub(crate) fn len(&self) -> usize {
        self.messages.len() - self.ghosts
    }

    /// The history a compaction that kept `kept` and has `summary_text` replaces a history with:
    /// each kept message as a user message, then the summary.
    pub(crate) fn replacement_history<'a>(
        kept: impl IntoIterator<Item = &'a Arc<str>>,
        summary_text: &str,
    ) -> Result<Vec<Entry>, ItemError> {
        kept.into_iter()
            .map(|text| &**text)
            .chain([summary_message(summary_text)])
            .map(|text| Entry::from_item(&ResponseItem::Message(Message::text(Role::User, text))))
            .collect()
    }

    /// Adds the summary message of a compaction, when it counts as real user input for the next
    /// one (an empty summary's `(no summary available)` does; a summary with the fixed prefix
    /// does not).
    pub(crate) fn push_summary(&mut self, summary_text: &str) {
        let text = summary_message(summary_text);
        if is_real_user_input(&[text]) {
            self.push(text.into());
        }
    }
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
            messages.extend(real_user_text(entry)?);
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
        let mut window = UserWindow::of(self)?;
        window.compact();
        let replacement_history = UserWindow::replacement_history(window.texts(), summary_text)?;
        self.replace(replacement_history.iter().cloned());
        Ok(Compacted {
            message: summary_text.to_owned(),
            replacement_history,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window_of(texts: &[&str]) -> UserWindow {
        let mut window = UserWindow::default();
        for text in texts {
            window.push((*text).into());
        }
        window
    }

    fn tokens_of(window: &UserWindow) -> Vec<usize> {
        window
            .texts()
            .map(|text| approx_token_count(text))
            .collect()
    }

    /// The window keeps what the newest-first selection keeps: with messages of 6,000, 8,000,
    /// 9,000 and 5,000 tokens, the newest three fit only with the oldest of them cut.
    #[test]
    fn the_window_keeps_the_newest_messages_within_budget() {
        let texts: Vec<String> = [6_000, 8_000, 9_000, 5_000]
            .iter()
            .map(|tokens| "a".repeat(tokens * 4))
            .collect();
        let mut window = window_of(&texts.iter().map(String::as_str).collect::<Vec<_>>());
        window.compact();
        let kept = tokens_of(&window);
        assert_eq!(kept.len(), 3);
        assert_eq!(&kept[1..], [9_000, 5_000]);
        assert!(kept[0] < 8_000 && kept[0] > 5_000, "{kept:?}");
        assert!(
            window
                .texts()
                .next()
                .expect("kept")
                .contains("tokens truncated")
        );
        assert_eq!(window.len(), 3);
    }

    /// A window within budget is left as it is.
    #[test]
    fn a_window_within_budget_is_unchanged() {
        let mut window = window_of(&["one", "two", "three"]);
        window.compact();
        let texts: Vec<&str> = window.texts().map(|text| &**text).collect();
        assert_eq!(texts, ["one", "two", "three"]);
    }

    /// Once the budget is spent exactly, selection stops: an older message of no tokens is not
    /// kept, one between kept messages is.
    #[test]
    fn selection_stops_when_the_budget_is_spent() {
        let full = "a".repeat(COMPACT_USER_MESSAGE_TOKENS * 4);
        let half = "a".repeat(COMPACT_USER_MESSAGE_TOKENS * 2);
        let mut window = window_of(&["", &full]);
        window.compact();
        assert_eq!(tokens_of(&window), [COMPACT_USER_MESSAGE_TOKENS]);

        let mut window = window_of(&[&half, "", &half]);
        window.compact();
        assert_eq!(window.len(), 3);
    }

    /// Compacting the window again gives what compacting the rewritten history gives, also
    /// where a rewritten message no longer reads as user input: the parts of one message,
    /// joined, read as injected context.
    #[test]
    fn compacting_again_matches_the_rewritten_history() -> Result<(), ItemError> {
        // Two parts that read as user input one by one and as injected context once joined.
        let split_context = |padding: usize| {
            let mut message = Message::text(
                Role::User,
                format!("<environment_context>{}", "c".repeat(padding)),
            );
            message.content.push(ContentItem::InputText {
                text: "</environment_context>".to_owned(),
            });
            ResponseItem::Message(message)
        };
        let user = |text: String| ResponseItem::Message(Message::text(Role::User, text));
        let big = "b".repeat(12_000 * 4);
        let mut history = History::new();
        // Oldest first: one that the first compaction cuts (and whose cut text still reads as
        // context), a small one, one that fits whole.
        history.record(&split_context(30_000 * 4))?;
        history.record(&split_context(0))?;
        history.record(&user(big.clone()))?;
        let mut window = UserWindow::of(&history)?;
        assert_eq!(window.len(), 3);
        for summary in ["", "second", "", "fourth"] {
            history.compact(summary)?;
            window.compact();
            assert_eq!(
                window.len(),
                window.texts().count(),
                "ghosts are not counted"
            );
            let replacement = UserWindow::replacement_history(window.texts(), summary)?;
            assert_eq!(
                replacement.iter().collect::<Vec<_>>(),
                history.iter().collect::<Vec<_>>(),
                "after compacting with {summary:?}"
            );
            window.push_summary(summary);
            history.record(&user("more".to_owned()))?;
            window.push("more".into());
        }
        // The joined messages were kept by the first compaction only: what is left is the big
        // message, the summaries that read as user input, and the messages since.
        assert_eq!(
            history.user_messages()?,
            [
                big.as_str(),
                EMPTY_SUMMARY,
                "more",
                "second",
                "more",
                EMPTY_SUMMARY,
                "more",
                "fourth",
                "more"
            ]
        );
        Ok(())
    }
}
