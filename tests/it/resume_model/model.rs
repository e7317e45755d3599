//! The resume model, written from `docs/rollout-format.md` and `docs/codex-compatibility.md`
//! alone: lines parsed to `serde_json::Value`, a forward replay over plain `Vec`s, and a reverse
//! scan for whether the rollout ends inside a turn. It shares no code with `src/` (only the
//! `SUMMARY_PREFIX` text, a constant of the item layer).
//!
//! What the docs say, and this model does:
//! * lines that are blank, not JSON or not an envelope are skipped; the thread id is the first
//!   `session_meta`'s `id`;
//! * `response_item`: the record filter (`system` messages, `compaction_trigger`, legacy
//!   `ghost_snapshot`, client tool searches without a call id are not recorded), client tool-search
//!   canonicalization, and record-time truncation of `function_call_output` /
//!   `custom_tool_call_output` (bytes policy with the ×1.2 allowance rounded up; string bodies
//!   middle-truncated on character boundaries with `…N chars truncated…`; array bodies budgeted
//!   part by part);
//! * `inter_agent_communication` → the `agent_message` it stands for;
//! * `compacted` with `replacement_history` replaces the history (ghost snapshots dropped) and
//!   keeps the state before it for later rollbacks; without it (legacy), local compaction rebuilds
//!   the history from the real user messages and the summary, and no rollback returns past it;
//! * `thread_rolled_back {num_turns}` rolls back user turns, across compactions;
//! * every compaction and rollback bumps the version;
//! * the last turn is open when its `task_started` (or `turn_started`) has no `task_complete`,
//!   `turn_complete` or `turn_aborted` after it.

use agent_history::SUMMARY_PREFIX;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// What the model says a resume gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The history's items, oldest first.
    pub items: Vec<Value>,
    /// The history version: one per replace (compaction, rollback).
    pub version: u64,
    /// The thread id.
    pub thread_id: String,
    /// Whether the rollout ends inside a turn.
    pub ends_inside_turn: bool,
    /// The user turns a rollback can undo: those of the current state and of the states earlier
    /// compactions replaced.
    pub reachable_turns: usize,
    /// The items after a rollback of 1, 2, … turns, up to one more than are reachable.
    pub rolled_back: Vec<Vec<Value>>,
    /// How often each case the docs distinguish occurred (the test's coverage check).
    pub seen: BTreeMap<String, usize>,
}

fn see(seen: &mut BTreeMap<String, usize>, what: impl Into<String>) {
    *seen.entry(what.into()).or_default() += 1;
}

/// A history state: its items, where its own user turns start (after a compaction's replacement
/// history, whose user messages are copies, not turns), and the state a compaction replaced.
#[derive(Debug, Clone)]
struct State {
    items: Vec<Value>,
    turns_from: usize,
    before: Option<Box<State>>,
    /// Coverage: contextual messages trimmed above a cut, states returned to.
    trimmed: usize,
    returned: usize,
}

/// Start and end markers of contextual user fragments (matched case-insensitively on the trimmed
/// text), as `docs/codex-compatibility.md` lists them.
const USER_MARKERS: &[(&str, &str)] = &[
    ("# AGENTS.md instructions for ", "</INSTRUCTIONS>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<goal_context>", "</goal_context>"),
    ("<next_prompt_suggestion>", "</next_prompt_suggestion>"),
];

/// Openings of contextual developer fragments (case-insensitive).
const DEVELOPER_MARKERS: &[&str] = &[
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
    "Approved command prefix saved:",
];

/// The text that stands for an empty compaction summary.
const EMPTY_SUMMARY: &str = "(no summary available)";
/// Local compaction keeps the newest real user messages within this many tokens.
const COMPACT_USER_TOKENS: usize = 20_000;
/// What invalid client tool-search arguments become.
const INVALID_SEARCH: &str = "[invalid tool_search arguments omitted]";

fn starts_ci(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn ends_ci(text: &str, suffix: &str) -> bool {
    text.len() >= suffix.len()
        && text.as_bytes()[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

fn texts(item: &Value) -> Vec<&str> {
    item["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

fn role(item: &Value) -> Option<&str> {
    (item["type"] == "message")
        .then(|| item["role"].as_str())
        .flatten()
}

fn contextual_user(text: &str) -> bool {
    let text = text.trim();
    USER_MARKERS
        .iter()
        .any(|(start, end)| starts_ci(text, start) && ends_ci(text, end))
}

fn contextual_developer(text: &str) -> bool {
    let text = text.trim_start();
    DEVELOPER_MARKERS.iter().any(|start| starts_ci(text, start))
}

fn summary(text: &str) -> bool {
    text.strip_prefix(SUMMARY_PREFIX)
        .is_some_and(|rest| rest.starts_with('\n'))
}

/// An agent path: `/root`, then segments of lowercase letters, digits and `_`.
fn agent_path(path: &Value) -> bool {
    let Some(path) = path.as_str() else {
        return false;
    };
    let Some(rest) = path.strip_prefix("/root") else {
        return false;
    };
    rest.is_empty()
        || rest.strip_prefix('/').is_some_and(|segments| {
            segments.split('/').all(|segment| {
                !segment.is_empty()
                    && segment
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            })
        })
}

fn communication(value: &Value) -> bool {
    value.is_object()
        && value["content"].is_string()
        && value["trigger_turn"].is_boolean()
        && agent_path(&value["author"])
        && agent_path(&value["recipient"])
}

/// Whether an item starts a user turn.
fn user_turn(item: &Value) -> bool {
    if item["type"] == "agent_message" {
        return true;
    }
    match role(item) {
        Some("user") => {
            let texts = texts(item);
            !texts
                .iter()
                .any(|text| contextual_user(text) || summary(text))
        }
        Some("assistant") => {
            let parts = item["content"].as_array().map_or(&[][..], Vec::as_slice);
            parts.len() == 1
                && parts[0]["text"]
                    .as_str()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .is_some_and(|value| communication(&value))
        }
        _ => false,
    }
}

/// Middle truncation of a text to `budget` bytes, on character boundaries, with the chars marker.
fn truncate(text: &str, budget: usize) -> String {
    if text.len() <= budget {
        return text.to_owned();
    }
    let head_budget = budget / 2;
    let tail_budget = budget - head_budget;
    let mut head = String::new();
    let mut tail = String::new();
    let mut removed = 0;
    for (at, ch) in text.char_indices() {
        if at + ch.len_utf8() <= head_budget {
            head.push(ch);
        } else if at >= text.len() - tail_budget {
            tail.push(ch);
        } else {
            removed += 1;
        }
    }
    format!("{head}…{removed} chars truncated…{tail}")
}

/// The record-time truncation of a tool output's body.
fn truncate_output(output: &Value, budget: usize) -> Value {
    match output {
        Value::String(text) => Value::String(truncate(text, budget)),
        Value::Array(parts) => {
            let mut left = budget;
            let mut kept = Vec::new();
            let mut omitted = 0;
            for part in parts {
                match (part["type"].as_str(), part["text"].as_str()) {
                    (Some("input_text"), Some(text)) => {
                        if text.is_empty() {
                            continue;
                        }
                        if left == 0 {
                            omitted += 1;
                        } else if text.len() <= left {
                            left -= text.len();
                            kept.push(part.clone());
                        } else {
                            let cut = truncate(text, left);
                            left = 0;
                            if cut.is_empty() {
                                omitted += 1;
                            } else {
                                kept.push(json!({"type": "input_text", "text": cut}));
                            }
                        }
                    }
                    _ => kept.push(part.clone()),
                }
            }
            if omitted > 0 {
                kept.push(
                    json!({"type": "input_text", "text": format!("[omitted {omitted} text items ...]")}),
                );
            }
            Value::Array(kept)
        }
        other => other.clone(),
    }
}

/// Client tool-search arguments through the schema `{query: string, limit?: integer}`.
fn canonical_search(arguments: &Value) -> Value {
    let invalid = json!({ "query": INVALID_SEARCH });
    let Some(object) = arguments.as_object() else {
        return invalid;
    };
    let Some(query) = object.get("query").and_then(Value::as_str) else {
        return invalid;
    };
    let mut canonical = Map::new();
    canonical.insert("query".into(), json!(query));
    match object.get("limit") {
        None | Some(Value::Null) => {}
        Some(limit) => match limit.as_u64() {
            Some(limit) => {
                canonical.insert("limit".into(), json!(limit));
            }
            None => return invalid,
        },
    }
    Value::Object(canonical)
}

/// What recording an item stores, or `None` when the record filter keeps it out.
fn record(item: &Value, budget: usize) -> Option<Value> {
    match item["type"].as_str() {
        Some("message") if item["role"] == "system" => None,
        Some("compaction_trigger" | "ghost_snapshot") => None,
        Some("tool_search_call") if item["execution"] == "client" => {
            let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
            if call_id.is_empty() {
                return None;
            }
            let mut item = item.clone();
            item["arguments"] = canonical_search(&item["arguments"]);
            Some(item)
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let mut item = item.clone();
            item["output"] = truncate_output(&item["output"], budget);
            Some(item)
        }
        _ => Some(item.clone()),
    }
}

/// The `agent_message` an `inter_agent_communication` stands for.
fn agent_message(communication: &Value) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), json!("agent_message"));
    if let Some(id) = communication.get("id") {
        item.insert("id".into(), id.clone());
    }
    item.insert("author".into(), communication["author"].clone());
    item.insert("recipient".into(), communication["recipient"].clone());
    let content = match communication.get("encrypted_content") {
        Some(encrypted) => {
            let kind = if communication["trigger_turn"] == true {
                "NEW_TASK"
            } else {
                "MESSAGE"
            };
            let header = format!(
                "Message Type: {kind}\nTask name: {}\nSender: {}\nPayload:\n",
                communication["recipient"].as_str().unwrap_or(""),
                communication["author"].as_str().unwrap_or("")
            );
            json!([
                {"type": "input_text", "text": header},
                {"type": "encrypted_content", "encrypted_content": encrypted}
            ])
        }
        None => json!([{"type": "input_text", "text": communication["content"]}]),
    };
    item.insert("content".into(), content);
    if let Some(metadata) = communication.get("internal_chat_message_metadata_passthrough") {
        item.insert(
            "internal_chat_message_metadata_passthrough".into(),
            metadata.clone(),
        );
    }
    Value::Object(item)
}

fn user_text_message(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// Local compaction of `items` with the summary text `message` (the `compacted` line's `message`
/// is the whole summary text, the fixed paragraph included).
fn local_compaction(items: &[Value], message: &str) -> Vec<Value> {
    let users: Vec<String> = items
        .iter()
        .filter(|item| role(item) == Some("user"))
        .filter(|item| {
            !texts(item)
                .iter()
                .any(|text| contextual_user(text) || summary(text))
        })
        .map(|item| texts(item).join("\n"))
        .collect();
    let mut kept = Vec::new();
    let mut left = COMPACT_USER_TOKENS;
    for text in users.iter().rev() {
        let tokens = text.len().div_ceil(4);
        // The generated messages are short: the truncation branch is never reached.
        assert!(tokens <= left, "a generated user message fits the budget");
        left -= tokens;
        kept.push(user_text_message(text));
    }
    kept.reverse();
    let summary = if message.is_empty() {
        EMPTY_SUMMARY
    } else {
        message
    };
    kept.push(user_text_message(summary));
    kept
}

impl State {
    fn boundaries(&self) -> Vec<usize> {
        (self.turns_from..self.items.len())
            .filter(|&at| user_turn(&self.items[at]))
            .collect()
    }

    /// The user turns of this state and of the states before it.
    fn reachable(&self) -> usize {
        self.boundaries().len() + self.before.as_ref().map_or(0, |before| before.reachable())
    }

    /// Whether this state or one before it holds a user turn.
    fn any_turn(&self) -> bool {
        !self.boundaries().is_empty()
            || self.before.as_ref().is_some_and(|before| before.any_turn())
    }

    /// Cuts this state at its user-turn boundary `cut`, trimming the contextual messages right
    /// above it (never past the first boundary).
    fn cut_at(&mut self, cut: usize) {
        let first = (0..self.items.len())
            .find(|&at| user_turn(&self.items[at]))
            .unwrap_or(cut);
        let mut cut = cut;
        while cut > first {
            let above = &self.items[cut - 1];
            let trimmed = match role(above) {
                Some("developer") => texts(above).iter().any(|t| contextual_developer(t)),
                Some("user") => texts(above).iter().any(|t| contextual_user(t)),
                _ => false,
            };
            if !trimmed {
                break;
            }
            self.trimmed += 1;
            cut -= 1;
        }
        self.items.truncate(cut);
        self.turns_from = self.turns_from.min(cut);
    }

    /// Rolls back `turns` user turns, into the states earlier compactions replaced when needed.
    fn roll_back(&mut self, mut turns: usize) {
        loop {
            let boundaries = self.boundaries();
            if turns <= boundaries.len() {
                if turns > 0 {
                    self.cut_at(boundaries[boundaries.len() - turns]);
                }
                return;
            }
            // More turns than this state recorded: back to the state the compaction replaced,
            // and on rolling back there -- as long as a turn remains to roll back there (the
            // history returns to before the earliest user turn, and with none it stays).
            match self.before.take() {
                Some(before) if before.any_turn() => {
                    turns -= boundaries.len();
                    let (trimmed, returned) = (self.trimmed, self.returned + 1);
                    *self = *before;
                    (self.trimmed, self.returned) = (trimmed, returned);
                }
                before => {
                    self.before = before;
                    if let Some(&first) = boundaries.first() {
                        self.cut_at(first);
                    }
                    return;
                }
            }
        }
    }
}

/// Resumes the rollout `text` with a `bytes:limit` truncation policy.
pub fn resume(text: &str, limit: usize) -> Outcome {
    // Codex's allowance: the limit × 1.2, rounded up.
    let budget = (limit * 12).div_ceil(10);
    let mut state = State {
        items: Vec::new(),
        turns_from: 0,
        before: None,
        trimmed: 0,
        returned: 0,
    };
    let mut seen = BTreeMap::new();
    let mut version = 0;
    let mut thread_id = None;
    let mut open_turn = false;
    for line in text.split('\n') {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            see(&mut seen, "line not JSON");
            continue;
        };
        let (Some(kind), Some(payload)) = (line["type"].as_str(), line.get("payload")) else {
            continue;
        };
        see(&mut seen, format!("line {kind}"));
        if kind == "event_msg" {
            let event = payload["type"].as_str().unwrap_or("?");
            see(&mut seen, format!("event {event}"));
        }
        match kind {
            "session_meta" if thread_id.is_none() => {
                thread_id = payload["id"].as_str().map(str::to_owned);
            }
            "response_item" => {
                see(
                    &mut seen,
                    format!("item {}", payload["type"].as_str().unwrap_or("?")),
                );
                match record(payload, budget) {
                    Some(item) => {
                        if item != *payload {
                            see(&mut seen, format!("rewritten {}", item["type"]));
                        }
                        if user_turn(&item) {
                            see(&mut seen, format!("user turn {}", item["type"]));
                        }
                        state.items.push(item);
                    }
                    None => see(&mut seen, "not recorded"),
                }
            }
            // A payload that is not a communication is skipped.
            "inter_agent_communication" if communication(payload) => {
                state.items.push(agent_message(payload));
            }
            "compacted" => {
                version += 1;
                match payload.get("replacement_history") {
                    Some(Value::Array(replacement)) => {
                        let items: Vec<Value> = replacement
                            .iter()
                            .filter(|item| item["type"] != "ghost_snapshot")
                            .cloned()
                            .collect();
                        let (trimmed, returned) = (state.trimmed, state.returned);
                        let before = std::mem::replace(
                            &mut state,
                            State {
                                turns_from: items.len(),
                                items,
                                before: None,
                                trimmed,
                                returned,
                            },
                        );
                        state.before = Some(Box::new(before));
                    }
                    _ => {
                        let message = payload["message"].as_str().unwrap_or("");
                        see(&mut seen, "legacy compaction");
                        state = State {
                            items: local_compaction(&state.items, message),
                            turns_from: 0,
                            before: None,
                            trimmed: state.trimmed,
                            returned: state.returned,
                        };
                    }
                }
            }
            "event_msg" => match payload["type"].as_str() {
                Some("thread_rolled_back") => {
                    version += 1;
                    let turns = payload["num_turns"].as_u64().unwrap_or(0);
                    let before = state.items.len();
                    state.roll_back(usize::try_from(turns).expect("small"));
                    if state.items.len() < before {
                        see(&mut seen, "rollback removing items");
                    }
                }
                Some("task_started" | "turn_started") => open_turn = true,
                Some("task_complete" | "turn_complete" | "turn_aborted") => open_turn = false,
                _ => {}
            },
            _ => {}
        }
    }
    if open_turn {
        see(&mut seen, "ends inside a turn");
    }
    *seen.entry("contextual message trimmed".into()).or_default() += state.trimmed;
    *seen
        .entry("rollback into an earlier state".into())
        .or_default() += state.returned;
    let reachable_turns = state.reachable();
    let rolled_back = (1..=reachable_turns + 1)
        .map(|turns| {
            let mut state = state.clone();
            state.roll_back(turns);
            state.items
        })
        .collect();
    Outcome {
        reachable_turns,
        rolled_back,
        seen,
        items: state.items,
        version,
        thread_id: thread_id.unwrap_or_default(),
        ends_inside_turn: open_turn,
    }
}
