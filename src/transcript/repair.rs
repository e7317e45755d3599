//! A repaired copy of a transcript, for a user whose Claude Code resume fails: the records that,
//! appended to the file, make Claude Code's own loader send the conversation this library sends
//! — every `tool_use` left unanswered answered by an `aborted` error result, and every record
//! re-attached where the file's chain would lose history. Nothing of the file is changed: a later
//! line with a record's uuid replaces the earlier one, so the copy is the file's bytes and then
//! these lines.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::item::SYNTHETIC_ID_NAMESPACE;

use super::error::TranscriptError;
use super::reader::Transcript;

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
}

impl TranscriptRepair {
    /// Whether the transcript needs no repair.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
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
        let mark = |kind: &str| json!({"repair": kind, "version": env!("CARGO_PKG_VERSION")});
        // Re-attachments: the record again, under the parent the conversation gives it.
        let moved: HashMap<u64, &str> = conversation
            .report
            .rescues
            .iter()
            .map(|rescue| (rescue.line, rescue.now_under.as_str()))
            .collect();
        if !moved.is_empty() {
            for (number, line) in BufReader::new(original).split(b'\n').enumerate() {
                let number = number as u64 + 1;
                let line = line.map_err(|source| TranscriptError::Io {
                    path: self.path().to_owned(),
                    source,
                })?;
                let Some(&parent) = moved.get(&number) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_start_matches('\u{FEFF}');
                let changed = || TranscriptError::BadLine {
                    path: self.path().to_owned(),
                    line: number,
                    offset: 0,
                    reason: crate::rollout::SkipReason::InvalidPayload(
                        "the record re-attached is not on this line any more".into(),
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
                record.insert("parentUuid".into(), Value::from(parent));
                record.insert(REPAIR_MARK_KEY.into(), mark("reattached"));
                repair.lines.push(Value::Object(record).to_string());
                repair.reattached.push(uuid);
            }
        }
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
        Ok(repair)
    }
}
