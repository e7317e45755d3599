//! A repaired copy of a transcript, for a user whose Claude Code resume fails: the records that,
//! appended to the file, make Claude Code's own loader send the conversation this library sends
//! — every `tool_use` left unanswered answered by an `aborted` error result, and every record
//! re-attached where the file's chain would lose history. Nothing of the file is changed: a later
//! line with a record's uuid replaces the earlier one, so the copy is the file's bytes and then
//! these lines.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::item::SYNTHETIC_ID_NAMESPACE;

use super::Conversation;
use super::error::TranscriptError;
use super::messages::tool_id;
use super::reader::Transcript;
use super::report::DroppedKind;

/// The text of the result a repair answers an unanswered `tool_use` with.
pub const REPAIR_RESULT_TEXT: &str = "aborted";

/// The key every record a repair writes carries: `{"repair": <kind>, "version": <crate version>}`.
pub const REPAIR_MARK_KEY: &str = "agentHistoryRepair";

/// The records a repair appends to a transcript, and what they do.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct TranscriptRepair {
    /// The JSON lines to append, in order.
    pub lines: Vec<String>,
    /// The `tool_use` ids answered, in the conversation's order.
    pub answered: Vec<String>,
    /// The records re-attached (their uuids): each written again with the parent it hangs from.
    pub reattached: Vec<String>,
    /// The tool ids of the blocks left out, record by record in line order: a `tool_result` that answers no call
    /// just before it (or one answered already), a `tool_use` whose id an earlier one used. Each
    /// record that held one is written again without it (and kept under the mark), or marked
    /// virtual when nothing else is left of it.
    pub left_out: Vec<String>,
    /// The lines whose blocks that answer nothing are left as they are: a record put back
    /// after a call batch because it holds results, which would no longer be, with what else
    /// it holds. A resume of the copy may still be refused for them.
    pub unrepaired: Vec<u64>,
}

impl TranscriptRepair {
    /// Whether the transcript needs no repair.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// Whether a record's message holds a `tool_result`.
fn holds_result(record: &Map<String, Value>) -> bool {
    record
        .get("message")
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(|block| block["type"] == "tool_result"))
}

/// Whether a record is marked virtual (never sent).
fn is_virtual(record: &Map<String, Value>) -> bool {
    record.get("isVirtual") == Some(&Value::Bool(true))
}

/// How one record is written again: under another parent, without some blocks.
#[derive(Default)]
struct Change<'c> {
    parent: Option<&'c str>,
    /// How many blocks of a type with a tool id to leave out; the last ones of the record, as
    /// the conversation keeps the first.
    left_out: BTreeMap<(&'static str, &'c str), usize>,
}

impl Change<'_> {
    /// Leaves the blocks out of `record`'s message content, and returns them. A record left
    /// with no block is marked virtual instead (never sent, its content kept as it was).
    /// `None` when the record holds fewer such blocks than the conversation left out.
    fn leave_out(&self, record: &mut Map<String, Value>) -> Option<Vec<Value>> {
        let content = record
            .get_mut("message")?
            .get_mut("content")?
            .as_array_mut()?;
        let written = content.clone();
        let mut removed = Vec::new();
        for (&(kind, id), &count) in &self.left_out {
            for _ in 0..count {
                let at = content
                    .iter()
                    .rposition(|block| block["type"] == kind && tool_id(block) == id)?;
                removed.push(content.remove(at));
            }
        }
        if content.is_empty() {
            *content = written;
            record.insert("isVirtual".into(), Value::Bool(true));
        }
        Some(removed)
    }
}

impl Transcript {
    /// The repair of the main thread's conversation. `original` must be the bytes this
    /// transcript was read from (the records re-attached are copied from them).
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Io`] when `original` cannot be read, [`TranscriptError::BadLine`]
    /// when a line the repair copies is no longer the record it was (the file changed).
    pub fn repair(&self, original: impl Read) -> Result<TranscriptRepair, TranscriptError> {
        let conversation = self.conversation();
        let mut repair = TranscriptRepair::default();
        self.rewrite_records(&conversation, original, &mut repair)?;
        self.answer_calls(&conversation, &mut repair);
        Ok(repair)
    }

    /// The records `conversation` needs written again, into `repair`.
    fn rewrite_records(
        &self,
        conversation: &Conversation,
        original: impl Read,
        repair: &mut TranscriptRepair,
    ) -> Result<(), TranscriptError> {
        // Records written again: under the parent a rescue gives them, without the blocks
        // the Messages API cannot pair.
        let mut changes: BTreeMap<u64, Change<'_>> = BTreeMap::new();
        for rescue in &conversation.report.rescues {
            changes.entry(rescue.line).or_default().parent = Some(&rescue.now_under);
        }
        for dropped in &conversation.report.dropped {
            let (kind, id) = match &dropped.what {
                DroppedKind::UnpairedResult { id } => ("tool_result", id),
                DroppedKind::ReusedToolId { id } => ("tool_use", id),
                _ => continue,
            };
            *changes
                .entry(dropped.line)
                .or_default()
                .left_out
                .entry((kind, id.as_str()))
                .or_default() += 1;
        }
        let walked = &conversation.walked;
        let off_walk: HashSet<u64> = self
            .records
            .iter()
            .enumerate()
            .filter(|(at, _)| !walked.contains(at))
            .map(|(_, record)| record.line)
            .collect();
        if !changes.is_empty() {
            for (number, line) in BufReader::new(original).split(b'\n').enumerate() {
                let number = number as u64 + 1;
                let line = line.map_err(|source| TranscriptError::Io {
                    path: self.path().to_owned(),
                    source,
                })?;
                let Some(change) = changes.get(&number) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_start_matches('\u{FEFF}');
                let changed = || TranscriptError::BadLine {
                    path: self.path().to_owned(),
                    line: number,
                    offset: 0,
                    reason: crate::rollout::SkipReason::InvalidPayload(
                        "the record repaired is not on this line any more".into(),
                    ),
                };
                let Ok(Value::Object(mut record)) = serde_json::from_str::<Value>(text) else {
                    return Err(changed());
                };
                let uuid = record
                    .get("uuid")
                    .and_then(Value::as_str)
                    .ok_or_else(changed)?
                    .to_owned();
                let mut mark = mark(if change.parent.is_some() {
                    "reattached"
                } else {
                    "left_out_blocks"
                });
                if let Some(parent) = change.parent {
                    record.insert("parentUuid".into(), Value::from(parent));
                    repair.reattached.push(uuid);
                }
                if !change.left_out.is_empty() {
                    let mut without = record.clone();
                    let removed = change.leave_out(&mut without).ok_or_else(changed)?;
                    // A user record off the walk is sent because it holds results (put back
                    // after a call batch): one left with other blocks and no result would not
                    // be sent any more. (An assistant line off the walk is sent for its id.)
                    if off_walk.contains(&number)
                        && record.get("type").and_then(Value::as_str) == Some("user")
                        && !holds_result(&without)
                        && !is_virtual(&without)
                    {
                        repair.unrepaired.push(number);
                        if change.parent.is_none() {
                            continue;
                        }
                    } else {
                        record = without;
                        repair
                            .left_out
                            .extend(removed.iter().map(|block| tool_id(block).to_owned()));
                        mark["left_out"] = Value::Array(removed);
                    }
                }
                record.insert(REPAIR_MARK_KEY.into(), mark);
                repair.lines.push(Value::Object(record).to_string());
            }
        }
        Ok(())
    }

    /// The calls of `conversation` no result answers, answered into `repair`.
    fn answer_calls(&self, conversation: &Conversation, repair: &mut TranscriptRepair) {
        // Unanswered calls: the conversation's calls no result answers (the results kept
        // answer the assistant message before them), by the line of their tool_use.
        let mut answered: HashSet<String> = HashSet::new();
        let mut calls: Vec<(u64, String)> = Vec::new();
        for item in &conversation.items {
            let Ok(Value::Object(parsed)) = serde_json::from_str::<Value>(&item.json) else {
                continue;
            };
            let id = parsed.get("call_id").and_then(Value::as_str).unwrap_or("");
            match parsed.get("type").and_then(Value::as_str) {
                Some("function_call") => calls.push((item.line, id.to_owned())),
                Some("function_call_output") => {
                    answered.insert(id.to_owned());
                }
                _ => {}
            }
        }
        let by_line: HashMap<u64, usize> = self
            .records
            .iter()
            .enumerate()
            .map(|(at, record)| (record.line, at))
            .collect();
        let mut open: Vec<(u64, Vec<String>)> = Vec::new();
        for (line, id) in calls {
            if answered.contains(&id) {
                continue;
            }
            match open.last_mut() {
                Some((last, ids)) if *last == line => ids.push(id),
                _ => open.push((line, vec![id])),
            }
        }
        for (line, ids) in open {
            let Some(record) = by_line.get(&line).map(|&at| &self.records[at]) else {
                continue;
            };
            let results: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({"type": "tool_result", "tool_use_id": id, "content": REPAIR_RESULT_TEXT,
                        "is_error": true})
                })
                .collect();
            let name = format!("claude-code-repair:{}:{}", record.uuid, ids.join(","));
            let mut written = Map::new();
            written.insert("parentUuid".into(), Value::from(&*record.uuid));
            written.insert("isSidechain".into(), Value::from(record.sidechain));
            written.insert("type".into(), Value::from("user"));
            written.insert(
                "message".into(),
                json!({"role": "user", "content": results}),
            );
            written.insert(
                "uuid".into(),
                Value::from(Uuid::new_v5(&SYNTHETIC_ID_NAMESPACE, name.as_bytes()).to_string()),
            );
            written.insert("timestamp".into(), Value::from(&*record.timestamp));
            for (key, value) in [
                ("sessionId", &record.session_id),
                ("cwd", &record.cwd),
                ("version", &record.version),
                ("agentId", &record.agent_id),
            ] {
                if let Some(value) = value {
                    written.insert(key.into(), Value::from(&**value));
                }
            }
            written.insert(REPAIR_MARK_KEY.into(), mark("answered_tool_use"));
            repair.lines.push(Value::Object(written).to_string());
            repair.answered.extend(ids);
        }
    }
}

/// The mark of a record a repair writes.
fn mark(kind: &str) -> Value {
    json!({"repair": kind, "version": env!("CARGO_PKG_VERSION")})
}
