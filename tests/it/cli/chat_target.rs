//! `agent-history project --target`: the Chat Completions messages and request body, the
//! Responses output unchanged, the report's target repairs.

use crate::common;

use std::process::{Command, Output};

use common::{example, temp_dir};
use serde_json::{Value, json};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agent-history"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

fn path(name: &str) -> String {
    example(name).to_str().expect("utf-8 path").to_owned()
}

#[test]
fn target_responses_is_the_default_output_byte_for_byte() {
    for name in ["session.jsonl", "codex-session.jsonl", "interrupted.jsonl"] {
        let default = run(&["project", &path(name)]);
        let responses = run(&["project", &path(name), "--target", "responses"]);
        assert!(default.status.success(), "{}", text(&default.stderr));
        assert_eq!(default.stdout, responses.stdout, "{name}");
    }
}

#[test]
fn target_chat_prints_the_messages_array() {
    let output = run(&["project", &path("interrupted.jsonl"), "--target", "chat"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        concat!(
            r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"missing-output-call","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"missing-output-call","content":"aborted"}]"#,
            "\n"
        )
    );
}

#[test]
fn target_chat_json_report_lists_the_target_repairs() {
    let output = run(&[
        "project",
        &path("session.jsonl"),
        "--target",
        "chat",
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: Value = serde_json::from_str(text(&output.stderr).trim()).expect("one object");
    assert_eq!(report["target"], "chat");
    let target = &report["target_repairs"];
    assert_eq!(target["target"], "chat");
    assert_eq!(target["projection"], report["repairs"]);
    let kinds: Vec<&str> = target["repairs"]
        .as_array()
        .expect("repairs")
        .iter()
        .map(|repair| repair["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(
        kinds,
        [
            "mapped_role",
            "reasoning_not_sent",
            "mapped_call",
            "moved_tool_output_images"
        ]
    );
    assert_eq!(target["count"], 4);
    assert_eq!(target["repairs"][1]["at"]["item_kind"], "reasoning");
    // --keep-developer: the developer message keeps its role, nothing to report for it.
    let kept = run(&[
        "project",
        &path("session.jsonl"),
        "--target",
        "chat",
        "--keep-developer",
    ]);
    let messages: Value = serde_json::from_slice(&kept.stdout).expect("JSON");
    assert_eq!(messages[0]["role"], "developer");
}

#[test]
fn target_chat_request_writes_the_chat_body() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([
            {"type":"function","name":"shell","description":"Runs a command.","strict":false,
             "parameters":{"type":"object","properties":{"command":{"type":"array"}}}},
            {"type":"custom","name":"apply_patch","description":"Patches files."},
            {"type":"web_search"}
        ])
        .to_string(),
    )
    .expect("write tools");
    let output = run(&[
        "project",
        &path("interrupted.jsonl"),
        "--target",
        "chat",
        "--request",
        "--model",
        "gpt-4.1",
        "--instructions",
        "Be brief.",
        "--tools",
        tools.to_str().expect("utf-8"),
        "--tool-choice",
        r#"{"type":"function","name":"shell"}"#,
        "--stream",
        "false",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let body: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1",
            "messages": [
                {"role":"system","content":"Be brief."},
                {"role":"assistant","content":null,"tool_calls":[{"id":"missing-output-call","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}"}}]},
                {"role":"tool","tool_call_id":"missing-output-call","content":"aborted"}
            ],
            "tools": [
                {"type":"function","function":{"name":"shell","description":"Runs a command.","parameters":{"type":"object","properties":{"command":{"type":"array"}}},"strict":false}},
                {"type":"function","function":{"name":"apply_patch","description":"Patches files.","parameters":{"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false}}}
            ],
            "tool_choice": {"type":"function","function":{"name":"shell"}},
            "parallel_tool_calls": false,
            "stream": false
        })
    );
    // The library's validator takes the whole body.
    let validation = agent_history::validate(agent_history::Target::ChatCompletions, &body);
    assert!(validation.is_valid(), "{:?}", validation.findings);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("tool without a name (web_search) left out: Chat Completions has no equivalent or refuses it"),
        "{stderr}"
    );
}

#[test]
fn wrong_flags_are_usage_errors() {
    // `--target anthropic` works (tests/it/cli/anthropic_target.rs); its Chat-only flag does not.
    let anthropic = run(&[
        "project",
        &path("session.jsonl"),
        "--target",
        "anthropic",
        "--keep-developer",
    ]);
    assert_eq!(
        anthropic.status.code(),
        Some(2),
        "{}",
        text(&anthropic.stderr)
    );
    assert!(anthropic.stdout.is_empty());
    let unknown = run(&["project", &path("session.jsonl"), "--target", "gemini"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("unknown target `gemini`"));
    let keep = run(&["project", &path("session.jsonl"), "--keep-developer"]);
    assert_eq!(keep.status.code(), Some(2));
    let store = run(&[
        "project",
        &path("session.jsonl"),
        "--target",
        "chat",
        "--request",
        "--model",
        "m",
        "--store",
        "true",
    ]);
    assert_eq!(store.status.code(), Some(2), "{}", text(&store.stderr));
}
