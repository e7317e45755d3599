//! `agent-history lint`: exit statuses, the text report and the JSON Lines report, on the
//! hand-written bodies in `tests/fixtures/lint/` and on the command's own projections.

use crate::common;
use crate::common::cli::{command, run, run_with_stdin, text};

use serde_json::Value;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/lint/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    text(bytes)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[test]
fn bad_bodies_exit_1_with_each_finding_and_the_providers_words() {
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "responses",
            "responses-bad.json",
            &[
                "input[1]: error responses_call_without_output: No tool output found for function call call_1.",
                "input[2]: error responses_output_without_call: No tool call found for function call output with call_id call_2.",
                "input[3]: error responses_custom_call_without_output: No tool output found for custom tool call call_3",
                "input[4]: error responses_duplicate_item_id: Duplicate item found with id msg_1. Remove duplicate items from your input and try again.",
            ],
        ),
        (
            "chat",
            "chat-bad.json",
            &[
                "messages.[4].role: error chat_calls_without_tool_messages: An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
                "messages.[5].role: error chat_tool_message_without_call: Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            ],
        ),
        (
            "anthropic",
            "anthropic-bad.json",
            &[
                "messages.1.content.2.tool_use.id: error anthropic_id_pattern: messages.1.content.2.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
                "messages.1: error anthropic_tool_use_without_result: messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: functions.shell:2. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                "messages.2.content.2: error anthropic_result_without_tool_use: messages.2.content.2: unexpected `tool_use_id` found in `tool_result` blocks: toolu_99. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
                "messages.2: error anthropic_results_not_first: messages.2: Did not find 2 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks. (wording not confirmed)",
            ],
        ),
    ];
    for (target, name, expected) in cases {
        let path = fixture(name);
        let output = run(&["lint", "--target", target, &path]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        let stdout = text(&output.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        let findings: Vec<String> = expected
            .iter()
            .map(|finding| format!("{path}: {finding}"))
            .collect();
        assert_eq!(lines[..lines.len() - 1], findings, "{name}");
        assert_eq!(
            lines[lines.len() - 1],
            format!(
                "{path}: rejected by {target}: {} error(s), 0 warning(s)",
                expected.len()
            )
        );
    }
}

#[test]
fn valid_bodies_exit_0() {
    for target in ["responses", "chat", "anthropic"] {
        let path = fixture(&format!("{target}-ok.json"));
        let output = run(&["lint", "--target", target, &path]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
        assert_eq!(
            text(&output.stdout),
            format!("{path}: no findings for {target}\n")
        );
    }
}

#[test]
fn a_body_valid_for_one_target_is_rejected_by_another() {
    let path = fixture("chat-ok.json");
    assert_eq!(
        run(&["lint", "--target", "anthropic", &path]).status.code(),
        Some(1)
    );
}

#[test]
fn warnings_alone_exit_0() {
    let path = fixture("chat-warning.json");
    let output = run(&["lint", "--target", "chat", &path]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("warning chat_call_id_too_long: Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 49 instead."),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("accepted by chat, 1 warning(s)\n"),
        "{stdout}"
    );
}

#[test]
fn json_lines_one_object_per_body_then_a_summary() {
    let bad = fixture("chat-bad.json");
    let ok = fixture("chat-ok.json");
    let output = run(&["lint", "--target", "chat", "--json", &bad, &ok]);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["type"], "body");
    assert_eq!(lines[0]["path"], bad.as_str());
    assert_eq!(lines[0]["target"], "chat");
    assert_eq!(lines[0]["valid"], false);
    assert_eq!(lines[0]["errors"], 2);
    assert_eq!(lines[0]["warnings"], 0);
    let first = &lines[0]["findings"][0];
    assert_eq!(first["rule"], "chat_calls_without_tool_messages");
    assert_eq!(first["severity"], "error");
    assert_eq!(first["wording"], "exact");
    assert_eq!(first["position"], "messages.[4].role");
    assert_eq!(first["item"], 4);
    assert_eq!(first["ids"], serde_json::json!(["call_2"]));
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .ends_with("did not have response messages: call_2")
    );
    assert_eq!(lines[1]["valid"], true);
    assert_eq!(lines[1]["findings"], serde_json::json!([]));
    assert_eq!(
        lines[2],
        serde_json::json!({"type": "summary", "bodies": 2, "unreadable": 0, "invalid": 1,
                           "errors": 2, "warnings": 0})
    );
}

#[test]
fn standard_input_and_bare_arrays() {
    let body = br#"[{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]"#;
    let output = run_with_stdin(&["lint", "--target", "responses", "-"], body);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stdout).starts_with(
        "<stdin>: input[0]: error responses_call_without_output: No tool output found for function call c1.\n"
    ));
}

#[test]
fn unreadable_or_malformed_bodies_exit_3() {
    let output = run_with_stdin(&["lint", "--target", "chat", "-"], b"{\"messages\": [");
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("<stdin> is not JSON"));
    let missing = fixture("no-such-body.json");
    let ok = fixture("chat-ok.json");
    let output = run(&["lint", "--target", "chat", "--json", &missing, &ok]);
    assert_eq!(output.status.code(), Some(3), "an unreadable body wins");
    let lines = json_lines(&output.stdout);
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["path"], missing.as_str());
    assert_eq!(lines[1]["valid"], true);
    assert_eq!(lines[2]["unreadable"], 1);
}

#[test]
fn usage_errors_exit_2() {
    let ok = fixture("chat-ok.json");
    assert_eq!(run(&["lint", &ok]).status.code(), Some(2), "no --target");
    let output = run(&["lint", "--target", "gemini", &ok]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("unknown target `gemini`"));
    assert_eq!(
        run(&["lint", "--target", "chat"]).status.code(),
        Some(2),
        "no body"
    );
}

#[test]
fn quiet_prints_nothing_and_keeps_the_status() {
    let output = run(&[
        "--quiet",
        "lint",
        "--target",
        "chat",
        &fixture("chat-bad.json"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
}

/// What `project` prints for the bundled sessions, input array or whole request body, passes
/// `lint --target responses`.
#[test]
fn the_commands_own_projections_pass() {
    for name in ["session.jsonl", "interrupted.jsonl", "codex-session.jsonl"] {
        let rollout = format!("{}/examples/rollouts/{name}", env!("CARGO_MANIFEST_DIR"));
        for extra in [&[][..], &["--request", "--model", "gpt-5"][..]] {
            let mut args = vec!["project", rollout.as_str()];
            args.extend(extra);
            let projected = run(&args);
            assert_eq!(projected.status.code(), Some(0), "{name}");
            let output = run_with_stdin(&["lint", "--target", "responses", "-"], &projected.stdout);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{name} {extra:?}: {}",
                text(&output.stdout)
            );
        }
    }
}

/// A device is refused before it is read, and a body past 64 MiB once that much is read:
/// memory stays bounded whatever the input.
#[test]
fn devices_and_oversized_bodies_are_refused_in_bounded_memory() {
    let output = run(&["lint", "--target", "responses", "/dev/zero"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        text(&output.stderr).contains("/dev/zero is a device, not a request body"),
        "{}",
        text(&output.stderr)
    );
    let zero = command()
        .args(["lint", "--target", "responses", "-"])
        .stdin(std::fs::File::open("/dev/zero").expect("/dev/zero"))
        .output()
        .expect("runs");
    assert_eq!(zero.status.code(), Some(3));
    assert!(text(&zero.stderr).contains("<stdin> is a device, not a request body"));

    let dir = common::temp_dir();
    let big = dir.path().join("big.json");
    let mut body = vec![b' '; 64 * 1024 * 1024];
    body.extend_from_slice(b"{}");
    std::fs::write(&big, &body).expect("written");
    let output = run(&[
        "lint",
        "--target",
        "responses",
        big.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        text(&output.stderr).contains("is larger than 67108864 bytes"),
        "{}",
        text(&output.stderr)
    );
}
