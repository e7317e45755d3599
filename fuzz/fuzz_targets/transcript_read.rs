//! Claude Code transcript bytes read leniently and strictly with a small line limit, then the
//! conversation of every thread chosen, recorded and projected for Anthropic Messages.
//!
//! The first input byte sets `max_line_bytes` (8 × it, or the default when 0); bit 0 of the
//! second puts a valid user record before the rest, so that fuzzed lines hang from a real one.
//! The rest are the transcript's bytes.
//!
//! Checked: nothing panics and nothing hangs (a cycle of parents, of progress records, a record
//! that is its own parent); a lenient read gives records or a typed error; a strict read that
//! succeeds keeps what the lenient one keeps; the report's line count is the input's; every
//! record sent is a record of the file, sent once; the history's items are the conversation's,
//! and its Anthropic projection is valid JSON whose every `tool_use` is answered first in the
//! next user message.
#![no_main]

use std::collections::HashSet;

use agent_history::{
    DEFAULT_MAX_LINE_BYTES, ReadMode, ReadOptions, Target, TargetOptions, Transcript,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const FIRST: &str = r#"{"type":"user","uuid":"f0","parentUuid":null,"timestamp":"2026-11-20T10:00:00.000Z","message":{"role":"user","content":"start"}}"#;

fn check(transcript: &Transcript, thread: Option<&str>) {
    let conversation = match thread {
        None => transcript.conversation(),
        Some(agent) => transcript.subagent_conversation(agent),
    };
    let mut seen = HashSet::new();
    for record in conversation.sent() {
        assert!(seen.insert(record.line), "line {} sent twice", record.line);
        assert!(record.line >= 1 && record.line <= transcript.report.lines);
    }
    let Ok(history) = conversation.history() else {
        return;
    };
    assert_eq!(history.len(), conversation.items().count());
    let projection = history
        .project_for(&TargetOptions::new(Target::AnthropicMessages))
        .expect("a history of recorded items projects");
    let messages: Vec<Value> = serde_json::from_str(&projection.to_json()).expect("JSON");
    for pair in messages.windows(2) {
        let calls: Vec<&Value> = pair[0]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| pair[0]["role"] == "assistant" && block["type"] == "tool_use")
            .map(|block| &block["id"])
            .collect();
        let results: Vec<&Value> = pair[1]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .take(calls.len())
            .map(|block| &block["tool_use_id"])
            .collect();
        for call in calls {
            assert!(results.contains(&call), "{call} unanswered");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&[limit, flags], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let max_line_bytes = match limit {
        0 => DEFAULT_MAX_LINE_BYTES,
        n => 8 * usize::from(n),
    };
    let mut bytes = Vec::new();
    if flags & 1 == 1 {
        bytes.extend_from_slice(FIRST.as_bytes());
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(rest);
    let lenient = ReadOptions::from(ReadMode::Lenient).max_line_bytes(max_line_bytes);
    let Ok(transcript) = Transcript::read(&bytes[..], "<fuzz>", lenient) else {
        return;
    };
    let lines = bytes.split(|&byte| byte == b'\n').count() as u64
        - u64::from(bytes.ends_with(b"\n") || bytes.is_empty());
    assert_eq!(transcript.report.lines, lines, "line count");
    let strict = ReadOptions::from(ReadMode::Strict).max_line_bytes(max_line_bytes);
    if let Ok(strictly) = Transcript::read(&bytes[..], "<fuzz>", strict) {
        assert_eq!(strictly.record_count(), transcript.record_count());
    }
    check(&transcript, None);
    for agent in transcript.subagents() {
        check(&transcript, Some(agent));
    }
});
