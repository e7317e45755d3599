//! The OpenAI Chat Completions API's rules for `messages`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Findings, Rule, Severity, Wording, char_len, json_type, messages_of, str_field};

/// The longest tool call id the API was seen to take, in characters.
const MAX_CALL_ID: usize = 40;

/// The roles a message may have (`function` is the deprecated answer to `function_call`).
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// The calls of the last assistant message with `tool_calls`, while the `tool` messages after it
/// are read.
struct Pending<'v> {
    /// The assistant message's index.
    index: usize,
    /// Its call ids, in order, each once.
    ids: Vec<&'v str>,
    /// The same ids, to look them up.
    id_set: HashSet<&'v str>,
    /// The message that answered each id so far.
    answered: HashMap<&'v str, usize>,
}

/// Checks a Chat Completions body or a bare `messages` array.
pub(super) fn check(input: &Value, findings: &mut Findings) {
    let Some((messages, _)) = messages_of(input, findings) else {
        return;
    };
    if messages.is_empty() {
        findings.push(
            Rule::ChatEmptyMessages,
            Severity::Error,
            // Only the start of the text was seen; the rest follows the API's other
            // empty-array errors.
            Wording::Unconfirmed,
            "messages",
            None,
            Vec::new(),
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        );
        return;
    }
    let mut pending: Option<Pending> = None;
    let mut call_ids: HashMap<&str, (usize, usize)> = HashMap::new();
    for (index, message) in messages.iter().enumerate() {
        let Some(role) = role_of(message, index, findings) else {
            continue;
        };
        check_images(message, index, role, findings);
        if role == "tool" {
            check_tool_message(message, index, &mut pending, findings);
            continue;
        }
        if let Some(open) = pending.take() {
            close(open, index, findings);
        }
        if role == "assistant" {
            pending = check_assistant(message, index, &mut call_ids, findings);
        }
    }
    if let Some(open) = pending.take() {
        let at = open.index;
        close(open, at, findings);
    }
}

/// The role of a message, or a shape finding.
fn role_of<'v>(message: &'v Value, index: usize, findings: &mut Findings) -> Option<&'v str> {
    let at = format!("messages[{index}]");
    if !message.is_object() {
        findings.shape(
            at,
            Some(index),
            format!("a message must be an object, not {}", json_type(message)),
        );
        return None;
    }
    match str_field(message, "role") {
        Some(role) if ROLES.contains(&role) => Some(role),
        Some(role) => {
            findings.shape(
                format!("{at}.role"),
                Some(index),
                format!("unknown role `{role}`"),
            );
            None
        }
        None => {
            findings.shape(at, Some(index), "a message has no string `role`");
            None
        }
    }
}

/// Images only in user messages, with a detail the API knows.
fn check_images(message: &Value, index: usize, role: &str, findings: &mut Findings) {
    let Some(parts) = message.get("content").and_then(Value::as_array) else {
        return;
    };
    let mut reported = false;
    for (part_index, part) in parts.iter().enumerate() {
        if str_field(part, "type") != Some("image_url") {
            continue;
        }
        if role != "user" && !reported {
            reported = true;
            findings.push(
                Rule::ChatImageOutsideUser,
                // Older models refused it; newer ones were seen to ignore the image instead.
                Severity::Warning,
                Wording::Exact,
                format!("messages[{index}]"),
                Some(index),
                Vec::new(),
                format!(
                    "Invalid 'messages[{index}]'. Image URLs are only allowed for messages with role 'user', but this message with role '{role}' contains an image URL."
                ),
            );
        }
        if let Some(detail) = part.pointer("/image_url/detail").and_then(Value::as_str)
            && !matches!(detail, "auto" | "low" | "high")
        {
            findings.push(
                Rule::ChatImageDetail,
                Severity::Warning,
                Wording::Unconfirmed,
                format!("messages[{index}].content[{part_index}].image_url.detail"),
                Some(index),
                Vec::new(),
                format!("image detail '{detail}' is not one of 'auto', 'low', 'high'"),
            );
        }
    }
}

/// A `tool` message answers a call of the tool-call message right before it, once.
fn check_tool_message<'v>(
    message: &'v Value,
    index: usize,
    pending: &mut Option<Pending<'v>>,
    findings: &mut Findings,
) {
    let Some(id) = str_field(message, "tool_call_id") else {
        findings.shape(
            format!("messages[{index}]"),
            Some(index),
            "a tool message has no string `tool_call_id`",
        );
        return;
    };
    match pending {
        Some(open) if open.id_set.contains(id) => {
            if let Some(&first) = open.answered.get(id) {
                findings.error(
                    Rule::ChatDuplicateToolMessage,
                    format!("messages.[{index}].tool_call_id"),
                    Some(index),
                    vec![id.to_owned()],
                    format!(
                        "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}] and messages[{index}]."
                    ),
                );
            } else {
                open.answered.insert(id, index);
            }
        }
        _ => findings.error(
            Rule::ChatToolMessageWithoutCall,
            format!("messages.[{index}].role"),
            Some(index),
            vec![id.to_owned()],
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        ),
    }
}

/// The end of the `tool` messages after a tool-call message, at message `at` (the one that came
/// instead, or the tool-call message itself at the end of the input): every call answered.
fn close(open: Pending, at: usize, findings: &mut Findings) {
    let missing: Vec<String> = open
        .ids
        .iter()
        .filter(|id| !open.answered.contains_key(*id))
        .map(|id| (*id).to_owned())
        .collect();
    if missing.is_empty() {
        return;
    }
    let message = format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
        missing.join(", ")
    );
    findings.error(
        Rule::ChatCallsWithoutToolMessages,
        format!("messages.[{at}].role"),
        Some(at),
        missing,
        message,
    );
}

/// An assistant message's content and tool calls; the calls the next messages must answer.
fn check_assistant<'v>(
    message: &'v Value,
    index: usize,
    call_ids: &mut HashMap<&'v str, (usize, usize)>,
    findings: &mut Findings,
) -> Option<Pending<'v>> {
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => None,
        Some(Value::Array(calls)) => Some(calls),
        Some(other) => {
            findings.shape(
                format!("messages[{index}].tool_calls"),
                Some(index),
                format!("`tool_calls` must be an array, not {}", json_type(other)),
            );
            None
        }
    };
    let has_calls = tool_calls.is_some_and(|calls| !calls.is_empty())
        || message.get("function_call").is_some_and(Value::is_object);
    if !has_calls && matches!(message.get("content"), None | Some(Value::Null)) {
        findings.error(
            Rule::ChatNullAssistantContent,
            format!("messages.[{index}].content"),
            Some(index),
            Vec::new(),
            "Invalid value for 'content': expected a string, got null.",
        );
    }
    let calls = tool_calls?;
    if calls.is_empty() {
        findings.error(
            Rule::ChatEmptyToolCalls,
            format!("messages[{index}].tool_calls"),
            Some(index),
            Vec::new(),
            format!(
                "Invalid 'messages[{index}].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead."
            ),
        );
        return None;
    }
    let mut ids = Vec::new();
    let mut id_set = HashSet::new();
    for (call_index, call) in calls.iter().enumerate() {
        let at = format!("messages[{index}].tool_calls[{call_index}]");
        let Some(id) = str_field(call, "id") else {
            findings.shape(at, Some(index), "a tool call has no string `id`");
            continue;
        };
        let (name_key, name) = match str_field(call, "type") {
            Some("custom") => ("custom.name", call.pointer("/custom/name")),
            _ => ("function.name", call.pointer("/function/name")),
        };
        match name.and_then(Value::as_str) {
            Some("") => findings.push(
                Rule::ChatEmptyFunctionName,
                Severity::Error,
                if name_key == "function.name" {
                    Wording::Exact
                } else {
                    Wording::Unconfirmed
                },
                format!("{at}.{name_key}"),
                Some(index),
                vec![id.to_owned()],
                format!(
                    "Invalid '{at}.{name_key}': empty string. Expected a string with minimum length 1, but got an empty string instead."
                ),
            ),
            Some(_) => {}
            None => findings.shape(
                format!("{at}.{name_key}"),
                Some(index),
                format!("a tool call has no string `{name_key}`"),
            ),
        }
        let length = char_len(id);
        if length > MAX_CALL_ID {
            findings.push(
                Rule::ChatCallIdTooLong,
                // Seen in 2025; a 2026 attempt could not reproduce it.
                Severity::Warning,
                Wording::Exact,
                format!("{at}.id"),
                Some(index),
                vec![id.to_owned()],
                format!(
                    "Invalid '{at}.id': string too long. Expected a string with maximum length {MAX_CALL_ID}, but got a string with length {length} instead."
                ),
            );
        }
        if let Some(&(first, first_call)) = call_ids.get(id) {
            findings.push(
                Rule::ChatDuplicateCallId,
                Severity::Warning,
                Wording::Unconfirmed,
                format!("{at}.id"),
                Some(index),
                vec![id.to_owned()],
                format!(
                    "tool call id '{id}' repeats messages[{first}].tool_calls[{first_call}].id"
                ),
            );
        } else {
            call_ids.insert(id, (index, call_index));
        }
        if id_set.insert(id) {
            ids.push(id);
        }
    }
    Some(Pending {
        index,
        ids,
        id_set,
        answered: HashMap::new(),
    })
}
