//! The JSON form of the library's reports (`docs/json-output.md`): real reports from real
//! resumes, serialized and checked field by field, so that a renamed or reshaped field fails here.

use crate::common;

use std::fs;

use agent_history::{Modalities, ProjectionOptions, ResumeOptions, TruncationPolicy, resume_file};
use common::{
    THREAD_ID, assistant, event_line, item_line, line, meta_line, rollout_text, temp_dir, user,
};
use serde_json::{Value, json};

/// A rollout that gives every report something to say: an unanswered call, an orphan output, an
/// image, an unknown item, a system message and a line type resume leaves out, a blank and a
/// malformed line, and a torn last line.
fn eventful_rollout() -> String {
    let image = json!({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    ]});
    let lines = [
        meta_line(),
        item_line(&user("hello")),
        item_line(&image.to_string()),
        item_line(r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#),
        item_line(r#"{"type":"function_call_output","call_id":"ghost","output":"late"}"#),
        item_line(r#"{"type":"future_item","data":1}"#),
        item_line(&common::message("system", "be good")),
        line("token_usage_record", r#"{"total":3}"#),
        String::new(),
        "{not json".to_owned(),
        event_line(r#"{"type":"task_started","turn_id":"t1"}"#),
        item_line(&assistant("hi")),
    ];
    let mut text = lines.join("\n");
    text.push('\n');
    text.push_str(r#"{"timestamp":"2026-11-03T14:00:09.000Z","type":"respo"#);
    text
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

#[test]
fn load_report_fields() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    fs::write(&path, eventful_rollout()).unwrap();
    let resumed =
        resume_file(&path, &ResumeOptions::new(TruncationPolicy::Tokens(10_000))).unwrap();
    let report = to_json(resumed.report());

    assert_eq!(report["lines"], 13);
    assert_eq!(report["thread_id"], THREAD_ID);
    assert_eq!(report["torn_tail"], true);
    assert_eq!(report["legacy"], false);
    assert_eq!(report["base_instructions"], Value::Null);
    assert_eq!(report["repaired"], json!([]));

    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 3);
    assert_eq!(
        skipped[0],
        json!({"line": 9, "offset": skipped[0]["offset"], "reason": "blank"})
    );
    assert!(skipped[0]["offset"].as_u64().unwrap() > 0);
    assert_eq!(skipped[1]["line"], 10);
    assert_eq!(skipped[1]["reason"], "invalid_json");
    assert!(
        skipped[1]["message"]
            .as_str()
            .unwrap()
            .contains("key must be a string")
    );
    assert_eq!(skipped[2]["line"], 13);
    assert_eq!(skipped[2]["reason"], "invalid_json");

    assert_eq!(
        report["skip_counts"],
        json!({"blank": 1, "invalid_utf8": 0, "invalid_json": 2, "not_an_envelope": 0,
               "invalid_payload": 0, "invalid_item": 0, "too_long": 0})
    );
    assert_eq!(
        report["left_out"],
        json!({"total": 2, "ghost_snapshots": 0, "state_lines": 0, "system_messages": 1,
               "line_types": {"token_usage_record": 1}, "other_line_types": 0})
    );
    assert_eq!(
        report["world_state"],
        json!({"lines": 0, "replayed": 0, "ignored_patches": 0, "invalid": 0, "issues": []})
    );
    assert_eq!(report["pagination"], json!(null), "a legacy file");
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "lines",
            "skipped",
            "skip_counts",
            "torn_tail",
            "repaired",
            "thread_id",
            "base_instructions",
            "legacy",
            "pagination",
            "left_out",
            "world_state",
            "incomplete_turn"
        ]
    );
    // The rollout ends inside turn t1 (line 11): it recorded the assistant's message (position
    // 5, after the five items before it); the unanswered call c1 came before the turn.
    assert_eq!(
        report["incomplete_turn"],
        json!({"turn_id": "t1", "started_line": 11, "start": 5, "items": 1,
               "calls_without_output": []})
    );

    assert_eq!(to_json(resumed.source()), json!({"source": "rollout"}));
    assert_eq!(
        to_json(&resumed.compactions().copied()),
        json!({"base": null, "lines": 0, "legacy_rebuilt": false})
    );
}

/// An incomplete last turn with calls of two families still without output, and a turn that
/// completed (no report: `null`).
#[test]
fn incomplete_turn_fields() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let lines = [
        meta_line(),
        event_line(r#"{"type":"task_started","turn_id":"t0"}"#),
        item_line(&user("first")),
        event_line(r#"{"type":"task_complete","turn_id":"t0"}"#),
        event_line(r#"{"type":"task_started"}"#),
        item_line(&user("second")),
        item_line(r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#),
        item_line(r#"{"type":"custom_tool_call","name":"apply_patch","input":"x","call_id":"c2"}"#),
        item_line(r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c3"}"#),
        item_line(r#"{"type":"function_call_output","call_id":"c3","output":"ok"}"#),
    ];
    fs::write(&path, rollout_text(&lines)).unwrap();
    let resumed =
        resume_file(&path, &ResumeOptions::new(TruncationPolicy::Tokens(10_000))).unwrap();
    assert_eq!(
        to_json(resumed.report())["incomplete_turn"],
        json!({"turn_id": null, "started_line": 5, "start": 1, "items": 5,
        "calls_without_output": [
            {"position": 2, "call_id": "c1", "kind": "function_call", "family": "function"},
            {"position": 3, "call_id": "c2", "kind": "custom_tool_call", "family": "custom"}
        ]})
    );
    fs::write(&path, rollout_text(&lines[..4])).unwrap();
    let resumed =
        resume_file(&path, &ResumeOptions::new(TruncationPolicy::Tokens(10_000))).unwrap();
    assert_eq!(to_json(resumed.report())["incomplete_turn"], Value::Null);
}

#[test]
fn skip_reasons_and_line_repairs() {
    let too_long = agent_history::SkipReason::TooLong { bytes: 9, limit: 4 };
    assert_eq!(
        to_json(&too_long),
        json!({"reason": "too_long", "bytes": 9, "limit": 4})
    );
    // A byte-order mark is passed over and reported as a repair.
    let text = format!("\u{feff}{}\n{}\n", meta_line(), item_line(&user("hi")));
    let resumed = common::resume_bytes(text.as_bytes(), TruncationPolicy::Tokens(10_000));
    let report = to_json(resumed.report());
    assert_eq!(
        report["repaired"],
        json!([{"line": 1, "offset": 0, "repair": "byte_order_mark"}])
    );
}

#[test]
fn repair_report_fields() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    fs::write(&path, eventful_rollout()).unwrap();
    let resumed =
        resume_file(&path, &ResumeOptions::new(TruncationPolicy::Tokens(10_000))).unwrap();
    let projection = resumed
        .history()
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
        .unwrap();
    let report = to_json(projection.report());

    assert_eq!(report["count"], 4);
    assert_eq!(
        report["by_kind"],
        json!({"dropped_orphan_output": 1, "held_back_unknown_item": 1, "stripped_images": 1,
               "synthesized_output": 1})
    );
    let repairs = report["repairs"].as_array().unwrap();
    assert_eq!(
        repairs[0],
        json!({"kind": "stripped_images", "parts": 1,
               "at": {"position": 1, "item_kind": "message", "call_id": null}})
    );
    assert_eq!(repairs[1]["kind"], "synthesized_output");
    assert_eq!(repairs[1]["output_kind"], "function_call_output");
    assert_eq!(
        repairs[1]["at"],
        json!({"position": 2, "item_kind": "function_call", "call_id": "c1"})
    );
    assert_eq!(
        repairs[2],
        json!({"kind": "dropped_orphan_output",
               "at": {"position": 3, "item_kind": "function_call_output", "call_id": "ghost"}})
    );
    assert_eq!(
        repairs[3],
        json!({"kind": "held_back_unknown_item",
               "at": {"position": 4, "item_kind": "unknown", "call_id": null}})
    );

    // The strict projection's violation.
    let error = resumed
        .history()
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT).strict())
        .unwrap_err();
    let violations = match error {
        agent_history::ProjectionError::Violations(violations) => violations,
        other => panic!("expected violations, got {other}"),
    };
    assert_eq!(
        to_json(&violations[0]),
        json!({"kind": "orphan_output",
               "at": {"position": 3, "item_kind": "function_call_output", "call_id": "ghost"}})
    );
}

#[test]
fn history_stats_fields() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    fs::write(&path, eventful_rollout()).unwrap();
    let resumed =
        resume_file(&path, &ResumeOptions::new(TruncationPolicy::Tokens(10_000))).unwrap();
    let history = resumed.history();
    let stats = to_json(&history.stats());

    assert_eq!(stats["items"], history.len() as u64);
    assert_eq!(stats["items"], 6);
    assert_eq!(stats["bytes"], history.json_bytes());
    assert_eq!(stats["tokens"], history.estimated_tokens());
    assert_eq!(stats["user_turns"], 2);
    assert_eq!(stats["calls_without_output"], 1);
    assert_eq!(stats["outputs_without_call"], 1);
    assert_eq!(stats["items_with_images"], 1);
    assert_eq!(stats["items_with_audio"], 0);
    assert_eq!(stats["unknown_items"], 1);
    let by_kind = stats["by_kind"].as_object().unwrap();
    let kinds: Vec<&str> = by_kind.keys().map(String::as_str).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "function_call",
            "function_call_output",
            "unknown"
        ]
    );
    assert_eq!(by_kind["message"]["items"], 3);
    let message_bytes: u64 = history
        .iter()
        .filter(|entry| entry.kind() == agent_history::ItemKind::Message)
        .map(|entry| entry.byte_len() as u64)
        .sum();
    assert_eq!(by_kind["message"]["bytes"], message_bytes);
    let total_bytes: u64 = by_kind
        .values()
        .map(|row| row["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(stats["bytes"], total_bytes);
    let unknown = r#"{"type":"future_item","data":1}"#;
    assert_eq!(by_kind["unknown"]["items"], 1);
    assert_eq!(by_kind["unknown"]["bytes"], unknown.len());
}

/// Two fallbacks as a resume gives them. Every `FallbackReason`'s JSON is pinned by the unit test
/// `every_fallback_reason_serializes_as_the_json_page_lists_it` (`src/rollout/resume/mod.rs`):
/// the enum is `#[non_exhaustive]`, so only code inside the crate can match it without a
/// catch-all arm, which is what makes a new reason fail to compile there until it is added.
#[test]
fn resume_source_through_snapshot_and_fallback() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let text = format!("{}\n{}\n", meta_line(), item_line(&user("hello")));
    fs::write(&path, &text).unwrap();
    let options = ResumeOptions::new(TruncationPolicy::Tokens(10_000));
    let header = resume_file(&path, &options.clone().snapshot_ready())
        .unwrap()
        .write_snapshot(&snapshot)
        .unwrap();
    let header_json = to_json(&header);
    assert_eq!(header_json["format_version"], 6);
    assert_eq!(header_json["entry_count"], 1);
    assert_eq!(
        header_json["payload_digest"],
        header.payload_digest.to_hex().as_str()
    );
    assert_eq!(
        header_json["rollout"],
        json!({"lines": 2, "bytes": text.len(), "digest": header.rollout.digest.to_hex().as_str()})
    );

    let through = resume_file(&path, &options.clone().with_snapshot(&snapshot)).unwrap();
    assert_eq!(
        to_json(through.source()),
        json!({"source": "snapshot", "covered": header_json["rollout"]})
    );

    // Another truncation policy: the snapshot cannot stand for the prefix.
    let other = ResumeOptions::new(TruncationPolicy::Bytes(100)).with_snapshot(&snapshot);
    let fallback = to_json(resume_file(&path, &other).unwrap().source());
    assert_eq!(fallback["source"], "fallback");
    assert_eq!(fallback["fallback"]["reason"], "truncation_mismatch");
    assert_eq!(
        fallback["fallback"]["snapshot"],
        json!({"mode": "tokens", "limit": 10000})
    );
    assert_eq!(
        fallback["fallback"]["requested"],
        json!({"mode": "bytes", "limit": 100})
    );
    assert!(
        fallback["fallback"]["message"]
            .as_str()
            .unwrap()
            .contains("truncation")
    );

    // A rewritten prefix.
    fs::write(&path, text.replace("hello", "HELLO")).unwrap();
    let changed = to_json(
        resume_file(&path, &options.with_snapshot(&snapshot))
            .unwrap()
            .source(),
    );
    assert_eq!(changed["fallback"]["reason"], "prefix_changed");
}
