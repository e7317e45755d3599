//! The hot paths of recording and reading agree with the general paths they shortcut.
//!
//! - A `response_item` line in the exact envelope the writer produces is read without parsing the
//!   envelope first; the same line with white space between the tokens takes the general path.
//!   Both must give the same history and the same report.
//! - `History::record_json` knows a tool output's parts from the parsed item and skips the
//!   truncation pass when they fit; `History::record_entry` (nothing known) runs it. Both must
//!   store the same text and report the same outcome.

use agent_history::{
    DEFAULT_TRUNCATION, Entry, History, READER_LABEL, ResumeOptions, TruncationPolicy,
    resume_reader,
};
use proptest::prelude::*;

const META: &str = r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z"}}"#;

/// A rollout of `payloads` as `response_item` lines, in the writer's exact envelope or, with
/// `spaced`, with white space the hot path does not take.
fn rollout(payloads: &[String], spaced: bool) -> Vec<u8> {
    let mut text = format!("{META}\n");
    for payload in payloads {
        if spaced {
            text.push_str(&format!(
                "{{\"timestamp\": \"2026-11-03T14:00:01.000Z\", \"type\": \"response_item\", \"payload\": {payload} }}\n"
            ));
        } else {
            text.push_str(&format!(
                "{{\"timestamp\":\"2026-11-03T14:00:01.000Z\",\"type\":\"response_item\",\"payload\":{payload}}}\n"
            ));
        }
    }
    text.into_bytes()
}

/// What resuming `bytes` gives: the entries' text and header, and each skipped line with its
/// reason (offsets, and the position in an envelope error, differ between the two forms).
fn resumed(bytes: &[u8]) -> (Vec<Entry>, Vec<(u64, String)>, u64) {
    let resumed = resume_reader(bytes, READER_LABEL, &ResumeOptions::new(DEFAULT_TRUNCATION))
        .expect("resumes");
    let skipped = resumed
        .report()
        .skipped
        .iter()
        .map(|line| {
            // Positions of envelope errors differ with the white space.
            let reason = line.reason.to_string();
            let reason = match reason.find(" at line ") {
                Some(at) if reason.starts_with("malformed") => reason[..at].to_owned(),
                _ => reason,
            };
            (line.line, reason)
        })
        .collect();
    let ghosts = resumed.report().left_out.ghost_snapshots;
    (resumed.history().iter().cloned().collect(), skipped, ghosts)
}

#[test]
fn the_hot_path_takes_what_the_general_path_takes() {
    let payloads: Vec<String> = [
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"a \"b\"\n\u00e9"}]}"#,
        r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}"#,
        r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"t"}]}"#,
        r#"{"type":"ghost_snapshot","ghost_commit":{}}"#,
        r#"{"type":"future_item","x":1}"#,
        r#"{"role":"user","type":"message","content":[]}"#,
        // A key after the payload: the general path reads it.
        r#"{"type":"message","role":"user","content":[]} , "extra": 1"#,
        // Skipped by both, for the same reason.
        r#"{"type":"function_call","name":"f"}"#,
        r#"{"type":"future_item","x":"\udc00"}"#,
        r#"[1]"#,
        r#"{"type":"message","role":"user","content":[]"#,
    ]
    .iter()
    .map(|payload| (*payload).to_owned())
    .collect();
    let exact = resumed(&rollout(&payloads, false));
    let spaced = resumed(&rollout(&payloads, true));
    assert_eq!(exact, spaced);
    assert_eq!(exact.0.len(), 6, "{:?}", exact.1);
    assert_eq!(exact.1.len(), 4, "{:?}", exact.1);
    assert_eq!(exact.2, 1);
}

#[test]
fn a_timestamp_with_an_escape_takes_the_general_path() {
    let item = r#"{"type":"message","role":"user","content":[]}"#;
    let plain = format!(
        "{META}\n{{\"timestamp\":\"2026\",\"type\":\"response_item\",\"payload\":{item}}}\n"
    );
    let escaped = format!(
        "{META}\n{{\"timestamp\":\"20\\u00326\",\"type\":\"response_item\",\"payload\":{item}}}\n"
    );
    let torn = format!("{META}\n{{\"timestamp\":\"20\n");
    assert_eq!(resumed(plain.as_bytes()), resumed(escaped.as_bytes()));
    assert_eq!(resumed(torn.as_bytes()).1.len(), 1);
}

fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,30}".prop_map(|text| format!(r#"{{"type":"input_text","text":"{text}"}}"#)),
        "[A-Z]{0,30}".prop_map(|url| format!(r#"{{"type":"input_audio","audio_url":"{url}"}}"#)),
        Just(r#"{"type":"input_image","image_url":"data:image/png;base64,AAAA"}"#.to_owned()),
        Just(r#"{"type":"encrypted_content","encrypted_content":"xyz"}"#.to_owned()),
        Just(r#"{"type":"zzz","text":"not counted"}"#.to_owned()),
    ]
}

fn policy() -> impl Strategy<Value = TruncationPolicy> {
    prop_oneof![
        (0usize..80).prop_map(TruncationPolicy::Bytes),
        (0usize..20).prop_map(TruncationPolicy::Tokens),
    ]
}

proptest! {
    #[test]
    fn known_parts_are_truncated_as_unknown_ones(
        parts in prop::collection::vec(part(), 0..6),
        custom in any::<bool>(),
        policy in policy(),
    ) {
        let item_type = if custom { "custom_tool_call_output" } else { "function_call_output" };
        let json = format!(
            r#"{{"type":"{item_type}","call_id":"c","output":[{}]}}"#,
            parts.join(",")
        );
        let mut known = History::with_truncation(policy);
        let mut unknown = History::with_truncation(policy);
        let recorded = known.record_json(json.as_str()).expect("an item");
        let reference = unknown
            .record_entry(Entry::from_json(json.as_str()).expect("an item"))
            .expect("recorded");
        prop_assert_eq!(recorded, reference);
        prop_assert_eq!(known.entries(), unknown.entries());
    }
}
