//! What an item means for turns: user-turn boundaries and contextual fragments.
//!
//! A rollback counts *user turns*: real user input, not the context a harness injects as user or
//! developer messages. The markers below recognise that context. They follow Codex's lists; where
//! Codex's exact markers were not known to this project (additional context, internal model
//! context, legacy warnings, next-prompt suggestions, hook prompts, the "approved command prefixes
//! saved" developer message), they are left out, so such messages count as real input
//! (`docs/codex-compatibility.md`).
//!
//! The classification belongs to the item layer: an entry records whether it starts a user turn
//! when it is built, so that the history can count turns without parsing.

use super::entry::Entry;
use super::error::ItemError;
use super::kind::ItemKind;
use super::model::{ContentItem, ResponseItem, Role};

/// The fixed paragraph that opens a local-compaction summary message (Codex's summary prefix).
///
/// A user message that starts with this text followed by `\n` is a summary, not a real user turn.
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:";

/// Start and end markers of contextual fragments found in user messages.
const USER_FRAGMENT_MARKERS: &[(&str, &str)] = &[
    ("# AGENTS.md instructions for ", "</INSTRUCTIONS>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
];

/// Text prefixes of contextual fragments found in developer messages.
const DEVELOPER_FRAGMENT_PREFIXES: &[&str] = &[
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<multi_agent_mode>",
    "<environments_instructions>",
    "<plugins_instructions>",
    "<skills_instructions>",
    "<personality_spec>",
    "<token_budget>",
    "<context_window>",
    "<context_window_guidance>",
    "<rollout_budget>",
    "<managed_developer_instructions>",
    "<apps_instructions>",
    "<multi_agent_role>",
];

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn ends_with_ignore_case(text: &str, suffix: &str) -> bool {
    text.len() >= suffix.len()
        && text
            .get(text.len() - suffix.len()..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(suffix))
}

/// Whether a text is a contextual user fragment: trimmed, it starts with a start marker and ends
/// with the matching end marker, both compared case-insensitively.
pub fn is_contextual_user_text(text: &str) -> bool {
    let text = text.trim();
    USER_FRAGMENT_MARKERS.iter().any(|(start, end)| {
        starts_with_ignore_case(text, start) && ends_with_ignore_case(text, end)
    })
}

/// Whether a text is a contextual developer fragment (it starts with a known tag).
pub fn is_contextual_developer_text(text: &str) -> bool {
    let text = text.trim_start();
    DEVELOPER_FRAGMENT_PREFIXES
        .iter()
        .any(|prefix| starts_with_ignore_case(text, prefix))
}

/// Whether a text is a local-compaction summary message.
pub fn is_summary_text(text: &str) -> bool {
    text.strip_prefix(SUMMARY_PREFIX)
        .is_some_and(|rest| rest.starts_with('\n'))
}

fn texts(content: &[ContentItem]) -> impl Iterator<Item = &str> {
    content.iter().filter_map(|part| match part {
        ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => {
            Some(text.as_str())
        }
        ContentItem::InputImage(_) | ContentItem::InputAudio { .. } | ContentItem::Other => None,
    })
}

/// Whether an assistant message's text is a structured inter-agent instruction: the JSON of an
/// inter-agent communication, i.e. an object with string `author` and `recipient`. (The exact
/// upstream shape beyond these two keys is not specified by the reference.)
fn is_inter_agent_instruction(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct InterAgent {
        #[allow(dead_code)]
        author: String,
        #[allow(dead_code)]
        recipient: String,
    }
    let text = text.trim();
    text.starts_with('{') && serde_json::from_str::<InterAgent>(text).is_ok()
}

/// What a message means for turn counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnRole {
    /// A user-turn boundary.
    Boundary,
    /// Context a harness injected: trimmed above a rolled-back turn.
    ContextUpdate {
        /// The developer message also holds non-contextual text (a mixed bundle).
        mixed: bool,
    },
    /// Anything else.
    Other,
}

/// Classifies an entry for turn counting. Parses the JSON only for messages.
///
/// # Errors
///
/// [`ItemError::InvalidJson`] when a message's text does not parse (see [`Entry::to_item`]).
pub(crate) fn turn_role(entry: &Entry) -> Result<TurnRole, ItemError> {
    Ok(match entry.kind() {
        ItemKind::AgentMessage => TurnRole::Boundary,
        ItemKind::Message => turn_role_of(&entry.to_item()?),
        _ => TurnRole::Other,
    })
}

/// Classifies a typed item for turn counting: an `agent_message`, a user message that is neither
/// contextual nor a summary, and an assistant message holding a structured inter-agent instruction
/// start a user turn; contextual user and developer messages are context updates.
pub(crate) fn turn_role_of(item: &ResponseItem) -> TurnRole {
    let message = match item {
        ResponseItem::AgentMessage(_) => return TurnRole::Boundary,
        ResponseItem::Message(message) => message,
        _ => return TurnRole::Other,
    };
    match message.role {
        Role::User => {
            if texts(&message.content).any(is_contextual_user_text) {
                TurnRole::ContextUpdate { mixed: false }
            } else if texts(&message.content).next().is_some_and(is_summary_text) {
                TurnRole::Other
            } else {
                TurnRole::Boundary
            }
        }
        Role::Assistant => {
            let mut parts = texts(&message.content);
            match (parts.next(), parts.next()) {
                (Some(text), None) if is_inter_agent_instruction(text) => TurnRole::Boundary,
                _ => TurnRole::Other,
            }
        }
        Role::Developer => {
            let contextual = texts(&message.content)
                .filter(|text| is_contextual_developer_text(text))
                .count();
            if contextual == 0 {
                TurnRole::Other
            } else {
                let all = texts(&message.content).count();
                TurnRole::ContextUpdate {
                    mixed: contextual < all,
                }
            }
        }
        Role::System => TurnRole::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_fragments_match_trimmed_and_case_insensitive() {
        assert!(is_contextual_user_text(
            "  <ENVIRONMENT_CONTEXT>\n<cwd>/x</cwd>\n</environment_context>\n"
        ));
        assert!(is_contextual_user_text(
            "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>"
        ));
        assert!(!is_contextual_user_text("<environment_context> but no end"));
        assert!(!is_contextual_user_text("hello"));
    }

    #[test]
    fn developer_fragments_match_by_prefix() {
        assert!(is_contextual_developer_text(
            "<permissions instructions>\nx"
        ));
        assert!(is_contextual_developer_text("<MODEL_SWITCH>x"));
        assert!(!is_contextual_developer_text("Be terse."));
    }

    #[test]
    fn summary_requires_prefix_and_newline() {
        assert!(is_summary_text(&format!("{SUMMARY_PREFIX}\nsummary")));
        assert!(!is_summary_text(SUMMARY_PREFIX));
        assert!(!is_summary_text("summary"));
    }

    #[test]
    fn inter_agent_instruction_needs_author_and_recipient() {
        assert!(is_inter_agent_instruction(
            r#"{"author":"/root","recipient":"/root/w","content":"do it"}"#
        ));
        assert!(!is_inter_agent_instruction(
            "author: /root\nrecipient: /root/w"
        ));
    }
}
