//! The Anthropic Messages API's rules for `messages` (and, given a whole body, `max_tokens` and
//! `tools`).
//!
//! The API combines consecutive messages of one role into one turn, so the pairing rules are
//! checked on turns; positions name the message and block as sent.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{Findings, Rule, Severity, Wording, char_len, json_type, messages_of, str_field};

/// The media types an image block's base64 source may have.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The longest tool name the stored documentation gives (a longer limit was also reported).
const MAX_TOOL_NAME: usize = 64;

/// One content block as sent: its message, its index in the message's content (none for a
/// string content) and its value (the string itself for a string content).
#[derive(Clone, Copy)]
struct Block<'v> {
    message: usize,
    index: Option<usize>,
    value: &'v Value,
}

impl<'v> Block<'v> {
    /// The block's type (`text` for a string content).
    fn kind(&self) -> &'v str {
        match self.value {
            Value::String(_) => "text",
            value => str_field(value, "type").unwrap_or(""),
        }
    }

    /// `messages.N.content.M`, or `messages.N.content` for a string content.
    fn position(&self) -> String {
        match self.index {
            Some(index) => format!("messages.{}.content.{index}", self.message),
            None => format!("messages.{}.content", self.message),
        }
    }
}

/// Consecutive messages of one role, as the API combines them.
struct Turn<'v> {
    role: &'v str,
    first: usize,
    blocks: Vec<Block<'v>>,
}

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`.
fn tool_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Whether `id` matches `^srvtoolu_[a-zA-Z0-9_]+$`.
fn server_id_ok(id: &str) -> bool {
    id.strip_prefix("srvtoolu_").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
    })
}

/// Whether a block type is a server tool's result, paired inside the assistant message.
fn server_result(kind: &str) -> bool {
    kind.ends_with("_tool_result") && kind != "tool_result" && kind != "mcp_tool_result"
}

/// Checks an Anthropic Messages body or a bare `messages` array.
pub(super) fn check(input: &Value, findings: &mut Findings) {
    let Some((messages, body)) = messages_of(input, findings) else {
        return;
    };
    let mut turns: Vec<Turn> = Vec::new();
    let mut tool_use_ids = HashSet::new();
    let mut has_tool_blocks = false;
    for (index, message) in messages.iter().enumerate() {
        let Some((role, blocks)) = read_message(message, index, findings) else {
            continue;
        };
        if index == 0 && role != "user" {
            findings.push(
                Rule::AnthropicFirstNotUser,
                // Refused in 2024; today's enforcement is not confirmed.
                Severity::Warning,
                Wording::Exact,
                "messages.0",
                Some(0),
                Vec::new(),
                "messages: first message must use the \"user\" role",
            );
        }
        if role == "system" {
            findings.push(
                Rule::AnthropicSystemRole,
                // Newer models take mid-conversation system messages; which ones is not known.
                Severity::Warning,
                Wording::Exact,
                format!("messages.{index}.role"),
                Some(index),
                Vec::new(),
                "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.",
            );
            continue;
        }
        let last = index + 1 == messages.len();
        check_content(message, index, role, last, &blocks, findings);
        for block in &blocks {
            has_tool_blocks |= matches!(block.kind(), "tool_use" | "tool_result");
            check_block(block, &mut tool_use_ids, findings);
        }
        match turns.last_mut() {
            Some(turn) if turn.role == role => turn.blocks.extend(blocks),
            _ => turns.push(Turn {
                role,
                first: index,
                blocks,
            }),
        }
    }
    for (index, turn) in turns.iter().enumerate() {
        let previous = index.checked_sub(1).map(|previous| &turns[previous]);
        check_results(turn, previous, findings);
        check_server_results(turn, findings);
        if turn.role == "assistant" {
            let next = turns.get(index + 1);
            check_answered(turn, next, findings);
        }
    }
    if let Some(body) = body {
        check_body(body, has_tool_blocks, findings);
    }
}

/// A message's role and blocks, or a shape finding.
fn read_message<'v>(
    message: &'v Value,
    index: usize,
    findings: &mut Findings,
) -> Option<(&'v str, Vec<Block<'v>>)> {
    let at = format!("messages.{index}");
    if !message.is_object() {
        findings.shape(
            at,
            Some(index),
            format!("a message must be an object, not {}", json_type(message)),
        );
        return None;
    }
    let role = match str_field(message, "role") {
        Some(role @ ("user" | "assistant" | "system")) => role,
        Some(role) => {
            findings.shape(
                format!("{at}.role"),
                Some(index),
                format!("unknown role `{role}`"),
            );
            return None;
        }
        None => {
            findings.shape(at, Some(index), "a message has no string `role`");
            return None;
        }
    };
    let blocks = match message.get("content") {
        Some(text @ Value::String(_)) => vec![Block {
            message: index,
            index: None,
            value: text,
        }],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .map(|(block, value)| Block {
                message: index,
                index: Some(block),
                value,
            })
            .collect(),
        Some(other) => {
            findings.shape(
                format!("{at}.content"),
                Some(index),
                format!(
                    "`content` must be a string or an array of blocks, not {}",
                    json_type(other)
                ),
            );
            return None;
        }
        None => {
            findings.shape(at, Some(index), "a message has no `content`");
            return None;
        }
    };
    Some((role, blocks))
}

/// The text of a block, when it is a text block holding a string.
fn text_of<'v>(block: &Block<'v>) -> Option<&'v str> {
    match block.value {
        Value::String(text) => Some(text),
        value if block.kind() == "text" => str_field(value, "text"),
        _ => None,
    }
}

/// Content rules of one message: not empty, not only white space, a final assistant message
/// without trailing white space.
fn check_content(
    message: &Value,
    index: usize,
    role: &str,
    last: bool,
    blocks: &[Block],
    findings: &mut Findings,
) {
    let final_assistant = last && role == "assistant";
    let empty = match message.get("content") {
        Some(Value::String(text)) => text.is_empty(),
        _ => blocks.is_empty(),
    };
    if empty {
        if !final_assistant {
            findings.error(
                Rule::AnthropicEmptyMessage,
                format!("messages.{index}"),
                Some(index),
                Vec::new(),
                format!(
                    "messages.{index}: all messages must have non-empty content except for the optional final assistant message"
                ),
            );
        }
        return;
    }
    if final_assistant {
        if let Some(text) = blocks.last().and_then(text_of)
            && text.ends_with(char::is_whitespace)
        {
            findings.error(
                Rule::AnthropicTrailingWhitespace,
                format!("messages.{index}"),
                Some(index),
                Vec::new(),
                "messages: final assistant content cannot end with trailing whitespace",
            );
        }
        return;
    }
    let texts: Option<Vec<&str>> = blocks.iter().map(text_of).collect();
    if let Some(texts) = texts
        && texts
            .iter()
            .all(|text| !text.is_empty() && text.trim().is_empty())
    {
        findings.error(
            Rule::AnthropicWhitespaceText,
            format!("messages.{index}"),
            Some(index),
            Vec::new(),
            "messages: text content blocks must contain non-whitespace text",
        );
    }
}

/// The rules of one block on its own: its shape, empty text, tool ids and input, images.
fn check_block(block: &Block, tool_use_ids: &mut HashSet<String>, findings: &mut Findings) {
    let at = block.position();
    let index = Some(block.message);
    if block.index.is_some() {
        if !block.value.is_object() {
            findings.shape(
                at,
                index,
                format!(
                    "a content block must be an object, not {}",
                    json_type(block.value)
                ),
            );
            return;
        }
        if str_field(block.value, "type").is_none() {
            findings.shape(at, index, "a content block has no string `type`");
            return;
        }
    }
    match block.kind() {
        "text" if block.index.is_some() => match str_field(block.value, "text") {
            Some("") => findings.error(
                Rule::AnthropicEmptyText,
                at,
                index,
                Vec::new(),
                "messages: text content blocks must be non-empty",
            ),
            Some(_) => {}
            None => findings.shape(at, index, "a text block has no string `text`"),
        },
        "tool_use" => {
            let Some(id) = str_field(block.value, "id") else {
                findings.shape(at, index, "a tool_use block has no string `id`");
                return;
            };
            if !tool_id_ok(id) {
                findings.error(
                    Rule::AnthropicIdPattern,
                    format!("{at}.tool_use.id"),
                    index,
                    vec![id.to_owned()],
                    format!("{at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
                );
            }
            if !tool_use_ids.insert(id.to_owned()) {
                findings.error(
                    Rule::AnthropicDuplicateToolUseId,
                    &at,
                    index,
                    vec![id.to_owned()],
                    format!("{at}: `tool_use` ids must be unique"),
                );
            }
            match block.value.get("input") {
                Some(Value::Object(_)) => {}
                Some(_) => findings.error(
                    Rule::AnthropicInputNotObject,
                    format!("{at}.tool_use.input"),
                    index,
                    vec![id.to_owned()],
                    format!("{at}.tool_use.input: Input should be an object."),
                ),
                None => findings.shape(at, index, "a tool_use block has no `input`"),
            }
        }
        "tool_result" => {
            let Some(id) = str_field(block.value, "tool_use_id") else {
                findings.shape(at, index, "a tool_result block has no string `tool_use_id`");
                return;
            };
            if !tool_id_ok(id) {
                findings.push(
                    Rule::AnthropicIdPattern,
                    Severity::Error,
                    // The text was seen for `tool_use.id`; the same pattern holds here.
                    Wording::Unconfirmed,
                    format!("{at}.tool_result.tool_use_id"),
                    index,
                    vec![id.to_owned()],
                    format!(
                        "{at}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                    ),
                );
            }
            if let Some(Value::Array(parts)) = block.value.get("content") {
                for (part_index, part) in parts.iter().enumerate() {
                    let part_at = format!("{at}.content.{part_index}");
                    match str_field(part, "type") {
                        Some("image") => check_image(part, &part_at, index, findings),
                        Some("text") if str_field(part, "text") == Some("") => findings.push(
                            Rule::AnthropicEmptyText,
                            // Refused in a message's own blocks; not confirmed inside a result.
                            Severity::Warning,
                            Wording::Unconfirmed,
                            part_at,
                            index,
                            vec![id.to_owned()],
                            "messages: text content blocks must be non-empty",
                        ),
                        _ => {}
                    }
                }
            }
        }
        "server_tool_use" => match str_field(block.value, "id") {
            Some(id) if !server_id_ok(id) => findings.push(
                Rule::AnthropicIdPattern,
                Severity::Error,
                Wording::Unconfirmed,
                format!("{at}.server_tool_use.id"),
                index,
                vec![id.to_owned()],
                format!(
                    "{at}.server_tool_use.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'"
                ),
            ),
            Some(_) => {}
            None => findings.shape(at, index, "a server_tool_use block has no string `id`"),
        },
        "image" => check_image(block.value, &at, index, findings),
        _ => {}
    }
}

/// An image block's source: a base64 image of a supported type with data, a URL, or a file.
fn check_image(image: &Value, at: &str, index: Option<usize>, findings: &mut Findings) {
    let source = image.get("source");
    let problem = match source.and_then(|source| str_field(source, "type")) {
        Some("base64") => {
            let media_type = source.and_then(|source| str_field(source, "media_type"));
            let data = source.and_then(|source| str_field(source, "data"));
            match (media_type, data) {
                (Some(media_type), _) if !IMAGE_TYPES.contains(&media_type) => Some(format!(
                    "image media_type '{media_type}' is not one of {}",
                    IMAGE_TYPES.join(", ")
                )),
                (None, _) => Some("a base64 image source has no string `media_type`".to_owned()),
                (_, None | Some("")) => Some("a base64 image source has no data".to_owned()),
                _ => None,
            }
        }
        Some("url") => match source.and_then(|source| str_field(source, "url")) {
            Some(url) if !url.is_empty() => None,
            _ => Some("a url image source has no url".to_owned()),
        },
        Some("file") => None,
        Some(other) => Some(format!(
            "image source type '{other}' is not base64, url or file"
        )),
        None => Some("an image block has no source with a string `type`".to_owned()),
    };
    if let Some(problem) = problem {
        findings.push(
            Rule::AnthropicImageSource,
            Severity::Error,
            Wording::Unconfirmed,
            format!("{at}.source"),
            index,
            Vec::new(),
            problem,
        );
    }
}

/// The `tool_use` ids of a turn, in order, with the message of each.
fn tool_uses<'v>(turn: &Turn<'v>) -> Vec<(&'v str, usize)> {
    turn.blocks
        .iter()
        .filter(|block| block.kind() == "tool_use")
        .filter_map(|block| str_field(block.value, "id").map(|id| (id, block.message)))
        .collect()
}

/// Every `tool_result` answers a `tool_use` of the previous (assistant) turn, once; after
/// `tool_use`s, the results come first.
fn check_results(turn: &Turn, previous: Option<&Turn>, findings: &mut Findings) {
    let calls: Vec<(&str, usize)> = previous
        .filter(|previous| previous.role == "assistant" && turn.role == "user")
        .map(tool_uses)
        .unwrap_or_default();
    let call_ids: HashSet<&str> = calls.iter().map(|(id, _)| *id).collect();
    let mut answered = HashSet::new();
    let mut other_block_seen = false;
    let mut out_of_place = false;
    for block in &turn.blocks {
        if block.kind() != "tool_result" {
            other_block_seen = true;
            continue;
        }
        out_of_place |= other_block_seen;
        let Some(id) = str_field(block.value, "tool_use_id") else {
            continue;
        };
        let at = block.position();
        if !call_ids.contains(id) {
            findings.error(
                Rule::AnthropicResultWithoutToolUse,
                &at,
                Some(block.message),
                vec![id.to_owned()],
                format!(
                    "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ),
            );
        } else if !answered.insert(id) {
            findings.error(
                Rule::AnthropicDuplicateResult,
                at,
                Some(block.message),
                vec![id.to_owned()],
                format!(
                    "each tool_use must have a single result. Found multiple `tool_result` blocks with id: {id}"
                ),
            );
        }
    }
    if out_of_place && !calls.is_empty() {
        let at = turn.first;
        findings.push(
            Rule::AnthropicResultsNotFirst,
            Severity::Error,
            // The API's older text; today's is not confirmed.
            Wording::Unconfirmed,
            format!("messages.{at}"),
            Some(at),
            Vec::new(),
            format!(
                "messages.{at}: Did not find {} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
                calls.len()
            ),
        );
    }
}

/// Server-tool result blocks follow their `server_tool_use` in the same turn.
fn check_server_results(turn: &Turn, findings: &mut Findings) {
    let mut uses = HashSet::new();
    for block in &turn.blocks {
        let kind = block.kind();
        if kind == "server_tool_use" {
            if let Some(id) = str_field(block.value, "id") {
                uses.insert(id);
            }
            continue;
        }
        if !server_result(kind) {
            continue;
        }
        let id = str_field(block.value, "tool_use_id").unwrap_or("");
        if uses.contains(id) {
            continue;
        }
        let at = block.position();
        findings.error(
            Rule::AnthropicServerResultWithoutUse,
            &at,
            Some(block.message),
            vec![id.to_owned()],
            format!(
                "{at}: unexpected `tool_use_id` found in `{kind}` blocks: {id}. Each `{kind}` block must have a corresponding `server_tool_use` block before it."
            ),
        );
    }
}

/// Every `tool_use` of an assistant turn is answered in the next (user) turn.
fn check_answered(turn: &Turn, next: Option<&Turn>, findings: &mut Findings) {
    let answered: HashSet<&str> = next
        .filter(|next| next.role == "user")
        .map(|next| {
            next.blocks
                .iter()
                .filter(|block| block.kind() == "tool_result")
                .filter_map(|block| str_field(block.value, "tool_use_id"))
                .collect()
        })
        .unwrap_or_default();
    let missing: Vec<(&str, usize)> = tool_uses(turn)
        .into_iter()
        .filter(|(id, _)| !answered.contains(id))
        .collect();
    let Some(&(_, at)) = missing.first() else {
        return;
    };
    let ids: Vec<String> = missing.iter().map(|(id, _)| (*id).to_owned()).collect();
    let message = format!(
        "messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ids.join(", ")
    );
    findings.error(
        Rule::AnthropicToolUseWithoutResult,
        format!("messages.{at}"),
        Some(at),
        ids,
        message,
    );
}

/// The body's own rules: `max_tokens`, `tools` when tool blocks are sent, tool names.
fn check_body(body: &Map<String, Value>, has_tool_blocks: bool, findings: &mut Findings) {
    if let Some(system) = body.get("system") {
        let ok = match system {
            Value::String(_) => true,
            Value::Array(blocks) => blocks
                .iter()
                .all(|block| str_field(block, "type") == Some("text")),
            _ => false,
        };
        if !ok {
            findings.shape(
                "system",
                None,
                "`system` must be a string or an array of text blocks",
            );
        }
    }
    if !body.contains_key("max_tokens") {
        findings.push(
            Rule::AnthropicMissingMaxTokens,
            Severity::Error,
            Wording::Unconfirmed,
            "max_tokens",
            None,
            Vec::new(),
            "max_tokens: Field required",
        );
    }
    let tools = match body.get("tools") {
        Some(Value::Array(tools)) => tools.as_slice(),
        None | Some(Value::Null) => &[],
        Some(other) => {
            findings.shape(
                "tools",
                None,
                format!("`tools` must be an array, not {}", json_type(other)),
            );
            return;
        }
    };
    if has_tool_blocks && tools.is_empty() {
        findings.push(
            Rule::AnthropicMissingTools,
            Severity::Warning,
            Wording::Unconfirmed,
            "tools",
            None,
            Vec::new(),
            "the messages hold tool_use or tool_result blocks but the request defines no tools",
        );
    }
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (index, tool) in tools.iter().enumerate() {
        let Some(name) = str_field(tool, "name") else {
            findings.shape(
                format!("tools.{index}"),
                None,
                "a tool has no string `name`",
            );
            continue;
        };
        if names.insert(name, index).is_some() {
            findings.error(
                Rule::AnthropicDuplicateToolName,
                format!("tools.{index}"),
                None,
                vec![name.to_owned()],
                "tools: Tool names must be unique.",
            );
        }
        // Client tools (no type, or `custom`) have the name pattern; server tools are named by
        // the API.
        if !matches!(str_field(tool, "type"), None | Some("custom")) {
            continue;
        }
        let at = format!("tools.{index}.custom.name");
        let message = format!("{at}: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'");
        if !tool_id_ok(name) {
            findings.error(
                Rule::AnthropicToolNamePattern,
                at,
                None,
                vec![name.to_owned()],
                message,
            );
        } else if char_len(name) > MAX_TOOL_NAME {
            findings.push(
                Rule::AnthropicToolNamePattern,
                // Longer limits (128, 200) were also reported.
                Severity::Warning,
                Wording::Exact,
                at,
                None,
                vec![name.to_owned()],
                message,
            );
        }
    }
}
