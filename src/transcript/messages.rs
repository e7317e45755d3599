//! The records a resume sends, made into messages as Claude Code makes them (one assistant
//! message per `message.id`, consecutive user records merged with their tool results first, the
//! records and blocks it leaves out left out, a tool result kept only where the Messages API
//! pairs it: first in the user message after its call), then into the library's items: one item per
//! block, each keeping the block it was read from wherever its Responses form would not render
//! back to that block for the Messages API.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::provider::{ANTHROPIC_BLOCK_KEY, rendered_block};

use super::record::{Record, RecordKind};
use super::report::{Dropped, DroppedKind};

/// One item of a conversation, with the line of the record its block came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourcedItem {
    /// The record's line.
    pub(crate) line: u64,
    /// The block's `type`.
    pub(crate) block: String,
    /// The item's JSON.
    pub(crate) json: String,
}

/// What the Responses API takes of an item of a transcript's history ([`plain_item`]).
pub(crate) enum Plain<'a> {
    /// Nothing: a thinking block's item (its signature is Anthropic's, and that API takes back
    /// only reasoning it encrypted itself), or a block's with no Responses form.
    LeftOut,
    /// The item as it is: it keeps no block.
    Same(&'a str),
    /// The item without the block it keeps.
    Rewritten(String),
}

/// The plain form of an item of a transcript's history, for the Responses API.
pub(crate) fn plain_item(json: &str) -> Plain<'_> {
    let Ok(mut item) = serde_json::from_str::<Map<String, Value>>(json) else {
        return Plain::Same(json);
    };
    if item.get("type").and_then(Value::as_str) == Some("reasoning") {
        return Plain::LeftOut;
    }
    match item.remove(ANTHROPIC_BLOCK_KEY) {
        // A block with no Responses form (a document, a server tool's) is a message of no
        // part: nothing of it can be sent.
        Some(_)
            if item
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty) =>
        {
            Plain::LeftOut
        }
        Some(_) => Plain::Rewritten(Value::Object(item).to_string()),
        None => Plain::Same(json),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// A message being built: its role, its blocks with their lines.
struct Built {
    role: Role,
    blocks: Vec<(u64, Value)>,
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The tool id a `tool_use` (its `id`) or a `tool_result` (its `tool_use_id`) carries; `""`
/// when it has none, or no string.
pub(crate) fn tool_id(block: &Value) -> &str {
    let key = if block_type(block) == "tool_use" {
        "id"
    } else {
        "tool_use_id"
    };
    block.get(key).and_then(Value::as_str).unwrap_or("")
}

fn is_thinking(block: &Value) -> bool {
    matches!(block_type(block), "thinking" | "redacted_thinking")
}

fn is_empty_text(block: &Value) -> bool {
    block_type(block) == "text"
        && block
            .get("text")
            .and_then(Value::as_str)
            .is_none_or(|text| text.trim().is_empty())
}

/// The blocks of a record's content: a string is one text block.
fn blocks_of(record: &Record) -> Vec<Value> {
    match &record.content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The items of the records `sent` (indexes into `records`, in order); what is left out is
/// added to `dropped`.
pub(crate) fn items(
    records: &[Record],
    sent: &[usize],
    dropped: &mut Vec<Dropped>,
) -> Vec<SourcedItem> {
    let mut messages = build(records, sent, dropped);
    pair(&mut messages, dropped);
    dropped.sort_by_key(|dropped| dropped.line);
    let mut items = Vec::new();
    for message in messages {
        flatten(message.role, message.blocks, &mut items);
    }
    items
}

/// The Anthropic messages of the records `sent` as a resume builds them from the file, before
/// any repair of the pairing: every block as written, results first in their user message.
pub(crate) fn as_written(records: &[Record], sent: &[usize]) -> Vec<Value> {
    build(records, sent, &mut Vec::new())
        .into_iter()
        .filter(|message| !message.blocks.is_empty())
        .map(|message| {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            let blocks: Vec<Value> = message.blocks.into_iter().map(|(_, block)| block).collect();
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// The messages of the records `sent`, as Claude Code builds them: one assistant message per
/// message id, consecutive user records merged with their tool results first, what it leaves
/// out left out (and added to `dropped`).
fn build(records: &[Record], sent: &[usize], dropped: &mut Vec<Dropped>) -> Vec<Built> {
    // The message ids with more than thinking: the lines of any other id are left out.
    let mut substantive: HashSet<&str> = HashSet::new();
    for record in records {
        let more_than_thinking = match &record.content {
            Value::String(text) => !text.trim().is_empty(),
            Value::Array(blocks) => blocks
                .iter()
                .any(|block| !is_thinking(block) && !is_empty_text(block)),
            _ => false,
        };
        if let Some(id) = record.message_id.as_deref()
            && more_than_thinking
        {
            substantive.insert(id);
        }
    }
    let mut messages: Vec<Built> = Vec::new();
    // The assistant message of each message id, by index into `messages`.
    let mut message_of_id: HashMap<&str, usize> = HashMap::new();
    for &at in sent {
        let record = &records[at];
        let drop = |what| Dropped {
            line: record.line,
            what,
        };
        if record.is_virtual {
            dropped.push(drop(DroppedKind::Virtual));
            continue;
        }
        if record.api_error {
            dropped.push(drop(DroppedKind::ApiError));
            continue;
        }
        let mut blocks = if record.kind == RecordKind::System {
            // A local command's output, sent as user text.
            let text = record.content.as_str().unwrap_or("");
            vec![json!({"type": "text", "text": text})]
        } else {
            blocks_of(record)
        };
        blocks.retain(|block| {
            let empty = is_empty_text(block);
            if empty {
                dropped.push(drop(DroppedKind::EmptyText));
            }
            !empty
        });
        if record.kind == RecordKind::Assistant {
            let id = record.message_id.as_deref();
            if id.is_some_and(|id| !substantive.contains(id)) {
                dropped.push(drop(DroppedKind::ThinkingOnly));
                continue;
            }
            let open = id.and_then(|id| message_of_id.get(id).copied());
            let Some(open) = open else {
                let blocks = blocks
                    .into_iter()
                    .map(|block| (record.line, block))
                    .collect();
                if let Some(id) = id {
                    message_of_id.insert(id, messages.len());
                }
                messages.push(Built {
                    role: Role::Assistant,
                    blocks,
                });
                continue;
            };
            for block in blocks {
                let known = &messages[open].blocks;
                let repeated = known.iter().any(|(_, other)| {
                    *other == block
                        || (block_type(&block) == "tool_use"
                            && block_type(other) == "tool_use"
                            && other.get("id") == block.get("id"))
                });
                if repeated {
                    dropped.push(drop(DroppedKind::RepeatedBlock));
                } else {
                    messages[open].blocks.push((record.line, block));
                }
            }
        } else {
            let blocks = blocks.into_iter().map(|block| (record.line, block));
            match messages.last_mut() {
                Some(last) if last.role == Role::User => last.blocks.extend(blocks),
                _ => messages.push(Built {
                    role: Role::User,
                    blocks: blocks.collect(),
                }),
            }
        }
    }
    // Tool results open a user message, in the order they were written.
    for message in &mut messages {
        if message.role == Role::User {
            message
                .blocks
                .sort_by_key(|(_, block)| block_type(block) != "tool_result");
        }
    }
    messages
}

/// The pairing the Messages API needs, kept by leaving out what breaks it: a tool_use id used
/// before, and a result that answers no tool_use of the assistant message before it, or one
/// answered already (the API pairs by position). What is left out is added to `dropped`.
fn pair(messages: &mut [Built], dropped: &mut Vec<Dropped>) {
    let mut used: HashSet<String> = HashSet::new();
    let mut asked: HashSet<String> = HashSet::new();
    for message in messages {
        match message.role {
            Role::User => {
                message.blocks.retain(|(line, block)| {
                    if block_type(block) != "tool_result" {
                        return true;
                    }
                    let id = tool_id(block);
                    let answers = asked.remove(id);
                    if !answers {
                        dropped.push(Dropped {
                            line: *line,
                            what: DroppedKind::UnpairedResult { id: id.to_owned() },
                        });
                    }
                    answers
                });
                asked.clear();
            }
            Role::Assistant => {
                asked.clear();
                message.blocks.retain(|(line, block)| {
                    if block_type(block) != "tool_use" {
                        return true;
                    }
                    let id = tool_id(block);
                    let fresh = used.insert(id.to_owned());
                    if fresh {
                        asked.insert(id.to_owned());
                    } else {
                        dropped.push(Dropped {
                            line: *line,
                            what: DroppedKind::ReusedToolId { id: id.to_owned() },
                        });
                    }
                    fresh
                });
            }
        }
    }
}

/// The items of one message's blocks: each block its own item, but a run of text (and, from
/// the user, image) blocks that render back as they are is one `message` item, as the Chat
/// Completions API takes one message of parts.
fn flatten(role: Role, blocks: Vec<(u64, Value)>, items: &mut Vec<SourcedItem>) {
    let mut parts: Vec<Value> = Vec::new();
    let mut first_line = 0;
    let flush = |parts: &mut Vec<Value>, line: u64, items: &mut Vec<SourcedItem>| {
        if !parts.is_empty() {
            let mut item = responses_form(role, &Value::Null);
            item.insert("content".to_owned(), Value::Array(std::mem::take(parts)));
            items.push(SourcedItem {
                line,
                block: "text".to_owned(),
                json: Value::Object(item).to_string(),
            });
        }
    };
    for (line, block) in blocks {
        let (json, kept) = item_json(role, block.clone());
        let plain = matches!(block_type(&block), "text" | "image") && !kept;
        if plain && let Some(part) = message_part(role, &block) {
            if parts.is_empty() {
                first_line = line;
            }
            parts.push(part);
            continue;
        }
        flush(&mut parts, first_line, items);
        items.push(SourcedItem {
            line,
            block: block_type(&block).to_owned(),
            json,
        });
    }
    flush(&mut parts, first_line, items);
}

/// The Responses message part of a text or image block of a message of `role`.
fn message_part(role: Role, block: &Value) -> Option<Value> {
    match (role, block_type(block)) {
        (Role::Assistant, "text") => {
            Some(json!({"type": "output_text", "text": block.get("text")?.as_str()?}))
        }
        (Role::User, _) => input_part(block),
        _ => None,
    }
}

/// The item a block of a message of `role` becomes, and whether it keeps the block (when its
/// Responses form would render back to another one).
fn item_json(role: Role, block: Value) -> (String, bool) {
    let mut item = responses_form(role, &block);
    let kept = rendered_block(&Value::Object(item.clone()).to_string()).as_ref() != Some(&block);
    if kept {
        item.insert(ANTHROPIC_BLOCK_KEY.to_owned(), block);
    }
    (Value::Object(item).to_string(), kept)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The Responses form of a block: a message part, a reasoning item, a call or its output.
fn responses_form(role: Role, block: &Value) -> Map<String, Value> {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
    let message = |parts: Vec<Value>| {
        let role = match role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        object(json!({"type": "message", "role": role, "content": parts}))
    };
    match (role, block_type(block)) {
        (Role::Assistant, "text") => message(message_part(role, block).into_iter().collect()),
        (Role::Assistant, "thinking") => object(json!({
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": text("thinking")}],
            "encrypted_content": null,
        })),
        (Role::Assistant, "redacted_thinking") => object(json!({
            "type": "reasoning",
            "summary": [],
            "encrypted_content": null,
        })),
        (Role::Assistant, "tool_use") => {
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            object(json!({
                "type": "function_call",
                "name": text("name"),
                "arguments": input.to_string(),
                "call_id": text("id"),
            }))
        }
        (Role::User, "tool_result") => {
            let output = match block.get("content") {
                Some(Value::String(text)) => Value::String(text.clone()),
                Some(Value::Array(parts)) => {
                    Value::Array(parts.iter().filter_map(input_part).collect())
                }
                _ => Value::String(String::new()),
            };
            object(json!({
                "type": "function_call_output",
                "call_id": text("tool_use_id"),
                "output": output,
            }))
        }
        (Role::User, _) => message(input_part(block).into_iter().collect()),
        (Role::Assistant, _) => message(Vec::new()),
    }
}

/// The Responses input part of a text or image block.
fn input_part(block: &Value) -> Option<Value> {
    match block_type(block) {
        "text" => Some(json!({"type": "input_text", "text": block.get("text")?.as_str()?})),
        "image" => {
            let source = block.get("source")?;
            let url = match source.get("type").and_then(Value::as_str)? {
                "base64" => format!(
                    "data:{};base64,{}",
                    source.get("media_type")?.as_str()?,
                    source.get("data")?.as_str()?
                ),
                "url" => source.get("url")?.as_str()?.to_owned(),
                _ => return None,
            };
            Some(json!({"type": "input_image", "image_url": url}))
        }
        _ => None,
    }
}
