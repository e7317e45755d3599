//! `agent-history project --target anthropic`: the `messages` array, and with `--request` the
//! whole Anthropic Messages body.

use crate::common;

use std::process::{Command, Output};

use serde_json::{Value, json};

use common::{example, temp_dir};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agent-history"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

#[test]
fn target_anthropic_prints_alternating_messages_starting_with_user() {
    for name in ["session.jsonl", "codex-session.jsonl", "interrupted.jsonl"] {
        let path = example(name);
        let messages = stdout_json(&run(&[
            "project",
            path.to_str().unwrap(),
            "--target",
            "anthropic",
        ]));
        let messages = messages.as_array().expect("an array");
        assert!(!messages.is_empty(), "{name}");
        assert_eq!(messages[0]["role"], "user", "{name}");
        for pair in messages.windows(2) {
            assert_ne!(pair[0]["role"], pair[1]["role"], "{name}");
        }
        // No developer or system message is left among them.
        for message in messages {
            assert!(["user", "assistant"].contains(&message["role"].as_str().unwrap()));
        }
    }
}

#[test]
fn request_prints_the_whole_body_with_system_and_max_tokens() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([
            {"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}},
            {"type": "web_search"},
        ])
        .to_string(),
    )
    .unwrap();
    let path = example("session.jsonl");
    let output = run(&[
        "project",
        path.to_str().unwrap(),
        "--target",
        "anthropic",
        "--request",
        "--model",
        "claude-sonnet",
        "--instructions",
        "Be brief.",
        "--tools",
        tools.to_str().unwrap(),
        "--max-tokens",
        "2048",
    ]);
    let body = stdout_json(&output);
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "max_tokens",
            "system",
            "messages",
            "tools",
            "tool_choice",
            "stream"
        ]
    );
    assert_eq!(body["model"], "claude-sonnet");
    assert_eq!(body["max_tokens"], 2048);
    assert_eq!(
        body["system"][0],
        json!({"type": "text", "text": "Be brief."})
    );
    // The session's developer message follows the instructions in `system`.
    assert!(body["system"].as_array().unwrap().len() >= 2);
    assert_eq!(
        body["tools"],
        json!([{"name": "shell", "input_schema": {"type": "object", "properties": {"command": {"type": "array"}}}}])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("web_search"), "{stderr}");
    // Without --max-tokens, the documented default.
    let body = stdout_json(&run(&[
        "project",
        path.to_str().unwrap(),
        "--target",
        "anthropic",
        "--request",
        "--model",
        "m",
    ]));
    assert_eq!(body["max_tokens"], 8192);
}

#[test]
fn options_without_an_anthropic_equivalent_are_usage_errors() {
    let path = example("session.jsonl");
    let path = path.to_str().unwrap();
    for args in [
        vec![
            "project",
            path,
            "--target",
            "anthropic",
            "--request",
            "--model",
            "m",
            "--store",
            "true",
        ],
        vec![
            "project",
            path,
            "--target",
            "anthropic",
            "--max-tokens",
            "10",
        ],
        vec![
            "project",
            path,
            "--target",
            "chat",
            "--request",
            "--model",
            "m",
            "--max-tokens",
            "10",
        ],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
}
