//! Helpers shared by the integration tests: items, rollout lines, example files, temporary
//! directories, resume shortcuts. Each test crate uses a subset.
#![allow(dead_code)]

pub mod pairing;

use std::path::{Path, PathBuf};

use agent_history::{History, ResumeOptions, Resumed, ThreadId, TruncationPolicy};

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

/// The entries' JSON texts.
pub fn jsons(history: &History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// Resumes the rollout file at `path` from every line.
pub fn resume_path(path: &Path, truncation: TruncationPolicy) -> Resumed {
    agent_history::resume_file(path, &ResumeOptions::new(truncation)).expect("resumes")
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
