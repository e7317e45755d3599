//! What an item means for turns: user-turn boundaries and contextual fragments.
//!
//! A rollback counts *user turns*: real user input, not the context a harness injects as user or
//! developer messages. The markers below recognise that context, following Codex's lists (which
//! vary with its versions; `docs/codex-compatibility.md` says which are followed).
//!
//! The classification belongs to the item layer: an entry records whether it starts a user turn
//! when it is built, so that the history can count turns without parsing.

use serde_json::Value;

use super::inter_agent::is_inter_agent_instruction;
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
    // Codex's legacy goal context, read as internal model context.
    ("<goal_context>", "</goal_context>"),
    ("<next_prompt_suggestion>", "</next_prompt_suggestion>"),
];

/// Opening texts of warnings older Codex versions injected as user messages, matched on the
/// trimmed text, case-sensitively (the apply-patch warning also has a fixed ending).
const LEGACY_WARNING_PREFIXES: &[&str] = &[
    "Warning: The maximum number of unified exec processes you can keep open is",
    "Warning: Your account was flagged for potentially high-risk cyber activity",
];
const APPLY_PATCH_WARNING: (&str, &str) = (
    "Warning: apply_patch was requested via ",
    "Use the apply_patch tool instead of exec_command.",
);

/// Whether a user message's host metadata marks all of it as rendered context: its
/// `content_item_kinds` names one kind per part, and none is a kind of real user input. The world
/// state writes its fragments' kinds there (`environment.instructions`, …), as Codex does for the
/// context it injects (`agents_md.instructions`, `skills.selected_skill_instructions`, …), so such
/// a message is context whatever its text.
pub(crate) fn kinds_mark_context(meta: Option<&Value>, parts: usize) -> bool {
    let Some(Value::Array(kinds)) = meta.and_then(|meta| meta.get("content_item_kinds")) else {
        return false;
    };
    kinds.len() == parts
        && parts > 0
        && kinds
            .iter()
            .all(|kind| kind.as_str().is_some_and(|kind| !is_user_input_kind(kind)))
}

/// A content kind of what the user typed or attached: Codex's `user.` kinds (`user.text`,
/// `user.image`, …) and the placeholders a text-only projection puts in place of user media.
/// `user.instructions` is not one: it is the kind a world-state section with the id `user`
/// renders (`JsonSection` kinds are `<id>.instructions`).
fn is_user_input_kind(kind: &str) -> bool {
    (kind.starts_with("user.") && kind != "user.instructions")
        || matches!(kind, "images.unsupported" | "audio.unsupported")
}

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
    // The note that approved command prefixes were saved (it has no closing marker).
    "Approved command prefix saved:",
];

/// Whether `text` starts with `prefix`, ASCII case-insensitively (false when the prefix's length
/// does not fall on a character boundary of `text`).
pub(crate) fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Whether `text` ends with `suffix`, ASCII case-insensitively.
pub(crate) fn ends_with_ignore_case(text: &str, suffix: &str) -> bool {
    text.len() >= suffix.len()
        && text
            .get(text.len() - suffix.len()..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(suffix))
}

/// Whether a text is a contextual user fragment: context a harness injects as user text
/// (`<environment_context>`, user instructions, a hook prompt, …), never a user turn.
///
/// The text is trimmed, then matched against Codex's markers; the list, and which are compared
/// case-sensitively, is in `docs/codex-compatibility.md`, "History operations".
///
/// # Examples
///
/// ```
/// use agent_history::is_contextual_user_text;
///
/// assert!(is_contextual_user_text("<hook_prompt hook_run_id=\"r1\">Run the tests</hook_prompt>"));
/// assert!(!is_contextual_user_text("Run the tests"));
/// ```
pub fn is_contextual_user_text(text: &str) -> bool {
    let text = text.trim();
    USER_FRAGMENT_MARKERS.iter().any(|(start, end)| {
        starts_with_ignore_case(text, start) && ends_with_ignore_case(text, end)
    }) || is_additional_context(text)
        || is_internal_model_context(text)
        || is_hook_prompt(text)
        || is_legacy_warning(text)
}

/// `<external_context source="…" kind="untrusted">…</external_context>`, or the older
/// `<external_KEY>…</external_KEY>` (`text` trimmed).
fn is_additional_context(text: &str) -> bool {
    if let Some(rest) = text.strip_prefix("<external_context")
        && rest.starts_with([' ', '>'])
        && text.ends_with("</external_context>")
        && let Some((opening, _)) = text.split_once('>')
    {
        return opening.contains(" source=\"") && opening.contains(" kind=\"untrusted\"");
    }
    let Some(rest) = text.strip_prefix("<external_") else {
        return false;
    };
    let Some((key, value_and_close)) = rest.split_once('>') else {
        return false;
    };
    value_and_close.ends_with(&format!("</external_{key}>"))
}

/// `<codex_internal_context source="NAME">…</codex_internal_context>` (`text` trimmed).
fn is_internal_model_context(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("<codex_internal_context source=\"") else {
        return false;
    };
    let Some((source, body_and_close)) = rest.split_once("\">") else {
        return false;
    };
    let mut chars = source.chars();
    chars.next().is_some_and(|first| first.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && body_and_close.ends_with("</codex_internal_context>")
}

/// `<hook_prompt hook_run_id="ID">…</hook_prompt>` with a non-blank `ID` (`text` trimmed).
fn is_hook_prompt(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("<hook_prompt") else {
        return false;
    };
    if !rest.starts_with(|c: char| c.is_whitespace()) || !rest.ends_with("</hook_prompt>") {
        return false;
    }
    let Some((attributes, _)) = rest.split_once('>') else {
        return false;
    };
    ['"', '\''].iter().any(|quote| {
        attributes
            .split_once(&format!("hook_run_id={quote}"))
            .and_then(|(before, value)| {
                let separated = before.ends_with(|c: char| c.is_whitespace());
                let (id, _) = value.split_once(*quote)?;
                Some(separated && !id.trim().is_empty())
            })
            .unwrap_or(false)
    })
}

/// One of the warnings older Codex versions injected as user messages (`text` trimmed).
fn is_legacy_warning(text: &str) -> bool {
    let (start, end) = APPLY_PATCH_WARNING;
    LEGACY_WARNING_PREFIXES
        .iter()
        .any(|prefix| text.starts_with(prefix))
        || (text.starts_with(start) && text.ends_with(end))
}

/// Whether a text is a contextual developer fragment (it starts with a known tag).
pub fn is_contextual_developer_text(text: &str) -> bool {
    let text = text.trim_start();
    DEVELOPER_FRAGMENT_PREFIXES
        .iter()
        .any(|prefix| starts_with_ignore_case(text, prefix))
}

/// Start and end markers of the developer fragments a rollback to the very first turn removes
/// from that turn's developer messages: the model-switch instructions and the persistent-mode
/// instructions, which Codex rebuilds from the next turn's model and settings.
const FIRST_TURN_SETTINGS_MARKERS: &[(&str, &str)] = &[
    ("<model_switch>", "</model_switch>"),
    ("<persistent_mode>", "</persistent_mode>"),
];

/// Whether a developer text is a model-switch or persistent-mode fragment: trimmed, it starts
/// with the start marker and ends with the matching end marker, case-insensitively.
pub(crate) fn is_first_turn_settings_text(text: &str) -> bool {
    let text = text.trim();
    FIRST_TURN_SETTINGS_MARKERS.iter().any(|(start, end)| {
        starts_with_ignore_case(text, start) && ends_with_ignore_case(text, end)
    })
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

/// Classifies a typed item for turn counting: an `agent_message`, a user message that is neither
/// contextual (by its text or its content kinds) nor a summary, and an assistant message holding a structured inter-agent instruction
/// start a user turn; contextual user and developer messages are context updates.
pub(crate) fn turn_role_of(item: &ResponseItem) -> TurnRole {
    let message = match item {
        ResponseItem::AgentMessage(_) => return TurnRole::Boundary,
        ResponseItem::Message(message) => message,
        _ => return TurnRole::Other,
    };
    match message.role {
        Role::User => {
            if texts(&message.content).any(is_contextual_user_text)
                || kinds_mark_context(message.meta.as_ref(), message.content.len())
            {
                TurnRole::ContextUpdate { mixed: false }
            } else if texts(&message.content).next().is_some_and(is_summary_text) {
                TurnRole::Other
            } else {
                TurnRole::Boundary
            }
        }
        Role::Assistant => {
            // Codex: exactly one content part, a text holding a communication's JSON.
            match message.content.as_slice() {
                [ContentItem::InputText { text } | ContentItem::OutputText { text, .. }]
                    if is_inter_agent_instruction(text) =>
                {
                    TurnRole::Boundary
                }
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
    fn additional_context_needs_its_closing_tag_and_attributes() {
        assert!(is_contextual_user_text(
            "<external_context source=\"ide\" kind=\"untrusted\">\nx\n</external_context>"
        ));
        assert!(!is_contextual_user_text(
            "<external_context source=\"ide\" kind=\"application\">x</external_context>"
        ));
        assert!(!is_contextual_user_text(
            "<external_context kind=\"untrusted\">x</external_context>"
        ));
        assert!(is_contextual_user_text("<external_ide>x</external_ide>"));
        assert!(!is_contextual_user_text("<external_ide>x</external_other>"));
        assert!(!is_contextual_user_text("<EXTERNAL_ide>x</EXTERNAL_ide>"));
    }

    #[test]
    fn internal_model_context_needs_a_valid_source() {
        assert!(is_contextual_user_text(
            "<codex_internal_context source=\"goal_2\">\nbody\n</codex_internal_context>"
        ));
        assert!(!is_contextual_user_text(
            "<codex_internal_context source=\"Goal\">body</codex_internal_context>"
        ));
        assert!(!is_contextual_user_text(
            "<codex_internal_context>body</codex_internal_context>"
        ));
        assert!(is_contextual_user_text("<GOAL_CONTEXT>go</goal_context>"));
    }

    #[test]
    fn next_prompt_suggestions_are_context() {
        assert!(is_contextual_user_text(
            "<next_prompt_suggestion>\nsuggest\n</next_prompt_suggestion>"
        ));
        assert!(!is_contextual_user_text("<next_prompt_suggestion> no end"));
    }

    #[test]
    fn hook_prompts_need_a_run_id() {
        assert!(is_contextual_user_text(
            " <hook_prompt hook_run_id=\"run-1\">Retry &amp; test</hook_prompt>\n"
        ));
        assert!(is_contextual_user_text(
            "<hook_prompt hook_run_id='run-1'>Retry</hook_prompt>"
        ));
        assert!(!is_contextual_user_text(
            "<hook_prompt hook_run_id=\" \">Retry</hook_prompt>"
        ));
        assert!(!is_contextual_user_text("<hook_prompt>Retry</hook_prompt>"));
        assert!(!is_contextual_user_text(
            "<hook_promptx hook_run_id=\"r\">Retry</hook_prompt>"
        ));
    }

    #[test]
    fn legacy_warnings_are_context() {
        assert!(is_contextual_user_text(
            "Warning: The maximum number of unified exec processes you can keep open is 16."
        ));
        assert!(is_contextual_user_text(
            "Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command."
        ));
        assert!(!is_contextual_user_text(
            "Warning: apply_patch was requested via exec_command."
        ));
        assert!(is_contextual_user_text(
            "Warning: Your account was flagged for potentially high-risk cyber activity"
        ));
        assert!(!is_contextual_user_text(
            "warning: your account was flagged for potentially high-risk cyber activity"
        ));
    }

    #[test]
    fn first_turn_settings_need_both_markers() {
        assert!(is_first_turn_settings_text(
            " <model_switch>\nm\n</model_switch>\n"
        ));
        assert!(is_first_turn_settings_text(
            "<Persistent_Mode>x</PERSISTENT_MODE>"
        ));
        assert!(!is_first_turn_settings_text("<model_switch>\nno end"));
        assert!(!is_first_turn_settings_text(
            "<permissions instructions>x</permissions instructions>"
        ));
    }

    #[test]
    fn developer_fragments_match_by_prefix() {
        assert!(is_contextual_developer_text(
            "<permissions instructions>\nx"
        ));
        assert!(is_contextual_developer_text("<MODEL_SWITCH>x"));
        assert!(is_contextual_developer_text(
            "Approved command prefix saved:\n- [\"cargo\"]"
        ));
        assert!(!is_contextual_developer_text("Be terse."));
    }

    #[test]
    fn summary_requires_prefix_and_newline() {
        assert!(is_summary_text(&format!("{SUMMARY_PREFIX}\nsummary")));
        assert!(!is_summary_text(SUMMARY_PREFIX));
        assert!(!is_summary_text("summary"));
    }
}
