//! End-to-end tests of the `agent-history` command on the bundled example sessions.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::cli::{command, run, run_with_stdin, text};
use common::{example, item_line, meta_line, rollout_text, temp_dir, user};

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
        "--prompt-cache-key",
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
fn project_request_takes_a_prompt_cache_key_of_its_own() {
    let path = example("interrupted.jsonl");
    let path = path.to_str().expect("utf-8 path");
    let body = body_of(&run(&[
        "project",
        path,
        "--request",
        "--model",
        "m",
        "--prompt-cache-key=tenant-7",
    ]));
    assert_eq!(body["prompt_cache_key"], "tenant-7");
    // Chat Completions has no such field: left out, and said so.
    let output = run(&[
        "project",
        path,
        "--target",
        "chat",
        "--request",
        "--model",
        "m",
        "--prompt-cache-key=tenant-7",
    ]);
    assert!(body_of(&output).get("prompt_cache_key").is_none());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("prompt_cache_key left out: Chat Completions has no such field"),
        "{stderr}"
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
    std::fs::write(&path, rollout_text(&lines)).expect("write");
    let output = run(&["check", path.to_str().expect("utf-8 path"), "--strict"]);
    assert!(output.status.success(), "stdout: {}", text(&output.stdout));
    assert!(text(&output.stdout).contains("no findings"));
}

/// A rollout whose compaction's replacement history holds images, beside lines resume leaves
/// out: a `token_usage_record` line and a legacy ghost snapshot.
fn compacted_with_images() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = temp_dir();
    let path = dir.path().join("compacted.jsonl");
    let image = |n: usize| {
        let parts: Vec<String> = (0..n)
            .map(|_| {
                r#"{"type":"input_image","image_url":"data:image/png;base64,AAAA"}"#.to_owned()
            })
            .collect();
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"look"}},{}]}}"#,
            parts.join(",")
        )
    };
    let replacement = [image(2), user("plain"), image(1)].join(",");
    let lines = [
        meta_line(),
        item_line(&user("before")),
        common::line(
            "compacted",
            &format!(r#"{{"message":"summary","replacement_history":[{replacement}]}}"#),
        ),
        common::line("token_usage_record", r#"{"total_tokens":12}"#),
        item_line(r#"{"type":"ghost_snapshot","ghost_commit":{"id":"abc"}}"#),
        item_line(&image(1)),
    ];
    std::fs::write(&path, rollout_text(&lines)).expect("write");
    (dir, path)
}

/// The images of a replacement history all come from the `compacted` line: `check` reports that
/// line once, with the number of parts and items, not once per item at the same line number; an
/// image in a `response_item` line is still reported on its own line. What resume leaves out is
/// shown, and is not a finding.
#[test]
fn check_reports_a_replacement_historys_images_once_and_what_resume_leaves_out() {
    let (_dir, path) = compacted_with_images();
    let output = run(&["check", path.to_str().expect("utf-8 path")]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let at_line_3: Vec<&str> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with("line 3:"))
        .collect();
    assert_eq!(
        at_line_3,
        [
            "  line 3: the compaction's replacement history carries 3 image part(s) in 2 item(s) \
             a text-only model would lose"
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("  line 6: message carries 1 image part(s) a text-only model would lose"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "left out by resume (not history content): 1 ghost_snapshot, 1 token_usage_record"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("2 finding(s)"), "{stdout}");
    let stats = run(&["stats", path.to_str().expect("utf-8 path")]);
    let stats = text(&stats.stdout);
    assert!(
        stats
            .lines()
            .any(|line| line == "left out       2 (1 ghost_snapshot, 1 token_usage_record)"),
        "{stats}"
    );
    let project = run(&["project", path.to_str().expect("utf-8 path")]);
    assert!(
        text(&project.stderr).contains(
            "left out by resume (not history content): 1 ghost_snapshot, 1 token_usage_record"
        ),
        "{}",
        text(&project.stderr)
    );
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
    assert_eq!(field("left out"), "0");
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
    // The status goes to stderr: stdout stays free for a pipeline.
    assert!(written.stdout.is_empty(), "{}", text(&written.stdout));
    assert!(
        text(&written.stderr).contains("13 item(s)"),
        "{}",
        text(&written.stderr)
    );
    assert!(text(&written.stderr).contains("covering 27 line(s)"));

    let verified = run(&["verify", snapshot_arg]);
    assert!(
        verified.status.success(),
        "stderr: {}",
        text(&verified.stderr)
    );
    let report = text(&verified.stdout);
    assert!(report.contains(": ok"), "{report}");
    assert!(report.contains("digest verified"), "{report}");
    assert!(report.contains("format          version 6"), "{report}");
    // The golden snapshots of older versions are refused, each naming its version and the one
    // this build reads (an input error), also when compared with their rollout; projecting a
    // rollout through one reads every line and says why.
    for version in 1..=5 {
        let golden = format!(
            "{}/tests/fixtures/snapshot-v{version}.snap",
            env!("CARGO_MANIFEST_DIR")
        );
        let golden_rollout = golden.replace(".snap", ".jsonl");
        let refused = format!("has format version {version}, older than version 6");
        for args in [
            vec!["verify", golden.as_str()],
            vec![
                "verify",
                golden.as_str(),
                "--rollout",
                golden_rollout.as_str(),
            ],
            vec!["project", golden.as_str()],
        ] {
            let old = run(&args);
            assert_eq!(old.status.code(), Some(3), "{args:?}");
            assert!(
                text(&old.stderr).contains(&refused),
                "{}",
                text(&old.stderr)
            );
        }
        let through = run(&[
            "project",
            golden_rollout.as_str(),
            "--snapshot",
            golden.as_str(),
        ]);
        assert!(through.status.success(), "{}", text(&through.stderr));
        assert!(
            text(&through.stderr).contains(&format!(
                "not used (the snapshot {refused}, the only one this build reads): read every line"
            )),
            "{}",
            text(&through.stderr)
        );
        assert_eq!(
            through.stdout,
            run(&["project", golden_rollout.as_str()]).stdout,
            "version {version}: the rollout read in full"
        );
    }

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
    let mut child = command()
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

/// `snapshot -o` never replaces the rollout it reads (also through a symbolic or a hard link),
/// another rollout or any other file, unless `--force`; the error says what the file is. A
/// snapshot there is replaced.
#[test]
fn snapshot_refuses_to_replace_what_is_not_a_snapshot() {
    let dir = temp_dir();
    let original = std::fs::read(example("session.jsonl")).expect("example");
    let rollout = dir.path().join("r.jsonl");
    std::fs::write(&rollout, &original).expect("written");
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, &original).expect("written");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes").expect("written");
    let symlink = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&rollout, &symlink).expect("symlink");
    let hard_link = dir.path().join("hard.jsonl");
    std::fs::hard_link(&rollout, &hard_link).expect("hard link");
    let path = |path: &std::path::Path| path.to_str().expect("utf-8 path").to_owned();
    let input = path(&rollout);
    for (target, what) in [
        (&other, "a file of JSON lines"),
        (&notes, "a file of 8 bytes, not a snapshot"),
    ] {
        let output = run(&["snapshot", &input, "-o", &path(target)]);
        assert!(!output.status.success(), "{}", target.display());
        let stderr = text(&output.stderr);
        assert!(stderr.contains(what), "{stderr}");
        assert!(stderr.contains("pass --force"), "{stderr}");
    }
    // What `--force` cannot replace either (the rollout read, by any name, and a directory)
    // gets no hint to pass it, with or without it.
    let directory = dir.path().to_owned();
    for (target, what) in [
        (&rollout, "the rollout the snapshot is made from"),
        (&symlink, "the rollout the snapshot is made from"),
        (&hard_link, "the rollout the snapshot is made from"),
        (&directory, "a directory"),
    ] {
        for force in [&[][..], &["--force"][..]] {
            let target = path(target);
            let mut args = vec!["snapshot", &input, "-o", &target];
            args.extend_from_slice(force);
            let output = run(&args);
            assert!(!output.status.success(), "{target} {force:?}");
            let stderr = text(&output.stderr);
            assert!(stderr.contains(what), "{stderr}");
            assert!(!stderr.contains("pass --force"), "{stderr}");
        }
    }
    assert_eq!(std::fs::read(&rollout).expect("rollout"), original);
    assert_eq!(std::fs::read(&other).expect("other"), original);
    assert_eq!(std::fs::read(&notes).expect("notes"), b"my notes");

    // A snapshot (and an empty file) is replaced; `--force` replaces anything.
    let snapshot = path(&dir.path().join("r.snap"));
    for _ in 0..2 {
        let output = run(&["snapshot", &input, "-o", &snapshot]);
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    std::fs::write(dir.path().join("empty.snap"), "").expect("written");
    let output = run(&[
        "snapshot",
        &input,
        "-o",
        &path(&dir.path().join("empty.snap")),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = run(&["snapshot", &input, "-o", &path(&other), "--force"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(agent_history::is_snapshot(&other));
    assert_eq!(std::fs::read(&rollout).expect("rollout"), original);
}

/// A command whose standard output fails reports the error (exit 1), never a panic (exit 101);
/// a reader that goes away (`| head`) ends the command quietly.
#[test]
fn stdout_errors_are_reported_and_a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    let dir = temp_dir();
    let rollout = example("session.jsonl");
    let rollout = rollout.to_str().expect("utf-8 path");
    let snapshot = dir.path().join("s.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    assert!(run(&["snapshot", rollout, "-o", snapshot]).status.success());
    let commands: [&[&str]; 4] = [
        &["stats", rollout],
        &["verify", snapshot],
        &["check", rollout],
        &["project", rollout],
    ];
    for args in commands {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let output = command()
            .args(args)
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .expect("runs");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write to stdout"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");

        // A pipe closed before anything is written.
        let mut child = command()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("runs");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

/// `verify` and `project` check every entry of a snapshot against its JSON: a crafted snapshot
/// whose digests were recomputed after editing an item's text is refused, naming the entry and
/// the field. `project --trusted` takes the snapshot as the user's own.
#[test]
fn a_crafted_snapshot_is_refused_unless_trusted() {
    let dir = temp_dir();
    let rollout = dir.path().join("r.jsonl");
    let item = r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#;
    std::fs::write(&rollout, format!("{}\n{}\n", meta_line(), item_line(item))).expect("written");
    let snapshot = dir.path().join("r.snap");
    let rollout = rollout.to_str().expect("utf-8 path");
    let snapshot_arg = snapshot.to_str().expect("utf-8 path");
    assert!(
        run(&["snapshot", rollout, "-o", snapshot_arg])
            .status
            .success()
    );
    // An item text that is not JSON: spliced into a request body, it would set its model.
    let mut bytes = std::fs::read(&snapshot).expect("snapshot");
    let from = br#"{"type":"input_text","text":"hi"}]}"#;
    let to = br#"{"type":"input_text"}]}],"model":"x"#;
    assert_eq!(from.len(), to.len());
    let at = bytes
        .windows(from.len())
        .position(|window| window == from)
        .expect("in the payload");
    bytes[at..at + to.len()].copy_from_slice(to);
    let digest = blake3::hash(&bytes[4096..]);
    bytes[40..72].copy_from_slice(digest.as_bytes());
    let digest = blake3::hash(&bytes[..224]);
    bytes[224..256].copy_from_slice(digest.as_bytes());
    std::fs::write(&snapshot, bytes).expect("crafted");

    for args in [
        vec!["verify", snapshot_arg],
        vec!["project", snapshot_arg, "--request", "--model", "m"],
    ] {
        let output = run(&args);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains("entry 0: invalid json"), "{stderr}");
        assert!(output.stdout.is_empty());
    }
    let trusted = run(&["project", snapshot_arg, "--trusted"]);
    assert!(trusted.status.success(), "{}", text(&trusted.stderr));
}

// "No command modifies a rollout", with every flag of every subcommand: `tests/it/cli/read_only.rs`.

/// A rollout whose `session_meta` records `base_instructions` as `field` (JSON), then one user
/// message; returns its directory and path.
fn rollout_with_instructions(field: &str) -> (tempfile::TempDir, String) {
    let dir = temp_dir();
    let path = dir.path().join("r.jsonl");
    let meta = common::line(
        "session_meta",
        &format!(
            r#"{{"id":"{}","timestamp":"t","base_instructions":{field}}}"#,
            common::THREAD_ID
        ),
    );
    std::fs::write(&path, format!("{meta}\n{}\n", item_line(&user("hi")))).expect("written");
    let path = path.to_str().expect("utf-8 path").to_owned();
    (dir, path)
}

fn body_of(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON body")
}

/// Without flags beyond the model, the body holds Codex's `tool_choice`, `store`, `stream`,
/// `include`, no tools, (the example records none) empty instructions, and no
/// `prompt_cache_key`: as in the library, only `--prompt-cache-key` sets one.
#[test]
fn project_request_default_body_is_unchanged() {
    let path = example("interrupted.jsonl");
    let output = run(&[
        "project",
        path.to_str().expect("utf-8 path"),
        "--request",
        "--model",
        "m",
    ]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        concat!(
            r#"{"model":"m","instructions":"","input":[{"type":"function_call","id":"fc_existing","name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}","call_id":"missing-output-call"},"#,
            r#"{"type":"function_call_output","id":"fco_742749b0-3645-5d32-a172-676827826a07","call_id":"missing-output-call","output":"aborted"}],"#,
            r#""tools":[],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":null,"store":false,"stream":true,"include":[]}"#,
            "\n"
        )
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("instructions: none (session_meta records none)"),
        "{stderr}"
    );
}

/// The request a resumed session would send carries the base instructions its `session_meta`
/// records; `--instructions` overrides them.
#[test]
fn project_request_takes_the_recorded_instructions_unless_overridden() {
    let (_dir, path) = rollout_with_instructions(
        r#"{"text":"You are Codex.\nBe \"precise\".","provenance":"model"}"#,
    );
    let recorded = run(&["project", &path, "--request", "--model", "m"]);
    assert_eq!(
        body_of(&recorded)["instructions"],
        "You are Codex.\nBe \"precise\"."
    );
    let stderr = text(&recorded.stderr);
    assert!(
        stderr.contains("instructions: from session_meta (28 bytes)"),
        "{stderr}"
    );

    let overridden = run(&[
        "project",
        &path,
        "--request",
        "--model",
        "m",
        "--instructions",
        "Mine.",
    ]);
    assert_eq!(body_of(&overridden)["instructions"], "Mine.");
    // An empty override is an override too.
    let emptied = run(&[
        "project",
        &path,
        "--request",
        "--model",
        "m",
        "--instructions",
        "",
    ]);
    assert_eq!(body_of(&emptied)["instructions"], "");

    let (_dir, plain) = rollout_with_instructions(r#""Plain string.""#);
    let output = run(&["project", &plain, "--request", "--model", "m"]);
    assert_eq!(body_of(&output)["instructions"], "Plain string.");
}

/// A `base_instructions` of a shape the reader does not know: the request goes out without
/// instructions, and stderr says why (as `check` does).
#[test]
fn project_request_falls_back_on_an_unknown_instructions_shape_and_says_so() {
    let (_dir, path) = rollout_with_instructions(r#"{"txt":"typo"}"#);
    let output = run(&["project", &path, "--request", "--model", "m"]);
    assert_eq!(body_of(&output)["instructions"], "");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "repaired line 1 (byte 0): session_meta's base_instructions read as absent (an object without `text`)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("instructions: none (session_meta records none)"),
        "{stderr}"
    );
    let check = run(&["check", &path]);
    assert!(
        text(&check.stdout).contains("line 1 (byte 0): repaired: session_meta's base_instructions"),
        "{}",
        text(&check.stdout)
    );
}

/// A snapshot keeps the session's base instructions: the body has them, and `--instructions`
/// overrides them.
#[test]
fn project_request_from_a_snapshot_takes_its_instructions() {
    let (dir, path) = rollout_with_instructions(r#"{"text":"recorded"}"#);
    let snapshot = dir.path().join("r.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    assert!(run(&["snapshot", &path, "-o", snapshot]).status.success());
    let output = run(&["project", snapshot, "--request", "--model", "m"]);
    assert_eq!(body_of(&output)["instructions"], "recorded");
    let given = run(&[
        "project",
        snapshot,
        "--request",
        "--model",
        "m",
        "--instructions",
        "given",
    ]);
    assert_eq!(body_of(&given)["instructions"], "given");
}

#[test]
fn project_request_sends_the_tools_of_a_file_and_the_settings_given() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"web_search"}]"#,
    )
    .expect("written");
    let path = example("interrupted.jsonl");
    let path = path.to_str().expect("utf-8 path");
    let output = run(&[
        "project",
        path,
        "--request",
        "--model",
        "m",
        "--tools",
        tools.to_str().expect("utf-8 path"),
        "--parallel-tool-calls",
        "--tool-choice",
        "required",
        "--store",
        "true",
        "--stream",
        "false",
        "--reasoning-effort",
        "high",
        "--reasoning-summary",
        "auto",
        "--prompt-cache-key",
    ]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(r#""tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"web_search"}],"tool_choice":"required","parallel_tool_calls":true,"reasoning":{"effort":"high","summary":"auto"},"store":true,"stream":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"5973b6c0-94b8-487b-a530-2aeb6098ae0c"}"#),
        "{stdout}"
    );
    body_of(&output);

    let object = run(&[
        "project",
        path,
        "--request",
        "--model",
        "m",
        "--tool-choice",
        r#"{"type":"function","name":"shell"}"#,
        "--reasoning-summary",
        "concise",
        "--include",
        "a, b",
    ]);
    let body = body_of(&object);
    assert_eq!(
        body["tool_choice"],
        serde_json::json!({"type":"function","name":"shell"})
    );
    assert_eq!(body["reasoning"], serde_json::json!({"summary":"concise"}));
    assert_eq!(body["include"], serde_json::json!(["a", "b"]));
    let none = run(&[
        "project",
        path,
        "--request",
        "--model",
        "m",
        "--reasoning-effort",
        "low",
        "--include",
        "",
        "--tool-choice",
        "none",
    ]);
    let body = body_of(&none);
    assert_eq!(body["include"], serde_json::json!([]));
    assert_eq!(body["tool_choice"], "none");

    let bad_choice = run(&[
        "project",
        path,
        "--request",
        "--model",
        "m",
        "--tool-choice",
        "sometimes",
    ]);
    assert_eq!(bad_choice.status.code(), Some(2));
    assert!(text(&bad_choice.stderr).contains("expected auto, none, required or a JSON object"));
}

/// A tools file that is not a JSON array of objects: one clear line naming the file and the
/// problem, exit status 1, nothing on stdout.
#[test]
fn a_bad_tools_file_gets_one_clear_line() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    let tools_arg = tools.to_str().expect("utf-8 path");
    let path = example("interrupted.jsonl");
    let path = path.to_str().expect("utf-8 path");
    let cases: [(Option<&str>, &str); 4] = [
        (
            Some(r#"{"type":"function"}"#),
            "holds an object, not a JSON array of tool specs",
        ),
        (
            Some(r#"[{"type":"function"},"shell"]"#),
            "element 1 of the array is a string, not a tool spec object",
        ),
        (Some("[{"), "is not JSON: EOF while parsing"),
        (None, "cannot read tools file"),
    ];
    for (content, problem) in cases {
        match content {
            Some(content) => std::fs::write(&tools, content).expect("written"),
            None => {
                let _ = std::fs::remove_file(&tools);
            }
        }
        let output = run(&[
            "project",
            path,
            "--request",
            "--model",
            "m",
            "--tools",
            tools_arg,
        ]);
        assert_eq!(output.status.code(), Some(3), "{problem}");
        assert!(output.stdout.is_empty(), "{problem}");
        let stderr = text(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(tools_arg), "{stderr}");
        assert!(stderr.contains(problem), "{stderr}");
    }
}

/// The flags that shape the request body are usage errors without `--request`, as `--model`
/// and `--instructions` are; `--request` needs `--model`.
#[test]
fn request_flags_without_request_are_usage_errors() {
    let path = example("interrupted.jsonl");
    let path = path.to_str().expect("utf-8 path");
    let flags: [&[&str]; 10] = [
        &["--model", "m"],
        &["--instructions", "x"],
        &["--tools", "tools.json"],
        &["--parallel-tool-calls"],
        &["--tool-choice", "auto"],
        &["--store", "false"],
        &["--stream", "true"],
        &["--reasoning-effort", "high"],
        &["--reasoning-summary", "auto"],
        &["--include", ""],
    ];
    // A rollout names no model: `--request` needs `--model` (a transcript's model is its own).
    let output = run(&["project", path, "--request"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(
        text(&output.stderr).contains("--request needs --model"),
        "{}",
        text(&output.stderr)
    );
    for flag in flags {
        let mut args = vec!["project", path];
        args.extend_from_slice(flag);
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{flag:?}");
        assert!(output.stdout.is_empty(), "{flag:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("the following required arguments were not provided"),
            "{flag:?}: {stderr}"
        );
        assert!(stderr.contains("--request"), "{flag:?}: {stderr}");
    }
}

/// Writes `lines` (a `session_meta` line first) as a rollout in `dir` named `name`.
fn write_rollout(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut all = vec![meta_line()];
    all.extend_from_slice(lines);
    std::fs::write(&path, rollout_text(&all)).expect("write");
    path
}

/// The lines of a short session: `turns` user turns, each answered.
fn turns(turns: usize) -> Vec<String> {
    (0..turns)
        .flat_map(|turn| {
            [
                item_line(&user(&format!("question {turn}"))),
                item_line(&common::assistant(&format!("answer {turn}"))),
            ]
        })
        .collect()
}

/// Runs `prefix` with `args` and returns its standard output, checking that it succeeded.
fn prefix(args: &[&str]) -> String {
    let mut all = vec!["prefix"];
    all.extend_from_slice(args);
    let output = run(&all);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    text(&output.stdout)
}

#[test]
fn prefix_of_a_rollout_and_its_earlier_point_is_appended() {
    let dir = temp_dir();
    let path = write_rollout(dir.path(), "s.jsonl", &turns(5));
    let path = path.to_str().expect("utf-8 path");
    // The first 7 lines: the meta line and three turns (6 items).
    let out = prefix(&[path, "--at-line", "7"]);
    assert!(out.contains("shared: 6 item(s)"), "{out}");
    assert!(out.contains("first difference: item 6"), "{out}");
    assert!(out.contains("  A: no more items"), "{out}");
    assert!(out.contains("  B: position 6, message"), "{out}");
    assert!(
        out.contains("why: appended: B extends A, all of A is reusable"),
        "{out}"
    );
    // Two points of the file: the same answer.
    let two = prefix(&[path, "--at-line", "7", "--at-line", "11"]);
    assert!(two.contains("why: appended"), "{two}");
    assert!(two.contains("(first 11 line(s))"), "{two}");
    // A point against itself, and two resumes of one file (no shared pointers): identical.
    let same = prefix(&[path, "--at-line", "11", "--at-line", "11"]);
    assert!(same.contains("why: identical"), "{same}");
    let files = prefix(&[path, path]);
    assert!(files.contains("shared: 10 item(s)"), "{files}");
    assert!(files.contains("(100.0% of A)"), "{files}");
}

#[test]
fn prefix_names_an_edit_a_rollback_a_compaction_and_a_world_state_update() {
    let dir = temp_dir();
    let base = turns(3);
    let a = write_rollout(dir.path(), "a.jsonl", &base);
    let a = a.to_str().expect("utf-8 path");

    let mut edited = base.clone();
    edited[3] = item_line(&common::assistant("a different answer"));
    let edit = write_rollout(dir.path(), "edit.jsonl", &edited);
    let out = prefix(&[a, edit.to_str().expect("utf-8 path")]);
    assert!(out.contains("shared: 3 item(s)"), "{out}");
    assert!(
        out.contains("why: edit: the same position holds different content"),
        "{out}"
    );

    let mut rolled = base.clone();
    rolled.push(common::event_line(
        r#"{"type":"thread_rolled_back","num_turns":1}"#,
    ));
    let rollback = write_rollout(dir.path(), "rollback.jsonl", &rolled);
    let out = prefix(&[a, rollback.to_str().expect("utf-8 path")]);
    assert!(out.contains("shared: 4 item(s)"), "{out}");
    assert!(out.contains("  B: no more items"), "{out}");
    assert!(
        out.contains("why: rollback: B has fewer user turns (2 < 3)"),
        "{out}"
    );

    let mut compacted = base.clone();
    compacted.push(common::line(
        "compacted",
        &format!(
            r#"{{"message":"summary","replacement_history":[{},{}]}}"#,
            user("question 0"),
            user("the summary")
        ),
    ));
    let compaction = write_rollout(dir.path(), "compaction.jsonl", &compacted);
    let out = prefix(&[a, compaction.to_str().expect("utf-8 path")]);
    assert!(out.contains("shared: 1 item(s)"), "{out}");
    assert!(out.contains("why: compaction"), "{out}");

    let context = |cwd: &str| {
        item_line(&user(&format!(
            "<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"
        )))
    };
    let mut before = base.clone();
    before.push(context("/a"));
    let mut after = base.clone();
    after.push(context("/b"));
    let before = write_rollout(dir.path(), "before.jsonl", &before);
    let after = write_rollout(dir.path(), "after.jsonl", &after);
    let out = prefix(&[
        before.to_str().expect("utf-8 path"),
        after.to_str().expect("utf-8 path"),
    ]);
    assert!(out.contains("shared: 6 item(s)"), "{out}");
    assert!(
        out.contains("why: world-state update rendered in full: a contextual user message"),
        "{out}"
    );
}

#[test]
fn prefix_errors_name_the_paths_and_what_is_wrong() {
    let dir = temp_dir();
    let path = write_rollout(dir.path(), "s.jsonl", &turns(2));
    let path = path.to_str().expect("utf-8 path");
    let missing = dir.path().join("missing.jsonl");
    let missing = missing.to_str().expect("utf-8 path");

    let output = run(&["prefix", path, missing]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        text(&output.stderr).contains(missing),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());

    let output = run(&["prefix", path, "--at-line", "99"]);
    assert_eq!(output.status.code(), Some(3));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(path) && stderr.contains("has only 5 line(s)"),
        "{stderr}"
    );

    let output = run(&[
        "prefix",
        path,
        "--at-line",
        "1",
        "--at-line",
        "2",
        "--at-line",
        "3",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("--at-line once or twice"));

    // A second rollout and --at-line exclude each other; one of them is needed.
    assert_eq!(
        run(&["prefix", path, path, "--at-line", "2"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["prefix", path]).status.code(), Some(2));

    let snapshot = dir.path().join("s.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    assert!(run(&["snapshot", path, "-o", snapshot]).status.success());
    let output = run(&["prefix", snapshot, "--at-line", "2"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(snapshot) && stderr.contains("is a snapshot"),
        "{stderr}"
    );
    // A snapshot against its rollout: identical.
    let out = prefix(&[snapshot, path]);
    assert!(out.contains("why: identical"), "{out}");
}

/// The JSON Lines of an output, parsed.
fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

/// A session whose `calls` function calls have no output.
fn unanswered_calls(dir: &Path, name: &str, calls: usize) -> std::path::PathBuf {
    let mut lines = vec![item_line(&user("go"))];
    lines.extend((0..calls).map(|n| {
        item_line(&format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"call_{n}"}}"#
        ))
    }));
    write_rollout(dir, name, &lines)
}

/// A tree laid out as Codex lays out sessions, with a file that is not a rollout: a directory
/// means every `rollout-*.jsonl` under it; several paths are one run with a summary.
#[test]
fn check_and_stats_take_many_paths_and_directories_with_a_summary() {
    let dir = temp_dir();
    let day = dir.path().join("2026").join("11").join("30");
    std::fs::create_dir_all(&day).expect("mkdir");
    write_rollout(&day, "rollout-a.jsonl", &turns(2));
    unanswered_calls(&day, "rollout-b.jsonl", 2);
    std::fs::write(day.join("notes.jsonl"), "not a rollout\n").expect("write");
    let root = dir.path().to_str().expect("utf-8 path");
    let clean = write_rollout(dir.path(), "clean.jsonl", &turns(1));
    let clean = clean.to_str().expect("utf-8 path");

    let output = run(&["check", root, clean]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("rollout-a.jsonl: 5 line(s), 4 item(s), 2 user turn(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rollout-b.jsonl: 4 line(s), 3 item(s), 1 user turn(s)"),
        "{stdout}"
    );
    assert!(!stdout.contains("notes.jsonl"), "{stdout}");
    assert!(
        stdout.contains("summary: 3 session(s), 9 item(s), 2 finding(s)"),
        "{stdout}"
    );
    assert!(stdout.contains("       2  synthetic_output"), "{stdout}");
    assert!(
        stdout.contains("need a repair before their next request: 1 session(s)"),
        "{stdout}"
    );
    // In the order given, the directory's rollouts in name order.
    let a = stdout.find("rollout-a").expect("a");
    let b = stdout.find("rollout-b").expect("b");
    let c = stdout.find("clean.jsonl").expect("clean");
    assert!(a < b && b < c, "{stdout}");

    let output = run(&["stats", root]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("total: 2 session(s), 7 item(s)") && stdout.contains("3 user turn(s)"),
        "{stdout}"
    );

    // One session: no summary.
    let output = run(&["check", clean]);
    assert!(!text(&output.stdout).contains("summary"));
}

#[test]
fn a_rollout_is_read_from_stdin_with_a_dash() {
    let rollout = std::fs::read(example("interrupted.jsonl")).expect("example");
    let output = run_with_stdin(&["check", "-"], &rollout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("<stdin>: 2 line(s), 1 item(s)"),
        "{stdout}"
    );
    assert!(stdout.contains("missing-output-call"), "{stdout}");

    let output = run_with_stdin(&["stats", "-"], &rollout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stdout).contains("items          1"));

    let output = run_with_stdin(&["project", "-"], &rollout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stdout).contains("fco_742749b0-3645-5d32-a172-676827826a07"));

    let output = run_with_stdin(&["prefix", "-", "--at-line", "1"], &rollout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stdout).contains("appended"));

    // Standard input can be read once.
    let output = run_with_stdin(&["check", "-", "-"], &rollout);
    assert_eq!(output.status.code(), Some(3));
}

/// `--json`: one object per session, then a summary; every field read back.
#[test]
fn json_output_is_one_object_per_session_and_a_summary() {
    let dir = temp_dir();
    let calls = unanswered_calls(dir.path(), "calls.jsonl", 2);
    let calls = calls.to_str().expect("utf-8 path");
    let clean = write_rollout(dir.path(), "clean.jsonl", &turns(1));
    let clean = clean.to_str().expect("utf-8 path");

    let output = run(&["check", "--json", calls, clean]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 3);
    let first = &lines[0];
    assert_eq!(first["type"], "session");
    assert_eq!(first["path"], calls);
    assert_eq!(first["input"], "rollout");
    assert_eq!(first["lines"], 4);
    assert_eq!(first["items"], 3);
    assert_eq!(first["user_turns"], 1);
    assert_eq!(first["needs_repair"], true);
    assert_eq!(first["load"]["lines"], 4);
    assert_eq!(first["load"]["torn_tail"], false);
    let findings = first["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 2);
    assert_eq!(findings[0]["kind"], "synthetic_output");
    assert_eq!(findings[0]["line"], 3);
    assert_eq!(findings[0]["position"], 1);
    assert_eq!(findings[0]["offset"], serde_json::Value::Null);
    assert!(
        findings[0]["message"]
            .as_str()
            .expect("message")
            .contains("call_0")
    );
    assert_eq!(findings[1]["line"], 4);
    assert_eq!(lines[1]["path"], clean);
    assert_eq!(lines[1]["needs_repair"], false);
    assert_eq!(lines[1]["findings"], serde_json::json!([]));
    let summary = &lines[2];
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["sessions"], 2);
    assert_eq!(summary["errors"], 0);
    assert_eq!(summary["items"], 5);
    assert_eq!(summary["findings"], 2);
    assert_eq!(
        summary["findings_by_kind"],
        serde_json::json!({"synthetic_output": 2})
    );
    assert_eq!(summary["need_repair"], 1);

    let output = run(&["stats", "--json", clean]);
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 1, "one session: no summary");
    let stats = &lines[0];
    assert_eq!(stats["type"], "session");
    assert_eq!(stats["input"], "rollout");
    assert_eq!(stats["compactions"], 0);
    assert!(stats["thread_id"].is_string());
    assert_eq!(stats["stats"]["items"], 2);
    assert_eq!(stats["stats"]["user_turns"], 1);
    assert_eq!(stats["stats"]["by_kind"]["message"]["items"], 2);
    assert_eq!(stats["snapshot"], serde_json::Value::Null);

    let snapshot = dir.path().join("c.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    assert!(run(&["snapshot", clean, "-o", snapshot]).status.success());
    let output = run(&["verify", "--json", snapshot, "--rollout", clean]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let verified = &json_lines(&output)[0];
    assert_eq!(verified["path"], snapshot);
    assert_eq!(verified["ok"], true);
    assert_eq!(verified["header"]["entry_count"], 2);
    assert_eq!(verified["header"]["rollout"]["lines"], 3);
    assert_eq!(verified["rollout"]["path"], clean);
    assert_eq!(verified["rollout"]["matches"], true);
    assert_eq!(verified["rollout"]["source"]["source"], "snapshot");

    // `project --json`: the report on stderr as one object; stdout keeps the input array.
    let output = run(&["project", "--json", calls]);
    assert!(output.status.success());
    let report: serde_json::Value =
        serde_json::from_str(text(&output.stderr).trim()).expect("one JSON object");
    assert_eq!(report["type"], "report");
    assert_eq!(report["input"], "rollout");
    assert_eq!(report["source"]["source"], "rollout");
    assert_eq!(report["load"]["lines"], 4);
    assert_eq!(report["repairs"]["count"], 2, "{report}");
    assert_eq!(
        report["repairs"]["repairs"][0]["at"]["call_id"], "call_0",
        "{report}"
    );
    let input: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(input.as_array().map(Vec::len), Some(5));
}

#[test]
fn exit_codes_tell_success_findings_usage_and_input_errors_apart() {
    let dir = temp_dir();
    let calls = unanswered_calls(dir.path(), "calls.jsonl", 1);
    let calls = calls.to_str().expect("utf-8 path");
    let missing = dir.path().join("missing.jsonl");
    let missing = missing.to_str().expect("utf-8 path");
    assert_eq!(run(&["check", calls]).status.code(), Some(0));
    assert_eq!(run(&["check", "--strict", calls]).status.code(), Some(1));
    let session = example("session.jsonl");
    assert_eq!(
        run(&["project", "--strict", session.to_str().expect("utf-8 path")])
            .status
            .code(),
        Some(1),
        "a strict projection's violations are findings"
    );
    assert_eq!(run(&["check", "--bogus", calls]).status.code(), Some(2));
    assert_eq!(run(&["check"]).status.code(), Some(2));
    // An unreadable session among others: the others are still reported, the status is 3.
    let output = run(&["check", calls, missing]);
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stdout).contains("calls.jsonl: 3 line(s)"));
    assert!(text(&output.stdout).contains("(1 unreadable)"));
    assert!(text(&output.stderr).contains(missing));
    let output = run(&["check", "--json", calls, missing]);
    assert_eq!(output.status.code(), Some(3));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[1]["type"], "error");
    assert!(
        lines[1]["message"]
            .as_str()
            .expect("message")
            .contains(missing)
    );
    assert_eq!(lines[2]["errors"], 1);
    assert_eq!(lines[2]["sessions"], 2);
    assert_eq!(run(&["stats", missing]).status.code(), Some(3));
    assert_eq!(run(&["verify", calls]).status.code(), Some(3));
    // A directory without sessions is an input error, not a silent success.
    let empty = temp_dir();
    let empty = empty.path().to_str().expect("utf-8 path");
    for command in ["check", "stats", "verify"] {
        let output = run(&[command, empty]);
        assert_eq!(output.status.code(), Some(3), "{command}");
        assert!(text(&output.stderr).contains("no "), "{command}");
    }
    assert_eq!(run(&["project", missing]).status.code(), Some(3));
    // Documented in --help.
    let help = text(&run(&["--help"]).stdout);
    assert!(help.contains("Exit status:") && help.contains("3  an input or output failed"));
    for command in ["project", "check", "stats", "snapshot", "verify", "prefix"] {
        let help = text(&run(&[command, "--help"]).stdout);
        assert!(help.contains("Exit status:"), "{command}: {help}");
    }
}

/// Thousands of repeats are one line with a count and the first positions; `--quiet` prints
/// only errors.
#[test]
fn repeats_are_collapsed_and_quiet_prints_only_errors() {
    let dir = temp_dir();
    let calls = unanswered_calls(dir.path(), "calls.jsonl", 40);
    let calls = calls.to_str().expect("utf-8 path");
    let output = run(&["check", calls]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(
            "40 × function_call has no output; requests get a synthetic \"aborted\" output \
             (at line 3, line 4, line 5, …)"
        ),
        "{stdout}"
    );
    assert!(stdout.lines().count() < 5, "{stdout}");
    assert!(stdout.contains("40 finding(s)"));

    let output = run(&["check", "--quiet", "--strict", calls]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
    let output = run(&["project", calls]);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("  40 × synthesized_output (function_call) (at item 1, item 2, item 3, …)"),
        "{stderr}"
    );
    assert!(stderr.lines().count() < 5, "{stderr}");
    let output = run(&["project", "-q", calls]);
    assert!(output.status.success());
    assert!(!output.stdout.is_empty());
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    let output = run(&["stats", "-q", "/nonexistent/rollout.jsonl"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("/nonexistent/rollout.jsonl"));
}

#[test]
fn a_closed_pipe_ends_quietly_for_every_report() {
    use std::process::Stdio;
    let dir = temp_dir();
    let calls = unanswered_calls(dir.path(), "calls.jsonl", 2000);
    let calls = calls.to_str().expect("utf-8 path");
    let commands: [&[&str]; 5] = [
        &["project", calls, "--pretty"],
        &["check", calls, calls, "--json"],
        &["stats", calls, calls],
        &["completions", "bash"],
        &["man"],
    ];
    for args in commands {
        let mut child = command()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("runs");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("error") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn options_without_effect_and_empty_values_are_usage_errors() {
    let dir = temp_dir();
    let rollout = write_rollout(dir.path(), "r.jsonl", &turns(1));
    let rollout = rollout.to_str().expect("utf-8 path");
    let snapshot = dir.path().join("r.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    assert!(run(&["snapshot", rollout, "-o", snapshot]).status.success());
    let refused: [&[&str]; 8] = [
        &["project", rollout, "--model", "m"],
        &["project", rollout, "--instructions", "x"],
        &["project", rollout, "--request", "--model", ""],
        &["project", rollout, "--modalities", ""],
        &["project", snapshot, "--truncation", "bytes:10"],
        &["project", snapshot, "--snapshot", snapshot],
        &["verify", snapshot, snapshot, "--rollout", rollout],
        &["completions", "no-such-shell"],
    ];
    for args in refused {
        let output = run(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!text(&output.stderr).is_empty(), "{args:?}");
    }
    let stderr = text(&run(&["project", snapshot, "--truncation", "bytes:10"]).stderr);
    assert!(
        stderr.contains("--truncation has no effect on a snapshot"),
        "{stderr}"
    );
    // The same options where they mean something.
    assert!(
        run(&["project", rollout, "--truncation", "bytes:10"])
            .status
            .success()
    );
    assert!(
        run(&["project", rollout, "--modalities", "text"])
            .status
            .success()
    );
}

/// `check` and `stats` read snapshots; `project --snapshot` takes the fast path when the
/// snapshot matches and says why not otherwise; `verify --rollout` says whether it matches.
#[test]
fn snapshots_are_read_by_check_stats_project_and_verify() {
    let dir = temp_dir();
    let calls = unanswered_calls(dir.path(), "calls.jsonl", 2);
    let calls_arg = calls.to_str().expect("utf-8 path");
    let snapshot = dir.path().join("calls.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    let written = run(&["snapshot", calls_arg, "-o", snapshot]);
    assert!(written.status.success(), "{}", text(&written.stderr));

    let output = run(&["check", "--strict", snapshot]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("snapshot of 4 line(s), 3 item(s), 1 user turn(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("item 1: function_call (call_id \"call_0\") has no output"),
        "{stdout}"
    );

    let output = run(&["stats", "--json", snapshot]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stats = &json_lines(&output)[0];
    assert_eq!(stats["input"], "snapshot");
    assert_eq!(stats["stats"]["items"], 3);
    assert_eq!(stats["snapshot"]["rollout"]["lines"], 4);

    // The rollout goes on after the snapshot: the fast path reads only the new line.
    let mut more = std::fs::read_to_string(&calls).expect("read");
    more.push_str(&item_line(&common::assistant("done")));
    more.push('\n');
    std::fs::write(&calls, &more).expect("append");
    let output = run(&["project", calls_arg, "--snapshot", snapshot]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("(fast path): it covers 4 line(s); read the 1 after it"),
        "{stderr}"
    );
    let through_snapshot = output.stdout;
    assert_eq!(
        through_snapshot,
        run(&["project", calls_arg]).stdout,
        "same input either way"
    );

    let output = run(&["verify", snapshot, "--rollout", calls_arg]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("  matches         "),
        "{}",
        text(&output.stdout)
    );

    // The rollout's covered lines change: no fast path, and verify says it does not match.
    std::fs::write(&calls, more.replacen("\"go\"", "\"GO\"", 1)).expect("edit");
    let output = run(&["project", calls_arg, "--snapshot", snapshot]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("not used (") && stderr.contains("read every line"),
        "{stderr}"
    );
    let output = run(&["verify", snapshot, "--rollout", calls_arg]);
    assert!(output.status.success());
    assert!(
        text(&output.stdout).contains("  does not match  "),
        "{}",
        text(&output.stdout)
    );
    let output = run(&["verify", "--json", snapshot, "--rollout", calls_arg]);
    assert_eq!(json_lines(&output)[0]["rollout"]["matches"], false);
}

#[test]
fn completions_and_man_page_come_from_the_command_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = run(&["completions", shell]);
        assert!(output.status.success(), "{shell}: {}", text(&output.stderr));
        let script = text(&output.stdout);
        assert!(script.contains("agent-history"), "{shell}");
        for command in ["check", "stats", "verify", "prefix", "json", "strict"] {
            assert!(script.contains(command), "{shell}: no {command}");
        }
    }
    let man = text(&run(&["man"]).stdout);
    assert!(man.contains(".TH agent-history 1"), "{man}");
    assert!(man.contains("completions"), "{man}");
}

/// `project --strict` on a history that ends with calls still waiting for their outputs: a
/// `function_call` or a `tool_search_call` without output is what an interruption or a crash
/// leaves (the model's request was recorded, its result never was), which Codex repairs without
/// complaint, so strict mode repairs it too and succeeds, with the same input and the same
/// report as lenient mode (docs/codex-compatibility.md, "Strict mode"). A trailing
/// `custom_tool_call` without output is a violation Codex treats as a bug: strict mode fails
/// with status 1 and prints no input.
#[test]
fn project_strict_repairs_trailing_calls_codex_repairs_and_refuses_a_trailing_custom_call() {
    let dir = temp_dir();
    let function_call = |id: &str| {
        item_line(&format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"{id}"}}"#
        ))
    };
    let tool_search = item_line(
        r#"{"type":"tool_search_call","call_id":"ts_1","execution":"client","arguments":{"query":"q"}}"#,
    );
    let mut lines = vec![
        item_line(&user("go")),
        function_call("call_0"),
        function_call("call_1"),
        tool_search,
    ];
    let pending = write_rollout(dir.path(), "pending.jsonl", &lines);
    let pending = pending.to_str().expect("utf-8 path");

    let lenient = run(&["project", "--json", pending]);
    let strict = run(&["project", "--strict", "--json", pending]);
    assert_eq!(strict.status.code(), Some(0), "{}", text(&strict.stderr));
    assert_eq!(strict.stdout, lenient.stdout, "the input of lenient mode");
    assert_eq!(strict.stderr, lenient.stderr, "the report of lenient mode");
    let input: serde_json::Value = serde_json::from_slice(&strict.stdout).expect("JSON");
    let types: Vec<&str> = input
        .as_array()
        .expect("an array")
        .iter()
        .map(|item| item["type"].as_str().expect("a type"))
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "function_call",
            "function_call_output",
            "function_call",
            "function_call_output",
            "tool_search_call",
            "tool_search_output"
        ]
    );
    let report: serde_json::Value =
        serde_json::from_str(text(&strict.stderr).trim()).expect("one JSON object");
    let repairs = &report["repairs"];
    assert_eq!(repairs["count"], 3, "{report}");
    assert_eq!(
        repairs["by_kind"],
        serde_json::json!({"synthesized_output": 3})
    );
    let repaired: Vec<(&str, &str)> = repairs["repairs"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|repair| {
            (
                repair["at"]["call_id"].as_str().expect("a call id"),
                repair["output_kind"].as_str().expect("an output kind"),
            )
        })
        .collect();
    assert_eq!(
        repaired,
        [
            ("call_0", "function_call_output"),
            ("call_1", "function_call_output"),
            ("ts_1", "tool_search_output")
        ]
    );
    let human = run(&["project", "--strict", pending]);
    assert_eq!(human.status.code(), Some(0));
    let stderr = text(&human.stderr);
    assert!(stderr.contains("repairs: 3"), "{stderr}");
    assert!(
        stderr.contains(
            r#"item 3 (tool_search_call, call_id "ts_1"): no output; synthesized `tool_search_output` "aborted""#
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("violation"), "{stderr}");

    lines.push(item_line(
        r#"{"type":"custom_tool_call","name":"apply_patch","input":"x","call_id":"call_2"}"#,
    ));
    let custom = write_rollout(dir.path(), "custom.jsonl", &lines);
    let custom = custom.to_str().expect("utf-8 path");
    assert_eq!(run(&["project", custom]).status.code(), Some(0));
    let strict = run(&["project", "--strict", custom]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(strict.stdout.is_empty());
    // Only the custom call: the calls before it are no violation.
    let stderr = text(&strict.stderr);
    assert!(
        stderr.contains(
            r#"1 protocol violation(s) in history: item 4 (custom_tool_call, call_id "call_2") has no output"#
        ),
        "{stderr}"
    );
}

/// `-` (standard input) works with `--snapshot` and `verify --rollout` as a file does: the
/// snapshot is used when it stands for the stream's start.
#[test]
fn standard_input_resumes_through_a_snapshot_and_is_verified_against_one() {
    let dir = temp_dir();
    let path = example("session.jsonl");
    let rollout = path.to_str().expect("utf-8 path");
    let bytes = std::fs::read(&path).expect("example");
    let snapshot = dir.path().join("s.snap");
    let snapshot = snapshot.to_str().expect("utf-8 path");
    assert!(run(&["snapshot", rollout, "-o", snapshot]).status.success());

    let from_file = run(&["project", rollout, "--snapshot", snapshot]);
    let from_stdin = run_with_stdin(&["project", "-", "--snapshot", snapshot], &bytes);
    assert!(from_stdin.status.success(), "{}", text(&from_stdin.stderr));
    assert_eq!(from_stdin.stdout, from_file.stdout);
    assert!(
        text(&from_stdin.stderr).contains("(fast path)"),
        "{}",
        text(&from_stdin.stderr)
    );

    let verified = run_with_stdin(&["verify", snapshot, "--rollout", "-", "--json"], &bytes);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
    let report: serde_json::Value = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert_eq!(report["rollout"]["matches"], true, "{report}");
    assert_eq!(report["rollout"]["path"], "<stdin>");
    let mut other = bytes.clone();
    other.splice(0..0, b"\n".iter().copied());
    let verified = run_with_stdin(&["verify", snapshot, "--rollout", "-", "--json"], &other);
    let report: serde_json::Value = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert_eq!(report["rollout"]["matches"], false, "{report}");
}

/// Text from the input that reaches a report (an unknown item type, an unknown line type, a
/// call id, a parser's message) has its control characters escaped: a crafted rollout cannot
/// recolour, overwrite or hide report lines.
#[test]
fn control_characters_from_the_input_never_reach_the_terminal_raw() {
    let dir = temp_dir();
    let path = dir.path().join("hostile.jsonl");
    let lines = [
        meta_line(),
        item_line(r#"{"type":"evil\u001b[2J\r","id":"x1"}"#),
        common::line(r"weird\u001b]0;title\u0007", "{}"),
        item_line(
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c\u001b[31m\r"}"#,
        ),
        "{\"bad\u{1b}[8m".to_owned(),
        item_line(&user("hi")),
    ];
    std::fs::write(&path, rollout_text(&lines)).expect("written");
    let rollout = path.to_str().expect("utf-8 path");
    let body = dir.path().join("body.json");
    std::fs::write(
        &body,
        r#"{"input":[{"type":"function_call","name":"f","arguments":"{}","call_id":"b\u001b[5m"}]}"#,
    )
    .expect("written");
    let body = body.to_str().expect("utf-8 path");
    for args in [
        &["check", rollout][..],
        &["stats", rollout],
        &["project", rollout],
        &["project", rollout, "--target", "chat"],
        &["lint", "--target", "responses", body],
    ] {
        let output = run(args);
        for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            // `project` prints the items' JSON on stdout: there the escapes are JSON's own.
            let raw = bytes
                .iter()
                .any(|&byte| byte == 0x1b || byte == 0x07 || byte == b'\r');
            assert!(!raw, "{args:?} {stream}: {}", text(bytes));
        }
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(
            all.contains("\\u{1b}") || all.contains("\\u001b"),
            "{args:?} shows the character escaped: {all}"
        );
    }
}

/// `prefix -` reads standard input once (a copy on disk, not in memory, when two points of it
/// are read) and gives what the file gives; a device as standard input is refused before it is
/// read; two sessions with nothing in common are called that, not a rollback.
#[test]
fn prefix_streams_its_input_refuses_a_device_and_names_unrelated_sessions() {
    let dir = temp_dir();
    let path = write_rollout(dir.path(), "s.jsonl", &turns(5));
    let bytes = std::fs::read(&path).expect("rollout");
    let path = path.to_str().expect("utf-8 path");
    for args in [
        &["--at-line", "7"][..],
        &["--at-line", "7", "--at-line", "11"],
    ] {
        let from_file = prefix(&[&[path][..], args].concat());
        let stdin = run_with_stdin(&[&["prefix", "-"][..], args].concat(), &bytes);
        assert!(stdin.status.success(), "{}", text(&stdin.stderr));
        assert_eq!(text(&stdin.stdout), from_file.replace(path, "-"));
    }
    let too_far = run_with_stdin(&["prefix", "-", "--at-line", "99"], &bytes);
    assert_eq!(too_far.status.code(), Some(3));
    assert!(text(&too_far.stderr).contains("- has only 11 line(s)"));
    // Errors name standard input, not the copy of it.
    for args in [
        &["prefix", "-", "--at-line", "1"][..],
        &["prefix", "-", path],
    ] {
        let bad = run_with_stdin(args, b"not a rollout\n");
        assert_eq!(bad.status.code(), Some(3));
        let stderr = text(&bad.stderr);
        assert!(
            stderr.contains("<stdin>") && !stderr.contains("/tmp"),
            "{stderr}"
        );
    }

    let zero = command()
        .args(["prefix", "-", path])
        .stdin(std::fs::File::open("/dev/zero").expect("/dev/zero"))
        .output()
        .expect("runs");
    assert_eq!(zero.status.code(), Some(3));
    assert!(
        text(&zero.stderr).contains("<stdin> is a device"),
        "{}",
        text(&zero.stderr)
    );
    assert_eq!(run(&["prefix", "-", "-"]).status.code(), Some(2));

    let mut other = turns(2);
    other[0] = item_line(&user("a question of another session"));
    let other = write_rollout(dir.path(), "other.jsonl", &other);
    let out = prefix(&[path, other.to_str().expect("utf-8 path")]);
    assert!(out.contains("shared: 0 item(s)"), "{out}");
    assert!(out.contains("why: nothing shared"), "{out}");
}
