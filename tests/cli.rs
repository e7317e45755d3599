//! End-to-end tests of the `agent-history` command on the bundled example sessions.

mod common;

use std::process::{Command, Output};

use common::{example, item_line, meta_line, temp_dir, user};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agent-history"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

#[test]
fn project_interrupted_prints_call_and_stable_synthetic_output_and_leaves_file_alone() {
    let path = example("interrupted.jsonl");
    let before = std::fs::read(&path).expect("example exists");
    let first = run(&["project", path.to_str().expect("utf-8 path")]);
    let second = run(&["project", path.to_str().expect("utf-8 path")]);
    assert!(first.status.success(), "stderr: {}", text(&first.stderr));
    assert_eq!(
        text(&first.stdout),
        concat!(
            r#"[{"type":"function_call","id":"fc_existing","name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}","call_id":"missing-output-call"},"#,
            r#"{"type":"function_call_output","id":"fco_742749b0-3645-5d32-a172-676827826a07","call_id":"missing-output-call","output":"aborted"}]"#,
            "\n"
        )
    );
    assert_eq!(first.stdout, second.stdout, "identical on every run");
    let stderr = text(&first.stderr);
    assert!(stderr.contains("0 skipped"), "{stderr}");
    assert!(
        stderr.contains("synthesized `function_call_output` \"aborted\" with id fco_742749b0-3645-5d32-a172-676827826a07"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&path).expect("still there"),
        before,
        "file unchanged"
    );
}

#[test]
fn project_request_writes_the_whole_body() {
    let path = example("interrupted.jsonl");
    let output = run(&[
        "project",
        path.to_str().expect("utf-8 path"),
        "--request",
        "--model",
        "gpt-5.1-codex",
        "--instructions",
        "Be brief.",
    ]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let body: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON body");
    let keys: Vec<&str> = body
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "instructions",
            "input",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "reasoning",
            "store",
            "stream",
            "include",
            "prompt_cache_key"
        ]
    );
    assert_eq!(body["model"], "gpt-5.1-codex");
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["input"][1]["output"], "aborted");
    assert_eq!(
        body["prompt_cache_key"],
        "5973b6c0-94b8-487b-a530-2aeb6098ae0c"
    );
}

#[test]
fn project_session_reports_skipped_lines_and_repairs() {
    let path = example("session.jsonl");
    let output = run(&[
        "project",
        path.to_str().expect("utf-8 path"),
        "--modalities",
        "text",
    ]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("2 skipped (1 blank, 1 malformed, torn last line)"),
        "{stderr}"
    );
    assert!(stderr.contains("repairs: 4"), "{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).expect("array");
    let rendered = serde_json::to_string(&items).expect("serialize");
    assert!(rendered.contains(agent_history::IMAGE_PLACEHOLDER));
    assert!(!rendered.contains("data:image/png"));
    assert!(
        !rendered.contains("call_from_a_lost_turn"),
        "orphan dropped"
    );
    assert!(!rendered.contains("future_tool_event"), "unknown held back");
    assert!(!rendered.contains("try a different fix"), "rolled back");
    // The interrupted custom tool call is answered right after the call.
    let call = items
        .iter()
        .position(|item| item["type"] == "custom_tool_call")
        .expect("call is sent");
    assert_eq!(items[call + 1]["type"], "custom_tool_call_output");
    assert_eq!(items[call + 1]["output"], "aborted");
}

#[test]
fn project_strict_lists_violations_and_fails() {
    let path = example("session.jsonl");
    let output = run(&["project", path.to_str().expect("utf-8 path"), "--strict"]);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("2 protocol violation(s)"), "{stderr}");
    assert!(
        stderr.contains("custom_tool_call, call_id \"call_2\") has no output"),
        "{stderr}"
    );
    assert!(
        stderr.contains("call_from_a_lost_turn\") has no matching call"),
        "{stderr}"
    );
}

#[test]
fn missing_file_gets_one_clear_line() {
    let output = run(&["project", "/nonexistent/rollout.jsonl"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/rollout.jsonl"), "{stderr}");
}

#[test]
fn file_that_is_not_a_rollout_gets_one_clear_line() {
    let dir = temp_dir();
    let not_rollout = dir.path().join("notes.jsonl");
    std::fs::write(&not_rollout, "{\"hello\":\"world\"}\nplain text\n").expect("write");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n  \n").expect("write");
    for (path, expected) in [
        (&not_rollout, "is not a Codex rollout"),
        (&empty, "is an empty session file"),
    ] {
        let output = run(&["project", path.to_str().expect("utf-8 path")]);
        assert!(!output.status.success());
        let stderr = text(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}

#[test]
fn check_lists_findings_with_line_numbers_and_strict_fails() {
    let path = example("session.jsonl");
    let lenient = run(&["check", path.to_str().expect("utf-8 path")]);
    assert!(
        lenient.status.success(),
        "stderr: {}",
        text(&lenient.stderr)
    );
    let strict = run(&["check", path.to_str().expect("utf-8 path"), "--strict"]);
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(lenient.stdout, strict.stdout);
    let stdout = text(&lenient.stdout);
    for expected in [
        "28 line(s), 13 item(s), 2 user turn(s)",
        r#"line 11: custom_tool_call (call_id "call_2") has no output"#,
        "line 17: function_call_output carries 1 image part(s) a text-only model would lose",
        r#"line 18: function_call_output (call_id "call_from_a_lost_turn") has no matching call"#,
        "line 19: unknown item type `future_tool_event`",
        "line 28 (byte 6308): torn last line",
        "5 finding(s)",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

#[test]
fn check_of_a_clean_rollout_finds_nothing_even_in_strict_mode() {
    let dir = temp_dir();
    let path = dir.path().join("clean.jsonl");
    let lines = [
        meta_line(),
        item_line(&user("hi")),
        item_line(r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}"#),
        item_line(r#"{"type":"function_call_output","call_id":"c","output":"ok"}"#),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let output = run(&["check", path.to_str().expect("utf-8 path"), "--strict"]);
    assert!(output.status.success(), "stdout: {}", text(&output.stdout));
    assert!(text(&output.stdout).contains("no findings"));
}

#[test]
fn stats_summarizes_the_session() {
    let path = example("session.jsonl");
    let output = run(&["stats", path.to_str().expect("utf-8 path")]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let field = |name: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with(name))
            .map(|line| line[name.len()..].trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in:\n{stdout}"))
    };
    assert_eq!(field("items"), "13");
    assert_eq!(field("user turns"), "2");
    assert_eq!(field("compactions"), "0");
    assert_eq!(field("lines"), "28 (2 skipped, torn last line)");
    let kinds: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("kind"))
        .skip(1)
        .collect();
    assert!(
        kinds
            .iter()
            .any(|line| line.starts_with("function_call_output")
                && line.split_whitespace().nth(1) == Some("3"))
    );
    assert!(
        kinds
            .iter()
            .any(|line| line.starts_with("unknown") && line.split_whitespace().nth(1) == Some("1"))
    );
}

#[test]
fn snapshot_verify_and_project_from_a_snapshot() {
    let dir = temp_dir();
    let snapshot = dir.path().join("session.snap");
    let _ = std::fs::remove_file(&snapshot);
    let rollout = example("session.jsonl");
    let rollout = rollout.to_str().expect("utf-8 path");
    let snapshot_arg = snapshot.to_str().expect("utf-8 path");
    let written = run(&["snapshot", rollout, "-o", snapshot_arg]);
    assert!(
        written.status.success(),
        "stderr: {}",
        text(&written.stderr)
    );
    assert!(
        text(&written.stdout).contains("13 item(s)"),
        "{}",
        text(&written.stdout)
    );
    assert!(text(&written.stdout).contains("covering 27 line(s)"));

    let verified = run(&["verify", snapshot_arg]);
    assert!(
        verified.status.success(),
        "stderr: {}",
        text(&verified.stderr)
    );
    let report = text(&verified.stdout);
    assert!(report.contains(": ok"), "{report}");
    assert!(report.contains("digest verified"), "{report}");

    // The snapshot projects exactly as the rollout does.
    let from_rollout = run(&["project", rollout, "--modalities", "text"]);
    let from_snapshot = run(&["project", snapshot_arg, "--modalities", "text"]);
    assert!(
        from_snapshot.status.success(),
        "stderr: {}",
        text(&from_snapshot.stderr)
    );
    assert_eq!(from_snapshot.stdout, from_rollout.stdout);

    // A damaged snapshot: one clear line, non-zero exit.
    let mut bytes = std::fs::read(&snapshot).expect("snapshot");
    let last = bytes.len() - 10;
    bytes[last] ^= 0x40;
    std::fs::write(&snapshot, &bytes).expect("write");
    let damaged = run(&["verify", snapshot_arg]);
    assert!(!damaged.status.success());
    let stderr = text(&damaged.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("digest mismatch"), "{stderr}");
}

#[test]
fn project_reads_a_rollout_from_a_pipe() {
    use std::io::Write as _;
    use std::process::Stdio;
    let rollout = std::fs::read(example("interrupted.jsonl")).expect("example");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-history"))
        .args(["project", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&rollout)
        .expect("writes");
    let output = child.wait_with_output().expect("runs");
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stdout).contains("fco_742749b0-3645-5d32-a172-676827826a07"));
}
