//! The items' renderings put together into one Anthropic request's `system` and `messages`.
//!
//! What needs the whole request is done here: outputs are paired with their calls by call id and
//! placed at the start of the user message right after their call's assistant message (calls
//! without an output get an `is_error` result, duplicate and orphan outputs are dropped),
//! adjacent same-role pieces merge, tool ids are mapped to the id syntax, a user message is put
//! first when the history starts with the assistant, and the final assistant text is trimmed.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::projection::ABORTED_OUTPUT;

use super::render::{Piece, Rendered};
use super::report::{AnthropicRepair, AnthropicRepairKind};
use super::{ANTHROPIC_LEADING_USER_TEXT, AnthropicMessages};

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`.
pub(crate) fn is_valid_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// `id` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, then `_` and the first
/// `hash_len` hex digits of the BLAKE3 hash of `id`.
fn mapped_tool_id(id: &str, hash_len: usize) -> String {
    let mut mapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    mapped.push('_');
    mapped.push_str(&blake3::hash(id.as_bytes()).to_hex()[..hash_len]);
    mapped
}

/// The id each call id of the request is sent as. Valid ids are kept (so they never change);
/// the others get [`mapped_tool_id`] with 8 hex digits, or more (then a counter) when that would
/// equal an id already taken in this request. Only a crafted collision makes the sent id depend
/// on the rest of the request.
fn map_tool_ids<'a>(ids: &[&'a str]) -> HashMap<&'a str, String> {
    let mut taken: HashSet<String> = ids
        .iter()
        .filter(|id| is_valid_tool_id(id))
        .map(|id| (*id).to_owned())
        .collect();
    let mut map = HashMap::new();
    for &id in ids {
        if is_valid_tool_id(id) {
            map.insert(id, id.to_owned());
            continue;
        }
        let mut candidate = None;
        for hash_len in [8, 16, 32, 64] {
            let mapped = mapped_tool_id(id, hash_len);
            if !taken.contains(&mapped) {
                candidate = Some(mapped);
                break;
            }
        }
        let mapped = candidate.unwrap_or_else(|| {
            let base = mapped_tool_id(id, 64);
            (2u64..)
                .map(|n| format!("{base}_{n}"))
                .find(|mapped| !taken.contains(mapped))
                .unwrap_or(base)
        });
        taken.insert(mapped.clone());
        map.insert(id, mapped);
    }
    map
}

struct Message {
    role: &'static str,
    blocks: Vec<Value>,
}

struct Builder {
    messages: Vec<Message>,
}

impl Builder {
    /// Appends blocks to the last message when it has `role`, else starts one.
    fn push(&mut self, role: &'static str, blocks: impl IntoIterator<Item = Value>) {
        let mut blocks = blocks.into_iter().peekable();
        if blocks.peek().is_none() {
            return;
        }
        match self.messages.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => self.messages.push(Message {
                role,
                blocks: blocks.collect(),
            }),
        }
    }
}

/// Puts the renderings of a Responses input (in order, with their index in it) together.
/// `synthetic` holds the call ids whose output the Responses projection synthesized: their
/// results are sent with `is_error: true`.
pub(crate) fn assemble(
    base_instructions: &str,
    items: &[&Rendered],
    synthetic: &HashSet<&str>,
) -> AnthropicMessages {
    let mut repairs = Vec::new();
    let mut note = |index: Option<usize>, kind: AnthropicRepairKind| {
        repairs.push(AnthropicRepair {
            kind,
            input_index: index,
        });
    };

    // Pass 1: the calls sent (the first of each call id) and the output answering each.
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut call_order: Vec<&str> = Vec::new();
    for (index, rendered) in items.iter().enumerate() {
        if let Piece::ToolUse { call_id, .. } = &rendered.piece
            && !calls.contains_key(call_id.as_str())
        {
            calls.insert(call_id, index);
            call_order.push(call_id);
        }
    }
    let mut results: HashMap<&str, usize> = HashMap::new();
    for (index, rendered) in items.iter().enumerate() {
        if let Piece::ToolResult { call_id, .. } = &rendered.piece
            && calls.contains_key(call_id.as_str())
        {
            results.entry(call_id).or_insert(index);
        }
    }
    let ids = map_tool_ids(&call_order);
    for &id in &call_order {
        if ids[id] != id {
            note(
                Some(calls[id]),
                AnthropicRepairKind::MappedToolId {
                    from: id.to_owned(),
                    to: ids[id].clone(),
                },
            );
        }
    }

    // Pass 2: the messages.
    let mut system: Vec<String> = Vec::new();
    if !base_instructions.trim().is_empty() {
        system.push(base_instructions.to_owned());
    }
    let mut builder = Builder {
        messages: Vec::new(),
    };
    // The calls of the open batch: the tool_use blocks ending the last assistant message.
    let mut batch: Vec<&str> = Vec::new();
    // Whether an output of the open batch has been seen: a call after it starts a new batch.
    let mut batch_answered = false;
    // User and assistant pieces seen so far; a result is in place when none lies between its
    // call and it.
    let mut content_pieces = 0usize;
    let mut content_at_call: HashMap<&str, usize> = HashMap::new();
    let close = |batch: &mut Vec<&str>,
                 builder: &mut Builder,
                 note: &mut dyn FnMut(Option<usize>, AnthropicRepairKind)| {
        let blocks: Vec<Value> = batch
            .drain(..)
            .map(|call_id| {
                let id = &ids[call_id];
                match results.get(call_id) {
                    Some(&index) => {
                        let Piece::ToolResult { content, .. } = &items[index].piece else {
                            unreachable!("results index only tool results");
                        };
                        let mut block = json!({"type": "tool_result", "tool_use_id": id});
                        if let Some(content) = content {
                            block["content"] = content.clone();
                        }
                        if synthetic.contains(call_id) {
                            block["is_error"] = Value::Bool(true);
                        }
                        block
                    }
                    None => {
                        note(Some(calls[call_id]), AnthropicRepairKind::SyntheticResult);
                        json!({"type": "tool_result", "tool_use_id": id,
                               "content": ABORTED_OUTPUT, "is_error": true})
                    }
                }
            })
            .collect();
        builder.push("user", blocks);
    };
    for (index, rendered) in items.iter().enumerate() {
        for kind in &rendered.notes {
            note(Some(index), kind.clone());
        }
        match &rendered.piece {
            Piece::Nothing => {}
            Piece::System(text) => {
                if !text.trim().is_empty() {
                    system.push(text.clone());
                }
            }
            Piece::User(blocks) | Piece::Assistant(blocks) if blocks.is_empty() => {}
            Piece::User(blocks) => {
                close(&mut batch, &mut builder, &mut note);
                builder.push("user", blocks.iter().cloned());
                content_pieces += 1;
            }
            Piece::Assistant(blocks) => {
                close(&mut batch, &mut builder, &mut note);
                builder.push("assistant", blocks.iter().cloned());
                content_pieces += 1;
            }
            Piece::ToolUse {
                call_id,
                name,
                input,
            } => {
                if calls[call_id.as_str()] != index {
                    note(Some(index), AnthropicRepairKind::DroppedDuplicateCall);
                    continue;
                }
                if batch_answered && !batch.is_empty() {
                    close(&mut batch, &mut builder, &mut note);
                }
                if batch.is_empty() {
                    batch_answered = false;
                }
                builder.push(
                    "assistant",
                    [json!({"type": "tool_use", "id": ids[call_id.as_str()],
                            "name": name, "input": input})],
                );
                batch.push(call_id);
                content_at_call.insert(call_id, content_pieces);
            }
            Piece::ToolResult { call_id, .. } => match results.get(call_id.as_str()) {
                None => note(Some(index), AnthropicRepairKind::DroppedOrphanResult),
                Some(&first) if first != index => {
                    note(Some(index), AnthropicRepairKind::DroppedDuplicateResult);
                }
                Some(_) => {
                    batch_answered |= batch.contains(&call_id.as_str());
                    if synthetic.contains(call_id.as_str()) {
                        note(Some(index), AnthropicRepairKind::SyntheticResult);
                    }
                    if content_at_call.get(call_id.as_str()) != Some(&content_pieces) {
                        note(Some(index), AnthropicRepairKind::MovedResult);
                    }
                }
            },
        }
    }
    close(&mut batch, &mut builder, &mut note);

    let mut messages = builder.messages;
    if messages
        .first()
        .is_some_and(|first| first.role == "assistant")
    {
        messages.insert(
            0,
            Message {
                role: "user",
                blocks: vec![json!({"type": "text", "text": ANTHROPIC_LEADING_USER_TEXT})],
            },
        );
        note(None, AnthropicRepairKind::LeadingUserMessage);
    }
    if let Some(last) = messages.last_mut()
        && last.role == "assistant"
        && let Some(block) = last.blocks.last_mut()
        && let Some(text) = block.get("text").and_then(Value::as_str)
        && text.trim_end().len() != text.len()
    {
        let trimmed = text.trim_end().to_owned();
        // Rendering skips white-space-only texts, so something is left.
        block["text"] = Value::String(trimmed);
        note(None, AnthropicRepairKind::TrimmedFinalWhitespace);
    }
    repairs.sort_by_key(|repair| repair.input_index.unwrap_or(usize::MAX));
    AnthropicMessages {
        system,
        messages: messages
            .into_iter()
            .map(|message| json!({"role": message.role, "content": message.blocks}))
            .collect(),
        repairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_are_kept_and_others_mapped_stably_and_apart() {
        let ids = ["call_1", "functions.eval:301", "functions_eval_301", ""];
        let map = map_tool_ids(&ids);
        assert_eq!(map["call_1"], "call_1");
        assert_eq!(map["functions_eval_301"], "functions_eval_301");
        let mapped = &map["functions.eval:301"];
        assert!(mapped.starts_with("functions_eval_301_"), "{mapped}");
        assert_eq!(mapped.len(), "functions_eval_301_".len() + 8);
        assert!(is_valid_tool_id(mapped) && is_valid_tool_id(&map[""]));
        // The same id maps alike whatever else the request holds.
        assert_eq!(
            &map_tool_ids(&["functions.eval:301"])["functions.eval:301"],
            mapped
        );
        // A valid id equal to the mapped form pushes the mapped one to a longer hash.
        let taken = mapped.clone();
        let map = map_tool_ids(&["functions.eval:301", taken.as_str()]);
        assert_eq!(map[taken.as_str()], taken);
        assert_ne!(map["functions.eval:301"], taken);
        assert!(is_valid_tool_id(&map["functions.eval:301"]));
    }
}
