//! Claude Code transcripts on the command line: `project` sends the conversation for the
//! source's own API, `check` reports what choosing it found, `stats` counts it, and the
//! commands that read Codex rollouts only refuse a transcript by name.

use crate::common;

use agent_history::{Target, validate};
use serde_json::Value;

use common::cli::{run, run_with_stdin, text};

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/claude-code/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn project_sends_a_transcript_for_anthropic_by_default_with_the_pairing_repaired() {
    let output = run(&["project", &fixture("interrupted")]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let messages: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(validate(Target::AnthropicMessages, &messages).is_valid());
    let last = messages
        .as_array()
        .and_then(|all| all.last())
        .expect("a message");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_i2");
    assert_eq!(last["content"][0]["is_error"], true);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("read transcript: 10 line(s)"), "{stderr}");
    // Told from its content, read from standard input when `--format` says what it is.
    let bytes = std::fs::read(fixture("interrupted")).expect("read");
    let piped = run_with_stdin(&["project", "-", "--format", "claude-code"], &bytes);
    assert_eq!(piped.stdout, output.stdout);
    // Without it, standard input is a rollout, and the error says how to read a transcript.
    let unnamed = run_with_stdin(&["check", "-"], &bytes);
    assert_eq!(unnamed.status.code(), Some(3));
    assert!(
        text(&unnamed.stderr).contains("pass --format claude-code"),
        "{}",
        text(&unnamed.stderr)
    );
}

#[test]
fn a_request_takes_the_transcripts_model_and_another_target_is_asked_for() {
    let output = run(&["project", &fixture("blocks"), "--request"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let body: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(body["model"], "claude-opus-4-5");
    assert!(validate(Target::AnthropicMessages, &body).is_valid());
    // A transcript keeps neither the system prompt nor the tools: both are asked for.
    let stderr = text(&output.stderr);
    assert!(stderr.contains("keeps no system prompt"), "{stderr}");
    assert!(stderr.contains("tools: none given"), "{stderr}");
    let dir = common::temp_dir();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type":"function","name":"Zoom","parameters":{"type":"object"}},{"type":"function","name":"Bash","parameters":{"type":"object"}}]"#,
    )
    .expect("written");
    let with_tools = run(&[
        "project",
        &fixture("blocks"),
        "--request",
        "--tools",
        tools.to_str().expect("utf-8"),
        "--instructions",
        "be brief",
    ]);
    assert!(with_tools.status.success(), "{}", text(&with_tools.stderr));
    let stderr = text(&with_tools.stderr);
    assert!(!stderr.contains("tools: none given"), "{stderr}");
    let body: Value = serde_json::from_slice(&with_tools.stdout).expect("JSON");
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(2), "{body}");
    let chat = run(&["project", &fixture("blocks"), "--target", "chat"]);
    assert!(chat.status.success(), "{}", text(&chat.stderr));
    let messages: Value = serde_json::from_slice(&chat.stdout).expect("JSON");
    assert!(validate(Target::ChatCompletions, &messages).is_valid());
    // For the Responses API: the plain items, no kept block, the thinking left out and counted.
    let responses = run(&[
        "project",
        &fixture("blocks"),
        "--target",
        "responses",
        "--json",
    ]);
    assert!(responses.status.success(), "{}", text(&responses.stderr));
    let input: Value = serde_json::from_slice(&responses.stdout).expect("JSON");
    assert!(validate(Target::Responses, &input).is_valid());
    let items = input.as_array().expect("items");
    assert!(
        items
            .iter()
            .all(|item| item.get("anthropic_block").is_none())
    );
    assert!(items.iter().all(|item| item["type"] != "reasoning"));
    let calls: Vec<&Value> = items
        .iter()
        .filter(|item| item["type"] == "function_call")
        .collect();
    assert_eq!(calls.len(), 2, "{input}");
    let report: Value =
        serde_json::from_str(text(&responses.stderr).lines().last().expect("the report"))
            .expect("JSON");
    assert_eq!(report["items_left_out"], 2, "{report}");
}

#[test]
fn check_reports_rescues_branches_cuts_and_what_a_resume_leaves_out() {
    let output = run(&[
        "check",
        &fixture("progress_fork"),
        &fixture("later_branch"),
        &fixture("compact_boundary"),
        &fixture("interrupted"),
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    let kinds = |session: &Value| -> Vec<(String, u64)> {
        session["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|finding| {
                (
                    finding["kind"].as_str().unwrap_or("").to_owned(),
                    finding["line"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    assert_eq!(lines[0]["input"], "claude-code");
    assert_eq!(kinds(&lines[0]), [("rescued_record".to_owned(), 6)]);
    assert_eq!(kinds(&lines[1]), [("branch_not_taken".to_owned(), 2)]);
    assert_eq!(kinds(&lines[2]), [("compaction_cut".to_owned(), 3)]);
    let interrupted = kinds(&lines[3]);
    assert_eq!(
        interrupted,
        [
            ("left_out_by_resume".to_owned(), 6),
            ("left_out_by_resume".to_owned(), 7),
            ("synthetic_output".to_owned(), 10),
        ],
        "{}",
        lines[3]
    );
    assert_eq!(
        lines[3]["conversation"]["dropped"][0]["what"]["kind"],
        "api_error"
    );
    assert_eq!(lines[4]["type"], "summary");
}

#[test]
fn stats_counts_a_transcript_and_append_refuses_one() {
    let output = run(&["stats", &fixture("microcompact"), "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stats: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(stats["input"], "claude-code");
    assert_eq!(stats["thread_id"], "6b0e1c2a-0000-4000-8000-000000000002");
    assert_eq!(stats["transcript"]["read_past"]["system/turn_duration"], 1);
    // Each response billed once: the distinct message ids of the assistant lines.
    let ids: std::collections::BTreeSet<String> = std::fs::read_to_string(fixture("microcompact"))
        .expect("read")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["type"] == "assistant" && record["message"]["usage"].is_object())
        .filter_map(|record| record["message"]["id"].as_str().map(str::to_owned))
        .collect();
    assert!(!ids.is_empty());
    assert_eq!(stats["usage"]["messages"], ids.len(), "{stats}");
    let report = run(&["stats", &fixture("microcompact")]);
    assert!(
        text(&report.stdout).contains("billed tokens"),
        "{}",
        text(&report.stdout)
    );
    let args = ["append", &fixture("leaf"), "--stream", "/dev/null"];
    let output = run(&args);
    assert!(!output.status.success(), "{args:?}");
    assert!(
        text(&output.stderr).contains("is a Claude Code transcript"),
        "{args:?}: {}",
        text(&output.stderr)
    );
}

#[test]
fn strict_fails_on_warnings_not_on_what_a_healthy_session_shows() {
    // A compaction, an empty text block left out: notices only.
    let healthy = run(&[
        "check",
        &fixture("compact_after_batch"),
        "--strict",
        "--json",
    ]);
    assert_eq!(healthy.status.code(), Some(0), "{}", text(&healthy.stdout));
    let checked: Value = serde_json::from_slice(&healthy.stdout).expect("JSON");
    assert_eq!(checked["findings"][0]["kind"], "compaction_cut");
    assert_eq!(checked["findings"][0]["severity"], "notice");
    // An unanswered call: a warning.
    let unanswered = run(&["check", &fixture("interrupted"), "--strict", "--json"]);
    assert_eq!(unanswered.status.code(), Some(1));
    let checked: Value = serde_json::from_slice(&unanswered.stdout).expect("JSON");
    let severities: Vec<(&str, &str)> = checked["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|finding| {
            (
                finding["kind"].as_str().unwrap_or(""),
                finding["severity"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        severities,
        [
            ("left_out_by_resume", "notice"),
            ("left_out_by_resume", "notice"),
            ("synthetic_output", "warning"),
        ]
    );
    // Both: the summary counts the warnings.
    let both = run(&[
        "check",
        &fixture("compact_after_batch"),
        &fixture("interrupted"),
        "--json",
    ]);
    let summary: Value =
        serde_json::from_str(text(&both.stdout).lines().last().expect("a summary")).expect("JSON");
    assert_eq!(
        (summary["findings"].as_u64(), summary["warnings"].as_u64()),
        (Some(4), Some(1))
    );
}

#[test]
fn a_snapshot_of_a_transcript_projects_as_the_transcript_and_verifies_against_it() {
    let dir = common::temp_dir();
    let transcript = dir.path().join("t.jsonl");
    std::fs::copy(fixture("blocks"), &transcript).expect("copied");
    let snapshot = dir.path().join("t.snap");
    let path = |path: &std::path::Path| path.to_str().expect("utf-8").to_owned();
    let (transcript_arg, snapshot_arg) = (path(&transcript), path(&snapshot));
    let written = run(&["snapshot", &transcript_arg, "-o", &snapshot_arg]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    assert!(text(&written.stderr).contains("covering 9 line(s)"));
    // Opened on its own: the source's own API, the transcript's model, the same bodies.
    for args in [
        vec![],
        vec!["--request"],
        vec!["--target", "responses"],
        vec!["--target", "chat"],
    ] {
        let from = |input: &str| {
            let mut all = vec!["project", input];
            all.extend_from_slice(&args);
            let output = run(&all);
            assert!(output.status.success(), "{all:?}: {}", text(&output.stderr));
            output.stdout
        };
        assert_eq!(from(&snapshot_arg), from(&transcript_arg), "{args:?}");
    }
    // Through it: the fast path while the transcript is the file it stands for.
    let through = run(&[
        "project",
        &transcript_arg,
        "--snapshot",
        &snapshot_arg,
        "--json",
    ]);
    let report: Value =
        serde_json::from_str(text(&through.stderr).lines().last().expect("a report"))
            .expect("JSON");
    assert_eq!(report["source"]["source"], "snapshot", "{report}");
    let verified = run(&[
        "verify",
        &snapshot_arg,
        "--rollout",
        &transcript_arg,
        "--json",
    ]);
    let verified: Value = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert_eq!(verified["session_format"], "claude-code");
    assert_eq!(verified["rollout"]["matches"], true, "{verified}");
    // `check` of the snapshot reports what reading the transcript found.
    let checked = run(&["check", &snapshot_arg, "--json"]);
    let checked: Value = serde_json::from_slice(&checked.stdout).expect("JSON");
    assert_eq!(checked["input"], "snapshot");
    assert_eq!(checked["conversation"]["leaf_line"], 9, "{checked}");
    // Grown: read again, and said why.
    let mut grown = std::fs::read(&transcript).expect("read");
    grown.extend_from_slice(b"{\"type\":\"last-prompt\",\"lastPrompt\":\"x\"}\n");
    std::fs::write(&transcript, &grown).expect("written");
    let through = run(&["project", &transcript_arg, "--snapshot", &snapshot_arg]);
    assert!(through.status.success(), "{}", text(&through.stderr));
    assert!(
        text(&through.stderr).contains("not used (the transcript changed since the snapshot"),
        "{}",
        text(&through.stderr)
    );
    let verified = run(&[
        "verify",
        &snapshot_arg,
        "--rollout",
        &transcript_arg,
        "--json",
    ]);
    let verified: Value = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert_eq!(verified["rollout"]["matches"], false);
    assert_eq!(
        verified["rollout"]["source"]["fallback"]["reason"],
        "transcript_changed"
    );
    // A transcript is read whole: no truncation.
    let truncated = run(&[
        "snapshot",
        &transcript_arg,
        "-o",
        &snapshot_arg,
        "--truncation",
        "bytes:10",
    ]);
    assert_eq!(truncated.status.code(), Some(2));
}

#[test]
fn lint_tells_the_400_a_resume_of_the_file_as_written_gets_and_the_repaired_copy_passes() {
    let dir = common::temp_dir();
    for (name, rule) in [
        ("interrupted", "anthropic_tool_use_without_result"),
        ("orphan_result", "anthropic_result_without_tool_use"),
    ] {
        let linted = run(&["lint", "--target", "anthropic", &fixture(name), "--json"]);
        assert_eq!(linted.status.code(), Some(1), "{}", text(&linted.stderr));
        let body: Value = serde_json::from_slice(&linted.stdout).expect("JSON");
        assert_eq!(body["valid"], false);
        let rules: Vec<&str> = body["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter_map(|finding| finding["rule"].as_str())
            .collect();
        assert!(rules.contains(&rule), "{name}: {rules:?}");
        // The repaired copy: as written, nothing left to refuse.
        let copy = dir.path().join(format!("{name}.jsonl"));
        let copy_arg = copy.to_str().expect("utf-8");
        let repaired = run(&["repair", &fixture(name), "-o", copy_arg, "--json"]);
        assert!(repaired.status.success(), "{}", text(&repaired.stderr));
        let report: Value = serde_json::from_slice(&repaired.stdout).expect("JSON");
        assert_eq!(report["valid_as_written"], true, "{report}");
        assert_eq!(report["unrepaired"], serde_json::json!([]));
        let linted = run(&["lint", "--target", "anthropic", copy_arg]);
        assert!(linted.status.success(), "{}", text(&linted.stdout));
    }
    let report: Value = serde_json::from_slice(
        &run(&[
            "repair",
            &fixture("orphan_result"),
            "-o",
            dir.path().join("again.jsonl").to_str().expect("utf-8"),
            "--json",
        ])
        .stdout,
    )
    .expect("JSON");
    assert_eq!(report["left_out"], serde_json::json!(["toolu_late"]));
    // A transcript's messages are Anthropic's: another target is a usage error.
    let chat = run(&["lint", "--target", "chat", &fixture("leaf")]);
    assert_eq!(chat.status.code(), Some(2));
}

#[test]
fn a_directory_holds_rollouts_and_transcripts_and_format_keeps_one_kind() {
    let dir = common::temp_dir();
    let root = dir.path();
    let copy = |from: &str, to: &str| {
        let to = root.join(to);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("a folder");
        std::fs::copy(from, to).expect("copied");
    };
    let example = format!(
        "{}/examples/rollouts/session.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    copy(&example, "codex/2026/11/rollout-a.jsonl");
    copy(&fixture("leaf"), "claude/-work-demo/aaaa.jsonl");
    // A subagent's transcript is listed with its session, not as one.
    copy(
        &fixture("sidechain"),
        "claude/-work-demo/aaaa/subagents/agent-x.jsonl",
    );
    // A JSON Lines file that is neither.
    std::fs::write(root.join("claude/notes.jsonl"), "{\"note\":1}\n").expect("written");
    let inputs = |extra: &[&str]| -> Vec<(String, String)> {
        let mut args = vec!["check", root.to_str().expect("utf-8"), "--json"];
        args.extend_from_slice(extra);
        let output = run(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
            .filter(|line| line["type"] == "session")
            .map(|line| {
                let path = line["path"].as_str().unwrap_or("").to_owned();
                let name = path.rsplit('/').next().unwrap_or("").to_owned();
                (name, line["input"].as_str().unwrap_or("").to_owned())
            })
            .collect()
    };
    let pair = |name: &str, input: &str| (name.to_owned(), input.to_owned());
    assert_eq!(
        inputs(&[]),
        [
            pair("aaaa.jsonl", "claude-code"),
            pair("rollout-a.jsonl", "rollout")
        ]
    );
    assert_eq!(
        inputs(&["--format", "codex"]),
        [pair("rollout-a.jsonl", "rollout")]
    );
    let only = run(&[
        "check",
        root.join("claude").to_str().expect("utf-8"),
        "--format",
        "claude-code",
    ]);
    // notes.jsonl is read as a transcript when `--format` says so, and fails as one.
    assert!(
        text(&only.stdout).contains("aaaa.jsonl"),
        "{}",
        text(&only.stdout)
    );
    assert!(
        text(&only.stderr).contains("notes.jsonl"),
        "{}",
        text(&only.stderr)
    );
}

#[test]
fn prefix_compares_two_points_of_a_transcript_and_names_why_they_differ() {
    let why = |args: &[&str]| {
        let output = run(args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        let report = text(&output.stdout);
        let why = report.lines().last().unwrap_or("").to_owned();
        (report, why)
    };
    // A later compaction: the conversation starts again from its summary.
    let (_, compaction) = why(&[
        "prefix",
        &fixture("compact_boundary"),
        "--at-line",
        "3",
        "--at-line",
        "6",
    ]);
    assert!(compaction.starts_with("why: compaction"), "{compaction}");
    // Records merged into the last message: it grows.
    let (report, grown) = why(&["prefix", &fixture("interrupted"), "--at-line", "4"]);
    assert!(grown.starts_with("why: grown"), "{report}");
    assert!(report.contains("shared: 3 item(s)"), "{report}");
    // The same from standard input, which `--format` names a transcript.
    let bytes = std::fs::read(fixture("interrupted")).expect("read");
    let piped = run_with_stdin(
        &["prefix", "-", "--at-line", "4", "--format", "claude-code"],
        &bytes,
    );
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert_eq!(
        text(&piped.stdout).replace("<stdin>", &fixture("interrupted")),
        report
    );
    let (_, appended) = why(&["prefix", &fixture("later_branch"), "--at-line", "3"]);
    assert!(appended.starts_with("why: appended"), "{appended}");
    let (_, same) = why(&["prefix", &fixture("leaf"), &fixture("leaf")]);
    assert!(same.starts_with("why: identical"), "{same}");
}

#[test]
fn repair_writes_a_copy_that_resumes_without_the_400_and_leaves_the_transcript_alone() {
    let dir = common::temp_dir();
    let original = std::fs::read(fixture("interrupted")).expect("read");
    let copy = dir.path().join("repaired.jsonl");
    let output = run(&[
        "repair",
        &fixture("interrupted"),
        "-o",
        copy.to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["answered"], serde_json::json!(["toolu_i2"]));
    assert_eq!(report["lines_appended"], 1);
    let written = std::fs::read(&copy).expect("the copy");
    assert!(
        written.starts_with(&original),
        "the transcript's bytes come first"
    );
    assert_eq!(
        std::fs::read(fixture("interrupted")).expect("read"),
        original
    );
    // Resumed through the library, the copy needs no repair and its body is valid.
    let check = run(&["check", copy.to_str().expect("utf-8"), "--json"]);
    let checked: Value = serde_json::from_slice(&check.stdout).expect("JSON");
    assert_eq!(checked["needs_repair"], false, "{checked}");
    let body = run(&["project", copy.to_str().expect("utf-8"), "--request"]);
    let body: Value = serde_json::from_slice(&body.stdout).expect("JSON");
    assert!(validate(Target::AnthropicMessages, &body).is_valid());
    // Never over an existing file, the transcript's own path included.
    let again = run(&[
        "repair",
        &fixture("interrupted"),
        "-o",
        copy.to_str().expect("utf-8"),
    ]);
    assert_eq!(again.status.code(), Some(3));
    assert!(
        text(&again.stderr).contains("exists"),
        "{}",
        text(&again.stderr)
    );
    let over = run(&[
        "repair",
        &fixture("interrupted"),
        "-o",
        &fixture("interrupted"),
    ]);
    assert!(!over.status.success());
    assert_eq!(
        std::fs::read(fixture("interrupted")).expect("read"),
        original
    );
    // A compressed transcript is repaired into a plain copy with the same lines.
    let compressed = dir.path().join("interrupted.jsonl.zst");
    std::fs::write(
        &compressed,
        zstd::encode_all(&original[..], 3).expect("compressed"),
    )
    .expect("written");
    let plain = dir.path().join("from-compressed.jsonl");
    let output = run(&[
        "repair",
        compressed.to_str().expect("utf-8"),
        "-o",
        plain.to_str().expect("utf-8"),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(std::fs::read(&plain).expect("the copy"), written);
    // A transcript that needs nothing gets no file.
    let none = dir.path().join("none.jsonl");
    let output = run(&[
        "repair",
        &fixture("leaf"),
        "-o",
        none.to_str().expect("utf-8"),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!none.exists());
}

#[test]
fn check_lists_a_sessions_subagents_inline_and_in_its_folder() {
    let dir = common::temp_dir();
    let session = dir.path().join("s1.jsonl");
    std::fs::copy(fixture("sidechain"), &session).expect("copied");
    let folder = dir.path().join("s1").join("subagents");
    std::fs::create_dir_all(&folder).expect("folder");
    // The subagent's own file: its sidechain records only, as newer versions write it.
    let sidechain: Vec<String> = std::fs::read_to_string(fixture("sidechain"))
        .expect("read")
        .lines()
        .filter(|line| line.contains(r#""isSidechain":true"#))
        .map(str::to_owned)
        .collect();
    let agent = folder.join("agent-a7f3.jsonl");
    std::fs::write(&agent, sidechain.join("\n")).expect("written");
    let output = run(&["check", session.to_str().expect("utf-8"), "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let checked: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        checked["subagents"],
        serde_json::json!([
            {"agent_id": "a7f3", "path": null},
            {"agent_id": "a7f3", "path": agent.display().to_string()},
        ])
    );
    // The subagent's file is its thread.
    let projected = run(&["project", agent.to_str().expect("utf-8")]);
    let messages: Value = serde_json::from_slice(&projected.stdout).expect("JSON");
    assert_eq!(messages[1]["content"][0]["text"], "The parser looks fine.");
    // A request takes the model its subagent ran on.
    let request = run(&["project", agent.to_str().expect("utf-8"), "--request"]);
    assert!(request.status.success(), "{}", text(&request.stderr));
    let body: Value = serde_json::from_slice(&request.stdout).expect("JSON");
    assert_eq!(body["model"], "claude-haiku-4-5");
}
