//! Helpers shared by the integration tests: items, rollout lines, example files, temporary
//! directories, resume shortcuts, running the command. Each test uses a subset.
#![allow(dead_code)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod paginated;
pub mod pairing;

use std::path::{Path, PathBuf};

use agent_history::{
    History, ResumeOptions, Resumed, RolloutSink, Session, ThreadId, TruncationPolicy, TurnId,
};

/// The thread id of the hand-written rollouts of the tests.
pub const THREAD_ID: &str = "0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90";

/// A thread id named after `name`: a UUIDv5, the same for the same name.
pub fn thread(name: &str) -> ThreadId {
    ThreadId::from(uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_OID,
        name.as_bytes(),
    ))
}

/// A fresh temporary directory, removed when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("agent-history-test-")
        .tempdir()
        .expect("a temporary directory")
}

/// A bundled example rollout.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/rollouts")
        .join(name)
}

/// A message item with one text part (`output_text` for the assistant, else `input_text`).
pub fn message(role: &str, text: &str) -> String {
    let part = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    serde_json::json!({"type": "message", "role": role, "content": [{"type": part, "text": text}]})
        .to_string()
}

/// A user message.
pub fn user(text: &str) -> String {
    message("user", text)
}

/// An assistant message.
pub fn assistant(text: &str) -> String {
    message("assistant", text)
}

/// A developer message.
pub fn developer(text: &str) -> String {
    message("developer", text)
}

/// A developer message whose content is several `input_text` parts.
pub fn developer_parts(texts: &[&str]) -> String {
    let content: Vec<serde_json::Value> = texts
        .iter()
        .map(|text| serde_json::json!({"type": "input_text", "text": text}))
        .collect();
    serde_json::json!({"type": "message", "role": "developer", "content": content}).to_string()
}

/// A `function_call` of the tool `name` with `arguments` (a JSON text), without an item id.
pub fn call_with(call_id: &str, name: &str, arguments: &str) -> String {
    serde_json::json!({"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id})
        .to_string()
}

/// A `function_call` of `shell` without arguments (`{}`) or an item id.
pub fn call(call_id: &str) -> String {
    call_with(call_id, "shell", "{}")
}

/// A `function_call` of `shell` with the item id `fc_<call_id>` and `arguments` (a JSON text),
/// as Codex records one.
pub fn shell_call(call_id: &str, arguments: &str) -> String {
    serde_json::json!({"type": "function_call", "id": format!("fc_{call_id}"), "name": "shell", "arguments": arguments, "call_id": call_id})
        .to_string()
}

/// The arguments of a shell call that lists a directory.
pub const LS: &str = r#"{"command":["ls"]}"#;

/// A `function_call_output` of `call_id` with a text output.
pub fn output(call_id: &str, text: &str) -> String {
    serde_json::json!({"type": "function_call_output", "call_id": call_id, "output": text})
        .to_string()
}

/// JSON text as a value.
pub fn value(json: &str) -> serde_json::Value {
    serde_json::from_str(json).expect("JSON")
}

/// A rollout line (envelope) of type `kind` with `payload`.
pub fn line(kind: &str, payload: &str) -> String {
    format!(r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
}

/// The `session_meta` payload of the hand-written rollouts.
pub fn meta_payload() -> String {
    format!(
        r#"{{"id":"{THREAD_ID}","timestamp":"2026-11-03T14:00:00.000Z","cwd":"/w","originator":"test","cli_version":"0.0.0","source":"cli"}}"#
    )
}

/// The `session_meta` line of the hand-written rollouts.
pub fn meta_line() -> String {
    line("session_meta", &meta_payload())
}

/// A `response_item` line.
pub fn item_line(json: &str) -> String {
    line("response_item", json)
}

/// An `event_msg` line.
pub fn event_line(json: &str) -> String {
    line("event_msg", json)
}

/// Rollout lines as the text of a file: each line ends with a newline.
pub fn rollout_text(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// The entries' JSON texts.
pub fn jsons(history: &History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// What a live session and a resume of its file must agree on: the entries' texts, the previous
/// turn's settings (their text), the reference context item, and the turn it is inside (`Some`
/// with the turn's id when it is inside one).
#[derive(Debug, PartialEq)]
pub struct TurnState {
    pub entries: Vec<String>,
    pub previous_turn_settings: Option<String>,
    pub reference_context_item: Option<serde_json::Value>,
    pub turn: Option<Option<TurnId>>,
}

impl TurnState {
    /// The live session's.
    pub fn of_session<S: RolloutSink>(session: &Session<S>) -> TurnState {
        TurnState {
            entries: jsons(session.history()),
            previous_turn_settings: session
                .previous_turn_settings()
                .map(|raw| raw.get().to_owned()),
            reference_context_item: session.history().reference_context_item().cloned(),
            turn: session.active_turn().map(|turn| turn.id().cloned()),
        }
    }

    /// A resume's: the turn is the incomplete one.
    pub fn of_resumed(resumed: &Resumed) -> TurnState {
        TurnState {
            entries: jsons(resumed.history()),
            previous_turn_settings: resumed
                .previous_turn_settings()
                .map(|raw| raw.get().to_owned()),
            reference_context_item: resumed.history().reference_context_item().cloned(),
            turn: resumed.incomplete_turn().map(|turn| turn.turn_id.clone()),
        }
    }
}

/// Resumes the rollout file at `path` from every line.
pub fn resume_path(path: &Path, truncation: TruncationPolicy) -> Resumed {
    agent_history::resume_file(path, &ResumeOptions::new(truncation)).expect("resumes")
}

/// Makes a FIFO at `path` (with the system's `mkfifo`).
pub fn fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Resumes rollout bytes from every line.
pub fn resume_bytes(bytes: &[u8], truncation: TruncationPolicy) -> Resumed {
    agent_history::resume_reader(
        bytes,
        agent_history::READER_LABEL,
        &ResumeOptions::new(truncation),
    )
    .expect("resumes")
}
