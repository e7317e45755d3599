//! The units of a projection put together into one Anthropic request's `messages`.
//!
//! The shared call grouping (`pair_calls`) orders the units: each batch of consecutive calls
//! followed by one output per call. What is Anthropic's is done here: the pieces merge into
//! alternating `user`/`assistant` messages (the results of a batch open the next user message),
//! tool ids are mapped to the id syntax and kept unique, a user message is put first when the
//! history starts with the assistant, and the final assistant text is trimmed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::projection::{Location, Projection, RepairKind};

use super::super::target::{
    PairRole, Rendered, Step, TargetProjectionError, TargetRepair, TargetRepairKind, Unit, Units,
    merge_repairs, pair_calls,
};
use super::render::{AnthropicItem, Sent};
use super::{ANTHROPIC_LEADING_USER_TEXT, AnthropicMessages, Block, Message, Role};

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`.
pub(crate) fn is_valid_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// `id` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, then `_` and the first
/// `hash_len` hex digits of the BLAKE3 hash of `key`.
fn mapped_tool_id(id: &str, key: &str, hash_len: usize) -> String {
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
    mapped.push_str(&blake3::hash(key.as_bytes()).to_hex()[..hash_len]);
    mapped
}

/// The id each call of the request is sent as, by unit, in call order.
///
/// A valid id is kept the first time it is used, so it never changes. Any other (an invalid id,
/// or the n-th call of an id already used, n ≥ 2) gets [`mapped_tool_id`] of the id (keyed by
/// the id, or by `id#n`) with 8 hex digits, more when that would equal an id taken in this
/// request, then a counter. The same call gets the same id in every request that holds the same
/// calls before it; only a crafted collision makes it depend on later ones.
fn map_tool_ids(calls: &[(usize, &str)]) -> HashMap<usize, Arc<str>> {
    let taken: HashSet<&str> = calls
        .iter()
        .map(|(_, id)| *id)
        .filter(|id| is_valid_tool_id(id))
        .collect();
    let mut mapped_taken: HashSet<String> = HashSet::new();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    let mut kept: HashSet<&str> = HashSet::new();
    let mut map = HashMap::new();
    for &(unit, id) in calls {
        let n = {
            let count = uses.entry(id).or_insert(0);
            *count += 1;
            *count
        };
        if n == 1 && is_valid_tool_id(id) && kept.insert(id) {
            map.insert(unit, Arc::from(id));
            continue;
        }
        let key = if n == 1 {
            id.to_owned()
        } else {
            format!("{id}#{n}")
        };
        let free = |candidate: &String| {
            !taken.contains(candidate.as_str()) && !mapped_taken.contains(candidate)
        };
        let sent = [8, 16, 32, 64]
            .into_iter()
            .map(|hash_len| mapped_tool_id(id, &key, hash_len))
            .find(free)
            .unwrap_or_else(|| {
                let base = mapped_tool_id(id, &key, 64);
                (2u64..)
                    .map(|k| format!("{base}_{k}"))
                    .find(free)
                    .unwrap_or(base)
            });
        mapped_taken.insert(sent.clone());
        map.insert(unit, Arc::from(sent));
    }
    map
}

/// The call ids of the calls whose output the Responses projection synthesized, by position:
/// their results are sent with `is_error: true`.
fn synthesized_positions(projection: &Projection) -> HashSet<usize> {
    projection
        .report()
        .repairs()
        .iter()
        .filter(|repair| matches!(repair.kind, RepairKind::SynthesizedOutput { .. }))
        .map(|repair| repair.at.position)
        .collect()
}

struct Builder {
    messages: Vec<Message>,
}

impl Builder {
    /// Appends blocks to the last message when it has `role`, else starts one.
    fn push(&mut self, role: Role, blocks: impl IntoIterator<Item = Block>) {
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

/// The open batch: its calls (unit, history call id, answered) and the results collected.
#[derive(Default)]
struct Batch<'a> {
    calls: Vec<(usize, &'a str, bool)>,
    results: Vec<Block>,
}

/// Projects for Anthropic Messages.
pub(crate) fn project(
    projection: &Projection,
) -> Result<(AnthropicMessages, Vec<TargetRepair>), TargetProjectionError> {
    let Units { units, repairs } = Units::<AnthropicItem>::collect(projection)?;
    let paired = pair_calls(&units);
    let synthesized = synthesized_positions(projection);
    let mut own: Vec<TargetRepair> = Vec::new();

    let calls: Vec<(usize, &str)> = paired
        .steps
        .iter()
        .filter_map(|step| match *step {
            Step::Unit(i) => match units[i].rendered.pairing() {
                PairRole::Call(id) => Some((i, id)),
                _ => None,
            },
            Step::Synthetic(_) => None,
        })
        .collect();
    let ids = map_tool_ids(&calls);
    for &(unit, id) in &calls {
        if *ids[&unit] != *id {
            own.push(TargetRepair {
                kind: TargetRepairKind::MappedId {
                    from: id.to_owned(),
                    to: ids[&unit].to_string(),
                },
                at: units[unit].at.clone(),
            });
        }
    }

    let system: Vec<usize> = units
        .iter()
        .enumerate()
        .filter(|(_, unit)| matches!(&unit.rendered.piece, Sent::System(text) if !text.trim().is_empty()))
        .map(|(i, _)| i)
        .collect();

    let mut builder = Builder {
        messages: Vec::new(),
    };
    let mut batch = Batch::default();
    let close = |batch: &mut Batch, builder: &mut Builder| {
        // Every call of a batch has its output step (`pair_calls`); should one be missing,
        // it is answered as aborted all the same.
        for (unit, _, answered) in &batch.calls {
            if !answered {
                batch.results.push(Block::Result {
                    unit: None,
                    id: Arc::clone(&ids[unit]),
                    is_error: true,
                });
            }
        }
        builder.push(Role::User, batch.results.drain(..));
        batch.calls.clear();
    };
    for step in &paired.steps {
        match *step {
            Step::Synthetic(call) => {
                if let Some(entry) = batch.calls.iter_mut().find(|c| c.0 == call && !c.2) {
                    entry.2 = true;
                    batch.results.push(Block::Result {
                        unit: None,
                        id: Arc::clone(&ids[&call]),
                        is_error: true,
                    });
                }
            }
            Step::Unit(i) => match &units[i].rendered.piece {
                Sent::Nothing | Sent::System(_) => {}
                Sent::User(blocks) => {
                    close(&mut batch, &mut builder);
                    builder.push(Role::User, (0..blocks.len()).map(|b| Block::Unit(i, b)));
                }
                Sent::Assistant(blocks) => {
                    close(&mut batch, &mut builder);
                    builder.push(
                        Role::Assistant,
                        (0..blocks.len()).map(|b| Block::Unit(i, b)),
                    );
                }
                Sent::ToolUse { call_id, .. } => {
                    if !batch.results.is_empty() {
                        close(&mut batch, &mut builder);
                    }
                    builder.push(
                        Role::Assistant,
                        [Block::ToolUse {
                            unit: i,
                            id: Arc::clone(&ids[&i]),
                        }],
                    );
                    batch.calls.push((i, call_id, false));
                }
                Sent::ToolResult { call_id, .. } => {
                    let call = batch
                        .calls
                        .iter_mut()
                        .find(|(_, id, answered)| *id == &**call_id && !answered);
                    match call {
                        Some(entry) => {
                            entry.2 = true;
                            let unit = entry.0;
                            batch.results.push(Block::Result {
                                unit: Some(i),
                                id: Arc::clone(&ids[&unit]),
                                is_error: synthesized.contains(&units[i].at.position)
                                    && units[i].at.item_kind != units[unit].at.item_kind,
                            });
                        }
                        None => own.push(TargetRepair {
                            kind: TargetRepairKind::DroppedDuplicateOutput,
                            at: units[i].at.clone(),
                        }),
                    }
                }
            },
        }
    }
    close(&mut batch, &mut builder);

    let mut messages = builder.messages;
    if let Some(first) = messages.first()
        && first.role == Role::Assistant
    {
        own.push(TargetRepair {
            kind: TargetRepairKind::LeadingUserMessage,
            at: block_location(&units, &first.blocks[0]),
        });
        messages.insert(
            0,
            Message {
                role: Role::User,
                blocks: vec![Block::Text(
                    serde_json::json!({"type": "text", "text": ANTHROPIC_LEADING_USER_TEXT})
                        .to_string()
                        .into(),
                )],
            },
        );
    }
    if let Some(last) = messages.last_mut()
        && last.role == Role::Assistant
        && let Some(&Block::Unit(i, b)) = last.blocks.last()
        && let Sent::Assistant(blocks) = &units[i].rendered.piece
        && let Ok(mut value) = serde_json::from_str::<Value>(&blocks[b])
        && let Some(text) = value.get("text").and_then(Value::as_str)
        && text.trim_end().len() != text.len()
        && let Some(block) = last.blocks.last_mut()
    {
        let at = units[i].at.clone();
        // Rendering skips white-space-only texts, so something is left.
        value["text"] = Value::String(text.trim_end().to_owned());
        *block = Block::Text(value.to_string().into());
        own.push(TargetRepair {
            kind: TargetRepairKind::TrimmedFinalWhitespace,
            at,
        });
    }
    let repairs = merge_repairs(merge_repairs(repairs, paired.repairs), own);
    Ok((
        AnthropicMessages {
            units: units.into(),
            system: system.into(),
            messages: messages.into(),
        },
        repairs,
    ))
}

/// Where the item a block comes from is.
fn block_location(units: &[Unit<AnthropicItem>], block: &Block) -> Location {
    let unit = match block {
        Block::Unit(i, _) | Block::ToolUse { unit: i, .. } => Some(*i),
        Block::Result { unit, .. } => *unit,
        Block::Text(_) => None,
    };
    unit.or_else(|| units.len().checked_sub(1))
        .map(|i| units[i].at.clone())
        .unwrap_or(Location {
            position: 0,
            item_kind: crate::item::ItemKind::Unknown,
            call_id: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_are_kept_and_others_mapped_stably_and_apart() {
        let calls = [
            (0, "call_1"),
            (1, "functions.eval:301"),
            (2, "functions_eval_301"),
            (3, ""),
            (4, "call_1"),
        ];
        let map = map_tool_ids(&calls);
        assert_eq!(&*map[&0], "call_1");
        assert_eq!(&*map[&2], "functions_eval_301");
        let mapped = map[&1].to_string();
        assert!(mapped.starts_with("functions_eval_301_"), "{mapped}");
        assert_eq!(mapped.len(), "functions_eval_301_".len() + 8);
        assert!(is_valid_tool_id(&mapped) && is_valid_tool_id(&map[&3]));
        // A repeated id gets an id of its own.
        assert!(map[&4].starts_with("call_1_") && is_valid_tool_id(&map[&4]));
        // The same id maps alike whatever else the request holds.
        assert_eq!(
            map_tool_ids(&[(9, "functions.eval:301")])[&9].to_string(),
            mapped
        );
        // A valid id equal to the mapped form pushes the mapped one to a longer hash.
        let map = map_tool_ids(&[(0, "functions.eval:301"), (1, mapped.as_str())]);
        assert_eq!(map[&1].to_string(), mapped);
        assert_ne!(map[&0].to_string(), mapped);
        assert!(is_valid_tool_id(&map[&0]));
    }
}
